//! Compaction filters: values that spills, splits and list merges rewrite are shown to the
//! filter, which keeps, removes or changes them. Lazy by design, so the tests hold each key
//! to "its value as written, or as the filter made it" — never anything else, never an older
//! value come back — and check that rewrites did filter (the stats count it). A filter that
//! panics keeps the record and fails nothing.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use spillway::{CompactionFilter, Db, Decision, KeyOrder, KeyspaceOptions, Options};

/// Removes values that start with "rm", changes those that start with "up" to upper case.
struct Policy {
    seen: AtomicU64,
}

impl CompactionFilter for Policy {
    fn name(&self) -> &str {
        "test.policy"
    }
    fn filter(&self, _key: &[u8], value: &[u8]) -> Decision {
        self.seen.fetch_add(1, Relaxed);
        if value.starts_with(b"rm") {
            Decision::Remove
        } else if value.starts_with(b"up") {
            Decision::Change(value.to_ascii_uppercase())
        } else {
            Decision::Keep
        }
    }
}

fn churn_options(order: KeyOrder) -> Options {
    // Slow-splits only, and at most two lists a node: nearly every record is rewritten.
    common::minimal_options()
        .key_order(order)
        .fast_split_ratio(0)
        .max_lists_per_node(2)
}

/// What a read may return for a key last written `v`: `v` (not rewritten yet) or what the
/// filter makes of it.
fn allowed(v: &[u8]) -> [Option<Vec<u8>>; 2] {
    let filtered = if v.starts_with(b"rm") {
        None
    } else if v.starts_with(b"up") {
        Some(v.to_ascii_uppercase())
    } else {
        Some(v.to_vec())
    };
    [Some(v.to_vec()), filtered]
}

#[test]
fn rewrites_keep_remove_and_change_values() {
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        let dir = tempfile::tempdir().unwrap();
        let policy = Arc::new(Policy {
            seen: AtomicU64::new(0),
        });
        let opts = churn_options(order).compaction_filter(policy.clone());
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        let mut last: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut rng = common::Rng::new(7);
        for round in 0..6 {
            for i in 0..1500u64 {
                let k = format!("key{:04}", rng.below(800)).into_bytes();
                let v = match rng.below(3) {
                    0 => format!("rm-{round}-{i}"),
                    1 => format!("up-{round}-{i}"),
                    _ => format!("keep-{round}-{i}"),
                }
                .into_bytes();
                db.put(&k, &v).unwrap();
                last.insert(k, v);
            }
            db.flush().unwrap();
        }
        let stats = db.stats();
        assert!(stats.filter_removed > 0, "{order:?}: nothing removed");
        assert!(stats.filter_changed > 0, "{order:?}: nothing changed");
        assert!(policy.seen.load(Relaxed) > 0);
        let mut removed = 0;
        for (k, v) in &last {
            let got = db.get(k).unwrap();
            assert!(
                allowed(v).contains(&got),
                "{order:?} {k:?}: {got:?} for {v:?}"
            );
            removed += usize::from(got.is_none());
        }
        assert!(removed > 0, "{order:?}: some removed value was rewritten");
        // Scans agree with point reads.
        for r in db.iter() {
            let (k, v) = r.unwrap();
            assert_eq!(db.get(&k).unwrap(), Some(v));
        }
        db.close().unwrap();
        // A removed key stays removed after reopen, without the filter too (a tombstone, not
        // an older value come back).
        let db = Db::open(dir.path(), churn_options(order)).unwrap();
        for (k, v) in &last {
            let got = db.get(k).unwrap();
            assert!(
                allowed(v).contains(&got),
                "after reopen {k:?}: {got:?} for {v:?}"
            );
        }
    }
}

#[test]
fn a_removed_value_does_not_bring_back_an_older_one() {
    let dir = tempfile::tempdir().unwrap();
    let policy = Arc::new(Policy {
        seen: AtomicU64::new(0),
    });
    let db = Db::open(
        dir.path(),
        churn_options(KeyOrder::Hashed).compaction_filter(policy),
    )
    .unwrap();
    // Old values first, spilled down; then "rm" values on top of them; then churn.
    for i in 0..400u32 {
        db.put(format!("k{i}"), "keep-old").unwrap();
    }
    db.flush().unwrap();
    for i in 0..400u32 {
        db.put(format!("k{i}"), "rm-new").unwrap();
    }
    for i in 0..6000u32 {
        db.put(format!("filler{i}"), "keep").unwrap();
    }
    db.flush().unwrap();
    assert!(db.stats().filter_removed > 0);
    for i in 0..400u32 {
        let got = db.get(format!("k{i}")).unwrap();
        assert!(
            got.is_none() || got.as_deref() == Some(&b"rm-new"[..]),
            "k{i}: {got:?}"
        );
    }
}

/// Panics on every value it sees.
struct Panicky;

impl CompactionFilter for Panicky {
    fn name(&self) -> &str {
        "test.panicky"
    }
    fn filter(&self, _key: &[u8], _value: &[u8]) -> Decision {
        panic!("a filter that fails");
    }
}

#[test]
fn a_panicking_filter_keeps_the_record_and_fails_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let opts = churn_options(KeyOrder::Ordered).compaction_filter(Arc::new(Panicky));
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..3000u32 {
        db.put(format!("k{i:05}"), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    assert!(db.stats().filter_failures > 0);
    for i in 0..3000u32 {
        assert_eq!(
            db.get(format!("k{i:05}")).unwrap(),
            Some(format!("v{i}").into_bytes())
        );
    }
    db.close().unwrap();
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn each_keyspace_has_its_own_filter() {
    let dir = tempfile::tempdir().unwrap();
    let policy = Arc::new(Policy {
        seen: AtomicU64::new(0),
    });
    // The store's filter is the default keyspace's only.
    let db = Db::open(
        dir.path(),
        churn_options(KeyOrder::Hashed).compaction_filter(policy),
    )
    .unwrap();
    let plain = db.keyspace("plain", KeyspaceOptions::default()).unwrap();
    for i in 0..3000u32 {
        plain.put(format!("k{i}"), "rm-but-unfiltered").unwrap();
    }
    db.flush().unwrap();
    for i in 0..3000u32 {
        assert_eq!(
            plain.get(format!("k{i}")).unwrap().as_deref(),
            Some(&b"rm-but-unfiltered"[..])
        );
    }
    assert_eq!(db.stats().filter_removed, 0);
    // A handle that brings a filter gives the keyspace one.
    let filtered = db
        .keyspace(
            "plain",
            KeyspaceOptions::default().compaction_filter(Arc::new(Policy {
                seen: AtomicU64::new(0),
            })),
        )
        .unwrap();
    for i in 3000..9000u32 {
        filtered.put(format!("k{i}"), "rm").unwrap();
    }
    db.flush().unwrap();
    assert!(db.stats().filter_removed > 0);
}
