//! The transfer workload (issue 29): accounts with balances, and threads moving money between
//! two of them at a time in serializable transactions — read both balances, move an amount
//! the first can cover, write both, commit (fsynced when durable). A conflict is counted and
//! the same transfer retried in a new transaction. At the end the store is closed, reopened,
//! and the balances summed: money moved but never made or lost, or the run fails.
//!
//! Keys are account numbers, 8 bytes big-endian; values are balances, u64 little-endian.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::measure::{self, Latency};
use crate::tx_engine::{Outcome, TxEngine, TxEngineKind, TxError, TxOps};
use crate::workload::{mix64, SplitMix64};
use crate::zipf::{KeyChoice, Zipf};

/// Every account's balance at the start.
pub const INITIAL_BALANCE: u64 = 1_000_000;
/// Transfers move 1..=this, so that an account rarely runs dry even when it is the hot one.
pub const MAX_AMOUNT: u64 = 100;
/// Accounts written per transaction while loading.
const LOAD_CHUNK: u64 = 10_000;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TransferConfig {
    pub accounts: u64,
    pub threads: usize,
    /// Accounts chosen by YCSB's scrambled zipfian (θ = 0.99) rather than uniformly.
    pub zipfian: bool,
    /// Every commit fsynced before it returns (issue 29 asks for synced commits).
    pub sync: bool,
    /// Stop after this many transfers in all, committed or skipped (each retried until one).
    pub transfers: Option<u64>,
    /// Stop starting transfers after this long (a transfer still retrying then is dropped).
    pub seconds: Option<f64>,
    pub seed: u64,
}

/// One engine's run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TransferResult {
    pub engine: String,
    pub options: String,
    pub commits: u64,
    /// Transactions refused for a conflict (each then retried).
    pub conflicts: u64,
    /// Transfers the balance could not cover: rolled back, not retried.
    pub skipped: u64,
    pub seconds: f64,
    pub commits_per_sec: f64,
    /// Conflicts over transactions begun (commits, conflicts and skips).
    pub abort_rate: f64,
    /// Of one transfer, from its first attempt to its commit, retries included.
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    pub latency_max_us: f64,
    pub cpu_seconds: f64,
    /// Writing the accounts, before the clock starts.
    pub load_seconds: f64,
    /// The sum of every balance read after a reopen: `accounts × INITIAL_BALANCE`.
    pub total: u64,
    pub disk_bytes: u64,
}

/// An account's key.
pub fn key(account: u64) -> [u8; 8] {
    account.to_be_bytes()
}

fn balance(value: Option<Vec<u8>>, account: &[u8]) -> Result<u64, TxError> {
    let bytes = value.ok_or_else(|| format!("account {account:02x?} is missing"))?;
    let bytes: [u8; 8] = bytes.as_slice().try_into().map_err(|_| {
        format!(
            "account {account:02x?} holds {} bytes, not a u64",
            bytes.len()
        )
    })?;
    Ok(u64::from_le_bytes(bytes))
}

/// The transaction body every engine runs: `Ok(false)` (roll back) if `from` cannot cover it.
pub fn transfer(tx: &mut dyn TxOps, from: &[u8], to: &[u8], amount: u64) -> Result<bool, TxError> {
    let a = balance(tx.get(from)?, from)?;
    let b = balance(tx.get(to)?, to)?;
    if a < amount {
        return Ok(false);
    }
    let credited = b
        .checked_add(amount)
        .ok_or_else(|| format!("account {to:02x?} overflows"))?;
    tx.put(from, &(a - amount).to_le_bytes())?;
    tx.put(to, &credited.to_le_bytes())?;
    Ok(true)
}

/// Write every account with the initial balance, a chunk per transaction.
fn load(engine: &dyn TxEngine, accounts: u64) -> Result<(), String> {
    let value = INITIAL_BALANCE.to_le_bytes();
    let mut first = 0;
    while first < accounts {
        let end = (first + LOAD_CHUNK).min(accounts);
        let outcome = engine.transact(&mut |tx| {
            for a in first..end {
                tx.put(&key(a), &value)?;
            }
            Ok(true)
        })?;
        if outcome != Outcome::Committed {
            return Err(format!("loading accounts {first}..{end}: {outcome:?}"));
        }
        first = end;
    }
    Ok(())
}

/// The sum of every balance; an account missing or malformed is an error.
pub fn total(engine: &dyn TxEngine, accounts: u64) -> Result<u64, String> {
    let mut sum = 0u64;
    for a in 0..accounts {
        let k = key(a);
        let b = balance(engine.get(&k)?, &k).map_err(|e| match e {
            TxError::Failed(e) => e,
            TxError::Conflict => "a conflict outside a transaction".into(),
        })?;
        sum = sum
            .checked_add(b)
            .ok_or("the balances overflow a u64: money was made")?;
    }
    Ok(sum)
}

/// The conservation check: `Err` names the engine and by how much the total moved.
pub fn check_total(engine: &str, accounts: u64, total: u64) -> Result<(), String> {
    let expected = accounts * INITIAL_BALANCE;
    if total == expected {
        return Ok(());
    }
    Err(format!(
        "{engine}: the balances add up to {total}, not {expected} ({:+}): a transaction was \
         applied in part, twice, or over a stale read — results not trusted",
        total as i128 - expected as i128
    ))
}

/// What one thread counted.
#[derive(Default)]
struct Tally {
    commits: u64,
    conflicts: u64,
    skipped: u64,
    latency: Latency,
}

/// One thread's share of the transfers.
struct Worker<'a> {
    engine: &'a dyn TxEngine,
    choice: &'a KeyChoice,
    /// Transfers started by all threads, against `cfg.transfers`.
    claimed: &'a AtomicU64,
    cfg: &'a TransferConfig,
    seed: u64,
}

impl Worker<'_> {
    fn run(&self, deadline: Option<Instant>) -> Result<Tally, String> {
        let out_of_time = || deadline.is_some_and(|d| Instant::now() >= d);
        let mut rng = SplitMix64::new(self.seed);
        let mut tally = Tally::default();
        loop {
            if out_of_time() {
                break;
            }
            if let Some(n) = self.cfg.transfers {
                if self.claimed.fetch_add(1, Ordering::Relaxed) >= n {
                    break;
                }
            }
            let from = self.choice.next(&mut rng);
            let mut to = self.choice.next(&mut rng);
            while to == from {
                to = self.choice.next(&mut rng);
            }
            let (from, to) = (key(from), key(to));
            let amount = 1 + rng.below(MAX_AMOUNT);
            let began = Instant::now();
            loop {
                match self
                    .engine
                    .transact(&mut |tx| transfer(tx, &from, &to, amount))?
                {
                    Outcome::Committed => tally.commits += 1,
                    Outcome::RolledBack => tally.skipped += 1,
                    Outcome::Conflict => {
                        tally.conflicts += 1;
                        if out_of_time() {
                            break; // given up: its latency is not recorded
                        }
                        continue;
                    }
                }
                tally.latency.record(began.elapsed().as_nanos() as u64);
                break;
            }
        }
        Ok(tally)
    }
}

/// Run the workload on `kind` in `dir` (created empty; left as it ends).
pub fn run(kind: TxEngineKind, dir: &Path, cfg: &TransferConfig) -> Result<TransferResult, String> {
    if cfg.accounts < 2 {
        return Err("a transfer needs at least two accounts".into());
    }
    if cfg.transfers.is_none() && cfg.seconds.is_none() {
        return Err("give a number of transfers or of seconds".into());
    }
    let engine = kind.open(dir, cfg.sync)?;
    let start = Instant::now();
    load(engine.as_ref(), cfg.accounts)?;
    let load_seconds = start.elapsed().as_secs_f64();

    let choice = if cfg.zipfian {
        KeyChoice::Zipfian(Zipf::new(cfg.accounts))
    } else {
        KeyChoice::Uniform(cfg.accounts)
    };
    let claimed = AtomicU64::new(0);
    let barrier = Barrier::new(cfg.threads + 1);
    let deadline = OnceLock::new();
    let cpu_before = measure::cpu_seconds();
    let (tallies, seconds) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..cfg.threads)
            .map(|t| {
                let worker = Worker {
                    engine: engine.as_ref(),
                    choice: &choice,
                    claimed: &claimed,
                    cfg,
                    seed: cfg.seed ^ mix64(t as u64 + 1),
                };
                let (barrier, deadline) = (&barrier, &deadline);
                s.spawn(move || {
                    barrier.wait();
                    worker.run(deadline.get().copied())
                })
            })
            .collect();
        // Set before the barrier lets the threads go, so that every one sees it.
        let start = Instant::now();
        if let Some(secs) = cfg.seconds {
            let _ = deadline.set(start + Duration::from_secs_f64(secs));
        }
        barrier.wait();
        let tallies: Vec<Result<Tally, String>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a transfer thread panicked".into()))
            })
            .collect();
        (tallies, start.elapsed().as_secs_f64())
    });
    let cpu_seconds = measure::cpu_seconds() - cpu_before;
    let mut all = Tally::default();
    for t in tallies {
        let t = t?;
        all.commits += t.commits;
        all.conflicts += t.conflicts;
        all.skipped += t.skipped;
        all.latency.merge(&t.latency);
    }

    // Reopened, so that what is checked is what the engine made durable.
    engine.close()?;
    let engine = kind.open(dir, cfg.sync)?;
    let sum = total(engine.as_ref(), cfg.accounts)?;
    engine.close()?;
    check_total(kind.name(), cfg.accounts, sum)?;

    let begun = all.commits + all.conflicts + all.skipped;
    let us = |q: f64| all.latency.quantile(q) as f64 / 1000.0;
    Ok(TransferResult {
        engine: kind.name().into(),
        options: kind.options_note().into(),
        commits: all.commits,
        conflicts: all.conflicts,
        skipped: all.skipped,
        seconds,
        commits_per_sec: all.commits as f64 / seconds.max(1e-9),
        abort_rate: all.conflicts as f64 / begun.max(1) as f64,
        latency_p50_us: us(0.5),
        latency_p99_us: us(0.99),
        latency_max_us: all.latency.max() as f64 / 1000.0,
        cpu_seconds,
        load_seconds,
        total: sum,
        disk_bytes: measure::dir_bytes(dir),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_fails_loudly_when_money_is_made_or_lost() {
        assert!(check_total("x", 10, 10 * INITIAL_BALANCE).is_ok());
        let err = check_total("x", 10, 10 * INITIAL_BALANCE - 7).unwrap_err();
        assert!(err.contains("-7") && err.contains("not trusted"), "{err}");
    }
}
