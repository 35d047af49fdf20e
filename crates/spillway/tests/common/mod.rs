//! Helpers shared by the integration tests.

// Each test binary uses a part of this module.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use spillway::{Db, KeyOrder, Options, Stats, WriteBatch, WriteOptions};

pub mod expiring;

/// The files in `dir` whose name ends in `.ext`, sorted.
pub fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

/// Bytes of the log files in `dir` on disk: their records, and any space set aside past them
/// (zeros kept ahead, a map's allocation).
pub fn log_file_bytes(dir: &Path) -> u64 {
    files_with_extension(dir, "log")
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

/// Names of the list files in `dir`.
pub fn list_file_names(dir: &Path) -> BTreeSet<String> {
    files_with_extension(dir, "list")
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// Tiny nodes, so that spills and splits of every kind happen every few writes.
pub fn tiny_options() -> Options {
    Options::default()
        .root_buffer_size(4096)
        .node_size(8192)
        .fan_out(4)
        .fast_split_ratio(2)
        .page_size(256)
}

/// The smallest nodes and buffers the model tests use: every few writes spill, and every few
/// spills split.
pub fn minimal_options() -> Options {
    Options::default()
        .root_buffer_size(2048)
        .node_size(1024)
        .fan_out(3)
        .fast_split_ratio(2)
        .page_size(128)
}

/// Small nodes and buffers, so that a few hundred writes make lists, spills and splits.
pub fn small_options() -> Options {
    Options::default()
        .root_buffer_size(16 << 10)
        .node_size(64 << 10)
        .fan_out(4)
        .page_size(512)
}

/// Add the spill and split counters of `s` to `total` (each reopen starts them at zero).
pub fn add_tree_work(total: &mut Stats, s: &Stats) {
    total.root_spills += s.root_spills;
    total.node_spills += s.node_spills;
    total.fast_splits += s.fast_splits;
    total.slow_splits += s.slow_splits;
    total.node_splits += s.node_splits;
    total.list_merges += s.list_merges;
    total.collections += s.collections;
    total.upkeep_settles += s.upkeep_settles;
    total.partial_node_spills += s.partial_node_spills;
    total.pieces_rewritten += s.pieces_rewritten;
}

/// splitmix64 (Steele, Lea, Flood): tiny, fast, and good enough for test randomness.
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n` (the modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform-ish in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}

/// Derive an independent seed from several numbers.
pub fn mix(parts: &[u64]) -> u64 {
    // Each part goes through the whole finalizer: (seed 1, case 2) and (seed 3, case 0) must
    // not meet, as they would if the parts were only XORed into the state.
    parts
        .iter()
        .fold(0x5EED_5EED_5EED_5EED, |h, &p| Rng::new(h ^ p).next_u64())
}

/// Put (`Some`) or delete (`None`) one key, in `db` and in its model alike.
pub fn write_one(
    db: &Db,
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    key: Vec<u8>,
    value: Option<Vec<u8>>,
) {
    match value {
        Some(v) => {
            db.put(&key, &v).unwrap();
            model.insert(key, v);
        }
        None => {
            db.delete(&key).unwrap();
            model.remove(&key);
        }
    }
}

/// Write `entries` as one batch (`None` deletes), in `db` and in its model alike.
pub fn write_batch(
    db: &Db,
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    entries: impl IntoIterator<Item = (Vec<u8>, Option<Vec<u8>>)>,
) {
    let mut b = WriteBatch::new();
    for (k, v) in entries {
        match v {
            Some(v) => {
                b.put(&k, &v);
                model.insert(k, v);
            }
            None => {
                b.delete(&k);
                model.remove(&k);
            }
        }
    }
    db.write(b, WriteOptions::NO_SYNC).unwrap();
}

/// What the model tests write to a key: a value, a delete, or a merge operand appended to the
/// value with a comma (the stores under test use [`comma_append`]).
#[derive(Clone, Debug)]
pub enum Write {
    Put(Vec<u8>),
    Delete,
    Merge(Vec<u8>),
}

/// The merge operator of the model tests: appending with a comma between pieces. Order
/// matters to it, so a fold in the wrong order shows.
pub fn comma_append() -> std::sync::Arc<dyn spillway::MergeOperator> {
    std::sync::Arc::new(spillway::operators::Append::with_separator(","))
}

/// [`comma_append`] without partial merges: operands cannot combine on their way down, so
/// they stack in lists and reads fold them one by one.
pub struct CommaJoin;

impl spillway::MergeOperator for CommaJoin {
    fn name(&self) -> &str {
        "test.comma-join"
    }
    fn full_merge(
        &self,
        key: &[u8],
        base: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, String> {
        spillway::operators::Append::with_separator(",").full_merge(key, base, operands)
    }
}

/// Apply `w` to the model alone.
pub fn model_write(model: &mut BTreeMap<Vec<u8>, Vec<u8>>, key: Vec<u8>, w: Write) {
    match w {
        Write::Put(v) => {
            model.insert(key, v);
        }
        Write::Delete => {
            model.remove(&key);
        }
        Write::Merge(o) => match model.get_mut(&key) {
            Some(v) => {
                v.push(b',');
                v.extend_from_slice(&o);
            }
            None => {
                model.insert(key, o);
            }
        },
    }
}

/// Write `entries` as one batch, in `db` and in its model alike.
pub fn write_mixed(
    db: &Db,
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    entries: impl IntoIterator<Item = (Vec<u8>, Write)>,
) {
    let mut b = WriteBatch::new();
    for (k, w) in entries {
        match &w {
            Write::Put(v) => b.put(&k, v),
            Write::Delete => b.delete(&k),
            Write::Merge(o) => b.merge(&k, o),
        }
        model_write(model, k, w);
    }
    db.write(b, WriteOptions::NO_SYNC).unwrap();
}

/// The fixture's key pairs: `collide:` and a number, big-endian.
pub fn colliding_pairs() -> Vec<(Vec<u8>, Vec<u8>)> {
    let text = include_str!("../fixtures/xxh3-collisions.txt");
    let key = |hex: &str| {
        let mut k = b"collide:".to_vec();
        k.extend_from_slice(&u64::from_str_radix(hex, 16).unwrap().to_be_bytes());
        k
    };
    let pairs: Vec<_> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (a, b) = l.split_once(' ').unwrap();
            (key(a), key(b.trim()))
        })
        .collect();
    for (a, b) in &pairs {
        assert_ne!(a, b);
        assert_eq!(
            KeyOrder::Hashed.route(a),
            KeyOrder::Hashed.route(b),
            "the fixture's keys collide"
        );
    }
    assert!(pairs.len() >= 48);
    pairs
}

/// Small enough that a few hundred records spill and split.
pub fn extremes_base(order: KeyOrder) -> Options {
    Options::default()
        .root_buffer_size(4096)
        .node_size(16 << 10)
        .fan_out(4)
        .page_size(256)
        .key_order(order)
}

/// Each option at the ends of its range (and a few values between where the range is a
/// choice), on top of `extremes_base`.
pub fn option_extremes(order: KeyOrder) -> Vec<(String, Options)> {
    let b = extremes_base(order);
    let mut cases: Vec<(String, Options)> = Vec::new();
    let mut case = |name: &str, o: Options| {
        o.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        cases.push((name.to_owned(), o));
    };
    case("root_buffer_size min", b.clone().root_buffer_size(1024));
    case("root_buffer_size max", b.clone().root_buffer_size(1 << 36));
    case("node_size min", b.clone().node_size(2 * b.page_size));
    case("node_size max", b.clone().node_size(1 << 36));
    case("fan_out min", b.clone().fan_out(2));
    case("fan_out max", b.clone().fan_out(4096));
    case("fast_split_ratio min", b.clone().fast_split_ratio(0));
    case("fast_split_ratio max", b.clone().fast_split_ratio(64));
    case("page_size min", b.clone().page_size(64));
    case(
        "page_size max",
        b.clone().page_size(1 << 20).node_size(2 << 20),
    );
    for bits in [0, 1, 2, 3, 4, 20, 31, 32] {
        case(
            &format!("filter_bits_per_key {bits}"),
            b.clone().filter_bits_per_key(bits),
        );
        // Tiny nodes (every spill splits) and wide ones with high precision: the selectors'
        // universes are largest there.
        case(
            &format!("filter_bits_per_key {bits}, 1 KiB nodes"),
            b.clone().filter_bits_per_key(bits).node_size(1024),
        );
        case(
            &format!("filter_bits_per_key {bits}, 8 MiB nodes"),
            b.clone().filter_bits_per_key(bits).node_size(8 << 20),
        );
    }
    case("max_lists_per_node min", b.clone().max_lists_per_node(2));
    case(
        "max_lists_per_node max",
        b.clone().max_lists_per_node(usize::MAX),
    );
    case(
        "memory_budget min",
        b.clone().memory_budget(spillway::MIN_MEMORY_BUDGET),
    );
    case("memory_budget max", b.clone().memory_budget(1 << 40));
    case("max_open_files min", b.clone().max_open_files(16));
    case("max_open_files max", b.clone().max_open_files(usize::MAX));
    case("sync_by_default", b.clone().sync_by_default(true));
    case("background_spills off", b.clone().background_spills(false));
    case("mmap off", b.clone().mmap_reads(false).mmap_log(false));
    case("log_prefill off", b.clone().log_prefill(false));
    case("preload_selectors off", b.clone().preload_selectors(false));
    case("pace_writes off", b.clone().pace_writes(false));
    case(
        "create_if_missing off (an existing store)",
        b.clone().create_if_missing(false),
    );
    cases
}

/// Every record of `it`, taken from both ends at once (a `next`, then a `next_back`, until
/// they meet), in the iterator's order.
pub fn scan_both_ends<I, E>(mut it: I) -> Vec<(Vec<u8>, Vec<u8>)>
where
    I: DoubleEndedIterator<Item = Result<(Vec<u8>, Vec<u8>), E>>,
    E: std::fmt::Debug,
{
    let (mut front, mut back) = (Vec::new(), Vec::new());
    while let Some(r) = it.next() {
        front.push(r.unwrap());
        match it.next_back() {
            Some(r) => back.push(r.unwrap()),
            None => break,
        }
    }
    back.reverse();
    front.extend(back);
    front
}

/// Options whose hashed stores have nodes of a few dozen lists each, so that node selectors
/// have tiers to merge and leaves split (`tests/selector.rs`, `tests/saved_selectors.rs`).
pub fn selector_options() -> Options {
    Options::default()
        .root_buffer_size(64 << 10)
        .node_size(1 << 20)
        .fan_out(8)
        .page_size(1024)
}

/// Everything the store holds, read whole and key by key, which must agree.
pub fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    // In the store's order (hash order in a hashed store), either way.
    let forward: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    let mut back: Vec<_> = db.iter().rev().map(|r| r.unwrap()).collect();
    back.reverse();
    assert!(back == forward, "backward scan differs");
    let all: BTreeMap<Vec<u8>, Vec<u8>> = forward.into_iter().collect();
    for (k, v) in &all {
        assert_eq!(
            db.get(k).unwrap().as_ref(),
            Some(v),
            "{:?}",
            k.escape_ascii()
        );
    }
    all
}

/// The store holds what the model does: compared key by key (see [`contents`]), and the
/// first key where they differ named, not both whole maps printed.
pub fn assert_same(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    let got = contents(db);
    let keys: BTreeSet<&Vec<u8>> = got.keys().chain(model.keys()).collect();
    for k in keys {
        assert_eq!(
            got.get(k),
            model.get(k),
            "{what}: key {}",
            String::from_utf8_lossy(k)
        );
    }
}
