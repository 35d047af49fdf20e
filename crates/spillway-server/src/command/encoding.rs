//! How hashes, sets, sorted sets and lists are kept on the store's keyspaces: Kvrocks's
//! scheme, on the three keyspaces of a database (`databases::Space`).
//!
//! **Metadata** (`redis:meta:n`, one record per key, in the database's key order): the key's
//! [`Type`], its version, its size (fields, members or elements) and, for a list, the index of
//! its first element. The key's expiry is the record's own (the engine's), so `TTL`, `EXPIRE`
//! and `PERSIST` work on it as on a string, and an expired key is gone for every read at once.
//!
//! ```text
//! value: type (1 byte) | version (u64, big-endian) | size (u64)
//!        [| head (u64), lists] [| low (u64) | high (u64), sorted sets]
//!        [| deleted (u64), hashes, sets and sorted sets; absent: 0]
//! ```
//!
//! **Fields** (`redis:fields:n`, ordered): one record per field, member or element, under its
//! key and version, so that a key's fields are one range of the keyspace:
//!
//! ```text
//! key:  key's length (u32, big-endian) | key | version (u64, big-endian) | sub-key
//! hash:        hash(field) | field             -> value
//! set:         hash(member) | member           -> (empty)
//! sorted set:  'm' | hash(member) | member     -> score (f64 bits, big-endian)
//!              's' | ordered score | member    -> (empty)   (the score index)
//! list:        index (u64, big-endian)         -> element   (head..head+size)
//! ```
//!
//! A sorted set's `low` and `high` bound its scores (as the score index orders them): every
//! member's score is within them. A pop from the low end raises `low` to the score it took
//! last, so the next pop's scan starts there, past the deleted index records it would
//! otherwise step over one by one until a spill drops them (ZPOPMIN took 413 us a pop after
//! 3,000 pops without; a queue of pops is O(n^2) that way).
//!
//! **Deleted fields are rewritten away.** A field or member removed one at a time (`HDEL`,
//! `SREM`, `SPOP`, `ZREM`) leaves a delete record in the key's range until a spill carries it
//! down to the record it deletes, and every scan of the range (`HGETALL`, `SMEMBERS`, a
//! `*SCAN` page, a random pick's seek) steps over it. `deleted` counts them; once they
//! outnumber the key's live fields (and are [`REWRITE_AFTER`] or more), the command that
//! removed the last of them writes the live fields again under a new version and deletes the
//! old version's range: one range delete, which a scan seeks past. A scan then steps over at
//! most one deleted record per live one, and the rewrites cost O(1) writes per delete
//! (amortized): draining a set of 100,000 members by `SPOP` took 17 s without it. Keys past
//! [`REWRITE_UP_TO`] records are left to the spills (one command would hold them all), and
//! so are the records of a sorted set's runs of members removed together (`ZPOPMIN`,
//! `ZREMRANGEBY*`): their index records go by one range delete or lie below the bound pops
//! raise, so index scans do not step over them, and only `ZRANDMEMBER` and `ZSCAN` meet their
//! member records.
//!
//! The length in front keeps one key's range from holding another's (`a` and `ab`). A list's
//! indices start in the middle of the `u64`s, so that it grows either way. Fields and members
//! are kept in the order of their 64-bit hash (xxh3, `hash(x)`, big-endian), as Redis's hash
//! tables keep them in no order of their own: a random 64-bit point then lands on each of them
//! alike (`HRANDFIELD`, `SPOP`: one seek, and what `SPOP` deletes spreads over the range
//! instead of piling up where every seek would step over it), and a `*SCAN` cursor is a hash.
//!
//! **Deletes cost O(1).** Deleting or overwriting a key (`DEL`, `SET` over a hash, a hash's
//! last field removed) deletes its metadata and writes one range delete over its version's
//! fields, whatever their number; spills drop them. A key made again gets a new version
//! (the store's clock in nanoseconds, kept increasing), so fields left by a key that expired —
//! which no range delete covered — are never read as the new key's; they stay on disk until
//! the database is flushed (noted in README).
//!
//! **No merge operands.** Every write command here answers from what it reads (`HSET` how
//! many fields were new, `HINCRBY` the new value, `SADD` how many members were added), and
//! every write rewrites the metadata (its size, or unchanged, so that `WATCH` sees the key
//! written): an operand would save no read.

use std::sync::atomic::Ordering::Relaxed;

use spillway::Expiry;

use super::context::Ctx;
use super::databases::Space;
use super::{wrong_type, CmdResult, Engine};

/// The types kept as metadata and fields (strings are kept as they are: `Space::Strings`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    Hash = 1,
    Set = 2,
    ZSet = 3,
    List = 4,
}

impl Type {
    fn from_byte(b: u8) -> Option<Type> {
        Some(match b {
            1 => Type::Hash,
            2 => Type::Set,
            3 => Type::ZSet,
            4 => Type::List,
            _ => return None,
        })
    }

    /// Redis's name of the type (`TYPE`).
    pub fn name(self) -> &'static str {
        match self {
            Type::Hash => "hash",
            Type::Set => "set",
            Type::ZSet => "zset",
            Type::List => "list",
        }
    }
}

/// The first index of a new list: the middle of the `u64`s.
pub const LIST_START: u64 = 1 << 63;

/// A key's metadata record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    pub ty: Type,
    pub version: u64,
    /// Fields, members or elements.
    pub size: u64,
    /// A list's first index (its elements are at `head..head + size`).
    pub head: u64,
    /// Bounds of a sorted set's scores, as ordered keys (`score::ordered`): at most the
    /// lowest score, at least the highest.
    pub low: u64,
    pub high: u64,
    /// Fields or members deleted one by one from this version (hashes, sets, sorted sets):
    /// their delete records are still in the range, until the key is rewritten.
    pub deleted: u64,
}

/// The fewest deleted fields for which a key is rewritten (see the module's doc).
pub const REWRITE_AFTER: u64 = 64;
/// The most records (live and deleted) a rewrite reads.
pub const REWRITE_UP_TO: u64 = 1 << 20;

impl Meta {
    /// A new, empty key of type `ty`, with a version never given before.
    pub fn new(ty: Type, engine: &Engine) -> Meta {
        Meta {
            ty,
            version: next_version(engine),
            size: 0,
            head: LIST_START,
            low: 0,
            high: u64::MAX,
            deleted: 0,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(25);
        out.push(self.ty as u8);
        out.extend_from_slice(&self.version.to_be_bytes());
        out.extend_from_slice(&self.size.to_be_bytes());
        match self.ty {
            Type::List => out.extend_from_slice(&self.head.to_be_bytes()),
            Type::ZSet => {
                out.extend_from_slice(&self.low.to_be_bytes());
                out.extend_from_slice(&self.high.to_be_bytes());
            }
            Type::Hash | Type::Set => {}
        }
        if self.ty != Type::List {
            out.extend_from_slice(&self.deleted.to_be_bytes());
        }
        out
    }

    /// The metadata in `value`, or `None` if it is not metadata this server wrote.
    pub fn decode(value: &[u8]) -> Option<Meta> {
        let ty = Type::from_byte(*value.first()?)?;
        let word = |i: usize| -> Option<u64> {
            Some(u64::from_be_bytes(
                value.get(1 + 8 * i..9 + 8 * i)?.try_into().ok()?,
            ))
        };
        let (version, size) = (word(0)?, word(1)?);
        let head = match ty {
            Type::List => word(2)?,
            _ => LIST_START,
        };
        let (low, high) = match ty {
            Type::ZSet => (word(2)?, word(3)?),
            _ => (0, u64::MAX),
        };
        // Written by this server before the count was kept: none counted.
        let deleted = match ty {
            Type::Hash | Type::Set => word(2),
            Type::ZSet => word(4),
            Type::List => None,
        };
        Some(Meta {
            ty,
            version,
            size,
            head,
            low,
            high,
            deleted: deleted.unwrap_or(0),
        })
    }

    /// Where `key`'s fields are, at this version.
    pub fn fields(&self, key: &[u8]) -> Fields {
        Fields {
            low: self.low,
            high: self.high,
            ..Fields::new(key, self.version)
        }
    }

    /// A sorted set's bounds widened to take a score of ordered key `at`.
    pub fn widen(&mut self, at: u64) {
        self.low = self.low.min(at);
        self.high = self.high.max(at);
    }
}

/// The range of one key's fields at one version: builds their record keys.
#[derive(Clone, Debug)]
pub struct Fields {
    prefix: Vec<u8>,
    /// A sorted set's score bounds (see [`Meta`]), which its index's scans keep within.
    pub low: u64,
    pub high: u64,
}

impl Fields {
    fn new(key: &[u8], version: u64) -> Fields {
        let mut prefix = Vec::with_capacity(12 + key.len());
        // Keys are at most spillway::MAX_KEY_LEN bytes, far below u32::MAX.
        prefix.extend_from_slice(&(key.len() as u32).to_be_bytes());
        prefix.extend_from_slice(key);
        prefix.extend_from_slice(&version.to_be_bytes());
        Fields {
            prefix,
            low: 0,
            high: u64::MAX,
        }
    }

    /// The record key of sub-key `sub`.
    pub fn key(&self, sub: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.prefix.len() + sub.len());
        k.extend_from_slice(&self.prefix);
        k.extend_from_slice(sub);
        k
    }

    /// The record key of field or member `m` (after `tag`, if any): by its hash, then itself.
    pub fn member(&self, tag: &[u8], m: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.prefix.len() + tag.len() + 8 + m.len());
        k.extend_from_slice(&self.prefix);
        k.extend_from_slice(tag);
        k.extend_from_slice(&member_hash(m).to_be_bytes());
        k.extend_from_slice(m);
        k
    }

    /// The record key of sub-key `tag | sub`.
    pub fn tagged(&self, tag: u8, sub: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.prefix.len() + 1 + sub.len());
        k.extend_from_slice(&self.prefix);
        k.push(tag);
        k.extend_from_slice(sub);
        k
    }

    /// The sub-key of record key `k` (one of this range's).
    pub fn sub<'k>(&self, k: &'k [u8]) -> &'k [u8] {
        &k[self.prefix.len()..]
    }

    /// The first record key of the range.
    pub fn start(&self) -> &[u8] {
        &self.prefix
    }

    /// The first record key past the range: the same key at the next version.
    pub fn end(&self) -> Vec<u8> {
        let mut end = self.prefix.clone();
        let at = end.len() - 8;
        let version = u64::from_be_bytes(end[at..].try_into().expect("8 bytes"));
        // Versions come from the clock: never u64::MAX.
        end[at..].copy_from_slice(&(version + 1).to_be_bytes());
        end
    }
}

/// The hash that orders fields and members (see the module's doc).
pub fn member_hash(m: &[u8]) -> u64 {
    spillway::KeyOrder::Hashed.route(m)
}

/// The field or member in sub-key `sub` (`hash | member`, a tag taken off already).
pub fn member_of(sub: &[u8]) -> &[u8] {
    &sub[8..]
}

/// The range of fields `key`'s metadata `value` owns (`None` if `value` is not metadata).
pub fn fields_of(key: &[u8], value: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let fields = Meta::decode(value)?.fields(key);
    Some((fields.start().to_vec(), fields.end()))
}

/// A version not given before, in this process or (by the clock) an earlier one.
fn next_version(engine: &Engine) -> u64 {
    let now = super::time::millis(engine.now()).max(0) as u64 * 1_000_000;
    let prev = engine
        .versions
        .fetch_update(Relaxed, Relaxed, |v| Some(v.max(now.saturating_sub(1)) + 1))
        .expect("always Some");
    prev.max(now.saturating_sub(1)) + 1
}

impl Ctx<'_> {
    /// `key`'s metadata for a command that only reads, if it holds `ty`; `None` if it is
    /// absent, `WRONGTYPE` if it holds another type.
    pub fn read_meta(&mut self, key: &[u8], ty: Type) -> CmdResult<Option<Meta>> {
        let found = match self.read_in(Space::Meta, key)? {
            Some(value) => Some(checked(&value, ty)),
            None if self.read_in(Space::Strings, key)?.is_some() => Some(Err(wrong_type())),
            None => None,
        };
        self.looked_up(found.is_some());
        found.transpose()
    }

    /// `key`'s metadata and expiry for a command that writes what it reads (as `Ctx::get`),
    /// if it holds `ty`; `None` if it is absent, `WRONGTYPE` if it holds another type.
    pub fn get_meta(&mut self, key: &[u8], ty: Type) -> CmdResult<Option<(Meta, Expiry)>> {
        match self.get_in(Space::Meta, key)? {
            Some((value, expiry)) => Ok(Some((checked(&value, ty)?, expiry))),
            None if self.get_in(Space::Strings, key)?.is_some() => Err(wrong_type()),
            None => Ok(None),
        }
    }

    /// `key`'s metadata for a write, a new key of `ty` if it is absent (its expiry: none).
    pub fn get_or_new_meta(&mut self, key: &[u8], ty: Type) -> CmdResult<(Meta, Expiry)> {
        match self.get_meta(key, ty)? {
            Some(found) => Ok(found),
            None => Ok((Meta::new(ty, self.engine), Expiry::Never)),
        }
    }

    /// Write `key`'s metadata as `meta`, expiring at `expiry`; a key left empty is deleted, as
    /// Redis deletes an empty hash, set, sorted set or list (its fields are gone already). A
    /// key with more deleted fields than live ones is rewritten first (`meta` then holds its
    /// new version).
    pub fn put_meta(&mut self, key: &[u8], meta: &mut Meta, expiry: Expiry) -> CmdResult<()> {
        if meta.size == 0 {
            return Ok(self.delete_in(Space::Meta, key)?);
        }
        if meta.deleted >= meta.size.max(REWRITE_AFTER)
            && meta.size.saturating_add(meta.deleted) <= REWRITE_UP_TO
        {
            self.rewrite_fields(key, meta)?;
        }
        Ok(self.put_in(Space::Meta, key, &meta.encode(), expiry)?)
    }

    /// Write `key`'s live fields again under a new version and delete the old version's range,
    /// with the delete records in it (see the module's doc).
    fn rewrite_fields(&mut self, key: &[u8], meta: &mut Meta) -> CmdResult<()> {
        let old = meta.fields(key);
        let end = old.end();
        let records = self
            .scan_in(Space::Fields, old.start(), std::ops::Bound::Excluded(&end))?
            .collect::<spillway::Result<Vec<_>>>()?;
        debug_assert_eq!(
            records.len() as u64,
            meta.size * if meta.ty == Type::ZSet { 2 } else { 1 },
            "a key's metadata counts its fields"
        );
        meta.version = next_version(self.engine);
        meta.deleted = 0;
        let new = meta.fields(key);
        for (k, v) in records {
            self.put_in(Space::Fields, &new.key(old.sub(&k)), &v, Expiry::Never)?;
        }
        Ok(self.delete_range_in(Space::Fields, old.start(), &end)?)
    }
}

/// The metadata in `value` if it is of type `ty`, else `WRONGTYPE`.
fn checked(value: &[u8], ty: Type) -> CmdResult<Meta> {
    match Meta::decode(value) {
        Some(meta) if meta.ty == ty => Ok(meta),
        _ => Err(wrong_type()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_reads_back_as_written_and_foreign_bytes_are_refused() {
        for ty in [Type::Hash, Type::Set, Type::ZSet, Type::List] {
            let meta = Meta {
                ty,
                version: 0x0102_0304_0506_0708,
                size: 77,
                head: LIST_START - 5,
                low: 3,
                high: 1 << 60,
                deleted: 9,
            };
            let back = Meta::decode(&meta.encode()).unwrap();
            let want_head = if ty == Type::List {
                meta.head
            } else {
                LIST_START
            };
            let (low, high) = match ty {
                Type::ZSet => (meta.low, meta.high),
                _ => (0, u64::MAX),
            };
            let deleted = if ty == Type::List { 0 } else { meta.deleted };
            let want = Meta {
                head: want_head,
                low,
                high,
                deleted,
                ..meta
            };
            assert_eq!(back, want);
            // Metadata written before `deleted` was kept reads as none deleted.
            if ty != Type::List {
                let mut old = meta.encode();
                old.truncate(old.len() - 8);
                let back = Meta::decode(&old).unwrap();
                assert_eq!(back.deleted, 0);
                assert_eq!(back.size, meta.size);
            }
        }
        assert_eq!(Meta::decode(b""), None);
        assert_eq!(Meta::decode(&[9; 17]), None);
        assert_eq!(Meta::decode(&[1; 16]), None, "too short");
        assert_eq!(Meta::decode(&[4; 17]), None, "a list without its head");
    }

    #[test]
    fn one_keys_fields_never_hold_anothers() {
        let a = Fields::new(b"a", 5);
        let ab = Fields::new(b"ab", 5);
        let a6 = Fields::new(b"a", 6);
        let inside = |f: &Fields, k: &[u8]| f.start() <= k && k < f.end().as_slice();
        for k in [ab.key(b""), ab.key(b"zzz"), a6.key(b""), a6.key(b"\xff")] {
            assert!(!inside(&a, &k), "{k:?}");
        }
        for sub in [&b""[..], b"x", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff"] {
            assert!(inside(&a, &a.key(sub)));
            assert_eq!(a.sub(&a.key(sub)), sub);
        }
        assert_eq!(a.end(), a6.start());
    }

    /// `key`'s metadata as stored, read as a command would.
    fn meta_of(e: &Engine, key: &str, ty: Type) -> Option<Meta> {
        let mut s = super::super::Session::new(1);
        let mut replies = Vec::new();
        let mut ctx = Ctx::new(e, &mut s, &mut replies);
        let meta = ctx.read_meta(key.as_bytes(), ty).unwrap();
        ctx.finish();
        meta
    }

    /// Fields removed one command at a time, from a hash, a set and a sorted set (by each
    /// command that removes or rescores one): each key is rewritten under a new version once
    /// its deleted fields outnumber its live ones, never holds more than that, and reads as a
    /// model of it throughout.
    #[test]
    fn a_key_with_more_deleted_fields_than_live_ones_is_rewritten() {
        use super::super::tests::{engine, run};
        use crate::resp::Reply;
        let (_d, e) = engine();
        let mut s = super::super::Session::new(1);
        let n = 300;
        let names: Vec<String> = (0..n).map(|i| format!("f{i:03}")).collect();
        let cases: [(&str, Type, &str, &str); 5] = [
            ("h", Type::Hash, "HSET", "HDEL"),
            ("s", Type::Set, "SADD", "SREM"),
            ("p", Type::Set, "SADD", "SPOP"),
            ("z", Type::ZSet, "ZADD", "ZREM"),
            ("i", Type::ZSet, "ZADD", "ZINCRBY"),
        ];
        for (key, ty, add, remove) in cases {
            let mut args = vec![add.to_string(), key.to_string()];
            for (i, f) in names.iter().enumerate() {
                match ty {
                    Type::Hash => args.extend([f.clone(), i.to_string()]),
                    Type::ZSet => args.extend([i.to_string(), f.clone()]),
                    _ => args.push(f.clone()),
                }
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run(&e, &mut s, &[&args]);
            let first = meta_of(&e, key, ty).unwrap().version;
            let mut versions = std::collections::BTreeSet::from([first]);
            let mut live: std::collections::BTreeSet<String> = names.iter().cloned().collect();
            // Every field but one removed; or every field's score changed twice.
            let steps: Vec<&String> = match remove {
                "ZINCRBY" => names.iter().chain(&names).collect(),
                _ => names.iter().take(n - 1).collect(),
            };
            for (step, f) in steps.into_iter().enumerate() {
                let out = match remove {
                    "SPOP" => run(&e, &mut s, &[&["SPOP", key]]),
                    "ZINCRBY" => run(&e, &mut s, &[&["ZINCRBY", key, "1000", f]]),
                    _ => run(&e, &mut s, &[&[remove, key, f]]),
                };
                match (remove, &out[0]) {
                    ("SPOP", Reply::Bulk(m)) => {
                        assert!(live.remove(std::str::from_utf8(m).unwrap()), "{m:?}");
                    }
                    ("ZINCRBY", Reply::Double(_)) => {}
                    (_, Reply::Integer(1)) => assert!(live.remove(f)),
                    (_, other) => panic!("{remove} answered {other:?}"),
                }
                let meta = meta_of(&e, key, ty).unwrap();
                assert_eq!(
                    meta.size as usize,
                    if remove == "ZINCRBY" { n } else { live.len() }
                );
                assert!(
                    meta.deleted <= meta.size.max(REWRITE_AFTER),
                    "{key} after {step}: {meta:?}"
                );
                versions.insert(meta.version);
            }
            assert!(versions.len() > 1, "{key} was never rewritten");
            // What is left reads as the model: every field at its newest value.
            let read = match ty {
                Type::Hash => run(&e, &mut s, &[&["HKEYS", key]]),
                Type::Set => run(&e, &mut s, &[&["SMEMBERS", key]]),
                _ => run(&e, &mut s, &[&["ZRANGE", key, "0", "-1"]]),
            };
            let Reply::Array(items) = &read[0] else {
                panic!("{read:?}")
            };
            let mut got: Vec<String> = items
                .iter()
                .map(|r| match r {
                    Reply::Bulk(b) => String::from_utf8(b.clone()).unwrap(),
                    other => panic!("{other:?}"),
                })
                .collect();
            if remove == "ZINCRBY" {
                // Each gained 2000: still in their order.
                assert_eq!(got, names);
                let out = run(&e, &mut s, &[&["ZSCORE", key, &names[7]]]);
                assert_eq!(out[0], Reply::Double(2007.0));
            } else {
                got.sort();
                assert_eq!(got, live.into_iter().collect::<Vec<_>>());
            }
        }
    }
}
