//! [`Options`] by name: the one table every front end reads — the CLI's `--option NAME=VALUE`,
//! the server's flags and `CONFIG GET`, Python's keyword arguments — so that each offers every
//! option, under the same name, with the same words and the same parsing.

use super::Options;
use crate::error::{Error, Result};
use crate::order::KeyOrder;

/// One option of [`Options`], as front ends name it: the field's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionInfo {
    pub name: &'static str,
    /// What its value is written as: `bytes` (a count with an optional `K`, `M`, `G`, `T`
    /// suffix, powers of 1024; `KiB`, `MiB`, ... too), `count`, `bool` (`true`/`false`,
    /// `on`/`off`, `yes`/`no`, `1`/`0`), or the words it takes; `none` clears an optional one.
    pub value: &'static str,
    /// The option's meaning in one line (the field's documentation says more).
    pub summary: &'static str,
}

const fn info(name: &'static str, value: &'static str, summary: &'static str) -> OptionInfo {
    OptionInfo {
        name,
        value,
        summary,
    }
}

/// Every option, in the order of [`Options`]' fields.
pub const OPTIONS: &[OptionInfo] = &[
    info(
        "root_buffer_size",
        "bytes",
        "records the root buffer holds before it spills",
    ),
    info(
        "node_size",
        "bytes",
        "capacity of a node: it spills or splits past this",
    ),
    info(
        "fan_out",
        "count",
        "most children of a node before it splits",
    ),
    info(
        "fast_split_ratio",
        "count",
        "fast-splits of a leaf before a slow-split (0: slow only)",
    ),
    info("page_size", "bytes", "target size of a page of a list file"),
    info(
        "filter_bits_per_key",
        "count",
        "selector precision / Bloom filter bits per key (0: none)",
    ),
    info(
        "sync_by_default",
        "bool",
        "whether put, delete and merge fsync the log",
    ),
    info(
        "create_if_missing",
        "bool",
        "create the store if the folder holds none",
    ),
    info(
        "background_spills",
        "bool",
        "spill a full root buffer on a background thread",
    ),
    info(
        "max_open_files",
        "count",
        "most list files kept open at once",
    ),
    info(
        "mmap_reads",
        "bool",
        "point reads take pages from a memory map",
    ),
    info(
        "log_prefill",
        "bool",
        "keep zeros written ahead of a synced log",
    ),
    info(
        "mmap_log",
        "bool",
        "copy unsynced writes into the log through a map",
    ),
    info(
        "key_order",
        "hashed | ordered | none",
        "key order of a new store (none: the store's own)",
    ),
    info(
        "max_lists_per_node",
        "count | none",
        "lists a node keeps before merging its newest (none: by key order)",
    ),
    info(
        "merge_operator",
        "add | append | max | min | a recorded name | none",
        "what folds merge operands (none: the store's own)",
    ),
    info(
        "memory_budget",
        "bytes | none",
        "memory for buffers and metadata together",
    ),
];

impl Options {
    /// Set option `name` (a field's name, see [`OPTIONS`]) from its text form: how the CLI's
    /// `--option`, the server and Python set options. A value that does not parse is
    /// [`Error::InvalidOption`]; one that parses but is out of range is found by
    /// [`validate`](Self::validate), as for any options.
    ///
    /// ```
    /// let mut opts = spillway::Options::default();
    /// opts.set("node_size", "16MiB")?;
    /// opts.set("key_order", "ordered")?;
    /// opts.set("merge_operator", "add")?;
    /// assert_eq!(opts.node_size, 16 << 20);
    /// assert_eq!(opts.get("merge_operator").as_deref(), Some("spillway.u64add"));
    /// assert!(opts.set("node_size", "big").is_err());
    /// assert!(matches!(opts.set("nodesize", "1"), Err(spillway::Error::UnknownOption { .. })));
    /// # Ok::<(), spillway::Error>(())
    /// ```
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let Some(info) = OPTIONS.iter().find(|o| o.name == name) else {
            return Err(Error::UnknownOption {
                name: name.to_owned(),
            });
        };
        let bad = |why: &str| Error::InvalidOption {
            name: info.name,
            reason: format!("`{value}` is not {why}"),
        };
        let v = value.trim();
        match info.name {
            "root_buffer_size" => self.root_buffer_size = bytes(v).ok_or_else(|| bad(BYTES))?,
            "node_size" => self.node_size = bytes(v).ok_or_else(|| bad(BYTES))?,
            "fan_out" => self.fan_out = count(v).ok_or_else(|| bad(COUNT))?,
            "fast_split_ratio" => self.fast_split_ratio = count(v).ok_or_else(|| bad(COUNT))?,
            "page_size" => self.page_size = bytes(v).ok_or_else(|| bad(BYTES))?,
            "filter_bits_per_key" => {
                self.filter_bits_per_key = count(v).ok_or_else(|| bad(COUNT))?
            }
            "sync_by_default" => self.sync_by_default = boolean(v).ok_or_else(|| bad(BOOL))?,
            "create_if_missing" => self.create_if_missing = boolean(v).ok_or_else(|| bad(BOOL))?,
            "background_spills" => self.background_spills = boolean(v).ok_or_else(|| bad(BOOL))?,
            "max_open_files" => self.max_open_files = count(v).ok_or_else(|| bad(COUNT))?,
            "mmap_reads" => self.mmap_reads = boolean(v).ok_or_else(|| bad(BOOL))?,
            "log_prefill" => self.log_prefill = boolean(v).ok_or_else(|| bad(BOOL))?,
            "mmap_log" => self.mmap_log = boolean(v).ok_or_else(|| bad(BOOL))?,
            "key_order" => {
                self.key_order = match v.to_ascii_lowercase().as_str() {
                    "hashed" => Some(KeyOrder::Hashed),
                    "ordered" => Some(KeyOrder::Ordered),
                    "none" => None,
                    _ => return Err(bad("hashed, ordered or none")),
                }
            }
            "max_lists_per_node" => {
                self.max_lists_per_node = optional(v, count).ok_or_else(|| bad(COUNT))?
            }
            "merge_operator" => {
                self.merge_operator = match v {
                    "none" => None,
                    name => Some(
                        self.known_operators
                            .iter()
                            .find(|o| o.name() == name)
                            .cloned()
                            .or_else(|| crate::upsert::operator::by_short_name(name))
                            .ok_or_else(|| {
                                bad("a merge operator: add, append, max, min or a recorded name")
                            })?,
                    ),
                }
            }
            "memory_budget" => self.memory_budget = optional(v, bytes).ok_or_else(|| bad(BYTES))?,
            other => unreachable!("option {other} is in the table but not set"),
        }
        Ok(())
    }

    /// Option `name`'s value in the text [`set`](Self::set) takes (`None` for an unknown
    /// name): what the server's `CONFIG GET` answers.
    pub fn get(&self, name: &str) -> Option<String> {
        let none = || "none".to_owned();
        Some(match name {
            "root_buffer_size" => self.root_buffer_size.to_string(),
            "node_size" => self.node_size.to_string(),
            "fan_out" => self.fan_out.to_string(),
            "fast_split_ratio" => self.fast_split_ratio.to_string(),
            "page_size" => self.page_size.to_string(),
            "filter_bits_per_key" => self.filter_bits_per_key.to_string(),
            "sync_by_default" => self.sync_by_default.to_string(),
            "create_if_missing" => self.create_if_missing.to_string(),
            "background_spills" => self.background_spills.to_string(),
            "max_open_files" => self.max_open_files.to_string(),
            "mmap_reads" => self.mmap_reads.to_string(),
            "log_prefill" => self.log_prefill.to_string(),
            "mmap_log" => self.mmap_log.to_string(),
            "key_order" => self.key_order.map_or_else(none, |o| o.to_string()),
            "max_lists_per_node" => self.max_lists_per_node.map_or_else(none, |n| n.to_string()),
            "merge_operator" => self
                .merge_operator
                .as_ref()
                .map_or_else(none, |o| o.name().to_owned()),
            "memory_budget" => self.memory_budget.map_or_else(none, |n| n.to_string()),
            _ => return None,
        })
    }
}

const BYTES: &str = "a size in bytes (a number, with an optional K, M, G or T suffix)";
const COUNT: &str = "a whole number";
const BOOL: &str = "true or false";

fn count<T: std::str::FromStr>(v: &str) -> Option<T> {
    v.replace('_', "").parse().ok()
}

/// `4096`, `64M`, `64MiB`, `1g`: powers of 1024.
fn bytes(v: &str) -> Option<usize> {
    let v = v.replace('_', "");
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (n, unit) = v.split_at(digits);
    let n: usize = n.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return None,
    };
    n.checked_mul(1usize.checked_shl(shift)?)
}

fn boolean(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "1" => Some(true),
        "false" | "off" | "no" | "0" => Some(false),
        _ => None,
    }
}

fn optional<T>(v: &str, parse: impl Fn(&str) -> Option<T>) -> Option<Option<T>> {
    match v.to_ascii_lowercase().as_str() {
        "none" => Some(None),
        _ => parse(v).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_round_trips_through_its_text() {
        let mut changed = Options {
            root_buffer_size: 3 << 20,
            node_size: 5 << 20,
            fan_out: 7,
            fast_split_ratio: 0,
            page_size: 512,
            filter_bits_per_key: 32,
            sync_by_default: true,
            create_if_missing: false,
            background_spills: false,
            max_open_files: 99,
            mmap_reads: false,
            log_prefill: false,
            mmap_log: false,
            key_order: Some(KeyOrder::Ordered),
            max_lists_per_node: Some(3),
            merge_operator: crate::upsert::operator::by_name("spillway.max"),
            known_operators: Vec::new(),
            memory_budget: Some(64 << 20),
        };
        let mut rebuilt = Options::default();
        for o in OPTIONS {
            let text = changed.get(o.name).unwrap();
            assert_ne!(
                Some(&text),
                Options::default().get(o.name).as_ref(),
                "{}",
                o.name
            );
            rebuilt.set(o.name, &text).unwrap();
        }
        assert_eq!(rebuilt, changed);
        // And back to the defaults, `none` included.
        for o in OPTIONS {
            changed
                .set(o.name, &Options::default().get(o.name).unwrap())
                .unwrap();
        }
        assert_eq!(changed, Options::default());
    }

    #[test]
    fn sizes_booleans_and_errors() {
        assert_eq!(bytes("64M"), Some(64 << 20));
        assert_eq!(bytes("1GiB"), Some(1 << 30));
        assert_eq!(bytes("4_096"), Some(4096));
        assert_eq!(bytes("12 kb"), Some(12 << 10));
        assert_eq!(bytes("-1"), None);
        assert_eq!(bytes("99999999999999999999T"), None);
        assert_eq!(bytes("1P"), None);
        assert_eq!(boolean("Off"), Some(false));
        let mut o = Options::default();
        match o.set("fan_out", "many") {
            Err(Error::InvalidOption { name, reason }) => {
                assert_eq!(name, "fan_out");
                assert!(reason.contains("`many`"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            o.set("merge_operator", "sum"),
            Err(Error::InvalidOption { .. })
        ));
        assert!(matches!(
            o.set("fanout", "3"),
            Err(Error::UnknownOption { .. })
        ));
        // Parsed, but out of range: `validate` names it.
        o.set("fan_out", "1").unwrap();
        assert!(matches!(
            o.validate(),
            Err(Error::InvalidOption {
                name: "fan_out",
                ..
            })
        ));
    }
}
