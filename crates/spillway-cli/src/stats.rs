//! `spillway stats`: open a store and print its key order, its merge operator, every
//! [`spillway::Stats`] field, and its keyspaces.
//!
//! The engine's counters (bytes written, spills, GETs, ...) count from open, so for a store
//! opened just to look at it they are mostly zero; the tree, data and memory figures describe
//! the store itself. The key order and merge operator at the top are the default keyspace's
//! (the store as it was before keyspaces); "keys" under "Data" is every keyspace's, and the
//! "Keyspaces" list that follows gives each keyspace's order, operator and keys. Keys, the
//! root buffer's included, are counted while a keyspace has at most 100,000 of them, and
//! estimated past that.

use std::path::Path;

use spillway::{Db, Iter, KeyOrder, Keyspace, KeyspaceOptions};

use crate::error::CliError;
use crate::operators;
use crate::report::{self, Keys, Table};
use crate::store;
use crate::tuning::Tuning;

/// Up to this many keys `stats` counts one by one (as the server's DBSIZE does); past it, the
/// store's estimate is the figure, read without visiting every key.
const COUNTED_UP_TO: u64 = 100_000;

/// One keyspace, as the list shows it.
struct Listed {
    /// `None` for the default keyspace.
    name: Option<String>,
    order: KeyOrder,
    operator: Option<String>,
    keys: Keys,
}

pub fn run(dir: &Path, tuning: &Tuning) -> Result<(), CliError> {
    let store = store::open_to_read(dir, tuning)?;
    let order = store.db.key_order();
    let mut listed = vec![Listed {
        name: None,
        order,
        operator: store.operator.clone(),
        keys: keys(&store.db.default_keyspace())?,
    }];
    for name in store.db.keyspaces() {
        listed.push(named(&store.db, name)?);
    }
    // After the keys estimate, which reads every list file: the figures are then whole.
    let s = store.db.stats();
    store.db.close()?;
    let keys = listed.iter().map(|l| l.keys).reduce(Keys::plus);
    let mut t = Table::new();
    t.section(&format!("Store {}", dir.display()))
        .row("key order", order_text(order))
        .row("merge operator", operator_text(&store.operator));
    report::recovery(&mut t, &s);
    report::shape(&mut t, &s);
    report::disk(&mut t, &s, keys.unwrap_or(Keys::Counted(0)));
    report::memory(&mut t, &s);
    report::writes(&mut t, &s);
    report::reads(&mut t, &s);
    report::merges(&mut t, &s);
    // The keyspaces in a table of their own: its labels are their names, up to 255 bytes,
    // which would otherwise widen the label column of every row above. One print, as
    // before, so that `stats | head` finds the pipe closed only after it has written.
    print!("{}\n{}", t.render(), keyspaces(&listed).render());
    Ok(())
}

/// The named keyspace `name`, its order and operator as the manifest records them.
fn named(db: &Db, name: String) -> Result<Listed, CliError> {
    let (order, operator) = store::inspect(db, &name)?;
    // No operator asked for: the handle takes the recorded one, even one this program does
    // not know (whose operands then count as keys that do not fold).
    let ks = db.keyspace(&name, KeyspaceOptions::default().key_order(order))?;
    Ok(Listed {
        keys: keys(&ks)?,
        name: Some(name),
        order,
        operator,
    })
}

/// `(default)` first, then one line per named keyspace, in name order.
fn keyspaces(listed: &[Listed]) -> Table {
    let mut t = Table::new();
    let title = match listed.len() - 1 {
        0 => "Keyspaces (none besides the default; put --keyspace NAME creates one)".to_string(),
        n => format!(
            "Keyspaces ({} besides the default)",
            report::count(n as u64)
        ),
    };
    t.section(&title);
    for l in listed {
        let order = match l.order {
            KeyOrder::Ordered => "ordered",
            KeyOrder::Hashed => "hashed",
        };
        let operator = match &l.operator {
            Some(name) => format!("merge operator {}", operators::describe(name)),
            None => "no merge operator".into(),
        };
        t.row(
            l.name.as_deref().unwrap_or("(default)"),
            format!("{order}, {operator}, keys {}", l.keys.short()),
        );
    }
    t
}

fn order_text(order: KeyOrder) -> &'static str {
    match order {
        KeyOrder::Ordered => "ordered (keys in byte order: range and prefix scans)",
        KeyOrder::Hashed => "hashed (keys placed by hash: point reads, scans in hash order)",
    }
}

fn operator_text(operator: &Option<String>) -> String {
    match operator {
        Some(name) => operators::describe(name),
        None => "none (no merge yet)".into(),
    }
}

/// The keys keyspace `ks` holds: counted while there are few, else its estimate
/// (`Keyspace::estimate_keys`, which unlike `Stats::live_keys` includes the root buffer's).
pub fn keys(ks: &Keyspace) -> Result<Keys, CliError> {
    let estimate = ks.estimate_keys()?;
    if estimate.is_some_and(|n| n > COUNTED_UP_TO) {
        return Ok(Keys::Estimated(estimate.unwrap_or_default()));
    }
    count(ks.iter()?, estimate)
}

/// Count `iter`'s keys up to [`COUNTED_UP_TO`]; past it, `estimate`.
fn count(iter: Iter, estimate: Option<u64>) -> Result<Keys, CliError> {
    let mut n = 0;
    for item in iter {
        match item {
            // A key whose operands do not fold is still a key the store holds.
            Ok(_) | Err(spillway::Error::MergeFailed { .. }) => n += 1,
            Err(e) => return Err(e.into()),
        }
        if n > COUNTED_UP_TO {
            return Ok(estimate.map_or(Keys::MoreThan(COUNTED_UP_TO), Keys::Estimated));
        }
    }
    Ok(Keys::Counted(n))
}
