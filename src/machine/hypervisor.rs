//! What a hypervisor does to a VM's memory, each step charged on the executor's
//! clock: flushing the VM's translations, reading and clearing the guest's page-table
//! A/D bits from the host (HMM-V's GPT scanner, §4.1.1), clearing EPT dirty bits so
//! that PML logs the next write, and moving pages in the three ways HMM-V compares
//! (§4.3, Tables 3–5) — the `linux` and `write-protect` ways, and unlocked DMA
//! batches, serve processes as well.
//!
//! # Translations
//! The TLBs cache combined guest-virtual → host-physical entries. The host cannot name
//! a guest-virtual address, so it flushes a VM's translations whole (INVEPT of the
//! VM's EPT context, which drops the combined entries and with them what the guest
//! cached): every other core holding one is kicked out of the VM (a `TlbFlush` exit)
//! and the initiator pays `machine.costs.shootdown_cycles` ([`Machine::vm_flush`]).
//! Every EPT change of a mechanism (migration, scans that clear EPT bits) ends with
//! this flush; a scanner that cleared guest A/D bits flushes the same way, so that
//! the next access walks again and sets them.
//!
//! # Moving a page ([`MoveHow`])
//! - `linux`: the kernel's `migrate_pages` as KVM's host sees it, one page at a time:
//!   unmap (the EPT entry is invalid), flush, copy, remap. An access to the page
//!   while it moves takes an EPT violation and waits for the copy; the new EPT entry
//!   is filled only by the next access, one more EPT-violation exit (HMM-V §4.3).
//! - `write-protect` (HeMem's): write-protect the page, flush, copy, remap, flush.
//!   Reads go on during the copy; a write exits (`WriteProtect`) and waits until the
//!   page has moved. As with `linux`, the new EPT entry is filled by the next access's
//!   EPT-violation exit (HMM-V §5.4.2: only PML migration fills it actively).
//! - `pml` (HMM-V's, batched, [`Machine::batch_step`]): destinations taken up front
//!   (with each page's `migrate_software_ns`); the EPT dirty bits cleared and one flush; each page copied while it
//!   stays mapped (the VM keeps writing it); then every page unmapped, one flush, the
//!   pages the VM dirtied since the bits were cleared (PML logged them, and the D bit
//!   says the same) copied again, and every new EPT entry filled by the hypervisor (no
//!   exit). Only an access during that last, short step waits.
//! - DMA, unlocked (memos' migration engine, §6.3; batched like `pml`, for processes
//!   and VMs alike, [`Mechanisms::plan_dma_batch`]): destinations taken up front
//!   (coloured if asked, with each page's `migrate_software_ns`), each page's Dirty
//!   bit cleared (a process's PTE, a VM's EPT entry) and its translation flushed (a
//!   shootdown per process page, one flush per VM); each page copied by the engine
//!   in its own step while it stays mapped and writable; then each page whose Dirty
//!   bit is set again (written during its copy) is discarded — its destination
//!   freed, the page left where it was ([`MechError::DirtiedDuringCopy`], counted in
//!   `dma_discarded`) — and every other page remapped to its copy, its old
//!   translation shot down. Nothing is ever locked: no access waits. memos' locked
//!   CPU copy (`migrate_cpu`, §6.3) is the `linux` way on a process.
//!
//! Every way can take its destination frame of a colour (`Mechanisms::move_as_coloured`,
//! the colour of each page of a DMA batch); a huge page has no colour.
//!
//! [`Mechanisms::plan_dma_batch`]: crate::mechanism::Mechanisms::plan_dma_batch
//!
//! Waiting is kept as a record per page, flagged by the `TRAP` bit of its managed
//! entry: the next TLB miss (or the first write through a clean TLB entry) to the
//! page reads the record, exits if it says so and stalls the core until the move's
//! end. The moves' data copies go over both tiers' channels as every copy does.

use super::ops::{Exec, Move, MoveKind, Source};
use super::page_table::{COPYING, DIRTY, HUGE, TRAP};
use super::redirect::Redirect;
use super::vmx::ExitCause;
use super::{Colour, Direction, Machine, MechError, PageRef, TierId};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How a page moves between tiers; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum MoveHow {
    /// Serial: unmap, copy, remap; the new EPT entry filled on the next access.
    Linux,
    /// HeMem's: copy with the page write-protected.
    WriteProtect,
    /// HMM-V's: copy while mapped, recopy what PML logged as dirtied, fill the EPT.
    #[default]
    Pml,
}

/// The rate limits every move is held to (the mechanism layer's `Limits`): a batched
/// page is checked when it is prepared and counted once it has moved.
pub trait MoveLimits {
    fn check(&mut self, d: Direction, at: u64) -> Result<(), MechError>;
    fn count(&mut self, d: Direction, at: u64, bytes: u64);
}

/// What an access to a page with a record meets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TrapKind {
    /// Unmapped while it moves: an access before `until` exits and waits; with
    /// `fill_exit`, the first access after it exits too (the entry is not filled).
    Unmapped { fill_exit: bool },
    /// Write-protected until `until`: a write exits and waits, reads go on; with
    /// `fill_exit`, the new entry is then filled by an EPT-violation exit.
    WriteProtected { fill_exit: bool },
}

#[derive(Clone, Copy, Debug)]
struct Trap {
    until: u64,
    kind: TrapKind,
}

/// Counts of the ways of moving a page (of VMs and processes alike) and of the waits
/// they caused.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VmMoveStats {
    /// Pages moved by each variant.
    pub linux: u64,
    pub write_protect: u64,
    pub pml: u64,
    /// PML batches finished, and the pages of them copied a second time because the
    /// VM wrote them during the first copy.
    pub pml_batches: u64,
    pub pml_recopied: u64,
    /// Pages moved by unlocked DMA batches, the batches finished, and the pages they
    /// discarded because a core wrote them during their copy (memos §6.3).
    pub dma: u64,
    pub dma_batches: u64,
    pub dma_discarded: u64,
    /// Batched moves abandoned because the page was remapped meanwhile.
    pub abandoned: u64,
    /// Accesses that met their page while it moved (each took an exit, or a fault in a
    /// process), and the cycles they waited beyond it for the move's end.
    pub waits: u64,
    pub wait_cycles: u64,
}

/// A page of the last-level guest page table (HMM-V's LL-GPT page).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GptNode {
    /// Its guest-physical frame.
    pub gpfn: u64,
    /// The guest table's slot of its first entry.
    pub(crate) first_slot: usize,
    /// Whether it is a level-2 node (its leaves map huge pages).
    pub(crate) huge_leaves: bool,
}

/// A leaf entry of a guest page-table page, as the host reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GptEntry {
    /// The page number of the guest-physical page it maps (`None` if the host has not
    /// mapped that page yet).
    pub page: Option<u64>,
    /// Guest-physical address of the page it maps.
    pub gpa: u64,
    /// Whether the guest maps it huge.
    pub huge: bool,
    pub accessed: bool,
    pub dirty: bool,
}

/// How a batched move ends ([`Machine::batch_step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchKind {
    /// HMM-V's PML move (VMs only): unmap all, copy again what was written, remap.
    Pml,
    /// memos' unlocked DMA move (processes and VMs): remap what was not written during
    /// its copy, discard the rest.
    Dma,
}

/// One page of a batched move.
#[derive(Clone, Copy, Debug)]
struct BatchPage {
    page: PageRef,
    to_tier: TierId,
    colour: Colour,
    slot: usize,
    huge: bool,
    from: u64,
    /// Destination frame once prepared.
    to: Option<u64>,
    frames: u64,
}

#[derive(Debug)]
struct Batch {
    kind: BatchKind,
    pages: Vec<BatchPage>,
    /// 0: prepare; 1..=n: copy page i − 1; n + 1: finish.
    step: usize,
    first_error: Option<MechError>,
}

/// The hypervisor's records: pages with waiting records and batched moves under
/// way (their promotions hold fast frames against the tenant's quota meanwhile).
#[derive(Debug, Default)]
pub struct Hyper {
    traps: HashMap<(u16, u64), Trap>,
    batches: Vec<Option<Batch>>,
    pub stats: VmMoveStats,
}

impl Hyper {
    pub(crate) fn new() -> Hyper {
        Hyper::default()
    }

    /// Registers a batched move of `kind` of `pages` (each to its tier, into a frame
    /// of its colour); returns its number.
    pub(crate) fn plan_batch(&mut self, kind: BatchKind, pages: Vec<(PageRef, TierId, Colour)>) -> u32 {
        let pages = pages.into_iter().map(|(page, to_tier, colour)| BatchPage { page, to_tier, colour, slot: 0, huge: false, from: 0, to: None, frames: 0 }).collect();
        let b = Some(Batch { kind, pages, step: 0, first_error: None });
        match self.batches.iter().position(|b| b.is_none()) {
            Some(i) => {
                self.batches[i] = b;
                i as u32
            }
            None => {
                self.batches.push(b);
                self.batches.len() as u32 - 1
            }
        }
    }
}

impl<R: Redirect> Machine<R> {
    /// Whether `tenant` is a VM (has a guest page table and an EPT).
    pub(crate) fn is_vm(&self, tenant: u16) -> bool {
        self.space.tenants().get(tenant as usize).is_some_and(|t| t.guest.is_some())
    }

    /// Flushes every translation of VM `tenant` on every core; each other core that
    /// held one takes a `TlbFlush` exit; the initiator pays one shootdown.
    pub(crate) fn vm_flush(&mut self, x: &mut Exec, tenant: u16) {
        self.epochs_dropped(tenant, 0, u64::MAX >> 1);
        for core in 0..self.cores.len() {
            let held = self.cores[core].tlb.flush_tenant(tenant);
            if held && x.foreground != Some(core) {
                let cycles = self.vmx.exit(core, ExitCause::TlbFlush);
                self.charge_exit(core, cycles);
            }
        }
        x.at += self.cfg.costs.shootdown_cycles;
        self.stats.shootdowns += 1;
    }

    /// The last-level guest page-table pages of VM `tenant`, in guest-virtual order
    /// (each once), as HMM-V's guest module collects them (§4.1.1). The caller
    /// charges the collection.
    pub(crate) fn guest_leaf_nodes(&self, tenant: u16) -> Result<Vec<GptNode>, MechError> {
        let t = self.space.tenants().get(tenant as usize).ok_or(MechError::NoSuchTenant { tenant })?;
        let guest = t.guest.as_ref().ok_or(MechError::NotVm { tenant })?;
        let mut nodes: Vec<GptNode> = Vec::new();
        guest.table.for_each_leaf(0, u64::MAX, &mut |l| {
            let first_slot = l.slot & !511;
            if nodes.last().is_none_or(|n| n.first_slot != first_slot) {
                nodes.push(GptNode { gpfn: guest.table.entry_paddr(first_slot) >> 12, first_slot, huge_leaves: l.huge });
            }
            std::ops::ControlFlow::Continue(())
        });
        Ok(nodes)
    }

    /// The host frame holding guest-physical address `gpa` of `tenant` (`None` if the
    /// EPT does not map it).
    /// The pages of VM `tenant`'s guest page table in each tier, fastest first (a
    /// VM's page tables are pages of its own, which a policy may move); `None` for a
    /// process.
    pub fn guest_table_frames_per_tier(&self, tenant: u16) -> Option<Vec<u64>> {
        let guest = self.space.tenants().get(tenant as usize)?.guest.as_ref()?;
        let mut out = vec![0; self.memory().tiers().all().len()];
        for f in guest.table.node_frames() {
            if let Some(t) = self.space.managed_tier(tenant, f) {
                out[t.index()] += 1;
            }
        }
        Some(out)
    }

    pub(crate) fn host_addr(&self, tenant: u16, gpa: u64) -> Option<u64> {
        let m = self.space.mapped(PageRef::new(tenant, gpa)).ok()?;
        Some((m.pfn() << 12) + (gpa - m.addr))
    }

    /// Reads guest page-table page `node` of VM `tenant` from the host: one line read
    /// through the caches per 8 entries at the page's host frame, and
    /// `scan_pte_cycles` per leaf entry; `f` sees each leaf and returns whether to
    /// clear its Accessed and Dirty bits (a write to its line). Returns the leaves
    /// seen. The caller flushes the VM's translations after clearing.
    pub(crate) fn scan_gpt_node(&mut self, x: &mut Exec, tenant: u16, node: GptNode, f: &mut impl FnMut(GptEntry) -> bool) -> u64 {
        let Some(host) = self.host_addr(tenant, node.gpfn << 12) else { return 0 };
        let per_pte = self.cfg.costs.scan_pte_cycles;
        let mut seen = 0;
        for line in 0..64u64 {
            self.exec_access(x, host + line * 64, false);
            for i in 0..8 {
                let slot = node.first_slot + (line * 8 + i) as usize;
                let e = self.space.tenants()[tenant as usize].guest.as_ref().expect("VM tenant").table.entry(slot);
                let leaf = e & super::page_table::PRESENT != 0 && (!node.huge_leaves || e & HUGE != 0);
                if !leaf {
                    continue;
                }
                seen += 1;
                self.cpu(x, per_pte);
                // (Epochs mode draws the bits the references since the last look set.)
                let e = if self.epochs.is_some() { self.epochs_settle_guest(tenant, e >> 12, e & HUGE != 0, slot, x.at) } else { e };
                let gpa = (e >> 12) << 12;
                let page = self.space.tenants()[tenant as usize].table.page_number(gpa);
                let entry = GptEntry { page, gpa, huge: e & HUGE != 0, accessed: e & super::page_table::ACCESSED != 0, dirty: e & DIRTY != 0 };
                if f(entry) {
                    let guest = &mut self.space.tenant_mut(tenant).guest.as_mut().expect("VM tenant").table;
                    *guest.entry_mut(slot) &= !(super::page_table::ACCESSED | DIRTY);
                    self.exec_access(x, host + line * 64, true);
                }
            }
        }
        self.stats.ptes_scanned += seen;
        seen
    }

    /// Clears the EPT dirty bit of the page holding guest-physical address `gpa` of
    /// VM `tenant` (a write to its EPT entry), so that PML logs the next write to it;
    /// returns whether it was set. The caller flushes the VM's translations.
    pub(crate) fn clear_ept_dirty(&mut self, x: &mut Exec, tenant: u16, gpa: u64) -> Result<bool, MechError> {
        if !self.is_vm(tenant) {
            return Err(MechError::NotVm { tenant });
        }
        let m = self.space.mapped(PageRef::new(tenant, gpa))?;
        self.epochs_settle(tenant, m.addr, m.huge, m.slot, x.at);
        let e = self.space.entry_mut(tenant, m.slot);
        let was = *e & DIRTY != 0;
        if *e & COPYING == 0 {
            *e &= !DIRTY;
        }
        self.pte_access(x, tenant, m.slot, true);
        Ok(was)
    }

    /// Invalidates the translations of `page` (of `huge` size): a VM's whole, charged
    /// as [`Machine::vm_flush`]; a process's page with one shootdown.
    fn flush_page(&mut self, x: &mut Exec, page: PageRef, huge: bool) {
        self.shootdown(x, super::ops::Shootdown::Page { page, huge });
    }

    fn set_trap_bit(&mut self, tenant: u16, slot: usize) {
        self.epochs_may_trap(tenant);
        *self.space.entry_mut(tenant, slot) |= TRAP;
    }

    fn clear_trap(&mut self, tenant: u16, page: u64) {
        self.hyper.traps.remove(&(tenant, page));
        if let Ok(m) = self.space.mapped(PageRef::new(tenant, page)) {
            *self.space.entry_mut(tenant, m.slot) &= !TRAP;
        }
    }

    /// Moves `page` to tier `to`, into a frame of `colour`, the `linux` or
    /// `write-protect` way, on the executor's clock (see the module documentation); a
    /// `pml` move is batched ([`Machine::batch_step`]).
    pub(crate) fn move_as(&mut self, x: &mut Exec, page: PageRef, to: TierId, how: MoveHow, colour: Colour) -> Result<(), MechError> {
        self.space.check_tier(to)?;
        let m = self.mapped(page)?;
        let from = self.space.tier_of(m.pfn());
        if from == to {
            return Err(MechError::AlreadyThere { page, tier: to });
        }
        if m.huge && colour != Colour::ANY {
            return Err(MechError::HugeNotColoured { page });
        }
        let frames = self.space.page_bytes(m.huge) >> 12;
        self.space.fits(page.tenant, to, frames)?;
        let dst = self.space.alloc(to, m.huge, colour)?;
        let at = PageRef::new(page.tenant, m.addr);
        let is_vm = self.is_vm(page.tenant);
        // Unmap (linux) or write-protect: one write to the entry, which from now on
        // carries a record; write protection is flushed before the copy starts.
        self.set_trap_bit(page.tenant, m.slot);
        self.pte_access(x, page.tenant, m.slot, true);
        let kind = match how {
            MoveHow::Linux => TrapKind::Unmapped { fill_exit: is_vm },
            MoveHow::WriteProtect => {
                self.flush_page(x, at, m.huge);
                TrapKind::WriteProtected { fill_exit: is_vm }
            }
            MoveHow::Pml => unreachable!("pml moves are batched"),
        };
        let plan = super::ops::Plan {
            kind: MoveKind::Migrate,
            moves: vec![Move { page: at, slot: Some(m.slot), from: m.pfn(), to: dst, frames, flush: true, copy: true, to_is_copy: false, source: Source::Free, count: true }],
            merge: None,
            shootdowns: vec![super::ops::Shootdown::Page { page: at, huge: m.huge }],
            software: self.cfg.cycles(self.cfg.costs.migrate_software_ns),
        };
        self.commit(x, plan);
        self.hyper.traps.insert((page.tenant, m.addr), Trap { until: x.at, kind });
        match how {
            MoveHow::Linux => self.hyper.stats.linux += 1,
            _ => self.hyper.stats.write_protect += 1,
        }
        Ok(())
    }

    /// Exchanges the frames of two pages of one size in different tiers with both
    /// unmapped while their data moves (Nimble's `exchange_pages`): the swap's work,
    /// then an access to either page that missed its TLB before the exchange ended
    /// waits for the end, as an access meeting a `linux` move does (in a VM, the first
    /// access after it fills the new EPT entry with an EPT violation).
    pub(crate) fn exchange_unmapped(&mut self, x: &mut Exec, a: PageRef, b: PageRef) -> Result<(), MechError> {
        let (ma, mb) = (self.mapped(a)?, self.mapped(b)?);
        self.swap(x, a, b)?;
        for (page, m) in [(a, ma), (b, mb)] {
            self.set_trap_bit(page.tenant, m.slot);
            let kind = TrapKind::Unmapped { fill_exit: self.is_vm(page.tenant) };
            self.hyper.traps.insert((page.tenant, m.addr), Trap { until: x.at, kind });
        }
        self.hyper.stats.linux += 2;
        Ok(())
    }

    /// Runs the next step of batched (PML or DMA) move `batch` on the executor's
    /// clock: prepare, one page's copy, or the finish. Returns `None` while steps
    /// remain, then the outcome (the first refusal or discard of any page, the others
    /// moved).
    pub(crate) fn batch_step(&mut self, x: &mut Exec, batch: u32, limits: &mut impl MoveLimits) -> Option<Result<(), MechError>> {
        let Some(mut b) = self.hyper.batches.get_mut(batch as usize).and_then(|b| b.take()) else {
            return Some(Err(MechError::NoSuchBatch { batch }));
        };
        let n = b.pages.len();
        if b.step == 0 {
            self.batch_prepare(x, &mut b, limits);
        } else if b.step <= n {
            let p = b.pages[b.step - 1];
            if let Some(to) = p.to {
                self.flush(x, p.from, p.frames);
                self.batch_copy(x, p.from, to, p.frames, false);
            }
        } else {
            match b.kind {
                BatchKind::Pml => self.batch_finish(x, &mut b, limits),
                BatchKind::Dma => self.dma_finish(x, &mut b, limits),
            }
            return Some(b.first_error.map_or(Ok(()), Err));
        }
        b.step += 1;
        // Skip the copy steps of pages that were refused.
        while b.step >= 1 && b.step <= n && b.pages[b.step - 1].to.is_none() {
            b.step += 1;
        }
        self.hyper.batches[batch as usize] = Some(b);
        None
    }

    fn batch_copy(&mut self, x: &mut Exec, from: u64, to: u64, frames: u64, recopy: bool) {
        x.at = self.mem.copy(from, to, frames << 12, x.at, x.in_flight);
        #[cfg(test)]
        let skip = recopy && self.break_pml_recopy;
        #[cfg(not(test))]
        let skip = {
            let _ = recopy;
            false
        };
        if let (Some(s), false) = (&mut self.shadow, skip) {
            s.copied(&[(from, to, frames)]);
        }
    }

    /// Prepares every page of `b`: destination taken, Dirty bit cleared, and (after
    /// the loop) the translations flushed so that the next write sets the bit again.
    fn batch_prepare(&mut self, x: &mut Exec, b: &mut Batch, limits: &mut impl MoveLimits) {
        // The per-page software work (allocation, locking, bookkeeping) is done here,
        // while the pages stay mapped, so that the pause at the finish is short.
        let software = self.cfg.cycles(self.cfg.costs.migrate_software_ns);
        let mut tenants: Vec<u16> = Vec::new();
        let mut process_pages = Vec::new();
        let kind = b.kind;
        for p in &mut b.pages {
            let r = (|| {
                if kind == BatchKind::Pml && !self.is_vm(p.page.tenant) {
                    return Err(MechError::NotVm { tenant: p.page.tenant });
                }
                self.space.check_tier(p.to_tier)?;
                let m = self.mapped(p.page)?;
                let from = self.space.tier_of(m.pfn());
                if from == p.to_tier {
                    return Err(MechError::AlreadyThere { page: p.page, tier: p.to_tier });
                }
                if m.huge && p.colour != Colour::ANY {
                    return Err(MechError::HugeNotColoured { page: p.page });
                }
                limits.check(Direction::between(from, p.to_tier), x.at)?;
                let frames = self.space.page_bytes(m.huge) >> 12;
                self.space.fits(p.page.tenant, p.to_tier, frames)?;
                let dst = self.space.alloc(p.to_tier, m.huge, p.colour)?;
                Ok((m, frames, dst))
            })();
            match r {
                Ok((m, frames, dst)) => {
                    *p = BatchPage { page: PageRef::new(p.page.tenant, m.addr), slot: m.slot, huge: m.huge, from: m.pfn(), to: Some(dst), frames, ..*p };
                    self.space.set_owners(dst, frames, PageRef::new(p.page.tenant, m.addr), true);
                    if p.to_tier == TierId::FAST {
                        self.space.hold_fast(p.page.tenant, frames, false);
                    }
                    let e = self.space.entry_mut(p.page.tenant, m.slot);
                    *e &= !DIRTY;
                    if kind == BatchKind::Dma {
                        *e |= COPYING;
                    }
                    self.pte_access(x, p.page.tenant, m.slot, true);
                    self.cpu(x, software);
                    if !self.is_vm(p.page.tenant) {
                        process_pages.push((p.page, m.huge));
                    } else if !tenants.contains(&p.page.tenant) {
                        tenants.push(p.page.tenant);
                    }
                }
                Err(e) => {
                    b.first_error.get_or_insert(e);
                }
            }
        }
        for t in tenants {
            self.vm_flush(x, t);
        }
        // A process's cores may hold dirty translations of the pages: without their
        // shootdown a write would not set the Dirty bit again.
        for (page, huge) in process_pages {
            self.shootdown(x, super::ops::Shootdown::Page { page, huge });
        }
    }

    /// The end of a DMA batch (memos §6.3): a page whose Dirty bit is set again was
    /// written during its copy and is discarded (its destination freed, the page left
    /// where it was); every other page is remapped to its copy, its old translation
    /// shot down (one flush per VM), and its move settled. Nothing was ever locked.
    fn dma_finish(&mut self, x: &mut Exec, b: &mut Batch, limits: &mut impl MoveLimits) {
        #[cfg(test)]
        let check = !self.break_dma_dirty_check;
        #[cfg(not(test))]
        let check = true;
        let mut moved = Vec::new();
        let mut vms: Vec<u16> = Vec::new();
        for p in &b.pages {
            let Some(to) = p.to else { continue };
            if p.to_tier == TierId::FAST {
                self.space.hold_fast(p.page.tenant, p.frames, true);
            }
            let now = self.mapped(p.page);
            if let Ok(m) = &now {
                // The copy is over (whatever became of the page meanwhile).
                *self.space.entry_mut(p.page.tenant, m.slot) &= !COPYING;
            }
            let same = now.is_ok_and(|m| m.slot == p.slot && m.pfn() == p.from && m.huge == p.huge);
            let dirty = same && {
                // The entry is read for its Dirty bit (and written if the page moves).
                self.pte_access(x, p.page.tenant, p.slot, false);
                self.epochs_settle(p.page.tenant, p.page.addr, p.huge, p.slot, x.at) & DIRTY != 0
            };
            if !same || (dirty && check) {
                self.space.release(to, p.frames);
                if let Some(s) = &mut self.shadow {
                    s.freed(to, p.frames);
                }
                let e = if same {
                    self.hyper.stats.dma_discarded += 1;
                    MechError::DirtiedDuringCopy { page: p.page }
                } else {
                    self.hyper.stats.abandoned += 1;
                    MechError::MovedMeanwhile { page: p.page }
                };
                b.first_error.get_or_insert(e);
                continue;
            }
            self.space.remap(p.page.tenant, p.slot, to);
            self.pte_access(x, p.page.tenant, p.slot, true);
            if !self.is_vm(p.page.tenant) {
                self.shootdown(x, super::ops::Shootdown::Page { page: p.page, huge: p.huge });
            } else if !vms.contains(&p.page.tenant) {
                vms.push(p.page.tenant);
            }
            moved.push((*p, to));
        }
        for t in vms {
            self.vm_flush(x, t);
        }
        for (p, to) in moved {
            let mv = Move { page: p.page, slot: Some(p.slot), from: p.from, to, frames: p.frames, flush: true, copy: true, to_is_copy: false, source: Source::Free, count: true };
            limits.count(Direction::between(self.space.tier_of(p.from), p.to_tier), x.at, p.frames << 12);
            self.settle(MoveKind::Migrate, &mv);
            self.hyper.stats.dma += 1;
        }
        self.hyper.stats.dma_batches += 1;
    }

    fn batch_finish(&mut self, x: &mut Exec, b: &mut Batch, limits: &mut impl MoveLimits) {
        let mut live = Vec::new();
        let mut tenants: Vec<u16> = Vec::new();
        for p in &b.pages {
            let Some(to) = p.to else { continue };
            if p.to_tier == TierId::FAST {
                self.space.hold_fast(p.page.tenant, p.frames, true);
            }
            let same = self.mapped(p.page).is_ok_and(|m| m.slot == p.slot && m.pfn() == p.from && m.huge == p.huge);
            if !same {
                self.space.release(to, p.frames);
                if let Some(s) = &mut self.shadow {
                    s.freed(to, p.frames);
                }
                self.hyper.stats.abandoned += 1;
                b.first_error.get_or_insert(MechError::MovedMeanwhile { page: p.page });
                continue;
            }
            // Unmap: the entry carries a record from now on.
            self.set_trap_bit(p.page.tenant, p.slot);
            self.pte_access(x, p.page.tenant, p.slot, true);
            self.hyper.traps.insert((p.page.tenant, p.page.addr), Trap { until: u64::MAX, kind: TrapKind::Unmapped { fill_exit: false } });
            if !tenants.contains(&p.page.tenant) {
                tenants.push(p.page.tenant);
            }
            live.push((*p, to));
        }
        for &t in &tenants {
            self.vm_flush(x, t);
        }
        for &(p, to) in &live {
            // The PML log since the dirty bits were cleared names the pages written
            // during the copy (their EPT dirty bit says the same): copy them again.
            if self.epochs_settle(p.page.tenant, p.page.addr, p.huge, p.slot, x.at) & DIRTY != 0 {
                self.flush(x, p.from, p.frames);
                self.batch_copy(x, p.from, to, p.frames, true);
                self.hyper.stats.pml_recopied += 1;
            }
            // Fill the new EPT entry now, as the EPT fault handler would.
            self.space.remap(p.page.tenant, p.slot, to);
            self.pte_access(x, p.page.tenant, p.slot, true);
        }
        for &(p, to) in &live {
            let mv = Move { page: p.page, slot: Some(p.slot), from: p.from, to, frames: p.frames, flush: true, copy: true, to_is_copy: false, source: Source::Free, count: true };
            limits.count(Direction::between(self.space.tier_of(p.from), p.to_tier), x.at, p.frames << 12);
            self.settle(MoveKind::Migrate, &mv);
            self.hyper.traps.insert((p.page.tenant, p.page.addr), Trap { until: x.at, kind: TrapKind::Unmapped { fill_exit: false } });
            self.hyper.stats.pml += 1;
        }
        self.hyper.stats.pml_batches += 1;
    }

    /// An access (a TLB miss, or a write through a clean TLB entry) met the record of
    /// `tenant`'s page holding managed address `addr`: exits as the record says and
    /// stalls the core until the move's end. Returns whether the TLB must be filled
    /// clean (a read of a write-protected page: the next write comes back here).
    #[cold]
    #[inline(never)]
    pub(crate) fn spring_trap(&mut self, core: usize, tenant: u16, addr: u64, huge: bool, write: bool) -> bool {
        let page = addr & !(self.space.page_bytes(huge) - 1);
        let Some(t) = self.hyper.traps.get(&(tenant, page)).copied() else {
            self.clear_trap(tenant, page);
            return false;
        };
        let now = self.cores[core].clock;
        let vm = self.is_vm(tenant);
        // The exit the access takes now, whether the new entry still needs its own
        // (an EPT violation after the wait), whether the record is done, whether the
        // TLB is filled clean.
        let (exit, then_fill, done, clean) = match t.kind {
            TrapKind::Unmapped { fill_exit } => ((now < t.until || fill_exit).then_some(ExitCause::EptViolation), false, true, false),
            TrapKind::WriteProtected { fill_exit } if now >= t.until => (fill_exit.then_some(ExitCause::EptViolation), false, true, false),
            TrapKind::WriteProtected { fill_exit } if write => (Some(ExitCause::WriteProtect), fill_exit, true, false),
            TrapKind::WriteProtected { .. } => (None, false, false, true),
        };
        if let Some(cause) = exit {
            if vm {
                let cycles = self.vmx.exit(core, cause);
                self.charge_exit(core, cycles);
            } else if now < t.until {
                // A process meets a migration entry: a page fault that sleeps on it.
                let c = &mut self.cores[core];
                c.clock += self.timing.page_fault_cycles;
                c.stats.fault_cycles += self.timing.page_fault_cycles;
            }
        }
        if exit.is_some() && now < t.until {
            // It met the page while it moved: it waits for the move's end (what is
            // left of it after the exit).
            let c = &mut self.cores[core];
            let wait = t.until.saturating_sub(c.clock);
            c.clock += wait;
            c.stats.migration_wait_cycles += wait;
            self.hyper.stats.waits += 1;
            self.hyper.stats.wait_cycles += wait;
        }
        if then_fill && vm {
            let cycles = self.vmx.exit(core, ExitCause::EptViolation);
            self.charge_exit(core, cycles);
        }
        if done {
            self.clear_trap(tenant, page);
        }
        clean
    }
}
