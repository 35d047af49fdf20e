//! Spillway through its own API, in the configurations the benchmark compares.

use std::path::Path;
use std::sync::Arc;

use crate::counter::{self, CounterBatch};
use crate::engine::{Engine, RecordBatch};
use crate::scan::{ScanResult, ScanTally};

struct Spillway(spillway::Db);

/// What a run sets in every Spillway configuration: a memory budget and options by name.
#[derive(Clone, Debug, Default)]
pub struct Tuning {
    /// `Options::memory_budget`.
    pub memory_budget: Option<usize>,
    /// Options by name and value, set after the configuration's own (`Options::set`).
    pub options: Vec<(String, String)>,
}

impl Tuning {
    /// The tuning a run asks for.
    pub fn of(cfg: &crate::RunConfig) -> Tuning {
        Tuning {
            memory_budget: cfg.spillway_memory_budget,
            options: cfg.spillway_options.clone(),
        }
    }

    /// What this tuning sets, for the report's note of an engine's options ("" for none).
    pub fn note(&self) -> String {
        let mut set: Vec<String> = self
            .memory_budget
            .map(|b| format!("memory_budget={b}"))
            .into_iter()
            .collect();
        set.extend(
            self.options
                .iter()
                .map(|(name, value)| format!("{name}={value}")),
        );
        if set.is_empty() {
            String::new()
        } else {
            format!("; set by the run: {}", set.join(", "))
        }
    }

    /// `opts` with this tuning applied: an option it cannot take is an error naming it.
    pub fn apply(&self, opts: spillway::Options) -> Result<spillway::Options, String> {
        let mut opts = opts.memory_budget(self.memory_budget);
        for (name, value) in &self.options {
            opts.set(name, value).map_err(|e| e.to_string())?;
        }
        Ok(opts)
    }
}

/// Default options; `background_spills: false` gives the write path before pipelining.
pub fn open(
    dir: &Path,
    background_spills: bool,
    tuning: &Tuning,
) -> Result<Box<dyn Engine>, String> {
    open_with(
        dir,
        tuning.apply(spillway::Options::default().background_spills(background_spills))?,
    )
}

/// Default options with keys kept in byte order, so that scans work, and the given bound on
/// lists per node (`None`: the default).
pub fn open_ordered(
    dir: &Path,
    max_lists_per_node: Option<usize>,
    tuning: &Tuning,
) -> Result<Box<dyn Engine>, String> {
    open_with(
        dir,
        tuning.apply(
            spillway::Options::default()
                .key_order(spillway::KeyOrder::Ordered)
                .max_lists_per_node(max_lists_per_node),
        )?,
    )
}

/// Default options with keys kept in hash order: the point-read layout, which refuses scans.
pub fn open_hashed(dir: &Path, tuning: &Tuning) -> Result<Box<dyn Engine>, String> {
    open_with(
        dir,
        tuning.apply(spillway::Options::default().key_order(spillway::KeyOrder::Hashed))?,
    )
}

/// Every configuration counts with `U64Add`: the counter workloads merge, and a store opens
/// only with the operator it was made with, so all of them set it, whatever the workloads.
/// The other workloads never merge; the operator changes nothing for them.
fn open_with(dir: &Path, opts: spillway::Options) -> Result<Box<dyn Engine>, String> {
    let opts = opts.merge_operator(Arc::new(spillway::operators::U64Add));
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

    /// One merge operand per increment, in one batch: blind writes, no read.
    fn increment(&self, batch: &CounterBatch, sync: bool) -> Result<(), String> {
        let mut b = spillway::WriteBatch::new();
        for (k, delta) in batch.iter() {
            b.merge(k, counter::encode(delta));
        }
        self.0
            .write(b, spillway::WriteOptions { sync })
            .map_err(|e| e.to_string())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.0.get(key).map_err(|e| e.to_string())
    }

    fn scan(&self, start: &[u8], limit: usize) -> Result<ScanResult, String> {
        // A hashed store's `range` is an error, which passes through.
        let mut tally = ScanTally::new(start, limit);
        let mut it = self.0.range(start..).map_err(|e| e.to_string())?;
        while tally.wants_more() {
            let Some(next) = it.next() else {
                return Ok(tally.finish(true));
            };
            let (k, v) = next.map_err(|e| e.to_string())?;
            tally.add(&k, &v);
        }
        Ok(tally.finish(false))
    }

    fn warm_up(&self) -> Result<bool, String> {
        self.0.load_selectors().map_err(|e| e.to_string())?;
        Ok(true)
    }

    fn stats(&self) -> Option<spillway::Stats> {
        Some(self.0.stats())
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        self.0.close().map_err(|e| e.to_string())
    }
}
