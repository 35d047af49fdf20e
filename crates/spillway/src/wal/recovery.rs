//! Recovery: which records of the logs to replay, and where a crash or a power loss cut them.
//!
//! Writes reach the logs in order, one log at a time, so what a crash or a power loss leaves
//! is a prefix of what was written, up to damage the failure explains:
//!
//! * a process crash can tear the last record (the process died mid-append);
//! * a power loss can also lose any bytes not yet synced — at the end of a log, or in the
//!   middle of it while later ones reached the disk (the OS writes pages back in any order),
//!   and a whole older log's unsynced tail while a later log's pages survived.
//!
//! So the logs are replayed up to their first damage and cut there; every record after it,
//! in that log and in later ones, is dropped — those writes were never synced, and keeping
//! them would keep a write without the ones acknowledged before it. Unless a record after the
//! damage proves the damaged bytes were synced before it was written: then no crash explains
//! the damage, and dropping what follows would lose synced writes, so recovery stops with
//! [`Error::Corruption`]. A record proves durable every byte of its log before its
//! [`durable_through`](super::format::Frame::durable_through), and — if that is past the
//! header, i.e. its log had been synced — every earlier log whole, because a log is synced
//! only once every earlier log is. A clean close ends the newest log with a seal, an empty
//! record that vouches for all of it (see `LogWriter::seal`).
//!
//! A log that writes moved on from ends in a link to the next (since version 6 without
//! exception): one that ends without it, whole, lost its tail, and is cut there like a damaged
//! one (see [`Bad::Unlinked`]).
//!
//! Logs deleted from the folder are not taken for logs never written: the manifest names the
//! log recovery starts in and the log a clean close sealed (see [`Expect`]), and every log
//! writes moved on from ends in a link naming the next one. A log named so that is missing,
//! or a sealed log damaged before its seal, is [`Error::Corruption`].

use std::path::Path;

use super::format::{self, Bad, Kind, HEADER_LEN, VERSION};
use super::scan::LogScan;
use crate::error::{Error, Result};
use crate::files::log_name;
use crate::record::Encoding;

/// What the manifest says must be there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expect {
    /// The log recovery starts in: it exists, whatever it holds. `None` for a manifest of
    /// a version that did not promise it.
    pub first: Option<u64>,
    /// A log closed cleanly, and the length through which it is whole, ending in a seal.
    pub sealed: Option<(u64, u64)>,
}

/// What [`recover`] replayed, and what it found.
#[derive(Debug, Default)]
pub struct Recovery {
    /// The logs whose records were replayed, oldest first. Only the last can be cut.
    pub kept: Vec<KeptLog>,
    /// The first damage, where the logs were cut.
    pub cut: Option<Cut>,
    /// Logs after the cut, dropped whole.
    pub dropped_logs: Vec<u64>,
    /// Records (write groups) replayed, seals not counted.
    pub records: u64,
}

#[derive(Debug)]
pub struct KeptLog {
    pub number: u64,
    /// Its format version; `None` if it has no header.
    pub version: Option<u32>,
    /// Bytes of it that stay: whole records (0 without a header).
    pub valid_len: u64,
    /// Whether they end in a seal (an empty record: the log was closed cleanly).
    pub sealed: bool,
    /// Whether they end in a link to the next log: what lies past them (zeros kept ahead, a
    /// recycled file's old records) is no record of it, and stays.
    pub linked: bool,
}

#[derive(Debug)]
pub struct Cut {
    pub log: u64,
    pub at: u64,
    /// What was found there.
    pub bad: Bad,
    /// Valid records past it, in its log and in the dropped ones: 0 for a torn tail.
    pub records_dropped: u64,
}

impl Cut {
    /// A record torn by a crash, with nothing valid after it: the everyday case.
    pub fn is_torn_tail(&self) -> bool {
        self.records_dropped == 0
    }

    pub fn describe(&self) -> String {
        format!("{} at byte {}", self.bad, self.at)
    }
}

/// Read the logs `numbers` of `dir` (sorted, oldest first), hand each replayed record's
/// payload to `apply` with the encoding of its records, and say where they were cut. Changes nothing on disk.
pub fn recover(
    dir: &Path,
    numbers: &[u64],
    expect: &Expect,
    mut apply: impl FnMut(&Path, Encoding, &[u8]) -> Result<()>,
) -> Result<Recovery> {
    debug_assert!(numbers.windows(2).all(|w| w[0] < w[1]));
    let missing = |n: u64, why: String| {
        Error::corruption(
            dir.join(log_name(n)),
            format!("the log is missing, though {why}"),
        )
    };
    if let Some(first) = expect.first {
        if !numbers.contains(&first) {
            return Err(missing(
                first,
                "the manifest says recovery starts in it".into(),
            ));
        }
    }
    if let Some((log, _)) = expect.sealed {
        if !numbers.contains(&log) {
            return Err(missing(
                log,
                "the manifest says a clean close sealed it".into(),
            ));
        }
    }
    let mut rec = Recovery::default();
    for &n in numbers {
        let path = dir.join(log_name(n));
        let mut log = LogScan::read(&path, n)?;
        if let Some(cut) = &mut rec.cut {
            if log.durable_through >= HEADER_LEN {
                return Err(Error::corruption(
                    dir.join(log_name(cut.log)),
                    format!(
                        "damaged at byte {}, but the later log {} was synced, which happens only \
                         once every earlier log is durable",
                        cut.at,
                        log_name(n)
                    ),
                ));
            }
            cut.records_dropped +=
                log.records.len() as u64 + log.damage.map_or(0, |d| d.records_after);
            rec.dropped_logs.push(n);
            continue;
        }
        if let Some((_, sealed_len)) = expect.sealed.filter(|s| s.0 == n) {
            check_sealed(&path, &log, sealed_len as usize)?;
        }
        let linked = log.link().is_some();
        let recyclable = log.version.is_some_and(|v| v >= 6);
        if linked
            && log
                .damage
                .is_some_and(|d| d.bad == Bad::Unwritten || (recyclable && d.records_after == 0))
        {
            // Zeros a log kept ready past its end (see `prefill`), or the records of the log
            // its file was before (see `format`), left when it moved on.
            log.damage = None;
        }
        if let Some(d) = &mut log.damage {
            // Nothing is written after a link: damage past one drops it with what it names.
            if let Some(link) = log.records.pop_if(|f| f.link_target(&log.data).is_some()) {
                d.at = link.start;
            }
        }
        if let Some(next) = log.link() {
            if !numbers.contains(&next) {
                return Err(missing(
                    next,
                    format!("{} says writes went on in it", log_name(n)),
                ));
            }
        }
        let encoding = format::encoding(log.version.unwrap_or(VERSION));
        for f in log.records.iter().filter(|f| f.kind == Kind::Writes) {
            apply(&path, encoding, f.payload(&log.data))?;
            rec.records += 1;
        }
        let moved_on = numbers.last() != Some(&n);
        if moved_on && log.damage.is_none() && log.link().is_none() && recyclable {
            // Writes went on in a later log, so this one ended in a link to it: what is
            // missing is a tail a power loss took, though no record of it is left to show
            // where (its file cut back to a synced length, or blocks of another log's records
            // in its place). Logs since version 6 always end so when writes move on; older
            // ones did not when an open went on from them in a new log.
            log.damage = Some(super::scan::Damage {
                at: log.valid_len,
                bad: Bad::Unlinked,
                records_after: 0,
            });
        }
        if let Some(d) = log.damage {
            if log.durable_through > d.at {
                return Err(Error::corruption(
                    &path,
                    format!(
                        "{} at byte {}, yet a later record of this log says it was synced \
                         through byte {}",
                        d.bad, d.at, log.durable_through
                    ),
                ));
            }
            rec.cut = Some(Cut {
                log: n,
                at: d.at as u64,
                bad: d.bad,
                records_dropped: d.records_after,
            });
        }
        rec.kept.push(KeptLog {
            number: n,
            version: log.version,
            valid_len: log.damage.map_or(log.valid_len, |d| d.at) as u64,
            sealed: log.records.last().is_some_and(|f| f.kind == Kind::Seal),
            linked: log.damage.is_none() && log.link().is_some(),
        });
    }
    Ok(rec)
}

/// A log the manifest says a clean close sealed at `len` must hold whole records up to
/// there, the last of them a seal (or none at all): any damage before it is at rest, never
/// a crash's.
fn check_sealed(path: &Path, log: &LogScan, len: usize) -> Result<()> {
    if let Some(d) = log.damage.filter(|d| d.at < len) {
        return Err(Error::corruption(
            path,
            format!(
                "{} at byte {}, in a log a clean close sealed through byte {len}",
                d.bad, d.at
            ),
        ));
    }
    // A log that holds nothing needs no seal: its header has a checksum of its own.
    let seal = log.records.iter().find(|f| f.end == len);
    if len != HEADER_LEN && !seal.is_some_and(|f| f.kind == Kind::Seal) {
        return Err(Error::corruption(
            path,
            format!(
                "a clean close sealed it at byte {len}, but no seal ends there ({} bytes hold \
                 whole records)",
                log.valid_len
            ),
        ));
    }
    Ok(())
}
