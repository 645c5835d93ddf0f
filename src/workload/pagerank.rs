//! `pagerank`: the pull-direction PageRank of the GAP Benchmark Suite (`pr.cc`,
//! `PageRankPull`) over a Kronecker graph like Graph500's. HMM-V evaluates GAP's
//! page rank with 2^27 and 2^29 vertices (§5.8, Table 6) and in the four-VM co-run
//! (§5.9), observing that it computes "the contribution of each node by sparsely
//! walking the graph node arrays in sequence" (§5.7).
//!
//! # Layout (GAP's `CSRGraph` with 32-bit `NodeID`, then the kernel's arrays)
//! - `index`: `N + 1` pointers (8 bytes), the start of each vertex's list;
//! - `neighbors`: one 4-byte vertex number per adjacency slot, `2 · edge_factor · N`
//!   slots, the deduplicated lists packed from the start as GAP's `SquishCSR` packs
//!   them (the few percent of slots that held duplicates and self-loops stay unused);
//! - `scores`, `outgoing_contrib`: one `float` per vertex.
//!
//! That is `16 + 8 · edge_factor` bytes per vertex, 144 with edge factor 16. The
//! graph is undirected, so a vertex's in-neighbours are its neighbours, as in GAP's
//! symmetrized `kron` input.
//!
//! # One trial, as `PageRankPull` runs it
//! `scores[n] = 1/N` for all vertices (a vectorized fill), then iterations of:
//! 1. for each `n`: load `scores[n]`, `index[n]`, `index[n + 1]`; store
//!    `outgoing_contrib[n] = scores[n] / degree(n)`;
//! 2. for each `u`: load `index[u]`, `index[u + 1]`; for each neighbour slot: load
//!    `v`, load `outgoing_contrib[v]`; then load `scores[u]` and store
//!    `scores[u] = (1 − d)/N + d · sum`, adding `|new − old|` to the error.
//!
//! The scores are computed on the host in `f32` as GAP computes them, so a trial
//! ends as GAP's does: when the error falls below `pagerank.tolerance`, or after
//! `pagerank.iterations` iterations. Then the next trial starts (GAP repeats
//! trials with `-n`) as long as references remain.
//!
//! # Instructions
//! Loop 1: 3 before the `scores` load (loop control), 4 before the store (subtract,
//! shift, convert, divide). Loop 2: 3 before the `index` loads, 4 before each
//! neighbour load (loop control and the previous addition), 2 before the `scores`
//! load, 4 before its store (multiply-add, subtract, absolute value, add). The
//! fill: 3 per 32-byte store.
//!
//! # Host memory
//! The graph ([`super::graph`]: `8 · edge_factor + 20` bytes per vertex) and two
//! `f32` arrays per core: 156 bytes per vertex against 144 simulated, 1.08 host
//! bytes per simulated byte with one core.

use super::graph::{self, Graph};
use super::program::{Heap, Program, Refs, Run, VECTOR_BYTES};
use super::{Emitter, WorkloadConfig};
use crate::trace::{Source, WRITE};
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The `[workload.pagerank]` table (the graph is `[workload.graph]`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PagerankConfig {
    /// Most iterations of one trial (GAP's `-i`, default 20).
    pub iterations: u32,
    /// A trial ends when the sum of the score changes of an iteration falls below
    /// this (GAP's `-t`, default 1e-4).
    pub tolerance: f64,
    /// Damping factor (GAP's `kDamp`, 0.85).
    pub damping: f64,
}

impl Default for PagerankConfig {
    fn default() -> PagerankConfig {
        PagerankConfig { iterations: 20, tolerance: 1e-4, damping: 0.85 }
    }
}

impl PagerankConfig {
    /// Checks every field; errors name it.
    pub(super) fn validate(&self) -> Result<()> {
        if self.iterations == 0 {
            bail!("workload.pagerank.iterations: must be at least 1, got 0");
        }
        if !(self.tolerance >= 0.0 && self.tolerance.is_finite()) {
            bail!("workload.pagerank.tolerance: must be a finite number >= 0, got {}", self.tolerance);
        }
        if !(0.0..=1.0).contains(&self.damping) {
            bail!("workload.pagerank.damping: must be in [0, 1], got {}", self.damping);
        }
        Ok(())
    }
}

/// Bytes of a pointer in `index`.
const POINTER: u64 = 8;
/// Bytes of a `NodeID` and of a `float`.
const WORD: u64 = 4;
/// Vertices of loop 1, or edges of loop 2, per step at most.
const PER_STEP: u32 = 256;
/// Bytes of `scores` filled per step.
const FILL_BYTES_PER_STEP: u64 = 64 * VECTOR_BYTES;

const LOOP_INSTRS: u32 = 3;
const DIVIDE_INSTRS: u32 = 4;
const NEIGHBOUR_INSTRS: u32 = 4;
const SCORE_LOAD_INSTRS: u32 = 2;
const SCORE_STORE_INSTRS: u32 = 4;

/// Where GAP's arrays lie.
#[derive(Clone, Debug)]
struct Layout {
    index: u64,
    neighbors: u64,
    scores: u64,
    contrib: u64,
    footprint: u64,
}

impl Layout {
    fn new(base: u64, scale: u32, edge_factor: u32) -> Layout {
        let vertices = 1u64 << scale;
        let mut heap = Heap::new(base);
        let index = heap.alloc((vertices + 1) * POINTER);
        let neighbors = heap.alloc(2 * edge_factor as u64 * vertices * WORD);
        let scores = heap.alloc(vertices * WORD);
        let contrib = heap.alloc(vertices * WORD);
        Layout { index, neighbors, scores, contrib, footprint: heap.footprint() }
    }
}

fn scale(cfg: &WorkloadConfig) -> Result<u32> {
    let ef = cfg.graph.edge_factor;
    cfg.graph.resolve_scale(cfg, "pagerank", |s| Layout::new(cfg.base_vaddr, s, ef).footprint)
}

/// Bytes of the arrays of a run of `cfg`; `cfg.graph` must be valid.
pub(super) fn footprint(cfg: &WorkloadConfig) -> Result<u64> {
    Ok(Layout::new(cfg.base_vaddr, scale(cfg)?, cfg.graph.edge_factor).footprint)
}

/// Builds the generator for one core and tenant; `cfg` must be valid.
pub(super) fn build(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Result<Box<dyn Source>> {
    let scale = scale(cfg)?;
    let pr = PageRank::new(cfg, graph::shared(cfg, scale, tenant)?, scale);
    Ok(Box::new(Run::new(pr, Emitter::new(cfg, core, tenant, WORD as u32))))
}

/// Where the trial stands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Filling `scores` with 1/N; bytes done.
    Init(u64),
    /// Loop 1 at vertex `n`.
    Contrib(u32),
    /// Loop 2 at vertex `u`, at edge `edge` of its list (`None` before its offsets are loaded).
    Pull { u: u32, edge: Option<u32> },
}

/// GAP's PageRankPull, trial after trial.
struct PageRank {
    graph: Arc<Graph>,
    layout: Layout,
    cfg: PagerankConfig,
    phase: Phase,
    scores: Vec<f32>,
    contrib: Vec<f32>,
    /// Sum of the incoming contributions of the vertex being pulled.
    incoming: f32,
    /// Sum of the score changes of this iteration.
    error: f64,
    /// Iterations completed in this trial.
    iteration: u32,
    /// Slot in `neighbors` where the list of the vertex being pulled starts (the
    /// lists are packed, so this is the running sum of the degrees before it).
    packed: u64,
}

impl PageRank {
    fn new(cfg: &WorkloadConfig, graph: Arc<Graph>, scale: u32) -> PageRank {
        let n = graph.vertices as usize;
        PageRank {
            graph,
            layout: Layout::new(cfg.base_vaddr, scale, cfg.graph.edge_factor),
            cfg: cfg.pagerank.clone(),
            phase: Phase::Init(0),
            scores: vec![0.0; n],
            contrib: vec![0.0; n],
            incoming: 0.0,
            error: 0.0,
            iteration: 0,
            packed: 0,
        }
    }

    fn init(&mut self, done: u64, refs: &mut Refs) {
        let bytes = self.graph.vertices * WORD;
        let piece = FILL_BYTES_PER_STEP.min(bytes - done);
        refs.sweep(self.layout.scores + done, piece, VECTOR_BYTES, LOOP_INSTRS, WRITE);
        if done + piece < bytes {
            self.phase = Phase::Init(done + piece);
        } else {
            self.scores.fill(1.0 / self.graph.vertices as f32);
            self.iteration = 0;
            self.phase = Phase::Contrib(0);
        }
    }

    fn contribute(&mut self, first: u32, refs: &mut Refs) {
        let l = &self.layout;
        let end = (first as u64 + PER_STEP as u64).min(self.graph.vertices) as u32;
        for n in first..end {
            let i = n as u64;
            refs.load(l.scores + i * WORD, WORD, LOOP_INSTRS);
            refs.load(l.index + i * POINTER, POINTER, 0);
            refs.load(l.index + (i + 1) * POINTER, POINTER, 0);
            refs.store(l.contrib + i * WORD, WORD, DIVIDE_INSTRS);
            // GAP divides by zero for isolated vertices; nobody reads their contribution.
            let degree = self.graph.degree[n as usize].max(1);
            self.contrib[n as usize] = self.scores[n as usize] / degree as f32;
        }
        self.phase = if end as u64 == self.graph.vertices {
            self.error = 0.0;
            self.packed = 0;
            Phase::Pull { u: 0, edge: None }
        } else {
            Phase::Contrib(end)
        };
    }

    fn pull(&mut self, u: u32, edge: Option<u32>, refs: &mut Refs) {
        let l = &self.layout;
        let i = u as u64;
        let first = match edge {
            Some(k) => k,
            None => {
                refs.load(l.index + i * POINTER, POINTER, LOOP_INSTRS);
                refs.load(l.index + (i + 1) * POINTER, POINTER, 0);
                self.incoming = 0.0;
                0
            }
        };
        let list = self.graph.neighbours(u);
        let end = (first + PER_STEP).min(list.len() as u32);
        for k in first..end {
            let v = list[k as usize];
            refs.load(l.neighbors + (self.packed + k as u64) * WORD, WORD, NEIGHBOUR_INSTRS);
            refs.load(l.contrib + v as u64 * WORD, WORD, 0);
            self.incoming += self.contrib[v as usize];
        }
        if (end as usize) < list.len() {
            self.phase = Phase::Pull { u, edge: Some(end) };
            return;
        }
        refs.load(l.scores + i * WORD, WORD, SCORE_LOAD_INSTRS);
        refs.store(l.scores + i * WORD, WORD, SCORE_STORE_INSTRS);
        let n = self.graph.vertices as f32;
        let damping = self.cfg.damping as f32;
        let old = self.scores[u as usize];
        let new = (1.0 - damping) / n + damping * self.incoming;
        self.scores[u as usize] = new;
        self.error += (new - old).abs() as f64;
        self.packed += list.len() as u64;
        self.phase = if i + 1 < self.graph.vertices {
            Phase::Pull { u: u + 1, edge: None }
        } else {
            self.iteration += 1;
            if self.error < self.cfg.tolerance || self.iteration == self.cfg.iterations {
                Phase::Init(0)
            } else {
                Phase::Contrib(0)
            }
        };
    }
}

impl Program for PageRank {
    fn step(&mut self, refs: &mut Refs) {
        match self.phase {
            Phase::Init(done) => self.init(done, refs),
            Phase::Contrib(n) => self.contribute(n, refs),
            Phase::Pull { u, edge } => self.pull(u, edge, refs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_app_common, config, run};
    use super::*;
    use crate::trace::Access;

    fn small() -> WorkloadConfig {
        let mut cfg = config("pagerank");
        cfg.graph.scale = 9;
        cfg.graph.edge_factor = 8;
        cfg
    }

    fn program(cfg: &WorkloadConfig) -> PageRank {
        PageRank::new(cfg, graph::shared(cfg, cfg.graph.scale, 0).expect("small graph"), cfg.graph.scale)
    }

    /// Steps `pr` until `done` holds, returning the references.
    fn steps_until(pr: &mut PageRank, done: impl Fn(&PageRank) -> bool) -> Vec<Access> {
        let mut out = Vec::new();
        while !done(pr) {
            pr.step(&mut Refs::new(&mut out, Access::default()));
        }
        out
    }

    #[test]
    fn footprint_follows_the_scale() {
        // 512 vertices: index 4 104 bytes (2 pages), neighbors 32 768 (8), scores and
        // contributions 2 048 each (1 page each).
        assert_eq!(footprint(&small()).expect("valid"), (2 + 8 + 1 + 1) * 4096);
    }

    #[test]
    fn an_iteration_reads_each_edge_once_and_writes_each_score_once() {
        let cfg = small();
        let mut pr = program(&cfg);
        steps_until(&mut pr, |p| p.phase == Phase::Contrib(0));
        let records = steps_until(&mut pr, |p| p.iteration == 1);
        let (g, l) = (pr.graph.clone(), pr.layout.clone());
        let n = g.vertices;
        let edges: u64 = g.degree.iter().map(|&d| d as u64).sum();
        let count = |start: u64, words: u64, write: bool| {
            let mut per = vec![0u32; words as usize];
            for a in records.iter().filter(|a| a.is_write() == write && (start..start + words * WORD).contains(&a.vaddr)) {
                per[((a.vaddr - start) / WORD) as usize] += 1;
            }
            per
        };
        // Every packed neighbour slot once, none of the unused tail.
        let neighbour_loads = count(l.neighbors, g.slots(), false);
        assert!(neighbour_loads[..edges as usize].iter().all(|&c| c == 1));
        assert!(neighbour_loads[edges as usize..].iter().all(|&c| c == 0));
        // Each contribution written once and read once per in-edge.
        assert!(count(l.contrib, n, true).iter().all(|&c| c == 1));
        assert_eq!(count(l.contrib, n, false), g.degree, "one load per in-edge");
        // Scores: read in both loops, written once, in the second.
        assert!(count(l.scores, n, false).iter().all(|&c| c == 2));
        assert!(count(l.scores, n, true).iter().all(|&c| c == 1));
    }

    #[test]
    fn a_trial_ends_when_the_error_falls_below_the_tolerance() {
        let cfg = small();
        let mut pr = program(&cfg);
        steps_until(&mut pr, |p| p.phase == Phase::Contrib(0));
        steps_until(&mut pr, |p| matches!(p.phase, Phase::Init(_)));
        assert!(pr.iteration < cfg.pagerank.iterations, "converged within the limit: {} iterations", pr.iteration);
        assert!(pr.error < cfg.pagerank.tolerance);
        // With a lower limit than that, the trial ends at the limit instead.
        let mut capped = cfg.clone();
        capped.pagerank.iterations = 3;
        let mut short = program(&capped);
        steps_until(&mut short, |p| p.phase == Phase::Contrib(0));
        steps_until(&mut short, |p| matches!(p.phase, Phase::Init(_)));
        assert_eq!(short.iteration, 3);
    }

    #[test]
    fn emits_exactly_refs_within_the_footprint() {
        let cfg = small();
        check_app_common(&cfg, &run(&cfg));
    }

    #[test]
    fn is_deterministic() {
        // PageRank draws nothing at run time: the cores of a tenant run the same
        // trials on the same graph, and only the seed (through the graph) tells runs apart.
        let cfg = small();
        let first = |cfg: &WorkloadConfig| {
            let mut cfg = cfg.clone();
            cfg.refs = 10_000;
            run(&cfg).into_iter().map(|a| (a.vaddr, a.flags)).collect::<Vec<_>>()
        };
        assert_eq!(first(&cfg), first(&cfg));
        assert_ne!(first(&cfg), first(&WorkloadConfig { seed: 2, ..cfg.clone() }));
    }
}
