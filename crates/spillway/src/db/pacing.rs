//! Writes slowed down while a spill runs, so that the buffer does not fill before the spill
//! has published its frozen one: many short waits instead of one long one (RocksDB's delayed
//! writes do the same before its stalls). Without it, a writer that outruns the spill thread
//! writes at full speed until the buffer is full and then waits for the whole rest of the
//! spill (`Inner::wait_for_spill`): one wait as long as the spill's slowest moment, up to
//! seconds at a billion records.
//!
//! The pace: once the buffer has used half of the room it has before a write would wait
//! (`Inner::must_freeze`), the room left may shrink no faster than `e^(-t/τ)`, where `τ` is
//! what recent spills took to publish their buffers. A spill as long as they were then
//! leaves the writer a third of that half; one five times as long still a hundredth. So
//! the room does not run out while the spill goes on unless it takes far longer than its
//! predecessors, and each write group waits for its own share: the longer the spill, the
//! slower the writes, never one long wait. A writer that does not outrun the spills never
//! waits at all. Until a spill has been timed, `τ` is the time the first one has run so
//! far. Once the spill
//! has published its buffers and only does upkeep, the buffer has room up to twice its limit
//! and the pace starts again over that room: upkeep is asked to stop once the buffer passes
//! its limit, and ends the step it is in first.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// The longest one group waits for its share: a spill that outlasts the pace this much is
/// waited for once the room runs out (a stall), as without pacing.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// How long spills take to publish their buffers: the spill thread reports each, the writer
/// paces by them.
#[derive(Default)]
pub(super) struct SpillTimes {
    /// A moving average, in microseconds (0: no spill timed yet).
    average_micros: AtomicU64,
}

impl SpillTimes {
    /// A spill published its buffers `took` after it started.
    pub fn published(&self, took: Duration) {
        let micros = took.as_micros().min(u64::MAX as u128) as u64;
        let old = self.average_micros.load(Relaxed);
        // Weighted toward the latest: spills grow with the tree.
        let new = if old == 0 {
            micros
        } else {
            (old * 3 + micros) / 4
        };
        self.average_micros.store(new.max(1), Relaxed);
    }

    fn tau(&self) -> Option<Duration> {
        match self.average_micros.load(Relaxed) {
            0 => None,
            us => Some(Duration::from_micros(us)),
        }
    }
}

/// The writer's pace through one spill (reset at each freeze).
#[derive(Default)]
pub(super) struct Pace {
    /// When the spill started.
    started: Option<Instant>,
    /// When the buffer had used half its room, and the room left then.
    half: Option<(Instant, usize)>,
    /// Whether the spill had published its buffers: the room is then another, and the pace
    /// starts again.
    published: bool,
}

impl Pace {
    /// The pace through a spill starting now.
    pub fn starting() -> Pace {
        Pace {
            started: Some(Instant::now()),
            ..Pace::default()
        }
    }

    /// How long the next write group should wait, with `room` bytes left before a write would
    /// wait for the running spill, out of `full` in all, while the spill `published` its
    /// frozen buffers or not (see `Inner::must_freeze`).
    pub fn wait(
        &mut self,
        times: &SpillTimes,
        room: usize,
        full: usize,
        published: bool,
    ) -> Option<Duration> {
        if published != self.published {
            *self = Pace {
                started: self.started,
                half: None,
                published,
            };
        }
        let now = Instant::now();
        // Before any spill is timed, the running one has taken at least as long as it has.
        let tau = times
            .tau()
            .or_else(|| self.started.map(|s| now - s))
            .filter(|t| !t.is_zero())?;
        let Some((start, half)) = self.half else {
            if room <= full / 2 {
                self.half = Some((now, room.max(1)));
            }
            return None;
        };
        // The room may be `half · e^(-t/τ)` at `t` after `start`: this room is due then.
        let room = room.clamp(1, half);
        let due = start + tau.mul_f64((half as f64 / room as f64).ln());
        due.checked_duration_since(now)
            .filter(|d| !d.is_zero())
            .map(|d| d.min(MAX_WAIT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(tau: Duration) -> SpillTimes {
        let times = SpillTimes::default();
        times.published(tau);
        times
    }

    #[test]
    fn nothing_is_paced_before_half_the_room_is_used() {
        let mut pace = Pace::default();
        assert_eq!(pace.wait(&SpillTimes::default(), 0, 1000, false), None);
        // The first spill: paced by the time it has run.
        let mut pace = Pace::starting();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(pace.wait(&SpillTimes::default(), 500, 1000, false), None);
        let wait = pace.wait(&SpillTimes::default(), 0, 1000, false);
        assert!(wait.is_some_and(|w| w <= MAX_WAIT), "{wait:?}");
        let times = timed(Duration::from_secs(1));
        let mut pace = Pace::default();
        assert_eq!(pace.wait(&times, 900, 1000, false), None);
        assert_eq!(pace.wait(&times, 600, 1000, false), None);
        // Half the room used: the pace starts from here, and this room is due now.
        assert_eq!(pace.wait(&times, 500, 1000, false), None);
        assert_eq!(pace.wait(&times, 500, 1000, false), None);
    }

    #[test]
    fn a_room_shrinking_faster_than_the_pace_waits_at_most_max_wait() {
        // τ of a second: a tenth of the half is due 2.3 s after the half, so the wait is the
        // cap (however slow this thread is, short of seconds).
        let times = timed(Duration::from_secs(1));
        let mut pace = Pace::default();
        assert_eq!(pace.wait(&times, 400, 1000, false), None);
        assert_eq!(pace.wait(&times, 40, 1000, false), Some(MAX_WAIT));
        assert_eq!(pace.wait(&times, 0, 1000, false), Some(MAX_WAIT));
        // Published: a new room, and a new pace over it.
        assert_eq!(pace.wait(&times, 1500, 2000, true), None);
        assert_eq!(pace.wait(&times, 900, 2000, true), None);
        assert_eq!(pace.wait(&times, 90, 2000, true), Some(MAX_WAIT));
    }

    #[test]
    fn a_short_tau_waits_for_the_room_s_due_time_only() {
        // τ of 10 ms: a room of half/e is due 10 ms after the half, so at most that is left.
        let times = timed(Duration::from_millis(10));
        let mut pace = Pace::default();
        assert_eq!(pace.wait(&times, 1000, 2000, false), None);
        let wait = pace.wait(&times, 368, 2000, false).unwrap_or_default();
        assert!(wait <= Duration::from_millis(10), "{wait:?}");
        std::thread::sleep(Duration::from_millis(11));
        assert_eq!(pace.wait(&times, 368, 2000, false), None);
    }

    #[test]
    fn spill_times_lean_toward_the_latest() {
        let times = timed(Duration::from_millis(100));
        assert_eq!(times.tau(), Some(Duration::from_millis(100)));
        times.published(Duration::from_millis(500));
        assert_eq!(times.tau(), Some(Duration::from_millis(200)));
        times.published(Duration::ZERO);
        assert_eq!(times.tau(), Some(Duration::from_millis(150)));
    }
}
