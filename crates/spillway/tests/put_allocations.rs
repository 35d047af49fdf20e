//! A lone writer's single put, delete or merge allocates nothing on its way to the log and
//! the buffer: the batch is built in a per-thread scratch batch and committed borrowed (the
//! write queue copies it only if it has to wait). Counted by a global allocator that counts
//! the allocations of the calling thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use spillway::{operators::U64Add, Db, Options};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; counting touches only a const-initialized
// thread-local cell, which allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}

#[test]
fn single_writes_of_a_lone_writer_allocate_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options::default().merge_operator(Arc::new(U64Add)),
    )
    .unwrap();
    let key = |i: u32| format!("key{i:08}");
    let mut keys: Vec<String> = (0..13_000).map(key).collect();
    // Warm up: the buffer's table is sized after its first thousand keys.
    for k in keys.drain(..3_000) {
        db.put(&k, "value").unwrap();
    }
    let before = allocations();
    for (i, k) in keys.iter().enumerate() {
        match i % 3 {
            0 => db.put(k, "value").unwrap(),
            1 => db.delete(k).unwrap(),
            _ => db.merge(k, 1u64.to_le_bytes()).unwrap(),
        }
    }
    let per_write = (allocations() - before) as f64 / keys.len() as f64;
    assert!(per_write < 0.01, "{per_write} allocations per write");
    // And the writes are there.
    assert_eq!(db.get(&keys[0]).unwrap().unwrap(), b"value");
    assert_eq!(db.get(&keys[1]).unwrap(), None);
    assert_eq!(db.get(&keys[2]).unwrap().unwrap(), 1u64.to_le_bytes());
}
