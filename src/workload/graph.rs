//! Kronecker (R-MAT) graphs in compressed sparse row (CSR) form, built on the host
//! for `graph-bfs` and `pagerank`, which lay them out in simulated memory each in
//! its own benchmark's format.
//!
//! # Generation (Graph500 specification, "Graph Generation")
//! The graph has `N = 2^scale` vertices and `M = edge_factor · N` edges. Each edge
//! picks a cell of the adjacency matrix by `scale` recursive choices of a quadrant:
//! top-left with probability A, top-right B, bottom-left C, bottom-right
//! D = 1 − A − B − C (Graph500: 0.57, 0.19, 0.19, 0.05), each choice fixing one bit
//! of the two endpoints. The quadrants of four levels at once are drawn from a
//! 256-outcome alias table (Vose's method), one random number per four levels.
//! Vertex labels are then scrambled by a keyed random permutation, as Graph500's
//! generator does, so that a vertex's number says nothing about its degree.
//!
//! # CSR construction (Graph500's `seq-csr` reference, kernel 1)
//! The graph is undirected: each edge goes into the lists of both endpoints. A first
//! pass counts every endpoint to give each vertex a raw degree and its list's place
//! (the prefix sum of raw degrees); a second pass fills the lists. Each list is then
//! sorted, and duplicate edges and self-loops are removed *in place*: a list keeps
//! its start and leaves the tail of its slot unused, as `seq-csr`'s `pack_edges`
//! does. The adjacency array therefore always has exactly `2·M` slots, so the
//! footprint follows from `scale` and `edge_factor` alone, before any edge is drawn.
//!
//! Edges are generated in chunks, each from its own seed, so the second pass draws
//! the same edges again instead of storing an edge list. Both passes work in the
//! Kronecker numbering and only the stored neighbour numbers are scrambled: the host
//! keeps the lists in Kronecker order, the simulated layout in label order. The
//! per-endpoint work of each pass is gathered by vertex range before it is done
//! (see `Buckets`), which makes building several times faster than doing it edge by
//! edge all over the host's arrays.
//!
//! # Host memory
//! 4 bytes per adjacency slot (`u32` vertex numbers), and per vertex 8 bytes for
//! the simulated list offsets, 8 for the host list starts and 4 for the degrees:
//! `8 · edge_factor + 20` bytes per vertex (148 with the default edge factor 16),
//! plus 4 bytes per vertex and 32 MiB of buckets while building. A graph is shared by every generator
//! that asks for the same one (same parameters, seed and tenant) while any of them
//! lives, so the cores of one tenant, and runs compared side by side, hold one copy.

use super::permute::Permutation;
use super::program::{check_host_memory, hash};
use super::{layout_rng, WorkloadConfig};
use crate::rng::Rng;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex, Weak};

/// The `[workload.graph]` table: the Kronecker graph of `graph-bfs` and `pagerank`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GraphConfig {
    /// log2 of the number of vertices (Graph500's SCALE), from 1 to 31; 0 picks the
    /// largest scale whose data fit `workload.footprint`.
    pub scale: u32,
    /// Edges per vertex (Graph500's edgefactor).
    pub edge_factor: u32,
    /// Probability of the top-left quadrant at each level of the Kronecker recursion.
    pub a: f64,
    /// Probability of the top-right quadrant.
    pub b: f64,
    /// Probability of the bottom-left quadrant (the bottom-right one gets 1 − a − b − c).
    pub c: f64,
    /// Distinct search roots of `graph-bfs`, drawn at random among the vertices with
    /// at least one edge (Graph500 runs 64 searches); searches cycle through them as
    /// long as references remain.
    pub roots: u32,
}

impl Default for GraphConfig {
    /// Graph500's parameters: A = 0.57, B = C = 0.19, edge factor 16, 64 search keys.
    fn default() -> GraphConfig {
        GraphConfig { scale: 0, edge_factor: 16, a: 0.57, b: 0.19, c: 0.19, roots: 64 }
    }
}

/// Largest scale: vertex numbers must fit GAP's 32-bit signed `NodeID`.
pub(super) const MAX_SCALE: u32 = 31;

impl GraphConfig {
    /// Checks every field; errors name it (`workload.graph.a: …`).
    pub(super) fn validate(&self) -> Result<()> {
        if self.scale > MAX_SCALE {
            bail!("workload.graph.scale: must be from 1 to {MAX_SCALE}, or 0 to fit the footprint, got {}", self.scale);
        }
        if self.edge_factor == 0 || self.edge_factor > 1024 {
            bail!("workload.graph.edge_factor: must be from 1 to 1024, got {}", self.edge_factor);
        }
        for (field, p) in [("a", self.a), ("b", self.b), ("c", self.c)] {
            if !(0.0..=1.0).contains(&p) {
                bail!("workload.graph.{field}: must be in [0, 1], got {p}");
            }
        }
        let sum = self.a + self.b + self.c;
        if sum > 1.0 + 1e-9 {
            bail!("workload.graph: a + b + c must be at most 1 (d = 1 - a - b - c), got {sum}");
        }
        if self.roots == 0 {
            bail!("workload.graph.roots: must be at least 1, got 0");
        }
        Ok(())
    }

    /// The scale of the run: `scale`, or the largest whose footprint (by `footprint`,
    /// the benchmark's layout size for a scale) fits `workload.footprint`.
    pub(super) fn resolve_scale(&self, cfg: &WorkloadConfig, name: &str, footprint: impl Fn(u32) -> u64) -> Result<u32> {
        if self.scale != 0 {
            return Ok(self.scale);
        }
        let target = cfg.footprint.bytes();
        match (1..=MAX_SCALE).rev().find(|&s| footprint(s) <= target) {
            Some(scale) => Ok(scale),
            None => bail!(
                "workload.footprint: {name} needs at least {} bytes (graph scale 1), got {}",
                footprint(1),
                cfg.footprint
            ),
        }
    }
}

/// An undirected graph in CSR form with the lists at their raw-degree offsets.
#[derive(Debug)]
pub(super) struct Graph {
    /// Number of vertices, `2^scale`.
    pub(super) vertices: u64,
    /// First slot of each vertex's list in the simulated layout; `offsets[vertices]`
    /// is the number of slots, `2 · edge_factor · vertices`.
    pub(super) offsets: Vec<u64>,
    /// Where each vertex's list starts in `adj` (the host keeps the lists in another
    /// order than the simulated layout).
    start: Vec<u64>,
    /// Distinct neighbours of each vertex, self excluded.
    pub(super) degree: Vec<u32>,
    /// Neighbour numbers; the list of `v` is `adj[start[v]..][..degree[v]]`, sorted.
    adj: Vec<u32>,
}

impl Graph {
    /// Adjacency slots: `2 · edge_factor · vertices`.
    #[cfg(test)]
    pub(super) fn slots(&self) -> u64 {
        self.offsets[self.vertices as usize]
    }

    /// The sorted neighbours of `v`.
    #[inline]
    pub(super) fn neighbours(&self, v: u32) -> &[u32] {
        &self.adj[self.start[v as usize] as usize..][..self.degree[v as usize] as usize]
    }
}

/// What identifies a graph: every parameter it is built from.
#[derive(Clone, Debug, PartialEq)]
struct GraphKey {
    scale: u32,
    edge_factor: u32,
    abc: [u64; 3],
    seed: u64,
    tenant: u16,
}

/// Graphs alive somewhere, so that a second request for one shares it.
static SHARED: Mutex<Vec<(GraphKey, Weak<Graph>)>> = Mutex::new(Vec::new());

/// Returns the graph of `scale` described by `cfg.graph` for `tenant`, building it
/// unless a live generator already holds it. Building holds the lock, so that two
/// threads asking for the same graph build it once. Fails, naming the field, when
/// building would need more host memory than the host has available.
pub(super) fn shared(cfg: &WorkloadConfig, scale: u32, tenant: u16) -> Result<Arc<Graph>> {
    let g = &cfg.graph;
    let key = GraphKey {
        scale,
        edge_factor: g.edge_factor,
        abc: [g.a.to_bits(), g.b.to_bits(), g.c.to_bits()],
        seed: cfg.seed,
        tenant,
    };
    // A panic elsewhere cannot leave the list inconsistent: it only holds weak handles.
    let mut list = SHARED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    list.retain(|(_, weak)| weak.strong_count() > 0);
    if let Some(graph) = list.iter().find(|(k, _)| *k == key).and_then(|(_, weak)| weak.upgrade()) {
        return Ok(graph);
    }
    check_host_memory("workload.graph.scale", &format!("a scale-{scale} graph"), build_bytes(g, scale))?;
    let graph = Arc::new(build(g, scale, layout_rng(cfg, tenant).next_u64()));
    list.push((key, Arc::downgrade(&graph)));
    Ok(graph)
}

/// Host bytes the building of a graph peaks at: the adjacency, 28 bytes per vertex
/// of offsets, starts, degrees and cursors, and the buckets.
fn build_bytes(cfg: &GraphConfig, scale: u32) -> u64 {
    let vertices = 1u64 << scale;
    (8 * cfg.edge_factor as u64 + 28) * vertices + (BUCKETED * 8) as u64
}


/// Edges drawn from one seed: small enough to keep the passes cache-friendly.
const CHUNK_EDGES: u64 = 1 << 16;

/// Builds the graph of `scale` with `cfg`'s edge factor and initiator from `seed`.
pub(super) fn build(cfg: &GraphConfig, scale: u32, seed: u64) -> Graph {
    let vertices = 1u64 << scale;
    let n = vertices as usize;
    let mut rng = Rng::new(seed);
    let label = Permutation::new(vertices, rng.next_u64());
    let stream = EdgeStream { sampler: Kronecker::new(cfg, scale), seed: rng.next_u64(), edges: cfg.edge_factor as u64 * vertices };
    // Pass 1: raw degrees by Kronecker number, every endpoint counted (a self-loop
    // twice). Kronecker numbers with few one bits are the busy ones, so counting
    // before relabelling keeps the counters of the hubs together in the host cache.
    let mut fill = vec![0u32; n];
    let mut buckets = Buckets::new(n);
    let mut count = |i: usize, _| fill[i] += 1;
    stream.for_each(|i, j| {
        buckets.put(i, 0, &mut count);
        buckets.put(j, 0, &mut count);
    });
    buckets.flush(&mut count);
    // The host keeps the lists in Kronecker order; the simulated layout orders them
    // by label, each at the prefix sum of the raw degrees before it.
    let mut degree = vec![0u32; n];
    for (i, &d) in fill.iter().enumerate() {
        degree[label.apply(i as u64) as usize] = d;
    }
    let mut offsets = Vec::with_capacity(n + 1);
    let mut at = 0u64;
    for &d in &degree {
        offsets.push(at);
        at += d as u64;
    }
    offsets.push(at);
    // Pass 2: fill the lists with the neighbours' labels. `cursor` holds where the
    // next entry of each list goes, starting at the list's start.
    let mut cursor = Vec::with_capacity(n);
    let mut slots = 0u64;
    for &d in &fill {
        cursor.push(slots);
        slots += d as u64;
    }
    drop(fill);
    let mut adj = vec![0u32; slots as usize];
    let mut append = |i: usize, neighbour: u32| {
        adj[cursor[i] as usize] = neighbour;
        cursor[i] += 1;
    };
    stream.for_each(|i, j| {
        buckets.put(i, label.apply(j as u64) as u32, &mut append);
        buckets.put(j, label.apply(i as u64) as u32, &mut append);
    });
    buckets.flush(&mut append);
    // Each cursor now stands at its list's end: back up by the raw degree.
    let mut start = vec![0u64; n];
    for (i, &end) in cursor.iter().enumerate() {
        let v = label.apply(i as u64) as usize;
        start[v] = end - degree[v] as u64;
    }
    drop(cursor);
    // Pack: sort each list, drop duplicates and self-loops, keep its start.
    for v in 0..n {
        let list = &mut adj[start[v] as usize..][..degree[v] as usize];
        list.sort_unstable();
        let mut kept = 0;
        for k in 0..list.len() {
            let w = list[k];
            if w as usize != v && (kept == 0 || list[kept - 1] != w) {
                list[kept] = w;
                kept += 1;
            }
        }
        degree[v] = kept as u32;
    }
    Graph { vertices, offsets, start, degree, adj }
}

/// log2 of the vertices of one bucket: their counters (`u32` or `u64`) take at most
/// 256 KiB.
const BUCKET_SHIFT: u32 = 15;
/// Entries held in all buckets before they are applied.
const BUCKETED: usize = 1 << 22;

/// Per-vertex work gathered by vertex range. A graph's endpoints fall all over the
/// vertex numbers, so doing each one's work (a counter increment, an adjacency
/// store) at once costs a host cache miss or two; an entry waits instead in its
/// range's bucket until [`BUCKETED`] entries wait, then the buckets are applied one
/// after the other, each within one range's counters and lists. Entries of a
/// vertex are applied in the order they came.
struct Buckets {
    /// (vertex within the range, value) per range.
    buckets: Vec<Vec<(u32, u32)>>,
    waiting: usize,
}

impl Buckets {
    fn new(vertices: usize) -> Buckets {
        Buckets { buckets: vec![Vec::new(); (vertices >> BUCKET_SHIFT) + 1], waiting: 0 }
    }

    #[inline]
    fn put(&mut self, vertex: usize, value: u32, apply: &mut impl FnMut(usize, u32)) {
        self.buckets[vertex >> BUCKET_SHIFT].push(((vertex & ((1 << BUCKET_SHIFT) - 1)) as u32, value));
        self.waiting += 1;
        if self.waiting == BUCKETED {
            self.flush(apply);
        }
    }

    fn flush(&mut self, apply: &mut impl FnMut(usize, u32)) {
        for (b, bucket) in self.buckets.iter_mut().enumerate() {
            for &(low, value) in bucket.iter() {
                apply(b << BUCKET_SHIFT | low as usize, value);
            }
            bucket.clear();
        }
        self.waiting = 0;
    }
}

/// The edges of a graph in generation order, as Kronecker numbers (before labelling).
struct EdgeStream {
    sampler: Kronecker,
    seed: u64,
    edges: u64,
}

impl EdgeStream {
    /// Calls `visit` with the endpoints of every edge, the same edges on every call.
    fn for_each(&self, mut visit: impl FnMut(usize, usize)) {
        for chunk in 0..self.edges.div_ceil(CHUNK_EDGES) {
            let mut rng = Rng::new(hash(self.seed, chunk));
            for _ in chunk * CHUNK_EDGES..((chunk + 1) * CHUNK_EDGES).min(self.edges) {
                let (i, j) = self.sampler.edge(&mut rng);
                visit(i as usize, j as usize);
            }
        }
    }
}

/// Levels of the Kronecker recursion drawn per random number.
const LEVELS_PER_DRAW: u32 = 4;
/// Outcomes of one draw: two bits (row, column) per level.
const OUTCOMES: usize = 1 << (2 * LEVELS_PER_DRAW);

/// Draws Kronecker edges four levels at a time from an alias table.
#[derive(Clone, Debug)]
struct Kronecker {
    scale: u32,
    /// Acceptance threshold of each outcome, scaled to 2^32.
    threshold: [u64; OUTCOMES],
    /// The outcome taken when the threshold test fails.
    alias: [u8; OUTCOMES],
}

impl Kronecker {
    fn new(cfg: &GraphConfig, scale: u32) -> Kronecker {
        let d = (1.0 - cfg.a - cfg.b - cfg.c).max(0.0);
        // Quadrant q = 2·row bit + column bit: A (0, 0), B (0, 1), C (1, 0), D (1, 1).
        let quadrant = [cfg.a, cfg.b, cfg.c, d];
        let total: f64 = quadrant.iter().sum();
        // An outcome's bits hold the row bits of the four levels in its high nibble
        // and the column bits in its low nibble, level 0 most significant.
        let mut p = [0.0f64; OUTCOMES];
        for (o, p) in p.iter_mut().enumerate() {
            *p = (0..LEVELS_PER_DRAW)
                .map(|l| {
                    let shift = LEVELS_PER_DRAW - 1 - l;
                    let row = (o >> (LEVELS_PER_DRAW + shift)) & 1;
                    let col = (o >> shift) & 1;
                    quadrant[2 * row + col] / total
                })
                .product();
        }
        let (threshold, alias) = alias_table(&p);
        Kronecker { scale, threshold, alias }
    }

    /// Returns the (row, column) cell of one edge, each below `2^scale`.
    #[inline]
    fn edge(&self, rng: &mut Rng) -> (u64, u64) {
        let (mut i, mut j) = (0u64, 0u64);
        let mut left = self.scale;
        while left > 0 {
            let r = rng.next_u64();
            let slot = (r & (OUTCOMES as u64 - 1)) as usize;
            let outcome = (if (r >> 32) < self.threshold[slot] { slot } else { self.alias[slot] as usize }) as u64;
            let levels = left.min(LEVELS_PER_DRAW);
            // The first `levels` levels of the draw: the top bits of each nibble.
            let drop = LEVELS_PER_DRAW - levels;
            i = (i << levels) | ((outcome >> LEVELS_PER_DRAW) >> drop);
            j = (j << levels) | ((outcome & ((1 << LEVELS_PER_DRAW) - 1)) >> drop);
            left -= levels;
        }
        (i, j)
    }
}

/// Vose's alias method for the distribution `p` (summing to 1): slot `s`, drawn
/// uniformly, yields `s` when a uniform 32-bit number is below `threshold[s]` and
/// `alias[s]` otherwise.
fn alias_table(p: &[f64; OUTCOMES]) -> ([u64; OUTCOMES], [u8; OUTCOMES]) {
    let n = OUTCOMES as f64;
    let mut scaled: Vec<f64> = p.iter().map(|&x| x * n).collect();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..OUTCOMES).partition(|&s| scaled[s] < 1.0);
    let mut threshold = [1u64 << 32; OUTCOMES];
    let mut alias = [0u8; OUTCOMES];
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        threshold[s] = (scaled[s] * (1u64 << 32) as f64) as u64;
        alias[s] = l as u8;
        scaled[l] -= 1.0 - scaled[s];
        if scaled[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    // What remains holds probability 1 up to rounding: always accepted.
    for s in small.into_iter().chain(large) {
        threshold[s] = 1 << 32;
        alias[s] = s as u8;
    }
    (threshold, alias)
}

#[cfg(test)]
mod tests {
    use super::super::program::available_host_bytes;
    use super::*;

    fn small(scale: u32) -> Graph {
        build(&GraphConfig::default(), scale, 7)
    }

    #[test]
    fn lists_are_sorted_symmetric_and_free_of_loops_and_duplicates() {
        let g = small(10);
        assert_eq!((g.vertices, g.slots()), (1024, 2 * 16 * 1024));
        let mut entries = 0u64;
        for v in 0..g.vertices as u32 {
            let list = g.neighbours(v);
            entries += list.len() as u64;
            assert!(list.windows(2).all(|w| w[0] < w[1]), "vertex {v}: not sorted or duplicated");
            for &w in list {
                assert_ne!(w, v, "self-loop at {v}");
                assert!(g.neighbours(w).binary_search(&v).is_ok(), "edge {v}-{w} only one way");
            }
            assert!(g.offsets[v as usize] + list.len() as u64 <= g.offsets[v as usize + 1]);
        }
        // Duplicates are frequent among a Kronecker graph's hubs but most edges survive.
        assert!(entries > g.slots() / 2 && entries <= g.slots(), "{entries} of {} slots", g.slots());
    }

    #[test]
    fn the_same_seed_builds_the_same_graph() {
        let (a, b) = (small(9), small(9));
        assert_eq!((a.offsets.clone(), a.degree.clone(), a.adj.clone()), (b.offsets, b.degree, b.adj));
        let c = build(&GraphConfig::default(), 9, 8);
        assert_ne!(a.adj, c.adj);
    }

    #[test]
    fn quadrants_follow_the_initiator() {
        // With one level, the row bit is 1 with probability C + D = 0.24 and the
        // column bit with B + D = 0.24; the pair (1, 1) with D = 0.05. 100 000 draws
        // give standard deviations below 0.0014.
        let sampler = Kronecker::new(&GraphConfig::default(), 1);
        let mut rng = Rng::new(3);
        let (mut rows, mut cols, mut both) = (0u32, 0u32, 0u32);
        for _ in 0..100_000 {
            let (i, j) = sampler.edge(&mut rng);
            rows += i as u32;
            cols += j as u32;
            both += (i & j) as u32;
        }
        for (count, p) in [(rows, 0.24), (cols, 0.24), (both, 0.05)] {
            assert!((count as f64 / 1e5 - p).abs() < 0.01, "{count} vs {p}");
        }
    }

    #[test]
    fn alias_table_reproduces_the_distribution() {
        let mut p = [0.0; OUTCOMES];
        for (s, p) in p.iter_mut().enumerate() {
            *p = (s as f64 + 1.0) / (OUTCOMES * (OUTCOMES + 1) / 2) as f64;
        }
        let (threshold, alias) = alias_table(&p);
        // The probability each outcome gets: its own slot's acceptance plus every
        // slot that aliases to it.
        let mut got = [0.0; OUTCOMES];
        for s in 0..OUTCOMES {
            let accept = threshold[s] as f64 / (1u64 << 32) as f64;
            got[s] += accept / OUTCOMES as f64;
            got[alias[s] as usize] += (1.0 - accept) / OUTCOMES as f64;
        }
        for s in 0..OUTCOMES {
            assert!((got[s] - p[s]).abs() < 1e-9, "outcome {s}: {} vs {}", got[s], p[s]);
        }
    }

    #[test]
    fn sharing_returns_one_graph_while_it_lives() {
        let cfg = WorkloadConfig { name: "graph-bfs".into(), ..WorkloadConfig::default() };
        let a = shared(&cfg, 6, 0).expect("small");
        let b = shared(&cfg, 6, 0).expect("small");
        assert!(Arc::ptr_eq(&a, &b));
        let other_tenant = shared(&cfg, 6, 1).expect("small");
        assert!(!Arc::ptr_eq(&a, &other_tenant));
    }

    #[test]
    fn a_graph_too_large_for_the_host_is_refused_before_building() {
        // Scale 31 needs about 330 GB.
        let cfg = WorkloadConfig { name: "graph-bfs".into(), ..WorkloadConfig::default() };
        if available_host_bytes().is_some_and(|a| a < build_bytes(&cfg.graph, 31)) {
            let e = shared(&cfg, 31, 0).expect_err("too large").to_string();
            assert!(e.starts_with("workload.graph.scale: a scale-31 graph needs about"), "{e}");
        }
    }
}
