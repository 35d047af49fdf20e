//! What a list file keeps in memory once read — its page index, filter, sketch, expiry summary
//! and range deletes ([`Metadata`]) — and how it is read from the end of the file (see
//! `format`): whole, checking header and trailer, or in one read where the manifest's
//! [`Outline`] of the file says the metadata starts (see `file`).

use std::path::Path;

use super::expiry::ExpirySummary;
use super::filter::Filter;
use super::fingerprints::{self, Fingerprints};
use super::format::{self, BadHeader, Trailer, HEADER_LEN, TRAILER_LEN};
use super::index::PageIndex;
use super::page::Layout;
use super::ranges::RangeSet;
use super::sketch::Sketch;
use crate::error::{Error, IoContext, Result};
use crate::io;
use crate::order::KeyOrder;

/// What a store's manifest keeps of a list file, so that an open need not read it: all the
/// tree needs of a file it does not read, and what the file must show when it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outline {
    /// The list format's version (see `format`).
    pub version: u32,
    pub pages: u32,
    pub records: u64,
    /// Bytes of the file, and of its pages (the file less its header, metadata and trailer).
    pub size: u64,
    pub page_bytes: u64,
    /// Where the metadata a read of the file needs starts: its filter, or past its
    /// fingerprints (which only selector builds read) — so that one read takes it all.
    pub metadata_offset: u64,
    /// The checksum of its metadata (its trailer's): tells it from another file of the same
    /// shape (a list of the same name in another copy of the store).
    pub checksum: u32,
    /// Memory its metadata takes once read: what a memory budget counts for it meanwhile
    /// (not checked: another build's structures may take more or less).
    pub memory: u64,
    /// How finely its fingerprints cut routes, if it has fingerprints (see `fingerprints`).
    pub fingerprint_shift: Option<u32>,
    /// Whether it carries range deletes or times (see the module's doc): such a file is read
    /// with the open.
    pub eager: bool,
}

/// What a list file holds in memory once read.
pub struct Metadata {
    /// Where each page is and where it starts (the paper's first-hash index).
    pub index: PageIndex,
    pub filter: Option<Filter>,
    /// Where the list's fingerprints are on disk (hashed lists of format 6 on, in place of
    /// the filter): read only to build node selectors.
    pub fingerprints: Option<FingerprintSection>,
    /// The list's K-minimum-values sample (format 5 on).
    pub sketch: Option<Sketch>,
    /// When its values expire (see `expiry`; empty before format 8).
    pub expiry: ExpirySummary,
    /// Its range deletes (see `ranges`; none before format 8).
    pub ranges: RangeSet,
}

impl Metadata {
    pub fn memory(&self) -> usize {
        self.filter.as_ref().map_or(0, Filter::memory)
            + self.index.memory()
            + self.sketch.as_ref().map_or(0, Sketch::memory)
            + self.expiry.memory()
            + self.ranges.memory()
    }

    /// Whether reads and spills consult it for keys it may not hold (see `Outline::eager`).
    pub fn eager(&self) -> bool {
        self.expiry != ExpirySummary::none() || !self.ranges.is_empty()
    }
}

/// Where a list's fingerprints are, and how fine (see `fingerprints`).
#[derive(Clone, Copy, Debug)]
pub struct FingerprintSection {
    pub offset: u64,
    pub len: usize,
    pub shift: u32,
}

/// Read the metadata of the list file `file` (at `path`) whole: its sorting, outline and
/// metadata, verifying header, trailer, filter and index (four reads at most).
pub fn read(file: &std::fs::File, path: &Path) -> Result<(KeyOrder, Outline, Metadata)> {
    let size = file
        .metadata()
        .context(|| format!("reading size of {}", path.display()))?
        .len();
    let bad = |reason: String| Error::corruption(path, reason);
    if size < HEADER_LEN + TRAILER_LEN {
        return Err(bad(format!("{size} bytes is too short for a list file")));
    }
    let header = io::read_at(file, path, 0, HEADER_LEN as usize)?;
    // Inside a store's folder a file named as a list is one: a bad header is damage.
    let version = match format::read_header(&header) {
        Ok(v) => v,
        Err(BadHeader::Damaged) => {
            return Err(bad(
                "the list's header is damaged (its magic number, version or checksum)".into(),
            ))
        }
        Err(BadHeader::Newer(found)) => {
            return Err(Error::UnsupportedVersion {
                path: path.to_owned(),
                found,
                supported: format::VERSION,
            })
        }
    };
    let t = io::read_at(file, path, size - TRAILER_LEN, TRAILER_LEN as usize)?;
    let t = Trailer::decode(&t).map_err(bad)?;
    // Format 3 indexes have separators, of a length only the index itself tells.
    let index_len = t.page_count.checked_mul(16);
    let least = index_len
        .and_then(|i| i.checked_add(t.filter_offset))
        .and_then(|e| e.checked_add(t.filter_len))
        .and_then(|e| e.checked_add(TRAILER_LEN));
    let fits = match least {
        Some(least) if version >= 3 => least < size,
        Some(least) => least == size,
        None => false,
    };
    if !fits || t.filter_offset < HEADER_LEN || t.page_count > u64::from(u32::MAX) {
        return Err(bad("trailer does not match the file size".into()));
    }
    let meta_len = (size - TRAILER_LEN - t.filter_offset) as usize;
    // From format 9 a hashed list's fingerprints are outside the metadata checksum (they
    // have their own): only their first bytes are read here.
    let peek = (t.filter_len as usize).min(fingerprints::PEEK_LEN);
    let head = match version >= 9 && peek > 0 {
        true => io::read_at(file, path, t.filter_offset, peek)?,
        false => Vec::new(),
    };
    let (filter, meta) = if head.first() == Some(&fingerprints::TAG) {
        let shift =
            Fingerprints::peek_shift(&head).ok_or_else(|| bad("malformed fingerprints".into()))?;
        let at = t.filter_offset + t.filter_len;
        let meta = io::read_at(file, path, at, meta_len - t.filter_len as usize)?;
        (Filtered::Fingerprints(shift), meta)
    } else {
        let meta = io::read_at(file, path, t.filter_offset, meta_len)?;
        (Filtered::InMetadata, meta)
    };
    let (order, metadata) = parse(path, version, &t, filter, &meta)?;
    let outline = outline_of(version, &t, size, &metadata);
    Ok((order, outline, metadata))
}

/// Read the metadata of the list file `file` (at `path`) that `outline` describes, in one
/// read: the end of the file from where its checksummed metadata starts (past the
/// fingerprints, which only selector builds read), trailer included. The header is not read:
/// the trailer's checksum and counts must be the outline's, which tells the file apart from
/// any other (and `check` reads the header).
pub fn read_outlined(
    file: &std::fs::File,
    path: &Path,
    outline: &Outline,
) -> Result<(KeyOrder, Outline, Metadata)> {
    let bad = |reason: String| Error::corruption(path, reason);
    let at = outline.metadata_offset;
    let len = outline
        .size
        .checked_sub(at)
        .filter(|&l| l >= TRAILER_LEN)
        .ok_or_else(|| bad("its outline places the metadata past the file's end".into()))?;
    let tail = io::read_at(file, path, at, len as usize).map_err(|e| match e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::UnexpectedEof => {
            bad(format!(
                "the file is shorter than the {} bytes of its outline",
                outline.size
            ))
        }
        e => e,
    })?;
    let (meta, t) = tail.split_at(tail.len() - TRAILER_LEN as usize);
    let t = Trailer::decode(t).map_err(bad)?;
    let filter = if at == t.filter_offset {
        Filtered::InMetadata
    } else if t.filter_offset.checked_add(t.filter_len) == Some(at) {
        // Left out of the checksum from format 9: the outline's shift stands for the peek a
        // whole read makes, and reads of the fingerprints check theirs against it.
        let shift = outline.fingerprint_shift.ok_or_else(|| {
            bad("its outline skips fingerprints it says the list does not have".into())
        })?;
        Filtered::Fingerprints(shift)
    } else {
        return Err(bad(
            "its outline places the metadata where the trailer does not".into(),
        ));
    };
    let (order, metadata) = parse(path, outline.version, &t, filter, meta)?;
    let found = outline_of(outline.version, &t, outline.size, &metadata);
    Ok((order, found, metadata))
}

/// Where a list's filter or fingerprints are, as its metadata was read.
enum Filtered {
    /// At the start of the checksummed metadata: a Bloom filter, fingerprints (formats 6
    /// to 8), or nothing.
    InMetadata,
    /// Fingerprints of this shift, before the checksummed metadata and not read (format 9 on).
    Fingerprints(u32),
}

/// The sorting and metadata of a list of format `version` and trailer `t` from `meta`, the
/// checksummed part of its metadata as `filter` says it was read.
fn parse(
    path: &Path,
    version: u32,
    t: &Trailer,
    filter: Filtered,
    meta: &[u8],
) -> Result<(KeyOrder, Metadata)> {
    let bad = |reason: String| Error::corruption(path, reason);
    if crc_fast::crc32_iscsi(meta) != t.meta_crc {
        return Err(bad("filter/index checksum mismatch".into()));
    }
    let skip_fingerprints = matches!(filter, Filtered::Fingerprints(_));
    let (filter_bytes, rest) = match filter {
        Filtered::Fingerprints(_) => (&[][..], meta),
        Filtered::InMetadata => meta
            .split_at_checked(t.filter_len as usize)
            .ok_or_else(|| bad("trailer does not match the file size".into()))?,
    };
    let (mut filter_part, mut fingerprints) = (None, None);
    if let Filtered::Fingerprints(shift) = filter {
        fingerprints = Some(FingerprintSection {
            offset: t.filter_offset,
            len: t.filter_len as usize,
            shift,
        });
    } else if version >= 6 && filter_bytes.first() == Some(&fingerprints::TAG) {
        let shift = Fingerprints::peek_shift(filter_bytes)
            .ok_or_else(|| bad("malformed fingerprints".into()))?;
        fingerprints = Some(FingerprintSection {
            offset: t.filter_offset,
            len: t.filter_len as usize,
            shift,
        });
    } else if !filter_bytes.is_empty() {
        filter_part =
            Some(Filter::decode(filter_bytes).ok_or_else(|| bad("malformed filter".into()))?);
    }
    let (order, index, used) =
        PageIndex::decode(rest, t.page_count as usize, t.filter_offset, version)
            .map_err(|why| bad(why.into()))?;
    // The checksum did not cover the tag that left the section out of it: only a hashed
    // list has fingerprints (a damaged Bloom filter's first byte is caught here).
    if skip_fingerprints && order != KeyOrder::Hashed {
        return Err(bad("an ordered list's filter reads as fingerprints".into()));
    }
    let mut sketch_bytes = &rest[used..];
    let mut expiry = ExpirySummary::none();
    let mut ranges = RangeSet::default();
    if version >= 8 {
        let len =
            Sketch::encoded_len(sketch_bytes).ok_or_else(|| bad("malformed sketch".into()))?;
        let (s, rest) = sketch_bytes.split_at(len);
        let len = ExpirySummary::encoded_len(rest)
            .ok_or_else(|| bad("malformed expiry summary".into()))?;
        let (e, r) = rest.split_at(len);
        expiry = ExpirySummary::decode(e).ok_or_else(|| bad("malformed expiry summary".into()))?;
        ranges = RangeSet::decode(r).ok_or_else(|| bad("malformed range deletes".into()))?;
        sketch_bytes = s;
    }
    let sketch = if version >= 5 {
        let pages = index.pages();
        Some(
            Sketch::decode(sketch_bytes, pages, t.record_count)
                .ok_or_else(|| bad("malformed sketch".into()))?,
        )
    } else if sketch_bytes.is_empty() {
        None
    } else {
        return Err(bad("malformed page index".into()));
    };
    let least_page = Layout::of(version).least_page() as u64;
    let in_place = (0..index.pages()).all(|p| index.offset(p + 1) >= index.offset(p) + least_page)
        && index.offset(0) == HEADER_LEN;
    if !in_place {
        return Err(bad("page index out of order".into()));
    }
    let metadata = Metadata {
        index,
        filter: filter_part,
        fingerprints,
        sketch,
        expiry,
        ranges,
    };
    Ok((order, metadata))
}

/// The outline of a list file of format `version`, trailer `t` and `size` bytes, whose
/// metadata is `metadata`.
pub fn outline_of(version: u32, t: &Trailer, size: u64, metadata: &Metadata) -> Outline {
    let index = &metadata.index;
    // Format 9 on, a hashed list's fingerprints are left out of what a read of it needs.
    let skipped = version >= 9 && metadata.fingerprints.is_some();
    Outline {
        version,
        pages: index.pages(),
        records: t.record_count,
        size,
        page_bytes: index.span_bytes(0, index.pages()),
        metadata_offset: t.filter_offset + if skipped { t.filter_len } else { 0 },
        checksum: t.meta_crc,
        memory: metadata.memory() as u64,
        fingerprint_shift: metadata.fingerprints.map(|f| f.shift),
        eager: metadata.eager(),
    }
}
