//! `INFO [section ...]`: Redis's sections of `field:value` lines, with the store's figures.

use std::sync::atomic::Ordering::Relaxed;

use super::context::Ctx;
use super::Engine;
use crate::resp::Reply;

/// User bytes written before `INFO` shows the write amplification. Below it the bytes a store
/// writes whatever its data are most of those written — the manifest at open, the log's header
/// and the 4 MiB of zeros the engine writes ahead of a log once it is synced (which
/// `Stats::disk_bytes_written` counts, with no counter of their own) — and the ratio said
/// 61685 after a few SETs. From here the zeros ahead add at most 1/16 to it.
const AMPLIFICATION_FROM: u64 = 64 << 20;

/// The sections `INFO` alone (or `INFO default`) leaves out, as Redis does.
const NOT_BY_DEFAULT: &[&str] = &["Commandstats"];

/// `INFO [section ...]`.
pub fn info(ctx: &mut Ctx, args: &[Vec<u8>]) -> super::CmdResult {
    Ok(Reply::Bulk(ctx.engine.info(&args[1..]).into_bytes()))
}

/// A section's `field:value` lines.
type Fields = Vec<(String, String)>;

fn fields<const N: usize>(lines: [(&str, String); N]) -> Fields {
    lines.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

impl Engine {
    /// The text of `INFO` for the sections `wanted` (none: the default ones).
    fn info(&self, wanted: &[Vec<u8>]) -> String {
        let asked = |names: &[&str]| {
            let mut asked = wanted.iter();
            asked.any(|w| names.iter().any(|n| w.eq_ignore_ascii_case(n.as_bytes())))
        };
        let everything = asked(&["all", "everything"]);
        let default = wanted.is_empty() || asked(&["default"]);
        let mut out = String::new();
        // Each section's figures are gathered only if it is asked for (Keyspace reads keys).
        let mut section = |title: &str, lines: &dyn Fn() -> Fields| {
            let by_default = !NOT_BY_DEFAULT.contains(&title);
            if !(everything || default && by_default || asked(&[title])) {
                return;
            }
            out.push_str(&format!("# {title}\r\n"));
            for (k, v) in lines() {
                out.push_str(&format!("{k}:{v}\r\n"));
            }
            out.push_str("\r\n");
        };
        section("Server", &|| {
            fields([
                // Tools read redis_version to pick what to send: we answer as Redis 7.0 does.
                ("redis_version", "7.0.0".into()),
                ("spillway_version", env!("CARGO_PKG_VERSION").into()),
                ("redis_mode", "standalone".into()),
                ("process_id", std::process::id().to_string()),
                (
                    "uptime_in_seconds",
                    self.started.elapsed().as_secs().to_string(),
                ),
            ])
        });
        section("Clients", &|| {
            fields([
                ("connected_clients", self.clients.load(Relaxed).to_string()),
                ("maxclients", self.max_clients.to_string()),
                (
                    "blocked_clients",
                    self.blocking.blocked_clients().to_string(),
                ),
            ])
        });
        let s = self.db.stats();
        section("Memory", &|| {
            fields([
                (
                    "used_memory",
                    (s.metadata_bytes() + s.buffer_bytes).to_string(),
                ),
                ("spillway_metadata_bytes", s.metadata_bytes().to_string()),
                ("spillway_buffer_bytes", s.buffer_bytes.to_string()),
            ])
        });
        section("Persistence", &|| {
            let mut lines = fields([
                ("aof_enabled", "1".into()),
                ("spillway_disk_bytes", s.disk_bytes.to_string()),
                (
                    "spillway_user_bytes_written",
                    s.user_bytes_written.to_string(),
                ),
                (
                    "spillway_log_bytes_written",
                    s.wal_bytes_written.to_string(),
                ),
                (
                    "spillway_disk_bytes_written",
                    s.disk_bytes_written.to_string(),
                ),
            ]);
            if s.user_bytes_written >= AMPLIFICATION_FROM {
                let amplification = format!("{:.2}", s.write_amplification);
                lines.push(("spillway_write_amplification".into(), amplification));
            }
            lines
        });
        section("Stats", &|| {
            fields([
                ("spillway_gets", s.gets.to_string()),
                ("spillway_fsyncs", s.fsyncs.to_string()),
                ("spillway_root_spills", s.root_spills.to_string()),
            ])
        });
        section("Commandstats", &|| self.stats.lines());
        section("Keyspace", &|| {
            // Keys as DBSIZE answers: exact in a small database, estimated in a large one;
            // those that expire as `count` says. As Redis, only the databases that hold keys.
            let count = |n| self.census(n).unwrap_or_default();
            let dbs = (0..self.dbs.count()).map(|n| (n, count(n)));
            dbs.filter(|(_, c)| c.keys > 0)
                .map(|(n, c)| {
                    let line = format!(
                        "keys={},expires={},avg_ttl={}",
                        c.keys, c.expires, c.avg_ttl
                    );
                    (format!("db{n}"), line)
                })
                .collect()
        });
        out
    }
}
