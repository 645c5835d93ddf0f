//! `gemm`: dense linear algebra as Linpack runs it. Two kernels share one blocked
//! matrix multiply:
//! - `gemm`: `C += A·B` on three `n × n` matrices, over and over;
//! - `lu`: the factorization of High-Performance Linpack (HPL), which Rainbow
//!   evaluates at a 23.9 GB footprint (§II-B Table I, §IV-A Table V): a
//!   right-looking blocked LU with partial pivoting, over and over.
//!
//! Matrices are column-major `double`s with leading dimension `n`, each its own
//! mapping; the multiply's packing buffers follow them.
//!
//! # The blocked multiply (BLIS, Goto's algorithm)
//! `C += A·B` runs as BLIS runs it on Haswell (micro-tile `MR × NR` = 6 × 8, blocks
//! `MC` = 72, `KC` = 256, `NC` = 4080): for each `NC`-column block of `B` and
//! `KC`-row block of it, pack that block of `B` into `Bp` in micro-panels of 8
//! columns (`KC` rows of 8 consecutive elements); for each `MC`-row block of `A`,
//! pack it into `Ap` in micro-panels of 6 rows; then run the micro-kernel over every
//! 6 × 8 tile: for each of the `KC` steps, load a row of the `B` micro-panel (two
//! 32-byte loads) and broadcast six elements of the `A` micro-panel into 12 fused
//! multiply-adds, and at the end load and store the tile of `C`, one column (6
//! elements) at a time. The micro-kernel's loads hit the packed buffers, which the
//! blocking keeps in L1 and L2; memory sees the packing reads of `A` and `B` and the
//! tile updates of `C`.
//!
//! # The LU (HPL's `pdgesv` without the solve)
//! For each panel of `nb` columns starting at `k`:
//! 1. factor the panel (`dgetf2`): for each column `j`, find the pivot (a pass
//!    over the column below the diagonal), record it in `ipiv`, swap rows `j` and
//!    the pivot row across the panel, scale the column below the diagonal, and
//!    apply the rank-1 update to the rest of the panel, column by column;
//! 2. apply the panel's row swaps to the columns right of the panel (`dlaswp`),
//!    each swap a pass across the row, one element per column: a stride of `n`
//!    doubles, one page per element for large `n`;
//! 3. solve for the row block of `U` right of the panel (`dtrsm`, unit lower
//!    triangle), column by column;
//! 4. update the trailing matrix, `A22 -= A21·A12`, with the blocked multiply.
//!
//! Values are not computed: the pivot of column `j` is a keyed hash of the
//! factorization count and `j`, uniform over the rows at and below `j`, as it is for
//! HPL's random matrix. Each factorization starts over on the same matrix; the
//! matrix generation between them is not traced. A factorization costs about
//! `n^3/9` references, mostly in step 4; with `n` near 10 000 a run of tens of
//! millions of references sees the first panels, whose factorization (step 1)
//! alone takes about `nb^2 · n / 3` references.
//!
//! Vector loops issue 32-byte accesses; the swaps of steps 1 and 2 and the
//! broadcasts are 8-byte accesses.
//!
//! # Instructions
//! Micro-kernel: per `KC` step 4 before the first `B` load (the last two
//! multiply-adds of the previous step and the loop's decrement and branch), 2
//! before each broadcast after the first (the two multiply-adds of the previous
//! one). Elsewhere 1 before each access (the vector operation or the shuffle), 2
//! per piece of the pivot search (absolute value, compare-and-select).
//!
//! # Host memory
//! None beyond the panel's pivots.

use super::program::{hash, largest_fitting, pieces, Heap, Program, Refs, Run, VECTOR_BYTES};
use super::{layout_rng, Emitter, WorkloadConfig};
use crate::trace::{Source, WRITE};
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// Which computation runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GemmKernel {
    /// `C += A·B`, repeated.
    Gemm,
    /// HPL's blocked LU factorization, repeated.
    Lu,
}

/// The `[workload.gemm]` table.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GemmConfig {
    /// "gemm" (`C += A·B`, the kernel that does all but a few percent of Linpack's
    /// work) or "lu" (Linpack's whole factorization: panels, row swaps, triangular
    /// solves, updates).
    pub kernel: GemmKernel,
    /// Order of the matrices; 0 takes the largest that fits `workload.footprint`.
    pub n: u64,
    /// Panel width of the LU (HPL's NB), 1 to 4096.
    pub nb: u64,
}

impl Default for GemmConfig {
    /// `nb` = 256 equals BLIS's `KC`, so each trailing update packs one block of `A12`.
    fn default() -> GemmConfig {
        GemmConfig { kernel: GemmKernel::Gemm, n: 0, nb: 256 }
    }
}

/// Largest order considered: 2^22 (a matrix of 128 TiB).
const MAX_N: u64 = 1 << 22;

impl GemmConfig {
    /// Checks every field; errors name it.
    pub(super) fn validate(&self) -> Result<()> {
        if self.n > MAX_N {
            bail!("workload.gemm.n: must be at most 2^22, got {}", self.n);
        }
        if !(1..=4096).contains(&self.nb) {
            bail!("workload.gemm.nb: must be from 1 to 4096, got {}", self.nb);
        }
        Ok(())
    }
}

/// BLIS's Haswell blocking for `double` (`bli_cntx_init_haswell`).
const MR: u64 = 6;
const NR: u64 = 8;
const MC: u64 = 72;
const KC: u64 = 256;
const NC: u64 = 4080;
const DOUBLE: u64 = 8;
/// Bytes of an `ipiv` entry (`int`).
const INT: u64 = 4;
/// Rows of a `B` column packed per group of stores (one 32-byte load per column).
const PACK_ROWS: u64 = VECTOR_BYTES / DOUBLE;
/// Columns swapped per step of `dlaswp`.
const SWAP_COLUMNS_PER_STEP: u64 = 256;

const KERNEL_LOOP_INSTRS: u32 = 4;
const FMA_INSTRS: u32 = 2;
const OP_INSTRS: u32 = 1;
const PIVOT_INSTRS: u32 = 2;

/// Where the matrices and buffers lie.
#[derive(Clone, Debug)]
struct Layout {
    n: u64,
    /// `A`, and for the `gemm` kernel `B` and `C`.
    matrices: Vec<u64>,
    /// `ipiv` (the `lu` kernel).
    ipiv: u64,
    ap: u64,
    bp: u64,
    footprint: u64,
}

impl Layout {
    fn new(base: u64, n: u64, cfg: &GemmConfig) -> Layout {
        let mut heap = Heap::new(base);
        let count = if cfg.kernel == GemmKernel::Gemm { 3 } else { 1 };
        let matrices = (0..count).map(|_| heap.alloc(n * n * DOUBLE)).collect();
        let ipiv = if cfg.kernel == GemmKernel::Lu { heap.alloc(n * INT) } else { 0 };
        // Packing buffers as large as the largest block the kernel packs.
        let depth = if cfg.kernel == GemmKernel::Gemm { n } else { cfg.nb.min(n) };
        let ap = heap.alloc(MC.min(n).next_multiple_of(MR) * KC.min(depth) * DOUBLE);
        let bp = heap.alloc(KC.min(depth) * NC.min(n).next_multiple_of(NR) * DOUBLE);
        Layout { n, matrices, ipiv, ap, bp, footprint: heap.footprint() }
    }
}

fn layout(cfg: &WorkloadConfig) -> Result<Layout> {
    let (base, g) = (cfg.base_vaddr, &cfg.gemm);
    if g.n > 0 {
        return Ok(Layout::new(base, g.n, g));
    }
    let target = cfg.footprint.bytes();
    match largest_fitting(1, MAX_N, |n| Layout::new(base, n, g).footprint <= target) {
        Some(n) => Ok(Layout::new(base, n, g)),
        None => bail!("workload.footprint: gemm needs at least {} bytes, got {}", Layout::new(base, 1, g).footprint, cfg.footprint),
    }
}

/// Bytes of the matrices and buffers of a run of `cfg`; `cfg.gemm` must be valid.
pub(super) fn footprint(cfg: &WorkloadConfig) -> Result<u64> {
    Ok(layout(cfg)?.footprint)
}

/// Builds the generator for one core and tenant; `cfg` must be valid.
pub(super) fn build(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Result<Box<dyn Source>> {
    let layout = layout(cfg)?;
    let emitter = Emitter::new(cfg, core, tenant, DOUBLE as u32);
    Ok(match cfg.gemm.kernel {
        GemmKernel::Gemm => Box::new(Run::new(Multiply::new(layout), emitter)),
        GemmKernel::Lu => Box::new(Run::new(Lu::new(layout, cfg.gemm.nb, layout_rng(cfg, tenant).next_u64()), emitter)),
    })
}

/// A column-major (sub)matrix: element `(i, j)` at `base + (j·ld + i)·8`.
#[derive(Clone, Copy, Debug)]
struct Matrix {
    base: u64,
    ld: u64,
}

impl Matrix {
    #[inline]
    fn at(self, i: u64, j: u64) -> u64 {
        self.base + (j * self.ld + i) * DOUBLE
    }

    /// The submatrix whose `(0, 0)` is this one's `(i, j)`.
    fn sub(self, i: u64, j: u64) -> Matrix {
        Matrix { base: self.at(i, j), ld: self.ld }
    }
}

/// Where a blocked multiply stands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    /// Packing the micro-panel of `B` at column `jr` of the block.
    PackB(u64),
    /// Packing the micro-panel of `A` at row `ir` of the block.
    PackA(u64),
    /// The micro-kernel on the tile at (`ir`, `jr`) of the block.
    Kernel { ir: u64, jr: u64 },
    Done,
}

/// One blocked multiply `C(m × n) += A(m × k) · B(k × n)`, a step at a time.
#[derive(Clone, Debug)]
struct BlockedMultiply {
    m: u64,
    n: u64,
    k: u64,
    a: Matrix,
    b: Matrix,
    c: Matrix,
    ap: u64,
    bp: u64,
    /// Current blocks: columns of `B` and `C`, depth, rows of `A` and `C`.
    jc: u64,
    pc: u64,
    ic: u64,
    stage: Stage,
}

impl BlockedMultiply {
    #[allow(clippy::too_many_arguments)]
    fn new(m: u64, n: u64, k: u64, a: Matrix, b: Matrix, c: Matrix, ap: u64, bp: u64) -> BlockedMultiply {
        let stage = if m == 0 || n == 0 || k == 0 { Stage::Done } else { Stage::PackB(0) };
        BlockedMultiply { m, n, k, a, b, c, ap, bp, jc: 0, pc: 0, ic: 0, stage }
    }

    fn nc(&self) -> u64 {
        NC.min(self.n - self.jc)
    }

    fn kc(&self) -> u64 {
        KC.min(self.k - self.pc)
    }

    fn mc(&self) -> u64 {
        MC.min(self.m - self.ic)
    }

    /// Runs one packing or micro-kernel step.
    fn step(&mut self, refs: &mut Refs) {
        match self.stage {
            Stage::PackB(jr) => {
                self.pack_b(jr, refs);
                self.stage = if jr + NR < self.nc() { Stage::PackB(jr + NR) } else { Stage::PackA(0) };
            }
            Stage::PackA(ir) => {
                self.pack_a(ir, refs);
                self.stage = if ir + MR < self.mc() { Stage::PackA(ir + MR) } else { Stage::Kernel { ir: 0, jr: 0 } };
            }
            Stage::Kernel { ir, jr } => {
                self.kernel(ir, jr, refs);
                self.stage = self.after_kernel(ir, jr);
            }
            Stage::Done => unreachable!("a finished multiply is not stepped"),
        }
    }

    /// The stage after the tile at (`ir`, `jr`): the next tile, block of `A`, depth
    /// block, column block, or the end.
    fn after_kernel(&mut self, ir: u64, jr: u64) -> Stage {
        if ir + MR < self.mc() {
            return Stage::Kernel { ir: ir + MR, jr };
        }
        if jr + NR < self.nc() {
            return Stage::Kernel { ir: 0, jr: jr + NR };
        }
        self.ic += MC;
        if self.ic < self.m {
            return Stage::PackA(0);
        }
        self.ic = 0;
        self.pc += KC;
        if self.pc < self.k {
            return Stage::PackB(0);
        }
        self.pc = 0;
        self.jc += NC;
        if self.jc < self.n {
            Stage::PackB(0)
        } else {
            Stage::Done
        }
    }

    /// Packs columns `jr..jr + 8` of the current block of `B` into their micro-panel:
    /// four rows at a time, a 32-byte load from each column, then the four packed
    /// rows of 8 elements (zero-padded past the block's last column).
    fn pack_b(&self, jr: u64, refs: &mut Refs) {
        let (kc, nr) = (self.kc(), NR.min(self.nc() - jr));
        let panel = self.bp + jr * kc * DOUBLE;
        for p in (0..kc).step_by(PACK_ROWS as usize) {
            let rows = PACK_ROWS.min(kc - p);
            for j in 0..nr {
                refs.sweep(self.b.at(self.pc + p, self.jc + jr + j), rows * DOUBLE, VECTOR_BYTES, OP_INSTRS, 0);
            }
            refs.sweep(panel + p * NR * DOUBLE, rows * NR * DOUBLE, VECTOR_BYTES, OP_INSTRS, WRITE);
        }
    }

    /// Packs rows `ir..ir + 6` of the current block of `A` into their micro-panel:
    /// for each column, the 6 elements (zero-padded past the block's last row).
    fn pack_a(&self, ir: u64, refs: &mut Refs) {
        let (kc, mr) = (self.kc(), MR.min(self.mc() - ir));
        let panel = self.ap + ir * kc * DOUBLE;
        for p in 0..kc {
            refs.sweep(self.a.at(self.ic + ir, self.pc + p), mr * DOUBLE, VECTOR_BYTES, OP_INSTRS, 0);
            refs.sweep(panel + p * MR * DOUBLE, MR * DOUBLE, VECTOR_BYTES, 0, WRITE);
        }
    }

    /// The micro-kernel on the tile at rows `ir..` and columns `jr..` of the blocks.
    fn kernel(&self, ir: u64, jr: u64, refs: &mut Refs) {
        let kc = self.kc();
        let a_panel = self.ap + ir * kc * DOUBLE;
        let b_panel = self.bp + jr * kc * DOUBLE;
        for p in 0..kc {
            let b_row = b_panel + p * NR * DOUBLE;
            refs.load(b_row, VECTOR_BYTES, KERNEL_LOOP_INSTRS);
            refs.load(b_row + VECTOR_BYTES, VECTOR_BYTES, 0);
            let a_column = a_panel + p * MR * DOUBLE;
            for i in 0..MR {
                refs.load(a_column + i * DOUBLE, DOUBLE, if i == 0 { 0 } else { FMA_INSTRS });
            }
        }
        let (mr, nr) = (MR.min(self.mc() - ir), NR.min(self.nc() - jr));
        for j in 0..nr {
            let column = self.c.at(self.ic + ir, self.jc + jr + j);
            refs.sweep(column, mr * DOUBLE, VECTOR_BYTES, OP_INSTRS, 0);
            refs.sweep(column, mr * DOUBLE, VECTOR_BYTES, OP_INSTRS, WRITE);
        }
    }
}

/// The `gemm` kernel: `C += A·B`, over and over.
struct Multiply {
    layout: Layout,
    multiply: BlockedMultiply,
}

impl Multiply {
    fn new(layout: Layout) -> Multiply {
        Multiply { multiply: Self::fresh(&layout), layout }
    }

    fn fresh(l: &Layout) -> BlockedMultiply {
        let matrix = |i: usize| Matrix { base: l.matrices[i], ld: l.n };
        BlockedMultiply::new(l.n, l.n, l.n, matrix(0), matrix(1), matrix(2), l.ap, l.bp)
    }
}

impl Program for Multiply {
    fn step(&mut self, refs: &mut Refs) {
        if self.multiply.stage == Stage::Done {
            self.multiply = Self::fresh(&self.layout);
        }
        self.multiply.step(refs);
    }
}

/// Where the factorization stands; `j` is a column of the matrix, `column` the
/// one being worked on.
#[derive(Clone, Debug)]
enum LuStage {
    /// Pivot search in column `j`.
    Pivot(u64),
    /// Swap of rows `j` and its pivot across the panel.
    Swap(u64),
    /// Scaling of column `j` below the diagonal.
    Scale(u64),
    /// Rank-1 update of panel column `column` by column `j`.
    Update { j: u64, column: u64 },
    /// Row swap `j` applied to the trailing columns from `column`.
    Laswp { j: u64, column: u64 },
    /// Triangular solve of trailing column `column`.
    Trsm(u64),
    /// The trailing update.
    Update22(BlockedMultiply),
}

/// HPL's LU factorization, over and over.
struct Lu {
    layout: Layout,
    a: Matrix,
    nb: u64,
    pivot_key: u64,
    /// Factorizations started.
    round: u64,
    /// First column of the current panel, and its width.
    k: u64,
    jb: u64,
    /// Pivot rows of the panel's columns.
    pivots: Vec<u64>,
    stage: LuStage,
}

impl Lu {
    fn new(layout: Layout, nb: u64, pivot_key: u64) -> Lu {
        let a = Matrix { base: layout.matrices[0], ld: layout.n };
        let jb = nb.min(layout.n);
        Lu { layout, a, nb, pivot_key, round: 0, k: 0, jb, pivots: vec![0; jb as usize], stage: LuStage::Pivot(0) }
    }

    /// One past the panel's last column.
    fn panel_end(&self) -> u64 {
        self.k + self.jb
    }

    /// Runs the current stage's work and moves to the next stage; may emit nothing
    /// (a swap of a row with itself).
    fn advance(&mut self, refs: &mut Refs) {
        let n = self.layout.n;
        let a = self.a;
        self.stage = match std::mem::replace(&mut self.stage, LuStage::Pivot(0)) {
            LuStage::Pivot(j) => {
                refs.sweep(a.at(j, j), (n - j) * DOUBLE, VECTOR_BYTES, PIVOT_INSTRS, 0);
                let h = hash(self.pivot_key, self.round * n + j);
                self.pivots[(j - self.k) as usize] = j + ((h as u128 * (n - j) as u128) >> 64) as u64;
                refs.store(self.layout.ipiv + j * INT, INT, OP_INSTRS);
                LuStage::Swap(j)
            }
            LuStage::Swap(j) => {
                let p = self.pivots[(j - self.k) as usize];
                if p != j {
                    for column in self.k..self.panel_end() {
                        swap(refs, a, j, p, column);
                    }
                }
                LuStage::Scale(j)
            }
            LuStage::Scale(j) => {
                for (at, len) in pieces(a.at(j + 1, j), (n - j - 1) * DOUBLE, VECTOR_BYTES) {
                    refs.load(at, len, OP_INSTRS);
                    refs.store(at, len, OP_INSTRS);
                }
                self.after_panel_column(j, j + 1)
            }
            LuStage::Update { j, column } => {
                refs.load(a.at(j, column), DOUBLE, OP_INSTRS);
                let target = a.at(j + 1, column);
                let source = a.at(j + 1, j);
                for (at, len) in pieces(target, (n - j - 1) * DOUBLE, VECTOR_BYTES) {
                    refs.load(source + (at - target), len, OP_INSTRS);
                    refs.load(at, len, 0);
                    refs.store(at, len, OP_INSTRS);
                }
                self.after_panel_column(j, column + 1)
            }
            LuStage::Laswp { j, column } => {
                let end = (column + SWAP_COLUMNS_PER_STEP).min(n);
                if column == self.panel_end() {
                    refs.load(self.layout.ipiv + j * INT, INT, OP_INSTRS);
                }
                let p = self.pivots[(j - self.k) as usize];
                if p != j {
                    for c in column..end {
                        swap(refs, a, j, p, c);
                    }
                }
                if end < n {
                    LuStage::Laswp { j, column: end }
                } else if j + 1 < self.panel_end() {
                    LuStage::Laswp { j: j + 1, column: self.panel_end() }
                } else {
                    LuStage::Trsm(self.panel_end())
                }
            }
            LuStage::Trsm(column) => {
                let (k, jb) = (self.k, self.jb);
                for jj in 0..jb {
                    refs.load(a.at(k + jj, column), DOUBLE, OP_INSTRS);
                    let target = a.at(k + jj + 1, column);
                    let source = a.at(k + jj + 1, k + jj);
                    for (at, len) in pieces(target, (jb - jj - 1) * DOUBLE, VECTOR_BYTES) {
                        refs.load(source + (at - target), len, OP_INSTRS);
                        refs.load(at, len, 0);
                        refs.store(at, len, OP_INSTRS);
                    }
                }
                if column + 1 < n {
                    LuStage::Trsm(column + 1)
                } else {
                    let (end, m) = (self.panel_end(), n - self.panel_end());
                    let l = &self.layout;
                    LuStage::Update22(BlockedMultiply::new(m, m, jb, a.sub(end, k), a.sub(k, end), a.sub(end, end), l.ap, l.bp))
                }
            }
            LuStage::Update22(mut multiply) => {
                if multiply.stage == Stage::Done {
                    self.next_panel()
                } else {
                    multiply.step(refs);
                    LuStage::Update22(multiply)
                }
            }
        };
    }

    /// The stage after working on panel column `next - 1` for pivot column `j`.
    fn after_panel_column(&mut self, j: u64, next: u64) -> LuStage {
        if next < self.panel_end() {
            LuStage::Update { j, column: next }
        } else if j + 1 < self.panel_end() {
            LuStage::Pivot(j + 1)
        } else if self.panel_end() < self.layout.n {
            LuStage::Laswp { j: self.k, column: self.panel_end() }
        } else {
            // The last panel has nothing to its right.
            self.next_panel()
        }
    }

    /// Moves to the next panel (or the next factorization) and returns its first stage.
    fn next_panel(&mut self) -> LuStage {
        self.k += self.jb;
        if self.k >= self.layout.n {
            self.k = 0;
            self.round += 1;
        }
        self.jb = self.nb.min(self.layout.n - self.k);
        LuStage::Pivot(self.k)
    }
}

/// Swaps elements `(i, column)` and `(p, column)`.
#[inline]
fn swap(refs: &mut Refs, a: Matrix, i: u64, p: u64, column: u64) {
    refs.load(a.at(i, column), DOUBLE, OP_INSTRS);
    refs.load(a.at(p, column), DOUBLE, 0);
    refs.store(a.at(i, column), DOUBLE, 0);
    refs.store(a.at(p, column), DOUBLE, 0);
}

impl Program for Lu {
    fn step(&mut self, refs: &mut Refs) {
        let before = refs.emitted();
        while refs.emitted() == before {
            self.advance(refs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_app_common, config, run};
    use super::*;
    use crate::trace::Access;

    fn cfg(kernel: GemmKernel, n: u64) -> WorkloadConfig {
        let mut cfg = config("gemm");
        cfg.gemm = GemmConfig { kernel, n, nb: 16 };
        cfg
    }

    /// Bytes loaded and stored in `[start, start + len)`.
    fn traffic(records: &[Access], start: u64, len: u64) -> (u64, u64) {
        let mut t = (0, 0);
        for a in records.iter().filter(|a| (start..start + len).contains(&a.vaddr)) {
            if a.is_write() {
                t.1 += a.size as u64;
            } else {
                t.0 += a.size as u64;
            }
        }
        t
    }

    /// The references of one whole multiply of the `gemm` kernel.
    fn one_multiply(n: u64) -> (Layout, Vec<Access>) {
        let layout = layout(&cfg(GemmKernel::Gemm, n)).expect("valid");
        let mut m = Multiply::new(layout.clone());
        let mut out = Vec::new();
        m.step(&mut Refs::new(&mut out, Access::default()));
        while m.multiply.stage != Stage::Done {
            m.step(&mut Refs::new(&mut out, Access::default()));
        }
        (layout, out)
    }

    #[test]
    fn a_multiply_reads_a_and_b_once_per_block_and_updates_c_once_per_depth_block() {
        // n = 300: two depth blocks (256 + 44), five row blocks (4 · 72 + 12), one
        // column block. B is packed once per depth block (each element once); A once
        // per (depth block, column block) — once here; C read and written once per
        // depth block.
        let n = 300;
        let (l, records) = one_multiply(n);
        let bytes = n * n * DOUBLE;
        assert_eq!(traffic(&records, l.matrices[0], bytes), (bytes, 0));
        assert_eq!(traffic(&records, l.matrices[1], bytes), (bytes, 0));
        assert_eq!(traffic(&records, l.matrices[2], bytes), (2 * bytes, 2 * bytes));
        // The micro-kernel: per tile and depth step, 64 bytes of Bp and 48 of Ap.
        let tiles = n.div_ceil(MR) * n.div_ceil(NR);
        let kernel_loads = records.iter().filter(|a| !a.is_write() && a.vaddr >= l.ap).count() as u64;
        assert_eq!(kernel_loads, tiles * n * (2 + MR));
    }

    #[test]
    fn lu_factors_every_panel_and_updates_the_shrinking_trailing_matrix() {
        let n = 40;
        let c = cfg(GemmKernel::Lu, n);
        let l = layout(&c).expect("valid");
        let mut lu = Lu::new(l.clone(), 16, 5);
        let mut out = Vec::new();
        while lu.round == 0 {
            lu.step(&mut Refs::new(&mut out, Access::default()));
        }
        // Each column's pivot is recorded once (the last step also starts the next
        // factorization with column 0's pivot search).
        let ipiv: Vec<u64> = out.iter().filter(|r| r.is_write() && (l.ipiv..l.ipiv + n * INT).contains(&r.vaddr)).map(|r| r.vaddr).collect();
        assert_eq!(ipiv[..n as usize], (0..n).map(|j| l.ipiv + j * INT).collect::<Vec<_>>()[..]);
        assert!(ipiv.len() as u64 <= n + 1);
        // Every element below the diagonal is scaled (written) at least once.
        let a = Matrix { base: l.matrices[0], ld: n };
        let written: std::collections::HashSet<u64> =
            out.iter().filter(|r| r.is_write()).flat_map(|r| (r.vaddr..r.vaddr + r.size as u64).step_by(DOUBLE as usize)).collect();
        for j in 0..n {
            for i in j + 1..n {
                assert!(written.contains(&a.at(i, j)), "({i}, {j})");
            }
        }
        // Trailing updates of panels 0 and 1 (24 and 8 columns): the multiply
        // writes C = A22 through its packed buffers.
        assert!(out.iter().any(|r| r.is_write() && r.vaddr >= l.bp), "B was packed");
    }

    #[test]
    fn lu_row_swaps_stride_by_the_leading_dimension() {
        let n = 64;
        let l = layout(&cfg(GemmKernel::Lu, n)).expect("valid");
        let mut lu = Lu::new(l.clone(), 16, 5);
        let mut out = Vec::new();
        while !matches!(lu.stage, LuStage::Trsm(_)) {
            lu.step(&mut Refs::new(&mut out, Access::default()));
        }
        // dlaswp: 8-byte accesses to rows j and pivot(j) in every trailing column.
        let a = Matrix { base: l.matrices[0], ld: n };
        for (j, &p) in (0..16).zip(&lu.pivots) {
            if p == j {
                continue;
            }
            for column in 16..n {
                for row in [j, p] {
                    assert!(out.iter().any(|r| r.is_write() && r.size == 8 && r.vaddr == a.at(row, column)), "({row}, {column})");
                }
            }
        }
    }

    #[test]
    fn footprint_fits_the_target() {
        let c = cfg(GemmKernel::Gemm, 0);
        let l = layout(&c).expect("fits");
        assert!(l.footprint <= 4 << 20);
        assert!(Layout::new(c.base_vaddr, l.n + 1, &c.gemm).footprint > 4 << 20);
        // Three matrices of doubles in 4 MiB would allow n = 418; the packing buffers
        // (Bp: 256 rows of n elements) take their share.
        assert!((300..419).contains(&l.n), "n = {}", l.n);
    }

    #[test]
    fn emits_exactly_refs_within_the_footprint() {
        for kernel in [GemmKernel::Gemm, GemmKernel::Lu] {
            let c = cfg(kernel, 100);
            check_app_common(&c, &run(&c));
        }
    }

    #[test]
    fn is_deterministic() {
        let c = WorkloadConfig { refs: 20_000, ..cfg(GemmKernel::Lu, 100) };
        let addresses = |c: &WorkloadConfig| run(c).into_iter().map(|a| a.vaddr).collect::<Vec<_>>();
        assert_eq!(addresses(&c), addresses(&c));
        // Pivots come from the seed.
        assert_ne!(addresses(&c), addresses(&WorkloadConfig { seed: 9, ..c.clone() }));
    }
}
