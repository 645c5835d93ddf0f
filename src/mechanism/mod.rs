//! What a policy may ask of the machine, each request charged its cost.
//!
//! A policy never edits a page table, a TLB or a frame list: it calls a method of
//! [`Mechanisms`], which performs the change on the machine and charges what the
//! modelled system would pay — cache flushes (clflush per line plus write-back of
//! dirty lines), the copy over both tiers' channels (so bandwidth and queueing are
//! shared with demand traffic), page-table updates through the caches, TLB
//! shootdowns on every core, and fixed software costs from [`CostConfig`]. The cost
//! stalls the core the mechanisms were handed for (the core whose clock crossed the
//! epoch boundary, or the core whose reference triggered a hook), unless the policy
//! runs them [in the background](Mechanisms::in_background) as a kernel thread would.
//!
//! Pages are named by tenant and *managed-space* address (the virtual address for a
//! process, the guest-physical address for a VM); any address inside the page works.
//!
//! [`CostConfig`]: crate::machine::costs::CostConfig

pub use crate::machine::alloc::Colour;
use crate::machine::cache::LINE_BYTES;
use crate::machine::page_table::{ACCESSED, DIRTY, HUGE, POISONED};
use crate::machine::copies::{CopyMode, Copies};
use crate::machine::{Machine, MachineInfo, MemKind, Owner, FREED_VERSION};
use std::fmt;

/// Why a mechanism refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MechError {
    /// The page is not mapped.
    NotMapped { tenant: u16, addr: u64 },
    /// The page already lives in the requested tier.
    SameTier,
    /// The destination tier has no free frame of the needed size.
    NoFreeFrame { tier: usize },
    /// Split of a base page, or merge of a region that is already huge.
    WrongSize,
    /// Merge of a region whose base pages are not all mapped.
    Incomplete,
    /// Swap of pages of different sizes or in the same tier.
    Mismatch,
    /// No such tier or tenant.
    OutOfRange,
    /// The move would take the tenant past its fast-tier quota.
    OverQuota { tenant: u16 },
}

impl fmt::Display for MechError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MechError::NotMapped { tenant, addr } => write!(f, "page {addr:#x} of tenant {tenant} is not mapped"),
            MechError::SameTier => write!(f, "the page is already in that tier"),
            MechError::NoFreeFrame { tier } => write!(f, "tier {tier} has no free frame"),
            MechError::WrongSize => write!(f, "the page has the wrong size for this operation"),
            MechError::Incomplete => write!(f, "not every base page of the region is mapped"),
            MechError::Mismatch => write!(f, "the pages differ in size or share a tier"),
            MechError::OutOfRange => write!(f, "no such tier or tenant"),
            MechError::OverQuota { tenant } => write!(f, "tenant {tenant} would exceed its fast-tier quota"),
        }
    }
}

impl std::error::Error for MechError {}

/// A mapped page as a policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageInfo {
    pub tenant: u16,
    /// Managed-space address of the page's first byte.
    pub addr: u64,
    /// Frame of the page's first 4 KiB.
    pub pfn: u64,
    pub tier: usize,
    pub huge: bool,
    pub accessed: bool,
    pub dirty: bool,
    pub poisoned: bool,
}

/// The mechanism layer, handed to a policy for one decision.
pub struct Mechanisms<'a> {
    m: &'a mut Machine,
    core: usize,
    /// Work done by a kernel thread off the application's cores: its CPU time is
    /// counted, not stalled; its copies still occupy the tiers and its shootdowns still
    /// interrupt every application core.
    background: bool,
}

impl<'a> Mechanisms<'a> {
    /// Mechanisms whose costs stall `core`.
    pub fn new(m: &'a mut Machine, core: usize) -> Mechanisms<'a> {
        Mechanisms { m, core, background: false }
    }

    /// Whether the background kernel thread is still busy with earlier work at the
    /// charged core's time: a policy that hands it more work should wait until it is
    /// not, or the thread would do more than one CPU can.
    pub fn background_busy(&self) -> bool {
        self.m.background_until > self.now()
    }

    /// The same mechanisms run by a background kernel thread (as Linux's khugepaged,
    /// kstaled or a migration daemon), timed from `core`'s clock but stalling no core
    /// for its CPU work.
    pub fn in_background(&mut self) -> Mechanisms<'_> {
        Mechanisms { m: self.m, core: self.core, background: true }
    }

    /// The charged core's clock.
    pub fn now(&self) -> u64 {
        self.m.cores[self.core].clock
    }

    pub fn info(&self) -> MachineInfo {
        self.m.info()
    }

    pub fn tenants(&self) -> usize {
        self.m.tenants.len()
    }

    pub fn free_frames(&self, tier: usize) -> u64 {
        self.m.alloc.free_frames(tier)
    }

    pub fn capacity_frames(&self, tier: usize) -> u64 {
        self.m.alloc.frames(tier)
    }

    /// Data frames `tenant` holds in `tier`.
    pub fn tenant_frames(&self, tenant: u16, tier: usize) -> u64 {
        self.m.tenants[tenant as usize].frames_in[tier]
    }

    /// The tenant's fast-tier quota in frames (`None` = unlimited).
    pub fn fast_quota(&self, tenant: u16) -> Option<u64> {
        self.m.tenants[tenant as usize].fast_quota
    }

    /// Sets the tenant's fast-tier quota (HMM-V's pool mode moves DRAM between VMs at
    /// run time). Lowering it below what the tenant holds moves nothing: the policy
    /// migrates pages out; until then only moves into the fast tier are refused.
    pub fn set_fast_quota(&mut self, tenant: u16, frames: Option<u64>) {
        self.m.tenants[tenant as usize].fast_quota = frames;
    }

    /// Records that `frames` of `tenant` moved from tier `from` to tier `to`.
    fn count_move(&mut self, tenant: u16, from: usize, to: usize, frames: u64) {
        let t = &mut self.m.tenants[tenant as usize];
        t.frames_in[from] -= frames;
        t.frames_in[to] += frames;
    }

    /// The owner of a physical frame (what a memory-controller counter's address maps
    /// back to through the OS reverse map).
    pub fn owner(&self, pfn: u64) -> Owner {
        self.m.owner(pfn)
    }

    /// The page holding `addr`, if mapped. Reading it costs nothing: use it for what
    /// the modelled system knows without scanning (its own lists and counters).
    pub fn page(&self, tenant: u16, addr: u64) -> Option<PageInfo> {
        let t = self.m.tenants.get(tenant as usize)?;
        let leaf = t.table.walk(addr, None)?;
        Some(self.info_of(tenant, addr, t.table.entry(leaf.slot), leaf.huge))
    }

    fn info_of(&self, tenant: u16, addr: u64, e: u64, huge: bool) -> PageInfo {
        let mask = if huge { (1u64 << self.m.huge_shift()) - 1 } else { 0xfff };
        let pfn = e >> 12;
        PageInfo {
            tenant,
            addr: addr & !mask,
            pfn,
            tier: self.m.tier_of(pfn),
            huge,
            accessed: e & ACCESSED != 0,
            dirty: e & DIRTY != 0,
            poisoned: e & POISONED != 0,
        }
    }

    /// Calls `f` for every mapped page of `tenant` starting in [`start`, `end`), at no
    /// cost (see [`Mechanisms::page`]).
    pub fn for_each_page(&self, tenant: u16, start: u64, end: u64, mut f: impl FnMut(PageInfo)) {
        let t = &self.m.tenants[tenant as usize];
        t.table.for_each_leaf(start, end, &mut |addr, slot| {
            let e = t.table.entry(slot);
            f(self.info_of(tenant, addr, e, e & HUGE != 0));
        });
    }

    fn bytes(&self, huge: bool) -> u64 {
        if huge {
            1 << self.m.huge_shift()
        } else {
            4096
        }
    }

    /// Flushes a physical range from every cache: clflush per line, dirty lines
    /// written back to their tier. Returns the cycles charged.
    fn flush(&mut self, paddr: u64, bytes: u64) -> u64 {
        let now = self.now();
        let mut dirty = Vec::new();
        let (lines, _) = self.m.caches.flush_range(paddr, bytes, &mut |line| dirty.push(line));
        let mut done = now;
        for line in dirty {
            let pa = line << 6;
            let t = self.m.tier_of(pa >> 12);
            let local = pa - (self.m.alloc.base(t) << 12);
            done = done.max(now + self.m.tiers[t].access(local, true, now));
        }
        self.m.mech.lines_flushed += lines;
        lines * self.m.cfg.costs.clflush_cycles_per_line + (done - now)
    }

    /// Copies `bytes` from frame `src` to frame `dst` over both tiers' channels;
    /// returns the cycles until the copy completes.
    fn copy(&mut self, src: u64, dst: u64, bytes: u64) -> u64 {
        let now = self.now();
        let (ts, td) = (self.m.tier_of(src), self.m.tier_of(dst));
        let ls = (src - self.m.alloc.base(ts)) << 12;
        let ld = (dst - self.m.alloc.base(td)) << 12;
        let r = self.m.tiers[ts].bulk(ls, bytes, false, now);
        let w = self.m.tiers[td].bulk(ld, bytes, true, now);
        if let Some(s) = &mut self.m.shadow {
            for i in 0..bytes >> 12 {
                s.frame[(dst + i) as usize] = s.frame[(src + i) as usize];
            }
        }
        r.max(w) - now
    }

    /// Invalidates the page's translations on every core; the initiator pays
    /// `shootdown_cycles`, every other core `shootdown_remote_cycles`. For a VM, the
    /// host flushes all of the VM's translations (as INVEPT does for one EPT context).
    fn shootdown(&mut self, tenant: u16, addr: u64, huge: bool) -> u64 {
        let is_vm = self.m.tenants[tenant as usize].guest.is_some();
        for c in &mut self.m.cores {
            if is_vm {
                c.tlb.flush_tenant(tenant);
            } else {
                c.tlb.invalidate(tenant, addr, huge);
            }
        }
        self.interrupt_cores();
        self.m.mech.shootdowns += 1;
        self.m.cfg.costs.shootdown_cycles
    }

    /// Charges the shootdown IPI to every application core but the initiator (all of
    /// them when the initiator is a background thread).
    fn interrupt_cores(&mut self) {
        let remote = self.m.cfg.costs.shootdown_remote_cycles;
        for i in 0..self.m.cores.len() {
            if i != self.core || self.background {
                self.m.stall(i, remote);
            }
        }
    }

    /// Rewrites a page-table entry: one write through the caches to the entry.
    fn pte_write(&mut self, tenant: u16, slot: usize) -> u64 {
        let pa = self.m.tenants[tenant as usize].table.entry_paddr(slot);
        self.m.cached(self.core, pa, true, MemKind::Walk, &mut ()).1
    }

    fn charge(&mut self, cycles: u64) {
        if self.background {
            // One kernel thread: its work queues on its own timeline.
            let start = self.m.background_until.max(self.now());
            self.m.background_until = start + cycles;
            self.m.mech.background_cycles += cycles;
        } else {
            self.m.stall(self.core, cycles);
        }
    }

    fn leaf(&self, tenant: u16, addr: u64) -> Result<(usize, u64, bool), MechError> {
        let t = self.m.tenants.get(tenant as usize).ok_or(MechError::OutOfRange)?;
        let leaf = t.table.walk(addr, None).ok_or(MechError::NotMapped { tenant, addr })?;
        Ok((leaf.slot, t.table.entry(leaf.slot), leaf.huge))
    }

    fn move_owner(&mut self, tenant: u16, page: u64, from: u64, to: u64, frames: u64) {
        for i in 0..frames {
            self.m.clear_owner(from + i);
            self.m.set_owner(to + i, tenant, page + (i << 12));
        }
    }

    /// The colour of the frames of tier `tier` whose channel, bank (within the channel)
    /// and last-level-cache set colour have the given values (`None` = any). Only
    /// address bits at or above the 4 KiB page offset can colour a frame: a field
    /// selected by lower bits (cache-line channel interleaving, say) is refused, naming
    /// the bit. The LLC colour is the LLC set-index bits above the page offset.
    pub fn colour(&self, tier: usize, channel: Option<u64>, bank: Option<u64>, llc: Option<u64>) -> Result<Colour, String> {
        let t = self.m.tiers.get(tier).ok_or_else(|| format!("no tier {tier}"))?;
        let llc_bits: Vec<u8> = {
            let c = self.m.cfg.caches.last().expect("at least one cache level");
            let sets = c.size.bytes() / LINE_BYTES / c.ways as u64;
            (12..6 + sets.trailing_zeros() as u8).collect()
        };
        let mut colour = Colour::ANY;
        for (what, bits, value) in [("channel", t.channel_bits(), channel), ("bank", t.bank_bits(), bank), ("LLC colour", llc_bits, llc)] {
            let Some(value) = value else { continue };
            if value >> bits.len() != 0 {
                return Err(format!("{what} {value} does not exist ({} bits select it)", bits.len()));
            }
            for (i, &b) in bits.iter().enumerate() {
                if b < 12 {
                    return Err(format!("the {what} is selected by address bit {b}, inside a 4 KiB page: frames cannot be coloured by it"));
                }
                colour.mask |= 1 << (b - 12);
                colour.value |= ((value >> i) & 1) << (b - 12);
            }
        }
        Ok(colour)
    }

    /// Moves the page holding `addr` to tier `to` (one-way): allocate a frame there,
    /// flush the page from the caches, copy it, update the PTE, shoot down the TLBs,
    /// free the old frame. The initiating core stalls for all of it.
    pub fn migrate(&mut self, tenant: u16, addr: u64, to: usize) -> Result<PageInfo, MechError> {
        self.migrate_coloured(tenant, addr, to, Colour::ANY)
    }

    /// [`Mechanisms::migrate`] into a frame of `colour` (see [`Mechanisms::colour`]);
    /// base pages only, as a huge frame spans every colour.
    pub fn migrate_coloured(&mut self, tenant: u16, addr: u64, to: usize, colour: Colour) -> Result<PageInfo, MechError> {
        if to >= self.m.tiers.len() {
            return Err(MechError::OutOfRange);
        }
        let (slot, e, huge) = self.leaf(tenant, addr)?;
        let src = e >> 12;
        let from = self.m.tier_of(src);
        if from == to {
            return Err(MechError::SameTier);
        }
        let bytes = self.bytes(huge);
        if !self.m.tenants[tenant as usize].fits(to, bytes >> 12) {
            return Err(MechError::OverQuota { tenant });
        }
        if huge && colour != Colour::ANY {
            return Err(MechError::WrongSize);
        }
        let dst = if huge { self.m.alloc.alloc_huge(to) } else { self.m.alloc.alloc(to, colour) }
            .ok_or(MechError::NoFreeFrame { tier: to })?;
        let page = addr & !(bytes - 1);
        let mut cycles = self.flush(src << 12, bytes);
        #[cfg(test)]
        let skip = self.m.break_migration_copy;
        #[cfg(not(test))]
        let skip = false;
        if !skip {
            cycles += self.copy(src, dst, bytes);
        }
        *self.m.tenants[tenant as usize].table.entry_mut(slot) = dst << 12 | (e & 0xfff);
        cycles += self.pte_write(tenant, slot);
        cycles += self.shootdown(tenant, page, huge);
        cycles += self.m.cfg.cycles(self.m.cfg.costs.migrate_software_ns);
        let frames = bytes >> 12;
        self.move_owner(tenant, page, src, dst, frames);
        self.count_move(tenant, from, to, frames);
        self.release(src, huge);
        self.m.mech.migrations += 1;
        self.m.mech.migrated_bytes += bytes;
        self.m.mech.migrations_between[from][to] += 1;
        self.charge(cycles);
        Ok(self.info_of(tenant, page, dst << 12 | (e & 0xfff), huge))
    }

    /// Frees a page's frames, marking them stale for `--verify`.
    fn release(&mut self, pfn: u64, huge: bool) {
        let n = if huge { self.m.huge_frames() } else { 1 };
        if let Some(s) = &mut self.m.shadow {
            for i in 0..n {
                s.frame[(pfn + i) as usize] = FREED_VERSION;
            }
        }
        if huge {
            self.m.alloc.free_huge(pfn);
        } else {
            self.m.alloc.free(pfn);
        }
    }

    /// Exchanges the frames of two pages of the same size in different tiers (e.g. a
    /// hot slow page and a cold fast victim): both are flushed, copied both ways, both
    /// PTEs rewritten and both translations shot down.
    pub fn swap(&mut self, a: (u16, u64), b: (u16, u64)) -> Result<(), MechError> {
        let (sa, ea, ha) = self.leaf(a.0, a.1)?;
        let (sb, eb, hb) = self.leaf(b.0, b.1)?;
        let (fa, fb) = (ea >> 12, eb >> 12);
        let (ta, tb) = (self.m.tier_of(fa), self.m.tier_of(fb));
        if ha != hb || ta == tb {
            return Err(MechError::Mismatch);
        }
        let bytes = self.bytes(ha);
        let frames = bytes >> 12;
        if a.0 != b.0 {
            // Between tenants the one entering the fast tier must stay within its quota.
            for (who, into) in [(a.0, tb), (b.0, ta)] {
                if !self.m.tenants[who as usize].fits(into, frames) {
                    return Err(MechError::OverQuota { tenant: who });
                }
            }
        }
        let (pa, pb) = (a.1 & !(bytes - 1), b.1 & !(bytes - 1));
        let mut cycles = self.flush(fa << 12, bytes) + self.flush(fb << 12, bytes);
        // Through a buffer: each page is read once and written once; both copies share
        // the channels, so the second one queues behind the first.
        let saved: Option<Vec<u32>> =
            self.m.shadow.as_ref().map(|s| (0..bytes >> 12).map(|i| s.frame[(fa + i) as usize]).collect());
        let c1 = self.copy(fb, fa, bytes);
        let c2 = self.copy(fa, fb, bytes);
        if let (Some(s), Some(saved)) = (&mut self.m.shadow, saved) {
            for (i, v) in saved.into_iter().enumerate() {
                s.frame[fb as usize + i] = v;
            }
        }
        cycles += c1.max(c2);
        *self.m.tenants[a.0 as usize].table.entry_mut(sa) = fb << 12 | (ea & 0xfff);
        *self.m.tenants[b.0 as usize].table.entry_mut(sb) = fa << 12 | (eb & 0xfff);
        cycles += self.pte_write(a.0, sa) + self.pte_write(b.0, sb);
        cycles += self.shootdown(a.0, pa, ha) + self.shootdown(b.0, pb, hb);
        cycles += 2 * self.m.cfg.cycles(self.m.cfg.costs.migrate_software_ns);
        for i in 0..frames {
            self.m.set_owner(fb + i, a.0, pa + (i << 12));
            self.m.set_owner(fa + i, b.0, pb + (i << 12));
        }
        self.count_move(a.0, ta, tb, frames);
        self.count_move(b.0, tb, ta, frames);
        self.m.mech.swaps += 1;
        self.m.mech.migrations += 2;
        self.m.mech.migrated_bytes += 2 * bytes;
        self.m.mech.migrations_between[ta][tb] += 1;
        self.m.mech.migrations_between[tb][ta] += 1;
        self.charge(cycles);
        Ok(())
    }

    /// Splits the huge page holding `addr` into base pages mapping the same frames:
    /// a new page-table node is written (its lines go through the caches) and the huge
    /// translation is shot down.
    pub fn split(&mut self, tenant: u16, addr: u64) -> Result<(), MechError> {
        let (_, _, huge) = self.leaf(tenant, addr)?;
        if !huge {
            return Err(MechError::WrongSize);
        }
        let page = addr & !((1u64 << self.m.huge_shift()) - 1);
        let first = self.m.split_mapping(tenant, page).ok_or(MechError::NoFreeFrame { tier: 0 })?;
        let mut cycles = 0;
        let entries = self.m.huge_frames();
        for i in (0..entries).step_by((LINE_BYTES / 8) as usize) {
            cycles += self.pte_write(tenant, first + i as usize);
        }
        cycles += self.shootdown(tenant, page, true);
        cycles += self.m.cfg.cycles(self.m.cfg.costs.split_ns);
        self.m.mech.splits += 1;
        self.charge(cycles);
        Ok(())
    }

    /// Collapses the base pages of the huge-page-sized region holding `addr` into one
    /// huge page in tier `to`. If the pages already fill an aligned huge frame there,
    /// only the page table changes; otherwise a huge frame is allocated and every base
    /// page copied into it. Accessed/dirty bits are OR-ed; poison is cleared.
    pub fn merge(&mut self, tenant: u16, addr: u64, to: usize) -> Result<(), MechError> {
        if to >= self.m.tiers.len() || tenant as usize >= self.m.tenants.len() {
            return Err(MechError::OutOfRange);
        }
        let hb = 1u64 << self.m.huge_shift();
        let region = addr & !(hb - 1);
        let n = self.m.huge_frames();
        let (_, first) = self.m.tenants[tenant as usize].table.small_node(region).ok_or(MechError::WrongSize)?;
        let entries: Vec<u64> = (0..n as usize).map(|i| self.m.tenants[tenant as usize].table.entry(first + i)).collect();
        if entries.iter().any(|&e| !Machine::present(e)) {
            return Err(MechError::Incomplete);
        }
        let base = entries[0] >> 12;
        let already_there = entries.iter().filter(|&&e| self.m.tier_of(e >> 12) == to).count() as u64;
        let t = &self.m.tenants[tenant as usize];
        if to == 0 && t.fast_quota.is_some_and(|q| t.frames_in[0] - already_there + n > q) {
            return Err(MechError::OverQuota { tenant });
        }
        let in_place = base.is_multiple_of(n)
            && self.m.tier_of(base) == to
            && entries.iter().enumerate().all(|(i, &e)| e >> 12 == base + i as u64);
        let mut cycles = self.m.cfg.cycles(self.m.cfg.costs.merge_ns);
        let target = if in_place {
            base
        } else {
            let dst = self.m.alloc.alloc_huge(to).ok_or(MechError::NoFreeFrame { tier: to })?;
            // The copies are issued together and overlap in the tiers' queues: the core
            // waits for the last one, not for their sum.
            let mut copy_cycles = 0;
            for (i, &e) in entries.iter().enumerate() {
                let src = e >> 12;
                let from = self.m.tier_of(src);
                self.count_move(tenant, from, to, 1);
                cycles += self.flush(src << 12, 4096);
                copy_cycles = copy_cycles.max(self.copy(src, dst + i as u64, 4096));
                self.m.clear_owner(src);
                self.release(src, false);
                self.m.set_owner(dst + i as u64, tenant, region + ((i as u64) << 12));
            }
            cycles += copy_cycles;
            self.m.mech.merge_copies += 1;
            self.m.mech.merge_copied_bytes += hb;
            dst
        };
        let flags = entries.iter().fold(0, |f, &e| f | (e & (ACCESSED | DIRTY)));
        for i in 0..n {
            for c in &mut self.m.cores {
                c.tlb.invalidate(tenant, region + (i << 12), false);
            }
        }
        self.m.merge_mapping(tenant, region, target, flags);
        let slot = self.m.tenants[tenant as usize].table.walk(region, None).expect("just merged").slot;
        cycles += self.pte_write(tenant, slot);
        cycles += self.shootdown(tenant, region, true);
        self.m.mech.merges += 1;
        self.charge(cycles);
        Ok(())
    }

    /// Scans the leaf PTEs of `tenant` in [`start`, `end`): calls `f` with each page
    /// (Accessed/Dirty as found), then, when `clear`, clears both bits and invalidates
    /// that page's cached translations so the next access sets them again. Each entry
    /// costs its reference through the caches plus `scan_pte_cycles`; clearing costs
    /// one shootdown round per scan. Returns the number of entries scanned.
    pub fn scan(&mut self, tenant: u16, start: u64, end: u64, clear: bool, mut f: impl FnMut(PageInfo)) -> u64 {
        let mut leaves = Vec::new();
        {
            let t = &self.m.tenants[tenant as usize];
            t.table.for_each_leaf(start, end, &mut |addr, slot| leaves.push((addr, slot)));
        }
        let mut cycles = 0;
        let mut cleared = 0u64;
        for &(addr, slot) in &leaves {
            let pa = self.m.tenants[tenant as usize].table.entry_paddr(slot);
            let e = self.m.tenants[tenant as usize].table.entry(slot);
            cycles += self.m.cached(self.core, pa, clear, MemKind::Walk, &mut ()).1 + self.m.cfg.costs.scan_pte_cycles;
            let huge = e & HUGE != 0;
            f(self.info_of(tenant, addr, e, huge));
            if clear && e & (ACCESSED | DIRTY) != 0 {
                *self.m.tenants[tenant as usize].table.entry_mut(slot) &= !(ACCESSED | DIRTY);
                for c in &mut self.m.cores {
                    c.tlb.invalidate(tenant, addr, huge);
                }
                cleared += 1;
            }
        }
        if self.m.tenants[tenant as usize].guest.is_some() && cleared > 0 {
            for c in &mut self.m.cores {
                c.tlb.flush_tenant(tenant);
            }
        }
        if cleared > 0 {
            cycles += self.shootdown_round();
        }
        self.m.mech.ptes_scanned += leaves.len() as u64;
        self.charge(cycles);
        leaves.len() as u64
    }

    /// One batched TLB-flush IPI round (after clearing many entries at once).
    fn shootdown_round(&mut self) -> u64 {
        self.interrupt_cores();
        self.m.mech.shootdowns += 1;
        self.m.cfg.costs.shootdown_cycles
    }

    /// Poisons the PTE of the page holding `addr` and shoots down its translation, so
    /// the next TLB miss to it takes a fault of `poison_fault_ns` (Thermostat §3.3).
    pub fn poison(&mut self, tenant: u16, addr: u64) -> Result<(), MechError> {
        self.set_poison(tenant, addr, true)
    }

    /// Clears the poison bit of the page holding `addr`.
    pub fn unpoison(&mut self, tenant: u16, addr: u64) -> Result<(), MechError> {
        self.set_poison(tenant, addr, false)
    }

    fn set_poison(&mut self, tenant: u16, addr: u64, on: bool) -> Result<(), MechError> {
        let (slot, _, huge) = self.leaf(tenant, addr)?;
        let e = self.m.tenants[tenant as usize].table.entry_mut(slot);
        if on {
            *e |= POISONED;
        } else {
            *e &= !POISONED;
        }
        let mut cycles = self.pte_write(tenant, slot);
        if on {
            let bytes = self.bytes(huge);
            cycles += self.shootdown(tenant, addr & !(bytes - 1), huge);
        }
        self.m.mech.poisons += on as u64;
        self.charge(cycles);
        Ok(())
    }
}

impl Mechanisms<'_> {
    /// The copy table, if the machine keeps copies (free to read: the DRAM manager's
    /// own records).
    pub fn copies(&self) -> Option<&Copies> {
        self.m.copies.as_ref()
    }

    /// One write of machine metadata (a pointer or a bitmap line) by the memory
    /// controller, straight to its tier.
    fn metadata_write(&mut self, paddr: u64) -> u64 {
        let now = self.now();
        let t = self.m.tier_of(paddr >> 12);
        let local = paddr - (self.m.alloc.base(t) << 12);
        let lat = self.m.tiers[t].access(local, true, now);
        let st = &mut self.m.copies.as_mut().expect("copies enabled").stats;
        st.metadata_writes += 1;
        st.metadata_cycles += lat;
        lat
    }

    /// Sets or clears slow frame `src`'s migration bit: in the bitmap cache if it holds
    /// the superpage's bitmap (written back when evicted), else in memory.
    fn bitmap_update(&mut self, src: u64) -> u64 {
        let cp = self.m.copies.as_mut().expect("copies enabled");
        let psn = cp.superpage_of(src);
        if cp.bitmap_cache.as_mut().is_some_and(|c| c.modify(psn)) {
            return 0;
        }
        let line = cp.bitmap_line_of(psn);
        self.metadata_write(line)
    }

    /// Copies the slow page holding `addr` into the fast tier, keeping the slow frame
    /// as the page's original. In Redirect mode (Rainbow) the page is the 4 KiB base
    /// page of a slow superpage: its lines are flushed (§III-F), it is copied, its
    /// first 8 bytes are overwritten with the copy's frame number and its bit set in the
    /// migration bitmap (both writes to memory); no TLB is shot down, since the
    /// superpage mapping does not change. In Remap mode (HSCC) the page (base or huge)
    /// is flushed and copied, its PTE rewritten to the copy and its translation shot
    /// down. Returns the copy's first frame.
    pub fn cache_in(&mut self, tenant: u16, addr: u64) -> Result<u64, MechError> {
        let mode = self.m.copies.as_ref().ok_or(MechError::OutOfRange)?.mode;
        let (slot, e, huge) = self.leaf(tenant, addr)?;
        let (src, bytes) = match mode {
            CopyMode::Redirect if huge => ((e >> 12) + ((addr >> 12) & (self.m.huge_frames() - 1)), 4096),
            CopyMode::Redirect => return Err(MechError::WrongSize),
            CopyMode::Remap => (e >> 12, self.bytes(huge)),
        };
        let frames = bytes >> 12;
        let cp = self.m.copies.as_ref().expect("copies enabled");
        if !cp.is_slow(src) {
            return Err(MechError::SameTier);
        }
        if cp.copy_of(src).is_some() {
            return Err(MechError::Mismatch);
        }
        if mode == CopyMode::Remap && !self.m.tenants[tenant as usize].fits(0, frames) {
            return Err(MechError::OverQuota { tenant });
        }
        let dst = if frames > 1 { self.m.alloc.alloc_huge(0) } else { self.m.alloc.alloc(0, Colour::ANY) }
            .ok_or(MechError::NoFreeFrame { tier: 0 })?;
        let page = addr & !(bytes - 1);
        let flush = self.flush(src << 12, bytes);
        let copy = self.copy(src, dst, bytes);
        let mut cycles = flush + copy;
        let (mut meta, mut shoot) = (0, 0);
        let cp = self.m.copies.as_mut().expect("copies enabled");
        for i in 0..frames {
            cp.link(src + i, dst + i);
        }
        match mode {
            CopyMode::Redirect => {
                meta += self.metadata_write(src << 12);
                meta += self.bitmap_update(src);
                for i in 0..frames {
                    self.m.set_copy_owner(dst + i, tenant, page + (i << 12));
                }
            }
            CopyMode::Remap => {
                *self.m.tenants[tenant as usize].table.entry_mut(slot) = dst << 12 | (e & 0xfff);
                cycles += self.pte_write(tenant, slot);
                shoot = self.shootdown(tenant, page, huge);
                for i in 0..frames {
                    self.m.set_owner(dst + i, tenant, page + (i << 12));
                    self.m.set_copy_owner(src + i, tenant, page + (i << 12));
                }
                self.count_move(tenant, 1, 0, frames);
            }
        }
        cycles += meta + shoot;
        let st = &mut self.m.copies.as_mut().expect("copies enabled").stats;
        st.copies_made += 1;
        st.bytes_in += bytes;
        st.copy_cycles += copy;
        st.clflush_cycles += flush;
        st.shootdown_cycles += shoot;
        self.m.mech.migrations += 1;
        self.m.mech.migrated_bytes += bytes;
        self.m.mech.migrations_between[1][0] += 1;
        self.charge(cycles);
        Ok(dst)
    }

    /// Drops the copy whose first frame is `fast_pfn`: its lines are flushed; if it was
    /// written since it was made it is copied back over the original, otherwise only
    /// the original's first 8 bytes are restored (Redirect mode; Remap mode writes
    /// nothing). The bitmap bit is cleared (Redirect) or the PTE pointed back at the
    /// original (Remap), and the copy's translations are shot down on every core
    /// (Rainbow §III-F). Returns whether the copy was dirty.
    pub fn cache_out(&mut self, fast_pfn: u64) -> Result<bool, MechError> {
        let cp = self.m.copies.as_ref().ok_or(MechError::OutOfRange)?;
        let mode = cp.mode;
        let src = cp.original_of(fast_pfn).ok_or(MechError::NotMapped { tenant: 0, addr: fast_pfn << 12 })?;
        let (tenant, page) = match (mode, self.m.owner(fast_pfn)) {
            (CopyMode::Redirect, Owner::Copy { tenant, addr }) | (CopyMode::Remap, Owner::Data { tenant, addr }) => (tenant, addr),
            _ => return Err(MechError::Mismatch),
        };
        let (slot, e, huge) = match mode {
            CopyMode::Redirect => (0, 0, false),
            CopyMode::Remap => self.leaf(tenant, page)?,
        };
        let bytes = self.bytes(huge);
        let frames = bytes >> 12;
        let flush = self.flush(fast_pfn << 12, bytes);
        let dirty = self.m.copies.as_ref().expect("copies enabled").is_dirty(fast_pfn, frames);
        #[cfg(test)]
        let skip = self.m.break_migration_copy;
        #[cfg(not(test))]
        let skip = false;
        let copy = if dirty && !skip { self.copy(fast_pfn, src, bytes) } else { 0 };
        let mut cycles = flush + copy;
        let mut meta = 0;
        let shoot;
        match mode {
            CopyMode::Redirect => {
                // The pointer line may sit in the CPU caches (the MMU reads it through
                // them): flush it before the original's first bytes are back.
                let pointer_flush = self.flush(src << 12, 64);
                cycles += pointer_flush;
                self.m.copies.as_mut().expect("copies enabled").stats.clflush_cycles += pointer_flush;
                if !dirty {
                    meta += self.metadata_write(src << 12);
                }
                meta += self.bitmap_update(src);
                shoot = self.shootdown(tenant, page, false);
            }
            CopyMode::Remap => {
                *self.m.tenants[tenant as usize].table.entry_mut(slot) = src << 12 | (e & 0xfff);
                cycles += self.pte_write(tenant, slot);
                shoot = self.shootdown(tenant, page, huge);
                for i in 0..frames {
                    self.m.set_owner(src + i, tenant, page + (i << 12));
                }
                self.count_move(tenant, 0, 1, frames);
            }
        }
        cycles += meta + shoot;
        let cp = self.m.copies.as_mut().expect("copies enabled");
        for i in 0..frames {
            cp.unlink(fast_pfn + i);
        }
        let st = &mut cp.stats;
        if dirty {
            st.dirty_drops += 1;
            st.bytes_out += bytes;
        } else {
            st.clean_drops += 1;
        }
        st.copy_cycles += copy;
        st.clflush_cycles += flush;
        st.shootdown_cycles += shoot;
        for i in 0..frames {
            self.m.clear_owner(fast_pfn + i);
        }
        self.release(fast_pfn, huge);
        if dirty {
            self.m.mech.migrations += 1;
            self.m.mech.migrated_bytes += bytes;
            self.m.mech.migrations_between[0][1] += 1;
        }
        self.charge(cycles);
        Ok(dirty)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod copy_tests;
