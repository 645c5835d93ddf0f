//! Translation after a miss in the L1 TLBs: the L2 TLB, the page walk of a process
//! (one dimension) or a VM (two), the paging-structure caches that let a walk skip
//! its upper levels, the walk's references through the caches, poison faults and the
//! first touch that maps a page. The walk's references go through the caches, or
//! with `machine.page_table.walk_reads = "uncached"` straight to memory (Rainbow
//! §III-E's cost model of a walk, 4 × t_dr).

use super::page_table::{WalkPath, ACCESSED, DIRTY, POISONED, TRAP};
use super::placement::Placement;
use super::psc::PagingStructureCaches;
use super::sampled::{fast, FIT};
use super::tlb::{TlbEntry, TlbHit, NO_SLOT};
use super::{FaultEvent, FaultKind, Machine, MemKind, Observer, PlaceEvent, Redirect, TierId, TlbMissEvent};

impl<R: Redirect> Machine<R> {
    /// One page-walk reference (or PTE update) of `core` to `pa` at cycle `at`: through
    /// the caches, recorded for the cost model when fitting, or priced by the model in
    /// fast-forward (reaching memory as often as the model says). Returns the level that
    /// served it and its latency.
    #[inline(always)]
    pub(super) fn walk_cached<const M: u8, O: Observer>(&mut self, core: usize, pa: u64, write: bool, at: u64, obs: &mut O) -> (usize, u64) {
        if fast(M) {
            let (lat, memory) = self.models[core].walk();
            if memory {
                self.redirect.memory(&mut self.mem.tiers, core, pa, false, MemKind::Walk, at, false, obs);
            }
            return (if memory { self.mem.caches.depth() } else { 0 }, lat);
        }
        let (level, lat) = self.mem.cached(&mut self.redirect, core, pa, write, MemKind::Walk, at, false, obs);
        if M == FIT {
            self.models[core].record_walk(level, lat);
        }
        if M == super::epochs::CALIBRATE && level + 1 >= self.mem.caches.depth() {
            self.mem.caches.record(core, pa);
        }
        (level, lat)
    }

    /// One page-walk reference (or PTE update) of `core` to `pa` at cycle `at`, where
    /// `machine.page_table.walk_reads` sends it: through the caches
    /// ([`Machine::walk_cached`]) or to memory ([`Machine::walk_uncached`]). Returns
    /// the level that served it (the number of cache levels for memory) and its
    /// latency.
    #[inline(always)]
    pub(super) fn walk_ref<const M: u8, O: Observer>(&mut self, core: usize, pa: u64, write: bool, at: u64, obs: &mut O) -> (usize, u64) {
        if self.timing.walk_uncached {
            self.walk_uncached::<M, O>(core, pa, write, at, obs)
        } else {
            self.walk_cached::<M, O>(core, pa, write, at, obs)
        }
    }

    /// One page-walk reference (or PTE update) of `core` to `pa` at cycle `at` that
    /// bypasses the caches (`walk_reads = "uncached"`, Rainbow §III-E's cost model):
    /// the tier holding the line serves it at cycle `at`, at its latency (row buffer
    /// and queueing included), recorded for the cost model when fitting. In
    /// fast-forward the access reaches its tier all the same, but its latency is the
    /// fitting window's mean, as for every memory access there: the tier's banks see
    /// a thinned data stream then, whose row-buffer locality is not the real one.
    /// Returns the number of cache levels (memory served it) and the latency.
    #[inline(never)]
    fn walk_uncached<const M: u8, O: Observer>(&mut self, core: usize, pa: u64, write: bool, at: u64, obs: &mut O) -> (usize, u64) {
        let lat = self.redirect.memory(&mut self.mem.tiers, core, pa, write, MemKind::Walk, at, false, obs);
        let depth = self.mem.caches.depth();
        if M == FIT {
            self.models[core].record_walk(depth, lat);
        }
        if fast(M) {
            return (depth, self.models[core].uncached_walk());
        }
        (depth, lat)
    }

    /// [`Machine::walk_refs`] with the walker's reads uncached: each reference read
    /// from memory when the previous one has completed.
    #[cold]
    #[inline(never)]
    fn walk_refs_uncached<const M: u8, O: Observer>(&mut self, core: usize, refs: &[u64], start: u64, obs: &mut O) -> u64 {
        let mut cycles = 0;
        for &pa in refs {
            cycles += self.walk_uncached::<M, O>(core, pa, false, start + cycles, obs).1;
        }
        let s = &mut self.cores[core].stats;
        s.walk_references += refs.len() as u64;
        s.walk_memory_accesses += refs.len() as u64;
        cycles
    }

    /// Walk references `refs` (physical addresses of page-table entries) through the
    /// caches — or to memory, with `machine.page_table.walk_reads = "uncached"` — each
    /// issued when the previous one has completed, from cycle `start`; returns their
    /// latency. The walk's counters are updated once. (Inlined into the walks: a call
    /// of its own cost about 18 instructions a TLB miss.)
    #[inline(always)]
    fn walk_refs<const M: u8, O: Observer>(&mut self, core: usize, refs: &[u64], start: u64, obs: &mut O) -> u64 {
        if self.timing.walk_uncached {
            return self.walk_refs_uncached::<M, O>(core, refs, start, obs);
        }
        let depth = self.mem.caches.depth();
        let mut cycles = 0;
        let mut memory = 0;
        for &pa in refs {
            let (level, lat) = self.walk_cached::<M, O>(core, pa, false, start + cycles, obs);
            cycles += lat;
            memory += (level == depth) as u64;
        }
        let s = &mut self.cores[core].stats;
        s.walk_references += refs.len() as u64;
        s.walk_memory_accesses += memory;
        cycles
    }

    /// Looks up the paging-structure caches of `core` for a walk of `addr` that reads
    /// `len` entries, top level first (`guest`: of a VM's guest table). Returns how many
    /// leading entries the walk skips (a hit at level k leaves levels k − 1 down to the
    /// leaf, which is always read) and the lookup's cycles; (0, 0) with the caches off.
    #[inline]
    fn psc_lookup(&mut self, core: usize, tenant: u16, guest: bool, addr: u64, len: usize) -> (usize, u64) {
        let levels = self.cfg.page_table.levels;
        let Some(psc) = self.cores[core].tlb.psc_mut() else { return (0, 0) };
        (psc_skip(psc, levels, tenant, guest, addr, len), self.timing.psc_cycles)
    }

    /// Fills the paging-structure caches of `core` with the non-leaf entries a walk of
    /// `addr` read: entries `from..` of `path` but the leaf, each pointing to the table
    /// that holds the path's next entry. For a guest table (`guest`), `path` holds the
    /// host-physical addresses of the guest's entries, as combined entries cache them.
    #[inline]
    fn psc_fill(&mut self, core: usize, tenant: u16, guest: bool, addr: u64, from: usize, path: &WalkPath) {
        let levels = self.cfg.page_table.levels;
        let Some(psc) = self.cores[core].tlb.psc_mut() else { return };
        psc_fill_path(psc, levels, tenant, guest, addr, from, path);
    }

    /// Translates `addr` in tenant's managed table with a timed walk starting `after`
    /// cycles into the reference, mapping the page on first touch; the references the
    /// paging-structure caches skip are not issued. Returns (leaf entry, whether it is
    /// huge, walk cycles, leaf slot, host address of the leaf's node). (Inlined into the
    /// TLB miss, whose common part it is, and into the nested walk.)
    #[inline(always)]
    fn managed_walk<const M: u8, O: Observer>(&mut self, core: usize, tenant: u16, addr: u64, write: bool, after: u64, obs: &mut O) -> Option<(u64, bool, u64, usize, usize)> {
        let mut path = WalkPath::default();
        let mut extra = 0;
        // The walk sets the leaf's Accessed and Dirty bits as it reads it: nothing the
        // walk's references do through the caches reads the table.
        let table = &mut self.space.tenant_mut(tenant).table;
        let (leaf, e, newly_dirty, node) = match table.walk_marking(addr, &mut path, write) {
            Some((l, e, d)) => (l, e, d, table.node_host_addr(l.slot)),
            None => {
                extra = self.first_touch(core, tenant, addr, obs)?;
                path = WalkPath::default();
                let table = &mut self.space.tenant_mut(tenant).table;
                let (l, e, d) = table.walk_marking(addr, &mut path, write).expect("page mapped by first touch");
                (l, e, d, table.node_host_addr(l.slot))
            }
        };
        // The core borrowed once for its clock and paging-structure caches.
        let levels = self.cfg.page_table.levels;
        let c = &mut self.cores[core];
        let (skip, lookup) = match c.tlb.psc_mut() {
            Some(psc) => {
                let skip = psc_skip(psc, levels, tenant, false, addr, path.len);
                psc_fill_path(psc, levels, tenant, false, addr, skip, &path);
                (skip, self.timing.psc_cycles)
            }
            None => (0, 0),
        };
        let start = c.clock + after + extra + lookup;
        let cycles = self.walk_refs::<M, O>(core, &path.as_slice()[skip..], start, obs) + extra + lookup;
        // PML is on only for VMs, whose managed table is the EPT.
        if newly_dirty && self.vmx.pml_on(tenant) {
            self.pml_log(core, tenant, addr);
        }
        Some((e, leaf.huge, cycles, leaf.slot, node))
    }

    /// A two-dimensional walk: every guest page-table reference is a guest-physical
    /// address that needs its own walk of the extended page table (up to 24 references
    /// for 4 KiB/4 KiB with 4 levels, 15 for huge/huge), fewer when the paging-structure
    /// caches hold upper entries of either dimension. Returns the host leaf entry of
    /// the data page adjusted to the TLB entry's size, whether that size is huge, the
    /// cycles, the guest-physical address, and whether the host (EPT) page is huge.
    fn nested_walk<const M: u8, O: Observer>(&mut self, core: usize, tenant: u16, gva: u64, write: bool, obs: &mut O) -> Option<(u64, bool, u64, u64, bool)> {
        let huge_mask = self.space.huge_bytes() - 1;
        let mut gpath = WalkPath::default();
        let guest = &self.space.tenants()[tenant as usize].guest.as_ref().expect("VM tenant").table;
        let gleaf = match guest.walk(gva, Some(&mut gpath)) {
            Some(l) => l,
            None => {
                self.guest_first_touch(tenant, gva);
                gpath = WalkPath::default();
                let guest = &self.space.tenants()[tenant as usize].guest.as_ref().expect("VM tenant").table;
                guest.walk(gva, Some(&mut gpath)).expect("just mapped")
            }
        };
        let (first, mut cycles) = self.psc_lookup(core, tenant, true, gva, gpath.len);
        // With EPT A/D logging on (PML), accesses to guest page-table entries count as
        // writes for the EPT's A/D bits (module `vmx`).
        let gpt_write = self.vmx.pml_on(tenant);
        // The host-physical addresses of the guest entries read.
        let mut hpath = WalkPath { len: gpath.len, ..WalkPath::default() };
        // Each guest page-table entry: translate its guest-physical address, then read it.
        for i in first..gpath.len {
            let gpa = gpath.addrs[i];
            // After a hit, the combined paging-structure-cache entry holds the host
            // address of the table of the first entry read: no EPT walk for that one.
            let cached = if i == first && first > 0 { self.host_addr(tenant, gpa) } else { None };
            let hpa = match cached {
                Some(hpa) => hpa,
                None => {
                    let (e, huge, c, _, _) = self.managed_walk::<M, O>(core, tenant, gpa, gpt_write, cycles, obs)?;
                    cycles += c;
                    let mask = if huge { huge_mask } else { 0xfff };
                    (e >> 12) << 12 | (gpa & mask)
                }
            };
            hpath.addrs[i] = hpa;
            let at = self.cores[core].clock + cycles;
            let (_, lat) = self.walk_ref::<M, O>(core, hpa, false, at, obs);
            cycles += lat;
            self.cores[core].stats.walk_references += 1;
        }
        self.psc_fill(core, tenant, true, gva, first, &hpath);
        let guest = &mut self.space.tenant_mut(tenant).guest.as_mut().expect("VM tenant").table;
        let ge = guest.entry_mut(gleaf.slot);
        *ge |= ACCESSED | if write { DIRTY } else { 0 };
        let guest_dirty = *ge & DIRTY != 0;
        let gmask = if gleaf.huge { huge_mask } else { 0xfff };
        let gpa = (*ge >> 12) << 12 | (gva & gmask);
        let (he, hhuge, c, _, _) = self.managed_walk::<M, O>(core, tenant, gpa, write, cycles, obs)?;
        cycles += c;
        // The combined entry is dirty only if both dimensions are: a first store sets
        // whichever Dirty bit is still clear.
        let he = if guest_dirty { he } else { he & !DIRTY };
        let flags = he & 0xfff;
        if gleaf.huge && hhuge {
            Some((he, true, cycles, gpa, hhuge))
        } else {
            // Cache at 4 KiB: the host frame of this base page.
            let hmask = if hhuge { huge_mask } else { 0xfff };
            let hpfn = ((he >> 12) << 12 | (gpa & hmask)) >> 12;
            Some((hpfn << 12 | flags, false, cycles, gpa, hhuge))
        }
    }

    /// Translates after a miss in the L1 TLBs: the L2 TLB, whose hit refills the L1;
    /// on a miss there too, a walk (two-dimensional for VMs) that takes poison faults
    /// and fills the TLBs. Returns the entry, the cycles spent and the TLB level that
    /// hit (`None` after a walk); `None` if memory ran out.
    #[inline(never)]
    pub(super) fn translate_miss<const M: u8, O: Observer>(&mut self, core: usize, tenant: u16, vaddr: u64, write: bool, obs: &mut O) -> Option<(TlbEntry, u64, Option<TlbHit>)> {
        if let Some(e) = self.cores[core].tlb.lookup_l2(tenant, vaddr) {
            return Some((e, self.timing.l2_tlb_cycles, Some(TlbHit::L2)));
        }
        self.cores[core].stats.tlb_misses += 1;
        let (entry, huge, mut cycles, addr, managed_huge, slot, node) = if self.space.tenants()[tenant as usize].guest.is_none() {
            let (e, huge, c, slot, node) = self.managed_walk::<M, O>(core, tenant, vaddr, write, 0, obs)?;
            (e, huge, c, vaddr, huge, slot as u32, (!huge).then_some(node))
        } else {
            let (e, huge, c, gpa, ept_huge) = self.nested_walk::<M, O>(core, tenant, vaddr, write, obs)?;
            (e, huge, c, gpa, ept_huge, NO_SLOT, None)
        };
        let poisoned = entry & POISONED != 0;
        if poisoned {
            // BadgerTrap (Thermostat §3.3): the walk finds a poisoned PTE and traps; the
            // handler installs the translation, so later hits in the TLB do not fault.
            let fault = self.timing.poison_fault_cycles;
            cycles += fault;
            self.cores[core].stats.poison_faults += 1;
            self.cores[core].stats.fault_cycles += fault;
            let page = addr & !(self.space.page_bytes(managed_huge) - 1);
            let number = self.space.page_number(tenant, page);
            obs.on_fault(&FaultEvent { core, tenant, addr: page, page: number, huge: managed_huge, kind: FaultKind::Poison });
        }
        // A page that is moving, or whose move left its entry unfilled.
        let clean = entry & TRAP != 0 && self.spring_trap(core, tenant, addr, managed_huge, write);
        obs.on_tlb_miss(&TlbMissEvent { core, tenant, vaddr, addr, huge, walk_cycles: cycles });
        // The core borrowed once for the rest (nothing above reads what it changes).
        let c = &mut self.cores[core];
        if let Some(node) = node {
            c.leaf_hints.note(vaddr, node);
        }
        c.stats.walk_cycles += cycles - if poisoned { self.timing.poison_fault_cycles } else { 0 };
        // (A VM page mapped small in either dimension comes back from the nested walk
        // as a 4 KiB translation.)
        let tlb_entry = TlbEntry { base_pfn: entry >> 12, huge, dirty: entry & DIRTY != 0 && !clean, slot };
        c.tlb.fill(tenant, vaddr, tlb_entry);
        Some((tlb_entry, cycles, None))
    }

    /// Maps the page holding managed address `addr` of `tenant` on first touch.
    /// Returns the fault cycles, or `None` (with `self.error` set) when memory is full.
    #[cold]
    #[inline(never)]
    pub(super) fn first_touch<O: Observer>(&mut self, core: usize, tenant: u16, addr: u64, obs: &mut O) -> Option<u64> {
        let prefer = (self.space.placement() == Placement::Chosen).then(|| {
            let fast_free = self.space.allocator().free_frames(TierId::FAST);
            obs.place(&PlaceEvent { core, tenant, addr, huge: self.space.wants_huge(tenant, addr), fast_free })
        });
        let Some(p) = self.space.first_touch(tenant, addr, prefer) else {
            self.error.get_or_insert_with(|| "out of memory: every tier is full (raise a tier's capacity)".into());
            return None;
        };
        let page = self.space.page_number(tenant, p.addr);
        if let Some(s) = &mut self.shadow {
            s.mapped(page, p.pfn, p.frames);
        }
        self.epochs_log(tenant, p.addr, p.frames << 12);
        let c = &mut self.cores[core];
        c.stats.first_touch_faults += 1;
        c.stats.fault_cycles += self.timing.page_fault_cycles;
        obs.on_fault(&FaultEvent { core, tenant, addr: p.addr, page, huge: p.huge, kind: FaultKind::FirstTouch });
        Some(self.timing.page_fault_cycles)
    }
}

/// How many leading entries of a walk of `addr` reading `len` entries the
/// paging-structure caches `psc` let it skip (a hit at level k leaves levels k − 1 down
/// to the leaf, which is always read), in a table of `levels` levels.
#[inline]
fn psc_skip(psc: &mut PagingStructureCaches, levels: u32, tenant: u16, guest: bool, addr: u64, len: usize) -> usize {
    psc.lookup(tenant, guest, addr).map_or(0, |k| ((levels - k + 1) as usize).min(len - 1))
}

/// Fills `psc` with the non-leaf entries a walk of `addr` read: entries `from..` of
/// `path` but the leaf, each pointing to the table that holds the path's next entry.
#[inline]
fn psc_fill_path(psc: &mut PagingStructureCaches, levels: u32, tenant: u16, guest: bool, addr: u64, from: usize, path: &WalkPath) {
    for i in from..path.len - 1 {
        psc.fill(tenant, guest, addr, levels - i as u32, path.addrs[i + 1] >> 12);
    }
}
