//! The address spaces: tenants with their page tables, the frame allocator, the
//! reverse map and first-touch placement. Everything that says which frame holds
//! which page lives here, and only the methods below change it.
//!
//! Tenants are processes (one page table, virtual → physical) or virtual machines
//! (a guest page table, guest-virtual → guest-physical, owned by the guest, and an
//! extended page table, guest-physical → host-physical, owned by the host). A
//! tenant's *managed space* is the address space whose pages the host places and
//! moves: virtual addresses for a process, guest-physical addresses for a VM.

use super::alloc::{Colour, FrameAllocator};
use super::error::MechError;
use super::page_table::{LeafAt, NodeFrames, PageTable, ACCESSED, DIRTY, POISONED, PRESENT};
use super::placement::{Placement, Placer};
use super::rmap::{Owner, ReverseMap};
use super::{Birthplace, PageRef, TierId};
use serde::{Deserialize, Serialize};
use std::ops::ControlFlow;

/// Process or virtual machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TenantKind {
    #[default]
    Process,
    Vm,
}

/// The guest side of a VM tenant.
#[derive(Clone, Debug)]
pub struct Guest {
    /// Guest-virtual → guest-physical; its node frames are guest-physical frames.
    pub table: PageTable,
    /// Next free guest-physical frame (the guest allocates its memory linearly).
    next_gpfn: u64,
}

/// Guest-physical frames for the guest's own page-table nodes (taken linearly, never
/// returned). Guest regions are not numbered: pages are numbered in managed space.
struct GuestFrames<'a>(&'a mut u64);

impl NodeFrames for GuestFrames<'_> {
    fn alloc_node_frame(&mut self) -> Option<u64> {
        *self.0 += 1;
        Some(*self.0 - 1)
    }
    fn free_node_frame(&mut self, _frame: u64) {}
    fn new_region(&mut self, _base: u64) -> u32 {
        0
    }
}

/// Host frames for page-table nodes of `tenant`'s managed table: from the fastest
/// tier with room, as Linux allocates page tables locally; regions numbered across all
/// tenants by the reverse map, which keeps whose each region is.
struct HostFrames<'a> {
    alloc: &'a mut FrameAllocator,
    rmap: &'a mut ReverseMap,
    tenant: u16,
}

impl NodeFrames for HostFrames<'_> {
    fn alloc_node_frame(&mut self) -> Option<u64> {
        let f = TierId::first(self.alloc.tier_count()).find_map(|t| self.alloc.alloc(t, Colour::ANY))?;
        self.rmap.set_page_table(f);
        Some(f)
    }
    fn free_node_frame(&mut self, frame: u64) {
        self.rmap.set_free(frame);
        self.alloc.free(frame);
    }
    fn new_region(&mut self, base: u64) -> u32 {
        self.rmap.new_region(self.tenant, base)
    }
}

/// One address space.
#[derive(Clone, Debug)]
pub struct Tenant {
    pub kind: TenantKind,
    /// The managed table: virtual → physical for a process, guest-physical →
    /// host-physical (EPT) for a VM.
    pub table: PageTable,
    pub guest: Option<Guest>,
    /// Data frames of this tenant in each tier (a huge page counts all its frames).
    frames_in: Vec<u64>,
    /// Most frames this tenant may hold in the fast tier; `None` = no limit. First
    /// touch places the tenant's pages elsewhere once it is reached, and moves into
    /// the fast tier that would exceed it are refused (HMM-V's per-VM DRAM, §4.4). A
    /// quota lowered at run time may be exceeded until the policy moves pages out.
    fast_quota: Option<u64>,
    /// Fast frames taken for moves into the fast tier still under way (held against
    /// the quota until the moves count them).
    fast_held: u64,
}

impl Tenant {
    /// Data frames of the tenant in each tier, fastest first.
    pub fn frames_per_tier(&self) -> &[u64] {
        &self.frames_in
    }

    pub fn fast_quota(&self) -> Option<u64> {
        self.fast_quota
    }

    /// Whether `frames` more frames fit in tier `t` under the tenant's quota.
    #[inline]
    fn fits(&self, t: TierId, frames: u64) -> bool {
        t != TierId::FAST || self.fast_quota.is_none_or(|q| self.frames_in[0] + self.fast_held + frames <= q)
    }
}

/// A mapped page as a policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageInfo {
    pub tenant: u16,
    /// Managed-space address of the page's first byte.
    pub addr: u64,
    /// Page number of the page's first base page: dense over the run, never reused,
    /// the same whatever size the page is mapped with or wherever it lives, so that
    /// per-page arrays can be indexed by it (a huge page covers `bytes / 4096`
    /// numbers from this one).
    pub page: u64,
    /// Size of the page in bytes (4 KiB or the huge-page size).
    pub bytes: u64,
    pub huge: bool,
    /// Frame of the page's first 4 KiB.
    pub pfn: u64,
    pub tier: TierId,
    pub accessed: bool,
    pub dirty: bool,
    pub poisoned: bool,
}

impl PageInfo {
    /// The page as mechanisms name it.
    pub fn at(&self) -> PageRef {
        PageRef::new(self.tenant, self.addr)
    }

    /// Base (4 KiB) pages the page covers.
    pub fn base_pages(&self) -> u64 {
        self.bytes >> 12
    }
}

/// A leaf of a managed table, located.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mapped {
    pub slot: usize,
    pub entry: u64,
    pub huge: bool,
    /// Address of the page's first byte.
    pub addr: u64,
}

impl Mapped {
    pub fn pfn(&self) -> u64 {
        self.entry >> 12
    }
}

/// Where first touch put a page.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Placed {
    pub addr: u64,
    pub pfn: u64,
    pub huge: bool,
    pub frames: u64,
}

/// Tenants, page tables, frames and their owners.
pub struct Space {
    tenants: Vec<Tenant>,
    alloc: FrameAllocator,
    rmap: ReverseMap,
    placer: Placer,
    /// Per tier: [first frame, one past the last).
    bounds: Vec<(u64, u64)>,
    /// Per tier: free frames first touch leaves alone while another tier has room (an
    /// allocator that falls back to the next node below a watermark, as Linux's does).
    reserve: Vec<u64>,
    huge_frames: u64,
    thp: bool,
}

impl Space {
    /// Tiers of `frames` base frames each (fastest first), one tenant per entry of
    /// `kinds` with page tables of `levels` levels. With `hide_fast`, the fast tier
    /// belongs to the machine (Memory Mode's cache): no page or page table gets a
    /// frame of it.
    pub(crate) fn new(frames: &[u64], kinds: &[TenantKind], levels: u32, huge_shift: u32, thp: bool, placement: Placement, hide_fast: bool) -> anyhow::Result<Space> {
        let huge_frames = 1u64 << (huge_shift - 12);
        let mut alloc = FrameAllocator::new(frames, huge_frames);
        let mut rmap = ReverseMap::new(alloc.frame_limit(), huge_shift);
        if hide_fast {
            alloc.take_all(TierId::FAST);
            let base = alloc.base(TierId::FAST);
            for f in base..base + alloc.frames(TierId::FAST) {
                rmap.set_metadata(f);
            }
        }
        let mut tenants = Vec::new();
        for (ti, &kind) in kinds.iter().enumerate() {
            let mut hf = HostFrames { alloc: &mut alloc, rmap: &mut rmap, tenant: ti as u16 };
            let table = PageTable::new(levels, huge_shift, &mut hf).ok_or_else(|| anyhow::anyhow!("machine.tiers: no memory left for page tables"))?;
            let guest = (kind == TenantKind::Vm).then(|| {
                let mut next_gpfn = 0;
                let table = PageTable::new(levels, huge_shift, &mut GuestFrames(&mut next_gpfn)).expect("guest frames are unlimited");
                Guest { table, next_gpfn }
            });
            tenants.push(Tenant { kind, table, guest, frames_in: vec![0; frames.len()], fast_quota: None, fast_held: 0 });
        }
        let bounds = TierId::first(frames.len()).map(|t| (alloc.base(t), alloc.base(t) + alloc.frames(t))).collect();
        let reserve = vec![0; frames.len()];
        Ok(Space { tenants, alloc, rmap, placer: Placer::new(placement, frames.len()), bounds, reserve, huge_frames, thp })
    }

    /// Where first touch puts pages.
    pub fn placement(&self) -> Placement {
        self.placer.mode()
    }

    /// Frames first touch placed in tier `t` (where pages were born, whatever moved
    /// them since).
    pub fn first_touch_frames_in(&self, t: TierId) -> u64 {
        self.placer.placed_in(t)
    }

    pub fn tenants(&self) -> &[Tenant] {
        &self.tenants
    }

    pub(crate) fn tenant_mut(&mut self, t: u16) -> &mut Tenant {
        &mut self.tenants[t as usize]
    }

    pub(crate) fn allocator(&self) -> &FrameAllocator {
        &self.alloc
    }

    /// Counts free frames per colour over physical-address bits `bits` from now on
    /// (`machine.colour_bits`).
    pub(crate) fn set_colour_bits(&mut self, bits: &[u8]) {
        if !bits.is_empty() {
            self.alloc.set_colour_bits(bits);
        }
    }

    pub(crate) fn tier_count(&self) -> usize {
        self.bounds.len()
    }

    /// Per tier: [first frame, one past the last).
    pub(crate) fn bounds(&self) -> &[(u64, u64)] {
        &self.bounds
    }

    /// The tier holding frame `pfn`.
    #[inline]
    pub fn tier_of(&self, pfn: u64) -> TierId {
        TierId::holding(&self.bounds, pfn)
    }

    /// The tier of the frame holding base page `vpn` of `tenant`'s managed space, if
    /// it is mapped.
    pub(crate) fn managed_tier(&self, tenant: u16, vpn: u64) -> Option<TierId> {
        let m = self.mapped(PageRef::new(tenant, vpn << 12)).ok()?;
        Some(self.tier_of(m.pfn() + (vpn - (m.addr >> 12))))
    }

    pub fn huge_frames(&self) -> u64 {
        self.huge_frames
    }

    pub(crate) fn huge_bytes(&self) -> u64 {
        self.huge_frames << 12
    }

    /// Bytes of a page of the given size.
    #[inline]
    pub(crate) fn page_bytes(&self, huge: bool) -> u64 {
        if huge {
            self.huge_bytes()
        } else {
            4096
        }
    }

    /// Owner of frame `pfn` per the reverse map.
    #[inline]
    pub fn owner(&self, pfn: u64) -> Owner {
        self.rmap.owner(pfn)
    }

    /// Gives the `frames` frames from `pfn` to the base pages of `page` (its first
    /// base page, then the next ones, as a huge page's frames are), as their data or,
    /// with `copy`, as their second copy.
    pub(crate) fn set_owners(&mut self, pfn: u64, frames: u64, page: PageRef, copy: bool) {
        let first = self.page_number(page.tenant, page.addr);
        for i in 0..frames {
            self.rmap.set_page(pfn + i, first + i, copy);
            debug_assert_eq!(
                self.rmap.owner(pfn + i),
                if copy { Owner::Copy { tenant: page.tenant, addr: page.addr + (i << 12) } } else { Owner::Data { tenant: page.tenant, addr: page.addr + (i << 12) } },
                "the region table gives back the page's tenant and address"
            );
        }
    }

    pub(crate) fn reverse_map(&self) -> &ReverseMap {
        &self.rmap
    }

    /// Frames tier `t` has in use (data, page tables and metadata).
    pub fn used_frames(&self, t: TierId) -> u64 {
        self.alloc.frames(t) - self.alloc.free_frames(t)
    }

    /// Data frames of every tenant in tier `t`.
    pub fn data_frames_in(&self, t: TierId) -> u64 {
        self.tenants.iter().map(|x| x.frames_in[t.index()]).sum()
    }

    pub(crate) fn check_tier(&self, t: TierId) -> Result<(), MechError> {
        if t.index() < self.bounds.len() {
            Ok(())
        } else {
            Err(MechError::NoSuchTier { tier: t })
        }
    }

    /// Sets the free frames of tier `t` that first touch leaves alone while another
    /// tier has room.
    pub(crate) fn set_reserve(&mut self, t: TierId, frames: u64) {
        self.reserve[t.index()] = frames;
    }

    /// Sets the tenant's fast-tier quota in frames (`None` = unlimited).
    pub(crate) fn set_fast_quota(&mut self, tenant: u16, frames: Option<u64>) {
        self.tenants[tenant as usize].fast_quota = frames;
    }

    /// Whether `frames` more frames of `tenant` fit in tier `t` under its quota.
    pub(crate) fn fits(&self, tenant: u16, t: TierId, frames: u64) -> Result<(), MechError> {
        let x = &self.tenants[tenant as usize];
        if x.fits(t, frames) {
            Ok(())
        } else {
            Err(MechError::OverQuota { tenant, quota_frames: x.fast_quota.unwrap_or(0) })
        }
    }

    /// Holds (or, with `release`, lets go of) `frames` fast frames against `tenant`'s
    /// quota for a move under way.
    pub(crate) fn hold_fast(&mut self, tenant: u16, frames: u64, release: bool) {
        let h = &mut self.tenants[tenant as usize].fast_held;
        *h = if release { *h - frames } else { *h + frames };
    }

    /// Records that `frames` of `tenant` moved from tier `from` to tier `to`.
    pub(crate) fn count_move(&mut self, tenant: u16, from: TierId, to: TierId, frames: u64) {
        let t = &mut self.tenants[tenant as usize];
        t.frames_in[from.index()] -= frames;
        t.frames_in[to.index()] += frames;
    }

    /// Allocates a frame of the given size (and colour, for base frames) in tier `t`.
    pub(crate) fn alloc(&mut self, t: TierId, huge: bool, colour: Colour) -> Result<u64, MechError> {
        let f = if huge { self.alloc.alloc_huge(t) } else { self.alloc.alloc(t, colour) };
        f.ok_or(MechError::NoFreeFrame { tier: t, huge })
    }

    /// Returns a page's frames to the allocator and clears their owners.
    pub(crate) fn release(&mut self, pfn: u64, frames: u64) {
        for f in pfn..pfn + frames {
            self.rmap.set_free(f);
        }
        if frames > 1 {
            self.alloc.free_huge(pfn);
        } else {
            self.alloc.free(pfn);
        }
    }

    /// Reserves `frames` base frames of tier `t` for machine metadata.
    pub(crate) fn reserve_metadata(&mut self, t: TierId, frames: u64) -> anyhow::Result<Vec<u64>> {
        (0..frames)
            .map(|_| {
                let f = self.alloc.alloc(t, Colour::ANY).ok_or_else(|| anyhow::anyhow!("{}: no room for machine metadata", super::TiersConfig::field(t)))?;
                self.rmap.set_metadata(f);
                Ok(f)
            })
            .collect()
    }

    /// Reserves `count` huge frames of tier `t` for machine use; returns their first
    /// frames.
    pub(crate) fn reserve_huge_metadata(&mut self, t: TierId, count: u64) -> anyhow::Result<Vec<u64>> {
        (0..count)
            .map(|_| {
                let f = self.alloc.alloc_huge(t).ok_or_else(|| anyhow::anyhow!("{}: no room for machine metadata", super::TiersConfig::field(t)))?;
                for i in 0..self.huge_frames() {
                    self.rmap.set_metadata(f + i);
                }
                Ok(f)
            })
            .collect()
    }

    /// The leaf mapping `page`, or why there is none.
    #[inline]
    pub(crate) fn mapped(&self, page: PageRef) -> Result<Mapped, MechError> {
        let t = self.tenants.get(page.tenant as usize).ok_or(MechError::NoSuchTenant { tenant: page.tenant })?;
        let leaf = t.table.walk(page.addr, None).ok_or(MechError::NotMapped { page })?;
        let mask = self.page_bytes(leaf.huge) - 1;
        Ok(Mapped { slot: leaf.slot, entry: t.table.entry(leaf.slot), huge: leaf.huge, addr: page.addr & !mask })
    }

    /// The page view of a leaf of `tenant`'s table.
    fn info(&self, tenant: u16, l: LeafAt) -> PageInfo {
        let e = self.tenants[tenant as usize].table.entry(l.slot);
        PageInfo {
            tenant,
            addr: l.addr,
            page: l.page,
            bytes: self.page_bytes(l.huge),
            huge: l.huge,
            pfn: e >> 12,
            tier: self.tier_of(e >> 12),
            accessed: e & ACCESSED != 0,
            dirty: e & DIRTY != 0,
            poisoned: e & POISONED != 0,
        }
    }

    /// The page holding `page.addr`, if mapped.
    pub fn page_info(&self, page: PageRef) -> Result<PageInfo, MechError> {
        let m = self.mapped(page)?;
        let number = self.tenants[page.tenant as usize].table.page_number(m.addr).expect("a mapped page's region is numbered");
        Ok(self.info(page.tenant, LeafAt { addr: m.addr, slot: m.slot, page: number, huge: m.huge }))
    }

    /// Calls `f` with every mapped page of `tenant` starting in [`start`, `end`), in
    /// address order, until it returns `Break`; returns where to resume, as
    /// [`PageTable::for_each_leaf`].
    pub fn visit(&self, tenant: u16, start: u64, end: u64, f: &mut impl FnMut(PageInfo) -> ControlFlow<()>) -> Option<u64> {
        self.visit_slots(tenant, start, end, &mut |p, _| f(p))
    }

    /// [`Space::visit`], with each page's leaf slot.
    pub(crate) fn visit_slots(&self, tenant: u16, start: u64, end: u64, f: &mut impl FnMut(PageInfo, usize) -> ControlFlow<()>) -> Option<u64> {
        self.tenants[tenant as usize].table.for_each_leaf(start, end, &mut |l| f(self.info(tenant, l), l.slot))
    }

    /// The page number of the base page of `tenant` holding managed address `addr`.
    pub(crate) fn page_number(&self, tenant: u16, addr: u64) -> u64 {
        self.tenants[tenant as usize].table.page_number(addr).expect("a mapped page's region is numbered")
    }

    /// Physical address of the page-table entry at `slot` of `tenant`'s managed table.
    #[inline]
    pub(crate) fn entry_paddr(&self, tenant: u16, slot: usize) -> u64 {
        self.tenants[tenant as usize].table.entry_paddr(slot)
    }

    /// The entry at `slot` of `tenant`'s managed table.
    #[inline]
    pub(crate) fn entry(&self, tenant: u16, slot: usize) -> u64 {
        self.tenants[tenant as usize].table.entry(slot)
    }

    #[inline]
    pub(crate) fn entry_mut(&mut self, tenant: u16, slot: usize) -> &mut u64 {
        self.tenants[tenant as usize].table.entry_mut(slot)
    }

    /// Points the leaf at `slot` to frame `pfn`, keeping its flags.
    pub(crate) fn remap(&mut self, tenant: u16, slot: usize, pfn: u64) {
        let e = self.entry_mut(tenant, slot);
        *e = pfn << 12 | (*e & 0xfff);
    }

    /// Whether first touch of managed address `addr` of `tenant` would try a huge
    /// page: THP is on and no base-page node covers the address.
    pub(crate) fn wants_huge(&self, tenant: u16, addr: u64) -> bool {
        self.thp && self.tenants[tenant as usize].table.small_node(addr).is_none()
    }

    /// Maps the page holding managed address `addr` of `tenant` on first touch where
    /// `prefer` says, or else the placement mode, falling back to any tier with room (a huge page falls
    /// back to a base page in the chosen tier first); a tier's reserve is taken only
    /// when no tier has room above its own. Sets the owners and counts. `None` when
    /// every tier is full (or no frame is left for a page-table node).
    pub(crate) fn first_touch(&mut self, tenant: u16, addr: u64, prefer: Option<Birthplace>) -> Option<Placed> {
        let ti = tenant as usize;
        let want_huge = self.wants_huge(tenant, addr);
        let tiers = self.bounds.len();
        let (first, colour) = match prefer {
            Some(b) if b.tier.index() < tiers => (b.tier, b.colour),
            _ => (self.placer.choose(&self.alloc), Colour::ANY),
        };
        let mut placed = None;
        // First above every tier's reserve, then into the reserves; the chosen tier
        // first, then the others in order.
        'search: for into_reserve in [false, true] {
            for t in std::iter::once(first).chain(TierId::first(tiers).filter(|&t| t != first)) {
                let keep = if into_reserve { 0 } else { self.reserve[t.index()] };
                let free = self.alloc.free_frames(t);
                let room = |frames: u64| free >= keep + frames;
                let x = &self.tenants[ti];
                if want_huge && x.fits(t, self.huge_frames) && room(self.huge_frames) {
                    if let Some(f) = self.alloc.alloc_huge(t) {
                        placed = Some((t, f, true));
                        break 'search;
                    }
                }
                if x.fits(t, 1) && room(1) {
                    let coloured = if t == first && colour != Colour::ANY { self.alloc.alloc(t, colour) } else { None };
                    if let Some(f) = coloured.or_else(|| self.alloc.alloc(t, Colour::ANY)) {
                        placed = Some((t, f, false));
                        break 'search;
                    }
                }
            }
        }
        let (t, pfn, huge) = placed?;
        let page = addr & !(self.page_bytes(huge) - 1);
        let frames = if huge { self.huge_frames } else { 1 };
        let mut hf = HostFrames { alloc: &mut self.alloc, rmap: &mut self.rmap, tenant };
        self.tenants[ti].table.map(page, pfn, huge, 0, &mut hf)?;
        self.tenants[ti].frames_in[t.index()] += frames;
        self.placer.placed(t, frames);
        self.set_owners(pfn, frames, PageRef::new(tenant, page), false);
        Some(Placed { addr: page, pfn, huge, frames })
    }

    /// The guest maps the guest-virtual page holding `gva` on its first touch, linearly
    /// in guest-physical space (huge with THP).
    pub(crate) fn guest_first_touch(&mut self, tenant: u16, gva: u64) {
        let guest = self.tenants[tenant as usize].guest.as_mut().expect("VM tenant");
        let frames = if self.thp { self.huge_frames } else { 1 };
        let gpfn = guest.next_gpfn.div_ceil(frames) * frames;
        guest.next_gpfn = gpfn + frames;
        let mut next = guest.next_gpfn;
        guest.table.map(gva, gpfn, self.thp, 0, &mut GuestFrames(&mut next)).expect("guest frames are unlimited");
        guest.next_gpfn = next;
    }

    /// Splits the huge mapping of `region` into a node of base-page entries over the
    /// same frames; returns the node's first slot.
    pub(crate) fn split_mapping(&mut self, tenant: u16, region: u64) -> Result<usize, MechError> {
        let mut hf = HostFrames { alloc: &mut self.alloc, rmap: &mut self.rmap, tenant };
        self.tenants[tenant as usize].table.split(region, &mut hf).ok_or(MechError::NoTableFrame)
    }

    /// Replaces the base-page node of `region` by one huge leaf of `huge_pfn`.
    pub(crate) fn merge_mapping(&mut self, tenant: u16, region: u64, huge_pfn: u64, flags: u64) {
        let mut hf = HostFrames { alloc: &mut self.alloc, rmap: &mut self.rmap, tenant };
        self.tenants[tenant as usize].table.merge(region, huge_pfn, flags, &mut hf);
    }

    /// The leaf entries of the base-page node under `region` (merge), or why not.
    pub(crate) fn region_entries(&self, page: PageRef) -> Result<Vec<u64>, MechError> {
        let t = self.tenants.get(page.tenant as usize).ok_or(MechError::NoSuchTenant { tenant: page.tenant })?;
        let region = page.addr & !(self.huge_bytes() - 1);
        let (_, first) = t.table.small_node(region).ok_or(if t.table.walk(region, None).is_some() {
            MechError::AlreadyHuge { page }
        } else {
            MechError::NotMapped { page }
        })?;
        let entries: Vec<u64> = (0..self.huge_frames as usize).map(|i| t.table.entry(first + i)).collect();
        let missing = entries.iter().filter(|&&e| e & PRESENT == 0).count() as u64;
        if missing > 0 {
            return Err(MechError::Incomplete { page, missing });
        }
        Ok(entries)
    }

    /// The managed-space address of `vaddr`: itself for a process, its guest-physical
    /// address for a VM (`None` if the guest has not mapped it).
    pub fn managed_addr(&self, tenant: u16, vaddr: u64) -> Option<u64> {
        let t = &self.tenants[tenant as usize];
        match &t.guest {
            None => Some(vaddr),
            Some(g) => {
                let leaf = g.table.walk(vaddr, None)?;
                let e = g.table.entry(leaf.slot);
                let mask = self.page_bytes(leaf.huge) - 1;
                Some((e >> 12) << 12 | (vaddr & mask))
            }
        }
    }

    /// Translation without cost or side effects: the frame of the TLB-entry-sized
    /// page holding `vaddr` and whether that entry is huge.
    pub fn translate_quiet(&self, tenant: u16, vaddr: u64) -> Option<(u64, bool)> {
        let t = &self.tenants[tenant as usize];
        let huge_mask = self.huge_bytes() - 1;
        match &t.guest {
            None => {
                let leaf = t.table.walk(vaddr, None)?;
                Some((t.table.entry(leaf.slot) >> 12, leaf.huge))
            }
            Some(g) => {
                let gl = g.table.walk(vaddr, None)?;
                let gmask = if gl.huge { huge_mask } else { 0xfff };
                let gpa = (g.table.entry(gl.slot) >> 12) << 12 | (vaddr & gmask);
                let hl = t.table.walk(gpa, None)?;
                let he = t.table.entry(hl.slot);
                if gl.huge && hl.huge {
                    Some((he >> 12, true))
                } else {
                    let hmask = if hl.huge { huge_mask } else { 0xfff };
                    Some((((he >> 12) << 12 | (gpa & hmask)) >> 12, false))
                }
            }
        }
    }
}
