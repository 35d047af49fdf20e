//! What a list holds of expiring data (issue 30), kept in memory with its filter and index:
//! when its values expire, as a histogram of bytes by expiry time, so that a spill can tell a
//! node mostly expired without reading it (`Node::mostly_expired`), as the sketch tells it
//! mostly superseded; and the oldest message that carries a time, which bounds what may be
//! dropped below the list (see `tree::spill`).
//!
//! ```text
//! oldest_message u64 | flags u8 (bit 0: holds expiring records) | n u8 | (until u64, bytes u64)·n
//! ```
//!
//! Each bucket's time is the latest expiry in it: a bucket counts as expired only once all of
//! it has, so the bytes reported expired are never more than those that are.

use std::collections::BTreeMap;

use crate::record::{Op, NEVER};

/// Buckets a list keeps: enough to see half of a list expire within a few percent of its
/// spread of expiry times.
const BUCKETS: usize = 32;
/// Distinct expiry times a writer tracks before coarsening them.
const TRACKED: usize = 4096;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExpirySummary {
    /// The earliest time a stamped operand or change of expiry of the list was written
    /// ([`NEVER`]: it holds none).
    pub oldest_message: u64,
    /// Whether the list holds values that expire or changes of expiry.
    pub holds_expiry: bool,
    /// `(latest expiry in the bucket, bytes)`, in time order.
    buckets: Vec<(u64, u64)>,
}

impl ExpirySummary {
    /// The summary of a list written before expiry existed.
    pub const fn none() -> ExpirySummary {
        ExpirySummary {
            oldest_message: NEVER,
            holds_expiry: false,
            buckets: Vec::new(),
        }
    }

    /// Bytes of values that have expired by `now` (a lower bound).
    pub fn expired_bytes(&self, now: u64) -> u64 {
        self.buckets
            .iter()
            .take_while(|b| b.0 <= now)
            .map(|b| b.1)
            .sum()
    }

    pub fn memory(&self) -> usize {
        self.buckets.len() * 16
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.oldest_message.to_le_bytes());
        out.push(u8::from(self.holds_expiry));
        out.push(self.buckets.len() as u8);
        for &(until, bytes) in &self.buckets {
            out.extend_from_slice(&until.to_le_bytes());
            out.extend_from_slice(&bytes.to_le_bytes());
        }
    }

    /// How many bytes of `data` the encoded summary at its start takes.
    pub fn encoded_len(data: &[u8]) -> Option<usize> {
        let len = 10 + usize::from(*data.get(9)?) * 16;
        (len <= data.len()).then_some(len)
    }

    /// Decode what [`encode`](Self::encode) wrote, all of `data`; `None` if malformed.
    pub fn decode(data: &[u8]) -> Option<ExpirySummary> {
        let word = |at: usize| Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?));
        let oldest_message = word(0)?;
        let flags = *data.get(8)?;
        let n = usize::from(*data.get(9)?);
        if flags > 1 || n > BUCKETS || data.len() != 10 + n * 16 {
            return None;
        }
        let buckets: Vec<(u64, u64)> = (0..n)
            .map(|i| Some((word(10 + i * 16)?, word(18 + i * 16)?)))
            .collect::<Option<_>>()?;
        if buckets.windows(2).any(|w| w[0].0 >= w[1].0) {
            return None;
        }
        Some(ExpirySummary {
            oldest_message,
            holds_expiry: flags == 1,
            buckets,
        })
    }
}

/// Builds a list's summary as its records are written.
#[derive(Debug)]
pub struct ExpiryBuilder {
    oldest_message: u64,
    holds_expiry: bool,
    /// Bytes by expiry time rounded up to a multiple of `grain` ms.
    times: BTreeMap<u64, u64>,
    grain: u64,
}

impl Default for ExpiryBuilder {
    fn default() -> Self {
        ExpiryBuilder {
            oldest_message: NEVER,
            holds_expiry: false,
            times: BTreeMap::new(),
            grain: 1,
        }
    }
}

impl ExpiryBuilder {
    /// Count record `op` of `bytes` encoded bytes.
    pub fn add(&mut self, op: Op<'_>, bytes: usize) {
        match op {
            Op::PutUntil(_, until) => {
                self.holds_expiry = true;
                *self.times.entry(round_up(until, self.grain)).or_default() += bytes as u64;
                if self.times.len() > TRACKED {
                    self.coarsen();
                }
            }
            Op::MergeAt(_, at) => self.oldest_message = self.oldest_message.min(at),
            Op::Expire { at, .. } => {
                self.holds_expiry = true;
                self.oldest_message = self.oldest_message.min(at);
            }
            Op::Put(_) | Op::Delete | Op::Merge(_) | Op::DeleteRange { .. } => {}
        }
    }

    fn coarsen(&mut self) {
        self.grain = self.grain.saturating_mul(4);
        let times = std::mem::take(&mut self.times);
        for (t, b) in times {
            *self.times.entry(round_up(t, self.grain)).or_default() += b;
        }
    }

    /// The summary: at most [`BUCKETS`] buckets of about equal bytes (each full bucket holds
    /// at least 1/`BUCKETS` of them, so there are no more than that).
    pub fn finish(self) -> ExpirySummary {
        let total: u64 = self.times.values().sum();
        let per_bucket = total.div_ceil(BUCKETS as u64).max(1);
        let mut buckets: Vec<(u64, u64)> = Vec::new();
        let mut open = (0, 0u64);
        for (t, b) in self.times {
            open = (t, open.1 + b);
            if open.1 >= per_bucket {
                buckets.push(open);
                open.1 = 0;
            }
        }
        if open.1 > 0 {
            buckets.push(open);
        }
        debug_assert!(buckets.len() <= BUCKETS);
        ExpirySummary {
            oldest_message: self.oldest_message,
            holds_expiry: self.holds_expiry,
            buckets,
        }
    }
}

fn round_up(t: u64, grain: u64) -> u64 {
    if grain <= 1 {
        t
    } else {
        t.div_ceil(grain).saturating_mul(grain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_bytes_never_overstate_and_round_trip() {
        let mut b = ExpiryBuilder::default();
        let mut truth = Vec::new();
        for i in 0..100_000u64 {
            let until = 1_000_000 + (i * 7919) % 60_000;
            b.add(Op::PutUntil(b"v", until), 20);
            truth.push(until);
        }
        b.add(Op::MergeAt(b"o", 500), 10);
        b.add(Op::Put(b"p"), 10);
        let s = b.finish();
        assert!(s.holds_expiry);
        assert_eq!(s.oldest_message, 500);
        assert!(s.buckets.len() <= BUCKETS);
        for now in [0, 1_000_000, 1_010_000, 1_030_000, 1_059_999, 2_000_000] {
            let exact = truth.iter().filter(|&&t| t <= now).count() as u64 * 20;
            let est = s.expired_bytes(now);
            assert!(est <= exact, "{est} > {exact} at {now}");
            // Within a bucket's worth (1/32 of the bytes, plus coarsening) of the truth.
            assert!(exact - est <= 2_000_000 / 16, "{est} vs {exact} at {now}");
        }
        assert_eq!(s.expired_bytes(u64::MAX), 2_000_000);
        let mut enc = Vec::new();
        s.encode(&mut enc);
        assert_eq!(ExpirySummary::decode(&enc), Some(s.clone()));
        for cut in 0..enc.len() {
            assert!(ExpirySummary::decode(&enc[..cut]).is_none());
        }
        let none = ExpiryBuilder::default().finish();
        assert_eq!(none, ExpirySummary::none());
    }
}
