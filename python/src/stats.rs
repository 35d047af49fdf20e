//! `Db.stats()`: the store's figures as a dict.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `s` as a dict, field by field under the field's name, with the derived figures beside
/// them.
pub fn to_dict(py: Python<'_>, s: &spillway::Stats) -> PyResult<PyObject> {
    let d = PyDict::new(py);
    macro_rules! fields {
        ($($f:ident),* $(,)?) => {
            // `Stats` is non-exhaustive: a figure the engine adds shows here once it is
            // listed below (and in the stub's `Stats`).
            let spillway::Stats { $($f),*, .. } = s;
            $(d.set_item(stringify!($f), $f)?;)*
        };
    }
    fields!(
        user_bytes_written,
        user_records_written,
        disk_bytes_written,
        wal_bytes_written,
        log_prefill_bytes_written,
        logs_recycled,
        root_spill_bytes_written,
        node_spill_bytes_written,
        leaf_rewrite_bytes_written,
        list_merge_bytes_written,
        selector_bytes_written,
        metadata_bytes_written,
        write_amplification,
        fsyncs,
        write_groups,
        synced_write_groups,
        gets,
        lists_probed,
        pages_read,
        selector_blocks_read,
        root_spills,
        node_spills,
        fast_splits,
        slow_splits,
        node_splits,
        collections,
        upkeep_settles,
        partial_node_spills,
        pieces_rewritten,
        list_merges,
        scans,
        scan_lists,
        merges,
        operands_folded,
        merge_write_backs,
        merge_failures,
        spill_micros,
        stalls,
        stall_micros,
        max_stall_micros,
        paced_writes,
        pace_micros,
        max_pace_micros,
        upkeep_stalls,
        max_upkeep_stall_micros,
        max_log_sync_micros,
        log_records_replayed,
        log_records_dropped,
        open_list_files,
        handle_misses,
        lists_read,
        mapped_list_files,
        height,
        internal_nodes,
        leaves,
        lists,
        fullest_node_bytes,
        files,
        disk_records,
        disk_bytes,
        filter_bytes,
        index_bytes,
        sketch_bytes,
        unread_list_files,
        unread_list_bytes,
        selector_bytes,
        selector_entries,
        selector_tiers,
        selector_tiers_unread,
        selector_disk_bytes,
        selector_cache_bytes,
        live_keys,
        live_bytes,
        buffer_bytes,
        memory_budget,
        buffer_limit,
    );
    d.set_item("metadata_bytes", s.metadata_bytes())?;
    d.set_item("memory_bytes_per_key", s.memory_bytes_per_key())?;
    d.set_item("space_amplification", s.space_amplification())?;
    d.set_item("lists_per_get", s.lists_per_get())?;
    d.set_item("pages_per_get", s.pages_per_get())?;
    d.set_item("reads_per_get", s.reads_per_get())?;
    Ok(d.into_any().unbind())
}
