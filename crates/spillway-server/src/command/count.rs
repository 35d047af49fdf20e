//! How many keys a database holds, and how many of them expire: `INFO keyspace`'s
//! `dbN:keys=K,expires=E,avg_ttl=T`.
//!
//! Keys are counted as `DBSIZE` counts them: exactly up to [`COUNTED_UP_TO`], by reading every
//! key (expired ones are not there to read), else the keyspace's estimate (which counts expired
//! records, and those a flush's clear covers, until a spill drops them: it reads samples, not
//! expiries nor clears), or the puts made since this server flushed the database where that is
//! less (`databases`). The engine's
//! iterators give keys and values, not expiries, so a key's expiry costs a point read
//! (`Keyspace::expiry`) of its own: `expires` and `avg_ttl` read every key's in a database
//! counted exactly, and in a larger one those of the first [`SAMPLED`] keys in route order,
//! scaled to the estimate (a uniform sample in a hashed store; in an ordered one, the keys
//! that sort first, which may not be like the rest). `avg_ttl` is the mean of what is left of
//! those keys' TTLs, in milliseconds: Redis's is an estimate too, a running average its expiry
//! cycle keeps, so the two agree on what it means, not on its digits.

use spillway::{Expiry, Keyspace};

use super::databases::Space;
use super::{time, Engine};

/// Stores estimated to hold at most this many keys are counted exactly (a few tens of
/// milliseconds of reading); larger ones answer the estimate, whose samples of small stores
/// are too few to be exact.
pub const COUNTED_UP_TO: u64 = 100_000;

/// Keys whose expiry is read in a database past [`COUNTED_UP_TO`].
const SAMPLED: u64 = 1_000;

/// A database's keys, and those that expire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Census {
    pub keys: u64,
    pub expires: u64,
    /// The mean time left of the keys that expire, in milliseconds (0 if none do).
    pub avg_ttl: u64,
}

impl Engine {
    /// Database `n`'s [`Census`].
    /// Strings and keys of other types are counted apart and added.
    pub(super) fn census(&self, n: usize) -> spillway::Result<Census> {
        let bound = self.dbs.bound(n).unwrap_or(u64::MAX);
        let mut all = Census::default();
        for space in [Space::Strings, Space::Meta] {
            if let Some(ks) = self.dbs.handle(n, space) {
                let c = census_of(&ks, time::millis(self.now()), bound)?;
                let ttls = u128::from(all.avg_ttl) * u128::from(all.expires)
                    + u128::from(c.avg_ttl) * u128::from(c.expires);
                all.keys += c.keys;
                all.expires += c.expires;
                all.avg_ttl = match all.expires {
                    0 => 0,
                    e => u64::try_from(ttls / u128::from(e)).unwrap_or(u64::MAX),
                };
            }
        }
        Ok(all)
    }
}

/// `ks`'s census at `now`, knowing it holds at most `bound` keys.
fn census_of(ks: &Keyspace, now: i64, bound: u64) -> spillway::Result<Census> {
    let estimate = ks.estimate_keys()?.unwrap_or(u64::MAX).min(bound);
    let exact = estimate <= COUNTED_UP_TO;
    let (mut read, mut expires, mut ttl_sum) = (0u64, 0u64, 0u128);
    for entry in ks.iter()? {
        if !exact && read == SAMPLED {
            break;
        }
        let (key, _) = entry?;
        read += 1;
        // A key that expired since the iterator read it is counted as a key without one.
        if let Some(Expiry::At(t)) = ks.expiry(&key)? {
            expires += 1;
            ttl_sum += u128::try_from((time::millis(t) - now).max(0)).unwrap_or(0);
        }
    }
    let avg_ttl = match expires {
        0 => 0,
        n => u64::try_from(ttl_sum / u128::from(n)).unwrap_or(u64::MAX),
    };
    if exact || read == 0 {
        return Ok(Census {
            keys: read,
            expires,
            avg_ttl,
        });
    }
    let scaled = u128::from(expires) * u128::from(estimate) / u128::from(read);
    Ok(Census {
        keys: estimate,
        expires: u64::try_from(scaled).unwrap_or(u64::MAX),
        avg_ttl,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::tests::{engine_at_2030, run};
    use super::super::Session;
    use crate::resp::Reply;

    #[test]
    fn info_counts_the_keys_that_expire_and_their_mean_ttl() {
        let (_d, e, clock) = engine_at_2030();
        let mut s = Session::new(1);
        run(
            &e,
            &mut s,
            &[
                &["SET", "a", "v", "PX", "100000"],
                &["SET", "b", "v", "PX", "200000"],
                &["SET", "c", "v"],
                &["SET", "gone", "v", "PX", "10"],
                &["SELECT", "5"],
                &["SETEX", "d", "60", "v"],
            ],
        );
        clock.advance(Duration::from_millis(10));
        let info = run(&e, &mut s, &[&["INFO", "keyspace"]]);
        let want = "# Keyspace\r\n\
            db0:keys=3,expires=2,avg_ttl=149990\r\n\
            db5:keys=1,expires=1,avg_ttl=59990\r\n";
        assert_eq!(info, [Reply::Verbatim(want.into())]);
        let out = run(
            &e,
            &mut s,
            &[&["SELECT", "0"], &["PERSIST", "a"], &["INFO", "keyspace"]],
        );
        let Reply::Verbatim(info) = &out[2] else {
            panic!("{out:?}")
        };
        assert!(String::from_utf8_lossy(info).contains("db0:keys=3,expires=1,avg_ttl=199990\r\n"));
    }
}
