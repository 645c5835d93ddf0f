//! Application workloads as programs: an algorithm run step by step over data laid
//! out at simulated virtual addresses, emitting the loads and stores it performs.
//!
//! The application generators (graph-bfs, pagerank, kv, spmv-cg, gemm, stream) keep
//! the algorithm's control data on the host — loop counters, a graph's adjacency as
//! `u32`, a hash table's chains — and implement [`Program`]: [`Program::step`] runs
//! the algorithm for one bounded piece (a vertex's edges, a matrix row, one key-value
//! operation, one micro-kernel call) and appends the references that piece makes.
//! [`Run`] turns a program into a [`Source`]: it calls `step` until the batch is
//! full, keeps the references of a step that overshoots the batch for the next call,
//! and stops after exactly `refs` references, in the middle of the algorithm if need
//! be. Programs never finish: when the algorithm ends they start it again (the next
//! search root, the next trial, the next factorization), so `refs` alone bounds a run.
//!
//! Writing each algorithm as "one step at a time" keeps its loops readable (a step is
//! straight-line code over the current loop counters) at the cost of copying the
//! overshoot of one step per batch, a few hundred records at most.
//!
//! # Layout
//! [`Heap`] places each array as glibc's malloc places a large allocation: requests
//! above `M_MMAP_THRESHOLD` (128 KiB by default) get their own anonymous mapping, so
//! every array starts on a 4 KiB boundary (the 16-byte chunk header in front of the
//! user pointer is ignored). Mappings follow each other upwards from `base_vaddr`
//! without gaps. The footprint is the distance from `base_vaddr` to the end of the
//! last mapping: every byte a program can touch, whether it does or not.
//!
//! # Accesses
//! Scalar code accesses one element per reference, at the element's natural
//! alignment. Loops a compiler vectorizes (fills, copies, dense kernels) access
//! [`VECTOR_BYTES`] at a time, split where a range does not start or end on a vector
//! boundary ([`Refs::sweep`]); either way no access crosses a 64-byte line. The
//! `instrs` of each reference counts the non-memory instructions of the loop body
//! that precede it (index arithmetic, compares, branches, floating-point operations);
//! each generator documents its counts next to its loops.

use super::Emitter;
use crate::trace::{Access, Source, DEPENDENT, WRITE};

/// Width in bytes of a vector access: AVX2's 256-bit registers, the widest that
/// every x86-64 server of the papers' generation (Haswell to Cascade Lake) runs at
/// full speed.
pub(super) const VECTOR_BYTES: u64 = 32;

/// Bytes of a base page; arrays are mapped at multiples of it.
const MAP_ALIGN: u64 = 4096;

/// An algorithm run over simulated memory, one bounded step at a time.
pub(super) trait Program {
    /// Runs the next step of the algorithm and appends its references to `refs`.
    /// Every step appends at least one reference.
    fn step(&mut self, refs: &mut Refs);

    /// Whether each step is drawn independently of the ones before (a key-value
    /// operation), so that steps can be skipped without running them.
    fn independent_steps(&self) -> bool {
        false
    }
}

/// The references of one step, appended to the batch being filled.
pub(super) struct Refs<'a> {
    out: &'a mut Vec<Access>,
    /// Carries the core and tenant of every record.
    template: Access,
}

impl Refs<'_> {
    /// Appends to `out` records like `template` (tests drive programs step by step).
    #[cfg(test)]
    pub(super) fn new(out: &mut Vec<Access>, template: Access) -> Refs<'_> {
        Refs { out, template }
    }

    /// Appends an access of `size` bytes at `vaddr` with `flags`, after `instrs`
    /// non-memory instructions.
    #[inline]
    pub(super) fn push(&mut self, vaddr: u64, size: u64, instrs: u32, flags: u8) {
        debug_assert!((1..=64).contains(&size) && vaddr / 64 == (vaddr + size - 1) / 64, "{vaddr:#x}+{size} crosses a line");
        self.out.push(Access { vaddr, instrs, size: size as u8, flags, ..self.template });
    }

    /// Appends a load.
    #[inline]
    pub(super) fn load(&mut self, vaddr: u64, size: u64, instrs: u32) {
        self.push(vaddr, size, instrs, 0);
    }

    /// Appends a load whose address comes from the previous load (pointer chasing).
    #[inline]
    pub(super) fn load_dependent(&mut self, vaddr: u64, size: u64, instrs: u32) {
        self.push(vaddr, size, instrs, DEPENDENT);
    }

    /// Appends a store.
    #[inline]
    pub(super) fn store(&mut self, vaddr: u64, size: u64, instrs: u32) {
        self.push(vaddr, size, instrs, WRITE);
    }

    /// Appends the accesses of a vectorized loop over the bytes `[start, start +
    /// bytes)`: one per piece of [`pieces`], each with `instrs` and `flags`.
    #[inline]
    pub(super) fn sweep(&mut self, start: u64, bytes: u64, width: u64, instrs: u32, flags: u8) {
        for (at, len) in pieces(start, bytes, width) {
            self.push(at, len, instrs, flags);
        }
    }

    /// Records appended so far to the batch (by this step and the ones before).
    #[inline]
    pub(super) fn emitted(&self) -> usize {
        self.out.len()
    }
}

/// The `width`-aligned pieces of the bytes `[start, start + bytes)` as (address,
/// length): `width` (a power of two of at most 64) bytes each, except the first and
/// last, which may be shorter.
#[inline]
pub(super) fn pieces(start: u64, bytes: u64, width: u64) -> impl Iterator<Item = (u64, u64)> {
    let end = start + bytes;
    let mut at = start;
    std::iter::from_fn(move || {
        (at < end).then(|| {
            let next = ((at / width + 1) * width).min(end);
            let piece = (at, next - at);
            at = next;
            piece
        })
    })
}

/// A [`Program`] as a [`Source`] of exactly `refs` references.
pub(super) struct Run<P> {
    program: P,
    emitter: Emitter,
    /// References of the last step that did not fit the previous batch.
    carry: Vec<Access>,
    /// How many of `carry` have been handed out.
    carried: usize,
}

impl<P: Program> Run<P> {
    pub(super) fn new(program: P, emitter: Emitter) -> Run<P> {
        Run { program, emitter, carry: Vec::new(), carried: 0 }
    }
}

impl<P: Program> Source for Run<P> {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> anyhow::Result<()> {
        let n = self.emitter.take(max);
        let end = out.len() + n;
        out.reserve(n);
        let from_carry = n.min(self.carry.len() - self.carried);
        out.extend_from_slice(&self.carry[self.carried..self.carried + from_carry]);
        self.carried += from_carry;
        if self.carried == self.carry.len() {
            self.carry.clear();
            self.carried = 0;
        }
        let template = self.emitter.record(0, 0);
        while out.len() < end {
            let before = out.len();
            self.program.step(&mut Refs { out, template });
            assert!(out.len() > before, "a program step emitted no reference");
        }
        // The loop ran only once the carry was drained, so it is empty here.
        if out.len() > end {
            self.carry.extend_from_slice(&out[end..]);
            out.truncate(end);
        }
        Ok(())
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.emitter.refs)
    }

    /// Programs whose steps are independent skip without running them (the step cut
    /// by the skip is dropped).
    fn skip(&mut self, n: u64) -> bool {
        if !self.program.independent_steps() {
            return false;
        }
        self.emitter.skip(n);
        self.carry.clear();
        self.carried = 0;
        true
    }
}

/// Places arrays at virtual addresses as a process's allocator would (see the module
/// documentation).
#[derive(Clone, Debug)]
pub(super) struct Heap {
    base: u64,
    next: u64,
}

impl Heap {
    /// An empty heap whose first mapping starts at `base` (4 KiB aligned).
    pub(super) fn new(base: u64) -> Heap {
        Heap { base, next: base }
    }

    /// Maps `bytes` and returns the address of the first: the next 4 KiB boundary.
    pub(super) fn alloc(&mut self, bytes: u64) -> u64 {
        let at = self.next;
        self.next = at + bytes.div_ceil(MAP_ALIGN) * MAP_ALIGN;
        at
    }

    /// Bytes from the base to the end of the last mapping.
    pub(super) fn footprint(&self) -> u64 {
        self.next - self.base
    }
}

/// Returns the largest `n` in `lo..=hi` with `fits(n)`, for a `fits` that holds up to
/// some `n` and fails above it, or `None` when `fits(lo)` fails.
pub(super) fn largest_fitting(lo: u64, hi: u64, fits: impl Fn(u64) -> bool) -> Option<u64> {
    if !fits(lo) {
        return None;
    }
    let (mut good, mut bad) = (lo, hi + 1);
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if fits(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Some(good)
}

/// `MemAvailable` of `/proc/meminfo`, where there is one (Linux).
pub(super) fn available_host_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Fails, naming `field`, when `what` needs `bytes` of host memory and the host has
/// less available: a generator checks this before building large host data, so
/// that a size typed one power of two too large is an error, not an exhausted host.
pub(super) fn check_host_memory(field: &str, what: &str, bytes: u64) -> anyhow::Result<()> {
    match available_host_bytes() {
        Some(available) if bytes > available => anyhow::bail!(
            "{field}: {what} needs about {:.1} GB of host memory, more than the {:.1} GB available",
            bytes as f64 / 1e9,
            available as f64 / 1e9
        ),
        _ => Ok(()),
    }
}

/// A keyed 64-bit hash of `x`: the SplitMix64 finalizer of `x` mixed with `key`, so
/// that data a program derives from an index (a column number, a value size) costs
/// no host memory and is the same every time it is read.
#[inline]
pub(super) fn hash(key: u64, x: u64) -> u64 {
    let mut z = x.wrapping_add(key).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tests::config;

    /// Emits 1, 2, 3, … references per step, numbering them in `vaddr`.
    struct Counter {
        step: u64,
        next: u64,
    }

    impl Program for Counter {
        fn step(&mut self, refs: &mut Refs) {
            self.step += 1;
            for _ in 0..self.step {
                refs.load(self.next * 8, 8, 1);
                self.next += 1;
            }
        }
    }

    #[test]
    fn run_hands_out_every_reference_once_across_batches() {
        let cfg = crate::workload::WorkloadConfig { refs: 1000, ..config("uniform") };
        let mut run = Run::new(Counter { step: 0, next: 0 }, Emitter::new(&cfg, 3, 2, 8));
        let records = crate::workload::tests::collect(&mut run, 7);
        assert_eq!(records.len(), 1000);
        for (i, a) in records.iter().enumerate() {
            assert_eq!((a.vaddr, a.core, a.tenant, a.instrs), (i as u64 * 8, 3, 2, 1));
        }
    }

    #[test]
    fn sweep_splits_at_width_boundaries() {
        let mut out = Vec::new();
        let mut refs = Refs { out: &mut out, template: Access::default() };
        refs.sweep(24, 80, 32, 1, WRITE);
        let pieces: Vec<(u64, u8)> = out.iter().map(|a| (a.vaddr, a.size)).collect();
        assert_eq!(pieces, [(24, 8), (32, 32), (64, 32), (96, 8)]);
        assert!(out.iter().all(|a| a.is_write()));
    }

    #[test]
    fn heap_maps_at_page_boundaries() {
        let mut heap = Heap::new(0x10000);
        assert_eq!(heap.alloc(1), 0x10000);
        assert_eq!(heap.alloc(4096), 0x11000);
        assert_eq!(heap.alloc(4097), 0x12000);
        assert_eq!(heap.footprint(), 4 * 4096);
    }

    #[test]
    fn largest_fitting_finds_the_boundary() {
        assert_eq!(largest_fitting(1, 100, |n| n * n <= 50), Some(7));
        assert_eq!(largest_fitting(1, 100, |_| true), Some(100));
        assert_eq!(largest_fitting(5, 100, |n| n < 5), None);
    }
}
