//! Error replies counted by their code, as Redis keeps them for `INFO errorstats`
//! (`errorstat_WRONGTYPE:count=2`) and `total_error_replies` in `INFO stats`: every error a
//! client is sent counts, whether a command answered it, refused to run, failed inside EXEC's
//! array, or the protocol was broken.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use crate::locks::lock;
use crate::resp::Reply;

/// At most this many codes are told apart, as in Redis (`ERROR_STATS_NUMBER`): ours are the
/// words our error texts begin with, far fewer, so this only bounds memory.
const MAX_CODES: usize = 128;

/// The counts, by code.
#[derive(Default)]
pub struct ErrorStats {
    total: AtomicU64,
    /// Taken only when an error is sent (and by INFO): a mutex on no success's path.
    by_code: Mutex<BTreeMap<String, u64>>,
}

/// The code of error `text` as Redis finds it: the word before its first space, if there is
/// one among its first 31 bytes (its first 32 with the `-` Redis counts); else `ERR`.
pub fn code(text: &str) -> &str {
    let head = &text.as_bytes()[..text.len().min(31)];
    match head.iter().position(|&b| b == b' ') {
        Some(end) => &text[..end],
        None => "ERR",
    }
}

impl ErrorStats {
    /// Count error `text` (an error reply's text, its code first).
    pub fn count(&self, text: &str) {
        self.total.fetch_add(1, Relaxed);
        let mut by_code = lock(&self.by_code);
        let code = code(text);
        let room = by_code.len() < MAX_CODES;
        match by_code.get_mut(code) {
            Some(n) => *n += 1,
            None if room => {
                by_code.insert(code.to_owned(), 1);
            }
            None => {}
        }
    }

    /// Count the errors in `reply`, at any depth (EXEC's array holds its commands' errors).
    pub fn count_in(&self, reply: &Reply) {
        match reply {
            Reply::Error(text) => self.count(text),
            Reply::Array(items) | Reply::Set(items) => {
                for item in items {
                    self.count_in(item);
                }
            }
            Reply::Map(pairs) => {
                for (k, v) in pairs {
                    self.count_in(k);
                    self.count_in(v);
                }
            }
            _ => {}
        }
    }

    /// `total_error_replies`.
    pub fn total(&self) -> u64 {
        self.total.load(Relaxed)
    }

    /// `INFO errorstats`'s lines, in Redis's order (the codes sorted).
    pub fn lines(&self) -> Vec<(String, String)> {
        let by_code = lock(&self.by_code);
        let lines = by_code.iter();
        lines
            .map(|(code, n)| (format!("errorstat_{code}"), format!("count={n}")))
            .collect()
    }

    /// `CONFIG RESETSTAT`.
    pub fn reset(&self) {
        self.total.store(0, Relaxed);
        lock(&self.by_code).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_count_by_their_first_word() {
        assert_eq!(code("WRONGTYPE Operation against a key"), "WRONGTYPE");
        assert_eq!(code("ERR syntax error"), "ERR");
        assert_eq!(code("NOSPACEHERE"), "ERR");
        assert_eq!(
            code(&format!("{} x", "A".repeat(31))),
            "ERR",
            "past 32 bytes"
        );
        assert_eq!(code(&format!("{} x", "A".repeat(30))), "A".repeat(30));
        let stats = ErrorStats::default();
        stats.count_in(&Reply::Array(vec![
            Reply::error("WRONGTYPE x"),
            Reply::Integer(1),
            Reply::Array(vec![Reply::error("ERR y")]),
        ]));
        stats.count("ERR z");
        assert_eq!(stats.total(), 3);
        let lines = stats.lines();
        assert_eq!(
            lines,
            [
                ("errorstat_ERR".to_string(), "count=2".to_string()),
                ("errorstat_WRONGTYPE".to_string(), "count=1".to_string())
            ]
        );
        stats.reset();
        assert_eq!((stats.total(), stats.lines().len()), (0, 0));
    }
}
