//! `SELECTORS`: which saved tiers (see `selector_file`, `saved_tier`) make each node's
//! selector, for the trees of the manifest. An open reads the index alone — each node's saved
//! tiers are grouped as tiers in memory merge, each group read at its first use (see
//! `unread_tier`) — and builds from the lists' fingerprints only what the index does not
//! give: open time is then bounded by the tree's metadata, not by its records.
//!
//! It is rewritten before every manifest, unsynced and replaced by a rename: derived data,
//! checked on read. A node takes a saved selector only if it was saved for a node of the same
//! keyspace, depth and span, with the same selector parameters; the selector is then brought up
//! to date with the node's lists as after any change (`Selector::refresh` keeps the tiers
//! whose lists are all still there and reads the fingerprints of the others). So an index one
//! spill ahead of the manifest — a crash between the two writes — costs the reads of a few
//! lists, and a missing or damaged index costs a full build, as an open did before.
//!
//! ```text
//! index   = "SPWSIDX3" | crc32c u32 of payload | payload length u64 | payload
//! payload = tiers u32 | tier × tiers | trees u32 | tree × trees
//! tier    = file u64 | offset u64 | len u32 | crc u32 | entries u64 | slots u32
//!         | list file id u64 × slots
//! tree    = keyspace id u32 | r u32 | node size u64 | nodes u32 | node × nodes
//!           (a tree with no selectors: r = node size = 0)
//! node    = depth u32 | span | shift u32 | base u64 | width u64 | lo u64 | hi u64
//!         | covered u32 | list file id u64 × covered | tiers u32 | tier number u32 × tiers
//! span    = pivot | 0 or (1 | pivot)       pivot = route u64 | key length u32 | key
//! ```

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use super::saved_tier::SavedTier;
use super::selector::{merge_groups, Selector, SelectorParams, Tier};
use super::selector_file::{Saved, SelectorFile};
use super::unread_tier::Unread;
use super::{Node, Tree};
use crate::error::Result;
use crate::files;
use crate::io;
use crate::list::ListFile;
use crate::order::Pivot;
use crate::stats::Counters;

const MAGIC: &[u8; 8] = b"SPWSIDX3";
const HEADER_LEN: usize = 20;

/// What [`load`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Nodes that took a saved selector.
    pub nodes: u64,
    /// Why what was saved could not all be used (a missing or damaged index); empty when it
    /// could, or when nothing was saved. (A damaged tier is found at its first use.)
    pub problems: Vec<String>,
}

/// Write the index of the saved selectors of `trees` (by keyspace id; those of a tree with
/// `None` params are left out), replacing the last one. Only nodes whose every tier is saved are named.
pub fn write(
    dir: &Path,
    trees: &[(u32, &Tree, Option<SelectorParams>)],
    counters: &Arc<Counters>,
) -> Result<()> {
    let mut tiers: Vec<&Arc<SavedTier>> = Vec::new();
    let mut number: HashMap<*const SavedTier, u32> = HashMap::new();
    let mut body = Vec::new();
    body.extend_from_slice(&(trees.len() as u32).to_le_bytes());
    for (id, tree, params) in trees {
        let mut nodes = Vec::new();
        if params.is_some() {
            walk(&tree.root, 0, &mut |n, depth| {
                if let Some(s) = &n.selector {
                    if !s.persisted.is_empty() && s.persisted.iter().all(|t| !t.unsaved()) {
                        nodes.push((n, depth, s));
                    }
                }
            });
        }
        let (r, node_size) = params.map_or((0, 0), |p| (p.r, p.node_size as u64));
        body.extend_from_slice(&id.to_le_bytes());
        body.extend_from_slice(&r.to_le_bytes());
        body.extend_from_slice(&node_size.to_le_bytes());
        body.extend_from_slice(&(nodes.len() as u32).to_le_bytes());
        for (n, depth, s) in nodes {
            body.extend_from_slice(&depth.to_le_bytes());
            encode_pivot(&mut body, &n.span.lo);
            match &n.span.hi {
                Some(hi) => {
                    body.push(1);
                    encode_pivot(&mut body, hi);
                }
                None => body.push(0),
            }
            body.extend_from_slice(&s.shift.to_le_bytes());
            for v in [s.base, s.width, s.lo, s.hi] {
                body.extend_from_slice(&v.to_le_bytes());
            }
            // The lists the saved tiers hold, by position (`Selector::covered`).
            let held: HashSet<u64> = (s.persisted.iter())
                .flat_map(|t| t.files.iter().copied())
                .collect();
            body.extend_from_slice(&(n.lists.len() as u32).to_le_bytes());
            for l in &n.lists {
                let id = Some(l.file.id()).filter(|id| held.contains(id));
                body.extend_from_slice(&id.unwrap_or(u64::MAX).to_le_bytes());
            }
            body.extend_from_slice(&(s.persisted.len() as u32).to_le_bytes());
            for t in &s.persisted {
                let i = *number.entry(Arc::as_ptr(t)).or_insert_with(|| {
                    tiers.push(t);
                    tiers.len() as u32 - 1
                });
                body.extend_from_slice(&i.to_le_bytes());
            }
        }
    }
    let mut payload = Vec::with_capacity(4 + tiers.len() * 24 + body.len());
    payload.extend_from_slice(&(tiers.len() as u32).to_le_bytes());
    for t in tiers {
        let s = t.saved().expect("only saved tiers are named");
        payload.extend_from_slice(&s.file.id().to_le_bytes());
        payload.extend_from_slice(&s.offset.to_le_bytes());
        payload.extend_from_slice(&s.len.to_le_bytes());
        payload.extend_from_slice(&s.crc.to_le_bytes());
        payload.extend_from_slice(&t.n.to_le_bytes());
        payload.extend_from_slice(&(t.files.len() as u32).to_le_bytes());
        for id in t.files.iter() {
            payload.extend_from_slice(&id.to_le_bytes());
        }
    }
    payload.extend_from_slice(&body);
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&crc_fast::crc32_iscsi(&payload).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&payload);
    io::replace_unsynced(dir, files::SELECTORS, &out, counters)
}

/// Save the tiers of `trees` not saved yet (one selector file a tree, numbered from
/// `next_file`), then write the index if any were — or if `index_anyway`. Returns whether
/// tiers were saved.
pub fn save(
    dir: &Path,
    next_file: &std::sync::atomic::AtomicU64,
    trees: &[(u32, &Tree, Option<SelectorParams>)],
    counters: &Arc<Counters>,
    index_anyway: bool,
) -> Result<bool> {
    let mut wrote = false;
    for (_, tree, _) in trees {
        wrote |= tree.save_selectors(dir, next_file, counters)?;
    }
    if wrote || index_anyway {
        write(dir, trees, counters)?;
    }
    Ok(wrote)
}

/// A tier the index names.
struct TierRef {
    file: u64,
    offset: u64,
    len: u32,
    crc: u32,
    n: u64,
    lists: Vec<u64>,
}

/// A node's selector as the index describes it.
struct NodeRef {
    /// Below the root: a node with one child shares its span.
    depth: u32,
    lo: Pivot,
    hi: Option<Pivot>,
    shift: u32,
    base: u64,
    width: u64,
    span: (u64, u64),
    covered: Box<[u64]>,
    tiers: Vec<u32>,
}

/// Give each node of `trees` (with the selector parameters each is opened with) the selector
/// saved for it. Its tiers are read at their first use, not here (see `selector::Unread`):
/// an open reads the index alone. Never fails: what cannot be used is left for
/// `Tree::refresh_selectors` to build, and said in [`Loaded::problems`].
pub fn load(
    dir: &Path,
    trees: &mut [(u32, &mut Tree, Option<SelectorParams>)],
    counters: &Arc<Counters>,
) -> Loaded {
    let mut loaded = Loaded::default();
    let path = dir.join(files::SELECTORS);
    let (tier_refs, saved_trees) = match read_index(&path) {
        Ok(Some(index)) => index,
        Ok(None) => return loaded,
        Err(problem) => {
            loaded.problems.push(problem);
            return loaded;
        }
    };
    // By keyspace: a keyspace created, dropped or swapped since leaves the others' selectors.
    let saved_trees: HashMap<u32, &((u32, u64), Vec<NodeRef>)> =
        saved_trees.iter().map(|(id, t)| (*id, t)).collect();
    let mut matches = Vec::with_capacity(trees.len());
    for (id, tree, params) in trees.iter() {
        let Some((saved_params, nodes)) = saved_trees.get(id).copied() else {
            matches.push(Vec::new());
            continue;
        };
        let same = params.is_some_and(|p| (p.r, p.node_size as u64) == *saved_params);
        let by_span: HashMap<(u32, &Pivot, Option<&Pivot>), &NodeRef> = nodes
            .iter()
            .filter(|_| same)
            .map(|n| ((n.depth, &n.lo, n.hi.as_ref()), n))
            .collect();
        let mut found = Vec::new();
        walk(&tree.root, 0, &mut |n, depth| {
            let saved = by_span
                .get(&(depth, &n.span.lo, n.span.hi.as_ref()))
                .copied();
            found.push(saved);
        });
        matches.push(found);
    }
    // Saved tiers are shared by nodes of one selector (a split's halves), and so are the tiers
    // an open groups them into: each made once, on the first.
    type Record = (Arc<SavedTier>, Box<[Arc<ListFile>]>, (u32, u64, u64));
    let mut records: HashMap<u32, Option<Record>> = HashMap::new();
    // By the cut and the saved tiers grouped.
    type Group = ((u32, u64, u64), Vec<u32>);
    let mut grouped: HashMap<Group, Arc<Tier>> = HashMap::new();
    let mut files: HashMap<u64, Arc<SelectorFile>> = HashMap::new();
    for ((_, tree, _), found) in trees.iter_mut().zip(matches) {
        if found.is_empty() {
            continue;
        }
        let lists: HashMap<u64, Arc<ListFile>> = tree
            .files()
            .into_iter()
            .map(|(id, f)| (id, f.clone()))
            .collect();
        let mut found = found.into_iter();
        tree.root.visit_mut(&mut |n| {
            let Some(s) = found.next().expect("one per node") else {
                return;
            };
            let cut = (s.shift, s.base, s.width);
            let mut parts = Vec::with_capacity(s.tiers.len());
            for &i in &s.tiers {
                let record = records.entry(i).or_insert_with(|| {
                    let r = &tier_refs[i as usize];
                    let lists: Option<Box<[Arc<ListFile>]>> =
                        r.lists.iter().map(|id| lists.get(id).cloned()).collect();
                    let file = files
                        .entry(r.file)
                        .or_insert_with(|| SelectorFile::existing(dir, r.file));
                    let saved = Saved {
                        file: file.clone(),
                        offset: r.offset,
                        len: r.len,
                        crc: r.crc,
                    };
                    let lists = lists.filter(|l| !l.is_empty())?;
                    let ids = lists.iter().map(|l| l.id()).collect();
                    Some((SavedTier::written(ids, r.n, saved), lists, cut))
                });
                // A saved tier names its lists, and belongs to selectors of one cut.
                match record {
                    Some((t, l, c)) if *c == cut => parts.push((i, t.clone(), l.clone())),
                    _ => return,
                }
            }
            if parts.is_empty() {
                return;
            }
            // Grouped as the tiers in memory merge: lookups read as few as before the close.
            let sizes: Vec<(u64, usize)> = (parts.iter())
                .map(|(_, t, _)| (t.n, t.files.len()))
                .collect();
            let mut tiers = Vec::new();
            for group in merge_groups(&sizes) {
                let key = (cut, group.iter().map(|&g| parts[g].0).collect::<Vec<u32>>());
                let tier = grouped.entry(key).or_insert_with(|| {
                    let members = (group.iter())
                        .map(|&g| (parts[g].1.clone(), parts[g].2.clone()))
                        .collect();
                    Arc::new(Tier::unread(Unread::new(members, cut, counters.clone())))
                });
                tiers.push(tier.clone());
            }
            let persisted = parts.into_iter().map(|(_, t, _)| t).collect();
            n.selector = Some(Arc::new(Selector {
                shift: s.shift,
                base: s.base,
                width: s.width,
                lo: s.span.0,
                hi: s.span.1,
                tiers,
                covered: s.covered.clone(),
                persisted,
            }));
            loaded.nodes += 1;
        });
    }
    loaded
}

/// The index at `path`: `None` if there is none, the problem if it cannot be read or is
/// damaged.
fn read_index(path: &Path) -> std::result::Result<Option<(Vec<TierRef>, Trees)>, String> {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("reading {}: {e}", path.display())),
    };
    decode(&data)
        .map(Some)
        .ok_or_else(|| format!("{} is damaged or not an index of selectors", path.display()))
}

/// Each tree's keyspace id, selector parameters (`r`, node size) and nodes.
type Trees = Vec<(u32, ((u32, u64), Vec<NodeRef>))>;

fn decode(data: &[u8]) -> Option<(Vec<TierRef>, Trees)> {
    if data.len() < HEADER_LEN || &data[..8] != MAGIC {
        return None;
    }
    let crc = u32::from_le_bytes(data[8..12].try_into().ok()?);
    let len = u64::from_le_bytes(data[12..20].try_into().ok()?);
    let payload = &data[HEADER_LEN..];
    if payload.len() as u64 != len || crc_fast::crc32_iscsi(payload) != crc {
        return None;
    }
    let mut d = Decoder(payload);
    let mut refs = Vec::new();
    for _ in 0..d.u32()? {
        refs.push(TierRef {
            file: d.u64()?,
            offset: d.u64()?,
            len: d.u32()?,
            crc: d.u32()?,
            n: d.u64()?,
            lists: (0..d.u32()?).map(|_| d.u64()).collect::<Option<_>>()?,
        });
    }
    let mut trees = Vec::new();
    for _ in 0..d.u32()? {
        let id = d.u32()?;
        let params = (d.u32()?, d.u64()?);
        let mut nodes = Vec::new();
        for _ in 0..d.u32()? {
            let depth = d.u32()?;
            let lo = d.pivot()?;
            let hi = match d.take(1)?[0] {
                0 => None,
                1 => Some(d.pivot()?),
                _ => return None,
            };
            let shift = d.u32()?;
            let (base, width, slo, shi) = (d.u64()?, d.u64()?, d.u64()?, d.u64()?);
            let covered = (0..d.u32()?).map(|_| d.u64()).collect::<Option<_>>()?;
            let tiers: Vec<u32> = (0..d.u32()?).map(|_| d.u32()).collect::<Option<_>>()?;
            if shift >= 64 || tiers.iter().any(|&t| t as usize >= refs.len()) {
                return None;
            }
            nodes.push(NodeRef {
                depth,
                lo,
                hi,
                shift,
                base,
                width,
                span: (slo, shi),
                covered,
                tiers,
            });
        }
        trees.push((id, (params, nodes)));
    }
    d.0.is_empty().then_some((refs, trees))
}

/// Call `f` with every node under `node` (at `depth`) and its depth, in `Node::visit`'s order.
fn walk<'a>(node: &'a Node, depth: u32, f: &mut impl FnMut(&'a Node, u32)) {
    f(node, depth);
    for c in &node.children {
        walk(c, depth + 1, f);
    }
}

struct Decoder<'a>(&'a [u8]);

impl<'a> Decoder<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn pivot(&mut self) -> Option<Pivot> {
        let route = self.u64()?;
        let len = self.u32()? as usize;
        Some(Pivot::new(route, self.take(len)?))
    }
}

fn encode_pivot(out: &mut Vec<u8>, p: &Pivot) {
    out.extend_from_slice(&p.route.to_le_bytes());
    out.extend_from_slice(&(p.key.len() as u32).to_le_bytes());
    out.extend_from_slice(&p.key);
}

/// What [`verify`] found of the saved selectors.
#[derive(Debug, Default)]
pub struct Verified {
    /// Saved selectors that would answer wrongly (a key's list not named for it).
    pub problems: Vec<String>,
    /// What cannot be used and so is built again at the next open: harmless.
    pub notes: Vec<String>,
    /// The selector files the index names: any other is a leftover.
    pub files: BTreeSet<u64>,
}

/// Verify the saved selectors of `trees` (as the manifest holds them): the index and every
/// tier it names read back, and every saved selector names every list for each key the list
/// holds (see `Selector::verify`). Selector parameters are the open's to choose, so each
/// tree's saved ones are taken as they are.
pub fn verify(dir: &Path, trees: &[(u32, &Tree)]) -> Verified {
    let mut out = Verified::default();
    let path = dir.join(files::SELECTORS);
    let (refs, saved_trees) = match read_index(&path) {
        Ok(Some(index)) => index,
        Ok(None) => return out,
        Err(problem) => {
            out.notes.push(format!(
                "{problem}; the next open builds the selectors from the lists"
            ));
            return out;
        }
    };
    out.files = refs.iter().map(|r| r.file).collect();
    let saved: HashMap<u32, (u32, u64)> =
        saved_trees.iter().map(|(id, (p, _))| (*id, *p)).collect();
    let mut copies: Vec<(u32, Tree)> = trees.iter().map(|(id, t)| (*id, (*t).clone())).collect();
    for (_, c) in &mut copies {
        c.root.visit_mut(&mut |n| n.selector = None);
    }
    let mut with: Vec<_> = copies
        .iter_mut()
        .map(|(id, t)| {
            let params = saved
                .get(id)
                .filter(|(_, size)| *size > 0)
                .map(|&(r, size)| SelectorParams {
                    r,
                    node_size: size as usize,
                });
            (*id, t, params)
        })
        .collect();
    let loaded = load(dir, &mut with, &Arc::default());
    out.notes.extend(
        loaded
            .problems
            .into_iter()
            .map(|p| format!("{p}; the next open builds what it cannot read")),
    );
    let mut read = std::collections::HashSet::new();
    for (t, tree) in &copies {
        tree.root.visit(&mut |n| {
            let Some(s) = &n.selector else { return };
            for tier in &s.tiers {
                let Some(u) = tier.unread_part() else {
                    continue;
                };
                // Read as a GET reads it (built from fingerprints if its record is damaged),
                // then verified below with the rest.
                if read.insert(Arc::as_ptr(tier)) {
                    match u.load() {
                        Ok(None) => {}
                        Ok(Some(e)) => out.notes.push(format!(
                            "{e}; built from the lists' fingerprints when first used"
                        )),
                        Err(e) => out.problems.push(e.to_string()),
                    }
                }
            }
            match s.verify(n) {
                Ok(None) => {}
                Ok(Some(why)) => out.problems.push(format!(
                    "{}: the saved selector of node {} of keyspace {t} is wrong: {why}",
                    path.display(),
                    n.span
                )),
                Err(e) => out.problems.push(e.to_string()),
            }
        });
    }
    out
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::list::{hashed_test_list, Handles, ListRef};
    use crate::order::Span;
    use crate::tree::{SelectorRoom, TierFile};
    use std::sync::atomic::AtomicU64;

    /// A tree of one leaf of three lists, its selector built and saved, and the index written.
    fn saved_tree(dir: &Path, params: SelectorParams) -> Tree {
        let counters = Arc::new(Counters::default());
        let handles = Arc::new(Handles::with_capacity(64, counters.clone()));
        let mut leaf = Node::leaf(Span::all());
        for id in 0..3u64 {
            let (file, _) = hashed_test_list(dir, id, 3000, 512, (1 << 20, 3), &counters, &handles);
            leaf.lists.insert(0, ListRef::new(file, Span::all()));
        }
        let mut tree = Tree::new();
        tree.root.children = vec![leaf];
        let room_file = TierFile::new(dir, counters.clone());
        let room = SelectorRoom::for_test(&room_file);
        let built = tree
            .refresh_selectors(
                Some(params),
                &crate::util::cores::Cores::new(1),
                &crate::tree::Rebuilds::none(),
                &room,
            )
            .unwrap();
        assert!(built > 0);
        tree.save_selectors(dir, &AtomicU64::new(100), &counters)
            .unwrap();
        write(dir, &[(0, &tree, Some(params))], &counters).unwrap();
        tree
    }

    #[test]
    fn saved_selectors_load_as_they_were_and_verify() {
        let dir = tempfile::tempdir().unwrap();
        let params = SelectorParams {
            r: 8,
            node_size: 1 << 20,
        };
        let tree = saved_tree(dir.path(), params);
        let mut copy = tree.clone();
        copy.root.visit_mut(&mut |n| n.selector = None);
        let loaded = load(
            dir.path(),
            &mut [(0, &mut copy, Some(params))],
            &Arc::default(),
        );
        assert_eq!((loaded.nodes, loaded.problems.len()), (1, 0));
        let (a, b) = (&tree.root.children[0], &copy.root.children[0]);
        let (a, b) = (a.selector.as_ref().unwrap(), b.selector.as_ref().unwrap());
        for route in (0..u64::MAX - (1 << 52)).step_by(1 << 52) {
            let (ca, cb) = (a.candidates(route).unwrap(), b.candidates(route).unwrap());
            for id in 0..3 {
                assert_eq!(ca.may_hold(id), cb.may_hold(id), "route {route:#x}");
            }
        }
        let v = verify(dir.path(), &[(0, &tree)]);
        assert!(v.problems.is_empty() && v.notes.is_empty(), "{v:?}");
        assert_eq!(v.files.len(), 1);
    }

    /// A saved selector that reads back but lacks a list's entries is a problem to `check`.
    #[test]
    fn a_saved_selector_missing_entries_fails_verification() {
        let dir = tempfile::tempdir().unwrap();
        let params = SelectorParams {
            r: 8,
            node_size: 1 << 20,
        };
        let mut tree = saved_tree(dir.path(), params);
        let leaf = &mut tree.root.children[0];
        let s = leaf.selector.as_ref().unwrap();
        assert!(s.tiers.len() >= 2 && s.tiers.iter().all(|t| t.files.len() == 1));
        // A saved tier naming the first list but holding the second one's entries.
        let (first, second) = (&s.tiers[0], &s.tiers[1]);
        let (_, seq) = Tier::decode_body(&second.body().unwrap()).unwrap();
        let lying = Tier::in_memory(seq, first.files.clone(), first.width);
        let mut persisted = s.persisted.clone();
        let at = persisted
            .iter()
            .position(|p| p.files == first.files)
            .unwrap();
        persisted[at] = SavedTier::pending(&lying).unwrap();
        let wrong = Selector {
            shift: s.shift,
            base: s.base,
            width: s.width,
            lo: s.lo,
            hi: s.hi,
            tiers: s.tiers.clone(),
            covered: s.covered.clone(),
            persisted,
        };
        leaf.selector = Some(Arc::new(wrong));
        let counters = Arc::default();
        assert!(tree
            .save_selectors(dir.path(), &AtomicU64::new(200), &counters)
            .unwrap());
        write(dir.path(), &[(0, &tree, Some(params))], &counters).unwrap();
        let v = verify(dir.path(), &[(0, &tree)]);
        assert_eq!(v.problems.len(), 1, "{v:?}");
    }

    #[test]
    fn an_index_for_other_params_or_trees_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let params = SelectorParams {
            r: 8,
            node_size: 1 << 20,
        };
        let tree = saved_tree(dir.path(), params);
        let other = SelectorParams { r: 9, ..params };
        let mut copy = tree.clone();
        copy.root.visit_mut(&mut |n| n.selector = None);
        let loaded = load(
            dir.path(),
            &mut [(0, &mut copy, Some(other))],
            &Arc::default(),
        );
        assert_eq!(loaded.nodes, 0);
        // Trees are matched by keyspace: one the index does not know takes nothing.
        let (mut a, mut b) = (copy.clone(), copy.clone());
        let loaded = load(
            dir.path(),
            &mut [(0, &mut a, Some(params)), (5, &mut b, Some(params))],
            &Arc::default(),
        );
        assert_eq!((loaded.nodes, loaded.problems.len()), (1, 0));
        assert!(a.root.children[0].selector.is_some() && b.root.children[0].selector.is_none());
    }
}
