//! `seqscan`: sequential sweeps over a hot window that moves, after the "sequential
//! access" benchmark of HMM-V §5.5, whose hot set is fixed at 20 % of the footprint
//! (7.2 GB of 36 GB) and whose hot data change place periodically.
//!
//! The window is `window · footprint` bytes (whole 4 KiB pages). A share `hot_refs`
//! of the references continue the sweep: consecutive `access_bytes`-sized accesses
//! through the window, wrapping from its end to its start; the others go to uniform
//! addresses of the whole footprint and leave the sweep where it was.
//!
//! The references are split into `phases` equal phases. At each phase change the
//! window moves to the next region of the footprint, the one starting where the
//! previous window ended, so consecutive windows are disjoint whenever the window
//! is at most half the footprint. The footprint's whole pages are treated as a ring:
//! a window that passes their end continues at their start. The first window starts
//! at a random page drawn from the tenant's layout generator, so all cores of a
//! tenant sweep the same window; each core starts its sweep at its own random
//! place in it, and keeps that relative place when the window moves.

use super::rates::{independent, AccessModel, Order, PageLoad, Stretch};
use super::{layout_rng, share_in_pages, stream_rng, Emitter, Phases, WorkloadConfig, PAGE_BYTES};
use anyhow::Result;
use crate::rng::Rng;
use crate::trace::{Access, Source, WRITE};

/// Generator of sequential sweeps through a moving window.
#[derive(Clone, Debug)]
pub struct Seqscan {
    emitter: Emitter,
    rng: Rng,
    phases: Phases,
    /// Current phase (0-based).
    phase: u32,
    base_vaddr: u64,
    /// Whole pages in the footprint: the ring the window moves on.
    pages: u64,
    /// Pages in the window.
    window_pages: u64,
    /// First page of the current window.
    window_start: u64,
    /// Access-sized slots in the window.
    window_slots: u64,
    /// Slot of the window the sweep reads next.
    sweep: u64,
    /// Access-sized slots in the footprint.
    all_slots: u64,
    /// log2 of the access size.
    shift: u32,
    hot_refs: f64,
    write_fraction: f64,
}

impl Seqscan {
    /// Creates the generator for one core and tenant; `cfg` must be valid.
    pub fn new(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Seqscan {
        let footprint = cfg.footprint.bytes();
        let pages = footprint / PAGE_BYTES;
        let window_pages = share_in_pages(cfg.seqscan.window, footprint);
        let shift = cfg.access_bytes.trailing_zeros();
        let window_slots = (window_pages * PAGE_BYTES) >> shift;
        let mut rng = stream_rng(cfg, core, tenant);
        let sweep = rng.below(window_slots);
        Seqscan {
            emitter: Emitter::new(cfg, core, tenant, cfg.access_bytes),
            rng,
            phases: Phases { refs: cfg.refs, count: cfg.seqscan.phases },
            phase: 0,
            base_vaddr: cfg.base_vaddr,
            pages,
            window_pages,
            window_start: layout_rng(cfg, tenant).below(pages),
            window_slots,
            sweep,
            all_slots: footprint >> shift,
            shift,
            hot_refs: cfg.seqscan.hot_refs,
            write_fraction: cfg.write_fraction,
        }
    }
}

impl Source for Seqscan {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> anyhow::Result<()> {
        let ring_bytes = self.pages * PAGE_BYTES;
        let mut room = max;
        while room > 0 {
            // A loop, because phases are empty when there are fewer references than phases.
            while self.emitter.emitted == self.phases.end(self.phase) && self.phase + 1 < self.phases.count {
                self.phase += 1;
                self.window_start = (self.window_start + self.window_pages) % self.pages;
            }
            let n = self.emitter.take_until(room, self.phases.end(self.phase));
            if n == 0 {
                break;
            }
            room -= n;
            out.reserve(n);
            let window_offset = self.window_start * PAGE_BYTES;
            for _ in 0..n {
                let offset = if self.rng.chance(self.hot_refs) {
                    let mut offset = window_offset + (self.sweep << self.shift);
                    if offset >= ring_bytes {
                        offset -= ring_bytes;
                    }
                    self.sweep += 1;
                    if self.sweep == self.window_slots {
                        self.sweep = 0;
                    }
                    offset
                } else {
                    self.rng.below(self.all_slots) << self.shift
                };
                let flags = if self.rng.chance(self.write_fraction) { WRITE } else { 0 };
                out.push(self.emitter.record(self.base_vaddr + offset, flags));
            }
        }
        Ok(())
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.emitter.refs)
    }

    /// The sweep moves on by its expected share of the references skipped, and the
    /// window by the phases passed.
    fn skip(&mut self, n: u64) -> bool {
        let n = self.emitter.skip(n);
        self.sweep = (self.sweep + (n as f64 * self.hot_refs).round() as u64 % self.window_slots) % self.window_slots;
        while self.emitter.emitted >= self.phases.end(self.phase) && self.phase + 1 < self.phases.count {
            self.phase += 1;
            self.window_start = (self.window_start + self.window_pages) % self.pages;
        }
        true
    }
}

/// Stretches per sweep of the window in the statement: a policy that looks every
/// second sees where the sweep has been within a sixteenth of the window.
const STRETCHES_PER_SWEEP: u64 = 16;

/// The statement of `seqscan` (module `rates`): within a phase, stretches of a
/// sixteenth of a sweep each, in which the pages of the swept slots get the
/// `hot_refs` share (one burst per page and pass) and every page its share of the
/// footprint's bytes of the others. The sweep is core 0's; the other cores of a
/// tenant sweep the same window from their own places, which the statement does not
/// follow (it counts their references as core 0's).
pub(super) fn model(cfg: &WorkloadConfig, tenant: u16, cores: u64) -> Box<dyn AccessModel> {
    let g = Seqscan::new(cfg, 0, tenant);
    let first = cfg.base_vaddr / PAGE_BYTES;
    let all_pages = cfg.footprint.bytes().div_ceil(PAGE_BYTES);
    Box::new(SeqscanModel { g, first, all_pages, cores, bytes: cfg.footprint.bytes(), instrs: cfg.instrs as u64, at: 0 })
}

/// The statement of one core's sweeps.
struct SeqscanModel {
    /// The generator, whose phase, window and sweep place the statement advances.
    g: Seqscan,
    first: u64,
    all_pages: u64,
    cores: u64,
    bytes: u64,
    instrs: u64,
    /// References stated so far.
    at: u64,
}

impl AccessModel for SeqscanModel {
    fn describe(&self) -> String {
        format!("stated: sweeps of {} pages, {} % of references, {} phase(s)", self.g.window_pages, self.g.hot_refs * 100.0, self.g.phases.count)
    }

    fn universe(&self) -> Vec<std::ops::Range<u64>> {
        vec![self.first..self.first + self.all_pages]
    }

    fn next(&mut self, out: &mut Stretch) -> Result<bool> {
        let g = &mut self.g;
        while self.at == g.phases.end(g.phase) && g.phase + 1 < g.phases.count {
            g.phase += 1;
            g.window_start = (g.window_start + g.window_pages) % g.pages;
        }
        let end = g.phases.end(g.phase);
        if self.at >= end {
            return Ok(false);
        }
        // References for a sixteenth of a sweep (all of the phase's without sweeps).
        let per_sweep = if g.hot_refs > 0.0 { (g.window_slots as f64 / g.hot_refs).ceil() as u64 } else { u64::MAX };
        let refs = (end - self.at).min((per_sweep / STRETCHES_PER_SWEEP).max(1));
        self.at += refs;
        let wf = g.write_fraction;
        // Uniform references: every page but a short last one has the same load, so
        // its statement is made once; with every reference in the sweep (the
        // default) only the swept pages are named.
        let uniform = |p: u64| (1.0 - g.hot_refs) * (self.bytes - p * PAGE_BYTES).min(PAGE_BYTES) as f64 / self.bytes as f64 * refs as f64;
        let mut swept_pages: Vec<(u64, f64, f64)> = Vec::new();
        let swept = (g.hot_refs * refs as f64).round() as u64;
        let slots_per_page = PAGE_BYTES >> g.shift;
        let mut left = swept;
        while left > 0 {
            let page_of_window = g.sweep / slots_per_page;
            let in_page = (slots_per_page - g.sweep % slots_per_page).min(g.window_slots - g.sweep).min(left);
            let page = (g.window_start + page_of_window) % g.pages;
            swept_pages.push((page, in_page as f64, 1.0));
            left -= in_page;
            g.sweep = (g.sweep + in_page) % g.window_slots;
        }
        // A page passed twice (the sweep wrapped within the stretch) is one entry.
        swept_pages.sort_unstable_by_key(|s| s.0);
        swept_pages.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 += later.1;
                kept.2 += later.2;
            }
            same
        });
        out.refs = refs;
        out.instrs = self.instrs * refs;
        out.dependent = 0;
        out.order = Order::Random;
        out.pages.clear();
        // A swept page: its references, and one burst per pass of the sweep.
        let swept_load = |p: u64, n: f64, sweeps: f64| {
            let mut l = independent(self.first + p, n / refs as f64, wf, refs);
            l.bursts = sweeps as f32;
            l.write_bursts = (sweeps * (1.0 - (1.0 - wf).powf(n / sweeps))) as f32;
            l
        };
        if g.hot_refs >= 1.0 {
            out.pages.extend(swept_pages.iter().map(|&(p, hot, sweeps)| swept_load(p, hot, sweeps)));
        } else {
            let full = independent(0, uniform(0) / refs as f64, wf, refs);
            let mut named = swept_pages.iter().peekable();
            for p in 0..self.all_pages {
                let n = uniform(p);
                out.pages.push(match named.next_if(|s| s.0 == p) {
                    Some(&(_, hot, sweeps)) => swept_load(p, n + hot, sweeps),
                    None if (p + 1) * PAGE_BYTES <= self.bytes => PageLoad { vpn: self.first + p, ..full },
                    None => independent(self.first + p, n / refs as f64, wf, refs),
                });
            }
        }
        out.scale_by(self.cores);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_common, check_determinism, check_write_share, collect, config, run};
    use super::*;
    use crate::units::Size;

    #[test]
    fn is_deterministic() {
        check_determinism(&config("seqscan"));
        let mut mixed = config("seqscan");
        mixed.seqscan.hot_refs = 0.5;
        check_determinism(&mixed);
    }

    #[test]
    fn emits_exactly_refs_aligned_in_range_with_the_write_share() {
        for hot_refs in [1.0, 0.7] {
            let mut cfg = config("seqscan");
            cfg.seqscan.hot_refs = hot_refs;
            cfg.refs = 100_003;
            let records = run(&cfg);
            check_common(&cfg, &records, 8);
            check_write_share(&records, 0.3);
        }
    }

    #[test]
    fn fewer_refs_than_phases_still_emits_all() {
        let mut cfg = config("seqscan");
        cfg.seqscan.phases = 8;
        cfg.refs = 3;
        let mut source = Seqscan::new(&cfg, 0, 0);
        assert_eq!(collect(&mut source, 1).len(), 3);
    }

    /// Runs one phase of `scan` and checks that every access continues the sweep:
    /// its offset from the window start, taken around the ring of pages, is the
    /// previous one's plus the access size, modulo the window size.
    fn check_phase_is_a_sweep(scan: &mut Seqscan, cfg: &WorkloadConfig, phase_refs: usize) {
        let mut out = Vec::new();
        scan.fill(&mut out, phase_refs).expect("generators do not fail");
        let ring = scan.pages * PAGE_BYTES;
        let window_bytes = scan.window_pages * PAGE_BYTES;
        let start = scan.window_start * PAGE_BYTES;
        let in_window = |vaddr: u64| (vaddr - cfg.base_vaddr + ring - start) % ring;
        for pair in out.windows(2) {
            let (a, b) = (in_window(pair[0].vaddr), in_window(pair[1].vaddr));
            assert!(a < window_bytes && b < window_bytes, "access outside the window");
            assert_eq!(b, (a + cfg.access_bytes as u64) % window_bytes);
        }
    }

    #[test]
    fn sweeps_wrap_inside_the_window_and_across_the_footprint_end() {
        // 10 pages, a 3-page window and 4 phases of 2000 references: 8-byte accesses
        // sweep the window's 1536 slots in under a phase, so each phase wraps inside
        // its window wherever the sweep starts. Starting the window at page 8 makes the first one run past the
        // footprint's end (pages 8, 9, 0) and the later ones cover pages 1–3, 4–6 and 7–9.
        let mut cfg = config("seqscan");
        cfg.footprint = Size(10 * 4096);
        cfg.seqscan.window = 0.3;
        cfg.refs = 8_000;
        let mut scan = Seqscan::new(&cfg, 0, 0);
        scan.window_start = 8;
        let mut starts = Vec::new();
        for _ in 0..4 {
            check_phase_is_a_sweep(&mut scan, &cfg, 2_000);
            starts.push(scan.window_start);
        }
        assert_eq!(starts, [8, 1, 4, 7]);
    }

    #[test]
    fn window_moves_to_the_next_disjoint_region_each_phase() {
        // Default shares: a 205-page window of 1024 pages, four phases.
        let mut cfg = config("seqscan");
        cfg.refs = 40_000;
        let mut scan = Seqscan::new(&cfg, 0, 0);
        let mut starts = Vec::new();
        for _ in 0..4 {
            check_phase_is_a_sweep(&mut scan, &cfg, 10_000);
            starts.push(scan.window_start);
        }
        for pair in starts.windows(2) {
            assert_eq!(pair[1], (pair[0] + 205) % 1024);
        }
        // Every core of a tenant sweeps the same windows.
        let mut other_core = Seqscan::new(&cfg, 1, 0);
        collect(&mut other_core, 10_000);
        assert_eq!(other_core.window_start, starts[3]);
    }

    #[test]
    fn uniform_share_lands_outside_the_window() {
        // With hot_refs 0.6, 40 % of references are uniform over the footprint, so
        // 0.4 · (1 - 205/1024) ≈ 32 % land outside the window; σ of the share ≈ 0.0015.
        let mut cfg = config("seqscan");
        cfg.seqscan.hot_refs = 0.6;
        cfg.seqscan.phases = 1;
        let scan = Seqscan::new(&cfg, 3, 2);
        let ring = scan.pages * PAGE_BYTES;
        let start = scan.window_start * PAGE_BYTES;
        let records = run(&cfg);
        let outside = records
            .iter()
            .filter(|a| (a.vaddr - cfg.base_vaddr + ring - start) % ring >= 205 * PAGE_BYTES)
            .count() as f64
            / records.len() as f64;
        let expected = 0.4 * (1.0 - 205.0 / 1024.0);
        assert!((outside - expected).abs() < 0.01, "outside share {outside}, expected {expected}");
    }
}
