//! `stream`: John McCalpin's STREAM benchmark, the standard measure of sustainable
//! memory bandwidth: unit-stride sweeps over three arrays of `double`, with no reuse
//! beyond a cache line. In each iteration (STREAM's `NTIMES` loop) the kernels run
//! in STREAM's order, each over all elements:
//!
//! | kernel | statement | per element |
//! |---|---|---|
//! | copy | `c[j] = a[j]` | load `a`, store `c` |
//! | scale | `b[j] = s·c[j]` | load `c`, store `b` |
//! | add | `c[j] = a[j] + b[j]` | load `a`, load `b`, store `c` |
//! | triad | `a[j] = b[j] + s·c[j]` | load `b`, load `c`, store `a` |
//!
//! `stream.kernels` picks which run and in what order. Iterations repeat as long as
//! references remain; the initialization and the timing check of the benchmark are
//! not traced. The loops are vectorized (32-byte accesses, four elements each), as
//! compilers vectorize them at `-O3`.
//!
//! # Layout
//! `a`, `b`, `c`, each its own mapping, `8 · elements` bytes.
//!
//! # Instructions
//! 3 before each vector iteration's first load (increment, compare, branch), 0
//! before a second load, 1 before the store (the multiply, add or fused
//! multiply-add; 0 for copy).
//!
//! # Host memory
//! None.

use super::program::{Heap, Program, Refs, Run, VECTOR_BYTES};
use super::{Emitter, WorkloadConfig};
use crate::trace::{Source, WRITE};
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// One of STREAM's four kernels.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamKernel {
    /// `c = a`.
    Copy,
    /// `b = s·c`.
    Scale,
    /// `c = a + b`.
    Add,
    /// `a = b + s·c`.
    Triad,
}

/// The `[workload.stream]` table.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamConfig {
    /// Elements per array (STREAM's `STREAM_ARRAY_SIZE`); 0 takes as many as let the
    /// three arrays fit `workload.footprint`.
    pub elements: u64,
    /// Kernels of one iteration, in order: any of "copy", "scale", "add", "triad".
    pub kernels: Vec<StreamKernel>,
}

impl Default for StreamConfig {
    /// All four kernels in STREAM's order.
    fn default() -> StreamConfig {
        StreamConfig { elements: 0, kernels: vec![StreamKernel::Copy, StreamKernel::Scale, StreamKernel::Add, StreamKernel::Triad] }
    }
}

/// Most elements per array: 2^40 (8 TiB).
const MAX_ELEMENTS: u64 = 1 << 40;

impl StreamConfig {
    /// Checks every field; errors name it.
    pub(super) fn validate(&self) -> Result<()> {
        if self.elements > MAX_ELEMENTS {
            bail!("workload.stream.elements: must be at most 2^40, got {}", self.elements);
        }
        if self.kernels.is_empty() {
            bail!("workload.stream.kernels: must name at least one kernel (copy, scale, add, triad)");
        }
        Ok(())
    }
}

const DOUBLE: u64 = 8;
const ARRAY_ALIGN: u64 = 4096;
/// Vector iterations per step at most.
const PER_STEP: u64 = 256;
const LOOP_INSTRS: u32 = 3;
const OP_INSTRS: u32 = 1;

/// The arrays a kernel reads and the one it writes, as indexes into [a, b, c].
fn operands(kernel: StreamKernel) -> (&'static [usize], usize) {
    match kernel {
        StreamKernel::Copy => (&[0], 2),
        StreamKernel::Scale => (&[2], 1),
        StreamKernel::Add => (&[0, 1], 2),
        StreamKernel::Triad => (&[1, 2], 0),
    }
}

/// Elements per array of a run of `cfg`.
fn elements(cfg: &WorkloadConfig) -> Result<u64> {
    if cfg.stream.elements > 0 {
        return Ok(cfg.stream.elements);
    }
    let per_array = cfg.footprint.bytes() / 3 / ARRAY_ALIGN * ARRAY_ALIGN;
    if per_array == 0 {
        bail!("workload.footprint: stream needs at least 3 pages (12KiB), got {}", cfg.footprint);
    }
    Ok(per_array / DOUBLE)
}

/// The three arrays of `elements` elements from `base`, and the footprint.
fn arrays(base: u64, elements: u64) -> ([u64; 3], u64) {
    let mut heap = Heap::new(base);
    let arrays = [(); 3].map(|_| heap.alloc(elements * DOUBLE));
    (arrays, heap.footprint())
}

/// Bytes of the arrays of a run of `cfg`; `cfg.stream` must be valid.
pub(super) fn footprint(cfg: &WorkloadConfig) -> Result<u64> {
    Ok(arrays(cfg.base_vaddr, elements(cfg)?).1)
}

/// Builds the generator for one core and tenant; `cfg` must be valid.
pub(super) fn build(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Result<Box<dyn Source>> {
    let elements = elements(cfg)?;
    let stream = Stream { arrays: arrays(cfg.base_vaddr, elements).0, elements, kernels: cfg.stream.kernels.clone(), kernel: 0, at: 0 };
    Ok(Box::new(Run::new(stream, Emitter::new(cfg, core, tenant, VECTOR_BYTES as u32))))
}

/// STREAM's kernels, iteration after iteration.
struct Stream {
    /// Addresses of `a`, `b` and `c`.
    arrays: [u64; 3],
    elements: u64,
    kernels: Vec<StreamKernel>,
    /// Index in `kernels` of the running kernel.
    kernel: usize,
    /// Next element of the running kernel.
    at: u64,
}

impl Program for Stream {
    fn step(&mut self, refs: &mut Refs) {
        let (reads, written) = operands(self.kernels[self.kernel]);
        let per_vector = VECTOR_BYTES / DOUBLE;
        let end = (self.at + PER_STEP * per_vector).min(self.elements);
        for j in (self.at..end).step_by(per_vector as usize) {
            let bytes = per_vector.min(end - j) * DOUBLE;
            for (i, &array) in reads.iter().enumerate() {
                refs.load(self.arrays[array] + j * DOUBLE, bytes, if i == 0 { LOOP_INSTRS } else { 0 });
            }
            let op = if self.kernels[self.kernel] == StreamKernel::Copy { 0 } else { OP_INSTRS };
            refs.push(self.arrays[written] + j * DOUBLE, bytes, op, WRITE);
        }
        self.at = end;
        if end == self.elements {
            self.at = 0;
            self.kernel = (self.kernel + 1) % self.kernels.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_app_common, config, run};
    use super::*;
    use crate::trace::Access;
    use crate::units::Size;

    /// Bytes loaded and stored in each of a, b, c.
    fn traffic(arrays: [u64; 3], elements: u64, records: &[Access]) -> [(u64, u64); 3] {
        arrays.map(|start| {
            let range = start..start + elements * DOUBLE;
            let mut t = (0, 0);
            for a in records.iter().filter(|a| range.contains(&a.vaddr)) {
                if a.is_write() {
                    t.1 += a.size as u64;
                } else {
                    t.0 += a.size as u64;
                }
            }
            t
        })
    }

    #[test]
    fn triad_touches_each_element_of_the_three_arrays_once_per_iteration() {
        // 1001 elements: 250 full vectors and a one-element tail.
        let mut cfg = config("stream");
        cfg.stream = StreamConfig { elements: 1001, kernels: vec![StreamKernel::Triad] };
        let vectors = 1001u64.div_ceil(4);
        cfg.refs = 3 * vectors;
        let records = run(&cfg);
        let (arrays, _) = arrays(cfg.base_vaddr, 1001);
        let bytes = 1001 * DOUBLE;
        assert_eq!(traffic(arrays, 1001, &records), [(0, bytes), (bytes, 0), (bytes, 0)]);
        let writes = records.iter().filter(|a| a.is_write()).count() as u64;
        assert_eq!((writes, records.len() as u64 - writes), (vectors, 2 * vectors));
        // Every element once: the loads of b cover it without overlap.
        let mut b: Vec<u64> = records.iter().filter(|a| (arrays[1]..arrays[1] + bytes).contains(&a.vaddr)).map(|a| a.vaddr).collect();
        b.dedup();
        assert_eq!(b.len() as u64, vectors);
    }

    #[test]
    fn an_iteration_runs_the_four_kernels_in_order() {
        let mut cfg = config("stream");
        cfg.stream.elements = 4096;
        let vectors = 1024;
        // copy 2, scale 2, add 3, triad 3 references per vector.
        cfg.refs = 10 * vectors;
        let records = run(&cfg);
        let (arrays, _) = arrays(cfg.base_vaddr, 4096);
        let bytes = 4096 * DOUBLE;
        // a: read by copy and add, written by triad; b: written by scale, read by add
        // and triad; c: written by copy and add, read by scale and triad.
        assert_eq!(traffic(arrays, 4096, &records), [(2 * bytes, bytes), (2 * bytes, bytes), (2 * bytes, 2 * bytes)]);
        let first_store = |array: usize| records.iter().position(|a| a.is_write() && (arrays[array]..arrays[array] + bytes).contains(&a.vaddr));
        assert!(first_store(2) < first_store(1) && first_store(1) < first_store(0), "copy, then scale, then triad");
    }

    #[test]
    fn footprint_is_three_arrays() {
        let cfg = WorkloadConfig { footprint: Size(12 << 20), ..config("stream") };
        assert_eq!(elements(&cfg).expect("fits"), (4 << 20) / 8);
        assert_eq!(footprint(&cfg).expect("fits"), 12 << 20);
        let tiny = WorkloadConfig { footprint: Size(8192), ..config("stream") };
        assert!(footprint(&tiny).expect_err("too small").to_string().starts_with("workload.footprint:"));
    }

    #[test]
    fn emits_exactly_refs_within_the_footprint() {
        let cfg = config("stream");
        check_app_common(&cfg, &run(&cfg));
    }

    #[test]
    fn is_deterministic() {
        // STREAM draws nothing: its references depend only on its size.
        let cfg = config("stream");
        assert_eq!(run(&cfg), run(&cfg));
    }
}
