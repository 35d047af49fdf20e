//! Time, for expiry: a [`Clock`] in [`Options`](crate::Options) says what "now" is, so that
//! tests (and users' tests) control it. Inside the engine a time is milliseconds since the Unix
//! epoch; the API speaks [`SystemTime`].

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::record::NEVER;

/// Where a store reads the time: when a record expires is compared with it.
///
/// A clock may jump; expiry follows it both ways for what is still stored, but a record that
/// spills dropped once its time had come stays gone if the clock goes back (see DURABILITY.md).
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> SystemTime;
}

/// The wall clock: the default.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that moves only when told: for tests of what expires when.
///
/// ```
/// use std::sync::Arc;
/// use std::time::{Duration, UNIX_EPOCH};
/// use spillway::{Clock, ManualClock};
///
/// let clock = Arc::new(ManualClock::new(UNIX_EPOCH + Duration::from_secs(1_000)));
/// clock.advance(Duration::from_secs(60));
/// assert_eq!(clock.now(), UNIX_EPOCH + Duration::from_secs(1_060));
/// ```
#[derive(Debug)]
pub struct ManualClock {
    ms: AtomicU64,
}

impl ManualClock {
    pub fn new(start: SystemTime) -> ManualClock {
        ManualClock {
            ms: AtomicU64::new(millis(start)),
        }
    }

    /// Make it `t` (earlier than now too).
    pub fn set(&self, t: SystemTime) {
        self.ms.store(millis(t), Relaxed);
    }

    pub fn advance(&self, d: Duration) {
        let d = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.ms
            .fetch_update(Relaxed, Relaxed, |ms| {
                Some(ms.saturating_add(d).min(NEVER - 1))
            })
            .expect("the closure always gives a value");
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        time_of(self.ms.load(Relaxed))
    }
}

/// `t` in milliseconds since the epoch: 0 before it, and short of [`NEVER`] however late.
pub fn millis(t: SystemTime) -> u64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => u64::try_from(d.as_millis())
            .unwrap_or(u64::MAX)
            .min(NEVER - 1),
        Err(_) => 0,
    }
}

/// The time `ms` milliseconds after the epoch (the latest a `SystemTime` holds, if later).
pub fn time_of(ms: u64) -> SystemTime {
    UNIX_EPOCH
        .checked_add(Duration::from_millis(ms))
        .unwrap_or_else(|| UNIX_EPOCH + Duration::from_secs(i64::MAX as u64 / 2))
}

/// When a key expires, as [`Db::expiry`](crate::Db::expiry) tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Expiry {
    /// It does not: the key stays until deleted.
    Never,
    /// At this time (to the millisecond) the key is gone.
    At(SystemTime),
}

impl Expiry {
    /// The expiry of a record that expires at `until` ms ([`NEVER`]: it does not).
    pub(crate) fn of(until: u64) -> Expiry {
        if until == NEVER {
            Expiry::Never
        } else {
            Expiry::At(time_of(until))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_to_the_millisecond_and_saturate() {
        let t = UNIX_EPOCH + Duration::from_micros(1_790_000_000_123_456);
        assert_eq!(millis(t), 1_790_000_000_123);
        assert_eq!(
            time_of(millis(t)),
            UNIX_EPOCH + Duration::from_millis(1_790_000_000_123)
        );
        assert_eq!(millis(UNIX_EPOCH - Duration::from_secs(5)), 0);
        let far = UNIX_EPOCH + Duration::from_secs(u64::MAX / 1000);
        assert!(millis(far) < NEVER);
        let c = ManualClock::new(UNIX_EPOCH);
        c.advance(Duration::MAX);
        assert!(millis(c.now()) < NEVER);
        assert_eq!(Expiry::of(NEVER), Expiry::Never);
    }
}
