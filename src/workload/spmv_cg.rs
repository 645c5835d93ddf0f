//! `spmv-cg`: the conjugate-gradient kernel of the NAS Parallel Benchmarks (NPB
//! CG), as its C reference (`cg.c`) runs it: sparse matrix–vector products over a
//! CSR matrix with random column positions, between dense vector updates. Rainbow
//! evaluates NPB-CG at a 22.9 GB footprint (§II-B Table I, §IV-A Table V): class D
//! (NA = 1.5 M, NONZER = 21) with its construction arrays, by our count (the
//! paper does not name the class).
//!
//! # Layout (NPB's arrays, each its own mapping)
//! `colidx` (`int`, one per nonzero), `rowstr` (`int`, `NA + 1`), `a` (`double`, one
//! per nonzero), then the vectors `x`, `z`, `p`, `q`, `r` (`double`, `NA + 2`). The
//! arrays `makea` needs only while building the matrix are left out: the trace
//! starts after construction.
//!
//! # The matrix
//! NPB's `makea` sums `NA` outer products of random sparse vectors with `NONZER + 1`
//! entries, giving rows of about `(NONZER + 1)^2` nonzeros at uniformly random
//! columns, plus the diagonal. Here each row has exactly `L = min((nonzer + 1)^2, NA)`
//! nonzeros: the columns are split into `L` equal strata and the row takes one
//! random column in each, the diagonal in its own stratum. Columns are sorted and
//! distinct, as in NPB's CSR, and are recomputed from a keyed hash of (row, stratum)
//! whenever the program reads `colidx`, so the matrix costs no host memory. Values
//! are not computed: CG's references do not depend on them (it runs a fixed number
//! of iterations).
//!
//! # The iterations (`cg.c`, main loop and `conj_grad`)
//! Each run sets `x = 1`, then repeats `cg.iterations` times (NPB's NITER):
//! `conj_grad` — `q = z = 0, r = p = x`; `ρ = r·r`; 25 times (`cgitmax`):
//! `q = A p`, `d = p·q`, `z += α p` and `r −= α q`, `ρ = r·r`, `p = r + β p`;
//! then `r = A z` and `‖x − r‖` — followed by `x·z`, `z·z` and `x = z / ‖z‖`.
//! A matrix–vector product loads, per row, `rowstr[j]` and `rowstr[j + 1]`, then
//! for each nonzero `colidx[k]`, `a[k]` and the source vector at that column, and
//! stores the row's sum. When a run ends the next begins.
//!
//! Loops without a reduction are vectorized and issue 32-byte accesses;
//! reductions (dot products, the matrix–vector sums) stay scalar, one 8-byte access
//! per element, because a compiler may not reorder a floating-point sum unless told
//! to (`-ffast-math`), which NPB's build does not do.
//!
//! # Instructions
//! 3 before the first access of each loop iteration (increment, compare, branch),
//! 1 before each other access (the arithmetic feeding it); in the matrix–vector
//! product 3 before `colidx[k]`, 0 before `a[k]`, 1 before the gathered element and
//! before the row's store.
//!
//! # Host memory
//! None per row or nonzero: the column strata bounds, `L + 1` numbers.

use super::program::{hash, largest_fitting, Heap, Program, Refs, Run, VECTOR_BYTES};
use super::{layout_rng, Emitter, WorkloadConfig};
use crate::trace::{Source, WRITE};
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// The `[workload.cg]` table.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CgConfig {
    /// Rows of the matrix (NPB's NA), up to 2^31 - 2; 0 takes as many as fit
    /// `workload.footprint`.
    pub rows: u64,
    /// NPB's NONZER: rows hold `(nonzer + 1)^2` nonzeros (class C: 15, D: 21, E: 26).
    pub nonzer: u32,
    /// Outer iterations of a run (NPB's NITER: 75 for class C, 100 for D and E).
    pub iterations: u32,
}

impl Default for CgConfig {
    /// Class D's shape, the one behind Rainbow's NPB-CG footprint.
    fn default() -> CgConfig {
        CgConfig { rows: 0, nonzer: 21, iterations: 100 }
    }
}

/// Most rows: `int` row and column numbers.
const MAX_ROWS: u64 = (1 << 31) - 2;

impl CgConfig {
    /// Checks every field; errors name it.
    pub(super) fn validate(&self) -> Result<()> {
        if self.rows > MAX_ROWS {
            bail!("workload.cg.rows: must be at most 2^31 - 2, got {}", self.rows);
        }
        if self.nonzer == 0 || self.nonzer > 1000 {
            bail!("workload.cg.nonzer: must be from 1 to 1000, got {}", self.nonzer);
        }
        if self.iterations == 0 {
            bail!("workload.cg.iterations: must be at least 1, got 0");
        }
        Ok(())
    }
}

/// Iterations of the inner CG loop (NPB's `cgitmax`).
const CG_ITERATIONS: u32 = 25;
/// Bytes of an `int` and of a `double`.
const INT: u64 = 4;
const DOUBLE: u64 = 8;
/// Loop iterations (elements or vectors) per step at most.
const PER_STEP: u64 = 256;

const LOOP_INSTRS: u32 = 3;
const OP_INSTRS: u32 = 1;

/// Where NPB's arrays lie.
#[derive(Clone, Debug)]
struct Layout {
    rows: u64,
    /// Nonzeros per row.
    per_row: u64,
    colidx: u64,
    rowstr: u64,
    a: u64,
    /// `x`, `z`, `p`, `q`, `r`, indexed by [`Vector`].
    vectors: [u64; 5],
    footprint: u64,
}

impl Layout {
    fn new(base: u64, rows: u64, nonzer: u32) -> Layout {
        let per_row = ((nonzer as u64 + 1) * (nonzer as u64 + 1)).min(rows);
        let nonzeros = rows * per_row;
        let mut heap = Heap::new(base);
        let colidx = heap.alloc(nonzeros * INT);
        let rowstr = heap.alloc((rows + 1) * INT);
        let a = heap.alloc(nonzeros * DOUBLE);
        let vectors = [(); 5].map(|_| heap.alloc((rows + 2) * DOUBLE));
        Layout { rows, per_row, colidx, rowstr, a, vectors, footprint: heap.footprint() }
    }
}

fn layout(cfg: &WorkloadConfig) -> Result<Layout> {
    let (base, nonzer) = (cfg.base_vaddr, cfg.cg.nonzer);
    if cfg.cg.rows > 0 {
        return Ok(Layout::new(base, cfg.cg.rows, nonzer));
    }
    let target = cfg.footprint.bytes();
    match largest_fitting(1, MAX_ROWS, |n| Layout::new(base, n, nonzer).footprint <= target) {
        Some(rows) => Ok(Layout::new(base, rows, nonzer)),
        None => bail!("workload.footprint: spmv-cg needs at least {} bytes, got {}", Layout::new(base, 1, nonzer).footprint, cfg.footprint),
    }
}

/// Bytes of the arrays of a run of `cfg`; `cfg.cg` must be valid.
pub(super) fn footprint(cfg: &WorkloadConfig) -> Result<u64> {
    Ok(layout(cfg)?.footprint)
}

/// Builds the generator for one core and tenant; `cfg` must be valid.
pub(super) fn build(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Result<Box<dyn Source>> {
    let cg = Cg::new(layout(cfg)?, cfg.cg.iterations, layout_rng(cfg, tenant).next_u64());
    Ok(Box::new(Run::new(cg, Emitter::new(cfg, core, tenant, DOUBLE as u32))))
}

/// NPB's dense vectors.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Vector {
    X = 0,
    Z = 1,
    P = 2,
    Q = 3,
    R = 4,
}

/// One access of a dense loop's body: a load or a store of a vector's element.
type Touch = (Vector, u8);
const LOAD: u8 = 0;
const STORE: u8 = WRITE;

/// A dense loop: its body, whether it is vectorized, and whether it runs over
/// `NA + 1` elements (the loops NPB writes with `naa + 1`) or `NA`.
#[derive(Clone, Copy, Debug)]
struct Dense {
    body: &'static [Touch],
    vectorized: bool,
    extra: bool,
}

use Vector::{P, Q, R, X, Z};

/// `x[i] = 1.0`.
const SET_X: Dense = Dense { body: &[(X, STORE)], vectorized: true, extra: true };
/// `q = 0, z = 0, r = x, p = r`.
const START: Dense = Dense { body: &[(X, LOAD), (Q, STORE), (Z, STORE), (R, STORE), (P, STORE)], vectorized: true, extra: true };
/// `ρ = Σ r·r`.
const RHO: Dense = Dense { body: &[(R, LOAD)], vectorized: false, extra: false };
/// `d = Σ p·q`.
const DOT: Dense = Dense { body: &[(P, LOAD), (Q, LOAD)], vectorized: false, extra: false };
/// `z = z + α p; r = r − α q`.
const AXPY: Dense = Dense { body: &[(Z, LOAD), (P, LOAD), (Z, STORE), (R, LOAD), (Q, LOAD), (R, STORE)], vectorized: true, extra: false };
/// `p = r + β p`.
const XPAY: Dense = Dense { body: &[(R, LOAD), (P, LOAD), (P, STORE)], vectorized: true, extra: false };
/// `Σ (x − r)²`.
const RESIDUAL: Dense = Dense { body: &[(X, LOAD), (R, LOAD)], vectorized: false, extra: false };
/// `Σ x·z` and `Σ z·z`.
const NORMS: Dense = Dense { body: &[(X, LOAD), (Z, LOAD)], vectorized: false, extra: false };
/// `x = c·z`.
const SCALE: Dense = Dense { body: &[(Z, LOAD), (X, STORE)], vectorized: true, extra: false };

/// A loop of the benchmark.
#[derive(Clone, Copy, Debug)]
enum Loop {
    Dense(Dense),
    /// `target = A · source`.
    Product { source: Vector, target: Vector },
}

/// Loops of one outer iteration after the first: `conj_grad`'s start and `ρ`, five
/// per inner iteration, the residual's product and norm, the norms and the scaling.
const LOOPS_PER_ITERATION: u32 = 2 + 5 * CG_ITERATIONS + 4;

/// The `index`-th loop of an outer iteration.
fn loop_at(index: u32) -> Loop {
    let inner = index.wrapping_sub(2);
    match index {
        0 => Loop::Dense(START),
        1 => Loop::Dense(RHO),
        _ if inner < 5 * CG_ITERATIONS => match inner % 5 {
            0 => Loop::Product { source: P, target: Q },
            1 => Loop::Dense(DOT),
            2 => Loop::Dense(AXPY),
            3 => Loop::Dense(RHO),
            _ => Loop::Dense(XPAY),
        },
        _ => match index - 2 - 5 * CG_ITERATIONS {
            0 => Loop::Product { source: Z, target: R },
            1 => Loop::Dense(RESIDUAL),
            2 => Loop::Dense(NORMS),
            _ => Loop::Dense(SCALE),
        },
    }
}

/// NPB CG, run after run.
struct Cg {
    layout: Layout,
    iterations: u32,
    /// Keys the column hash.
    column_key: u64,
    /// First column of each stratum, `per_row + 1` entries.
    strata: Vec<u64>,
    /// Outer iteration of the run; `None` while setting `x = 1` at the run's start.
    iteration: Option<u32>,
    /// Loop within the outer iteration.
    index: u32,
    /// Next element (dense loops) or row (products).
    at: u64,
}

impl Cg {
    fn new(layout: Layout, iterations: u32, column_key: u64) -> Cg {
        let (rows, per_row) = (layout.rows, layout.per_row);
        let strata = (0..=per_row).map(|s| (s as u128 * rows as u128 / per_row as u128) as u64).collect();
        Cg { layout, iterations, column_key, strata, iteration: None, index: 0, at: 0 }
    }

    /// The column of the `s`-th nonzero of `row`: the row itself in the stratum
    /// holding it, a hashed column of the stratum elsewhere.
    #[inline]
    fn column(&self, row: u64, s: u64) -> u64 {
        let (low, high) = (self.strata[s as usize], self.strata[s as usize + 1]);
        if (low..high).contains(&row) {
            return row;
        }
        let h = hash(self.column_key, row * self.layout.per_row + s);
        low + ((h as u128 * (high - low) as u128) >> 64) as u64
    }

    fn current(&self) -> Loop {
        match self.iteration {
            None => Loop::Dense(SET_X),
            Some(_) => loop_at(self.index),
        }
    }

    /// Moves to the next loop, the next outer iteration or the next run.
    fn advance(&mut self) {
        self.at = 0;
        self.iteration = match self.iteration {
            None => Some(0),
            Some(i) => {
                self.index += 1;
                if self.index < LOOPS_PER_ITERATION {
                    Some(i)
                } else {
                    self.index = 0;
                    (i + 1 < self.iterations).then_some(i + 1)
                }
            }
        };
    }

    /// Runs up to [`PER_STEP`] iterations of a dense loop; returns whether it ended.
    fn dense(&mut self, d: Dense, refs: &mut Refs) -> bool {
        let elements = self.layout.rows + d.extra as u64;
        let width = if d.vectorized { VECTOR_BYTES / DOUBLE } else { 1 };
        let end = (self.at + PER_STEP * width).min(elements);
        let mut j = self.at;
        while j < end {
            let bytes = width.min(elements - j) * DOUBLE;
            for (i, &(vector, flags)) in d.body.iter().enumerate() {
                let instrs = if i == 0 { LOOP_INSTRS } else { OP_INSTRS };
                refs.push(self.layout.vectors[vector as usize] + j * DOUBLE, bytes, instrs, flags);
            }
            j += width;
        }
        self.at = end;
        end == elements
    }

    /// Runs one row of `target = A · source`; returns whether the product ended.
    fn product(&mut self, source: Vector, target: Vector, refs: &mut Refs) -> bool {
        let l = &self.layout;
        let row = self.at;
        refs.load(l.rowstr + row * INT, INT, LOOP_INSTRS);
        refs.load(l.rowstr + (row + 1) * INT, INT, 0);
        let first = row * l.per_row;
        for s in 0..l.per_row {
            let k = first + s;
            refs.load(l.colidx + k * INT, INT, LOOP_INSTRS);
            refs.load(l.a + k * DOUBLE, DOUBLE, 0);
            refs.load(l.vectors[source as usize] + self.column(row, s) * DOUBLE, DOUBLE, OP_INSTRS);
        }
        refs.store(l.vectors[target as usize] + row * DOUBLE, DOUBLE, OP_INSTRS);
        self.at += 1;
        self.at == l.rows
    }
}

impl Program for Cg {
    fn step(&mut self, refs: &mut Refs) {
        let ended = match self.current() {
            Loop::Dense(d) => self.dense(d, refs),
            Loop::Product { source, target } => self.product(source, target, refs),
        };
        if ended {
            self.advance();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_app_common, config, run};
    use super::*;
    use crate::trace::Access;

    fn small() -> WorkloadConfig {
        let mut cfg = config("spmv-cg");
        cfg.cg.rows = 300;
        cfg.cg.nonzer = 4;
        cfg.cg.iterations = 2;
        cfg
    }

    fn program(cfg: &WorkloadConfig) -> Cg {
        Cg::new(layout(cfg).expect("valid"), cfg.cg.iterations, 99)
    }

    /// The references of the first outer iteration (after `x = 1`).
    fn first_iteration(cg: &mut Cg) -> Vec<Access> {
        let mut out = Vec::new();
        while cg.iteration.is_none() {
            cg.step(&mut Refs::new(&mut out, Access::default()));
        }
        out.clear();
        while cg.iteration == Some(0) {
            cg.step(&mut Refs::new(&mut out, Access::default()));
        }
        out
    }

    #[test]
    fn rows_hold_sorted_distinct_columns_with_the_diagonal() {
        let cg = program(&small());
        assert_eq!(cg.layout.per_row, 25);
        for row in 0..300 {
            let cols: Vec<u64> = (0..25).map(|s| cg.column(row, s)).collect();
            assert!(cols.windows(2).all(|w| w[0] < w[1]), "row {row}: {cols:?}");
            assert!(cols.contains(&row) && cols[24] < 300);
        }
    }

    #[test]
    fn an_outer_iteration_makes_26_products_and_the_vector_updates() {
        let cfg = small();
        let mut cg = program(&cfg);
        let records = first_iteration(&mut cg);
        let l = &cg.layout;
        let (rows, nonzeros) = (l.rows, l.rows * l.per_row);
        let bytes = |start: u64, len: u64, write: bool| -> u64 {
            let range = start..start + len;
            records.iter().filter(|a| a.is_write() == write && range.contains(&a.vaddr)).map(|a| a.size as u64).sum()
        };
        // 25 products with p and the residual's with z: every colidx and a entry 26 times.
        assert_eq!(bytes(l.colidx, nonzeros * INT, false), 26 * nonzeros * INT);
        assert_eq!(bytes(l.a, nonzeros * DOUBLE, false), 26 * nonzeros * DOUBLE);
        assert_eq!(bytes(l.rowstr, (rows + 1) * INT, false), 26 * 2 * rows * INT);
        let v = |vector: Vector| l.vectors[vector as usize];
        let span = (rows + 2) * DOUBLE;
        // Stores: the start of conj_grad covers NA + 1 elements, every other loop NA.
        let (start, each) = ((rows + 1) * DOUBLE, rows * DOUBLE);
        assert_eq!(bytes(v(Q), span, true), start + 25 * each);
        assert_eq!(bytes(v(Z), span, true), start + 25 * each);
        assert_eq!(bytes(v(P), span, true), start + 25 * each);
        assert_eq!(bytes(v(R), span, true), start + 25 * each + each);
        assert_eq!(bytes(v(X), span, true), each);
        // Gathers: each product loads the source at every nonzero's column, in the
        // same order for p (inner iterations) and z (residual).
        let gathers = |vector: Vector| -> Vec<u64> {
            records.iter().filter(|a| a.size as u64 == DOUBLE && !a.is_write() && (v(vector)..v(vector) + span).contains(&a.vaddr))
                .map(|a| (a.vaddr - v(vector)) / DOUBLE)
                .collect()
        };
        let expected: Vec<u64> = (0..rows).flat_map(|row| (0..l.per_row).map(move |s| (row, s))).map(|(row, s)| cg.column(row, s)).collect();
        let z = gathers(Z);
        assert_eq!(&z[z.len() - expected.len() - rows as usize..z.len() - rows as usize], &expected[..], "the residual's product gathers z");
        let p = gathers(P);
        assert!(p.windows(expected.len()).any(|w| w == &expected[..]), "the products gather p");
    }

    #[test]
    fn runs_restart_after_their_iterations() {
        let cfg = small();
        let mut cg = program(&cfg);
        let mut out = Vec::new();
        while cg.iteration != Some(1) {
            cg.step(&mut Refs::new(&mut out, Access::default()));
        }
        while cg.iteration.is_some() {
            cg.step(&mut Refs::new(&mut out, Access::default()));
        }
        assert_eq!((cg.index, cg.at), (0, 0), "back to x = 1");
    }

    #[test]
    fn footprint_fits_the_target() {
        let cfg = WorkloadConfig { cg: CgConfig::default(), ..config("spmv-cg") };
        let l = layout(&cfg).expect("fits");
        assert!(l.footprint <= 4 << 20);
        assert!(Layout::new(cfg.base_vaddr, l.rows + 1, 21).footprint > 4 << 20);
        assert_eq!(l.per_row, 484);
    }

    #[test]
    fn emits_exactly_refs_within_the_footprint() {
        let cfg = small();
        check_app_common(&cfg, &run(&cfg));
    }

    #[test]
    fn is_deterministic() {
        // The matrix comes from the seed; cores of a tenant run the same iterations,
        // so only the seed tells runs apart.
        let cfg = WorkloadConfig { refs: 10_000, ..small() };
        let addresses = |cfg: &WorkloadConfig| run(cfg).into_iter().map(|a| a.vaddr).collect::<Vec<_>>();
        assert_eq!(addresses(&cfg), addresses(&cfg));
        assert_ne!(addresses(&cfg), addresses(&WorkloadConfig { seed: 5, ..cfg.clone() }));
    }
}
