//! What Rainbow and HSCC share: the fast tier managed as a software cache of slow
//! pages (see [`crate::machine::copies`]), with the utility model that decides what
//! to copy and the DRAM manager's lists that decide what to drop.
//!
//! Both papers come from the same group; Rainbow §III-A/§III-C writes down what HSCC
//! does: a page is copied when the cycles it would save in the next interval exceed
//! the migration's cost (Eq. 1), or, with the fast tier full, the saving over the
//! victim's exceeds the cost of both moves (Eq. 2); victims come from the free list,
//! then the clean list, then the dirty list; the benefit threshold rises while pages
//! are written back (bidirectional traffic).

use crate::machine::copies::Copies;
use crate::machine::{MachineInfo, Owner, PageRef, TierId};
use crate::mechanism::Mechanisms;

/// Rainbow's Table III in cycles, for pages of one size.
#[derive(Clone, Copy, Debug)]
pub struct Utility {
    /// t_nr − t_dr: cycles saved by a read served by the fast tier.
    pub read_gain: f64,
    /// t_nw − t_dw: cycles saved by a write.
    pub write_gain: f64,
    /// T_mig: cycles to copy a page slow → fast (flush, transfer, first-line latency).
    pub t_mig: f64,
    /// T_writeback: cycles to write a dirty page back (flush, transfer, shootdown).
    pub t_writeback: f64,
    /// Cycles to drop a clean copy (restore 8 bytes, shootdown); Eq. 2 charges it in
    /// place of T_writeback when the victim is clean.
    pub t_drop_clean: f64,
    /// Weight of a write in the one access counter a page has: the ratio of the write
    /// to the read gain, so `read_gain × counter` is Eq. 1's saving.
    pub write_weight: u32,
}

impl Utility {
    /// The model for pages of `bytes` on `info`'s fast tier 0 and slow tier 1, with the
    /// tiers' row-miss latencies (`TierInfo::read_ns`, `write_ns`) as Table III's t_dr,
    /// t_dw, t_nr and t_nw: a page worth moving is reached mostly by LLC misses that
    /// open a row. `write_weight` 0 derives the weight from the same latencies, so
    /// that the one counter times `read_gain` stays Eq. 1's saving.
    pub fn new(info: &MachineInfo, bytes: u64, write_weight: u32) -> Utility {
        let cyc = |ns: f64| ns * info.freq_ghz;
        let (fast, slow) = (info.tier(TierId::FAST), info.tier(TierId::SLOW));
        let read_gain = cyc(slow.read_ns - fast.read_ns).max(1.0);
        let write_gain = cyc(slow.write_ns - fast.write_ns).max(0.0);
        // Transfer over the slower of the two tiers' bandwidths (bytes/ns = GB/s).
        let gbps = fast.gbps.min(slow.gbps).max(1e-9);
        let transfer = cyc(bytes as f64 / gbps);
        let flush = (bytes / 64 * info.clflush_cycles_per_line) as f64;
        let shootdown = info.shootdown_cycles as f64;
        let write_weight = if write_weight == 0 { (write_gain / read_gain).round().max(1.0) as u32 } else { write_weight };
        Utility {
            read_gain,
            write_gain,
            t_mig: flush + transfer + cyc(slow.read_ns) + cyc(fast.write_ns),
            t_writeback: flush + transfer + cyc(fast.read_ns) + cyc(slow.write_ns) + shootdown,
            t_drop_clean: cyc(slow.write_ns) + shootdown,
            write_weight,
        }
    }

    /// The constants, for a policy's report.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "read_gain_cycles": self.read_gain,
            "write_gain_cycles": self.write_gain,
            "t_mig_cycles": self.t_mig,
            "t_writeback_cycles": self.t_writeback,
            "write_weight": self.write_weight,
        })
    }

    /// Eq. 1 with reads and writes folded into one weighted count.
    pub fn benefit(&self, count: u64) -> f64 {
        self.read_gain * count as f64 - self.t_mig
    }

    /// Eq. 1 with reads and writes apart, as the paper writes it.
    pub fn benefit_rw(&self, reads: u64, writes: u64) -> f64 {
        self.read_gain * reads as f64 + self.write_gain * writes as f64 - self.t_mig
    }

    /// Eq. 2: copying a page of count `hot` in place of a victim of count `victim`.
    pub fn swap_benefit(&self, hot: u64, victim: u64, victim_dirty: bool) -> f64 {
        let drop = if victim_dirty { self.t_writeback } else { self.t_drop_clean };
        self.read_gain * (hot as f64 - victim as f64) - self.t_mig - drop
    }
}

/// The DRAM manager's lists (Rainbow §III-A, as HSCC): copies are dropped clean first,
/// then dirty; within a list, the least accessed in the last interval first. The free
/// list is the allocator's free frames of the fast tier.
#[derive(Clone, Debug, Default)]
pub struct DramLists {
    /// Copies believed clean, coldest last (popped from the end).
    clean: Vec<u64>,
    /// Copies written since they were made, coldest last.
    dirty: Vec<u64>,
}

/// Accesses to each DRAM slot counted at the memory controller (Rainbow §III-C: the
/// victim's side of Eq. 2; HSCC counts the same way): this interval's counts and the
/// last interval's, which rank victims. A slot is `2^shift` base frames (a copy's
/// size). Counters are reset through the lists of touched slots, not by sweeping.
#[derive(Clone, Debug, Default)]
pub struct SlotCounts {
    base: u64,
    shift: u32,
    pub(super) count: Vec<u16>,
    last: Vec<u16>,
    pub(super) touched: Vec<u32>,
    last_touched: Vec<u32>,
}

impl SlotCounts {
    /// Counters for `frames` base frames from `base_pfn` on, in slots of `slot_frames`
    /// (a power of two).
    pub fn new(base_pfn: u64, frames: u64, slot_frames: u64) -> SlotCounts {
        debug_assert!(slot_frames.is_power_of_two());
        let slots = frames.div_ceil(slot_frames) as usize;
        SlotCounts { base: base_pfn, shift: slot_frames.trailing_zeros(), count: vec![0; slots], last: vec![0; slots], ..Default::default() }
    }

    /// Adds `w` to the slot of frame `pfn` (saturating); frames outside are ignored.
    #[inline]
    pub fn add(&mut self, pfn: u64, w: u16) {
        let i = pfn.wrapping_sub(self.base) >> self.shift;
        if let Some(c) = self.count.get_mut(i as usize) {
            if *c == 0 {
                self.touched.push(i as u32);
            }
            *c = c.saturating_add(w);
        }
    }

    /// Ends the interval: its counts become the last interval's, and counting restarts.
    pub fn roll(&mut self) {
        for &i in &self.last_touched {
            self.last[i as usize] = 0;
        }
        for &i in &self.touched {
            self.last[i as usize] = self.count[i as usize];
            self.count[i as usize] = 0;
        }
        std::mem::swap(&mut self.last_touched, &mut self.touched);
        self.touched.clear();
    }

    /// The last interval's count of the slot of frame `pfn` (0 outside).
    pub fn last(&self, pfn: u64) -> u64 {
        let i = pfn.wrapping_sub(self.base) >> self.shift;
        self.last.get(i as usize).map_or(0, |&c| c as u64)
    }
}

/// Keeps in `held` the fast frames that still hold a copy, each once (a dropped copy's
/// frame may since hold a newer one).
pub fn prune_held(held: &mut Vec<u64>, mech: &Mechanisms<Copies>) {
    held.retain(|&f| mech.copies().original_of(f).is_some());
    held.sort_unstable();
    held.dedup();
}

/// A victim: the copy's first fast frame and whether it is dirty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Victim {
    pub frame: u64,
    pub dirty: bool,
}

impl DramLists {
    /// Rebuilds the lists from the copies held, by `count(frame)` of the last
    /// interval; `is_dirty(frame)` classifies.
    pub fn rebuild(&mut self, held: &[u64], count: impl Fn(u64) -> u64, is_dirty: impl Fn(u64) -> bool) {
        self.clean.clear();
        self.dirty.clear();
        for &f in held {
            if is_dirty(f) {
                self.dirty.push(f);
            } else {
                self.clean.push(f);
            }
        }
        // Hottest first, coldest at the end where `pop` takes it (ties by frame, for
        // determinism).
        for l in [&mut self.clean, &mut self.dirty] {
            l.sort_unstable_by_key(|&f| (std::cmp::Reverse(count(f)), f));
        }
    }

    /// The next victim without removing it: the coldest clean copy, else the coldest
    /// dirty one. A copy on the clean list that has been written since is moved to the
    /// dirty list first (the store converted it, as HSCC's TLB does).
    pub fn peek(&mut self, is_dirty: impl Fn(u64) -> bool) -> Option<Victim> {
        while let Some(&f) = self.clean.last() {
            if !is_dirty(f) {
                return Some(Victim { frame: f, dirty: false });
            }
            self.clean.pop();
            // Keep the dirty list's order roughly: a converted copy was colder than the
            // clean ones above it, so it goes to the cold end.
            self.dirty.push(f);
        }
        self.dirty.last().map(|&f| Victim { frame: f, dirty: true })
    }

    /// Removes the victim `peek` returned.
    pub fn take(&mut self, v: Victim) {
        let l = if v.dirty { &mut self.dirty } else { &mut self.clean };
        debug_assert_eq!(l.last(), Some(&v.frame));
        l.pop();
    }

    pub fn len(&self) -> usize {
        self.clean.len() + self.dirty.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The benefit threshold of Rainbow §III-C: raised while copies are written back in
/// an interval (bidirectional traffic), lowered when none are.
#[derive(Clone, Copy, Debug)]
pub struct Threshold {
    pub cycles: f64,
    /// Factor of each raise (and divisor of each fall).
    pub factor: f64,
    /// The first raise from 0 goes to this (T_mig).
    pub floor: f64,
}

impl Threshold {
    pub fn end_interval(&mut self, writebacks: u64) {
        if writebacks > 0 {
            self.cycles = (self.cycles * self.factor).max(self.floor);
        } else {
            self.cycles /= self.factor;
            if self.cycles < self.floor {
                self.cycles = 0.0;
            }
        }
    }
}

/// Makes room for and copies one page: Eq. 1 when the fast tier has a free frame of
/// `frames`, otherwise Eq. 2 against the lists' next victim, which is dropped first.
/// `hot` is the page's weighted count; `victim_count` gives a copy's count. Returns
/// `Some(copy frame)` if the page was copied, `None` if the utility said no or a
/// mechanism refused (the caller stops trying this interval when `stop` is set).
#[allow(clippy::too_many_arguments)]
pub fn admit(
    mech: &mut Mechanisms<Copies>,
    lists: &mut DramLists,
    util: &Utility,
    threshold: f64,
    page: PageRef,
    hot: u64,
    frames: u64,
    victim_count: impl Fn(u64) -> u64,
) -> Admit {
    // Keep one frame free for page tables and the bitmap's needs.
    let free = mech.free_frames(TierId::FAST) > frames;
    if free {
        if util.benefit(hot) <= threshold {
            return Admit::NotWorth;
        }
    } else {
        let is_dirty = |f: u64| mech.copies().is_dirty(f, frames);
        let Some(v) = lists.peek(is_dirty) else { return Admit::NoVictim };
        if util.swap_benefit(hot, victim_count(v.frame), v.dirty) <= threshold {
            return Admit::NotWorth;
        }
        lists.take(v);
        // The copy's page: its fast frame is owned as the copy (Rainbow) or as the
        // page itself (HSCC, whose PTE points at the copy).
        let (Owner::Copy { tenant, addr } | Owner::Data { tenant, addr }) = mech.owner(v.frame) else { return Admit::NoVictim };
        if mech.cache_out(PageRef::new(tenant, addr)).is_err() {
            return Admit::NoVictim;
        }
    }
    // A new copy joins the lists at the next rebuild, with this interval's count: a
    // page just copied for being hot is no victim for a colder one.
    match mech.cache_in(page) {
        Ok(f) => Admit::Copied(f),
        Err(_) => Admit::NoVictim,
    }
}

/// What [`admit`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    Copied(u64),
    /// The utility model said no (colder candidates will not do better).
    NotWorth,
    /// Nothing could be dropped, or a mechanism refused.
    NoVictim,
}

/// A machine with Rainbow's Table IV latencies at 3.2 GHz, 10.7 GB/s per tier, clflush
/// 8 cycles per line and 300-cycle shootdowns, for the policies' unit tests.
#[cfg(test)]
pub(crate) fn table_iv_info(fast_frames: u64, slow_frames: u64, slow_base: u64) -> MachineInfo {
    use crate::machine::TierInfo;
    let tier = |name: &str, frames, base_pfn, read_ns, write_ns| TierInfo { name: name.into(), frames, base_pfn, read_ns, write_ns, channel_bits: Vec::new(), bank_bits: Vec::new(), gbps: 10.7 };
    MachineInfo {
        cores: 1,
        freq_ghz: 3.2,
        huge_page_bytes: 2 << 20,
        tiers: vec![tier("DRAM", fast_frames, 0, 13.5, 28.5), tier("PCM", slow_frames, slow_base, 19.5, 171.0)],
        clflush_cycles_per_line: 8,
        shootdown_cycles: 300,
        migrate_software_ns: 2000.0,
        cpu_copy_lines_in_flight: 16,
        poison_fault_ns: 1000.0,
        footprint_bytes: 0,
        total_refs: 0,
        tenants: 1,
        vm_tenants: 0,
        thp: false,
        caches: crate::machine::cache::default_hierarchy(),
        fast_hidden: false,
        paper_periods: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table III with the latencies Table IV quotes (the paper's Eq. 1) taken as the
    /// tiers' row-miss latencies.
    #[test]
    fn table_iii_in_cycles_and_eq1() {
        let u = Utility::new(&table_iv_info(1 << 20, 8 << 20, 1 << 20), 4096, 0);
        // t_nr − t_dr = 6 ns = 19.2 cycles; t_nw − t_dw = 142.5 ns = 456 cycles.
        assert!((u.read_gain - 19.2).abs() < 1e-9 && (u.write_gain - 456.0).abs() < 1e-9);
        // Weight = 456 / 19.2 = 23.75 → 24.
        assert_eq!(u.write_weight, 24);
        // T_mig = 64 lines × 8 + 4096 B / 10.7 GB/s (382.8 ns = 1224.97 cycles)
        //       + 19.5 ns (62.4) + 28.5 ns (91.2) = 1890.57 cycles.
        assert!((u.t_mig - 1890.57).abs() < 0.01, "{}", u.t_mig);
        // Eq. 1 by hand: 50 reads, 3 writes → 50·19.2 + 3·456 − 1890.57 = 437.43.
        assert!((u.benefit_rw(50, 3) - 437.43).abs() < 0.01);
        // The folded counter gives nearly the same (3 writes weigh 72 reads): 122·19.2 − T_mig.
        assert!((u.benefit(50 + 3 * 24) - (122.0 * 19.2 - 1890.57)).abs() < 0.01);
        // Break-even: ⌈1890.57 / 19.2⌉ = 99 weighted accesses.
        assert!(u.benefit(98) < 0.0 && u.benefit(99) > 0.0);
    }

    /// The machine the runs use: Table IV's latencies are row hits except the PCM
    /// write (tier.rs), so its row misses are DRAM 34.5 / 49.5 ns and PCM 75 / 171 ns
    /// (read / write), and the derived weight is 3, not the 24 of Table IV's figures.
    #[test]
    fn the_default_machine_derives_a_write_weight_of_3() {
        use crate::machine::tier::{pcm_default, TierConfig};
        let mut info = table_iv_info(1 << 20, 8 << 20, 1 << 20);
        for (t, cfg) in info.tiers.iter_mut().zip([TierConfig::default(), pcm_default()]) {
            (t.read_ns, t.write_ns) = (cfg.read_miss_ns, cfg.write_miss_ns);
        }
        let u = Utility::new(&info, 4096, 0);
        // t_nr − t_dr = 40.5 ns = 129.6 cycles; t_nw − t_dw = 121.5 ns = 388.8 cycles.
        assert!((u.read_gain - 129.6).abs() < 1e-9 && (u.write_gain - 388.8).abs() < 1e-9);
        // Weight = 388.8 / 129.6 = 3.
        assert_eq!(u.write_weight, 3);
        // T_mig = 512 + 1224.97 + 75 ns (240) + 49.5 ns (158.4) = 2135.37 cycles:
        // break-even at ⌈2135.37 / 129.6⌉ = 17 weighted accesses.
        assert!((u.t_mig - 2135.37).abs() < 0.01, "{}", u.t_mig);
        assert!(u.benefit(16) < 0.0 && u.benefit(17) > 0.0);
    }

    #[test]
    fn eq2_charges_the_victims_drop() {
        let u = Utility::new(&table_iv_info(1 << 20, 8 << 20, 1 << 20), 4096, 0);
        // T_writeback = 512 + 1224.97 + 13.5 ns (43.2) + 171 ns (547.2) + 300 = 2627.37.
        assert!((u.t_writeback - 2627.37).abs() < 0.01);
        // Clean drop: 547.2 + 300 = 847.2.
        assert!((u.t_drop_clean - 847.2).abs() < 1e-9);
        // 400 vs 100: 300·19.2 = 5760 − 1890.57 − 847.2 = 3022.23 (clean victim);
        // − 2627.37 instead = 1242.06 (dirty victim).
        assert!((u.swap_benefit(400, 100, false) - 3022.23).abs() < 0.01);
        assert!((u.swap_benefit(400, 100, true) - 1242.06).abs() < 0.01);
        assert!(u.swap_benefit(150, 100, true) < 0.0, "a small gain does not pay two moves");
    }

    #[test]
    fn victims_free_then_clean_then_dirty_coldest_first() {
        let mut l = DramLists::default();
        let counts = |f: u64| [0, 50, 10, 70, 5][f as usize];
        let dirty_now = std::cell::RefCell::new(vec![false, false, false, true, true]);
        let d = |f: u64| dirty_now.borrow()[f as usize];
        l.rebuild(&[1, 2, 3, 4], counts, d);
        // Clean: 1 (50), 2 (10) → 2 is colder, goes first. Dirty: 3 (70), 4 (5).
        assert_eq!(l.peek(d), Some(Victim { frame: 2, dirty: false }));
        l.take(Victim { frame: 2, dirty: false });
        // Page 1 was written since the rebuild: it moves to the dirty list's cold end.
        dirty_now.borrow_mut()[1] = true;
        assert_eq!(l.peek(d), Some(Victim { frame: 1, dirty: true }));
        l.take(Victim { frame: 1, dirty: true });
        assert_eq!(l.peek(d), Some(Victim { frame: 4, dirty: true }));
        l.take(Victim { frame: 4, dirty: true });
        assert_eq!(l.peek(d), Some(Victim { frame: 3, dirty: true }));
        l.take(Victim { frame: 3, dirty: true });
        assert!(l.is_empty() && l.peek(d).is_none());
    }

    #[test]
    fn threshold_rises_with_writebacks_and_falls_without() {
        let mut t = Threshold { cycles: 0.0, factor: 2.0, floor: 1000.0 };
        t.end_interval(3);
        assert_eq!(t.cycles, 1000.0);
        t.end_interval(1);
        assert_eq!(t.cycles, 2000.0);
        t.end_interval(0);
        assert_eq!(t.cycles, 1000.0);
        t.end_interval(0);
        assert_eq!(t.cycles, 0.0);
    }
}
