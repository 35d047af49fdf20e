//! Times as Redis speaks them — milliseconds since the Unix epoch in an `i64`, negative before
//! it — and as the engine takes them (`SystemTime`, which it keeps to the millisecond).
//!
//! "Now" is the store's clock (`Options::clock`, the wall clock unless a test sets another), not
//! the server's own: the engine hides a key once its expiry is at or before that clock's now, so
//! a TTL computed from any other clock could say a key lives that reads no longer find.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use spillway::Expiry;

/// `t` in milliseconds since the epoch (saturating: no `SystemTime` we meet is that far out).
pub fn millis(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// The time `ms` milliseconds after the epoch (before it, if negative).
pub fn at(ms: i64) -> SystemTime {
    let d = Duration::from_millis(ms.unsigned_abs());
    if ms >= 0 {
        UNIX_EPOCH + d
    } else {
        UNIX_EPOCH - d
    }
}

/// Whether a key with expiry `e` is alive at `now` (the engine's rule: gone at its time).
pub fn alive(e: Expiry, now: SystemTime) -> bool {
    match e {
        Expiry::Never => true,
        Expiry::At(t) => t > now,
    }
}

/// An expiry as Redis holds it: its time in milliseconds, or `None` for none.
pub fn deadline(e: Expiry) -> Option<i64> {
    match e {
        Expiry::Never => None,
        Expiry::At(t) => Some(millis(t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_round_trip_on_both_sides_of_the_epoch_and_at_the_extremes() {
        for ms in [
            0,
            1,
            -1,
            1_999_999_999_999,
            -86_400_000,
            i64::MAX,
            i64::MIN + 1,
        ] {
            assert_eq!(millis(at(ms)), ms, "{ms}");
        }
        let now = at(1_000);
        assert!(alive(Expiry::Never, now));
        assert!(alive(Expiry::At(at(1_001)), now));
        assert!(!alive(Expiry::At(at(1_000)), now), "gone at its time");
        assert_eq!(deadline(Expiry::At(at(-5))), Some(-5));
        assert_eq!(deadline(Expiry::Never), None);
    }
}
