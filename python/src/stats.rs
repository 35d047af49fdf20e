//! `Db.stats()`: the store's figures as a dict.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `s` as a dict, field by field, with the derived figures beside them.
pub fn to_dict(py: Python<'_>, s: &spillway::Stats) -> PyResult<PyObject> {
    let d = PyDict::new(py);
    macro_rules! fields {
        ($($f:ident),* $(,)?) => { $(d.set_item(stringify!($f), s.$f)?;)* };
    }
    fields!(
        user_bytes_written,
        user_records_written,
        disk_bytes_written,
        wal_bytes_written,
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
        list_merges,
        scans,
        merges,
        operands_folded,
        stalls,
        stall_micros,
        max_stall_micros,
        log_records_replayed,
        log_records_dropped,
        open_list_files,
        handle_misses,
        mapped_list_files,
        height,
        internal_nodes,
        leaves,
        lists,
        files,
        disk_records,
        disk_bytes,
        filter_bytes,
        index_bytes,
        sketch_bytes,
        selector_bytes,
        selector_disk_bytes,
        live_keys,
        live_bytes,
        buffer_bytes,
        memory_budget,
        buffer_limit,
    );
    d.set_item("metadata_bytes", s.metadata_bytes())?;
    d.set_item("memory_bytes_per_key", s.memory_bytes_per_key())?;
    Ok(d.into_any().unbind())
}
