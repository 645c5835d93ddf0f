//! `graph-bfs`: Graph500's breadth-first search (kernel 2) over a Kronecker graph,
//! run as the benchmark's sequential reference code (`seq-csr`) runs it. Rainbow
//! evaluates Graph500 at a 27.4 GB footprint (§II-B Table I, §IV-A Table V), HMM-V
//! at 19 GB and 76 GB (§5.3.2, §5.7, §5.8 Table 6, §5.9).
//!
//! # Layout (`seq-csr`, `int64_t` everywhere)
//! In allocation order, each array its own mapping:
//! - `xoff`: `2·(N + 1)` words, the start and end of each vertex's list;
//! - `xadj`: one word per adjacency slot, `2 · edge_factor · N` (see
//!   [`super::graph`]: lists keep the place their raw degree gave them);
//! - `bfs_tree`: the parent of each vertex, −1 when not yet reached;
//! - `vlist`: the queue of reached vertices.
//!
//! That is `16 + 16 · edge_factor + 16` bytes per vertex, 288 with Graph500's
//! edge factor 16, so a 1 GiB footprint gives scale 21 (2 M vertices, 604 MB).
//!
//! # One search, as `make_bfs_tree` does it
//! 1. `bfs_tree[k] = -1` for every vertex: a vectorized fill.
//! 2. `vlist[0] = root; bfs_tree[root] = root`.
//! 3. For each queue entry `v = vlist[k]` in order: load `xoff[2v]` and
//!    `xoff[2v + 1]`; for each slot of the list: load `j = xadj[slot]`, load
//!    `bfs_tree[j]`, and when it is −1 store `bfs_tree[j] = v` and `vlist[tail++] = j`.
//!
//! The queue is processed level after level in this single sweep, exactly as the
//! reference's loop over `k1..k2` does. Graph construction (kernel 1) and the
//! validation of each tree are not part of the trace.
//!
//! Roots are drawn from the core's stream generator among the vertices with at
//! least one edge other than a self-loop (Graph500's rule for search keys),
//! `graph.roots` of them, and searched in turn, over
//! and over, until `refs` references are out. Cores of one tenant share the graph
//! and the arrays and each runs its own searches.
//!
//! # Instructions (the compiled inner loop)
//! Per edge: 5 before the `xadj` load (loop increment, compare, branch, and the
//! compare and branch that tested the previous edge's parent), 0 before the
//! `bfs_tree` load (the index scaling folds into the address), 0 before storing
//! the parent and 1 (the queue increment) before the `vlist` store. Per queue entry:
//! 3 before the `vlist` load (loop control), 1 before the `xoff` loads (doubling
//! `v`). The fill: 3 per 32-byte store.
//!
//! # Host memory
//! The graph ([`super::graph`]: `8 · edge_factor + 20` bytes per vertex) plus 8
//! bytes per vertex per core for the host's parent array and queue: 164 bytes per
//! vertex against 288 simulated, 0.57 bytes per simulated byte with one core.

use super::graph::{self, Graph};
use super::program::{Heap, Program, Refs, Run, VECTOR_BYTES};
use super::{stream_rng, Emitter, WorkloadConfig};
use crate::rng::Rng;
use crate::trace::{Source, WRITE};
use anyhow::Result;
use std::collections::HashSet;
use std::sync::Arc;

/// Bytes of one `int64_t`.
const WORD: u64 = 8;
/// Edges examined per step at most, so that a hub's list spans several steps.
const EDGES_PER_STEP: u32 = 256;
/// Bytes of `bfs_tree` cleared per step.
const CLEAR_BYTES_PER_STEP: u64 = 64 * VECTOR_BYTES;

const EDGE_INSTRS: u32 = 5;
const PUSH_INSTRS: u32 = 1;
const VERTEX_INSTRS: u32 = 3;
const OFFSET_INSTRS: u32 = 1;
const CLEAR_INSTRS: u32 = 3;

/// No parent yet (`-1` in the simulated array).
const NONE: u32 = u32::MAX;

/// Where `seq-csr`'s arrays lie.
#[derive(Clone, Debug)]
struct Layout {
    xoff: u64,
    xadj: u64,
    tree: u64,
    vlist: u64,
    footprint: u64,
}

impl Layout {
    fn new(base: u64, scale: u32, edge_factor: u32) -> Layout {
        let vertices = 1u64 << scale;
        let mut heap = Heap::new(base);
        let xoff = heap.alloc(2 * (vertices + 1) * WORD);
        let xadj = heap.alloc(2 * edge_factor as u64 * vertices * WORD);
        let tree = heap.alloc(vertices * WORD);
        let vlist = heap.alloc(vertices * WORD);
        Layout { xoff, xadj, tree, vlist, footprint: heap.footprint() }
    }
}

/// The scale of the run: `graph.scale`, or the largest that fits the footprint.
fn scale(cfg: &WorkloadConfig) -> Result<u32> {
    let ef = cfg.graph.edge_factor;
    cfg.graph.resolve_scale(cfg, "graph-bfs", |s| Layout::new(cfg.base_vaddr, s, ef).footprint)
}

/// Bytes of the arrays of a run of `cfg`; `cfg.graph` must be valid.
pub(super) fn footprint(cfg: &WorkloadConfig) -> Result<u64> {
    Ok(Layout::new(cfg.base_vaddr, scale(cfg)?, cfg.graph.edge_factor).footprint)
}

/// Builds the generator for one core and tenant; `cfg` must be valid.
pub(super) fn build(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Result<Box<dyn Source>> {
    let scale = scale(cfg)?;
    let graph = graph::shared(cfg, scale, tenant)?;
    let bfs = GraphBfs::new(cfg, graph, scale, stream_rng(cfg, core, tenant));
    Ok(Box::new(Run::new(bfs, Emitter::new(cfg, core, tenant, WORD as u32))))
}

/// Where the search stands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Filling `bfs_tree` with −1; bytes done so far.
    Clear(u64),
    /// Expanding queue entries.
    Expand,
}

/// Graph500 BFS searches from a list of roots, one after the other.
struct GraphBfs {
    graph: Arc<Graph>,
    layout: Layout,
    roots: Vec<u32>,
    /// Index in `roots` of the next search.
    next_root: usize,
    phase: Phase,
    /// Host copy of `bfs_tree`.
    parent: Vec<u32>,
    /// Host copy of `vlist`, with `tail` entries.
    queue: Vec<u32>,
    tail: usize,
    /// Queue entry being expanded.
    head: usize,
    /// Index in the list of `queue[head]` of the next edge; `None` before its offsets are loaded.
    edge: Option<u32>,
}

impl GraphBfs {
    fn new(cfg: &WorkloadConfig, graph: Arc<Graph>, scale: u32, mut rng: Rng) -> GraphBfs {
        let roots = pick_roots(&graph, cfg.graph.roots, &mut rng);
        let vertices = graph.vertices as usize;
        GraphBfs {
            layout: Layout::new(cfg.base_vaddr, scale, cfg.graph.edge_factor),
            graph,
            roots,
            next_root: 0,
            phase: Phase::Clear(0),
            parent: vec![NONE; vertices],
            queue: vec![0; vertices],
            tail: 0,
            head: 0,
            edge: None,
        }
    }

    /// Clears the next piece of `bfs_tree`; once it is all cleared, seeds the search
    /// from the next root.
    fn clear(&mut self, done: u64, refs: &mut Refs) {
        let bytes = self.graph.vertices * WORD;
        let piece = CLEAR_BYTES_PER_STEP.min(bytes - done);
        refs.sweep(self.layout.tree + done, piece, VECTOR_BYTES, CLEAR_INSTRS, WRITE);
        if done + piece < bytes {
            self.phase = Phase::Clear(done + piece);
            return;
        }
        let root = self.roots[self.next_root];
        self.next_root = (self.next_root + 1) % self.roots.len();
        self.parent.fill(NONE);
        self.parent[root as usize] = root;
        self.queue[0] = root;
        self.tail = 1;
        self.head = 0;
        self.edge = None;
        refs.store(self.layout.vlist, WORD, 1);
        refs.store(self.layout.tree + root as u64 * WORD, WORD, 1);
        self.phase = Phase::Expand;
    }

    /// Expands the queue entry at `head`: its offsets, then up to
    /// [`EDGES_PER_STEP`] of its edges.
    fn expand(&mut self, refs: &mut Refs) {
        let l = &self.layout;
        let v = self.queue[self.head];
        let first = match self.edge {
            Some(next) => next,
            None => {
                refs.load(l.vlist + self.head as u64 * WORD, WORD, VERTEX_INSTRS);
                refs.load(l.xoff + 2 * v as u64 * WORD, WORD, OFFSET_INSTRS);
                refs.load(l.xoff + (2 * v as u64 + 1) * WORD, WORD, 0);
                0
            }
        };
        let list = self.graph.neighbours(v);
        let start = self.graph.offsets[v as usize];
        let end = (first + EDGES_PER_STEP).min(list.len() as u32);
        for k in first..end {
            let j = list[k as usize];
            refs.load(l.xadj + (start + k as u64) * WORD, WORD, EDGE_INSTRS);
            refs.load(l.tree + j as u64 * WORD, WORD, 0);
            if self.parent[j as usize] == NONE {
                self.parent[j as usize] = v;
                refs.store(l.tree + j as u64 * WORD, WORD, 0);
                refs.store(l.vlist + self.tail as u64 * WORD, WORD, PUSH_INSTRS);
                self.queue[self.tail] = j;
                self.tail += 1;
            }
        }
        if end as usize == list.len() {
            self.edge = None;
            self.head += 1;
        } else {
            self.edge = Some(end);
        }
    }
}

impl Program for GraphBfs {
    fn step(&mut self, refs: &mut Refs) {
        if self.phase == Phase::Expand && self.head == self.tail && self.edge.is_none() {
            self.phase = Phase::Clear(0);
        }
        match self.phase {
            Phase::Clear(done) => self.clear(done, refs),
            Phase::Expand => self.expand(refs),
        }
    }
}

/// Draws `count` distinct roots among the vertices with at least one edge (all
/// vertices if none has one), or all of them in random order if there are fewer.
fn pick_roots(graph: &Graph, count: u32, rng: &mut Rng) -> Vec<u32> {
    let with_edges = graph.degree.iter().filter(|&&d| d > 0).count() as u64;
    let eligible = |v: u32| with_edges == 0 || graph.degree[v as usize] > 0;
    let pool = if with_edges == 0 { graph.vertices } else { with_edges };
    let wanted = (count as u64).min(pool) as usize;
    let mut seen = HashSet::with_capacity(wanted);
    let mut roots = Vec::with_capacity(wanted);
    while roots.len() < wanted {
        let v = rng.below(graph.vertices) as u32;
        if eligible(v) && seen.insert(v) {
            roots.push(v);
        }
    }
    roots
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_app_common, check_determinism, config, run};
    use super::*;
    use crate::trace::Access;

    fn small() -> WorkloadConfig {
        let mut cfg = config("graph-bfs");
        cfg.graph.scale = 9;
        cfg.graph.edge_factor = 8;
        cfg
    }

    /// The references of the first search of a generator of `cfg` for core 0.
    fn first_search(cfg: &WorkloadConfig) -> (GraphBfs, Vec<Access>) {
        let graph = graph::shared(cfg, cfg.graph.scale, 0).expect("small graph");
        let mut bfs = GraphBfs::new(cfg, graph, cfg.graph.scale, stream_rng(cfg, 0, 0));
        let mut out = Vec::new();
        loop {
            let searching = bfs.phase == Phase::Expand;
            if searching && bfs.head == bfs.tail && bfs.edge.is_none() {
                return (bfs, out);
            }
            bfs.step(&mut Refs::new(&mut out, Access::default()));
        }
    }

    #[test]
    fn footprint_follows_the_scale() {
        let cfg = small();
        // 512 vertices: xoff 8 208 bytes (3 pages), xadj 65 536 (16), tree and vlist 4 096 each.
        assert_eq!(footprint(&cfg).expect("valid"), (3 + 16 + 1 + 1) * 4096);
        // A 1 GiB footprint holds scale 21 at 288 bytes per vertex.
        let auto = WorkloadConfig { name: "graph-bfs".into(), ..WorkloadConfig::default() };
        assert_eq!(scale(&auto).expect("fits"), 21);
    }

    #[test]
    fn a_search_reaches_each_reachable_vertex_once_and_reads_each_slot_at_most_once() {
        let cfg = small();
        let (bfs, records) = first_search(&cfg);
        let g = &bfs.graph;
        let root = bfs.roots[0];
        // The reachable set, by a plain host BFS.
        let mut reached = vec![false; g.vertices as usize];
        reached[root as usize] = true;
        let mut frontier = vec![root];
        while let Some(v) = frontier.pop() {
            for &w in g.neighbours(v) {
                if !reached[w as usize] {
                    reached[w as usize] = true;
                    frontier.push(w);
                }
            }
        }
        let l = &bfs.layout;
        let in_array = |a: &Access, start: u64, words: u64| (start..start + words * WORD).contains(&a.vaddr);
        let mut parent_stores = vec![0u32; g.vertices as usize];
        let mut slot_loads = HashSet::new();
        let mut edges_read = 0u64;
        for a in &records {
            if a.is_write() && a.size as u64 == WORD && in_array(a, l.tree, g.vertices) {
                parent_stores[((a.vaddr - l.tree) / WORD) as usize] += 1;
            }
            if !a.is_write() && in_array(a, l.xadj, g.slots()) {
                assert!(slot_loads.insert(a.vaddr), "slot {:#x} read twice", a.vaddr);
                edges_read += 1;
            }
        }
        for v in 0..g.vertices as usize {
            assert_eq!(parent_stores[v], reached[v] as u32, "vertex {v}");
        }
        let expected: u64 = (0..g.vertices as u32).filter(|&v| reached[v as usize]).map(|v| g.degree[v as usize] as u64).sum();
        assert_eq!(edges_read, expected, "every edge of every reached vertex, once");
        let reached_count = reached.iter().filter(|&&r| r).count();
        assert!(reached_count > 1, "the root has edges");
        let pushes = records.iter().filter(|a| a.is_write() && in_array(a, l.vlist, g.vertices)).count();
        assert_eq!(pushes, reached_count);
        // The fill stores every byte of bfs_tree once, before anything else.
        let fill: u64 = records.iter().take_while(|a| a.size as u64 == VECTOR_BYTES).map(|a| a.size as u64).sum();
        assert_eq!(fill, g.vertices * WORD);
    }

    #[test]
    fn roots_are_distinct_and_have_edges() {
        let cfg = small();
        let graph = graph::shared(&cfg, 9, 0).expect("small graph");
        let roots = pick_roots(&graph, 64, &mut Rng::new(1));
        assert_eq!(roots.len(), 64);
        assert_eq!(roots.iter().collect::<HashSet<_>>().len(), 64);
        assert!(roots.iter().all(|&r| graph.degree[r as usize] > 0));
        // More roots than vertices with edges: each of them once.
        let all = pick_roots(&graph, 100_000, &mut Rng::new(1));
        assert_eq!(all.len(), graph.degree.iter().filter(|&&d| d > 0).count());
    }

    #[test]
    fn emits_exactly_refs_within_the_footprint() {
        let cfg = small();
        check_app_common(&cfg, &run(&cfg));
    }

    #[test]
    fn is_deterministic() {
        check_determinism(&small());
    }
}
