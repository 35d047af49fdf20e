//! [`Options`] by name: the one table every front end reads — the CLI's `--option NAME=VALUE`,
//! the server's flags and `CONFIG GET`, Python's keyword arguments — so that each offers every
//! option, under the same name, with the same words and the same parsing.

use super::Options;
use crate::error::{Error, Result};
use crate::order::KeyOrder;

/// One option of [`Options`], as front ends name it: the field's name, and how its value is
/// read from and written as text.
#[derive(Clone, Copy, Debug)]
pub struct OptionInfo {
    pub name: &'static str,
    /// What its value is written as: `bytes` (a count with an optional `K`, `M`, `G`, `T`
    /// suffix, powers of 1024; `KiB`, `MiB`, ... too), `count`, `bool` (`true`/`false`,
    /// `on`/`off`, `yes`/`no`, `1`/`0`), or the words it takes; `none` clears an optional one.
    pub value: &'static str,
    /// The option's meaning in one line (the field's documentation says more).
    pub summary: &'static str,
    /// Set the field from text; `Err` says what the text should have been.
    set: fn(&mut Options, &str) -> std::result::Result<(), &'static str>,
    /// The field as text `set` takes back.
    get: fn(&Options) -> String,
}

/// An entry of [`OPTIONS`] for a field read by `parse` and written by `show`.
macro_rules! option {
    ($field:ident, $value:literal, $summary:literal, $parse:expr, $show:expr) => {
        OptionInfo {
            name: stringify!($field),
            value: $value,
            summary: $summary,
            set: |o, v| {
                o.$field = $parse(v)?;
                Ok(())
            },
            get: |o| $show(&o.$field),
        }
    };
}

fn show<T: ToString>(v: &T) -> String {
    v.to_string()
}

fn show_optional<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "none".to_owned(), T::to_string)
}

/// Every option, in the order of [`Options`]' fields.
pub const OPTIONS: &[OptionInfo] = &[
    option!(
        root_buffer_size,
        "bytes",
        "records the root buffer holds before it spills",
        bytes,
        show
    ),
    option!(
        node_size,
        "bytes",
        "capacity of a node: it spills or splits past this",
        bytes,
        show
    ),
    option!(
        fan_out,
        "count",
        "most children of a node before it splits",
        count,
        show
    ),
    option!(
        fast_split_ratio,
        "count",
        "fast-splits of a leaf before a slow-split (0: slow only)",
        count,
        show
    ),
    option!(
        page_size,
        "bytes",
        "target size of a page of a list file",
        bytes,
        show
    ),
    option!(
        filter_bits_per_key,
        "count",
        "selector precision / Bloom filter bits per key (0: none)",
        count,
        show
    ),
    option!(
        sync_by_default,
        "bool",
        "whether put, delete and merge fsync the log",
        boolean,
        show
    ),
    option!(
        create_if_missing,
        "bool",
        "create the store if the folder holds none",
        boolean,
        show
    ),
    option!(
        background_spills,
        "bool",
        "spill a full root buffer on a background thread",
        boolean,
        show
    ),
    option!(
        spill_threads,
        "count",
        "threads a spill merges on (0: one per core, at most 8)",
        count,
        show
    ),
    option!(
        max_open_files,
        "count",
        "most list files kept open at once",
        count,
        show
    ),
    option!(
        mmap_reads,
        "bool",
        "point reads take pages from a memory map",
        boolean,
        show
    ),
    option!(
        log_prefill,
        "bool",
        "keep zeros written ahead of a synced log",
        boolean,
        show
    ),
    option!(
        mmap_log,
        "bool",
        "copy unsynced writes into the log through a map",
        boolean,
        show
    ),
    option!(
        preload_selectors,
        "bool",
        "read saved node selectors back in the background after an open",
        boolean,
        show
    ),
    option!(
        pace_writes,
        "bool",
        "slow a writer that outruns the running spill in short steps",
        boolean,
        show
    ),
    option!(
        key_order,
        "hashed | ordered | none",
        "key order of a new store (none: the store's own)",
        |v: &str| optional(v, key_order),
        show_optional
    ),
    option!(
        max_lists_per_node,
        "count | none",
        "lists a node keeps before merging its newest (none: by key order)",
        |v: &str| optional(v, count),
        show_optional
    ),
    OptionInfo {
        name: "merge_operator",
        value: "add | append | max | min | a recorded name | none",
        summary: "what folds merge operands (none: the store's own)",
        set: |o, v| {
            o.merge_operator = match v {
                "none" => None,
                name => Some(
                    o.resolve_operator(name)
                        .or_else(|| crate::upsert::operator::by_short_name(name))
                        .ok_or("a merge operator: add, append, max, min or a recorded name")?,
                ),
            };
            Ok(())
        },
        get: |o| o.operator_name().unwrap_or_else(|| "none".to_owned()),
    },
    option!(
        memory_budget,
        "bytes | none",
        "memory for buffers and metadata together",
        |v: &str| optional(v, bytes),
        show_optional
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
        (info.set)(self, value.trim()).map_err(|why| Error::InvalidOption {
            name: info.name,
            reason: format!("`{value}` is not {why}"),
        })
    }

    /// Option `name`'s value in the text [`set`](Self::set) takes (`None` for an unknown
    /// name): what the server's `CONFIG GET` answers.
    pub fn get(&self, name: &str) -> Option<String> {
        OPTIONS
            .iter()
            .find(|o| o.name == name)
            .map(|o| (o.get)(self))
    }
}

const BYTES: &str = "a size in bytes (a number, with an optional K, M, G or T suffix)";
const COUNT: &str = "a whole number";

fn count<T: std::str::FromStr>(v: &str) -> std::result::Result<T, &'static str> {
    v.replace('_', "").parse().map_err(|_| COUNT)
}

/// `4096`, `64M`, `64MiB`, `1g`: powers of 1024.
fn bytes(v: &str) -> std::result::Result<usize, &'static str> {
    let v = v.replace('_', "");
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (n, unit) = v.split_at(digits);
    let n: usize = n.parse().map_err(|_| BYTES)?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(BYTES),
    };
    n.checked_mul(1usize.checked_shl(shift).ok_or(BYTES)?)
        .ok_or(BYTES)
}

fn boolean(v: &str) -> std::result::Result<bool, &'static str> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "1" => Ok(true),
        "false" | "off" | "no" | "0" => Ok(false),
        _ => Err("true or false"),
    }
}

fn key_order(v: &str) -> std::result::Result<KeyOrder, &'static str> {
    match v.to_ascii_lowercase().as_str() {
        "hashed" => Ok(KeyOrder::Hashed),
        "ordered" => Ok(KeyOrder::Ordered),
        _ => Err("hashed, ordered or none"),
    }
}

/// `none`, or what `parse` reads.
fn optional<T>(
    v: &str,
    parse: impl Fn(&str) -> std::result::Result<T, &'static str>,
) -> std::result::Result<Option<T>, &'static str> {
    match v.to_ascii_lowercase().as_str() {
        "none" => Ok(None),
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
            spill_threads: 3,
            max_open_files: 99,
            mmap_reads: false,
            log_prefill: false,
            mmap_log: false,
            preload_selectors: false,
            pace_writes: false,
            key_order: Some(KeyOrder::Ordered),
            max_lists_per_node: Some(3),
            merge_operator: crate::upsert::operator::by_name("spillway.max"),
            known_operators: Vec::new(),
            memory_budget: Some(64 << 20),
            // Not an option by name: a clock is not text.
            clock: Options::default().clock,
            compaction_filter: None,
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
        assert_eq!(bytes("64M"), Ok(64 << 20));
        assert_eq!(bytes("1GiB"), Ok(1 << 30));
        assert_eq!(bytes("4_096"), Ok(4096));
        assert_eq!(bytes("12 kb"), Ok(12 << 10));
        assert!(bytes("-1").is_err());
        assert!(bytes("99999999999999999999T").is_err());
        assert!(bytes("1P").is_err());
        assert_eq!(boolean("Off"), Ok(false));
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
