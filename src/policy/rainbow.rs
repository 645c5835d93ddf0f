//! Rainbow (Wang et al., "Supporting Superpages and Lightweight Page Migration in
//! Hybrid Memory Systems"): NVM managed only in 2 MiB superpages, DRAM holding 4 KiB
//! copies of their hot small pages without splintering the superpage mapping.
//!
//! Split between layers:
//! - the machine ([`crate::machine::copies`], Redirect mode) does the hardware of
//!   §III-D/E: on a translation through a superpage entry it checks the migration
//!   bitmap (bitmap cache, 8-way, 4000 entries, 9 cycles; a miss reads the bitmap line
//!   from memory), reads the slow page's first 8 bytes when the bit is set and fills
//!   the 4 KiB TLB with the copy;
//! - this policy is the memory-controller counters (§III-B) and the OS modules of
//!   Fig. 2: hot-page identifier, utility-based migration controller (§III-C) and
//!   DRAM manager with free, clean and dirty lists (§III-A), acting at each interval
//!   (`engine.epoch_cycles`, 10^8 cycles in the preset, §III-B).
//!
//! Two-stage counting (§III-B, Fig. 3): in each interval every NVM superpage has a
//! 2-byte counter of its NVM accesses (writes weighted more); at the interval's end the
//! top N superpages are chosen, and in the next interval their 4 KiB pages are counted
//! in 15-bit counters with an overflow flag. The two stages run as a pipeline: the
//! interval that selects the next top N is also the one whose small pages are counted.
//! Pages whose Eq. 1 benefit (Eq. 2 when DRAM is full) exceeds the threshold are
//! copied; the threshold rises while dirty copies are written back.
//!
//! Accesses are what the memory controller sees: demand reads of lines that missed the
//! LLC and write-backs of dirty lines (writes). Counting them costs the application
//! nothing (hardware). Migration work stalls the core that ends the interval, as the
//! paper charges it to the application (Fig. 15).

use super::dram_cache::{admit, prune_held, Admit, DramLists, SlotCounts, Threshold, Utility};
use super::{Epoch, PageSize, Policy, PolicyReport, Requirements};
use crate::machine::copies::{BitmapCacheConfig, CopyMode, CopySpec, Copies};
use crate::machine::placement::Placement;
use crate::machine::{MachineInfo, MemEvent, MemKind, Observer, Owner, PageRef, TierId};
use crate::mechanism::Mechanisms;
use crate::params;
use crate::units::Size;
use serde_json::json;

params! {
    /// Parameters of Rainbow; defaults are the paper's.
    pub struct RainbowConfig {
        /// Superpages monitored at 4 KiB granularity in the next interval (§III-B, §IV-F: N = 100).
        pub top_n: usize = 100,
        /// Two-stage counting (§III-B). false: count every 4 KiB page of NVM in every
        /// interval, as a per-page counter array would (the ablation the storage argument is about).
        pub two_stage: bool = true,
        /// Use the migration-bitmap cache (§III-D). false: every check reads the bitmap from memory.
        pub bitmap_cache: bool = true,
        /// Bitmap-cache entries, one superpage's 512-bit bitmap each (§III-D: 4000).
        pub bitmap_cache_entries: usize = 4000,
        /// Bitmap-cache associativity (§III-D: 8-way).
        pub bitmap_cache_ways: usize = 8,
        /// Bitmap-cache lookup latency in cycles (§III-D: 9, from CACTI).
        pub bitmap_cache_cycles: u64 = 9,
        /// Pay the bitmap check only on references that reach memory (§III-D: "9 cycles
        /// latency ... before accessing the NVM"; the cache is in the memory controller).
        /// false: every translation through a superpage entry pays it (§III-E's flow
        /// read literally). Redirection is decided at translation either way.
        pub bitmap_at_memory: bool = true,
        /// Weight of an NVM write in the access counters (§III-B says only "higher").
        /// 0: (t_nw − t_dw) / (t_nr − t_dr) from the tiers' row-miss latencies, which the
        /// utility model uses throughout, so that a page's one counter times the read
        /// gain is Eq. 1's saving: 3 on the default machine (DRAM 34.5 / 49.5 ns, PCM
        /// 75 / 171 ns). The paper's Eq. 1 takes Table IV's quoted latencies (13.5 /
        /// 28.5 ns, 19.5 / 171 ns), which give 24: set 24 for that weight.
        pub write_weight: u32 = 0,
        /// Factor by which the benefit threshold rises after an interval with
        /// write-backs, and falls after one without (§III-C gives no number; assumption).
        pub threshold_factor: f64 = 2.0,
    }
}

/// Saturating 2-byte superpage counter (§III-B).
const SP_MAX: u16 = u16::MAX;
/// 15-bit small-page counter and its overflow flag (§III-B, Fig. 4).
const SMALL_MAX: u16 = 0x7fff;
const OVERFLOW: u16 = 0x8000;

pub struct Rainbow {
    cfg: RainbowConfig,
    util: Utility,
    threshold: Threshold,
    huge_frames: u64,
    slow_base: u64,
    /// Stage 1: NVM accesses per slow superpage in this interval.
    sp_count: Vec<u16>,
    sp_touched: Vec<u32>,
    /// Stage 2: per slow superpage, its slot in `monitored` + 1 (0 = not monitored).
    sp_slot: Vec<u32>,
    /// Superpages monitored at 4 KiB granularity in this interval.
    monitored: Vec<u32>,
    /// Small-page counters: `slot × huge_frames + page` (two-stage), or one per slow
    /// frame (two_stage off).
    small: Vec<u16>,
    small_touched: Vec<u32>,
    /// Accesses per fast frame in this interval (DRAM-side counts of copies, for the
    /// victims of Eq. 2) and in the last one.
    fast: SlotCounts,
    slow_frames: u64,
    lists: DramLists,
    held: Vec<u64>,
    // Report.
    intervals: u64,
    copied: u64,
    refused_not_worth: u64,
    writebacks_this_interval: u64,
    history: Vec<serde_json::Value>,
}

impl Observer for Rainbow {
    #[inline]
    fn on_memory_access(&mut self, e: &MemEvent) {
        if !matches!(e.kind, MemKind::Demand | MemKind::Writeback) {
            return;
        }
        let w = if e.write { self.util.write_weight } else { 1 };
        let pfn = e.paddr >> 12;
        if e.tier == TierId::SLOW {
            let i = (pfn - self.slow_base) as usize;
            let sp = i / self.huge_frames as usize;
            let c = &mut self.sp_count[sp];
            if *c == 0 {
                self.sp_touched.push(sp as u32);
            }
            *c = c.saturating_add(w.min(SP_MAX as u32) as u16);
            let idx = if self.cfg.two_stage {
                match self.sp_slot[sp] {
                    0 => return,
                    s => (s as usize - 1) * self.huge_frames as usize + i % self.huge_frames as usize,
                }
            } else {
                i
            };
            let c = &mut self.small[idx];
            if *c == 0 {
                self.small_touched.push(idx as u32);
            }
            let v = (*c & SMALL_MAX) as u32 + w;
            *c = if v > SMALL_MAX as u32 { OVERFLOW | SMALL_MAX } else { (*c & OVERFLOW) | v as u16 };
        } else if e.tier == TierId::FAST {
            self.fast.add(pfn, w.min(u16::MAX as u32) as u16);
        }
    }
}

impl Rainbow {
    /// A small-page counter's value (an overflowed counter counts as its maximum: the
    /// page is "definitely hot", §III-B).
    fn small_value(c: u16) -> u64 {
        if c & OVERFLOW != 0 {
            SMALL_MAX as u64
        } else {
            c as u64
        }
    }

    /// The slow frame counted in small-counter index `idx`.
    fn small_frame(&self, idx: usize) -> u64 {
        if self.cfg.two_stage {
            let hf = self.huge_frames as usize;
            let sp = self.monitored[idx / hf] as u64;
            self.slow_base + sp * self.huge_frames + (idx % hf) as u64
        } else {
            self.slow_base + idx as u64
        }
    }

    /// Stage 2 → migration: the counted small pages, hottest first, each copied while
    /// the utility model says it pays (Eq. 1 with free DRAM, Eq. 2 against a victim).
    fn migrate_hot(&mut self, mech: &mut Mechanisms<Copies>) {
        let mut cands: Vec<(u64, u64)> = self
            .small_touched
            .iter()
            .map(|&i| (Self::small_value(self.small[i as usize]), self.small_frame(i as usize)))
            .collect();
        cands.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (count, frame) in cands {
            if mech.copies().copy_of(frame).is_some() {
                continue;
            }
            let Owner::Data { tenant, addr } = mech.owner(frame) else { continue };
            let fast = &self.fast;
            let victim_count = |f: u64| fast.last(f);
            let before = mech.copies().stats.dirty_drops;
            match admit(mech, &mut self.lists, &self.util, self.threshold.cycles, PageRef::new(tenant, addr), count, 1, victim_count) {
                Admit::Copied(f) => {
                    self.copied += 1;
                    self.held.push(f);
                }
                Admit::NotWorth => {
                    // Colder candidates cannot do better against the same victim.
                    self.refused_not_worth += 1;
                    break;
                }
                Admit::NoVictim => break,
            }
            self.writebacks_this_interval += mech.copies().stats.dirty_drops - before;
        }
    }

    /// Stage 1 → stage 2: the top N superpages of this interval are monitored in the next.
    fn select_top_n(&mut self) {
        for &sp in &self.monitored {
            self.sp_slot[sp as usize] = 0;
        }
        self.monitored.clear();
        let mut touched: Vec<(u16, u32)> = self.sp_touched.iter().map(|&sp| (self.sp_count[sp as usize], sp)).collect();
        let n = self.cfg.top_n.min(touched.len());
        if n > 0 && n < touched.len() {
            touched.select_nth_unstable_by(n - 1, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        }
        touched.truncate(n);
        touched.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (slot, &(_, sp)) in touched.iter().enumerate() {
            self.monitored.push(sp);
            self.sp_slot[sp as usize] = slot as u32 + 1;
        }
        for &sp in &self.sp_touched {
            self.sp_count[sp as usize] = 0;
        }
        self.sp_touched.clear();
    }

    /// Storage of Table VI for this configuration, in bytes.
    fn storage(&self, slow_frames: u64) -> serde_json::Value {
        let superpages = slow_frames.div_ceil(self.huge_frames);
        let bitmap_line = self.huge_frames.div_ceil(8);
        let bitmap_cache = if self.cfg.bitmap_cache { self.cfg.bitmap_cache_entries as u64 * (4 + bitmap_line) } else { 0 };
        let sp_counters = 2 * superpages;
        let (psn, small) = if self.cfg.two_stage {
            (4 * self.cfg.top_n as u64, 2 * self.huge_frames * self.cfg.top_n as u64)
        } else {
            (0, 2 * slow_frames)
        };
        json!({
            "bitmap_cache_bytes": bitmap_cache,
            "superpage_counter_bytes": sp_counters,
            "top_n_psn_bytes": psn,
            "small_page_counter_bytes": small,
            "total_sram_bytes": bitmap_cache + sp_counters + psn + small,
            "in_memory_bitmap_bytes": superpages * bitmap_line,
        })
    }
}

impl Policy<Copies> for Rainbow {
    type Config = RainbowConfig;

    fn requirements(cfg: &RainbowConfig) -> Requirements<CopySpec> {
        Requirements {
            page_size: PageSize::Huge,
            placement: Placement::SlowOnly,
            redirect: CopySpec {
                mode: CopyMode::Redirect,
                bitmap_cache: cfg.bitmap_cache.then_some(BitmapCacheConfig {
                    entries: cfg.bitmap_cache_entries,
                    ways: cfg.bitmap_cache_ways,
                    latency_cycles: cfg.bitmap_cache_cycles,
                }),
                bitmap_at_memory: cfg.bitmap_at_memory,
            },
            ..Requirements::default()
        }
    }

    fn new(cfg: RainbowConfig, info: &MachineInfo) -> anyhow::Result<Self> {
        if !info.has(TierId::SLOW) {
            anyhow::bail!("policy.rainbow: needs a fast (DRAM) and a slow (NVM) tier");
        }
        if cfg.top_n == 0 && cfg.two_stage {
            anyhow::bail!("policy.rainbow.top_n: must be at least 1 with two-stage counting");
        }
        if cfg.bitmap_cache && (cfg.bitmap_cache_ways == 0 || cfg.bitmap_cache_entries < cfg.bitmap_cache_ways) {
            anyhow::bail!(
                "policy.rainbow.bitmap_cache_entries / bitmap_cache_ways: need at least one set of ways > 0 ({} entries, {} ways)",
                cfg.bitmap_cache_entries,
                cfg.bitmap_cache_ways
            );
        }
        if !(cfg.threshold_factor.is_finite() && cfg.threshold_factor >= 1.0) {
            anyhow::bail!("policy.rainbow.threshold_factor: must be a number ≥ 1, got {}", cfg.threshold_factor);
        }
        let huge_frames = info.huge_page_bytes >> 12;
        let slow_frames = info.tier(TierId::SLOW).frames;
        // §III-A: every page lives in an NVM superpage (plus the in-memory bitmap, which
        // the machine adds to a slow tier given as a share of the footprint).
        let pages = info.footprint_bytes.div_ceil(info.huge_page_bytes) * info.huge_page_bytes;
        let needed = |frames: u64| pages + frames.div_ceil(8 * 4096) * 4096;
        if needed(slow_frames) > slow_frames << 12 {
            // The bitmap grows with the tier; two rounds settle it (it is 1/32768 of it).
            let enough = needed(needed(needed(slow_frames) >> 12) >> 12);
            anyhow::bail!(
                "policy.rainbow: the footprint ({}) and the migration bitmap do not fit the slow tier ({}): Rainbow keeps every page in NVM superpages (§III-A); set machine.tiers.slow.capacity to at least \"{}\"",
                Size(info.footprint_bytes),
                Size(slow_frames << 12),
                Size(enough.div_ceil(1 << 20) << 20)
            );
        }
        let util = Utility::new(info, 4096, cfg.write_weight);
        let superpages = slow_frames.div_ceil(huge_frames) as usize;
        let small_len = if cfg.two_stage { cfg.top_n * huge_frames as usize } else { slow_frames as usize };
        Ok(Rainbow {
            threshold: Threshold { cycles: 0.0, factor: cfg.threshold_factor, floor: util.t_mig },
            util,
            huge_frames,
            slow_base: info.tier(TierId::SLOW).base_pfn,
            sp_count: vec![0; superpages],
            sp_touched: Vec::new(),
            sp_slot: vec![0; superpages],
            monitored: Vec::new(),
            small: vec![0; small_len],
            small_touched: Vec::new(),
            fast: SlotCounts::new(info.tier(TierId::FAST).base_pfn, info.tier(TierId::FAST).frames, 1),
            slow_frames,
            lists: DramLists::default(),
            held: Vec::new(),
            intervals: 0,
            copied: 0,
            refused_not_worth: 0,
            writebacks_this_interval: 0,
            history: Vec::new(),
            cfg,
        })
    }

    fn on_epoch(&mut self, _epoch: &Epoch, mech: &mut Mechanisms<Copies>) {
        self.intervals += 1;
        // This interval's DRAM-side counts rank the victims.
        self.fast.roll();
        let copies_before = self.copied;
        prune_held(&mut self.held, mech);
        let (fast, cp) = (&self.fast, mech.copies());
        self.lists.rebuild(&self.held, |f| fast.last(f), |f| cp.is_dirty(f, 1));
        self.writebacks_this_interval = 0;
        self.migrate_hot(mech);
        prune_held(&mut self.held, mech);
        self.threshold.end_interval(self.writebacks_this_interval);
        self.history.push(json!({
            "interval": self.intervals,
            "monitored_superpages": self.monitored.len(),
            "counted_small_pages": self.small_touched.len(),
            "copied": self.copied - copies_before,
            "written_back": self.writebacks_this_interval,
            "copies_held": self.held.len(),
            "threshold_cycles": self.threshold.cycles,
        }));
        // Next interval: fresh small counters for the newly selected top N.
        for &i in &self.small_touched {
            self.small[i as usize] = 0;
        }
        self.small_touched.clear();
        if self.cfg.two_stage {
            self.select_top_n();
        } else {
            for &sp in &self.sp_touched {
                self.sp_count[sp as usize] = 0;
            }
            self.sp_touched.clear();
        }
    }

    fn report(&self, out: &mut PolicyReport) {
        out.insert("intervals".into(), json!(self.intervals));
        out.insert("pages_copied".into(), json!(self.copied));
        out.insert("copies_held".into(), json!(self.held.len()));
        out.insert("benefit_threshold_cycles".into(), json!(self.threshold.cycles));
        out.insert("utility".into(), self.util.to_json());
        out.insert("storage".into(), self.storage(self.slow_frames));
        out.insert("per_interval".into(), json!(self.history));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{Build, Machine, MachineConfig, TenantKind};
    use crate::mechanism::Runtime;
    use crate::policy::Epoch;
    use crate::trace::Access;
    use crate::units::Capacity;

    /// Slow tier base: tiers start at 1 GiB boundaries, so after a 1024-frame fast tier
    /// the slow tier starts at frame 2^18.
    const SLOW_BASE: u64 = 1 << 18;
    const HF: u64 = 512;

    /// A 1024-frame fast tier and an 8-superpage (4096-frame) slow tier.
    fn info() -> MachineInfo {
        crate::policy::dram_cache::table_iv_info(1024, 8 * HF, SLOW_BASE)
    }

    fn rainbow(top_n: usize, two_stage: bool, write_weight: u32) -> Rainbow {
        Rainbow::new(RainbowConfig { top_n, two_stage, write_weight, ..RainbowConfig::default() }, &info()).unwrap()
    }

    /// A memory-controller access to base page `page` of slow superpage `sp`.
    fn slow(sp: u64, page: u64, write: bool, kind: MemKind) -> MemEvent {
        let pfn = SLOW_BASE + sp * HF + page;
        MemEvent { core: 0, paddr: pfn << 12 | 0x40, tier: TierId::SLOW, write, kind, latency: 0 }
    }

    fn feed(r: &mut Rainbow, e: MemEvent, times: u64) {
        for _ in 0..times {
            r.on_memory_access(&e);
        }
    }

    #[test]
    fn superpage_counters_weigh_writes_and_count_only_data_traffic() {
        let mut r = rainbow(2, true, 3);
        assert_eq!(r.util.write_weight, 3, "an explicit weight is kept");
        // Superpage 0: 2 demand reads + 1 write-back = 2 + 3 = 5.
        feed(&mut r, slow(0, 0, false, MemKind::Demand), 2);
        feed(&mut r, slow(0, 7, true, MemKind::Writeback), 1);
        // Superpage 1: 2 write-backs = 6.
        feed(&mut r, slow(1, 300, true, MemKind::Writeback), 2);
        // Superpage 2: only page-walk and metadata traffic, which the counters ignore.
        feed(&mut r, slow(2, 0, false, MemKind::Walk), 4);
        feed(&mut r, slow(2, 0, true, MemKind::Metadata), 4);
        assert_eq!(&r.sp_count[..4], &[5, 6, 0, 0]);
        assert_eq!(r.sp_touched, vec![0, 1]);
        // Nothing is monitored before the first selection: no small-page counts.
        assert!(r.small_touched.is_empty() && r.monitored.is_empty());
        // DRAM-side counts (copies): frame 5 read once and written back once = 1 + 3.
        let fast = |write| MemEvent { core: 0, paddr: 5 << 12, tier: TierId::FAST, write, kind: MemKind::Demand, latency: 0 };
        feed(&mut r, fast(false), 1);
        feed(&mut r, fast(true), 1);
        assert_eq!((r.fast.count[5], r.fast.touched.clone()), (4, vec![5]));
        // With the default weight 0 and Table IV's quoted latencies as the row misses
        // (table_iv_info) the weight is (171 − 28.5) / (19.5 − 13.5) = 23.75 → 24.
        assert_eq!(rainbow(2, true, 0).util.write_weight, 24);
    }

    #[test]
    fn superpage_counter_saturates_at_two_bytes() {
        let mut r = rainbow(1, true, 3);
        // 21845 writes × 3 = 65535 = u16::MAX exactly; one more read stays there.
        feed(&mut r, slow(4, 1, true, MemKind::Writeback), 21845);
        assert_eq!(r.sp_count[4], 65535);
        feed(&mut r, slow(4, 1, false, MemKind::Demand), 1);
        assert_eq!(r.sp_count[4], u16::MAX);
    }

    #[test]
    fn top_n_selects_the_largest_superpages_and_only_they_get_small_counters() {
        let mut r = rainbow(2, true, 3);
        // Counts: sp3 = 7, sp2 = 7, sp0 = 4, sp1 = 10, sp5 = 1 (touched in that order).
        feed(&mut r, slow(3, 0, false, MemKind::Demand), 7);
        feed(&mut r, slow(2, 0, false, MemKind::Demand), 7);
        feed(&mut r, slow(0, 0, false, MemKind::Demand), 4);
        feed(&mut r, slow(1, 0, true, MemKind::Writeback), 3); // 9
        feed(&mut r, slow(1, 0, false, MemKind::Demand), 1); // 10
        feed(&mut r, slow(5, 0, false, MemKind::Demand), 1);
        r.select_top_n();
        // Top 2: sp1 (10), then sp2 and sp3 tie at 7 and the lower number wins.
        assert_eq!(r.monitored, vec![1, 2]);
        assert_eq!(&r.sp_slot[..6], &[0, 1, 2, 0, 0, 0]);
        // Stage 1 starts afresh.
        assert!(r.sp_count.iter().all(|&c| c == 0) && r.sp_touched.is_empty());

        // Next interval: sp2 page 9 ×3 reads, sp3 page 9 ×5 reads (not monitored), sp1
        // page 0 one write-back (3).
        feed(&mut r, slow(2, 9, false, MemKind::Demand), 3);
        feed(&mut r, slow(3, 9, false, MemKind::Demand), 5);
        feed(&mut r, slow(1, 0, true, MemKind::Writeback), 1);
        // Slot 1 (sp2) page 9 → index 512 + 9 = 521; slot 0 (sp1) page 0 → index 0.
        assert_eq!(r.small_touched, vec![521, 0]);
        assert_eq!((r.small[521], r.small[0]), (3, 3));
        assert_eq!(r.small.iter().filter(|&&c| c != 0).count(), 2, "sp3's pages are not counted");
        assert_eq!(r.small_frame(521), SLOW_BASE + 2 * HF + 9);
        assert_eq!(r.small_frame(0), SLOW_BASE + HF);
        // The same interval feeds stage 1 (a pipeline): sp3 = 5, sp2 = 3, sp1 = 3.
        assert_eq!(&r.sp_count[..4], &[0, 3, 3, 5]);
        r.select_top_n();
        // sp3 first, then sp1 and sp2 tie at 3: sp1. sp2 is no longer monitored.
        assert_eq!(r.monitored, vec![3, 1]);
        assert_eq!(&r.sp_slot[..4], &[0, 2, 0, 1]);

        // With fewer touched superpages than N, all of them are monitored.
        let mut r = rainbow(100, true, 3);
        feed(&mut r, slow(6, 0, false, MemKind::Demand), 1);
        feed(&mut r, slow(4, 0, false, MemKind::Demand), 2);
        r.select_top_n();
        assert_eq!(r.monitored, vec![4, 6]);
    }

    #[test]
    fn small_counter_saturates_with_its_overflow_flag() {
        let mut r = rainbow(1, true, 3);
        feed(&mut r, slow(0, 0, false, MemKind::Demand), 1);
        r.select_top_n();
        assert_eq!(r.monitored, vec![0]);
        // 0x7fff reads: the 15-bit counter is full but has not overflowed.
        feed(&mut r, slow(0, 4, false, MemKind::Demand), 0x7fff);
        assert_eq!(r.small[4], 0x7fff);
        assert_eq!(Rainbow::small_value(r.small[4]), 0x7fff);
        // One more: saturated, overflow flag set; the value is the 15-bit maximum.
        feed(&mut r, slow(0, 4, false, MemKind::Demand), 1);
        assert_eq!(r.small[4], 0x8000 | 0x7fff);
        assert_eq!(Rainbow::small_value(r.small[4]), 0x7fff);
        feed(&mut r, slow(0, 4, true, MemKind::Writeback), 5);
        assert_eq!(r.small[4], 0xffff, "stays saturated");
        // A write that carries the counter past the maximum sets the flag too:
        // 0x7ffe + 3 = 0x8001 > 0x7fff.
        feed(&mut r, slow(0, 5, false, MemKind::Demand), 0x7ffe);
        assert_eq!(r.small[5], 0x7ffe);
        feed(&mut r, slow(0, 5, true, MemKind::Writeback), 1);
        assert_eq!(r.small[5], 0xffff);
        // Ordinary counters read as themselves.
        feed(&mut r, slow(0, 6, true, MemKind::Writeback), 2);
        assert_eq!(Rainbow::small_value(r.small[6]), 6);
    }

    #[test]
    fn without_two_stage_every_slow_frame_is_counted() {
        let mut r = rainbow(1, false, 3);
        assert_eq!(r.small.len(), 8 * HF as usize, "one counter per slow frame");
        feed(&mut r, slow(0, 1, false, MemKind::Demand), 2);
        feed(&mut r, slow(5, 511, true, MemKind::Writeback), 1);
        feed(&mut r, slow(7, 0, false, MemKind::Demand), 1);
        // No selection happened, yet all three are counted, at their frame index.
        assert!(r.monitored.is_empty());
        assert_eq!(r.small_touched, vec![1, 5 * 512 + 511, 7 * 512]);
        assert_eq!((r.small[1], r.small[5 * 512 + 511], r.small[7 * 512]), (2, 3, 1));
        assert_eq!(r.small_frame(5 * 512 + 511), SLOW_BASE + 5 * HF + 511);
    }

    /// One interval's migration on a real machine: when there are more hot pages than
    /// DRAM frames, the hottest are copied and stay copied; a page copied in this
    /// interval is not dropped again in the same interval for a colder one.
    #[test]
    fn migration_copies_the_hottest_pages_without_churn() {
        const MIB: u64 = 1 << 20;
        let base = 0x7f00_0000_0000u64;
        let mut cfg = MachineConfig::default();
        cfg.page_table.thp = true;
        cfg.tiers.fast.capacity = Capacity::Bytes(4 * MIB);
        cfg.tiers.slow.capacity = Capacity::Bytes(8 * MIB);
        let rcfg = RainbowConfig { top_n: 4, write_weight: 1, ..RainbowConfig::default() };
        let req = Rainbow::requirements(&rcfg);
        let mut b = Build::new(&cfg, &[TenantKind::Process], 6 * MIB);
        (b.thp, b.placement, b.redirect, b.verify) = (true, req.placement, req.redirect, true);
        let mut m = Machine::<Copies>::new(&cfg, &b).unwrap();
        let mut rt = Runtime::new(&[], 1);
        let mut r = Rainbow::new(rcfg, m.info()).unwrap();
        // Map three superpages (1536 pages, more than the 1024 DRAM frames).
        for s in 0..3 {
            m.access(0, &Access::read(base + s * 2 * MIB, 8, 0), &mut ());
        }
        let sp: Vec<u64> = (0..3).map(|s| m.space().page_info(PageRef::new(0, base + s * 2 * MIB)).unwrap().pfn).collect();
        let slow_base = m.info().tier(TierId::SLOW).base_pfn;
        let ev = |pfn: u64| MemEvent { core: 0, paddr: pfn << 12, tier: TierId::SLOW, write: false, kind: MemKind::Demand, latency: 0 };
        let epoch = |i| Epoch { now: i, boundaries: 1, index: i };
        // Interval 1: the three superpages are counted and selected.
        for &p in &sp {
            r.on_memory_access(&ev(p));
        }
        r.on_epoch(&epoch(1), &mut Mechanisms::on_core(&mut m, &mut rt, 0));
        assert_eq!(r.monitored.len(), 3);
        assert_eq!(m.redirect().stats.copies_made, 0);
        // Interval 2: page j (j = 0 … 1535, superpage j / 512) gets c_min + 1535 − j
        // accesses, so page 0 is the hottest, and every page is worth copying even in
        // place of a dirty victim of count 0 (Eq. 2): c_min = ⌈(T_mig + T_wb) / gain⌉.
        let c_min = ((r.util.t_mig + r.util.t_writeback) / r.util.read_gain).ceil() as u64 + 1;
        let frame = |j: u64| sp[(j / 512) as usize] + j % 512;
        for j in 0..1536 {
            feed(&mut r, ev(frame(j)), c_min + 1535 - j);
        }
        r.on_epoch(&epoch(2), &mut Mechanisms::on_core(&mut m, &mut rt, 0));
        let cp = m.redirect();
        let held = cp.held();
        assert!(held > 900 && held < 1024, "DRAM filled up: {held} copies");
        // No copy was made and dropped in the same interval.
        assert_eq!((cp.stats.copies_made, cp.stats.clean_drops + cp.stats.dirty_drops), (held, 0));
        // The copies are the hottest pages: pages 0 … held−1.
        for j in 0..1536 {
            assert_eq!(cp.copy_of(frame(j)).is_some(), j < held, "page {j} (slow frame {:#x})", frame(j) - slow_base);
        }
        // The policy's list of copies matches the machine's.
        let mut h = r.held.clone();
        h.sort_unstable();
        h.dedup();
        assert_eq!((r.held.len() as u64, h.len() as u64), (held, held));
        m.check_invariants().unwrap();
    }
}
