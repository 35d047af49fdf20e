//! The server's settings by name, as `CONFIG GET` reads them and `CONFIG SET` changes them:
//! one table ([`SETTINGS`]), each entry its name, its value as text, and how a new value is
//! read and applied — or none, for those fixed while the server runs.
//!
//! What `CONFIG SET` changes for real: `maxclients`, `appendfsync` (the server's `--fsync`:
//! when a write's reply may leave), and the store's `memory_budget` (`Db::set_memory_budget`).
//! What it accepts and keeps, changing nothing, because every value means here what it means
//! in Redis: the `lazyfree-lazy-*` switches (whether Redis frees a deleted value on another
//! thread: a deletion never waits here, so both answers hold) and `maxmemory-policy` (which
//! keys Redis evicts past `maxmemory`, which is always 0 here: none, under any policy). What
//! it accepts only where the value is what this server does, refusing the rest with Redis's
//! error form and why: `appendonly yes` (the log is the store), `save ""` (no snapshots),
//! `maxmemory 0` (no eviction, no refusal for memory). Everything else — `databases`, the
//! store's other options — is fixed, and answered with Redis's error for an immutable config.
//! A name it does not know gets Redis's error for an unknown one.
//!
//! As in Redis, `CONFIG SET` takes several names and values and applies all or none: every
//! name is checked, then every value read, before anything changes; should applying one fail,
//! those applied before it are set back.

use std::sync::atomic::Ordering::Relaxed;

use super::context::Ctx;
use super::{integer, Engine};
use crate::locks::lock;
use crate::pattern;
use crate::resp::Reply;
use crate::server::Fsync;

type Result = super::CmdResult;

/// Values `CONFIG SET` keeps that change nothing (see the module's documentation).
#[derive(Clone, Debug)]
pub struct Kept {
    /// `lazyfree-lazy-eviction`, `-expire`, `-server-del`, `-user-del`, `-user-flush`.
    lazyfree: [bool; LAZYFREE.len()],
    maxmemory_policy: &'static str,
    /// Redis's encoding thresholds, by [`Threshold`].
    thresholds: [i64; THRESHOLDS.len()],
}

/// Redis's encoding thresholds that `OBJECT ENCODING` answers by.
#[derive(Clone, Copy)]
pub enum Threshold {
    HashEntries = 0,
    HashValue = 1,
    SetIntsetEntries = 2,
    ZsetEntries = 3,
    ZsetValue = 4,
    ListSize = 5,
}

/// Each threshold's names (Redis 7's, then its older `ziplist` alias) and default.
const THRESHOLDS: [(&str, Option<&str>, i64); 7] = [
    (
        "hash-max-listpack-entries",
        Some("hash-max-ziplist-entries"),
        128,
    ),
    (
        "hash-max-listpack-value",
        Some("hash-max-ziplist-value"),
        64,
    ),
    ("set-max-intset-entries", None, 512),
    (
        "zset-max-listpack-entries",
        Some("zset-max-ziplist-entries"),
        128,
    ),
    (
        "zset-max-listpack-value",
        Some("zset-max-ziplist-value"),
        64,
    ),
    ("list-max-listpack-size", Some("list-max-ziplist-size"), -2),
    ("list-compress-depth", None, 0),
];

impl Kept {
    /// Threshold `t` as set (or Redis's default).
    pub fn threshold(&self, t: Threshold) -> i64 {
        self.thresholds[t as usize]
    }

    /// `maxmemory-policy`, as `INFO memory` shows it.
    pub fn maxmemory_policy(&self) -> &'static str {
        self.maxmemory_policy
    }
}

impl Default for Kept {
    fn default() -> Kept {
        Kept {
            lazyfree: [false; LAZYFREE.len()],
            maxmemory_policy: "noeviction",
            thresholds: THRESHOLDS.map(|(_, _, default)| default),
        }
    }
}

const LAZYFREE: [&str; 5] = [
    "lazyfree-lazy-eviction",
    "lazyfree-lazy-expire",
    "lazyfree-lazy-server-del",
    "lazyfree-lazy-user-del",
    "lazyfree-lazy-user-flush",
];

/// Redis's eviction policies, in the order its error lists them.
const POLICIES: [&str; 8] = [
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

/// Redis's `appendfsync` values, in the order its error lists them.
const FSYNCS: [(&str, Fsync); 3] = [
    ("everysec", Fsync::EverySec),
    ("always", Fsync::Always),
    ("no", Fsync::No),
];

/// A new value, read and checked, to apply.
enum Change {
    Nothing,
    MaxClients(usize),
    Fsync(Fsync),
    MemoryBudget(Option<usize>),
    Lazyfree(usize, bool),
    Policy(&'static str),
    Threshold(usize, i64),
}

/// Reads a new value for a setting: the change to make, or why the value is refused.
type Read = fn(&str) -> std::result::Result<Change, String>;

/// One setting: its name, its value now (`None`: the store's option of that name), and how
/// `CONFIG SET` reads a new one (`None`: fixed).
struct Setting {
    name: &'static str,
    get: Option<fn(&Engine) -> String>,
    set: Option<Read>,
}

/// Why a value is refused, after Redis's own reasons.
const NOT_YES_NO: &str = "argument must be 'yes' or 'no'";

/// The settings Redis has that this server answers, then the store's options (`spillway::OPTIONS`).
static SETTINGS: &[Setting] = &[
    Setting {
        name: "save",
        get: Some(|_| String::new()),
        set: Some(|v| {
            match save_points(v) {
            None => Err("Invalid save parameters".into()),
            Some(0) => Ok(Change::Nothing),
            Some(_) => Err(
                "spillway writes no snapshots: every write is in its log (appendfsync says when it is synced)"
                    .into(),
            ),
        }
        }),
    },
    Setting {
        name: "appendonly",
        get: Some(|_| "yes".into()),
        set: Some(|v| match yes_no(v) {
            Some(true) => Ok(Change::Nothing),
            Some(false) => Err("spillway's log is its store: it cannot be turned off".into()),
            None => Err(NOT_YES_NO.into()),
        }),
    },
    Setting {
        name: "appendfsync",
        get: Some(|e| {
            let now = e.fsync();
            let name = FSYNCS.iter().find(|(_, f)| *f == now);
            name.map_or("always", |(n, _)| n).into()
        }),
        set: Some(|v| {
            let found = FSYNCS.iter().find(|(n, _)| n.eq_ignore_ascii_case(v));
            found
                .map(|&(_, f)| Change::Fsync(f))
                .ok_or_else(|| one_of(&FSYNCS.map(|(n, _)| n)))
        }),
    },
    Setting {
        name: "daemonize",
        get: Some(|_| "no".into()),
        set: None,
    },
    Setting {
        name: "databases",
        get: Some(|e| e.dbs.count().to_string()),
        set: None,
    },
    Setting {
        name: "maxclients",
        get: Some(|e| e.clients.max().to_string()),
        set: Some(|v| match integer(v.as_bytes()) {
            Some(n @ 1..=4_294_967_295) => Ok(Change::MaxClients(n as usize)),
            Some(_) => Err("argument must be between 1 and 4294967295 inclusive".into()),
            None => Err("argument couldn't be parsed into an integer".into()),
        }),
    },
    Setting {
        name: "maxmemory",
        get: Some(|_| "0".into()),
        set: Some(|v| {
            match memory(v) {
            Some(0) => Ok(Change::Nothing),
            Some(_) => Err("spillway neither evicts keys nor refuses writes for memory: memory_budget bounds what it keeps in memory".into()),
            None => Err("argument must be a memory value".into()),
        }
        }),
    },
    Setting {
        name: "maxmemory-policy",
        get: Some(|e| lock(&e.kept).maxmemory_policy.into()),
        set: Some(|v| {
            let found = POLICIES.iter().find(|p| p.eq_ignore_ascii_case(v));
            found
                .map(|p| Change::Policy(p))
                .ok_or_else(|| one_of(&POLICIES))
        }),
    },
    lazyfree::<0>(),
    lazyfree::<1>(),
    lazyfree::<2>(),
    lazyfree::<3>(),
    lazyfree::<4>(),
    threshold::<0, false>(),
    threshold::<0, true>(),
    threshold::<1, false>(),
    threshold::<1, true>(),
    threshold::<2, false>(),
    threshold::<3, false>(),
    threshold::<3, true>(),
    threshold::<4, false>(),
    threshold::<4, true>(),
    threshold::<5, false>(),
    threshold::<5, true>(),
    threshold::<6, false>(),
];

/// Encoding threshold `I`, under its Redis 7 name or (`ALIAS`) its older one.
const fn threshold<const I: usize, const ALIAS: bool>() -> Setting {
    let (name, alias, _) = THRESHOLDS[I];
    Setting {
        name: match (ALIAS, alias) {
            (true, Some(alias)) => alias,
            _ => name,
        },
        get: Some(|e| lock(&e.kept).thresholds[I].to_string()),
        set: Some(|v| match integer(v.as_bytes()) {
            // The list size may be negative (a size in KiB: -1 to -5); the rest may not.
            Some(n) if n >= 0 || I == Threshold::ListSize as usize => Ok(Change::Threshold(I, n)),
            Some(_) => Err("argument must be between 0 and 9223372036854775807 inclusive".into()),
            None => Err("argument couldn't be parsed into an integer".into()),
        }),
    }
}

/// The `lazyfree-lazy-*` switch `I`.
const fn lazyfree<const I: usize>() -> Setting {
    Setting {
        name: LAZYFREE[I],
        get: Some(|e| yes_or_no(lock(&e.kept).lazyfree[I])),
        set: Some(|v| {
            yes_no(v)
                .map(|on| Change::Lazyfree(I, on))
                .ok_or(NOT_YES_NO.into())
        }),
    }
}

fn yes_or_no(on: bool) -> String {
    if on { "yes" } else { "no" }.into()
}

/// Redis's booleans: `yes` or `no`, in any case.
fn yes_no(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}

/// Redis's error for a value not among `choices`.
fn one_of(choices: &[&str]) -> String {
    format!(
        "argument(s) must be one of the following: {}",
        choices.join(", ")
    )
}

/// How many save points `v` names (`"900 1 300 10"`: 2), as Redis reads them; `None` if it
/// is not pairs of whole numbers.
fn save_points(v: &str) -> Option<usize> {
    let words: Vec<&str> = v.split_ascii_whitespace().collect();
    let numbers = words.iter().all(|w| w.parse::<u64>().is_ok());
    (words.len().is_multiple_of(2) && numbers).then_some(words.len() / 2)
}

/// A memory size as Redis reads one: digits, then nothing, `b`, `k` (1000), `kb` (1024), `m`,
/// `mb`, `g` or `gb`, in any case.
fn memory(v: &str) -> Option<u64> {
    let digits = v.bytes().take_while(u8::is_ascii_digit).count();
    let (n, unit) = v.split_at(digits);
    let unit: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    n.parse::<u64>().ok()?.checked_mul(unit)
}

/// A setting by name, in any case: Redis's, then the store's options. Of those only
/// `memory_budget` changes while the store runs.
fn setting(name: &str) -> Option<&'static Setting> {
    let name = name.to_ascii_lowercase();
    static OPTIONS: std::sync::OnceLock<Vec<Setting>> = std::sync::OnceLock::new();
    let options = OPTIONS.get_or_init(|| {
        let options = spillway::OPTIONS.iter();
        options
            .map(|o| Setting {
                name: o.name,
                get: None,
                set: (o.name == "memory_budget").then_some(memory_budget as _),
            })
            .collect()
    });
    SETTINGS.iter().chain(options).find(|s| s.name == name)
}

/// `memory_budget`: a size (`256M`) or `none`, as the store's options read it.
fn memory_budget(v: &str) -> std::result::Result<Change, String> {
    let mut options = spillway::Options::default();
    match options.set("memory_budget", v) {
        Ok(()) => Ok(Change::MemoryBudget(options.memory_budget)),
        Err(spillway::Error::InvalidOption { reason, .. }) => Err(reason),
        Err(e) => Err(e.to_string()),
    }
}

impl Engine {
    /// The value of setting `s` now.
    fn value(&self, s: &Setting) -> String {
        match (s.get, s.name) {
            (Some(get), _) => get(self),
            // What the store is, not what was asked for ("none": the store's own).
            (None, "key_order") => self.db.key_order().to_string(),
            (None, "merge_operator") => self.db.merge_operator_name().unwrap_or("none").into(),
            (None, name) => lock(&self.options).get(name).unwrap_or_default(),
        }
    }

    fn apply(&self, change: Change) -> std::result::Result<(), String> {
        match change {
            Change::Nothing => {}
            Change::MaxClients(n) => self.clients.set_max(n),
            Change::Fsync(f) => self.fsync.store(f as u8, Relaxed),
            Change::MemoryBudget(budget) => {
                self.db.set_memory_budget(budget).map_err(|e| match e {
                    spillway::Error::InvalidOption { reason, .. } => reason,
                    e => e.to_string(),
                })?;
                lock(&self.options).memory_budget = budget;
            }
            Change::Lazyfree(i, on) => lock(&self.kept).lazyfree[i] = on,
            Change::Policy(p) => lock(&self.kept).maxmemory_policy = p,
            Change::Threshold(i, n) => lock(&self.kept).thresholds[i] = n,
        }
        Ok(())
    }
}

/// Every setting's name: Redis's, then the store's options.
fn names() -> impl Iterator<Item = &'static str> {
    let options = spillway::OPTIONS.iter().map(|o| o.name);
    SETTINGS.iter().map(|s| s.name).chain(options)
}

/// `CONFIG GET pattern [pattern ...]`: every setting whose name one of the glob patterns
/// matches (in any case), once: Redis's that tools ask for (`redis-benchmark`: `save`,
/// `appendonly`) and the store's options, under their names in `spillway::OPTIONS`.
pub fn config_get(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let patterns: Vec<Vec<u8>> = args[2..].iter().map(|p| p.to_ascii_lowercase()).collect();
    let wanted = |name: &str| {
        let mut p = patterns.iter();
        p.any(|p| pattern::matches(p, name.as_bytes()))
    };
    let found = names().filter(|n| wanted(n)).filter_map(setting);
    Ok(Reply::Map(
        found
            .map(|s| (Reply::bulk(s.name), Reply::bulk(ctx.engine.value(s))))
            .collect(),
    ))
}

/// `CONFIG SET name value [name value ...]`: all of them or, with Redis's error, none.
pub fn config_set(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    if args.len() % 2 == 1 {
        return Ok(Reply::error("ERR syntax error"));
    }
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let failed = |name: &str, why: &str| {
        Reply::error(format!(
            "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
        ))
    };
    // Every name first, as Redis: an unknown one before any other error, else the first
    // fixed or repeated one.
    let mut found: Vec<(&'static Setting, String)> = Vec::new();
    let (mut unknown, mut refused) = (None, None);
    for pair in args[2..].chunks(2) {
        let name = text(&pair[0]);
        let Some(s) = setting(&name) else {
            if unknown.is_none() && refused.is_none() {
                unknown = Some(name);
            }
            continue;
        };
        if unknown.is_some() || refused.is_some() {
            continue;
        }
        if s.set.is_none() {
            refused = Some(failed(&name, "can't set immutable config"));
        } else if found.iter().any(|(f, _)| std::ptr::eq(*f, s)) {
            refused = Some(failed(&name, "duplicate parameter"));
        }
        found.push((s, text(&pair[1])));
    }
    if let Some(name) = unknown {
        return Ok(Reply::error(format!(
            "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
        )));
    }
    if let Some(refusal) = refused {
        return Ok(refusal);
    }
    // Every value read before any is applied.
    let mut changes = Vec::new();
    for (s, value) in &found {
        let set = s.set.expect("fixed settings are refused above");
        match set(value) {
            Ok(change) => changes.push((*s, change)),
            Err(why) => return Ok(failed(s.name, &why)),
        }
    }
    let engine = ctx.engine;
    let mut applied: Vec<(&Setting, String)> = Vec::new();
    for (s, change) in changes {
        let before = engine.value(s);
        if let Err(why) = engine.apply(change) {
            // Set back those applied, newest first: their old values were taken as valid.
            for (s, old) in applied.into_iter().rev() {
                let set = s.set.expect("applied, so settable");
                if let Ok(change) = set(&old) {
                    let _ = engine.apply(change);
                }
            }
            return Ok(failed(s.name, &why));
        }
        applied.push((s, before));
    }
    Ok(Reply::ok())
}

/// `CONFIG RESETSTAT`: the statistics INFO shows start again — per command, per error, the
/// server's counts of connections, lookups and bytes.
pub fn config_resetstat(ctx: &mut Ctx, _: &[Vec<u8>]) -> Result {
    ctx.engine.reset_stats();
    Ok(Reply::ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_read_as_redis_reads_them() {
        assert_eq!(memory("1gb"), Some(1 << 30));
        assert_eq!(memory("1G"), Some(1_000_000_000));
        assert_eq!(memory("0"), Some(0));
        assert_eq!(memory("-1"), None);
        assert_eq!(memory("1tb"), None);
        assert_eq!(save_points(""), Some(0));
        assert_eq!(save_points("900 1 300 10"), Some(2));
        assert_eq!(save_points("900"), None);
        assert_eq!(save_points("abc 1"), None);
        assert_eq!(yes_no("YES"), Some(true));
        assert_eq!(yes_no("true"), None);
        assert!(setting("MaxClients").is_some() && setting("nosuch").is_none());
        assert!(setting("memory_budget").unwrap().set.is_some());
        assert!(setting("node_size").unwrap().set.is_none());
    }
}
