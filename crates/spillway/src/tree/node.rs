//! A node: a route range, its lists (newest first), and children unless it is a leaf.

use crate::list::ListRef;

#[derive(Clone, Debug)]
pub struct Node {
    /// Routes `lo..=hi` belong to this node; siblings' ranges never overlap.
    pub lo: u64,
    pub hi: u64,
    /// Newest first: a key's latest record is in the first list that has it.
    pub lists: Vec<ListRef>,
    /// Leaves only: fast-splits since this leaf's data was last rewritten by a slow-split.
    pub fast_splits: u32,
    /// Ordered by route, covering `lo..=hi` without gaps. Empty for a leaf.
    pub children: Vec<Node>,
}

impl Node {
    pub fn leaf(lo: u64, hi: u64) -> Node {
        Node {
            lo,
            hi,
            lists: Vec::new(),
            fast_splits: 0,
            children: Vec::new(),
        }
    }

    pub fn internal(lo: u64, hi: u64, children: Vec<Node>) -> Node {
        Node {
            lo,
            hi,
            lists: Vec::new(),
            fast_splits: 0,
            children,
        }
    }

    pub fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }

    /// Bytes of the lists in this node: what fills it to capacity.
    pub fn bytes(&self) -> u64 {
        self.lists.iter().map(ListRef::bytes).sum()
    }

    pub fn child_for(&self, route: u64) -> Option<&Node> {
        let i = self.children.partition_point(|c| c.hi < route);
        self.children.get(i)
    }

    pub fn height(&self) -> u32 {
        1 + self.children.iter().map(Node::height).max().unwrap_or(0)
    }

    pub fn visit(&self, f: &mut impl FnMut(&Node)) {
        f(self);
        for c in &self.children {
            c.visit(f);
        }
    }

    pub fn check(&self, fan_out: usize, is_root: bool) -> Result<(), String> {
        let here = format!("node {:#x}..={:#x}", self.lo, self.hi);
        if self.lo > self.hi {
            return Err(format!("{here}: empty range"));
        }
        if is_root && !self.lists.is_empty() {
            return Err("the root holds lists".into());
        }
        for l in &self.lists {
            if l.lo < self.lo || l.hi > self.hi || l.start > l.end || l.end > l.file.pages() {
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
        let mut expect = self.lo;
        for (i, c) in self.children.iter().enumerate() {
            if c.lo != expect {
                return Err(format!(
                    "{here}: child {i} starts at {:#x}, expected {expect:#x}",
                    c.lo
                ));
            }
            c.check(fan_out, false)?;
            expect = c.hi.wrapping_add(1);
        }
        if self.children.last().map(|c| c.hi) != Some(self.hi) {
            return Err(format!(
                "{here}: children do not reach the end of the range"
            ));
        }
        let depth = self.children[0].height();
        if self.children.iter().any(|c| c.height() != depth) {
            return Err(format!("{here}: children at different depths"));
        }
        Ok(())
    }
}
