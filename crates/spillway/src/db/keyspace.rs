//! Keyspaces: named collections in one store (RocksDB's column families, fjall's keyspaces,
//! LMDB's named databases), and the [`Keyspace`] handle to one.
//!
//! Each keyspace is a tree of its own with its own root buffer, key order and merge operator;
//! all of them share the store's log (a batch across keyspaces is one log record, recovered
//! whole), its manifest, its memory budget and its spill thread, and they freeze and spill
//! together (the log is retired only once everything in it is in a tree). A snapshot is one
//! point in time in every keyspace. Why a tree per keyspace rather than the keyspace as part
//! of the route in one tree: dropping one then releases its files at once, with no tombstone
//! or filter per key, and each keyspace can have its own order and operator. The cost — a
//! few hundred bytes of memory per keyspace, a list file per spill for each keyspace written
//! since the last — is measured in BENCHMARKS.md ("Keyspaces").
//!
//! The default keyspace is the store as it always was: [`Db`]'s own methods read and write
//! it.

use std::sync::Arc;

use super::commit::Waiter;
use super::{estimate_keys, iter, Db, Inner, Iter, Part, ReadPoint, Version};
use crate::compaction_filter::CompactionFilter;
use crate::error::{Error, Result};
use crate::manifest::{self, KeyspaceMeta, MAX_KEYSPACE_NAME};
use crate::options::Options;
use crate::order::{KeyOrder, Span};
use crate::tree::Tree;
use crate::upsert::operator::{MergeOperator, Operator};
use crate::util::sync::{lock, write};

/// How a keyspace is made: fixed when it is created, like the store's own [`Options`](crate::Options)
/// `key_order` and `merge_operator`.
///
/// ```
/// use std::sync::Arc;
/// use spillway::{KeyOrder, KeyspaceOptions};
/// let opts = KeyspaceOptions::default()
///     .key_order(KeyOrder::Ordered)
///     .merge_operator(Arc::new(spillway::operators::U64Add));
/// assert_eq!(opts.key_order, KeyOrder::Ordered);
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct KeyspaceOptions {
    /// How the keyspace places its keys: hashed (the default: point reads and `iter` in hash
    /// order) or ordered (range and prefix scans too).
    pub key_order: KeyOrder,
    /// The operator that folds the keyspace's merge operands (none: merges are refused).
    /// A keyspace that recorded a built-in operator's name (or one of the store's
    /// [`Options::known_operators`](crate::Options::known_operators)) reopens with it.
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    /// The keyspace's compaction filter (none by default; see
    /// [`Options::compaction_filter`](crate::Options::compaction_filter)). Not recorded:
    /// give it whenever the keyspace is opened in a process; a handle opened with none leaves
    /// the filter the keyspace has in this process.
    pub compaction_filter: Option<Arc<dyn CompactionFilter>>,
}

impl KeyspaceOptions {
    /// These options with compaction filter `filter`.
    pub fn compaction_filter(mut self, filter: Arc<dyn CompactionFilter>) -> KeyspaceOptions {
        self.compaction_filter = Some(filter);
        self
    }

    /// These options with `key_order`.
    pub fn key_order(mut self, order: KeyOrder) -> KeyspaceOptions {
        self.key_order = order;
        self
    }

    /// These options with `merge_operator`.
    pub fn merge_operator(mut self, op: Arc<dyn MergeOperator>) -> KeyspaceOptions {
        self.merge_operator = Some(op);
        self
    }
}

/// What a version knows of a keyspace.
pub(crate) struct KsDef {
    pub id: u32,
    /// Empty for the default keyspace.
    pub name: String,
    pub order: KeyOrder,
    pub operator: Option<Operator>,
    /// The operator's name as the manifest records it (which `operator` may not be, yet: a
    /// keyspace whose recorded operator this process does not know folds nothing until a
    /// handle brings it).
    pub operator_name: Option<String>,
    /// The store's options with this keyspace's order and operator: what its tree is built
    /// with.
    pub opts: Options,
}

impl KsDef {
    pub fn new(
        id: u32,
        name: &str,
        store: &Options,
        order: KeyOrder,
        operator: Option<Arc<dyn MergeOperator>>,
        operator_name: Option<String>,
    ) -> KsDef {
        let mut opts = store.clone();
        opts.key_order = Some(order);
        opts.merge_operator = operator.clone();
        if id != 0 {
            // The store's filter is the default keyspace's (see `with_filter`).
            opts.compaction_filter = None;
        }
        KsDef {
            id,
            name: name.to_owned(),
            order,
            operator: operator.map(Operator),
            operator_name,
            opts,
        }
    }

    /// This definition with compaction filter `filter`.
    pub fn with_filter(mut self, filter: Option<Arc<dyn CompactionFilter>>) -> KsDef {
        self.opts.compaction_filter = filter;
        self
    }

    pub fn meta(&self) -> KeyspaceMeta {
        KeyspaceMeta {
            id: self.id,
            name: self.name.clone(),
            order: self.order,
            operator: self.operator_name.clone(),
        }
    }
}

/// A handle to one keyspace of a store: the same key methods as [`Db`]'s, on its keyspace.
/// Cheap to clone, `Send + Sync`, and it keeps the store open. Once its keyspace is dropped,
/// every call returns [`Error::KeyspaceDropped`] (a keyspace created again under the name is
/// another keyspace: open a new handle).
///
/// ```
/// # fn main() -> spillway::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spillway::{Db, KeyOrder, KeyspaceOptions};
/// let db = Db::open(dir.path(), Default::default())?;
/// let users = db.keyspace("users", KeyspaceOptions::default())?;
/// let by_age = db.keyspace("users_by_age", KeyspaceOptions::default().key_order(KeyOrder::Ordered))?;
/// users.put("ada", "36")?;
/// by_age.put("036/ada", "")?;
/// assert_eq!(users.get("ada")?.as_deref(), Some(&b"36"[..]));
/// assert_eq!(db.get("ada")?, None); // the default keyspace is another collection
/// assert_eq!(by_age.prefix("036/")?.count(), 1);
/// assert_eq!(db.keyspaces(), ["users", "users_by_age"]);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Keyspace {
    pub(super) inner: Arc<Inner>,
    id: u32,
    name: Arc<str>,
}

impl Keyspace {
    /// The keyspace's name (empty for the default keyspace).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    pub(crate) fn store_id(&self) -> u64 {
        self.inner.store_id
    }

    /// The keyspace's part of `version` (of its store), or the error for a dropped keyspace.
    pub(super) fn part<'v>(&self, version: &'v Version) -> Result<&'v Part> {
        version.part(self.id).ok_or_else(|| Error::KeyspaceDropped {
            name: self.name.to_string(),
        })
    }

    /// This keyspace, if it is of store `inner` (a snapshot's or a transaction's).
    pub(super) fn of(&self, inner: &Inner) -> Result<&Keyspace> {
        if self.inner.store_id == inner.store_id {
            Ok(self)
        } else {
            Err(of_another_store())
        }
    }

    /// The newest value of `key`, or `None` if it is absent or deleted.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let now = ReadPoint::now(self.inner.version());
        self.inner
            .get_at(&now, self.part(&now.version)?, key.as_ref())
    }

    /// Look up many keys at one point in time (see [`Db::multi_get`]).
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        let at = self.inner.read_point();
        let part = self.part(&at.version)?;
        keys.iter()
            .map(|k| self.inner.get_at(&at, part, k.as_ref()))
            .collect()
    }

    /// Insert or overwrite one key, with [`Options::sync_by_default`](crate::Options::sync_by_default)
    /// durability.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let op = crate::record::Op::Put(value.as_ref());
        self.inner
            .write_one(|b| b.add_in(self.id, key.as_ref(), op))
    }

    /// Delete one key (deleting an absent key is not an error).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let op = crate::record::Op::Delete;
        self.inner
            .write_one(|b| b.add_in(self.id, key.as_ref(), op))
    }

    /// Write a merge operand to `key`, folded by the keyspace's merge operator (see
    /// [`Db::merge`]).
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        let op = crate::record::Op::Merge(operand.as_ref());
        self.inner
            .write_one(|b| b.add_in(self.id, key.as_ref(), op))
    }

    /// Every key and value of the keyspace, as of now (see [`Db::iter`]).
    pub fn iter(&self) -> Result<Iter> {
        self.inner.scan(&self.inner.read_point(), self, Span::all())
    }

    /// The keys in `range` and their values, in key order, as of now (see [`Db::range`]).
    /// [`Error::NotOrdered`] in a hashed keyspace.
    pub fn range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(&self, range: R) -> Result<Iter> {
        let order = self.key_order()?;
        let span = iter::key_span(order, &range)?;
        self.inner.scan(&self.inner.read_point(), self, span)
    }

    /// The keys starting with `prefix`, in key order, as of now (see [`Db::prefix`]).
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Result<Iter> {
        let order = self.key_order()?;
        let span = iter::prefix_span(order, prefix.as_ref())?;
        self.inner.scan(&self.inner.read_point(), self, span)
    }

    /// How the keyspace places its keys.
    pub fn key_order(&self) -> Result<KeyOrder> {
        Ok(self.part(&self.inner.version())?.def.order)
    }

    /// The name of the merge operator the keyspace records (`None`: it has none and refuses
    /// merges).
    pub fn merge_operator_name(&self) -> Result<Option<String>> {
        Ok(self.part(&self.inner.version())?.def.operator_name.clone())
    }

    /// The distinct keys the keyspace holds, estimated (see [`Db::estimate_keys`]).
    pub fn estimate_keys(&self) -> Result<Option<u64>> {
        Ok(estimate_keys(self.part(&self.inner.version())?))
    }
}

/// The error for a keyspace handle used with a store it is not of.
pub(super) fn of_another_store() -> Error {
    Error::InvalidKeyspace {
        name: String::new(),
        reason: "a handle of a keyspace of another open store".into(),
    }
}

/// A number for a store being opened, unique in the process.
pub(super) fn next_store_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl std::fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyspace")
            .field("name", &self.name)
            .finish()
    }
}

impl Db {
    /// Open keyspace `name`, creating it (durably, before this returns) with `opts` if the
    /// store has none of that name. An existing keyspace must have been created with the same
    /// key order ([`Error::KeyOrderMismatch`]) and operator name
    /// ([`Error::MergeOperatorMismatch`]; none given takes the one it records, if this
    /// process knows it). A name is 1 to 255 bytes of UTF-8; the empty name is the default
    /// keyspace's. Creating one waits for a running spill.
    pub fn keyspace(&self, name: &str, opts: KeyspaceOptions) -> Result<Keyspace> {
        if name.is_empty() {
            return Ok(self.default_keyspace());
        }
        if name.len() > MAX_KEYSPACE_NAME {
            return Err(Error::InvalidKeyspace {
                name: name.to_owned(),
                reason: format!("a keyspace name is at most {MAX_KEYSPACE_NAME} bytes"),
            });
        }
        let inner = &self.inner;
        if let Some(ks) = self.open_existing(name, &opts)? {
            return Ok(ks);
        }
        let mut w = inner.writer.lock();
        inner.check_writable(&mut w)?;
        inner.wait_for_spill(&mut w, Waiter::Caller)?;
        if let Some(ks) = self.open_existing(name, &opts)? {
            return Ok(ks); // created meanwhile
        }
        let mut meta = lock(&inner.durable_meta).clone();
        let def = Arc::new(
            KsDef::new(
                meta.next_keyspace,
                name,
                &inner.opts,
                opts.key_order,
                opts.merge_operator.clone(),
                opts.merge_operator.as_ref().map(|o| o.name().to_owned()),
            )
            .with_filter(opts.compaction_filter.clone()),
        );
        meta.next_keyspace += 1;
        meta.keyspaces.push(def.meta());
        let part = inner.empty_part(def.clone());
        let version = inner.version();
        let mut parts = version.parts.clone();
        parts.push(part);
        inner.publish_catalog(meta, parts)?;
        Ok(self.handle(def.id, name))
    }

    /// The handle of keyspace `name` if it exists, checked against `opts`.
    fn open_existing(&self, name: &str, opts: &KeyspaceOptions) -> Result<Option<Keyspace>> {
        let version = self.inner.version();
        let Some(part) = version.parts.iter().find(|p| p.def.name == name) else {
            return Ok(None);
        };
        let def = &part.def;
        if def.order != opts.key_order {
            return Err(Error::KeyOrderMismatch {
                stored: def.order,
                requested: opts.key_order,
            });
        }
        let given = opts.merge_operator.as_ref().map(|o| o.name().to_owned());
        match (&def.operator_name, &given) {
            (stored, given) if stored == given => {
                if def.operator.is_none() && given.is_some() {
                    self.inner
                        .bring_operator(def.id, opts.merge_operator.clone());
                }
            }
            (Some(_), None) => {}
            (stored, given) => {
                return Err(Error::MergeOperatorMismatch {
                    stored: stored.clone(),
                    given: given.clone(),
                })
            }
        }
        if let Some(filter) = &opts.compaction_filter {
            self.inner.bring_filter(def.id, filter.clone());
        }
        Ok(Some(self.handle(def.id, name)))
    }

    fn handle(&self, id: u32, name: &str) -> Keyspace {
        Keyspace {
            inner: self.inner.clone(),
            id,
            name: name.into(),
        }
    }

    /// The handle of keyspace `name` as it was created, whatever its options, or `None` if the
    /// store has none of that name: nothing is created (RocksDB's `cf_handle`). For tools that
    /// open any store (a read-only handle can open every keyspace this way).
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spillway::{KeyOrder, KeyspaceOptions};
    /// let db = spillway::Db::open(dir.path(), Default::default())?;
    /// db.keyspace("idx", KeyspaceOptions::default().key_order(KeyOrder::Ordered))?;
    /// let idx = db.keyspace_handle("idx").expect("it exists");
    /// assert_eq!(idx.key_order()?, KeyOrder::Ordered);
    /// assert!(db.keyspace_handle("other").is_none());
    /// # Ok(()) }
    /// ```
    pub fn keyspace_handle(&self, name: &str) -> Option<Keyspace> {
        let version = self.inner.version();
        let part = version.parts.iter().find(|p| p.def.name == name)?;
        Some(self.handle(part.def.id, name))
    }

    /// The default keyspace: the one [`Db`]'s own key methods read and write.
    pub fn default_keyspace(&self) -> Keyspace {
        self.handle(0, "")
    }

    /// The names of the store's named keyspaces, sorted (the default keyspace is not listed).
    pub fn keyspaces(&self) -> Vec<String> {
        let version = self.inner.version();
        let mut names: Vec<String> = version.parts[1..]
            .iter()
            .map(|p| p.def.name.clone())
            .collect();
        names.sort();
        names
    }

    /// Remove keyspace `name` and everything in it, durably, in O(1): its files are released
    /// (removed once no snapshot or iterator reads them), with no tombstone per key, and
    /// its records still in the log are skipped by recovery. `Ok(false)` if there was none.
    /// Handles of it then return [`Error::KeyspaceDropped`]. The default keyspace cannot be
    /// dropped ([`Error::InvalidKeyspace`]). Waits for a running spill.
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spillway::Db::open(dir.path(), Default::default())?;
    /// let tmp = db.keyspace("tmp", Default::default())?;
    /// tmp.put("k", "v")?;
    /// assert!(db.drop_keyspace("tmp")?);
    /// assert!(matches!(tmp.get("k"), Err(spillway::Error::KeyspaceDropped { .. })));
    /// assert!(db.keyspaces().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn drop_keyspace(&self, name: &str) -> Result<bool> {
        if name.is_empty() {
            return Err(Error::InvalidKeyspace {
                name: String::new(),
                reason: "the default keyspace cannot be dropped".into(),
            });
        }
        let inner = &self.inner;
        let mut w = inner.writer.lock();
        inner.check_writable(&mut w)?;
        inner.wait_for_spill(&mut w, Waiter::Caller)?;
        let version = inner.version();
        let Some(at) = version.parts.iter().position(|p| p.def.name == name) else {
            return Ok(false);
        };
        let mut meta = lock(&inner.durable_meta).clone();
        let id = version.parts[at].def.id;
        meta.keyspaces.retain(|k| k.id != id);
        let mut parts = version.parts.clone();
        let gone = parts.remove(at);
        inner.publish_catalog(meta, parts)?;
        inner.changed_whole(&mut w, &[id]);
        lock(&inner.dropped).insert(id, name.to_owned());
        gone.tree.root.visit(&mut |n| {
            for l in &n.lists {
                l.file.remove_when_unused();
            }
        });
        // Each selector file holds one tree's tiers.
        for file in gone.tree.selector_files().into_values() {
            file.remove_when_unused();
        }
        Ok(true)
    }

    /// Exchange the contents of keyspaces `a` and `b` (either may be `""`, the default
    /// keyspace), durably: Redis's `SWAPDB`. Both must have the same key order and merge
    /// operator ([`Error::InvalidKeyspace`] otherwise, or if one does not exist). What is
    /// only in memory is spilled first (a flush), so this costs what a flush does; handles
    /// keep their names and so see the other contents.
    pub fn swap_keyspaces(&self, a: &str, b: &str) -> Result<()> {
        self.swap_keyspace_pairs(&[(a, b)])
    }

    /// Exchange the contents of each pair of keyspaces in `pairs`, as
    /// [`swap_keyspaces`](Self::swap_keyspaces) does one pair, all at once: a crash leaves
    /// every pair swapped or none (one manifest). A keyspace in two pairs is refused
    /// ([`Error::InvalidKeyspace`]), as are pairs that `swap_keyspaces` refuses; then nothing
    /// is swapped.
    pub fn swap_keyspace_pairs(&self, pairs: &[(&str, &str)]) -> Result<()> {
        let inner = &self.inner;
        let mut w = inner.writer.lock();
        inner.check_writable(&mut w)?;
        inner.wait_for_spill(&mut w, Waiter::Caller)?;
        let invalid = |name: &str, reason: String| Error::InvalidKeyspace {
            name: name.to_owned(),
            reason,
        };
        let find = |version: &Version, name: &str| {
            version
                .parts
                .iter()
                .position(|p| p.def.name == name)
                .ok_or_else(|| invalid(name, "no keyspace of that name".into()))
        };
        let version = inner.version();
        let mut swaps = Vec::with_capacity(pairs.len());
        let mut seen = std::collections::HashSet::new();
        for &(a, b) in pairs {
            let (i, j) = (find(&version, a)?, find(&version, b)?);
            let (da, db) = (&version.parts[i].def, &version.parts[j].def);
            if da.order != db.order || da.operator_name != db.operator_name {
                let reason = format!("its key order or merge operator differs from {a:?}'s");
                return Err(invalid(b, reason));
            }
            if i == j {
                continue;
            }
            if !seen.insert(i) || !seen.insert(j) {
                return Err(invalid(a, "in two of the pairs to swap".into()));
            }
            swaps.push((i, j));
        }
        if swaps.is_empty() {
            return Ok(());
        }
        // Records in the log name keyspaces by id: once every one is in a tree, trees can
        // change keyspaces without the log's records following them.
        if version.buffers().any(|b| !super::read(b).is_empty()) {
            inner.freeze(&mut w, inner.spill_now(), Waiter::Caller)?;
        }
        let version = inner.version();
        let mut parts = version.parts.clone();
        let mut ids = Vec::with_capacity(2 * swaps.len());
        for &(i, j) in &swaps {
            let (ta, tb) = (parts[i].tree.clone(), parts[j].tree.clone());
            parts[i].tree = tb;
            parts[j].tree = ta;
            ids.extend([parts[i].def.id, parts[j].def.id]);
        }
        let meta = lock(&inner.durable_meta).clone();
        inner.publish_catalog(meta, parts)?;
        inner.changed_whole(&mut w, &ids);
        Ok(())
    }
}

impl Inner {
    /// A new keyspace's part: an empty buffer above an empty tree.
    pub(super) fn empty_part(&self, def: Arc<KsDef>) -> Part {
        let buffer = crate::buffer::Buffer::with_capacity(def.order, def.operator.clone(), 0, 0);
        Part {
            def,
            mem: Arc::new(buffer.into()),
            frozen: None,
            tree: Arc::new(Tree::new()),
        }
    }

    /// Write a manifest of `meta` and the trees of `parts`, then publish `parts` as the
    /// current version. The caller holds the writer and no spill runs, so nothing else
    /// changes the manifest or the version meanwhile, and no write is half-applied.
    fn publish_catalog(&self, meta: manifest::Meta, parts: Vec<Part>) -> Result<()> {
        debug_assert!(parts.windows(2).all(|w| w[0].def.id < w[1].def.id));
        debug_assert_eq!(parts.len(), meta.keyspaces.len() + 1);
        let trees: Vec<&Tree> = parts.iter().map(|p| &*p.tree).collect();
        self.write_selector_index(&parts, &trees)?;
        manifest::write(&self.dir, &meta, &trees, &self.counters)?;
        *lock(&self.durable_meta) = meta;
        *write(&self.current) = Arc::new(Version { parts });
        Ok(())
    }

    /// Count a change of keyspaces `ids` as a whole (a drop, a swap) as a commit that wrote
    /// every key of them: a transaction that read them before fails its check.
    fn changed_whole(&self, w: &mut super::writer::WriterState, ids: &[u32]) {
        if w.conflicts.is_enabled() {
            w.seq += 1;
            for &id in ids {
                w.conflicts.reset(w.seq, id);
            }
            // Nothing is in flight under the writer: every commit up to this one is visible.
            self.visible
                .store(w.seq, std::sync::atomic::Ordering::Release);
        }
    }

    /// Give keyspace `id`, which records an operator this process did not know, the one a
    /// handle brought (same name): reads fold its operands from now on.
    fn bring_operator(&self, id: u32, op: Option<Arc<dyn MergeOperator>>) {
        self.redefine(id, |def| {
            KsDef::new(
                def.id,
                &def.name,
                &self.opts,
                def.order,
                op,
                def.operator_name.clone(),
            )
            .with_filter(def.opts.compaction_filter.clone())
        });
    }

    /// Give keyspace `id` compaction filter `filter` from now on (the next rewrite uses it).
    fn bring_filter(&self, id: u32, filter: Arc<dyn CompactionFilter>) {
        self.redefine(id, |def| {
            let operator = def.opts.merge_operator.clone();
            let name = def.operator_name.clone();
            KsDef::new(def.id, &def.name, &self.opts, def.order, operator, name)
                .with_filter(Some(filter))
        });
    }

    /// Replace keyspace `id`'s definition in the current version with `f` of it.
    fn redefine(&self, id: u32, f: impl FnOnce(&KsDef) -> KsDef) {
        let mut current = write(&self.current);
        let mut parts = current.parts.clone();
        let Some(part) = parts.iter_mut().find(|p| p.def.id == id) else {
            return;
        };
        part.def = Arc::new(f(&part.def));
        *current = Arc::new(Version { parts });
    }

    /// An iterator over `span` of keyspace `ks` at `at`.
    pub(super) fn scan(&self, at: &ReadPoint, ks: &Keyspace, span: Span) -> Result<Iter> {
        let part = ks.part(&at.version)?;
        Ok(Iter::new(at.clone(), part.clone(), &self.counters, span))
    }
}
