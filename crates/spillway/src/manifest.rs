//! The manifest: the durable description of the tree — every node, its span and lists (file,
//! page range, span) — plus the file-number counter, the oldest log still needed, the log a
//! clean close sealed, the store's key order and its merge operator's name (see [`Meta`]).
//!
//! Each change rewrites the whole snapshot to `MANIFEST.tmp`, fsyncs it and renames it over
//! `MANIFEST` (see [`io::write_atomically`]): a crash leaves the old tree or the new one, never
//! a mix. The snapshot is small (tens of bytes per list), so rewriting it per spill costs far
//! less than the spill itself; an edit log would pay off only for trees of many thousands of
//! lists.
//!
//! ```text
//! magic "SPWYMANI" | version u32 | crc32c(payload) u32 | payload_len u64 | payload
//! payload = next_file u64 | log_number u64 | sealed_log u64 | sealed_len u64 | order u8 |
//!           operator_len u16 | operator (its name; none if empty) | node
//! node    = span | fast_splits u32 | list_count u32 | list* | child_count u32 | node*
//! list    = file u64 | start_page u32 | end_page u32 | span
//! span    = lo pivot | has_hi u8 | hi pivot (if has_hi)
//! pivot   = route u64 | key_len u32 | key
//! ```
//! Version 5 adds the named keyspaces after the default keyspace's tree (`node` above):
//! ```text
//! keyspaces = next_keyspace u32 | count u32 | keyspace*
//! keyspace  = id u32 | name_len u16 | name | order u8 | operator_len u16 | operator | node
//! ```
//! Once a store had a named keyspace, keyspace ids (which log records name) are never reused,
//! so the counter is kept even after every named keyspace is dropped.
//!
//! Version 6 outlines every list file, so that an open reads none of them (see `list::file`),
//! and gives each list its bytes (which the tree needs of every node, and which would
//! otherwise take the file's page index); it always has the keyspaces:
//! ```text
//! payload = next_file u64 | log_number u64 | sealed_log u64 | sealed_len u64 | order u8 |
//!           operator_len u16 | operator | files | node | keyspaces
//! files   = count u32 | (file u64 | version u32 | pages u32 | records u64 | size u64 |
//!           page_bytes u64 | metadata_offset u64 | checksum u32 | memory u64 |
//!           shift u8 (255: no fingerprints) | flags u8)*
//! list    = file u64 | start_page u32 | end_page u32 | bytes u64 | span
//! ```
//! (`flags` bit 0: the file carries range deletes or times, and is read with the open.)
//! Versions 5 and before are read, their list files read with the open.
//! Version 3 had no operator; version 2 had no `order` (every store was hashed) and spans of routes only, `lo u64 |
//! hi u64` inclusive; version 1 had neither `sealed_log` nor `sealed_len`. Both are read.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::io;
use crate::list::{Handles, ListFile, ListRef, Outline};
use crate::options::MAX_OPERATOR_NAME;
use crate::order::{KeyOrder, Pivot, Span};
use crate::stats::Counters;
use crate::tree::{Node, Tree};
use crate::wal;

use crate::files::MANIFEST as FILE_NAME;
const MAGIC: &[u8; 8] = b"SPWYMANI";
const VERSION: u32 = 6;
/// The first version that outlines list files (and always has the keyspaces).
const OUTLINES: u32 = 6;
/// Longer than any keyspace name: guards the decoder against a length gone wrong.
pub const MAX_KEYSPACE_NAME: usize = 255;
/// Longer than any key a store holds: guards the decoder against a length gone wrong.
const MAX_PIVOT_KEY: u32 = crate::options::MAX_KEY_LEN as u32 + 1;
const HEADER_LEN: usize = 24;
/// Deeper than any real tree (fan-out ≥ 2 and 2^64 routes): guards the decoder's recursion.
const MAX_DEPTH: usize = 64;

/// What the manifest records besides the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// The next number to give a log or list file; numbers are never reused.
    pub next_file: u64,
    /// Logs numbered below this hold only data already in the tree. The log of this number
    /// exists: it is created (and its folder entry synced) before a manifest names it.
    pub log_number: u64,
    /// The log a clean close sealed, and the length through which it is whole: damage there
    /// is corruption, never a crash's torn tail. Later opens append after it; a spill, which
    /// moves `log_number` past it, drops it.
    pub sealed: Option<(u64, u64)>,
    /// Whether this manifest promises the above; version 1 made no promise about logs (a new
    /// store's `log_number` named a log that never existed).
    pub logs_promised: bool,
    /// How the store places keys, fixed at its creation.
    pub order: KeyOrder,
    /// The name of the merge operator the store was opened with, once it was: from then on it
    /// may hold operands only that operator folds.
    pub operator: Option<String>,
    /// The named keyspaces, by id (the default keyspace, id 0, is described by the fields
    /// above).
    pub keyspaces: Vec<KeyspaceMeta>,
    /// The id the next keyspace created gets; ids are never reused (log records name them).
    pub next_keyspace: u32,
}

/// A named keyspace as the manifest records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyspaceMeta {
    pub id: u32,
    pub name: String,
    pub order: KeyOrder,
    pub operator: Option<String>,
}

impl Meta {
    /// The manifest of a new store of key order `order` and merge operator `operator`, whose
    /// first log is `log`.
    pub fn new(log: u64, order: KeyOrder, operator: Option<String>) -> Meta {
        Meta {
            next_file: log + 1,
            log_number: log,
            sealed: None,
            logs_promised: true,
            order,
            operator,
            keyspaces: Vec::new(),
            next_keyspace: 1,
        }
    }

    /// This manifest with `log` as the log recovery starts in, and `next_file` as the file
    /// counter: what a spill records (no clean close seals that log).
    pub fn after_spill(&self, log: u64, next_file: u64) -> Meta {
        Meta {
            next_file,
            log_number: log,
            sealed: None,
            logs_promised: true,
            ..self.clone()
        }
    }

    /// What recovery may take for granted about the logs.
    pub fn expect(&self) -> wal::Expect {
        if !self.logs_promised {
            return wal::Expect::default();
        }
        wal::Expect {
            first: Some(self.log_number),
            sealed: self.sealed,
        }
    }
}

/// Write the manifest: `meta`, and the trees of its keyspaces — `trees[0]` the default
/// keyspace's, then one per `meta.keyspaces`, in that order.
pub fn write(dir: &Path, meta: &Meta, trees: &[&Tree], counters: &Arc<Counters>) -> Result<()> {
    assert_eq!(trees.len(), meta.keyspaces.len() + 1, "a tree per keyspace");
    let mut payload = Vec::new();
    payload.extend_from_slice(&meta.next_file.to_le_bytes());
    payload.extend_from_slice(&meta.log_number.to_le_bytes());
    let (sealed_log, sealed_len) = meta.sealed.unwrap_or((0, 0));
    payload.extend_from_slice(&sealed_log.to_le_bytes());
    payload.extend_from_slice(&sealed_len.to_le_bytes());
    payload.push(meta.order.code());
    let name = meta.operator.as_deref().unwrap_or_default().as_bytes();
    assert!(
        name.len() <= MAX_OPERATOR_NAME,
        "Options::validate bounds names"
    );
    payload.extend_from_slice(&(name.len() as u16).to_le_bytes());
    payload.extend_from_slice(name);
    encode_outlines(&mut payload, trees);
    encode_node(&mut payload, &trees[0].root);
    payload.extend_from_slice(&meta.next_keyspace.to_le_bytes());
    payload.extend_from_slice(&(meta.keyspaces.len() as u32).to_le_bytes());
    for (ks, tree) in meta.keyspaces.iter().zip(&trees[1..]) {
        payload.extend_from_slice(&ks.id.to_le_bytes());
        encode_name(&mut payload, Some(&ks.name));
        payload.push(ks.order.code());
        encode_name(&mut payload, ks.operator.as_deref());
        encode_node(&mut payload, &tree.root);
    }
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&crc_fast::crc32_iscsi(&payload).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&payload);
    io::write_atomically(dir, FILE_NAME, &out, counters)
}

/// A name of at most [`MAX_KEYSPACE_NAME`] or [`MAX_OPERATOR_NAME`] bytes (none: empty).
fn encode_name(out: &mut Vec<u8>, name: Option<&str>) {
    let name = name.unwrap_or_default().as_bytes();
    assert!(name.len() <= MAX_OPERATOR_NAME.max(MAX_KEYSPACE_NAME));
    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
    out.extend_from_slice(name);
}

fn encode_pivot(out: &mut Vec<u8>, p: &Pivot) {
    out.extend_from_slice(&p.route.to_le_bytes());
    out.extend_from_slice(&(p.key.len() as u32).to_le_bytes());
    out.extend_from_slice(&p.key);
}

fn encode_span(out: &mut Vec<u8>, span: &Span) {
    encode_pivot(out, &span.lo);
    match &span.hi {
        Some(hi) => {
            out.push(1);
            encode_pivot(out, hi);
        }
        None => out.push(0),
    }
}

/// The outline of every list file of `trees`, in file order.
fn encode_outlines(out: &mut Vec<u8>, trees: &[&Tree]) {
    let files: std::collections::BTreeMap<u64, Outline> = trees
        .iter()
        .flat_map(|t| t.files().into_iter().map(|(id, f)| (id, f.outline())))
        .collect();
    out.extend_from_slice(&(files.len() as u32).to_le_bytes());
    for (id, o) in files {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&o.version.to_le_bytes());
        out.extend_from_slice(&o.pages.to_le_bytes());
        out.extend_from_slice(&o.records.to_le_bytes());
        out.extend_from_slice(&o.size.to_le_bytes());
        out.extend_from_slice(&o.page_bytes.to_le_bytes());
        out.extend_from_slice(&o.metadata_offset.to_le_bytes());
        out.extend_from_slice(&o.checksum.to_le_bytes());
        out.extend_from_slice(&o.memory.to_le_bytes());
        let shift = o.fingerprint_shift.map_or(NO_SHIFT, |s| {
            u8::try_from(s)
                .ok()
                .filter(|&s| s != NO_SHIFT)
                .expect("a shift below 64")
        });
        out.push(shift);
        out.push(u8::from(o.eager));
    }
}

/// An outline's `shift` byte for a list without fingerprints.
const NO_SHIFT: u8 = u8::MAX;

fn encode_node(out: &mut Vec<u8>, node: &Node) {
    encode_span(out, &node.span);
    out.extend_from_slice(&node.fast_splits.to_le_bytes());
    out.extend_from_slice(&(node.lists.len() as u32).to_le_bytes());
    for l in &node.lists {
        out.extend_from_slice(&l.file.id().to_le_bytes());
        out.extend_from_slice(&l.start.to_le_bytes());
        out.extend_from_slice(&l.end.to_le_bytes());
        out.extend_from_slice(&l.bytes().to_le_bytes());
        encode_span(out, &l.span);
    }
    out.extend_from_slice(&(node.children.len() as u32).to_le_bytes());
    for c in &node.children {
        encode_node(out, c);
    }
}

/// Read the manifest in `dir`: the trees come as [`write`] takes them, the default keyspace's
/// first. Their list files are read at their first use (see `list::file`), their descriptors
/// going to `handles` — but for a manifest of version 5 or before, which does not outline
/// them: those are read now.
pub fn read(dir: &Path, handles: &Arc<Handles>) -> Result<(Meta, Vec<Tree>)> {
    let path = dir.join(FILE_NAME);
    let data = io::read_file(&path)?;
    let corrupt = |reason: &str| Error::corruption(&path, reason);
    if data.len() < HEADER_LEN || &data[..8] != MAGIC {
        return Err(Error::NotAStore {
            path: path.clone(),
            reason: "MANIFEST does not start with the Spillway manifest header".into(),
        });
    }
    let version = u32::from_le_bytes(data[8..12].try_into().unwrap());
    if version == 0 || version > VERSION {
        return Err(Error::UnsupportedVersion {
            path,
            found: version,
            supported: VERSION,
        });
    }
    let crc = u32::from_le_bytes(data[12..16].try_into().unwrap());
    let len = u64::from_le_bytes(data[16..24].try_into().unwrap());
    let payload = &data[HEADER_LEN..];
    if payload.len() as u64 != len {
        return Err(corrupt("length does not match the file (truncated?)"));
    }
    if crc_fast::crc32_iscsi(payload) != crc {
        return Err(corrupt("checksum mismatch"));
    }
    let mut d = Decoder {
        data: payload,
        pos: 0,
        version,
        dir,
        handles,
        files: HashMap::new(),
        outlines: HashMap::new(),
    };
    let mut u64_field = || d.u64().ok_or_else(|| corrupt("truncated payload"));
    let (next_file, log_number) = (u64_field()?, u64_field()?);
    let sealed = match version {
        1 => None,
        _ => match (u64_field()?, u64_field()?) {
            (0, 0) => None,
            (log, len) if log >= log_number && log < next_file && len > 0 => Some((log, len)),
            _ => return Err(corrupt("the sealed log is out of range")),
        },
    };
    let order = match version {
        1 | 2 => KeyOrder::Hashed,
        _ => d
            .bytes::<1>()
            .and_then(|[code]| KeyOrder::from_code(code))
            .ok_or_else(|| corrupt("unknown key order"))?,
    };
    let operator = match version {
        1..=3 => None,
        _ => d
            .name(MAX_OPERATOR_NAME)
            .ok_or_else(|| corrupt("malformed merge operator name"))?,
    };
    let mut meta = Meta {
        next_file,
        log_number,
        sealed,
        logs_promised: version >= 2,
        order,
        operator,
        keyspaces: Vec::new(),
        next_keyspace: 1,
    };
    if version >= OUTLINES {
        d.outlines()
            .ok_or_else(|| corrupt("malformed list file outlines"))?;
    }
    let mut trees = vec![d.tree(meta.order).map_err(|e| e.into_error(&corrupt))?];
    if version >= 5 {
        let next = d.u32().ok_or_else(|| corrupt("truncated payload"))?;
        let count = d.u32().ok_or_else(|| corrupt("truncated payload"))?;
        meta.next_keyspace = next;
        for _ in 0..count {
            let id = d.u32().ok_or_else(|| corrupt("truncated payload"))?;
            let name = d
                .name(MAX_KEYSPACE_NAME)
                .ok_or_else(|| corrupt("malformed keyspace name"))?
                .ok_or_else(|| corrupt("a named keyspace without a name"))?;
            let order = d
                .bytes::<1>()
                .and_then(|[code]| KeyOrder::from_code(code))
                .ok_or_else(|| corrupt("unknown key order"))?;
            let operator = d
                .name(MAX_OPERATOR_NAME)
                .ok_or_else(|| corrupt("malformed merge operator name"))?;
            let last = meta.keyspaces.last().map_or(0, |k: &KeyspaceMeta| k.id);
            if id <= last || id >= next || meta.keyspaces.iter().any(|k| k.name == name) {
                return Err(corrupt(
                    "keyspaces out of order, repeated or past the counter",
                ));
            }
            trees.push(d.tree(order).map_err(|e| e.into_error(&corrupt))?);
            meta.keyspaces.push(KeyspaceMeta {
                id,
                name,
                order,
                operator,
            });
        }
    }
    if d.pos != payload.len() {
        return Err(corrupt("trailing bytes after the tree"));
    }
    if d.outlines.keys().any(|id| !d.files.contains_key(id)) {
        return Err(corrupt("it outlines a list file no tree names"));
    }
    let newest = d.files.keys().copied().max().unwrap_or(0);
    if meta.next_file <= newest.max(meta.log_number.saturating_sub(1)) {
        return Err(corrupt("file counter is behind the files it names"));
    }
    Ok((meta, trees))
}

enum DecodeError {
    Malformed(&'static str),
    File(Error),
}

impl DecodeError {
    fn into_error(self, corrupt: &impl Fn(&str) -> Error) -> Error {
        match self {
            DecodeError::Malformed(why) => corrupt(why),
            DecodeError::File(e) => e,
        }
    }
}

struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
    version: u32,
    dir: &'a Path,
    handles: &'a Arc<Handles>,
    files: HashMap<u64, Arc<ListFile>>,
    /// The list files outlined (version 6 on).
    outlines: HashMap<u64, Outline>,
}

impl Decoder<'_> {
    fn bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        let b = self.data.get(self.pos..self.pos + N)?.try_into().ok()?;
        self.pos += N;
        Some(b)
    }
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let b = self.data.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(b)
    }
    fn u64(&mut self) -> Option<u64> {
        self.bytes().map(u64::from_le_bytes)
    }
    fn u32(&mut self) -> Option<u32> {
        self.bytes().map(u32::from_le_bytes)
    }

    /// The outlines of the list files (version 6 on), into `outlines`.
    fn outlines(&mut self) -> Option<()> {
        let count = self.u32()?;
        let mut last = None;
        for _ in 0..count {
            let id = self.u64()?;
            let outline = Outline {
                version: self.u32()?,
                pages: self.u32()?,
                records: self.u64()?,
                size: self.u64()?,
                page_bytes: self.u64()?,
                metadata_offset: self.u64()?,
                checksum: self.u32()?,
                memory: self.u64()?,
                fingerprint_shift: match self.bytes::<1>()? {
                    [NO_SHIFT] => None,
                    [s] if s < 64 => Some(u32::from(s)),
                    _ => return None,
                },
                eager: match self.bytes::<1>()? {
                    [0] => false,
                    [1] => true,
                    _ => return None,
                },
            };
            // In file order, each once; pages within the file.
            let fits = outline.page_bytes < outline.metadata_offset
                && outline.metadata_offset < outline.size
                && outline.version > 0;
            if last.is_some_and(|l| l >= id) || !fits {
                return None;
            }
            last = Some(id);
            self.outlines.insert(id, outline);
        }
        Some(())
    }

    /// List file `id` of a tree sorted in `order`: outlined, or read now (before version 6).
    fn file(&mut self, id: u64, order: KeyOrder) -> Result<Arc<ListFile>, DecodeError> {
        if let Some(f) = self.files.get(&id) {
            return Ok(f.clone());
        }
        let f = match self.version {
            v if v >= OUTLINES => {
                let outline = self.outlines.get(&id).ok_or(DecodeError::Malformed(
                    "a list of a file it does not outline",
                ))?;
                ListFile::outlined(self.dir, id, self.handles, order, *outline)
            }
            _ => ListFile::open(self.dir, id, self.handles),
        };
        let f = Arc::new(f.map_err(DecodeError::File)?);
        self.files.insert(id, f.clone());
        Ok(f)
    }

    /// A name of at most `max` bytes, UTF-8; `Some(None)` if empty.
    fn name(&mut self, max: usize) -> Option<Option<String>> {
        let len = self.bytes::<2>().map(u16::from_le_bytes)? as usize;
        if len > max {
            return None;
        }
        let name = std::str::from_utf8(self.take(len)?).ok()?;
        Some((!name.is_empty()).then(|| name.to_owned()))
    }

    /// A keyspace's tree, whose lists must all be sorted in `order`.
    fn tree(&mut self, order: KeyOrder) -> Result<Tree, DecodeError> {
        let before: std::collections::HashSet<u64> = self.files.keys().copied().collect();
        let tree = Tree {
            root: self.node(0, order)?,
        };
        tree.check(usize::MAX).map_err(|why| {
            // `check` explains itself in a String; the decoder's reasons are static.
            DecodeError::File(Error::corruption(self.dir.join(FILE_NAME), why))
        })?;
        let mismatched = self
            .files
            .iter()
            .filter(|(id, _)| !before.contains(id))
            .any(|(_, f)| f.order() != order);
        if mismatched {
            return Err(DecodeError::Malformed(
                "a list is sorted in the other key order than the store's",
            ));
        }
        Ok(tree)
    }

    fn pivot(&mut self) -> Option<Pivot> {
        let route = self.u64()?;
        let len = self.u32().filter(|&l| l <= MAX_PIVOT_KEY)? as usize;
        let key = self.data.get(self.pos..self.pos + len)?;
        self.pos += len;
        Some(Pivot::new(route, key))
    }

    /// A span; version 2 wrote routes `lo..=hi`.
    fn span(&mut self) -> Option<Span> {
        if self.version <= 2 {
            let (lo, hi) = (self.u64()?, self.u64()?);
            let hi = hi.checked_add(1).map(|h| Pivot::new(h, &[]));
            return Some(Span::new(Pivot::new(lo, &[]), hi));
        }
        let lo = self.pivot()?;
        let hi = match self.bytes::<1>()? {
            [0] => None,
            [1] => Some(self.pivot()?),
            _ => return None,
        };
        Some(Span::new(lo, hi))
    }

    fn node(&mut self, depth: usize, order: KeyOrder) -> Result<Node, DecodeError> {
        use DecodeError::Malformed;
        let short = || Malformed("truncated payload");
        if depth > MAX_DEPTH {
            return Err(Malformed("tree deeper than any Spillway writes"));
        }
        let span = self.span().ok_or_else(short)?;
        let fast_splits = self.u32().ok_or_else(short)?;
        let n_lists = self.u32().ok_or_else(short)? as usize;
        let mut lists = Vec::with_capacity(n_lists.min(1024));
        for _ in 0..n_lists {
            let id = self.u64().ok_or_else(short)?;
            let start = self.u32().ok_or_else(short)?;
            let end = self.u32().ok_or_else(short)?;
            let bytes = match self.version {
                v if v >= OUTLINES => Some(self.u64().ok_or_else(short)?),
                _ => None,
            };
            let list_span = self.span().ok_or_else(short)?;
            let file = self.file(id, order)?;
            if start > end || end > file.pages() {
                return Err(Malformed("list page range outside its file"));
            }
            lists.push(match bytes {
                Some(b) if b > file.page_bytes() => {
                    return Err(Malformed("a list of more bytes than its file's pages"))
                }
                Some(b) => ListRef::of_pages(file, start, end, list_span, b),
                None => {
                    ListRef::with_pages(file, start, end, list_span).map_err(DecodeError::File)?
                }
            });
        }
        let n_children = self.u32().ok_or_else(short)? as usize;
        let mut children = Vec::with_capacity(n_children.min(1024));
        for _ in 0..n_children {
            children.push(self.node(depth + 1, order)?);
        }
        Ok(Node {
            span,
            lists,
            fast_splits,
            children,
            selector: None,
        })
    }
}
