//! HSCC (Liu et al., "Hardware/Software Cooperative Caching for Hybrid DRAM/NVM Memory
//! Architectures", ICS'17) as Rainbow's evaluation uses it (§IV-A): DRAM and NVM in one
//! flat physical address space, DRAM used as a software-managed cache of NVM pages at
//! 4 KiB (`hscc-4k`, "HSCC-4KB-mig") or 2 MiB (`hscc-2m`, "HSCC-2MB-mig") granularity.
//!
//! Where each part comes from (docs/policies/rainbow.md has the details):
//! - Rainbow §IV-A and §IV-D: utility-based migration of hot NVM pages; access counts
//!   kept in the TLB and page table, so every reference counts, unfiltered by the caches.
//! - Rainbow §III-A/§III-C (same group, "like HSCC"): free/clean/dirty lists and the
//!   utility model (Eq. 1/Eq. 2), shared with Rainbow in [`super::dram_cache`].
//! - The HSCC authors' simulator (github.com/cyjseagull/SHMA, zsim-nvmain): a page is
//!   fetched the moment its TLB counter crosses the threshold; the NVM page is kept and
//!   the PTE remapped to the DRAM copy; fetching flushes the NVM page's lines, evicting
//!   flushes the victim's lines, writes it back only if dirty and remaps it; both
//!   remappings shoot down the page's TLB entries. (Its counters weigh a write 2 reads;
//!   we weigh writes by the utility model, as for Rainbow — set `write_weight = 2` for
//!   SHMA's weights.)
//!
//! The ICS'17 text itself was not reachable; its dynamic threshold adjustment is
//! modelled as Rainbow's (raise while written-back traffic is seen).

use super::dram_cache::{admit, prune_held, Admit, DramLists, SlotCounts, Threshold, Utility};
use super::{Epoch, PageSize, Policy, PolicyReport, Requirements};
use crate::machine::copies::{CopyMode, CopySpec, Copies};
use crate::machine::placement::Placement;
use crate::machine::{MachineInfo, Observer, Owner, PageRef, RefOutcome, TierId};
use crate::mechanism::Mechanisms;
use crate::params;
use crate::trace::Access;
use serde_json::json;

params! {
    /// Parameters of HSCC as Rainbow's baseline.
    pub struct HsccConfig {
        /// Weight of a write in a page's access counter. 0: (t_nw − t_dw) / (t_nr − t_dr)
        /// from the tiers' row-miss latencies, so that the counter times the read gain is
        /// Eq. 1's saving (as Rainbow: 3 on the default machine); the HSCC authors'
        /// simulator uses 2.
        pub write_weight: u32 = 0,
        /// Factor by which the benefit threshold rises after an interval with write-backs
        /// and falls after one without (assumption, as Rainbow's).
        pub threshold_factor: f64 = 2.0,
    }
}

/// HSCC at 4 KiB (`HUGE = false`) or huge-page (`HUGE = true`) granularity.
pub struct Hscc<const HUGE: bool> {
    util: Utility,
    threshold: Threshold,
    /// Smallest count whose Eq. 1 benefit beats the threshold (recomputed per interval).
    trigger: u64,
    /// Base frames per page (1 or the huge-page frames).
    frames: u64,
    slow_base: u64,
    /// Weighted references per slow page in this interval (saturating; HSCC keeps them
    /// in the TLB entry and PTE, whose width the papers do not give: 32 bits here).
    count: Vec<u32>,
    touched: Vec<u32>,
    /// Weighted references per fast page (copies) in this interval and the last one.
    fast: SlotCounts,
    lists: DramLists,
    held: Vec<u64>,
    /// Nothing can be dropped until the next interval.
    full: bool,
    intervals: u64,
    copied: u64,
    dirty_drops_before: u64,
    history: Vec<serde_json::Value>,
}

impl<const HUGE: bool> Observer for Hscc<HUGE> {}

impl<const HUGE: bool> Hscc<HUGE> {
    fn set_trigger(&mut self) {
        self.trigger = ((self.threshold.cycles + self.util.t_mig) / self.util.read_gain).floor() as u64 + 1;
    }

    #[cold]
    fn try_admit(&mut self, frame: u64, count: u64, mech: &mut Mechanisms<Copies>) {
        let Owner::Data { tenant, addr } = mech.owner(frame) else { return };
        let fast = &self.fast;
        let victim_count = |f: u64| fast.last(f);
        match admit(mech, &mut self.lists, &self.util, self.threshold.cycles, PageRef::new(tenant, addr), count, self.frames, victim_count) {
            Admit::Copied(f) => {
                self.copied += 1;
                self.held.push(f);
            }
            Admit::NotWorth => {}
            Admit::NoVictim => self.full = true,
        }
    }
}

impl<const HUGE: bool> Policy<Copies> for Hscc<HUGE> {
    type Config = HsccConfig;

    fn requirements(_: &HsccConfig) -> Requirements<CopySpec> {
        Requirements {
            page_size: if HUGE { PageSize::Huge } else { PageSize::Base },
            placement: Placement::SlowOnly,
            redirect: CopySpec { mode: CopyMode::Remap, bitmap_cache: None, bitmap_at_memory: false },
            ..Requirements::default()
        }
    }

    fn new(cfg: HsccConfig, info: &MachineInfo) -> anyhow::Result<Self> {
        let name = if HUGE { "hscc-2m" } else { "hscc-4k" };
        if !info.has(TierId::SLOW) {
            anyhow::bail!("policy.{name}: needs a fast (DRAM) and a slow (NVM) tier");
        }
        if !(cfg.threshold_factor.is_finite() && cfg.threshold_factor >= 1.0) {
            anyhow::bail!("policy.{name}.threshold_factor: must be a number ≥ 1, got {}", cfg.threshold_factor);
        }
        let frames = if HUGE { info.huge_page_bytes >> 12 } else { 1 };
        let util = Utility::new(info, frames << 12, cfg.write_weight);
        let mut p = Hscc {
            threshold: Threshold { cycles: 0.0, factor: cfg.threshold_factor, floor: util.t_mig },
            util,
            trigger: 0,
            frames,
            slow_base: info.tier(TierId::SLOW).base_pfn,
            count: vec![0; info.tier(TierId::SLOW).frames.div_ceil(frames) as usize],
            touched: Vec::new(),
            fast: SlotCounts::new(info.tier(TierId::FAST).base_pfn, info.tier(TierId::FAST).frames, frames),
            lists: DramLists::default(),
            held: Vec::new(),
            full: false,
            intervals: 0,
            copied: 0,
            dirty_drops_before: 0,
            history: Vec::new(),
        };
        p.set_trigger();
        Ok(p)
    }


    #[inline]
    fn on_reference(&mut self, a: &Access, out: &RefOutcome, mech: &mut Mechanisms<Copies>) {
        let pfn = out.paddr >> 12;
        let w = if a.is_write() { self.util.write_weight } else { 1 };
        let w16 = w.min(u16::MAX as u32) as u16;
        let s = pfn.wrapping_sub(self.slow_base) / self.frames;
        if let Some(c) = self.count.get_mut(s as usize) {
            if *c == 0 {
                self.touched.push(s as u32);
            }
            *c = c.saturating_add(w);
            let v = *c as u64;
            if v >= self.trigger && !self.full {
                self.try_admit(self.slow_base + s * self.frames, v, mech);
            }
            return;
        }
        self.fast.add(pfn, w16);
    }

    fn on_epoch(&mut self, _epoch: &Epoch, mech: &mut Mechanisms<Copies>) {
        self.intervals += 1;
        self.fast.roll();
        for &i in &self.touched {
            self.count[i as usize] = 0;
        }
        self.touched.clear();
        prune_held(&mut self.held, mech);
        let (fast, frames, cp) = (&self.fast, self.frames, mech.copies());
        self.lists.rebuild(&self.held, |f| fast.last(f), |f| cp.is_dirty(f, frames));
        let drops = mech.copies().stats.dirty_drops;
        let written_back = drops - self.dirty_drops_before;
        self.dirty_drops_before = drops;
        self.threshold.end_interval(written_back);
        self.set_trigger();
        self.full = false;
        self.history.push(json!({
            "interval": self.intervals,
            "copies_held": self.held.len(),
            "written_back": written_back,
            "threshold_cycles": self.threshold.cycles,
        }));
    }

    fn report(&self, out: &mut PolicyReport) {
        out.insert("granularity_bytes".into(), json!(self.frames << 12));
        out.insert("intervals".into(), json!(self.intervals));
        out.insert("pages_copied".into(), json!(self.copied));
        out.insert("copies_held".into(), json!(self.held.len()));
        out.insert("benefit_threshold_cycles".into(), json!(self.threshold.cycles));
        out.insert("utility".into(), self.util.to_json());
        out.insert("per_interval".into(), json!(self.history));
    }
}
