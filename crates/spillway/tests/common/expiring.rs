//! A model of a store with expiry, for the crash and power-loss tests that write expiring
//! records: every key's value and when it expires, changed by writes applied *at the time they
//! were written* — as the store applies them, a replay included (the log records each group's
//! time: see the engine's `batch` module) — and read at any later time.
//!
//! The rules (`crates/spillway/src/upsert/fold.rs`, "Time"): a record whose expiry is at or
//! before now is absent; a plain put clears any expiry; `expire` and `persist` change a key
//! that is live when they are written and do nothing to one that is absent or expired; a merge
//! operand keeps the value's expiry, and one written at or after the key's expiry starts from
//! nothing (its result does not expire).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use spillway::{Db, Expiry, KeyOrder, WriteBatch};

/// "Does not expire", as the model writes it.
pub const NEVER: u64 = u64::MAX;

/// The time `ms` milliseconds after the epoch.
pub fn time(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

pub fn expiry_of(until: u64) -> Expiry {
    if until == NEVER {
        Expiry::Never
    } else {
        Expiry::At(time(until))
    }
}

/// One change to one key, its times absolute (ms since the epoch).
#[derive(Clone, PartialEq, Eq)]
pub enum Change {
    Put(Vec<u8>),
    /// A value that expires at `.1` (at or before the write: written already gone).
    PutUntil(Vec<u8>, u64),
    /// `put_ttl`: a value that expires `.1` ms after the write.
    PutTtl(Vec<u8>, u64),
    Delete,
    /// A merge operand, for [`Append`](spillway::operators::Append) with `,` between pieces.
    Merge(Vec<u8>),
    /// `expire(key, at)`.
    Expire(u64),
    Persist,
}

impl std::fmt::Debug for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Put(v) => write!(f, "Put({})", show(v)),
            Change::PutUntil(v, until) => write!(f, "PutUntil({}, {until})", show(v)),
            Change::PutTtl(v, ttl) => write!(f, "PutTtl({}, {ttl} ms)", show(v)),
            Change::Delete => write!(f, "Delete"),
            Change::Merge(o) => write!(f, "Merge({})", show(o)),
            Change::Expire(until) => write!(f, "Expire({until})"),
            Change::Persist => write!(f, "Persist"),
        }
    }
}

impl Change {
    /// Add the change to a batch.
    pub fn add_to(&self, b: &mut WriteBatch, key: &[u8], now: u64) {
        match self {
            Change::Put(v) => b.put(key, v),
            Change::PutUntil(v, until) => b.put_expiring(key, v, time(*until)),
            // A batch has no `put_ttl`: the same time, computed here.
            Change::PutTtl(v, ttl) => b.put_expiring(key, v, time(now + ttl)),
            Change::Delete => b.delete(key),
            Change::Merge(o) => b.merge(key, o),
            Change::Expire(until) => b.expire(key, time(*until)),
            Change::Persist => b.persist(key),
        }
    }

    /// Write the change alone, by the `Db` method of its name (each with
    /// `Options::sync_by_default`'s durability).
    pub fn write_alone(&self, db: &Db, key: &[u8]) -> spillway::Result<()> {
        match self {
            Change::Put(v) => db.put(key, v),
            Change::PutUntil(v, until) => db.put_expiring(key, v, time(*until)),
            Change::PutTtl(v, ttl) => db.put_ttl(key, v, Duration::from_millis(*ttl)),
            Change::Delete => db.delete(key),
            Change::Merge(o) => db.merge(key, o),
            Change::Expire(until) => db.expire(key, time(*until)),
            Change::Persist => db.persist(key),
        }
    }
}

/// How often the model met the cases that tell expiry apart from plain writes: the tests
/// assert that each happened, so that a workload that never reaches them fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// A merge on a key whose value had expired (it started afresh).
    pub merges_after_expiry: u64,
    /// A merge into a live value that expires (it kept the expiry).
    pub merges_into_expiring: u64,
    /// An `expire` or `persist` that changed a live key.
    pub expiry_changes_applied: u64,
    /// An `expire` or `persist` on a key whose value had expired (it did nothing).
    pub expiry_changes_on_expired: u64,
    /// An `expire` or `persist` on an absent key (it did nothing).
    pub expiry_changes_on_absent: u64,
    /// An `expire` whose time was already past: the key went at once.
    pub expired_at_once: u64,
    /// A `put_expiring` whose time was already past, over a live value (hiding it).
    pub puts_already_gone: u64,
}

impl Tally {
    pub fn add(&mut self, o: &Tally) {
        self.merges_after_expiry += o.merges_after_expiry;
        self.merges_into_expiring += o.merges_into_expiring;
        self.expiry_changes_applied += o.expiry_changes_applied;
        self.expiry_changes_on_expired += o.expiry_changes_on_expired;
        self.expiry_changes_on_absent += o.expiry_changes_on_absent;
        self.expired_at_once += o.expired_at_once;
        self.puts_already_gone += o.puts_already_gone;
    }

    /// Panic (naming `ctx`) unless every case happened at least once.
    pub fn assert_all_seen(&self, ctx: &str) {
        let all = [
            ("merges after expiry", self.merges_after_expiry),
            ("merges into expiring values", self.merges_into_expiring),
            ("expiry changes applied", self.expiry_changes_applied),
            (
                "expiry changes on expired keys",
                self.expiry_changes_on_expired,
            ),
            (
                "expiry changes on absent keys",
                self.expiry_changes_on_absent,
            ),
            ("expires already past", self.expired_at_once),
            (
                "puts already gone over a live value",
                self.puts_already_gone,
            ),
        ];
        for (what, n) in all {
            assert!(n > 0, "{ctx}: the workload never made {what}: {self:?}");
        }
    }
}

/// Every key's value and when it expires ([`NEVER`]: it does not). An expired value is kept
/// until [`prune`](Self::prune): it behaves as absent for every later write and read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Model {
    pub values: BTreeMap<Vec<u8>, (Vec<u8>, u64)>,
    pub tally: Tally,
}

impl Model {
    /// `key`'s value and expiry as a read at `now` sees them.
    pub fn live(&self, key: &[u8], now: u64) -> Option<(Vec<u8>, u64)> {
        self.values
            .get(key)
            .filter(|(_, until)| *until > now)
            .cloned()
    }

    /// Apply `change` to `key`, written at time `now`.
    pub fn apply(&mut self, key: &[u8], change: &Change, now: u64) {
        let stored = self.values.get(key).cloned();
        let current = self.live(key, now);
        let t = &mut self.tally;
        let next = match change {
            Change::Put(v) => Some((v.clone(), NEVER)),
            Change::PutUntil(v, until) => {
                if *until <= now && current.is_some() {
                    t.puts_already_gone += 1;
                }
                Some((v.clone(), *until))
            }
            Change::PutTtl(v, ttl) => Some((v.clone(), now + ttl)),
            Change::Delete => None,
            Change::Merge(o) => match current {
                Some((mut v, until)) => {
                    if until != NEVER {
                        t.merges_into_expiring += 1;
                    }
                    v.push(b',');
                    v.extend_from_slice(o);
                    Some((v, until))
                }
                None => {
                    if stored.is_some() {
                        t.merges_after_expiry += 1;
                    }
                    Some((o.clone(), NEVER))
                }
            },
            Change::Expire(_) | Change::Persist => match current {
                Some((v, _)) => {
                    t.expiry_changes_applied += 1;
                    match change {
                        Change::Expire(until) => {
                            if *until <= now {
                                t.expired_at_once += 1;
                            }
                            Some((v, *until))
                        }
                        _ => Some((v, NEVER)),
                    }
                }
                None => {
                    if stored.is_some() {
                        t.expiry_changes_on_expired += 1;
                    } else {
                        t.expiry_changes_on_absent += 1;
                    }
                    stored
                }
            },
        };
        match next {
            Some(v) => self.values.insert(key.to_vec(), v),
            None => self.values.remove(key),
        };
    }

    /// Forget values expired by `now`. Only when no write older than `now` is still to come:
    /// then an expired value and an absent key are the same to every later write and read.
    pub fn prune(&mut self, now: u64) {
        self.values.retain(|_, (_, until)| *until > now);
    }

    /// What reads at `now` must show: every live key, with its value and expiry.
    pub fn visible(&self, now: u64) -> BTreeMap<Vec<u8>, (Vec<u8>, Expiry)> {
        self.values
            .iter()
            .filter(|(_, (_, until))| *until > now)
            .map(|(k, (v, until))| (k.clone(), (v.clone(), expiry_of(*until))))
            .collect()
    }
}

/// What the store shows of `keys` — by `get_with_expiry`, checked against `get`, `expiry`,
/// `multi_get` and a full scan from both ends at once (which must show exactly these keys'
/// values, no other key) — as the model's [`visible`](Model::visible) would, so that the two can
/// be compared. Panics, naming `ctx`, if the reads disagree with each other.
pub fn read_store(db: &Db, keys: &[Vec<u8>], ctx: &str) -> BTreeMap<Vec<u8>, (Vec<u8>, Expiry)> {
    let mut seen = BTreeMap::new();
    let multi = db
        .multi_get(keys)
        .unwrap_or_else(|e| panic!("{ctx}: multi_get: {e}"));
    for (k, m) in keys.iter().zip(multi) {
        let with = db
            .get_with_expiry(k)
            .unwrap_or_else(|e| panic!("{ctx}: get_with_expiry {}: {e}", show(k)));
        let plain = db
            .get(k)
            .unwrap_or_else(|e| panic!("{ctx}: get {}: {e}", show(k)));
        let expiry = db
            .expiry(k)
            .unwrap_or_else(|e| panic!("{ctx}: expiry {}: {e}", show(k)));
        let value = with.as_ref().map(|w| &w.0);
        assert!(
            plain.as_ref() == value && m.as_ref() == value,
            "{ctx}: key {}: get_with_expiry says {:?}, get {:?}, multi_get {:?}",
            show(k),
            with.as_ref().map(|(v, e)| (show(v), e)),
            plain.as_deref().map(show),
            m.as_deref().map(show)
        );
        assert_eq!(
            expiry,
            with.as_ref().map(|w| w.1),
            "{ctx}: key {}: expiry and get_with_expiry disagree",
            show(k)
        );
        if let Some(w) = with {
            seen.insert(k.clone(), w);
        }
    }
    // From both ends at once, meeting in the middle.
    let mut it = db.iter();
    let (mut front, mut back) = (Vec::new(), Vec::new());
    while let Some(r) = it.next() {
        front.push(r.unwrap_or_else(|e| panic!("{ctx}: scan: {e}")));
        match it.next_back() {
            Some(r) => back.push(r.unwrap_or_else(|e| panic!("{ctx}: scan back: {e}"))),
            None => break,
        }
    }
    back.reverse();
    front.extend(back);
    if db.key_order() == KeyOrder::Ordered {
        assert!(
            front.windows(2).all(|w| w[0].0 < w[1].0),
            "{ctx}: an ordered scan is not in key order"
        );
    } else {
        front.sort();
    }
    let from_gets: Vec<(Vec<u8>, Vec<u8>)> = seen
        .iter()
        .map(|(k, (v, _))| (k.clone(), v.clone()))
        .collect();
    if front != from_gets {
        let scanned: BTreeMap<_, _> = front.into_iter().collect();
        let only_scan: Vec<String> = scanned
            .iter()
            .filter(|(k, v)| seen.get(*k).map(|s| &s.0) != Some(*v))
            .map(|(k, _)| show(k))
            .collect();
        let only_gets: Vec<String> = seen
            .iter()
            .filter(|(k, s)| scanned.get(*k) != Some(&s.0))
            .map(|(k, _)| show(k))
            .collect();
        panic!(
            "{ctx}: a full scan disagrees with the gets: only (or otherwise) in the scan \
             {only_scan:?}, only (or otherwise) in the gets {only_gets:?}"
        );
    }
    seen
}

/// The differences between what the store shows and what the model expects, one line per key
/// (at most `max` lines); empty if they agree.
pub fn differences(
    seen: &BTreeMap<Vec<u8>, (Vec<u8>, Expiry)>,
    want: &BTreeMap<Vec<u8>, (Vec<u8>, Expiry)>,
    max: usize,
) -> Vec<String> {
    let mut keys: Vec<&Vec<u8>> = seen.keys().chain(want.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| seen.get(*k) != want.get(*k))
        .take(max)
        .map(|k| {
            format!(
                "{}: store {}, model {}",
                show(k),
                describe(seen.get(k)),
                describe(want.get(k))
            )
        })
        .collect()
}

fn describe(v: Option<&(Vec<u8>, Expiry)>) -> String {
    match v {
        None => "absent".into(),
        Some((v, e)) => {
            let e = match e {
                Expiry::Never => "never".to_string(),
                Expiry::At(t) => format!(
                    "{} ms",
                    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()
                ),
            };
            format!("{} (expires {e})", show(v))
        }
    }
}

/// Bytes as text, shortened.
pub fn show(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(&b[..b.len().min(24)]).into_owned();
    if b.len() > 24 {
        format!("{s}…({} bytes)", b.len())
    } else {
        s
    }
}
