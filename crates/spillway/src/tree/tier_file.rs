//! Selector tiers that left memory (see `Options::memory_budget`): a scratch file of 4 KiB
//! blocks per open store, each block an Elias–Fano run of one tier's entries, and a bounded
//! cache of decoded blocks. These are LSM-trie's clustered filters once filters no longer fit
//! in memory: a lookup reads the one block that holds its prefix.
//!
//! A tier on disk keeps in memory only the first entry and the place of each block: 12 bytes
//! per ~1,500 entries. A block ends where a prefix ends (unless one prefix alone fills it), so
//! a lookup reads one block.
//!
//! The file is derived data: an open writes its blocks again from the saved tiers (see
//! `selector_file`), or from the lists' fingerprints. It is unlinked as soon as it is created, so a crash leaves nothing behind and a
//! read-only open may have one as well. Blocks are never written twice while a tier uses them:
//! a tier's blocks go back to a free list when the last tree version holding it is gone.
//!
//! ```text
//! block = first u64 | len u16 | Elias–Fano of (entries − first), len bytes | zeros | crc32c u32
//! ```

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{Error, Result};
use crate::io;
use crate::stats::Counters;
use crate::tree::cache::Cache;
use crate::util::ef::EliasFano;
use crate::util::sync::lock;

pub const BLOCK: usize = 4096;
const HEAD: usize = 10;
const TAIL: usize = 4;

pub struct TierFile {
    dir: PathBuf,
    /// Created when the first tier leaves memory.
    file: OnceLock<(File, PathBuf)>,
    blocks: Mutex<Blocks>,
    cache: Cache<(u64, u32), Arc<Block>>,
    counters: Arc<Counters>,
    next_uid: AtomicU64,
}

/// Which blocks of the file are in use.
struct Blocks {
    free: Vec<u32>,
    end: u32,
}

/// A decoded block: the entries `first + v` for every `v` of `seq`.
struct Block {
    first: u64,
    seq: EliasFano,
}

/// A tier's entries, in blocks of a [`TierFile`].
pub struct DiskEntries {
    file: Arc<TierFile>,
    /// Names the tier in the cache: block numbers are reused, uids never.
    uid: u64,
    n: u64,
    /// Each block's first entry, and where the block is in the file.
    firsts: Box<[u64]>,
    blocks: Box<[u32]>,
}

impl TierFile {
    pub fn new(dir: &Path, counters: Arc<Counters>) -> Arc<TierFile> {
        Arc::new(TierFile {
            dir: dir.to_owned(),
            file: OnceLock::new(),
            blocks: Mutex::new(Blocks {
                free: Vec::new(),
                end: 0,
            }),
            cache: Cache::new(0),
            counters,
            next_uid: AtomicU64::new(0),
        })
    }

    pub fn set_cache_capacity(&self, bytes: usize) {
        self.cache.set_capacity(bytes);
    }

    /// Memory the block cache holds.
    pub fn cache_bytes(&self) -> usize {
        self.cache.bytes()
    }

    /// Bytes of blocks tiers use.
    pub fn disk_bytes(&self) -> u64 {
        let b = lock(&self.blocks);
        (u64::from(b.end) - b.free.len() as u64) * BLOCK as u64
    }

    fn file(&self) -> Result<&(File, PathBuf)> {
        if let Some(f) = self.file.get() {
            return Ok(f);
        }
        let _one_at_a_time = lock(&self.blocks);
        if let Some(f) = self.file.get() {
            return Ok(f);
        }
        // Unique in the process too: read-only opens of one folder may run side by side.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = self
            .dir
            .join(crate::files::scratch_name(NEXT.fetch_add(1, Relaxed)));
        let file = io::create_scratch(&path)?;
        Ok(self.file.get_or_init(|| (file, path)))
    }

    /// Write `values` (increasing; an entry's prefix is `entry / slots`) to blocks.
    pub fn write(self: &Arc<Self>, values: &[u64], slots: u64) -> Result<DiskEntries> {
        let (file, path) = self.file()?;
        let cuts = cut(values, slots);
        let entries = DiskEntries {
            file: self.clone(),
            uid: self.next_uid.fetch_add(1, Relaxed),
            n: values.len() as u64,
            firsts: cuts.iter().map(|r| values[r.start]).collect(),
            blocks: self.allocate(cuts.len())?,
        };
        // From here a failure frees the blocks: `entries` is dropped.
        let mut buf = Vec::with_capacity(BLOCK);
        for (r, &b) in cuts.iter().zip(entries.blocks.iter()) {
            encode_block(&values[r.clone()], &mut buf);
            io::write_at(file, path, offset(b), &buf, &self.counters)?;
            (self.counters.selector_write_bytes).fetch_add(buf.len() as u64, Relaxed);
        }
        Ok(entries)
    }

    fn allocate(&self, n: usize) -> Result<Box<[u32]>> {
        let mut b = lock(&self.blocks);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            match b.free.pop() {
                Some(free) => out.push(free),
                None => {
                    let Some(end) = b.end.checked_add(1) else {
                        b.free.extend(out);
                        return Err(Error::io(
                            "growing the selector scratch file",
                            std::io::Error::from(std::io::ErrorKind::FileTooLarge),
                        ));
                    };
                    out.push(b.end);
                    b.end = end;
                }
            }
        }
        Ok(out.into())
    }

    /// Block `i` of `entries`, from the cache or the file.
    fn block(&self, entries: &DiskEntries, i: usize) -> Result<Arc<Block>> {
        let key = (entries.uid, i as u32);
        if let Some(b) = self.cache.get(&key) {
            return Ok(b);
        }
        let block = Arc::new(self.load(entries, i)?);
        let charge = block.seq.memory() + 64;
        self.cache.insert(key, block.clone(), charge);
        Ok(block)
    }

    fn load(&self, entries: &DiskEntries, i: usize) -> Result<Block> {
        let (file, path) = self.file.get().expect("a tier on disk has its file");
        let at = offset(entries.blocks[i]);
        let mut data = [0u8; BLOCK];
        io::read_into(file, path, at, &mut data)?;
        Counters::bump(&self.counters.selector_blocks_read);
        decode_block(&data, entries.firsts[i]).ok_or_else(|| {
            Error::corruption(
                path,
                format!("the selector block at {at} is damaged (the next open writes it again)"),
            )
        })
    }
}

impl DiskEntries {
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Bytes of memory held: the blocks' first entries and places.
    pub fn memory(&self) -> usize {
        self.firsts.len() * 12 + std::mem::size_of::<Self>()
    }

    /// Call `f` with every entry in `lo..=hi`, in order.
    pub fn for_each_in(&self, lo: u64, hi: u64, mut f: impl FnMut(u64)) -> Result<()> {
        if lo > hi {
            return Ok(());
        }
        let mut i = self.firsts.partition_point(|&x| x <= lo).saturating_sub(1);
        while i < self.firsts.len() && self.firsts[i] <= hi {
            let b = self.file.block(self, i)?;
            let first = b.first;
            b.seq
                .for_each_in(lo.saturating_sub(first), hi - first, |v| f(first + v));
            i += 1;
        }
        Ok(())
    }

    /// Every entry, in order, read past the cache (a merge reads each block once).
    pub fn values(&self) -> Result<Vec<u64>> {
        let mut out = Vec::with_capacity(self.n as usize);
        for i in 0..self.blocks.len() {
            let b = self.file.load(self, i)?;
            out.extend(b.seq.iter().map(|v| b.first + v));
        }
        Ok(out)
    }
}

impl Drop for DiskEntries {
    fn drop(&mut self) {
        lock(&self.file.blocks).free.extend(self.blocks.iter());
    }
}

fn offset(block: u32) -> u64 {
    u64::from(block) * BLOCK as u64
}

/// The blocks `values` go in: as many entries as fit, ending where a prefix ends unless one
/// prefix alone fills a block.
fn cut(values: &[u64], slots: u64) -> Vec<Range<usize>> {
    let room = BLOCK - HEAD - TAIL;
    let prefix = |i: usize| values[i] / slots;
    let mut out = Vec::new();
    let mut start = 0;
    while start < values.len() {
        let first = values[start];
        // `values[start..k]` fit; `end` is the last cut at a prefix's end that fits.
        let mut k = start + 1;
        let mut end = None;
        loop {
            if k == values.len() || prefix(k) != prefix(k - 1) {
                end = Some(k);
            }
            let n = (k + 1 - start) as u64;
            if k == values.len() || EliasFano::encoded_len(values[k] - first + 1, n) > room {
                break;
            }
            k += 1;
        }
        let end = end.unwrap_or(k);
        out.push(start..end);
        start = end;
    }
    out
}

fn encode_block(values: &[u64], buf: &mut Vec<u8>) {
    let first = values[0];
    let universe = values[values.len() - 1] - first + 1;
    let seq = EliasFano::build(universe, values.len(), values.iter().map(|v| v - first));
    buf.clear();
    buf.extend_from_slice(&first.to_le_bytes());
    buf.extend_from_slice(&[0, 0]);
    seq.encode(buf);
    let len = (buf.len() - HEAD) as u16;
    buf[8..HEAD].copy_from_slice(&len.to_le_bytes());
    debug_assert!(buf.len() <= BLOCK - TAIL, "a cut that does not fit");
    buf.resize(BLOCK - TAIL, 0);
    let crc = crc_fast::crc32_iscsi(buf);
    buf.extend_from_slice(&crc.to_le_bytes());
}

/// The block in `data`, if its checksum holds and it starts at `first`.
fn decode_block(data: &[u8], first: u64) -> Option<Block> {
    let (body, crc) = data.split_at_checked(BLOCK - TAIL)?;
    if crc_fast::crc32_iscsi(body).to_le_bytes() != crc {
        return None;
    }
    let stored = u64::from_le_bytes(body[..8].try_into().ok()?);
    let len = u16::from_le_bytes(body[8..HEAD].try_into().ok()?) as usize;
    if stored != first {
        return None;
    }
    let seq = EliasFano::decode_unsampled(body.get(HEAD..HEAD + len)?)?;
    Some(Block { first, seq })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: u64, slots: u64, seed: u64) -> Vec<u64> {
        let mut x = seed;
        let mut v: Vec<u64> = (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((x >> 20) % (n << 8)) * slots + (x % slots)
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }

    #[test]
    fn lookups_on_disk_answer_as_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::new(Counters::default());
        let file = TierFile::new(dir.path(), counters.clone());
        file.set_cache_capacity(64 * BLOCK * 16);
        let v = values(50_000, 5, 1);
        let disk = file.write(&v, 5).unwrap();
        assert!(disk.blocks.len() > 10 && file.disk_bytes() == disk.blocks.len() as u64 * 4096);
        assert_eq!(disk.values().unwrap(), v);
        // No scratch file is left in the folder: it was unlinked.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        for probe in (0..(50_000u64 << 8)).step_by(997) {
            let (lo, hi) = (probe * 5, probe * 5 + 4);
            let mut got = Vec::new();
            disk.for_each_in(lo, hi, |e| got.push(e)).unwrap();
            let want: Vec<u64> = v
                .iter()
                .copied()
                .filter(|e| (lo..=hi).contains(e))
                .collect();
            assert_eq!(got, want, "prefix {probe}");
        }
        // A prefix's entries are in one block: a lookup reads at most one.
        let before = counters.selector_blocks_read.load(Relaxed);
        file.set_cache_capacity(0);
        for &e in v.iter().step_by(101) {
            let p = e / 5;
            disk.for_each_in(p * 5, p * 5 + 4, |_| {}).unwrap();
        }
        let reads = counters.selector_blocks_read.load(Relaxed) - before;
        assert!(reads <= v.len().div_ceil(101) as u64, "{reads} reads");
        // Freed blocks are reused.
        let n = disk.blocks.len();
        drop(disk);
        let again = file.write(&v[..v.len() / 2], 5).unwrap();
        assert!(again.blocks.iter().all(|&b| (b as usize) < n));
    }

    #[test]
    fn damaged_blocks_are_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let file = TierFile::new(dir.path(), Arc::default());
        let v = values(5_000, 3, 7);
        let disk = file.write(&v, 3).unwrap();
        let (f, _) = file.file.get().unwrap();
        use std::os::unix::fs::FileExt;
        f.write_all_at(&[0xff], offset(disk.blocks[0]) + 100)
            .unwrap();
        let err = disk.values().unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{err}");
        let lo = disk.firsts[0];
        assert!(disk.for_each_in(lo, lo, |_| {}).is_err());
    }

    #[test]
    fn cuts_keep_a_prefix_in_one_block_and_fit() {
        let v = values(200_000, 40, 3);
        let cuts = cut(&v, 40);
        assert_eq!(cuts.first().unwrap().start, 0);
        assert_eq!(cuts.last().unwrap().end, v.len());
        for w in cuts.windows(2) {
            assert_eq!(w[0].end, w[1].start);
            assert_ne!(v[w[0].end - 1] / 40, v[w[1].start] / 40);
        }
        let mut buf = Vec::new();
        for r in &cuts {
            encode_block(&v[r.clone()], &mut buf);
            assert_eq!(buf.len(), BLOCK);
        }
        // One prefix holding more entries than a block: cut inside it.
        let one: Vec<u64> = (0..40_000u64).map(|s| (5 << 16) | s).collect();
        let cuts = cut(&one, 1 << 16);
        assert!(cuts.len() > 1 && cuts.last().unwrap().end == one.len());
    }
}
