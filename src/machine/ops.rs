//! The machine's primitives for mechanisms, each timed on the clock of the executor
//! that runs it ([`Exec`]): a mechanism's memory accesses are issued one after
//! another from the executor's cursor, which every access, copy, flush and fixed cost
//! advances. Nothing here decides or refuses on a policy's behalf beyond what the
//! machine cannot do; the mechanism layer wraps these with executors, limits and
//! queues.
//!
//! Every page move — migrate, swap, merge, and the copies of [`super::copies`] — is a
//! [`Plan`] committed by [`Machine::commit`], in one order: flush the sources, copy
//! the data, rewrite the page-table entries, shoot down the translations, pay the
//! fixed software cost, then update owners, per-tenant counts and the allocator.

use super::page_table::{ACCESSED, COPYING, DIRTY, POISONED};
use super::redirect::Redirect;
use super::space::{Mapped, PageInfo};
use super::{Colour, Machine, MechError, MemKind, PageRef, TierId};
use serde::Serialize;
use std::ops::ControlFlow;

pub use super::alloc::Colour as FrameColour;

/// An executor as the machine sees it while it runs a mechanism.
#[derive(Clone, Copy, Debug)]
pub struct Exec {
    /// The core whose private caches its accesses go through.
    pub core: usize,
    /// Its clock: the cycle at which its next action starts.
    pub at: u64,
    /// Line reads a copy it runs keeps in flight.
    pub in_flight: u32,
    /// The application core it is, when it runs in the foreground: that core takes
    /// no interrupt for its own shootdowns.
    pub foreground: Option<usize>,
}

/// Pages and bytes of one kind of move.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct MoveCount {
    /// Pages moved, at their size when moved.
    pub pages: u64,
    /// Bytes copied.
    pub bytes: u64,
}

impl MoveCount {
    fn add(&mut self, bytes: u64) {
        self.pages += 1;
        self.bytes += bytes;
    }
}

/// Counts of everything the mechanisms did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MechanismStats {
    /// Pages moved between tiers by every kind of move, `[from][to]` (a swap moves
    /// two pages; a merge moves each base page that changes tier).
    pub pages_between: Vec<Vec<u64>>,
    /// Bytes those moves copied from one tier to another.
    pub bytes_between: u64,
    /// One-way migrations.
    pub migrate: MoveCount,
    /// Pages exchanged by swaps (two per swap).
    pub swap: MoveCount,
    /// Base pages copied into a new huge frame by merges.
    pub merge: MoveCount,
    /// Fast-tier copies made of slow pages (Rainbow, HSCC).
    pub copy_in: MoveCount,
    /// Dirty copies written back over their originals when dropped.
    pub copy_back: MoveCount,
    /// Units a hardware migration controller moved on the fly (each direction of a
    /// swap, completions at reconciliation and moves back counted apart).
    pub onfly: MoveCount,
    pub swaps: u64,
    pub splits: u64,
    /// Merges, and how many of them copied their pages into a new huge frame.
    pub merges: u64,
    pub merges_copied: u64,
    pub shootdowns: u64,
    pub lines_flushed: u64,
    pub ptes_scanned: u64,
    pub poisons: u64,
    /// Cycles application cores spent in mechanisms: their own foreground handlers
    /// and the shootdown interrupts of every executor.
    pub cycles: u64,
    /// Cycles background executors (kernel threads, copy engines) were busy.
    pub background_cycles: u64,
}

impl MechanismStats {
    pub(crate) fn new(tiers: usize) -> MechanismStats {
        MechanismStats { pages_between: vec![vec![0; tiers]; tiers], ..Default::default() }
    }

    /// Pages moved from one tier to another, every kind of move.
    pub fn pages_moved(&self) -> u64 {
        self.pages_between.iter().flatten().sum()
    }

    /// Bytes copied by every kind of move.
    pub fn bytes_copied(&self) -> u64 {
        [self.migrate, self.swap, self.merge, self.copy_in, self.copy_back, self.onfly].iter().map(|m| m.bytes).sum()
    }
}

/// What a plan's moves count as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MoveKind {
    Migrate,
    Swap,
    Merge,
    CopyIn,
    CopyBack,
}

/// What happens to a move's source frames after the commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Freed.
    Free,
    /// Kept, owned as the page's second frame (a copy's original, HSCC).
    KeepAsCopy,
    /// Left alone: another move of the plan takes them (a swap).
    Reused,
}

/// One page's frames moving.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Move {
    /// The page, by its first byte.
    pub page: PageRef,
    /// The leaf to point at `to` (`None`: the mapping does not change here).
    pub slot: Option<usize>,
    pub from: u64,
    pub to: u64,
    pub frames: u64,
    /// Flush the source frames from the caches first.
    pub flush: bool,
    /// Copy the data (a clean copy dropped needs none).
    pub copy: bool,
    /// Owner kind of the `to` frames: the page itself, or its second frame.
    pub to_is_copy: bool,
    pub source: Source,
    /// Whether the page's frames change tier (for the tenant's counts).
    pub count: bool,
}

/// Translations to invalidate on every core, each round charged as one shootdown.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shootdown {
    /// The page of the given size.
    Page { page: PageRef, huge: bool },
    /// Every translation of a huge-page-sized region, base and huge.
    Region { page: PageRef },
}

/// Cycles a commit spent in each phase.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Phases {
    pub flush: u64,
    pub copy: u64,
    pub tables: u64,
    pub shootdown: u64,
}

/// A page move, planned: checked and frames allocated, nothing changed yet.
#[derive(Debug)]
pub(crate) struct Plan {
    pub kind: MoveKind,
    pub moves: Vec<Move>,
    /// A merge's page-table change: tenant, region, huge frame, flags.
    pub merge: Option<(u16, u64, u64, u64)>,
    pub shootdowns: Vec<Shootdown>,
    /// Fixed software work, in cycles.
    pub software: u64,
}

impl<R: Redirect> Machine<R> {
    /// One access of a mechanism through the caches at the executor's cursor, which
    /// then advances by the latency beyond an L1 hit (L1 hits are part of the
    /// instructions a mechanism's fixed per-item costs stand for, as they are part of
    /// the base CPI of a reference). Returns that latency.
    pub(crate) fn exec_access(&mut self, x: &mut Exec, paddr: u64, write: bool) -> u64 {
        let (_, lat) = self.cached_quiet(x.core, paddr, write, MemKind::Walk, x.at);
        let beyond = lat.saturating_sub(self.timing.l1_latency);
        x.at += beyond;
        beyond
    }

    /// Reads or writes the page-table entry at `slot` of `tenant`'s managed table.
    pub(crate) fn pte_access(&mut self, x: &mut Exec, tenant: u16, slot: usize, write: bool) {
        let pa = self.space.entry_paddr(tenant, slot);
        self.exec_access(x, pa, write);
    }

    /// Flushes frames `pfn..pfn + frames` from every cache (clflush per line, dirty
    /// lines written back).
    pub(crate) fn flush(&mut self, x: &mut Exec, pfn: u64, frames: u64) {
        let per_line = self.cfg.costs.clflush_cycles_per_line;
        let (done, lines) = self.mem.flush(&mut self.redirect, pfn << 12, frames << 12, x.at, per_line);
        x.at = done;
        self.stats.lines_flushed += lines;
    }

    /// Flushes one cache line (the pointer line of a Rainbow copy).
    pub(crate) fn flush_line(&mut self, x: &mut Exec, paddr: u64) {
        let per_line = self.cfg.costs.clflush_cycles_per_line;
        let (done, lines) = self.mem.flush(&mut self.redirect, paddr, 64, x.at, per_line);
        x.at = done;
        self.stats.lines_flushed += lines;
    }

    /// Copies frames `from..` to `to..` over both tiers' channels.
    fn copy_frames(&mut self, x: &mut Exec, from: u64, to: u64, frames: u64) {
        x.at = self.mem.copy(from, to, frames << 12, x.at, x.in_flight);
    }

    /// Fixed CPU work of `cycles`.
    pub(crate) fn cpu(&mut self, x: &mut Exec, cycles: u64) {
        x.at += cycles;
    }

    /// Fixed CPU work of `ns` nanoseconds.
    pub(crate) fn cpu_ns(&mut self, x: &mut Exec, ns: f64) {
        x.at += self.cfg.cycles(ns);
    }

    /// Interrupts every application core but the executor's own for a TLB-flush IPI
    /// and charges the initiator one shootdown.
    fn ipi_round(&mut self, x: &mut Exec) {
        let remote = self.cfg.costs.shootdown_remote_cycles;
        for (i, c) in self.cores.iter_mut().enumerate() {
            if x.foreground != Some(i) {
                c.stall(remote);
                self.stats.cycles += remote;
            }
        }
        x.at += self.cfg.costs.shootdown_cycles;
        self.stats.shootdowns += 1;
    }

    /// Invalidates translations on every core and charges one shootdown round. For a
    /// VM the host flushes all of the VM's translations (as INVEPT does for one EPT
    /// context): it does not know the guest-virtual addresses
    /// ([`Machine::vm_flush`]).
    pub(crate) fn shootdown(&mut self, x: &mut Exec, sd: Shootdown) {
        let page = match sd {
            Shootdown::Page { page, .. } | Shootdown::Region { page } => page,
        };
        if self.is_vm(page.tenant) {
            self.vm_flush(x, page.tenant);
            return;
        }
        let huge_frames = self.space.huge_frames();
        let region = page.addr & !((huge_frames << 12) - 1);
        match sd {
            Shootdown::Page { page, huge } => self.epochs_dropped(page.tenant, page.addr, self.space.page_bytes(huge)),
            Shootdown::Region { page } => self.epochs_dropped(page.tenant, region, huge_frames << 12),
        }
        for c in &mut self.cores {
            match sd {
                Shootdown::Page { page, huge } => {
                    c.tlb.invalidate(page.tenant, page.addr, huge);
                }
                Shootdown::Region { page } => {
                    for i in 0..huge_frames {
                        c.tlb.invalidate(page.tenant, region + (i << 12), false);
                    }
                    c.tlb.invalidate(page.tenant, region, true);
                }
            }
        }
        self.ipi_round(x);
    }

    /// Carries out a planned move on the executor's clock; see the module docs.
    /// Returns the cycles of each phase.
    pub(crate) fn commit(&mut self, x: &mut Exec, plan: Plan) -> Phases {
        let mut phases = Phases::default();
        let mut mark = x.at;
        let mut lap = |x: &Exec| std::mem::replace(&mut mark, x.at);
        for m in &plan.moves {
            if m.flush {
                self.flush(x, m.from, m.frames);
            }
        }
        phases.flush = x.at - lap(x);
        #[cfg(test)]
        let skip = self.break_migration_copy;
        #[cfg(not(test))]
        let skip = false;
        let mut shadow_moves = Vec::new();
        for m in plan.moves.iter().filter(|m| m.copy) {
            self.copy_frames(x, m.from, m.to, m.frames);
            if !skip {
                shadow_moves.push((m.from, m.to, m.frames));
            }
        }
        if let Some(s) = &mut self.shadow {
            s.copied(&shadow_moves);
        }
        phases.copy = x.at - lap(x);
        for m in &plan.moves {
            if let Some(slot) = m.slot {
                self.space.remap(m.page.tenant, slot, m.to);
                self.pte_access(x, m.page.tenant, slot, true);
            }
        }
        if let Some((tenant, region, pfn, flags)) = plan.merge {
            self.space.merge_mapping(tenant, region, pfn, flags);
            let slot = self.space.mapped(PageRef::new(tenant, region)).expect("just merged").slot;
            self.pte_access(x, tenant, slot, true);
        }
        phases.tables = x.at - lap(x);
        for &sd in &plan.shootdowns {
            self.shootdown(x, sd);
        }
        phases.shootdown = x.at - lap(x);
        self.cpu(x, plan.software);
        for m in &plan.moves {
            self.settle(plan.kind, m);
        }
        phases
    }

    /// The bookkeeping of a move once its data is in place: owners of the new frames,
    /// the old frames freed or kept, per-tenant counts and the move statistics.
    pub(crate) fn settle(&mut self, kind: MoveKind, m: &Move) {
        let (from_tier, to_tier) = (self.space.tier_of(m.from), self.space.tier_of(m.to));
        self.epochs_log(m.page.tenant, m.page.addr, m.frames << 12);
        self.space.set_owners(m.to, m.frames, m.page, m.to_is_copy);
        if m.source == Source::KeepAsCopy {
            self.space.set_owners(m.from, m.frames, m.page, true);
        }
        if m.source == Source::Free {
            self.space.release(m.from, m.frames);
            if let Some(s) = &mut self.shadow {
                s.freed(m.from, m.frames);
            }
        }
        if m.count && from_tier != to_tier {
            self.space.count_move(m.page.tenant, from_tier, to_tier, m.frames);
        }
        if !m.copy {
            // A clean copy dropped: the page goes back to its original, nothing moves.
            return;
        }
        if from_tier != to_tier {
            self.stats.pages_between[from_tier.index()][to_tier.index()] += 1;
            self.stats.bytes_between += m.frames << 12;
        }
        let count = match kind {
            MoveKind::Migrate => &mut self.stats.migrate,
            MoveKind::Swap => &mut self.stats.swap,
            MoveKind::Merge => &mut self.stats.merge,
            MoveKind::CopyIn => &mut self.stats.copy_in,
            MoveKind::CopyBack => &mut self.stats.copy_back,
        };
        count.add(m.frames << 12);
    }

    /// The leaf mapping `page`, checked against the tiers.
    pub(crate) fn mapped(&self, page: PageRef) -> Result<Mapped, MechError> {
        self.space.mapped(page)
    }

    /// Moves `page` to tier `to` into a frame of `colour` (base pages only): allocate,
    /// flush, copy, rewrite the PTE, shoot down, `migrate_software_ns`, free. A page
    /// may move within its tier when its frame is not of `colour`.
    pub(crate) fn migrate(&mut self, x: &mut Exec, page: PageRef, to: TierId, colour: Colour) -> Result<PageInfo, MechError> {
        self.space.check_tier(to)?;
        let m = self.mapped(page)?;
        let from = self.space.tier_of(m.pfn());
        // Within its tier a page may move only to a frame of another colour (memos'
        // bank rebalancing inside a channel, §7.2).
        if from == to && (colour == Colour::ANY || colour.matches(m.pfn())) {
            return Err(MechError::AlreadyThere { page, tier: to });
        }
        if m.huge && colour != Colour::ANY {
            return Err(MechError::HugeNotColoured { page });
        }
        let frames = self.space.page_bytes(m.huge) >> 12;
        self.space.fits(page.tenant, to, frames)?;
        let dst = self.space.alloc(to, m.huge, colour)?;
        let at = PageRef::new(page.tenant, m.addr);
        let plan = Plan {
            kind: MoveKind::Migrate,
            moves: vec![Move { page: at, slot: Some(m.slot), from: m.pfn(), to: dst, frames, flush: true, copy: true, to_is_copy: false, source: Source::Free, count: true }],
            merge: None,
            shootdowns: vec![Shootdown::Page { page: at, huge: m.huge }],
            software: self.cfg.cycles(self.cfg.costs.migrate_software_ns),
        };
        self.commit(x, plan);
        self.space.page_info(at)
    }

    /// Exchanges the frames of two pages of one size in different tiers, through a
    /// buffer: both flushed, copied both ways, both PTEs rewritten, both shot down,
    /// twice the software cost.
    pub(crate) fn swap(&mut self, x: &mut Exec, a: PageRef, b: PageRef) -> Result<(), MechError> {
        let (ma, mb) = (self.mapped(a)?, self.mapped(b)?);
        let (ta, tb) = (self.space.tier_of(ma.pfn()), self.space.tier_of(mb.pfn()));
        if ma.huge != mb.huge {
            return Err(MechError::SizesDiffer { a, b });
        }
        if ta == tb {
            return Err(MechError::SameTier { a, b, tier: ta });
        }
        let frames = self.space.page_bytes(ma.huge) >> 12;
        if a.tenant != b.tenant {
            // Between tenants the one entering the fast tier must stay within its quota.
            self.space.fits(a.tenant, tb, frames)?;
            self.space.fits(b.tenant, ta, frames)?;
        }
        let (pa, pb) = (PageRef::new(a.tenant, ma.addr), PageRef::new(b.tenant, mb.addr));
        let mv = |page, m: &Mapped, to| Move { page, slot: Some(m.slot), from: m.pfn(), to, frames, flush: true, copy: true, to_is_copy: false, source: Source::Reused, count: true };
        let plan = Plan {
            kind: MoveKind::Swap,
            moves: vec![mv(pa, &ma, mb.pfn()), mv(pb, &mb, ma.pfn())],
            merge: None,
            shootdowns: vec![Shootdown::Page { page: pa, huge: ma.huge }, Shootdown::Page { page: pb, huge: mb.huge }],
            software: 2 * self.cfg.cycles(self.cfg.costs.migrate_software_ns),
        };
        self.commit(x, plan);
        self.stats.swaps += 1;
        Ok(())
    }

    /// Splits the huge page holding `page` into base pages mapping the same frames: a
    /// new page-table node is written (one write per line of entries, through the
    /// caches), the huge translation shot down, `split_ns`.
    pub(crate) fn split(&mut self, x: &mut Exec, page: PageRef) -> Result<(), MechError> {
        let m = self.mapped(page)?;
        if !m.huge {
            return Err(MechError::NotHuge { page });
        }
        self.epochs_settle(page.tenant, m.addr, true, m.slot, x.at);
        let first = self.space.split_mapping(page.tenant, m.addr)?;
        self.epochs_log(page.tenant, m.addr, self.space.huge_bytes());
        for i in (0..self.space.huge_frames() as usize).step_by(8) {
            self.pte_access(x, page.tenant, first + i, true);
        }
        self.shootdown(x, Shootdown::Page { page: PageRef::new(page.tenant, m.addr), huge: true });
        self.cpu_ns(x, self.cfg.costs.split_ns);
        self.stats.splits += 1;
        Ok(())
    }

    /// Collapses the base pages of the huge-page-sized region holding `page` into one
    /// huge page in tier `to`: in place when they already fill an aligned huge frame
    /// there, else copied into a newly allocated one. Accessed and Dirty are OR-ed;
    /// poison is cleared. `merge_ns`.
    pub(crate) fn merge(&mut self, x: &mut Exec, page: PageRef, to: TierId) -> Result<(), MechError> {
        self.space.check_tier(to)?;
        self.epochs_settle_region(page.tenant, page.addr, x.at);
        let entries = self.space.region_entries(page)?;
        let n = self.space.huge_frames();
        let region = page.addr & !((n << 12) - 1);
        let base = entries[0] >> 12;
        let tenant = page.tenant;
        let already = entries.iter().filter(|&&e| self.space.tier_of(e >> 12) == to).count() as u64;
        let quota = self.space.tenants()[tenant as usize].fast_quota();
        let held = self.space.tenants()[tenant as usize].frames_per_tier()[0];
        if to == TierId::FAST && quota.is_some_and(|q| held - already + n > q) {
            return Err(MechError::OverQuota { tenant, quota_frames: quota.unwrap_or(0) });
        }
        let in_place = base.is_multiple_of(n)
            && self.space.tier_of(base) == to
            && entries.iter().enumerate().all(|(i, &e)| e >> 12 == base + i as u64);
        let flags = entries.iter().fold(0, |f, &e| f | (e & (ACCESSED | DIRTY)));
        let (target, moves) = if in_place {
            (base, Vec::new())
        } else {
            let dst = self.space.alloc(to, true, Colour::ANY)?;
            let moves = entries
                .iter()
                .enumerate()
                .map(|(i, &e)| Move {
                    page: PageRef::new(tenant, region + ((i as u64) << 12)),
                    slot: None,
                    from: e >> 12,
                    to: dst + i as u64,
                    frames: 1,
                    flush: true,
                    copy: true,
                    to_is_copy: false,
                    source: Source::Free,
                    count: true,
                })
                .collect();
            (dst, moves)
        };
        let copied = !moves.is_empty();
        let plan = Plan {
            kind: MoveKind::Merge,
            moves,
            merge: Some((tenant, region, target, flags)),
            shootdowns: vec![Shootdown::Region { page: PageRef::new(tenant, region) }],
            software: self.cfg.cycles(self.cfg.costs.merge_ns),
        };
        self.commit(x, plan);
        self.epochs_log(tenant, region, n << 12);
        self.stats.merges += 1;
        self.stats.merges_copied += copied as u64;
        Ok(())
    }

    /// Sets or clears the poison bit of `page`'s PTE (one write through the caches);
    /// poisoning shoots the translation down, so the next TLB miss faults.
    pub(crate) fn set_poison(&mut self, x: &mut Exec, page: PageRef, on: bool) -> Result<(), MechError> {
        let m = self.mapped(page)?;
        if on {
            self.epochs_may_trap(page.tenant);
        }
        let e = self.space.entry_mut(page.tenant, m.slot);
        if on {
            *e |= POISONED;
        } else {
            *e &= !POISONED;
        }
        self.pte_access(x, page.tenant, m.slot, true);
        if on {
            self.shootdown(x, Shootdown::Page { page: PageRef::new(page.tenant, m.addr), huge: m.huge });
            self.stats.poisons += 1;
        }
        Ok(())
    }

    /// Reads the Accessed bit of the leaf mapping `page` (a huge page's PMD-level
    /// entry for a huge page) the way a reverse-map walk from one of its frames finds
    /// it, and with `clear` clears it if set: `rmap_walk_ns` of software, the entry's
    /// line read through the caches, `scan_pte_cycles`, and the line written if the
    /// bit is cleared. No translation is invalidated: x86's
    /// `ptep_test_and_clear_young` does not flush the TLB (arch/x86/mm/pgtable.c), so
    /// an entry still cached in a TLB does not set the bit again until it is evicted
    /// (mm/damon/ops-common.c `damon_ptep_mkold`, `damon_pmdp_mkold`; reclaim's
    /// `folio_referenced` likewise) — unless `machine.costs.flush_on_clear_young`
    /// asks for a shootdown of the page, as on arm64. Returns whether the bit was
    /// set.
    pub(crate) fn young(&mut self, x: &mut Exec, page: PageRef, clear: bool) -> Result<bool, MechError> {
        let m = self.mapped(page)?;
        self.cpu_ns(x, self.cfg.costs.rmap_walk_ns);
        self.pte_access(x, page.tenant, m.slot, false);
        self.cpu(x, self.cfg.costs.scan_pte_cycles);
        let entry = self.epochs_settle(page.tenant, m.addr, m.huge, m.slot, x.at);
        let accessed = entry & ACCESSED != 0;
        if clear && accessed {
            *self.space.entry_mut(page.tenant, m.slot) &= !ACCESSED;
            self.pte_access(x, page.tenant, m.slot, true);
            if self.cfg.costs.flush_on_clear_young {
                self.shootdown(x, Shootdown::Page { page: PageRef::new(page.tenant, m.addr), huge: m.huge });
            } else {
                self.epochs_cleared_without_flush(page.tenant, m.addr, m.huge);
            }
        }
        self.stats.ptes_scanned += 1;
        Ok(accessed)
    }

    /// Scans up to `max` leaf PTEs of `tenant` in `range` of its managed space, in
    /// address order, on the executor's clock: each entry is read through
    /// the caches and costs `scan_pte_cycles`; with `clear`, an entry found Accessed
    /// or Dirty is cleared (a write to the line just read) and its translation
    /// invalidated on every core, without an interrupt yet: the caller ends the scan
    /// with one shootdown round ([`Machine::scan_done`]). Calls `f` with each page as
    /// found. Returns the address to resume from (`None` at the end) and the entries
    /// cleared.
    pub(crate) fn scan(&mut self, x: &mut Exec, tenant: u16, range: std::ops::Range<u64>, clear: bool, max: u64, f: &mut impl FnMut(PageInfo)) -> (Option<u64>, u64) {
        let mut pages = Vec::new();
        let next = self.space.visit_slots(tenant, range.start, range.end, &mut |p, slot| {
            pages.push((p, slot));
            if pages.len() as u64 >= max {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        let per_pte = self.cfg.costs.scan_pte_cycles;
        let is_vm = self.is_vm(tenant);
        let mut cleared = 0;
        for &(mut p, slot) in &pages {
            self.pte_access(x, tenant, slot, false);
            self.cpu(x, per_pte);
            if self.epochs.is_some() {
                let e = self.epochs_settle(tenant, p.addr, p.huge, slot, x.at);
                (p.accessed, p.dirty) = (e & ACCESSED != 0, e & DIRTY != 0);
            }
            f(p);
            if clear && (p.accessed || p.dirty) {
                let e = self.space.entry_mut(tenant, slot);
                // A page under an unlocked copy keeps its Dirty bit (see `COPYING`).
                *e &= if *e & COPYING != 0 { !ACCESSED } else { !(ACCESSED | DIRTY) };
                self.leaf_changed(x, &p, slot, is_vm);
                cleared += 1;
            }
        }
        self.stats.ptes_scanned += pages.len() as u64;
        (next, cleared)
    }

    /// Marks the mapped pages of `tenant` from managed address `from` on inaccessible
    /// for NUMA hinting faults, as Linux's `change_prot_numa` does for one window of
    /// `task_numa_work` (kernel/sched/fair.c, mm/mprotect.c, 5.4): each leaf met is
    /// read through the caches at `scan_pte_cycles`; one not marked yet, and not in
    /// tier `skip` (the single-threaded task's own node), is marked (a write to its
    /// line) and its translation dropped. The window ends once `bytes` of pages were
    /// marked or the leaves met span 8 × `bytes` of addresses; one TLB-flush round
    /// then covers the window. Returns where the next window starts (`None`: the end
    /// of the address space was reached), the pages marked and the leaves met.
    pub(crate) fn mark_hinting(&mut self, x: &mut Exec, tenant: u16, from: u64, bytes: u64, skip: Option<TierId>, f: &mut impl FnMut(PageInfo)) -> (Option<u64>, u64, u64) {
        // Holes between mappings cost nothing (Linux walks the mapped areas): the span
        // counts from the first page at or after `from`.
        let mut first = None;
        self.space.visit_slots(tenant, from, u64::MAX, &mut |p, _| {
            first = Some(p.addr);
            ControlFlow::Break(())
        });
        let Some(start) = first else { return (None, 0, 0) };
        let (mut pages, mut to_mark) = (Vec::new(), 0u64);
        let span_end = start.saturating_add(bytes.saturating_mul(8));
        let next = self.space.visit_slots(tenant, start, span_end, &mut |p, slot| {
            let mark = !p.poisoned && Some(p.tier) != skip;
            to_mark += if mark { p.bytes } else { 0 };
            pages.push((p, slot, mark));
            if to_mark >= bytes {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        // Past the span's end, the next window starts where this one stopped.
        let next = match next {
            Some(a) => Some(a),
            None if span_end < u64::MAX && self.space.visit_slots(tenant, span_end, u64::MAX, &mut |_, _| ControlFlow::Break(())).is_some() => Some(span_end),
            None => None,
        };
        let per_pte = self.cfg.costs.scan_pte_cycles;
        let is_vm = self.is_vm(tenant);
        let mut marked = 0;
        for &(p, slot, mark) in &pages {
            self.pte_access(x, tenant, slot, false);
            self.cpu(x, per_pte);
            if mark {
                self.epochs_may_trap(tenant);
                *self.space.entry_mut(tenant, slot) |= POISONED;
                self.leaf_changed(x, &p, slot, is_vm);
                marked += 1;
                f(p);
            }
        }
        self.stats.ptes_scanned += pages.len() as u64;
        self.stats.poisons += marked;
        self.scan_done(x, tenant, marked);
        (next, marked, pages.len() as u64)
    }

    /// A scan changed the leaf of page `p` at `slot`: the write of its line, and its
    /// translations dropped on every core without an interrupt yet (a VM's are
    /// flushed whole by [`Machine::scan_done`]).
    fn leaf_changed(&mut self, x: &mut Exec, p: &PageInfo, slot: usize, is_vm: bool) {
        self.pte_access(x, p.tenant, slot, true);
        self.epochs_dropped(p.tenant, p.addr, p.bytes);
        if !is_vm {
            for c in &mut self.cores {
                c.tlb.invalidate(p.tenant, p.addr, p.huge);
            }
        }
    }

    /// Ends a scan of `tenant` that cleared `cleared` entries: one batched TLB-flush
    /// round (a VM's translations are all flushed, as the host cannot name them).
    pub(crate) fn scan_done(&mut self, x: &mut Exec, tenant: u16, cleared: u64) {
        if cleared == 0 {
            return;
        }
        if self.is_vm(tenant) {
            self.vm_flush(x, tenant);
        } else {
            self.ipi_round(x);
        }
    }
}
