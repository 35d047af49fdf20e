//! The `LOADGEN` sidecar: what `load` wrote into a store, so that `read` can regenerate and
//! verify the same keys and values.
//!
//! It is a plain-text file in the store folder (`records=N`, `record_size=R`, `seed=S`,
//! `planned=M`, `state=complete|stopped|running`, `keys=random|sequential`, and after a
//! counter load `op=add`, `distinct=D`, `base=zero|unknown`, and after a load into a named
//! keyspace `keyspace=NAME` (escaped as `scan` prints bytes, whitespace as `\xHH`), one per
//! line; a file without `keyspace=` is a load into the default keyspace). The
//! engine leaves files it does not name alone once the store exists, and `load` writes this one
//! only after the store is open, so it never makes a folder look foreign.
//!
//! `load` writes it three times over: `running` as it starts (so that a load killed half way
//! leaves a file saying so, rather than a stale one claiming an earlier load's records, or
//! none), then `complete` once every batch is acknowledged, or `stopped` with the records it
//! knows were acknowledged when a write fails.

use std::fs;
use std::io::{ErrorKind, Write};
use std::path::Path;

use crate::error::CliError;
use crate::escape;
use spillway_records::{Keys, Workload};

pub const FILE_NAME: &str = "LOADGEN";
const TMP_NAME: &str = "LOADGEN.tmp";

/// How the load that wrote the sidecar ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadState {
    /// Every record was acknowledged (`records == planned`).
    Complete,
    /// A write failed; records `0..records` were all acknowledged before it.
    Stopped,
    /// Under way, or killed before it could say how far it got: nothing is known.
    Running,
}

impl LoadState {
    fn name(self) -> &'static str {
        match self {
            LoadState::Complete => "complete",
            LoadState::Stopped => "stopped",
            LoadState::Running => "running",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadGen {
    /// Records `0..records` are in the store: every one was acknowledged.
    pub records: u64,
    pub record_size: usize,
    pub seed: u64,
    /// Records the load was asked to write.
    pub planned: u64,
    pub state: LoadState,
    /// How the keys were made (a file without `keys=` predates sequential loads: random).
    pub keys: Keys,
    /// Set by a counter load (`load --op add`, `op=add`): the records were increments, not
    /// puts. `None` (`op=put`, or no `op=`): record `i` put its generated value.
    pub counters: Option<Counters>,
    /// The keyspace the records went into (`keyspace=`): `None` for the default keyspace,
    /// as in every file written before keyspaces.
    pub keyspace: Option<String>,
}

/// What a counter load (`load --op add`) did: record `i` added 1 to the counter (a
/// `spillway.u64add` merge) of the key of record `i % distinct`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counters {
    /// Keys the increments went to, round-robin (`distinct=`).
    pub distinct: u64,
    /// Whether the counters started from nothing (`base=zero`): the store held no earlier
    /// load's records (no LOADGEN), so a counter's value is what this load added. An earlier
    /// load (`base=unknown`) may have left values under the same keys, to which this one
    /// added: then no value is known.
    pub from_zero: bool,
}

impl Counters {
    /// The increments records `0..n` gave the counter of key `j` (`j < distinct`).
    pub fn hits(self, n: u64, j: u64) -> u64 {
        if j >= n {
            0
        } else {
            (n - 1 - j) / self.distinct.max(1) + 1
        }
    }

    /// Keys that records `0..n` incremented: keys `0..keys(n)`.
    pub fn keys(self, n: u64) -> u64 {
        n.min(self.distinct)
    }
}

impl LoadGen {
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "records={}\nrecord_size={}\nseed={}\nplanned={}\nstate={}\nkeys={}\n",
            self.records,
            self.record_size,
            self.seed,
            self.planned,
            self.state.name(),
            self.keys.name()
        );
        if let Some(c) = self.counters {
            text.push_str(&format!(
                "op=add\ndistinct={}\nbase={}\n",
                c.distinct,
                if c.from_zero { "zero" } else { "unknown" }
            ));
        }
        if let Some(name) = &self.keyspace {
            text.push_str(&format!("keyspace={}\n", encode_name(name)));
        }
        text
    }

    /// Blank lines, `#` comments and unknown names are ignored, so later versions may add
    /// fields; missing or malformed fields are errors. A file without `planned` and `state`
    /// (written before they existed, only after a complete load) is a complete load; one
    /// without `keys` has random keys, one without `op` put its records, and one without
    /// `keyspace` (or with an empty one) wrote into the default keyspace. A counter load
    /// (`op=add`) must say over how many keys (`distinct`); without `base` its counters'
    /// starting values are unknown.
    pub fn parse(text: &str) -> Result<LoadGen, String> {
        let (mut records, mut record_size, mut seed) = (None, None, None);
        let (mut planned, mut state, mut keys) = (None, LoadState::Complete, Keys::Random);
        let (mut add, mut distinct, mut from_zero) = (false, None, false);
        let mut keyspace = None;
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
                "planned" => planned = Some(value.trim().parse().map_err(bad)?),
                "state" => {
                    state = [LoadState::Complete, LoadState::Stopped, LoadState::Running]
                        .into_iter()
                        .find(|s| s.name() == value.trim())
                        .ok_or_else(|| format!("`{line}`: not complete, stopped or running"))?
                }
                "keys" => {
                    keys = [Keys::Random, Keys::Sequential]
                        .into_iter()
                        .find(|k| k.name() == value.trim())
                        .ok_or_else(|| format!("`{line}`: not random or sequential"))?
                }
                "op" => {
                    add = match value.trim() {
                        "put" => false,
                        "add" => true,
                        _ => return Err(format!("`{line}`: not put or add")),
                    }
                }
                "distinct" => distinct = Some(value.trim().parse().map_err(bad)?),
                "base" => {
                    from_zero = match value.trim() {
                        "zero" => true,
                        "unknown" => false,
                        _ => return Err(format!("`{line}`: not zero or unknown")),
                    }
                }
                "keyspace" => {
                    keyspace =
                        Some(decode_name(value.trim()).map_err(|e| format!("`{line}`: {e}"))?)
                            .filter(|name: &String| !name.is_empty())
                }
                _ => {}
            }
        }
        let records = records.ok_or("no records= line")?;
        let counters = match (add, distinct) {
            (false, _) => None,
            (true, None) => return Err("op=add without a distinct= line".into()),
            (true, Some(0)) => return Err("distinct=0: a counter load has keys".into()),
            (true, Some(distinct)) => Some(Counters {
                distinct,
                from_zero,
            }),
        };
        Ok(LoadGen {
            records,
            record_size: record_size.ok_or("no record_size= line")?,
            seed: seed.ok_or("no seed= line")?,
            planned: planned.unwrap_or(records),
            state,
            keys,
            counters,
            keyspace,
        })
    }

    /// Read the sidecar of the store in `dir`.
    pub fn read(dir: &Path) -> Result<LoadGen, CliError> {
        let path = dir.join(FILE_NAME);
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(CliError::Failed(format!(
                    "no {FILE_NAME} in {}: run `spillway load` first",
                    dir.display()
                )))
            }
            Err(e) => return Err(CliError::io(format!("reading {}", path.display()), e)),
        };
        LoadGen::parse(&text).map_err(|reason| {
            CliError::Failed(format!("{} is malformed: {reason}", path.display()))
        })
    }

    /// The records `read` may verify — `0..n`, every one acknowledged — or why there are
    /// none.
    pub fn records_to_verify(&self, dir: &Path) -> Result<u64, CliError> {
        let none = |why: String| Err(CliError::Failed(why));
        match self.state {
            LoadState::Running => none(format!(
                "the last `spillway load` into {} did not finish (it was killed, or is still \
                 running) and could not record how far it got: nothing to verify; run \
                 `spillway load` again",
                dir.display()
            )),
            LoadState::Stopped if self.records == 0 => none(format!(
                "the last `spillway load` into {} stopped before any record was acknowledged: \
                 nothing to verify",
                dir.display()
            )),
            LoadState::Complete if self.records == 0 => none(format!(
                "{} loaded no records: nothing to read",
                dir.display()
            )),
            LoadState::Stopped | LoadState::Complete => Ok(self.records),
        }
    }

    /// The generator of the records this load wrote (or is writing).
    pub fn workload(&self) -> Result<Workload, CliError> {
        Ok(Workload::new(self.seed, self.record_size)
            .map_err(CliError::Failed)?
            .with_keys(self.keys))
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
}

/// A keyspace name as `keyspace=` holds it: escaped as `scan` prints bytes (so no newline),
/// and whitespace as `\xHH` too, so that trimming the line keeps it whole.
fn encode_name(name: &str) -> String {
    let mut out = String::new();
    for c in escape::escape(name.as_bytes()).chars() {
        if c.is_whitespace() {
            for b in c.to_string().bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn decode_name(text: &str) -> Result<String, String> {
    String::from_utf8(escape::unescape(text.as_bytes())?)
        .map_err(|_| "a keyspace name is UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(records: u64, record_size: usize, seed: u64) -> LoadGen {
        LoadGen {
            records,
            record_size,
            seed,
            planned: records,
            state: LoadState::Complete,
            keys: Keys::Random,
            counters: None,
            keyspace: None,
        }
    }

    #[test]
    fn the_keyspace_round_trips_and_defaults_to_the_default_keyspace() {
        for name in ["users", " odd\nname\t\u{3000}x\\ ", "café"] {
            let g = LoadGen {
                keyspace: Some(name.to_owned()),
                ..complete(5, 16, 1)
            };
            let text = g.to_text();
            assert_eq!(text.lines().count(), 7, "{text:?}");
            assert_eq!(LoadGen::parse(&text), Ok(g.clone()), "{text:?}");
        }
        let g = LoadGen {
            keyspace: Some("users".into()),
            ..complete(5, 16, 1)
        };
        assert!(g.to_text().ends_with("\nkeys=random\nkeyspace=users\n"));
        // Written before keyspaces, or into the default one: no keyspace= line.
        assert!(!complete(5, 16, 1).to_text().contains("keyspace"));
        assert_eq!(
            LoadGen::parse(&complete(5, 16, 1).to_text()),
            Ok(complete(5, 16, 1))
        );
        let empty = format!("{}keyspace=\n", complete(5, 16, 1).to_text());
        assert_eq!(LoadGen::parse(&empty), Ok(complete(5, 16, 1)));
        let bad = format!("{}keyspace=a\\q\n", complete(5, 16, 1).to_text());
        assert!(LoadGen::parse(&bad).is_err());
    }

    #[test]
    fn text_round_trips() {
        let g = complete(200_000, 16, u64::MAX);
        assert_eq!(
            g.to_text(),
            "records=200000\nrecord_size=16\nseed=18446744073709551615\nplanned=200000\n\
             state=complete\nkeys=random\n"
        );
        assert_eq!(LoadGen::parse(&g.to_text()), Ok(g.clone()));
        let sequential = LoadGen {
            keys: Keys::Sequential,
            ..g.clone()
        };
        assert!(sequential.to_text().ends_with("\nkeys=sequential\n"));
        assert_eq!(
            LoadGen::parse(&sequential.to_text()),
            Ok(sequential.clone())
        );
        for state in [LoadState::Stopped, LoadState::Running] {
            let g = LoadGen {
                records: 7,
                planned: 9,
                state,
                ..g.clone()
            };
            assert_eq!(LoadGen::parse(&g.to_text()), Ok(g.clone()));
        }
    }

    #[test]
    fn counter_loads_round_trip_and_count_each_key_s_increments() {
        let c = Counters {
            distinct: 3,
            from_zero: true,
        };
        let g = LoadGen {
            counters: Some(c),
            ..complete(10, 16, 5)
        };
        assert!(g.to_text().ends_with("\nop=add\ndistinct=3\nbase=zero\n"));
        assert_eq!(LoadGen::parse(&g.to_text()), Ok(g.clone()));
        let on_top = LoadGen {
            counters: Some(Counters {
                from_zero: false,
                ..c
            }),
            ..g.clone()
        };
        assert!(on_top.to_text().ends_with("\nbase=unknown\n"));
        assert_eq!(LoadGen::parse(&on_top.to_text()), Ok(on_top.clone()));
        // Without base=, nothing is known of the starting values.
        let no_base = g.to_text().replace("base=zero\n", "");
        assert_eq!(LoadGen::parse(&no_base), Ok(on_top.clone()));
        let put = g.to_text().replace("op=add", "op=put");
        assert_eq!(LoadGen::parse(&put).unwrap().counters, None);
        let no_distinct = g.to_text().replace("distinct=3\n", "");
        assert!(LoadGen::parse(&no_distinct).is_err());
        assert!(LoadGen::parse(&g.to_text().replace("op=add", "op=mul")).is_err());
        assert!(LoadGen::parse(&g.to_text().replace("distinct=3", "distinct=0")).is_err());

        // Records 0..10 over keys 0, 1, 2: 0,3,6,9 / 1,4,7 / 2,5,8.
        assert_eq!([0, 1, 2].map(|j| c.hits(10, j)), [4, 3, 3]);
        assert_eq!([0, 1, 2].map(|j| c.hits(2, j)), [1, 1, 0]);
        assert_eq!(c.hits(0, 0), 0);
        assert_eq!((c.keys(2), c.keys(10)), (2, 3));
        let one = Counters {
            distinct: 1,
            from_zero: true,
        };
        assert_eq!(one.hits(20_000_000, 0), 20_000_000);
    }

    #[test]
    fn parse_tolerates_extra_lines_and_rejects_gaps() {
        let g = LoadGen::parse("# by hand\n\nseed = 3\nrecords=5\nrecord_size=9\nnew=1\n").unwrap();
        // Written before `planned` and `state`: only ever after a complete load.
        assert_eq!(g, complete(5, 9, 3));
        assert!(LoadGen::parse("records=5\nseed=1\n").is_err());
        assert!(LoadGen::parse("records=x\nrecord_size=9\nseed=1\n").is_err());
        assert!(LoadGen::parse("records 5\nrecord_size=9\nseed=1\n").is_err());
        assert!(LoadGen::parse("records=5\nrecord_size=9\nseed=1\nstate=half\n").is_err());
        assert!(LoadGen::parse("records=5\nrecord_size=9\nseed=1\nkeys=sorted\n").is_err());
    }

    #[test]
    fn the_workload_makes_the_keys_recorded() {
        let g = LoadGen {
            keys: Keys::Sequential,
            ..complete(10, 16, 7)
        };
        let w = g.workload().unwrap();
        assert_eq!(w.key(3), 3u64.to_be_bytes());
        let random = complete(10, 16, 7).workload().unwrap();
        assert_eq!(random.key(3), Workload::new(7, 16).unwrap().key(3));
        assert_ne!(random.key(3), w.key(3));
        assert_eq!(random.value(3), w.value(3));
    }

    #[test]
    fn only_acknowledged_records_are_to_verify() {
        let dir = Path::new("/x");
        let g = complete(10, 9, 0);
        assert_eq!(g.records_to_verify(dir).unwrap(), 10);
        let stopped = LoadGen {
            records: 4,
            state: LoadState::Stopped,
            ..g.clone()
        };
        assert_eq!(stopped.records_to_verify(dir).unwrap(), 4);
        let running = LoadGen {
            records: 0,
            state: LoadState::Running,
            ..g.clone()
        };
        let err = running.records_to_verify(dir).unwrap_err().to_string();
        assert!(err.contains("did not finish"), "{err}");
        assert!(complete(0, 9, 0).records_to_verify(dir).is_err());
    }

    #[test]
    fn write_read() {
        let dir = std::env::temp_dir().join(format!("spillway-cli-loadgen-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let err = LoadGen::read(&dir).unwrap_err().to_string();
        assert!(err.starts_with("no LOADGEN in "), "{err}");
        assert!(err.ends_with(": run `spillway load` first"), "{err}");
        let g = complete(3, 9, 1);
        g.write(&dir).unwrap();
        assert_eq!(LoadGen::read(&dir).unwrap(), g);
        assert!(!dir.join(TMP_NAME).exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}
