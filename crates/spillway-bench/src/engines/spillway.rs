use std::path::Path;

use crate::engine::{Engine, RecordBatch};

struct Spillway(spillway::Db);

/// Default options; `background_spills: false` gives the write path before pipelining.
pub fn open(dir: &Path, background_spills: bool) -> Result<Box<dyn Engine>, String> {
    let opts = spillway::Options {
        background_spills,
        ..Default::default()
    };
    let db = spillway::Db::open(dir, opts).map_err(|e| e.to_string())?;
    Ok(Box::new(Spillway(db)))
}

impl Engine for Spillway {
    fn write(&self, batch: &RecordBatch, sync: bool) -> Result<(), String> {
        let mut b = spillway::WriteBatch::new();
        for (k, v) in batch.iter() {
            b.put(k, v);
        }
        self.0
            .write(b, spillway::WriteOptions { sync })
            .map_err(|e| e.to_string())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.0.get(key).map_err(|e| e.to_string())
    }

    fn stats(&self) -> Option<spillway::Stats> {
        Some(self.0.stats())
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        self.0.close().map_err(|e| e.to_string())
    }
}
