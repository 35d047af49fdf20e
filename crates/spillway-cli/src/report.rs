//! Printing: an aligned two-column table, number formatting, and the groups of
//! [`spillway::Stats`] fields each command shows.

use spillway::Stats;

/// Rows grouped under section titles, printed with every value in one column.
#[derive(Default)]
pub struct Table {
    rows: Vec<Row>,
}

enum Row {
    Section(String),
    Field(String, String),
}

impl Table {
    pub fn new() -> Table {
        Table::default()
    }

    pub fn section(&mut self, title: &str) -> &mut Table {
        self.rows.push(Row::Section(title.to_string()));
        self
    }

    pub fn row(&mut self, label: &str, value: impl Into<String>) -> &mut Table {
        self.rows.push(Row::Field(label.to_string(), value.into()));
        self
    }

    pub fn render(&self) -> String {
        let width = self
            .rows
            .iter()
            .map(|r| match r {
                Row::Field(label, _) => label.len(),
                Row::Section(_) => 0,
            })
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        for (n, r) in self.rows.iter().enumerate() {
            match r {
                Row::Section(title) if n == 0 => out.push_str(&format!("{title}\n")),
                Row::Section(title) => out.push_str(&format!("\n{title}\n")),
                Row::Field(label, value) => {
                    out.push_str(&format!("  {label:<width$}  {value}\n"));
                }
            }
        }
        out
    }

    pub fn print(&self) {
        print!("{}", self.render());
    }
}

/// `1234567` → `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Exact bytes, then a human-sized figure: `3,456,789 B (3.30 MiB)`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut size = n as f64;
    let mut unit = "B";
    for u in UNITS {
        if size < 1024.0 {
            break;
        }
        size /= 1024.0;
        unit = u;
    }
    format!("{} B ({size:.2} {unit})", count(n))
}

/// A per-second rate, rounded to a whole number with separators.
pub fn per_sec(n: u64, secs: f64) -> String {
    if secs <= 0.0 {
        return "-".into();
    }
    count((n as f64 / secs).round() as u64)
}

/// Work the engine did for writes since open.
pub fn writes(t: &mut Table, s: &Stats) {
    t.section("Writes (since open)")
        .row("user records written", count(s.user_records_written))
        .row("user bytes written", bytes(s.user_bytes_written))
        .row("disk bytes written", bytes(s.disk_bytes_written))
        .row("  of which log", bytes(s.wal_bytes_written))
        .row(
            "  zeros ahead of the log",
            bytes(s.log_prefill_bytes_written),
        )
        .row("  root spills' lists", bytes(s.root_spill_bytes_written))
        .row("  node spills' lists", bytes(s.node_spill_bytes_written))
        .row(
            "  leaf rewrites' lists",
            bytes(s.leaf_rewrite_bytes_written),
        )
        .row("  list merges' lists", bytes(s.list_merge_bytes_written))
        .row("  selector tiers", bytes(s.selector_bytes_written))
        .row(
            "  manifest, selector index",
            bytes(s.metadata_bytes_written),
        )
        .row(
            "write amplification",
            format!("{:.2}", s.write_amplification),
        )
        .row("logs written over retired ones", count(s.logs_recycled))
        .row("fsyncs", count(s.fsyncs))
        .row(
            "longest log fsync",
            format!("{:.3} ms", s.max_log_sync_micros as f64 / 1e3),
        )
        .row(
            "write groups",
            format!(
                "{} ({} synced)",
                count(s.write_groups),
                count(s.synced_write_groups)
            ),
        )
        .row("root spills", count(s.root_spills))
        .row(
            "time in root spills",
            format!("{:.3} s", s.spill_micros as f64 / 1e6),
        )
        .row(
            "writer stalls (waits for a spill)",
            format!(
                "{} ({:.3} s in all, longest {:.3} s)",
                count(s.stalls),
                s.stall_micros as f64 / 1e6,
                s.max_stall_micros as f64 / 1e6
            ),
        )
        .row(
            "  of them behind upkeep",
            format!(
                "{} (longest {:.3} s; the rest waited for a buffer's spill)",
                count(s.upkeep_stalls),
                s.max_upkeep_stall_micros as f64 / 1e6
            ),
        )
        .row(
            "writes paced (short waits instead)",
            format!(
                "{} ({:.3} s in all, longest {:.3} s)",
                count(s.paced_writes),
                s.pace_micros as f64 / 1e6,
                s.max_pace_micros as f64 / 1e6
            ),
        )
        .row("node spills", count(s.node_spills))
        .row("fast-splits", count(s.fast_splits))
        .row("slow-splits", count(s.slow_splits))
        .row("node splits", count(s.node_splits))
        .row(
            "collections",
            format!(
                "{} (nodes rewritten early: mostly superseded)",
                count(s.collections)
            ),
        )
        .row(
            "upkeep settles",
            format!(
                "{} (full nodes spilled or split after their spill)",
                count(s.upkeep_settles)
            ),
        )
        .row(
            "  left part-way",
            format!(
                "{} (node spills stopped for a writer; {} leaf pieces rewritten)",
                count(s.partial_node_spills),
                count(s.pieces_rewritten)
            ),
        );
}

/// Work the engine did for reads since open.
pub fn reads(t: &mut Table, s: &Stats) {
    t.section("Reads (since open)")
        .row("GETs", count(s.gets))
        .row("lists probed", count(s.lists_probed))
        .row("lists probed per GET", format!("{:.3}", s.lists_per_get()))
        .row("pages read", count(s.pages_read))
        .row("pages read per GET", format!("{:.3}", s.pages_per_get()))
        .row(
            "list files mapped",
            format!(
                "{} of {} (the rest read with pread; the process maps at most {})",
                count(s.mapped_list_files),
                count(s.files),
                count(spillway::max_mapped_files() as u64)
            ),
        );
    // Selectors leave memory only under a budget: without one the figure is always 0.
    if s.memory_budget > 0 || s.selector_blocks_read > 0 {
        t.row(
            "selector blocks read per GET",
            format!(
                "{:.3} (selectors on disk under the memory budget)",
                s.selector_blocks_read as f64 / s.gets.max(1) as f64
            ),
        );
    }
}

/// Merge operands written and folded since open.
pub fn merges(t: &mut Table, s: &Stats) {
    t.section("Merges (since open)")
        .row("merge operands written", count(s.merges))
        .row("operands folded by reads", count(s.operands_folded))
        .row("folded values written back", count(s.merge_write_backs))
        .row("failed folds", count(s.merge_failures));
}

/// What the open found in the logs.
pub fn recovery(t: &mut Table, s: &Stats) {
    t.section("Recovery (at open)")
        .row("log records replayed", count(s.log_records_replayed))
        .row(
            "log records dropped",
            if s.log_records_dropped == 0 {
                "0".to_string()
            } else {
                format!(
                    "{} (found after damage: unsynced writes lost to a power loss, or damage)",
                    count(s.log_records_dropped)
                )
            },
        );
}

/// The tree as it stands.
pub fn shape(t: &mut Table, s: &Stats) {
    t.section("Tree")
        .row("height", s.height.to_string())
        .row("internal nodes", count(s.internal_nodes))
        .row("leaves", count(s.leaves))
        .row("lists", count(s.lists))
        .row("fullest node", bytes(s.fullest_node_bytes))
        .row("files", count(s.files));
}

/// The keys a store holds, as `stats` and `load` report them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    /// Counted one by one.
    Counted(u64),
    /// `Db::estimate_keys`, from the lists' samples.
    Estimated(u64),
    /// More than this many, and no estimate (lists of a format before 5 remain).
    MoreThan(u64),
}

impl Keys {
    /// The keys of two collections together: estimated if either is, a lower bound if
    /// either is only one.
    pub fn plus(self, other: Keys) -> Keys {
        use Keys::*;
        match (self, other) {
            (Counted(a), Counted(b)) => Counted(a + b),
            (MoreThan(a), Counted(b) | Estimated(b) | MoreThan(b))
            | (Counted(a) | Estimated(a), MoreThan(b)) => MoreThan(a + b),
            (Estimated(a), Counted(b) | Estimated(b)) | (Counted(a), Estimated(b)) => {
                Estimated(a + b)
            }
        }
    }

    /// In a few words, for a list: `4 (counted)`, `120,000 (estimated)`.
    pub fn short(self) -> String {
        match self {
            Keys::Counted(n) => format!("{} (counted)", count(n)),
            Keys::Estimated(n) => format!("{} (estimated)", count(n)),
            Keys::MoreThan(n) => format!("more than {}", count(n)),
        }
    }
}

/// The keys, the list files and the root buffer.
pub fn disk(t: &mut Table, s: &Stats, keys: Keys) {
    t.section("Data")
        .row(
            "keys",
            match keys {
                Keys::Counted(n) => format!("{} (counted)", count(n)),
                Keys::Estimated(n) => format!(
                    "{} (estimated from samples of the keys: within a few percent)",
                    count(n)
                ),
                Keys::MoreThan(n) => format!(
                    "more than {} (no estimate while lists of a format before 5 remain)",
                    count(n)
                ),
            },
        )
        .row("records in list files", count(s.disk_records))
        .row("bytes of list files", bytes(s.disk_bytes))
        .row(
            "live bytes on disk (estimated)",
            if s.disk_records == 0 {
                "0 (nothing spilled yet: the root buffer holds every write)".to_string()
            } else {
                estimated(s.live_bytes, bytes)
            },
        )
        .row(
            "space amplification",
            if s.live_bytes == 0 {
                "-".to_string()
            } else {
                format!("{:.2}× (list files / live bytes)", s.space_amplification())
            },
        )
        .row("root buffer", bytes(s.buffer_bytes))
        .row(
            "memory per record on disk",
            if s.disk_records == 0 {
                "-".to_string()
            } else {
                format!(
                    "{:.2} B (filters, indexes, sketches, selectors)",
                    s.memory_bytes_per_key()
                )
            },
        );
}

/// Memory the engine keeps per list so that a GET reads one or two pages.
pub fn memory(t: &mut Table, s: &Stats) {
    t.section("Memory")
        .row("filter bytes", bytes(s.filter_bytes))
        .row("index bytes", bytes(s.index_bytes))
        .row("sketch bytes", bytes(s.sketch_bytes))
        .row(
            "selector bytes",
            if s.selector_entries == 0 {
                "-".to_string()
            } else {
                format!(
                    "{} ({:.1} bits per entry, {} tiers)",
                    bytes(s.selector_bytes),
                    s.selector_bytes as f64 * 8.0 / s.selector_entries as f64,
                    s.selector_tiers
                )
            },
        )
        .row(
            "selectors on disk",
            if s.selector_disk_bytes == 0 {
                "none".to_string()
            } else {
                format!(
                    "{} in 4 KiB blocks (no room in the budget), {} of them cached",
                    bytes(s.selector_disk_bytes),
                    bytes(s.selector_cache_bytes)
                )
            },
        )
        .row(
            "selectors since open",
            format!(
                "{} saved tiers read, {} entries built from fingerprints, {} tiers not read yet",
                s.selector_tiers_loaded, s.selector_entries_built, s.selector_tiers_unread
            ),
        )
        .row(
            "list files read since open",
            format!(
                "{} ({} not read yet: {} of metadata once read)",
                count(s.lists_read),
                count(s.unread_list_files),
                bytes(s.unread_list_bytes)
            ),
        )
        .row("metadata total", bytes(s.metadata_bytes()))
        .row(
            "memory budget",
            if s.memory_budget == 0 {
                "none (the root buffer holds --root-buffer-mb)".to_string()
            } else {
                bytes(s.memory_budget)
            },
        )
        .row("root buffer spills at", bytes(s.buffer_limit));
}

/// An estimate from the sketches, or why there is none.
fn estimated(n: u64, show: fn(u64) -> String) -> String {
    if n == 0 {
        "- (none, or lists of a format before 5 remain)".to_string()
    } else {
        show(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(3 << 20), "3,145,728 B (3.00 MiB)");
        assert_eq!(per_sec(10, 0.0), "-");
        assert_eq!(per_sec(3, 2.0), "2");
    }

    #[test]
    fn values_share_one_column() {
        let mut t = Table::new();
        t.section("A").row("x", "1").row("longer", "2");
        assert_eq!(t.render(), "A\n  x       1\n  longer  2\n");
    }
}
