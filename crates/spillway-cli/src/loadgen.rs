//! The `LOADGEN` sidecar: what `load` wrote into a store, so that `read` can regenerate and
//! verify the same keys and values.
//!
//! It is a plain-text file in the store folder (`records=N`, `record_size=R`, `seed=S`, one
//! per line). The engine leaves files it does not name alone once the store exists, and `load`
//! writes this one only after the store is open, so it never makes a folder look foreign.

use std::fs;
use std::io::{ErrorKind, Write};
use std::path::Path;

use crate::error::CliError;

pub const FILE_NAME: &str = "LOADGEN";
const TMP_NAME: &str = "LOADGEN.tmp";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadGen {
    pub records: u64,
    pub record_size: usize,
    pub seed: u64,
}

impl LoadGen {
    pub fn to_text(self) -> String {
        format!(
            "records={}\nrecord_size={}\nseed={}\n",
            self.records, self.record_size, self.seed
        )
    }

    /// Blank lines, `#` comments and unknown names are ignored, so later versions may add
    /// fields; missing or malformed fields are errors.
    pub fn parse(text: &str) -> Result<LoadGen, String> {
        let (mut records, mut record_size, mut seed) = (None, None, None);
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let Some((name, value)) = line.split_once('=') else {
                return Err(format!("line `{line}` is not name=value"));
            };
            let bad = |e: std::num::ParseIntError| format!("`{line}`: {e}");
            match name.trim() {
                "records" => records = Some(value.trim().parse().map_err(bad)?),
                "record_size" => record_size = Some(value.trim().parse().map_err(bad)?),
                "seed" => seed = Some(value.trim().parse().map_err(bad)?),
                _ => {}
            }
        }
        Ok(LoadGen {
            records: records.ok_or("no records= line")?,
            record_size: record_size.ok_or("no record_size= line")?,
            seed: seed.ok_or("no seed= line")?,
        })
    }

    /// Read the sidecar of the store in `dir`.
    pub fn read(dir: &Path) -> Result<LoadGen, CliError> {
        let path = dir.join(FILE_NAME);
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(CliError::Usage(format!(
                    "no {FILE_NAME} in {}: run `spillway load` first",
                    dir.display()
                )))
            }
            Err(e) => return Err(CliError::io(format!("reading {}", path.display()), e)),
        };
        LoadGen::parse(&text)
            .map_err(|reason| CliError::Usage(format!("{} is malformed: {reason}", path.display())))
    }

    /// Write the sidecar atomically (temporary file, fsync, rename), so that a crash leaves
    /// the old file or the new one, never half of one.
    pub fn write(&self, dir: &Path) -> Result<(), CliError> {
        let tmp = dir.join(TMP_NAME);
        let path = dir.join(FILE_NAME);
        let written = fs::File::create(&tmp).and_then(|mut f| {
            f.write_all(self.to_text().as_bytes())?;
            f.sync_all()
        });
        written.map_err(|e| CliError::io(format!("writing {}", tmp.display()), e))?;
        fs::rename(&tmp, &path)
            .map_err(|e| CliError::io(format!("renaming {} to {FILE_NAME}", tmp.display()), e))
    }

    /// Remove the sidecar (if any) before a new load starts: should that load stop half
    /// way, no file may claim records that are not all there.
    pub fn remove(dir: &Path) -> Result<(), CliError> {
        let path = dir.join(FILE_NAME);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                Err(CliError::io(format!("removing {}", path.display()), e))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips() {
        let g = LoadGen {
            records: 200_000,
            record_size: 16,
            seed: u64::MAX,
        };
        assert_eq!(
            g.to_text(),
            "records=200000\nrecord_size=16\nseed=18446744073709551615\n"
        );
        assert_eq!(LoadGen::parse(&g.to_text()), Ok(g));
    }

    #[test]
    fn parse_tolerates_extra_lines_and_rejects_gaps() {
        let g = LoadGen::parse("# by hand\n\nseed = 3\nrecords=5\nrecord_size=9\nnew=1\n").unwrap();
        assert_eq!((g.records, g.record_size, g.seed), (5, 9, 3));
        assert!(LoadGen::parse("records=5\nseed=1\n").is_err());
        assert!(LoadGen::parse("records=x\nrecord_size=9\nseed=1\n").is_err());
        assert!(LoadGen::parse("records 5\nrecord_size=9\nseed=1\n").is_err());
    }

    #[test]
    fn write_read_remove() {
        let dir = std::env::temp_dir().join(format!("spillway-cli-loadgen-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        LoadGen::remove(&dir).unwrap(); // absent is fine
        let err = LoadGen::read(&dir).unwrap_err().to_string();
        assert!(err.starts_with("no LOADGEN in "), "{err}");
        assert!(err.ends_with(": run `spillway load` first"), "{err}");
        let g = LoadGen {
            records: 3,
            record_size: 9,
            seed: 1,
        };
        g.write(&dir).unwrap();
        assert_eq!(LoadGen::read(&dir).unwrap(), g);
        assert!(!dir.join(TMP_NAME).exists());
        LoadGen::remove(&dir).unwrap();
        assert!(LoadGen::read(&dir).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
