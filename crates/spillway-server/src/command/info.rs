//! `INFO [section ...]`: Redis's sections of `field:value` lines, with the server's and the
//! store's figures.
//!
//! Sections are chosen as Redis 7.0 chooses them: none named (or `default`) gives the default
//! ones, `all` and `everything` every one, and names may be mixed (`INFO default
//! commandstats`), in any case; an unknown name gives nothing. Each field is Redis's where
//! this server knows its value, or has nothing of the kind (`blocked_clients:0`,
//! `role:master`, `cluster_enabled:0`); the store's own are `spillway_*`. Left out, rather
//! than made up: Redis's figures of what this server does not keep (`expired_keys`: the
//! engine hides an expired key from every read and drops it when a spill meets it, with no
//! count of either; the latency percentiles of `latencystats`; the main thread's CPU time:
//! commands run on several threads).

use super::context::Ctx;
use super::counters::Rate;
use super::Engine;
use crate::locks::lock;
use crate::resp::Reply;

/// User bytes written before `INFO` shows the write amplification. Below it the bytes a store
/// writes whatever its data are most of those written — the manifest at open, the log's header
/// and the 4 MiB of zeros the engine writes ahead of a log once it is synced (which
/// `Stats::disk_bytes_written` counts, with no counter of their own) — and the ratio said
/// 61685 after a few SETs. From here the zeros ahead add at most 1/16 to it.
const AMPLIFICATION_FROM: u64 = 64 << 20;

/// Redis's sections, in its order: the title, the names that ask for it, whether `INFO` alone
/// (or `default`) gives it.
const SECTIONS: &[(&str, &[&str], bool)] = &[
    ("Server", &["server"], true),
    ("Clients", &["clients"], true),
    ("Memory", &["memory"], true),
    ("Persistence", &["persistence"], true),
    ("Stats", &["stats"], true),
    ("Replication", &["replication"], true),
    ("CPU", &["cpu"], true),
    ("Modules", &["modules", "module_list"], true),
    ("Commandstats", &["commandstats"], false),
    ("Errorstats", &["errorstats"], true),
    ("Cluster", &["cluster"], true),
    ("Keyspace", &["keyspace"], true),
];

/// `INFO [section ...]`.
pub fn info(ctx: &mut Ctx, args: &[Vec<u8>]) -> super::CmdResult {
    ctx.count_lookups(); // the pipeline's reads before it
    Ok(Reply::Verbatim(ctx.engine.info(&args[1..]).into_bytes()))
}

/// A section's `field:value` lines.
type Fields = Vec<(String, String)>;

fn fields<const N: usize>(lines: [(&str, String); N]) -> Fields {
    lines.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Which sections `INFO` was asked for, as Redis reads its arguments.
fn chosen(wanted: &[Vec<u8>]) -> Vec<bool> {
    let asked = |name: &str| {
        wanted
            .iter()
            .any(|w| w.eq_ignore_ascii_case(name.as_bytes()))
    };
    let all = asked("all") || asked("everything");
    let default = wanted.is_empty() || asked("default");
    SECTIONS
        .iter()
        .map(|&(_, names, by_default)| {
            all || (default && by_default) || names.iter().any(|n| asked(n))
        })
        .collect()
}

/// Seconds and microseconds, as Redis prints CPU times (`%ld.%06ld`).
fn seconds(t: libc::timeval) -> String {
    format!("{}.{:06}", t.tv_sec, t.tv_usec)
}

/// CPU time of the process and of its children, system then user, from `getrusage`.
fn cpu() -> [String; 4] {
    let usage = |who| {
        // SAFETY: getrusage only writes the struct it is given, which is plain data.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut u) };
        u
    };
    let (me, children) = (usage(libc::RUSAGE_SELF), usage(libc::RUSAGE_CHILDREN));
    [
        me.ru_stime,
        me.ru_utime,
        children.ru_stime,
        children.ru_utime,
    ]
    .map(seconds)
}

/// Bytes as Redis's `bytesToHuman` writes them: `996.49K`, `11.84M`, `0B`.
fn human(bytes: u64) -> String {
    let b = bytes as f64;
    let units = [
        (1u64 << 50, "P"),
        (1 << 40, "T"),
        (1 << 30, "G"),
        (1 << 20, "M"),
        (1 << 10, "K"),
    ];
    match units.iter().find(|(size, _)| bytes >= *size) {
        Some(&(size, unit)) => format!("{:.2}{unit}", b / size as f64),
        None => format!("{bytes}B"),
    }
}

impl Engine {
    /// The text of `INFO` for the sections `wanted` (none: the default ones).
    fn info(&self, wanted: &[Vec<u8>]) -> String {
        let chosen = chosen(wanted);
        let mut out = String::new();
        for (i, &(title, _, _)) in SECTIONS.iter().enumerate() {
            if !chosen[i] {
                continue;
            }
            // As Redis: sections apart by a blank line, none after the last.
            if !out.is_empty() {
                out.push_str("\r\n");
            }
            out.push_str(&format!("# {title}\r\n"));
            for (k, v) in self.section(title) {
                out.push_str(&format!("{k}:{v}\r\n"));
            }
        }
        out
    }

    /// A section's lines (its figures gathered only when it is asked for: Keyspace reads keys).
    fn section(&self, title: &str) -> Fields {
        match title {
            "Server" => {
                let uptime = self.started.elapsed().as_secs();
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
                fields([
                    // Tools read redis_version to pick what to send: we answer as Redis 7.0.
                    ("redis_version", "7.0.0".into()),
                    ("spillway_version", env!("CARGO_PKG_VERSION").into()),
                    ("redis_mode", "standalone".into()),
                    ("arch_bits", (usize::BITS).to_string()),
                    ("process_id", std::process::id().to_string()),
                    (
                        "server_time_usec",
                        now.map_or(0, |d| d.as_micros()).to_string(),
                    ),
                    ("uptime_in_seconds", uptime.to_string()),
                    ("uptime_in_days", (uptime / 86_400).to_string()),
                ])
            }
            "Clients" => fields([
                ("connected_clients", self.clients.connected().to_string()),
                ("cluster_connections", "0".into()),
                ("maxclients", self.clients.max().to_string()),
                (
                    "blocked_clients",
                    self.blocking.blocked_clients().to_string(),
                ),
                ("tracking_clients", "0".into()),
                ("clients_in_timeout_table", "0".into()),
            ]),
            "Memory" => {
                let s = self.db.stats();
                let used = s.metadata_bytes() + s.buffer_bytes;
                let policy = lock(&self.kept).maxmemory_policy();
                fields([
                    ("used_memory", used.to_string()),
                    ("used_memory_human", human(used)),
                    ("maxmemory", "0".into()),
                    ("maxmemory_human", "0B".into()),
                    ("maxmemory_policy", policy.into()),
                    ("spillway_metadata_bytes", s.metadata_bytes().to_string()),
                    ("spillway_buffer_bytes", s.buffer_bytes.to_string()),
                    ("spillway_memory_budget", s.memory_budget.to_string()),
                ])
            }
            "Persistence" => {
                let s = self.db.stats();
                let mut lines = fields([
                    ("loading", "0".into()),
                    ("aof_enabled", "1".into()),
                    ("spillway_disk_bytes", s.disk_bytes.to_string()),
                ]);
                // What users wrote, what the engine wrote, and the parts of the latter.
                let written = [
                    ("user", s.user_bytes_written),
                    ("log", s.wal_bytes_written),
                    ("disk", s.disk_bytes_written),
                    ("log_prefill", s.log_prefill_bytes_written),
                    ("root_spill", s.root_spill_bytes_written),
                    ("node_spill", s.node_spill_bytes_written),
                    ("leaf_rewrite", s.leaf_rewrite_bytes_written),
                    ("list_merge", s.list_merge_bytes_written),
                    ("selector", s.selector_bytes_written),
                    ("metadata", s.metadata_bytes_written),
                ];
                lines
                    .extend(written.map(|(what, n)| {
                        (format!("spillway_{what}_bytes_written"), n.to_string())
                    }));
                lines.push(("spillway_logs_recycled".into(), s.logs_recycled.to_string()));
                if s.user_bytes_written >= AMPLIFICATION_FROM {
                    let amplification = format!("{:.2}", s.write_amplification);
                    lines.push(("spillway_write_amplification".into(), amplification));
                }
                lines
            }
            "Stats" => {
                let s = self.db.stats();
                let [hits, misses, net_in, net_out] = self.counters.totals();
                let rate = |r| self.counters.per_second(r);
                let kbps = |r| format!("{:.2}", rate(r) / 1024.0);
                fields([
                    (
                        "total_connections_received",
                        self.clients.received().to_string(),
                    ),
                    (
                        "total_commands_processed",
                        self.stats.total_calls().to_string(),
                    ),
                    (
                        "instantaneous_ops_per_sec",
                        (rate(Rate::Commands) as u64).to_string(),
                    ),
                    ("total_net_input_bytes", net_in.to_string()),
                    ("total_net_output_bytes", net_out.to_string()),
                    ("instantaneous_input_kbps", kbps(Rate::InputBytes)),
                    ("instantaneous_output_kbps", kbps(Rate::OutputBytes)),
                    ("rejected_connections", self.clients.rejected().to_string()),
                    ("evicted_keys", "0".into()),
                    ("evicted_clients", "0".into()),
                    ("keyspace_hits", hits.to_string()),
                    ("keyspace_misses", misses.to_string()),
                    ("pubsub_channels", "0".into()),
                    ("pubsub_patterns", "0".into()),
                    ("total_error_replies", self.errors.total().to_string()),
                    ("spillway_gets", s.gets.to_string()),
                    ("spillway_fsyncs", s.fsyncs.to_string()),
                    ("spillway_root_spills", s.root_spills.to_string()),
                ])
            }
            // A master with no replicas, as Redis's reads (tools read `master_repl_offset`).
            "Replication" => fields([
                ("role", "master".into()),
                ("connected_slaves", "0".into()),
                ("master_failover_state", "no-failover".into()),
                ("master_repl_offset", "0".into()),
                ("second_repl_offset", "-1".into()),
                ("repl_backlog_active", "0".into()),
            ]),
            "CPU" => {
                let [sys, user, sys_children, user_children] = cpu();
                fields([
                    ("used_cpu_sys", sys),
                    ("used_cpu_user", user),
                    ("used_cpu_sys_children", sys_children),
                    ("used_cpu_user_children", user_children),
                ])
            }
            "Commandstats" => self.stats.lines(),
            "Errorstats" => self.errors.lines(),
            "Cluster" => fields([("cluster_enabled", "0".into())]),
            "Keyspace" => {
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
            }
            _ => Fields::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_chosen_as_redis_chooses_them() {
        let names = |args: &[&str]| -> Vec<&str> {
            let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
            let chosen = chosen(&args);
            SECTIONS
                .iter()
                .zip(chosen)
                .filter(|(_, c)| *c)
                .map(|((t, _, _), _)| *t)
                .collect()
        };
        let default = names(&[]);
        assert_eq!(default.len(), SECTIONS.len() - 1);
        assert!(!default.contains(&"Commandstats"));
        assert_eq!(names(&["DEFAULT"]), default);
        assert_eq!(names(&["all"]).len(), SECTIONS.len());
        assert_eq!(names(&["everything"]).len(), SECTIONS.len());
        assert_eq!(names(&["cpu", "ErrorStats"]), ["CPU", "Errorstats"]);
        assert_eq!(names(&["default", "commandstats"]).len(), SECTIONS.len());
        assert_eq!(names(&["module_list"]), ["Modules"]);
        assert!(names(&["nosuch"]).is_empty());
        assert_eq!(human(1_020_408), "996.49K");
        assert_eq!(human(0), "0B");
        let cpu = cpu();
        assert!(cpu
            .iter()
            .all(|t| t.split_once('.').is_some_and(|(_, us)| us.len() == 6)));
    }
}
