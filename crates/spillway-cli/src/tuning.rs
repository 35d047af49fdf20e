//! Engine tuning flags, mapped one to one onto [`spillway::Options`], and `-o NAME=VALUE` for
//! every option by its name ([`spillway::OPTIONS`]), flags or not.
//!
//! Every default is read from `Options::default()`, so the CLI never drifts from the engine,
//! and no range is checked here: `Options::validate` does, and its typed error reaches the
//! user as a usage error.

use clap::Args;
use spillway::{KeyOrder, Options};

use crate::error::CliError;

const MIB: f64 = (1u64 << 20) as f64;

fn mib(bytes: usize) -> f64 {
    bytes as f64 / MIB
}

/// Sizes are in MiB and may be fractional (`--root-buffer-mb 0.25`), so that small test
/// stores can exercise spills and splits without loading gigabytes.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Engine tuning")]
pub struct Tuning {
    /// Root buffer size in MiB: larger buffers spill less often (lower write amplification).
    #[arg(long, value_name = "MIB", default_value_t = mib(Options::default().root_buffer_size))]
    pub root_buffer_mb: f64,

    /// Memory budget in MiB for the root buffers and the lists' filters, indexes and sketches
    /// together: the buffer takes what the lists leave, and --root-buffer-mb is not used
    /// (Options::memory_budget). More memory, fewer and larger spills: less write
    /// amplification.
    #[arg(long, value_name = "MIB")]
    pub memory_mb: Option<f64>,

    /// Node capacity in MiB: an internal node spills, a leaf splits, when its lists reach it.
    #[arg(long, value_name = "MIB", default_value_t = mib(Options::default().node_size))]
    pub node_mb: f64,

    /// Most children a node may have before it splits.
    #[arg(long, value_name = "N", default_value_t = Options::default().fan_out)]
    pub fan_out: usize,

    /// Fast-splits a leaf may undergo before the next split is a slow-split (0: always slow).
    #[arg(long, value_name = "N", default_value_t = Options::default().fast_split_ratio)]
    pub fast_split_ratio: u32,

    /// Bloom filter bits per key for every list (0 disables filters).
    #[arg(long, value_name = "BITS", default_value_t = Options::default().filter_bits_per_key)]
    pub filter_bits: u32,

    /// Spill on the writing thread instead of in the background (Options::background_spills
    /// false): one root buffer in memory, but the write that fills it waits for the spill.
    #[arg(long)]
    pub inline_spills: bool,

    /// Most list files kept open at once; reading another one reopens it.
    #[arg(long, value_name = "N", default_value_t = Options::default().max_open_files)]
    pub max_open_files: usize,

    /// No memory maps: read list pages with pread, and append to the log with write
    /// (Options::mmap_reads and mmap_log false): slower GETs and unsynced puts, but an I/O
    /// error is an error rather than SIGBUS.
    #[arg(long)]
    pub no_mmap: bool,

    /// Keep no zeros written ahead of a log's end (Options::log_prefill false): synced
    /// writes grow the file and cost more, but the log is written once, not twice.
    #[arg(long)]
    pub no_log_prefill: bool,

    /// Target size in bytes of the pages of new list files (a GET reads one): smaller pages,
    /// faster in-memory GETs and a larger page index.
    #[arg(long, value_name = "BYTES", default_value_t = Options::default().page_size)]
    pub page_size: usize,

    /// Keep keys in order, for range scans (`spillway scan --from/--to/--prefix`); fixed when
    /// the store is created. Without it a new store is hashed, and an existing store keeps
    /// the order it was created with. With --keyspace, the same of the keyspace.
    #[arg(long)]
    pub ordered: bool,

    /// Set any engine option by name, e.g. -o node_size=16M (repeatable; names: --help).
    #[arg(short = 'o', long = "option", value_name = "NAME=VALUE",
          value_parser = parse_option, long_help = option_help())]
    pub options: Vec<NamedOption>,
}

/// `-o NAME=VALUE`: an option of [`spillway::OPTIONS`] and its value, checked to parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedOption {
    pub name: &'static str,
    pub value: String,
}

/// Clap's parser of `-o NAME=VALUE`: an unknown name, or a value the option cannot take, is
/// a usage error naming the option. A value out of range is left for `validate`, as for the
/// flags.
pub fn parse_option(text: &str) -> Result<NamedOption, String> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(format!(
            "`{text}` is not NAME=VALUE (e.g. node_size=16M; names: spillway --help for a \
             command)"
        ));
    };
    let name = name.trim();
    let Some(info) = spillway::OPTIONS.iter().find(|o| o.name == name) else {
        let names: Vec<&str> = spillway::OPTIONS.iter().map(|o| o.name).collect();
        return Err(format!(
            "no engine option is named `{name}`: the options are {}",
            names.join(", ")
        ));
    };
    match Options::default().set(info.name, value) {
        Ok(()) => Ok(NamedOption {
            name: info.name,
            value: value.to_string(),
        }),
        Err(spillway::Error::InvalidOption { reason, .. }) => {
            Err(format!("{}: {reason} (it takes {})", info.name, info.value))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The long help of `-o`: every option of the engine, from the engine's own table.
fn option_help() -> String {
    let mut help = String::from(
        "Set any engine option by its name (a field of spillway::Options), after the flags \
         above, so that it wins over them; repeatable. Sizes take K, M, G or T (powers of \
         1024: 16M, 64KiB); booleans true/false, on/off, yes/no; `none` clears an optional \
         one. The options, what they take, and what they do:\n",
    );
    let width = spillway::OPTIONS
        .iter()
        .map(|o| o.name.len())
        .max()
        .unwrap_or(0);
    for o in spillway::OPTIONS {
        help.push_str(&format!(
            "\n  {:<width$}  {}: {}",
            o.name, o.value, o.summary
        ));
    }
    help
}

impl Tuning {
    /// The engine options these flags describe, then each `-o` in turn. `create_if_missing`
    /// is the caller's choice (only commands that write may create a store), unless an `-o`
    /// sets it.
    pub fn options(&self, create_if_missing: bool) -> Options {
        let mut opts = Options::default()
            .root_buffer_size(mib_to_bytes(self.root_buffer_mb))
            .memory_budget(self.memory_mb.map(mib_to_bytes))
            .node_size(mib_to_bytes(self.node_mb))
            .fan_out(self.fan_out)
            .fast_split_ratio(self.fast_split_ratio)
            .filter_bits_per_key(self.filter_bits)
            .background_spills(!self.inline_spills)
            .max_open_files(self.max_open_files)
            .mmap_reads(!self.no_mmap)
            .mmap_log(!self.no_mmap)
            .log_prefill(!self.no_log_prefill)
            .page_size(self.page_size)
            .key_order(self.ordered.then_some(KeyOrder::Ordered))
            .create_if_missing(create_if_missing);
        for o in &self.options {
            // Cannot fail: parse_option set the same value on default options, and no option
            // parses differently on others.
            let set = opts.set(o.name, &o.value);
            debug_assert!(set.is_ok(), "{o:?}: {set:?}");
        }
        opts
    }

    /// Whether `-o` sets option `name`.
    pub fn sets(&self, name: &str) -> bool {
        self.options.iter().any(|o| o.name == name)
    }
}

impl Tuning {
    /// [`options`](Self::options), checked by the engine's own `Options::validate` before
    /// any open. An out-of-range size is reported in the MiB the user typed, not in the
    /// bytes the engine counts; other fields keep the engine's message (their units are the
    /// flag's), with the flag named in the hint.
    pub fn validated(&self, create_if_missing: bool) -> Result<Options, CliError> {
        let opts = self.options(create_if_missing);
        match opts.validate() {
            Ok(()) => Ok(opts),
            Err(spillway::Error::InvalidOption { name, reason }) => {
                let typed = match name {
                    "root_buffer_size" => Some((self.root_buffer_mb, opts.root_buffer_size)),
                    "memory_budget" => self.memory_mb.zip(opts.memory_budget),
                    "node_size" => Some((self.node_mb, opts.node_size)),
                    _ => None,
                };
                // A size given with -o was typed in bytes (or with a suffix), not in MiB.
                let typed = typed.filter(|_| !self.sets(name));
                let (Some((mb, bytes)), Some(flag)) = (typed, flag_for(name)) else {
                    return Err(spillway::Error::InvalidOption { name, reason }.into());
                };
                Err(CliError::Usage(in_mib(flag, mb, bytes, &reason)))
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// The engine's `reason` for a size of `bytes` out of range, about `flag` set to `mb` MiB:
/// its reasons begin with the value, which becomes the MiB typed; should one not, the bytes
/// are explained after it.
fn in_mib(flag: &str, mb: f64, bytes: usize, reason: &str) -> String {
    match reason.strip_prefix(&format!("{bytes} ")) {
        Some(rest) => format!("invalid {flag}: {mb} MiB {rest}"),
        None => format!("invalid {flag} {mb}: {reason} (in bytes: {mb} MiB is {bytes} bytes)"),
    }
}

/// Negative or NaN sizes become 0 and huge ones saturate, so `Db::open` rejects them with
/// its own message rather than the CLI inventing a second one.
fn mib_to_bytes(mb: f64) -> usize {
    (mb * MIB).round() as usize
}

/// The flag that sets the `Options` field the engine names in `Error::InvalidOption`.
pub fn flag_for(option: &str) -> Option<&'static str> {
    Some(match option {
        "root_buffer_size" => "--root-buffer-mb",
        "memory_budget" => "--memory-mb",
        "node_size" => "--node-mb",
        "fan_out" => "--fan-out",
        "fast_split_ratio" => "--fast-split-ratio",
        "filter_bits_per_key" => "--filter-bits",
        "max_open_files" => "--max-open-files",
        "page_size" => "--page-size",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Tuning {
        let d = Options::default();
        Tuning {
            root_buffer_mb: mib(d.root_buffer_size),
            memory_mb: d.memory_budget.map(mib),
            node_mb: mib(d.node_size),
            fan_out: d.fan_out,
            fast_split_ratio: d.fast_split_ratio,
            filter_bits: d.filter_bits_per_key,
            inline_spills: !d.background_spills,
            max_open_files: d.max_open_files,
            no_mmap: !d.mmap_reads,
            no_log_prefill: !d.log_prefill,
            page_size: d.page_size,
            ordered: d.key_order == Some(KeyOrder::Ordered),
            options: Vec::new(),
        }
    }

    #[test]
    fn default_flags_are_the_engine_defaults() {
        assert_eq!(defaults().options(true), Options::default());
        let ordered = Tuning {
            ordered: true,
            ..defaults()
        };
        assert_eq!(ordered.options(true).key_order, Some(KeyOrder::Ordered));
    }

    #[test]
    fn named_options_parse_apply_after_the_flags_and_name_themselves_in_errors() {
        let o = parse_option("node_size=16M").unwrap();
        assert_eq!((o.name, o.value.as_str()), ("node_size", "16M"));
        let t = Tuning {
            node_mb: 8.0,
            options: vec![o, parse_option("key_order=ordered").unwrap()],
            ..defaults()
        };
        let opts = t.options(false);
        assert_eq!(opts.node_size, 16 << 20);
        assert_eq!(opts.key_order, Some(KeyOrder::Ordered));
        let t = Tuning {
            options: vec![parse_option("create_if_missing=false").unwrap()],
            ..defaults()
        };
        assert!(!t.options(true).create_if_missing);
        for name in spillway::OPTIONS.iter().map(|o| o.name) {
            let value = Options::default().get(name).unwrap();
            assert!(parse_option(&format!("{name}={value}")).is_ok(), "{name}");
        }

        let err = parse_option("nodesize=1").unwrap_err();
        assert!(
            err.contains("`nodesize`") && err.contains("node_size, fan_out"),
            "{err}"
        );
        let err = parse_option("fan_out=many").unwrap_err();
        assert!(err.starts_with("fan_out: `many` is not"), "{err}");
        assert!(parse_option("fan_out").unwrap_err().contains("NAME=VALUE"));

        // Out of range: the engine's words, in the bytes typed, not in MiB.
        let t = Tuning {
            options: vec![parse_option("node_size=1K").unwrap()],
            ..defaults()
        };
        let err = t.validated(true).unwrap_err();
        assert!(
            err.to_string()
                .contains("invalid option `node_size`: 1024 "),
            "{err}"
        );
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.hint().unwrap().contains("-o node_size=VALUE"),
            "{err:?}"
        );
        let help = option_help();
        for o in spillway::OPTIONS {
            assert!(help.contains(o.name) && help.contains(o.summary), "{help}");
        }
    }

    #[test]
    fn sizes_convert_from_mib_and_bad_ones_reach_the_engine() {
        let t = Tuning {
            root_buffer_mb: 0.25,
            node_mb: -1.0,
            ..defaults()
        };
        let opts = t.options(false);
        assert_eq!(opts.root_buffer_size, 256 << 10);
        assert_eq!(opts.node_size, 0);
        assert!(!opts.create_if_missing);
        match opts.validate() {
            Err(spillway::Error::InvalidOption { name, .. }) => {
                assert_eq!(flag_for(name), Some("--node-mb"))
            }
            other => panic!("expected InvalidOption, got {other:?}"),
        }
    }

    #[test]
    fn an_out_of_range_size_is_reported_in_the_mib_typed() {
        for (t, flag, typed) in [
            (
                Tuning {
                    root_buffer_mb: 999_999_999.0,
                    ..defaults()
                },
                "--root-buffer-mb",
                "999999999 MiB",
            ),
            (
                Tuning {
                    root_buffer_mb: 0.0001,
                    ..defaults()
                },
                "--root-buffer-mb",
                "0.0001 MiB",
            ),
            (
                Tuning {
                    node_mb: 1e9,
                    ..defaults()
                },
                "--node-mb",
                "1000000000 MiB",
            ),
            (
                Tuning {
                    memory_mb: Some(2.0),
                    ..defaults()
                },
                "--memory-mb",
                "2 MiB",
            ),
        ] {
            let msg = t.validated(true).unwrap_err().to_string();
            assert!(msg.contains(flag) && msg.contains(typed), "{msg}");
            let bytes = t.options(true);
            for n in [bytes.root_buffer_size, bytes.node_size] {
                assert!(n == 64 << 20 || !msg.contains(&n.to_string()), "{msg}");
            }
        }
        assert!(defaults().validated(false).is_ok());
        let msg = in_mib("--node-mb", 2.5, 2621440, "some other wording");
        assert!(msg.contains("2.5 MiB is 2621440 bytes"), "{msg}");
    }
}
