//! `hotspot`: a contiguous hot region of `hot_size · footprint` (whole 4 KiB pages)
//! receives a share `hot_refs` of the references, uniformly within it; the others are
//! uniform over the whole footprint. The hot region lies at a random page-aligned
//! offset.
//!
//! With `phases > 1` the references are split into that many equal phases, and at
//! each phase change the hot region jumps to a new random place that does not
//! overlap the previous one (when the footprint has room for two), as in HMM-V
//! §5.6.2, whose four stages each put the hot data in a different region. A policy
//! must then notice that the old hot pages went cold and promote the new ones.
//!
//! The places are drawn from the tenant's layout generator, so every core of a
//! tenant sees the same hot region in the same phase.

use super::rates::{independent, AccessModel, Phased};
use super::{layout_rng, share_in_pages, stream_rng, Emitter, Phases, WorkloadConfig, PAGE_BYTES};
use crate::rng::Rng;
use crate::trace::{Access, Source, WRITE};

/// Generator of references concentrated on a (moving) hot region.
#[derive(Clone, Debug)]
pub struct Hotspot {
    emitter: Emitter,
    rng: Rng,
    /// Draws the hot region's places, the same for every core of the tenant.
    layout: Rng,
    phases: Phases,
    /// Current phase (0-based).
    phase: u32,
    base_vaddr: u64,
    /// Whole pages in the footprint.
    pages: u64,
    /// Pages in the hot region.
    hot_pages: u64,
    /// First page of the current hot region.
    hot_start: u64,
    /// Access-sized slots in the hot region.
    hot_slots: u64,
    /// Access-sized slots in the footprint.
    all_slots: u64,
    /// log2 of the access size.
    shift: u32,
    hot_refs: f64,
    write_fraction: f64,
}

impl Hotspot {
    /// Creates the generator for one core and tenant; `cfg` must be valid.
    pub fn new(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Hotspot {
        let footprint = cfg.footprint.bytes();
        let pages = footprint / PAGE_BYTES;
        let hot_pages = share_in_pages(cfg.hotspot.hot_size, footprint);
        let shift = cfg.access_bytes.trailing_zeros();
        let mut layout = layout_rng(cfg, tenant);
        let hot_start = layout.below(pages - hot_pages + 1);
        Hotspot {
            emitter: Emitter::new(cfg, core, tenant, cfg.access_bytes),
            rng: stream_rng(cfg, core, tenant),
            layout,
            phases: Phases { refs: cfg.refs, count: cfg.hotspot.phases },
            phase: 0,
            base_vaddr: cfg.base_vaddr,
            pages,
            hot_pages,
            hot_start,
            hot_slots: (hot_pages * PAGE_BYTES) >> shift,
            all_slots: footprint >> shift,
            shift,
            hot_refs: cfg.hotspot.hot_refs,
            write_fraction: cfg.write_fraction,
        }
    }

    /// Moves the hot region for the next phase to a random place that does not
    /// overlap the current one, or, when the footprint has no such place, to any
    /// other place (it stays only when it covers all whole pages).
    fn move_hot_region(&mut self) {
        let (start, len) = (self.hot_start, self.hot_pages);
        let places = self.pages - len + 1;
        // Disjoint places are the starts in [0, start - len] and [start + len, places).
        let below = (start + 1).saturating_sub(len);
        let above = places.saturating_sub(start + len);
        self.hot_start = if below + above > 0 {
            let pick = self.layout.below(below + above);
            if pick < below {
                pick
            } else {
                start + len + (pick - below)
            }
        } else if places > 1 {
            // Any start but the current one.
            let pick = self.layout.below(places - 1);
            if pick < start {
                pick
            } else {
                pick + 1
            }
        } else {
            start
        };
    }
}

impl Source for Hotspot {
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> anyhow::Result<()> {
        let mut room = max;
        while room > 0 {
            // A loop, because phases are empty when there are fewer references than phases.
            while self.emitter.emitted == self.phases.end(self.phase) && self.phase + 1 < self.phases.count {
                self.phase += 1;
                self.move_hot_region();
            }
            let n = self.emitter.take_until(room, self.phases.end(self.phase));
            if n == 0 {
                break;
            }
            room -= n;
            out.reserve(n);
            let hot_base = self.base_vaddr + self.hot_start * PAGE_BYTES;
            for _ in 0..n {
                let (origin, slots) = if self.rng.chance(self.hot_refs) {
                    (hot_base, self.hot_slots)
                } else {
                    (self.base_vaddr, self.all_slots)
                };
                let vaddr = origin + (self.rng.below(slots) << self.shift);
                let flags = if self.rng.chance(self.write_fraction) { WRITE } else { 0 };
                out.push(self.emitter.record(vaddr, flags));
            }
        }
        Ok(())
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.emitter.refs)
    }

    /// Draws nothing but the hot regions of the phases passed.
    fn skip(&mut self, n: u64) -> bool {
        self.emitter.skip(n);
        while self.emitter.emitted >= self.phases.end(self.phase) && self.phase + 1 < self.phases.count {
            self.phase += 1;
            self.move_hot_region();
        }
        true
    }
}

/// The statement of `hotspot` (module `rates`), phase by phase: a page of the hot
/// region gets `hot_refs / hot_pages` of the references, and every page its share of
/// the footprint's bytes of the other `1 − hot_refs`. The hot regions are those the
/// generator draws, from the same layout generator.
pub(super) fn model(cfg: &WorkloadConfig, tenant: u16, cores: u64) -> Box<dyn AccessModel> {
    let mut g = Hotspot::new(cfg, 0, tenant);
    let bytes = cfg.footprint.bytes();
    let first = cfg.base_vaddr / PAGE_BYTES;
    let all_pages = bytes.div_ceil(PAGE_BYTES);
    let (wf, instrs) = (cfg.write_fraction, cfg.instrs as u64);
    let what = format!("stated: {} % of references on {} hot pages, {} phase(s)", g.hot_refs * 100.0, g.hot_pages, g.phases.count);
    Box::new(Phased::new(what, vec![first..first + all_pages], g.phases.count, cores, move |i, out| {
        let phase_start = if i == 0 { 0 } else { g.phases.end(i - 1) };
        let refs = g.phases.end(i) - phase_start;
        if i > 0 {
            g.move_hot_region();
        }
        let hot = g.hot_start..g.hot_start + g.hot_pages;
        out.refs = refs;
        out.instrs = instrs * refs;
        out.pages = (0..all_pages)
            .map(|p| {
                let background = (1.0 - g.hot_refs) * (bytes - p * PAGE_BYTES).min(PAGE_BYTES) as f64 / bytes as f64;
                let share = background + if hot.contains(&p) { g.hot_refs / g.hot_pages as f64 } else { 0.0 };
                independent(first + p, share, wf, refs)
            })
            .collect();
    }))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_common, check_determinism, check_write_share, collect, config, run};
    use super::*;
    use crate::units::Size;

    #[test]
    fn is_deterministic() {
        check_determinism(&config("hotspot"));
        let mut phased = config("hotspot");
        phased.hotspot.phases = 4;
        check_determinism(&phased);
    }

    #[test]
    fn emits_exactly_refs_aligned_in_range_with_the_write_share() {
        let mut cfg = config("hotspot");
        cfg.hotspot.phases = 3;
        cfg.refs = 100_001;
        let records = run(&cfg);
        check_common(&cfg, &records, 8);
        check_write_share(&records, 0.3);
    }

    #[test]
    fn fewer_refs_than_phases_still_emits_all() {
        // 3 references over 8 phases leave some phases empty; none may end the run early.
        let mut cfg = config("hotspot");
        cfg.hotspot.phases = 8;
        cfg.refs = 3;
        let mut source = Hotspot::new(&cfg, 0, 0);
        assert_eq!(collect(&mut source, 1).len(), 3);
    }

    #[test]
    fn hot_region_gets_its_share() {
        // The hot region is 20 % of the footprint and gets 90 % of the references
        // directly, plus its 20 % share of the other 10 %: 0.9 + 0.1·0.2 = 0.92.
        // With 100 000 references the share's standard deviation is below 0.001.
        let cfg = config("hotspot");
        let hotspot = Hotspot::new(&cfg, 3, 2);
        assert_eq!(hotspot.hot_pages, 205, "20 % of 1024 pages, rounded");
        let hot_share = 205.0 / 1024.0;
        let start = cfg.base_vaddr + hotspot.hot_start * PAGE_BYTES;
        let hot = start..start + hotspot.hot_pages * PAGE_BYTES;
        let records = run(&cfg);
        let share = records.iter().filter(|a| hot.contains(&a.vaddr)).count() as f64 / records.len() as f64;
        let expected = 0.9 + 0.1 * hot_share;
        assert!((share - expected).abs() < 0.005, "hot share {share}, expected {expected}");
    }

    #[test]
    fn hot_region_moves_to_a_disjoint_place_each_phase() {
        let mut cfg = config("hotspot");
        cfg.hotspot.phases = 4;
        cfg.refs = 40_000;
        let mut hotspot = Hotspot::new(&cfg, 0, 0);
        let mut starts = Vec::new();
        let mut out = Vec::with_capacity(10_000);
        for _ in 0..4 {
            out.clear();
            hotspot.fill(&mut out, 10_000).expect("generators do not fail");
            starts.push(hotspot.hot_start);
            // With hot_refs 0.9 nearly all of this phase's references are in its region.
            let region = cfg.base_vaddr + hotspot.hot_start * PAGE_BYTES..;
            let inside = out.iter().filter(|a| region.contains(&a.vaddr) && a.vaddr < region.start + 205 * PAGE_BYTES);
            assert!(inside.count() > 9_000);
        }
        for pair in starts.windows(2) {
            assert!(pair[0].abs_diff(pair[1]) >= 205, "regions at pages {} and {} overlap", pair[0], pair[1]);
        }
        // All cores of a tenant share the regions.
        let mut other_core = Hotspot::new(&cfg, 1, 0);
        collect(&mut other_core, 10_000);
        assert_eq!(other_core.hot_start, starts[3]);
    }

    #[test]
    fn hot_region_still_moves_when_no_disjoint_place_exists() {
        // 10 pages, a 7-page hot region: the 4 possible places all overlap.
        let mut cfg = config("hotspot");
        cfg.footprint = Size(10 * 4096);
        cfg.hotspot.hot_size = 0.7;
        let mut hotspot = Hotspot::new(&cfg, 0, 0);
        for _ in 0..20 {
            let before = hotspot.hot_start;
            hotspot.move_hot_region();
            assert_ne!(hotspot.hot_start, before);
            assert!(hotspot.hot_start + 7 <= 10);
        }
        // A hot region of all pages cannot move.
        cfg.hotspot.hot_size = 1.0;
        let mut whole = Hotspot::new(&cfg, 0, 0);
        whole.move_hot_region();
        assert_eq!(whole.hot_start, 0);
    }
}
