//! `chase`: pointer chasing along one random cycle through every 64-byte line of
//! the footprint, the access pattern of linked lists and of latency benchmarks.
//!
//! The `i`-th reference loads line `perm(i mod L)`, where `L` is the number of whole
//! lines and `perm` a keyed [`Permutation`] of `[0, L)`: a linked list in which line
//! `perm(i)` points to line `perm(i + 1)`. Every line is visited once per lap, in an
//! order with no spatial locality, and nothing but the permutation's keys is stored,
//! so an 8 GiB footprint (2^27 lines) costs no memory. Each load reads
//! `access_bytes` at the start of its line (the pointer) and is marked
//! [`DEPENDENT`]: its address comes from the previous load, so the engine must not
//! overlap their latencies. There are no writes.
//!
//! All cores of a tenant follow the same cycle (the permutation's key comes from the
//! tenant's layout generator), each starting at its own random place on it.

use super::permute::Permutation;
use super::rates::{independent, AccessModel, Phased};
use super::{layout_rng, stream_rng, Emitter, WorkloadConfig, PAGE_BYTES};
use crate::trace::{Access, Source, DEPENDENT};

/// Bytes per node of the chased list: one cache line.
const LINE_BYTES: u64 = 64;

/// Generator of dependent loads along a random cycle.
#[derive(Clone, Debug)]
pub struct Chase {
    emitter: Emitter,
    /// The cycle's order of lines.
    order: Permutation,
    /// Whole lines in the footprint.
    lines: u64,
    /// Position on the cycle of the next load.
    position: u64,
    base_vaddr: u64,
}

impl Chase {
    /// Creates the generator for one core and tenant; `cfg` must be valid.
    pub fn new(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Chase {
        let lines = cfg.footprint.bytes() / LINE_BYTES;
        Chase {
            emitter: Emitter::new(cfg, core, tenant, cfg.access_bytes),
            order: Permutation::new(lines, layout_rng(cfg, tenant).next_u64()),
            lines,
            position: stream_rng(cfg, core, tenant).below(lines),
            base_vaddr: cfg.base_vaddr,
        }
    }
}

impl Source for Chase {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> anyhow::Result<()> {
        let n = self.emitter.take(max);
        out.reserve(n);
        for _ in 0..n {
            let vaddr = self.base_vaddr + self.order.apply(self.position) * LINE_BYTES;
            out.push(self.emitter.record(vaddr, DEPENDENT));
            self.position += 1;
            if self.position == self.lines {
                self.position = 0;
            }
        }
        Ok(())
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.emitter.refs)
    }

    /// The cycle's place moves on by `n`.
    fn skip(&mut self, n: u64) -> bool {
        let n = self.emitter.skip(n);
        self.position = (self.position + n % self.lines) % self.lines;
        true
    }
}

/// The statement of `chase` (module `rates`): every line is visited once a lap, in
/// an order without locality, so a page's share is its share of the whole lines, its
/// visits far apart (a burst each), every reference a dependent load.
pub(super) fn model(cfg: &WorkloadConfig, cores: u64) -> Box<dyn AccessModel> {
    let lines = cfg.footprint.bytes() / LINE_BYTES;
    let per_page = PAGE_BYTES / LINE_BYTES;
    let first = cfg.base_vaddr / PAGE_BYTES;
    let pages = lines.div_ceil(per_page);
    let (refs, instrs) = (cfg.refs, cfg.instrs as u64);
    Box::new(Phased::new("stated: one random cycle through every line".into(), vec![first..first + pages], 1, cores, move |_, out| {
        out.refs = refs;
        out.instrs = instrs * refs;
        out.dependent = refs;
        out.pages = (0..pages).map(|i| independent(first + i, (lines - i * per_page).min(per_page) as f64 / lines as f64, 0.0, refs)).collect();
    }))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_common, check_determinism, config, run};
    use super::*;
    use crate::units::Size;

    #[test]
    fn is_deterministic() {
        check_determinism(&config("chase"));
    }

    #[test]
    fn emits_exactly_refs_of_dependent_reads_at_line_starts() {
        let cfg = config("chase");
        let records = run(&cfg);
        check_common(&cfg, &records, 8);
        assert!(records.iter().all(|a| a.flags == DEPENDENT && a.vaddr % LINE_BYTES == 0));
    }

    #[test]
    fn every_line_is_visited_once_per_lap_in_the_same_order() {
        // 100 lines plus a partial one (6432 bytes) and three laps: each lap visits
        // each of the 100 whole lines exactly once, every lap in the same order.
        let mut cfg = config("chase");
        cfg.footprint = Size(100 * 64 + 32);
        cfg.refs = 300;
        let records = run(&cfg);
        let lines: Vec<u64> = records.iter().map(|a| (a.vaddr - cfg.base_vaddr) / LINE_BYTES).collect();
        for lap in lines.chunks(100) {
            let mut sorted = lap.to_vec();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..100).collect::<Vec<u64>>());
            assert_eq!(lap, &lines[..100]);
        }
        // The order is random, not a sweep: few successive lines are neighbours.
        let neighbours = lines[..100].windows(2).filter(|w| w[0].abs_diff(w[1]) == 1).count();
        assert!(neighbours < 10, "{neighbours} of 99 steps go to a neighbouring line");
    }

    #[test]
    fn cores_of_a_tenant_chase_the_same_cycle_from_different_places() {
        let mut cfg = config("chase");
        cfg.footprint = Size(4096);
        cfg.refs = 64;
        let lap = |core| {
            let mut source = Chase::new(&cfg, core, 0);
            let mut out = Vec::new();
            source.fill(&mut out, 64).expect("generators do not fail");
            out.iter().map(|a| a.vaddr).collect::<Vec<u64>>()
        };
        let (a, b) = (lap(0), lap(1));
        assert_ne!(a, b);
        // Both laps are rotations of the same cycle.
        let shift = b.iter().position(|&v| v == a[0]).expect("same lines");
        assert!((0..64).all(|i| a[i] == b[(i + shift) % 64]));
    }
}
