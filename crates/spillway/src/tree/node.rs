//! A node: a span of positions, its lists (newest first), and children unless it is a leaf.

use std::collections::HashSet;
use std::hash::BuildHasherDefault;
use std::sync::Arc;

use super::selector::Selector;
use crate::error::Result;
use crate::list::sketch::{scale, Estimate};
use crate::list::{IdHasher, ListRef};
use crate::order::Span;

/// A set of key hashes.
type Hashes = HashSet<u64, BuildHasherDefault<IdHasher>>;

#[derive(Clone, Debug)]
pub struct Node {
    /// The positions that belong to this node; siblings' spans never overlap.
    pub span: Span,
    /// Newest first: a key's latest record is in the first list that has it.
    pub lists: Vec<ListRef>,
    /// Leaves only: fast-splits since this leaf's data was last rewritten by a slow-split.
    pub fast_splits: u32,
    /// In position order, covering `span` without gaps. Empty for a leaf.
    pub children: Vec<Node>,
    /// Which lists may hold a key (hashed stores with filters); derived from the lists, so
    /// refreshed whenever they change (see [`refresh_selectors`](Self::refresh_selectors)).
    pub selector: Option<Arc<Selector>>,
}

impl Node {
    pub fn leaf(span: Span) -> Node {
        Node {
            span,
            lists: Vec::new(),
            fast_splits: 0,
            children: Vec::new(),
            selector: None,
        }
    }

    pub fn internal(span: Span, children: Vec<Node>) -> Node {
        Node {
            children,
            ..Node::leaf(span)
        }
    }

    pub fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }

    /// Whether this is a piece of a leaf that was due a slow-split, not yet rewritten: upkeep
    /// fast-splits such a leaf into pieces and rewrites them one a step (see
    /// `Spiller::settle_leaf`), marking each with one fast-split more than the ratio allows
    /// — a mark the manifest keeps with no change of format. A spill that fills a piece
    /// slow-splits it as any leaf past its fast-splits; reopened with a larger ratio, the
    /// pieces are leaves with fast-splits left.
    pub fn owes_rewrite(&self, fast_split_ratio: u32) -> bool {
        self.is_leaf() && self.fast_splits > fast_split_ratio
    }

    /// Start loading the page of `(route, key)` in the node's oldest list: the one most
    /// likely to hold a key (a slow-split leaves a leaf one list as big as the rest together;
    /// later spills add small ones), while the node's selector is still loading.
    pub fn prefetch_likely_page(&self, route: u64, key: &[u8]) {
        if let Some(oldest) = self.lists.last() {
            oldest.prefetch(route, key);
        }
    }

    /// Bytes of the lists in this node: what fills it to capacity.
    pub fn bytes(&self) -> u64 {
        self.lists.iter().map(ListRef::bytes).sum()
    }

    /// What the sketches of the node's lists say of its records (lists written before format
    /// 5 have none, and are left out); `None` if no list has one. Of each list, the samples
    /// ranked below every newer list's theta count — at that smaller rate — so that whether
    /// a newer list holds a sampled key is known exactly: a key is a repeat if a newer
    /// list's sample holds it. (Newer lists' filters could answer for the other samples,
    /// but their false positives add up: with 8–20 lists per leaf of distinct keys, that
    /// estimate put the live share at 0.986–0.99 instead of 1, and the error grows with the
    /// lists.)
    /// The lists' sketches are read if their files were not (see `list::file`).
    pub fn estimate(&self) -> Result<Option<Estimate>> {
        let mut est: Option<Estimate> = None;
        // The samples of every newer list. A sample counted here ranks below each newer list's
        // theta, so a newer list holds its key exactly when that list's sample does: one set
        // answers for all of them (a node of a few hundred small lists, as a small memory
        // budget makes, would otherwise ask every newer list of every sample).
        let sketches = self
            .lists
            .iter()
            .map(|l| l.file.sketch())
            .collect::<Result<Vec<_>>>()?;
        let samples = sketches.iter().flatten().map(|s| s.len()).sum();
        let mut newer = Hashes::with_capacity_and_hasher(samples, Default::default());
        let mut newer_theta = u64::MAX;
        for (list, sketch) in self.lists.iter().zip(sketches) {
            let Some(sketch) = sketch else {
                continue;
            };
            let theta = newer_theta.min(sketch.theta());
            let est = est.get_or_insert_with(Estimate::default);
            for s in sketch.samples_below(theta, list.start, list.end) {
                est.add(s, scale(theta), !newer.contains(&s.hash));
            }
            newer.extend(sketch.samples().map(|s| s.hash));
            newer_theta = theta;
        }
        Ok(est)
    }

    /// The share of the node's bytes in values that expired by `horizon` (see
    /// `list::expiry`; a lower bound, but for views of a shared file, counted pro rata).
    pub fn expired_fraction(&self, horizon: u64) -> f64 {
        let bytes = self.bytes();
        if bytes == 0 {
            return 0.0;
        }
        self.expired_bytes(horizon) / bytes as f64
    }

    /// Bytes of the node's lists in values that expired by `horizon` (see
    /// [`expired_fraction`](Self::expired_fraction)).
    pub fn expired_bytes(&self, horizon: u64) -> f64 {
        self.lists
            .iter()
            .map(|l| {
                let of_file = l.bytes() as f64 / l.file.size().max(1) as f64;
                l.file.expiry().expired_bytes(horizon) as f64 * of_file.min(1.0)
            })
            .sum()
    }

    /// Whether most of the node's records are dead: garbage — repeats of newer records, or
    /// at a leaf (where nothing older lies below) tombstones too — or values that expired by
    /// `horizon`, or both (taken as independent). Collecting such a node now, full or not,
    /// bounds the disk space and filter memory its keys take to about twice their live
    /// size, however often they are overwritten (WB-tree §6) or however fast they expire.
    pub fn mostly_dead(&self, horizon: u64) -> Result<bool> {
        let expired = self.expired_fraction(horizon);
        let threshold = if expired > 0.0 {
            self.dead_threshold()
        } else {
            0.5
        };
        Ok(expired >= threshold || self.live_share(horizon)? < 1.0 - threshold)
    }

    /// The share of the node's records a rewrite would keep, by its sketches: at a leaf
    /// neither repeats nor tombstones, at an internal node not repeats (tombstones go on
    /// down), and not expired by `horizon` (taken as independent). Where the sketches hold
    /// too few samples to say, only what expired counts.
    pub fn live_share(&self, horizon: u64) -> Result<f64> {
        /// Below this many samples the estimate is too rough to act on.
        const MIN_SAMPLES: usize = 16;
        let kept = self
            .estimate()?
            .filter(|e| e.samples >= MIN_SAMPLES)
            .map_or(1.0, |e| {
                if self.is_leaf() {
                    e.live_fraction()
                } else {
                    e.distinct_fraction()
                }
            });
        Ok(kept * (1.0 - self.expired_fraction(horizon)))
    }

    /// The share of dead bytes — expired among them — at which this node is collected:
    /// between 0.3 and 0.45, fixed by where the node starts. Keys that expire at a steady
    /// rate age every leaf alike; one threshold for all would collect the whole tree in one
    /// spill, whose old and new lists are then on disk together (twice the tree, for a
    /// moment). Spread thresholds spread the collections over spills.
    pub fn dead_threshold(&self) -> f64 {
        let h = self.span.lo.route ^ crate::order::KeyOrder::Hashed.route(&self.span.lo.key);
        let spread = (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64;
        0.3 + 0.15 * spread
    }

    /// The earliest time a message in the node's lists was written (see `list::expiry`).
    pub fn oldest_message(&self) -> u64 {
        self.lists
            .iter()
            .map(|l| l.file.expiry().oldest_message)
            .min()
            .unwrap_or(crate::record::NEVER)
    }

    /// The child whose span holds position `p`.
    pub fn child_for(&self, p: (u64, &[u8])) -> Option<&Node> {
        let i = self.children.partition_point(|c| c.span.lo.le(p));
        i.checked_sub(1).map(|i| &self.children[i])
    }

    /// The child whose span holds the positions just below `p` (the last child starting
    /// below it): where a backward scan ending at `p` begins.
    pub fn child_below(&self, p: (u64, &[u8])) -> Option<&Node> {
        let i = self
            .children
            .partition_point(|c| crate::order::cmp_pos(c.span.lo.as_pos(), p).is_lt());
        i.checked_sub(1).map(|i| &self.children[i])
    }

    pub fn height(&self) -> u32 {
        1 + self.children.iter().map(Node::height).max().unwrap_or(0)
    }

    pub fn visit<'a>(&'a self, f: &mut impl FnMut(&'a Node)) {
        f(self);
        for c in &self.children {
            c.visit(f);
        }
    }

    /// [`visit`](Self::visit), in the same order, with each node mutable.
    pub fn visit_mut(&mut self, f: &mut impl FnMut(&mut Node)) {
        f(self);
        for c in &mut self.children {
            c.visit_mut(f);
        }
    }

    pub fn check(&self, fan_out: usize, is_root: bool) -> Result<(), String> {
        let here = format!("node {}", self.span);
        if self.span.is_empty() {
            return Err(format!("{here}: empty span"));
        }
        if is_root && !self.lists.is_empty() {
            return Err("the root holds lists".into());
        }
        for l in &self.lists {
            let inside = self.span.lo <= l.span.lo
                && match (&self.span.hi, &l.span.hi) {
                    (None, _) => true,
                    (Some(_), None) => false,
                    (Some(n), Some(h)) => h <= n,
                };
            if !inside || l.start > l.end || l.end > l.file.pages() {
                return Err(format!(
                    "{here}: list of file {} reaches outside",
                    l.file.id()
                ));
            }
        }
        if self.is_leaf() {
            return Ok(());
        }
        if self.children.len() > fan_out {
            return Err(format!(
                "{here}: {} children over fan-out {fan_out}",
                self.children.len()
            ));
        }
        let mut expect = Some(self.span.lo.clone());
        for (i, c) in self.children.iter().enumerate() {
            if expect.as_ref() != Some(&c.span.lo) {
                return Err(format!(
                    "{here}: child {i} starts at {}, not where the one before ends",
                    c.span.lo
                ));
            }
            c.check(fan_out, false)?;
            expect = c.span.hi.clone();
        }
        if expect != self.span.hi {
            return Err(format!("{here}: children do not reach the end of the span"));
        }
        let depth = self.children[0].height();
        if self.children.iter().any(|c| c.height() != depth) {
            return Err(format!("{here}: children at different depths"));
        }
        Ok(())
    }
}
