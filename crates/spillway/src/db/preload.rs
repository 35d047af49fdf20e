//! Node selectors and list files' metadata read back from disk after an open, ahead of the
//! GETs that need them (see `tree::preload`): in the background
//! (`Options::preload_selectors`), or in the caller's thread ([`Db::load_selectors`]).

use super::{Db, Inner};
use crate::error::Result;
use crate::tree::Preload;
use crate::util::worker::{Stoppable, Worker};

/// The background preload's state: whether its owner, the store, is closing.
pub(super) struct Preloading {
    stop: bool,
}

impl Stoppable for Preloading {
    fn stop(&mut self) {
        self.stop = true;
    }
}

impl Inner {
    /// Start the background preload of the selectors and lists the open did not read, if there are
    /// any and the options ask for it. Best effort: a failure to start a thread leaves them
    /// to be read at their first use.
    pub(super) fn start_preload(&self) {
        if !self.opts.preload_selectors {
            return;
        }
        let version = self.version();
        let preload = Preload::of(version.parts.iter().map(|p| &*p.tree));
        if preload.is_empty() {
            return;
        }
        let worker = Worker::start(
            "spillway-preload",
            Preloading { stop: false },
            move |shared| {
                // An error is left to the GET that needs the tier or list: it meets it again.
                let _ = preload.run(&|| shared.lock().stop);
            },
        );
        *crate::util::sync::lock(&self.preload) = worker.ok();
    }

    /// Stop the background preload, if it runs, and wait for it (at most one read).
    pub(super) fn stop_preload(&self) {
        let worker = crate::util::sync::lock(&self.preload).take();
        drop(worker);
    }
}

impl Db {
    /// Read every node selector still on disk into memory now, in this thread, and then the
    /// metadata of every list file not read yet: afterwards a GET of a hashed store reads one
    /// page from the device, none for most absent keys. An open reads no selector and no list
    /// file (so that it takes well under a second at any size); each is read at its first
    /// use, or by the background preload
    /// ([`Options::preload_selectors`](crate::Options::preload_selectors)), which this does
    /// not wait for: call it before serving reads whose latency matters. Returns at once when
    /// every selector and list is in memory (ordered stores have no selectors). A selector
    /// whose saved copy is damaged is built again from its lists, as at its first use; an
    /// error is one reading those lists. A list file that cannot be read is passed over (see
    /// [`Stats::lists_read`](crate::Stats::lists_read)): the reads that reach it fail.
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spillway::Db::open(dir.path(), Default::default())?;
    /// db.put("k", "v")?;
    /// db.load_selectors()?;
    /// let stats = db.stats();
    /// assert_eq!(stats.selector_tiers_unread, 0);
    /// assert_eq!(stats.lists_read, stats.files);
    /// # Ok(()) }
    /// ```
    pub fn load_selectors(&self) -> Result<()> {
        let version = self.inner.version();
        Preload::of(version.parts.iter().map(|p| &*p.tree)).run(&crate::tree::never)
    }
}
