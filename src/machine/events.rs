//! What the machine tells a policy while it runs: memory-controller accesses, TLB
//! misses, faults, and the pages a background scan visits. The policy receives them
//! through [`Observer`], whose methods default to no-ops that the compiler removes.

use super::space::PageInfo;
use super::{Colour, TierId};

/// Where a memory access came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemKind {
    /// A load or store of the program that missed every cache.
    Demand,
    /// A page-walk reference that missed every cache.
    Walk,
    /// A dirty line written back from the last-level cache.
    Writeback,
    /// A read or write of machine metadata by the memory controller (Rainbow's
    /// migration bitmap and the pointer in a migrated page), not through the caches.
    Metadata,
}

/// A memory-controller-level access, as hardware counters at the controller see it.
#[derive(Clone, Copy, Debug)]
pub struct MemEvent {
    pub core: usize,
    pub paddr: u64,
    pub tier: TierId,
    pub write: bool,
    pub kind: MemKind,
    pub latency: u64,
}

/// A TLB miss and the walk that served it.
#[derive(Clone, Copy, Debug)]
pub struct TlbMissEvent {
    pub core: usize,
    pub tenant: u16,
    pub vaddr: u64,
    /// Managed-space address of the page (the guest-physical address for VMs).
    pub addr: u64,
    pub huge: bool,
    pub walk_cycles: u64,
}

/// Why a fault was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// First touch of a page: it was just mapped.
    FirstTouch,
    /// TLB miss to a poisoned page.
    Poison,
}

#[derive(Clone, Copy, Debug)]
pub struct FaultEvent {
    pub core: usize,
    pub tenant: u16,
    /// Managed-space address of the faulting page's first byte.
    pub addr: u64,
    /// Page number of the faulting page's first base page (see
    /// [`PageInfo::page`]).
    pub page: u64,
    pub huge: bool,
    pub kind: FaultKind,
}

/// A page visited by a scan that a background thread ran (see
/// `Mechanisms::submit`): Accessed and Dirty as the scan found them, before it
/// cleared them.
#[derive(Clone, Copy, Debug)]
pub struct ScanEvent {
    /// The job the scan belongs to.
    pub job: u64,
    pub page: PageInfo,
}

/// A first touch under [`Placement::Chosen`](super::placement::Placement::Chosen):
/// the page about to be mapped, for the policy to say which tier it prefers.
#[derive(Clone, Copy, Debug)]
pub struct PlaceEvent {
    pub core: usize,
    pub tenant: u16,
    /// Managed-space address that was touched (the page is the one holding it).
    pub addr: u64,
    /// Whether first touch will try a huge page (transparent huge pages, and no
    /// base-page node in the way).
    pub huge: bool,
    /// Free frames of the fast tier now, its reserve included.
    pub fast_free: u64,
}

/// Receives the machine's events while it runs. The engine passes the policy; every
/// method is a no-op by default and inlined away when not overridden. Hooks observe
/// only: a policy acts in `Policy::on_reference`, at epochs or when a job is done.
pub trait Observer {
    #[inline]
    fn on_tlb_miss(&mut self, _e: &TlbMissEvent) {}
    #[inline]
    fn on_memory_access(&mut self, _e: &MemEvent) {}
    #[inline]
    fn on_fault(&mut self, _e: &FaultEvent) {}
    /// A page visited by a background scan.
    #[inline]
    fn on_scan(&mut self, _e: &ScanEvent) {}
    /// The tier a page should be born in, asked on its first touch only when the
    /// policy required `Placement::Chosen` — the one decision an observer makes.
    /// First touch falls back to the other tiers as always when the preferred one
    /// has no room (above its reserve) or is beyond the tenant's quota.
    #[inline]
    fn place(&mut self, _e: &PlaceEvent) -> Birthplace {
        TierId::FAST.into()
    }
}

/// Where a page should be born: a tier, and within it a frame colour (channel, bank,
/// LLC-set bits; see `Mechanisms::colour`). A base page takes a frame of the colour
/// when one is free and any frame of the tier otherwise; a huge page ignores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Birthplace {
    pub tier: TierId,
    pub colour: Colour,
}

impl From<TierId> for Birthplace {
    fn from(tier: TierId) -> Birthplace {
        Birthplace { tier, colour: Colour::ANY }
    }
}

impl Observer for () {}

/// What one reference cost and where it was served.
#[derive(Clone, Copy, Debug, Default)]
pub struct RefOutcome {
    /// Cycles of translation beyond an L1 TLB hit.
    pub translation_cycles: u64,
    /// Latency of the data access beyond an L1 cache hit.
    pub data_cycles: u64,
    /// Physical address that served the data.
    pub paddr: u64,
    /// Cache level that hit, or the number of levels when memory served it.
    pub level: usize,
}
