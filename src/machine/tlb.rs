//! Per-core translation look-aside buffers: split L1 TLBs for base (4 KiB) and huge
//! pages, and an L2 TLB that is either split the same way or unified.
//!
//! Entries are keyed by tenant and virtual page number at the entry's page size and
//! hold the physical frame number of the page's first 4 KiB frame plus a dirty flag
//! (a store through a clean entry must set the PTE's dirty bit, as x86 does). Beside
//! them sit the paging-structure caches of the walker ([`super::psc`]), which the same
//! invalidations reach.

use super::psc::{PagingStructureCaches, PscConfig};
use super::setassoc::{Assoc, Fixed, SetAssoc};
use serde::{Deserialize, Serialize};

/// TLB geometry and latencies. Defaults are Rainbow's Table IV (§IV-A): L1 TLB 32 + 32
/// entries 4-way 1 cycle, L2 TLB 512 + 512 entries 8-way 8 cycles.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlbConfig {
    /// Entries of the L1 TLB for 4 KiB pages.
    pub l1_small_entries: usize,
    /// Associativity of the L1 TLB for 4 KiB pages.
    pub l1_small_ways: usize,
    /// Entries of the L1 TLB for huge pages.
    pub l1_huge_entries: usize,
    /// Associativity of the L1 TLB for huge pages.
    pub l1_huge_ways: usize,
    /// Cycles of an L1 TLB hit (counted as part of the base CPI, reported only).
    pub l1_latency_cycles: u64,
    /// Split L2 TLB (separate arrays per page size) or one unified array.
    pub l2_split: bool,
    /// Entries of the L2 TLB for 4 KiB pages (of the unified L2 TLB when not split).
    pub l2_small_entries: usize,
    /// Associativity of the L2 TLB for 4 KiB pages (of the unified L2 TLB when not split).
    pub l2_small_ways: usize,
    /// Entries of the L2 TLB for huge pages (ignored when unified).
    pub l2_huge_entries: usize,
    /// Associativity of the L2 TLB for huge pages (ignored when unified).
    pub l2_huge_ways: usize,
    /// Extra cycles of a translation that misses L1 and hits L2.
    pub l2_latency_cycles: u64,
    /// The paging-structure caches (`[machine.tlb.psc]`; off by default). Left out of
    /// a report's `config` while off.
    #[serde(skip_serializing_if = "PscConfig::is_off")]
    pub psc: PscConfig,
}

impl Default for TlbConfig {
    fn default() -> Self {
        TlbConfig {
            l1_small_entries: 32,
            l1_small_ways: 4,
            l1_huge_entries: 32,
            l1_huge_ways: 4,
            l1_latency_cycles: 1,
            l2_split: true,
            l2_small_entries: 512,
            l2_small_ways: 8,
            l2_huge_entries: 512,
            l2_huge_ways: 8,
            l2_latency_cycles: 8,
            psc: PscConfig::default(),
        }
    }
}

impl TlbConfig {
    /// Checks the geometry, the paging-structure caches' against a table of `levels`
    /// levels.
    pub fn validate(&self, levels: u32) -> anyhow::Result<()> {
        let mut arrays = vec![
            ("l1_small", self.l1_small_entries, self.l1_small_ways),
            ("l1_huge", self.l1_huge_entries, self.l1_huge_ways),
            ("l2_small", self.l2_small_entries, self.l2_small_ways),
        ];
        if self.l2_split {
            arrays.push(("l2_huge", self.l2_huge_entries, self.l2_huge_ways));
        }
        for (name, entries, ways) in arrays {
            if ways == 0 || entries == 0 || entries % ways != 0 || !(entries / ways).is_power_of_two() {
                anyhow::bail!(
                    "machine.tlb.{name}_entries / {name}_ways: entries ({entries}) must be a non-zero multiple of ways ({ways}) giving a power-of-two number of sets"
                );
            }
        }
        self.psc.validate(levels)
    }
}

/// Where a translation was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlbHit {
    L1,
    L2,
}

/// A cached translation: the frame of the page's first 4 KiB and the page size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlbEntry {
    pub base_pfn: u64,
    pub huge: bool,
    pub dirty: bool,
    /// Where the leaf PTE lives in the simulator's page table ([`NO_SLOT`] if unknown),
    /// so that setting the dirty bit does not need a second host-side walk. It is
    /// simulator bookkeeping, not hardware state.
    pub slot: u32,
}

/// `TlbEntry::slot` when the leaf's slot is not recorded (VM translations).
pub const NO_SLOT: u32 = u32::MAX;

const VALID: u64 = 1 << 63;
const HUGE_KEY: u64 = 1 << 62;

#[inline]
fn key(tenant: u16, vpn: u64, huge: bool) -> u64 {
    VALID | if huge { HUGE_KEY } else { 0 } | (tenant as u64) << 46 | vpn
}

// Values pack the leaf slot (32 bits), the frame (31 bits, 8 TiB of physical memory)
// and the dirty flag.
#[inline]
fn value(e: &TlbEntry) -> u64 {
    debug_assert!(e.base_pfn < 1 << 31, "frame number beyond 8 TiB");
    (e.slot as u64) << 32 | e.base_pfn << 1 | e.dirty as u64
}

#[inline]
fn entry(v: u64, huge: bool) -> TlbEntry {
    TlbEntry { base_pfn: (v >> 1) & ((1 << 31) - 1), huge, dirty: v & 1 != 0, slot: (v >> 32) as u32 }
}

/// The four TLB arrays of one core, of array type `A` in the first level and `B` in
/// the second.
#[derive(Clone, Debug)]
struct Arrays<A, B> {
    l1_small: A,
    l1_huge: A,
    l2_small: B,
    /// `None` when the L2 TLB is unified (then `l2_small` holds both sizes).
    l2_huge: Option<B>,
}

/// The TLB arrays, their associativities chosen once when they are built: those of
/// every preset (4-way first level, 8-way second) fixed at compile time, any other
/// chosen per operation.
#[derive(Clone, Debug)]
enum Shape {
    Preset(Arrays<Fixed<4>, Fixed<8>>),
    Any(Arrays<SetAssoc, SetAssoc>),
}

macro_rules! each_shape {
    ($s:expr, $a:ident => $e:expr) => {
        match $s {
            Shape::Preset($a) => $e,
            Shape::Any($a) => $e,
        }
    };
}

impl<A: Assoc, B: Assoc> Arrays<A, B> {
    #[inline(always)]
    fn l2_for(&mut self, huge: bool) -> &mut B {
        match (&mut self.l2_huge, huge) {
            (Some(h), true) => h,
            _ => &mut self.l2_small,
        }
    }

    #[inline(always)]
    fn l1_for(&mut self, huge: bool) -> &mut A {
        if huge {
            &mut self.l1_huge
        } else {
            &mut self.l1_small
        }
    }

    /// [`Tlb::lookup_l1`] for virtual page numbers `small` and `huge`.
    #[inline(always)]
    fn lookup_l1(&mut self, tenant: u16, small: u64, huge: u64) -> Option<TlbEntry> {
        if let Some(v) = self.l1_small.lookup(key(tenant, small, false), small) {
            return Some(entry(*v, false));
        }
        if self.l1_huge.is_empty() {
            return None;
        }
        self.l1_huge.lookup(key(tenant, huge, true), huge).map(|v| entry(*v, true))
    }

    /// [`Tlb::lookup_l2`] for virtual page numbers `small` and `huge`.
    #[inline(always)]
    fn lookup_l2(&mut self, tenant: u16, small: u64, huge: u64) -> Option<TlbEntry> {
        let k = key(tenant, small, false);
        if let Some(&mut v) = self.l2_small.lookup(k, small) {
            self.l1_small.insert(k, v, small);
            return Some(entry(v, false));
        }
        let k = key(tenant, huge, true);
        let l2 = self.l2_for(true);
        if l2.is_empty() {
            return None;
        }
        let v = *l2.lookup(k, huge)?;
        self.l1_huge.insert(k, v, huge);
        Some(entry(v, true))
    }

    #[inline]
    fn lookup_small_l2(&mut self, tenant: u16, vpn: u64) -> Option<TlbEntry> {
        let k = key(tenant, vpn, false);
        let v = *self.l2_small.lookup(k, vpn)?;
        self.l1_small.insert(k, v, vpn);
        Some(entry(v, false))
    }

    #[inline(always)]
    fn fill(&mut self, k: u64, v: u64, vpn: u64, huge: bool) {
        let l1 = self.l1_for(huge);
        debug_assert!(l1.peek(k, vpn).is_none(), "filling a cached translation");
        l1.insert(k, v, vpn);
        self.l2_for(huge).insert(k, v, vpn);
    }

    #[inline]
    fn set_dirty(&mut self, k: u64, vpn: u64, huge: bool) {
        if let Some(v) = self.l1_for(huge).lookup(k, vpn) {
            *v |= 1;
        }
        if let Some(v) = self.l2_for(huge).lookup(k, vpn) {
            *v |= 1;
        }
    }

    fn invalidate(&mut self, k: u64, vpn: u64, huge: bool) -> bool {
        let a = self.l1_for(huge).remove(k, vpn).is_some();
        let b = self.l2_for(huge).remove(k, vpn).is_some();
        a | b
    }

    fn retain(&mut self, keep: &mut impl FnMut(u64, u64) -> bool) {
        self.l1_small.retain(keep);
        self.l1_huge.retain(keep);
        self.l2_small.retain(keep);
        if let Some(h) = &mut self.l2_huge {
            h.retain(keep);
        }
    }

    fn entries(&self) -> Vec<(u64, u64)> {
        let mut out = self.l1_small.entries();
        out.extend(self.l1_huge.entries());
        out.extend(self.l2_small.entries());
        out.extend(self.l2_huge.iter().flat_map(|h| h.entries()));
        out
    }
}

/// Sampled mode's page-granular fast-forward (`engine.sampled.fast_forward = "page"`,
/// module `super::sampled`): the translations a core's TLBs probably still hold, one
/// per slot of two direct-mapped arrays (base and huge pages), each with as many slots
/// as the TLBs hold translations of that size (L1 and L2), rounded up to a power of
/// two. A fast-forward reference whose translation is here is a TLB hit: no walk, no
/// Accessed bit set again, no trap; one that is not is a miss, and walks. It is kept
/// in the detailed windows of a sampled run too, where it only classifies references
/// for the cost model, and every invalidation of the TLBs reaches it, so it never
/// holds a translation the page tables no longer have. Empty (no slots) unless
/// enabled.
#[derive(Clone, Debug, Default)]
struct Reach {
    /// (key, value) per slot as the TLB arrays pack them; key 0 is an empty slot.
    small: Vec<[u64; 2]>,
    huge: Vec<[u64; 2]>,
    /// Whether a huge translation was ever filled (a run without huge pages never
    /// looks the huge array up).
    any_huge: bool,
}

impl Reach {
    /// The slot of virtual page number `vpn` of `tenant` in an array of `len` slots (a
    /// power of two): the low bits XOR-ed with the bits above them, so that arrays a
    /// multiple of the array's reach apart do not share slots, and the tenant's.
    #[inline(always)]
    fn slot(len: usize, tenant: u16, vpn: u64) -> usize {
        let bits = len.trailing_zeros();
        ((vpn ^ (vpn >> bits) ^ (tenant as u64).wrapping_mul(0x9e37)) as usize) & (len - 1)
    }

    #[inline(always)]
    fn array(&mut self, huge: bool) -> &mut Vec<[u64; 2]> {
        if huge {
            &mut self.huge
        } else {
            &mut self.small
        }
    }
}

/// The TLBs of one core.
#[derive(Clone, Debug)]
pub struct Tlb {
    huge_shift: u32,
    arrays: Shape,
    /// The walker's paging-structure caches (`None` when configured off).
    psc: Option<PagingStructureCaches>,
    /// Sampled mode's reach arrays ([`Reach`]; empty unless enabled).
    reach: Reach,
    /// Slots the reach arrays get when enabled: (base, huge).
    reach_slots: (usize, usize),
}

impl Tlb {
    /// Builds empty TLBs (and paging-structure caches) for page tables of `levels`
    /// levels; `huge_shift` is log2 of the huge-page size.
    pub fn new(cfg: &TlbConfig, levels: u32, huge_shift: u32) -> Tlb {
        let l2_ways = [Some(cfg.l2_small_ways), cfg.l2_split.then_some(cfg.l2_huge_ways)];
        let arrays = if cfg.l1_small_ways == 4 && cfg.l1_huge_ways == 4 && l2_ways.iter().flatten().all(|&w| w == 8) {
            let (l1, l2) = (|entries: usize| Fixed::new(entries / 4), |entries: usize| Fixed::new(entries / 8));
            Shape::Preset(Arrays {
                l1_small: l1(cfg.l1_small_entries),
                l1_huge: l1(cfg.l1_huge_entries),
                l2_small: l2(cfg.l2_small_entries),
                l2_huge: cfg.l2_split.then(|| l2(cfg.l2_huge_entries)),
            })
        } else {
            let arr = |entries: usize, ways: usize| SetAssoc::new(entries / ways, ways);
            Shape::Any(Arrays {
                l1_small: arr(cfg.l1_small_entries, cfg.l1_small_ways),
                l1_huge: arr(cfg.l1_huge_entries, cfg.l1_huge_ways),
                l2_small: arr(cfg.l2_small_entries, cfg.l2_small_ways),
                l2_huge: cfg.l2_split.then(|| arr(cfg.l2_huge_entries, cfg.l2_huge_ways)),
            })
        };
        let huge_l2 = if cfg.l2_split { cfg.l2_huge_entries } else { cfg.l2_small_entries };
        let reach_slots = ((cfg.l1_small_entries + cfg.l2_small_entries).next_power_of_two(), (cfg.l1_huge_entries + huge_l2).next_power_of_two());
        Tlb { huge_shift, arrays, psc: PagingStructureCaches::new(&cfg.psc, levels, huge_shift), reach: Reach::default(), reach_slots }
    }

    /// Enables the reach arrays of sampled mode's page-granular fast-forward
    /// ([`Reach`]), empty.
    pub fn enable_reach(&mut self) {
        self.reach = Reach { small: vec![[0; 2]; self.reach_slots.0], huge: vec![[0; 2]; self.reach_slots.1], any_huge: false };
    }

    /// Whether the reach arrays are enabled.
    #[inline(always)]
    pub fn reach_on(&self) -> bool {
        !self.reach.small.is_empty()
    }

    /// The translation of `vaddr` the reach arrays hold, base pages first (enabled
    /// arrays only).
    #[inline(always)]
    pub fn reach_lookup(&self, tenant: u16, vaddr: u64) -> Option<TlbEntry> {
        let r = &self.reach;
        let small = vaddr >> 12;
        let [k, v] = r.small[Reach::slot(r.small.len(), tenant, small)];
        if k == key(tenant, small, false) {
            return Some(entry(v, false));
        }
        if !r.any_huge {
            return None;
        }
        let huge = vaddr >> self.huge_shift;
        let [k, v] = r.huge[Reach::slot(r.huge.len(), tenant, huge)];
        (k == key(tenant, huge, true)).then(|| entry(v, true))
    }

    /// Puts translation `e` of `vaddr` in its reach slot, in place of whatever was
    /// there; returns whether the slot held this translation already (enabled arrays
    /// only).
    #[inline(always)]
    pub fn reach_fill(&mut self, tenant: u16, vaddr: u64, e: TlbEntry) -> bool {
        let vpn = self.vpn(vaddr, e.huge);
        let k = key(tenant, vpn, e.huge);
        self.reach.any_huge |= e.huge;
        let a = self.reach.array(e.huge);
        let slot = Reach::slot(a.len(), tenant, vpn);
        let held = a[slot][0] == k;
        a[slot] = [k, value(&e)];
        held
    }

    /// The reach arrays' slot holding the translation of the page of `vaddr` of the
    /// given size, if they hold it (enabled arrays only).
    #[inline]
    fn reach_slot(&mut self, tenant: u16, vaddr: u64, huge: bool) -> Option<&mut [u64; 2]> {
        let vpn = self.vpn(vaddr, huge);
        let k = key(tenant, vpn, huge);
        let a = self.reach.array(huge);
        if a.is_empty() {
            return None;
        }
        let slot = Reach::slot(a.len(), tenant, vpn);
        Some(&mut a[slot]).filter(|s| s[0] == k)
    }

    /// Marks the reach arrays' translation of `vaddr` dirty, if they hold it.
    #[inline]
    pub fn reach_set_dirty(&mut self, tenant: u16, vaddr: u64, huge: bool) {
        if let Some(s) = self.reach_slot(tenant, vaddr, huge) {
            s[1] |= 1;
        }
    }

    /// Drops the reach arrays' translation of the page of `vaddr` of the given size.
    fn reach_invalidate(&mut self, tenant: u16, vaddr: u64, huge: bool) {
        if let Some(s) = self.reach_slot(tenant, vaddr, huge) {
            *s = [0; 2];
        }
    }

    /// The paging-structure caches, if configured.
    #[inline]
    pub fn psc(&self) -> Option<&PagingStructureCaches> {
        self.psc.as_ref()
    }

    /// The paging-structure caches, for the walker to look up and fill.
    #[inline]
    pub fn psc_mut(&mut self) -> Option<&mut PagingStructureCaches> {
        self.psc.as_mut()
    }

    /// The virtual page number of `vaddr` at the given page size.
    #[inline(always)]
    fn vpn(&self, vaddr: u64, huge: bool) -> u64 {
        vaddr >> if huge { self.huge_shift } else { 12 }
    }

    /// Looks up the translation of `vaddr`, probing both page sizes at each level as
    /// split hardware does in parallel. An L2 hit refills the L1 of its size. (An
    /// array that holds nothing, a huge-page TLB of a run without huge pages, is not
    /// searched: it would miss.)
    pub fn lookup(&mut self, tenant: u16, vaddr: u64) -> Option<(TlbHit, TlbEntry)> {
        match self.lookup_l1(tenant, vaddr) {
            Some(e) => Some((TlbHit::L1, e)),
            None => self.lookup_l2(tenant, vaddr).map(|e| (TlbHit::L2, e)),
        }
    }

    /// The first level of [`Tlb::lookup`], inlined into the reference path.
    #[inline(always)]
    pub fn lookup_l1(&mut self, tenant: u16, vaddr: u64) -> Option<TlbEntry> {
        let (small, huge) = (vaddr >> 12, vaddr >> self.huge_shift);
        each_shape!(&mut self.arrays, a => a.lookup_l1(tenant, small, huge))
    }

    /// The second level of [`Tlb::lookup`], after a miss in the first (inlined into
    /// the machine's handling of that miss).
    #[inline(always)]
    pub fn lookup_l2(&mut self, tenant: u16, vaddr: u64) -> Option<TlbEntry> {
        let (small, huge) = (vaddr >> 12, vaddr >> self.huge_shift);
        each_shape!(&mut self.arrays, a => a.lookup_l2(tenant, small, huge))
    }

    /// Looks `vaddr` up in the second level for 4 KiB pages only (refilling the L1 on
    /// a hit). Rainbow consults the 4 KiB TLB beside the superpage TLB, so an L1
    /// superpage hit does not hide a 4 KiB translation of a copy cached in the L2.
    #[inline]
    pub fn lookup_small_l2(&mut self, tenant: u16, vaddr: u64) -> Option<TlbEntry> {
        each_shape!(&mut self.arrays, a => a.lookup_small_l2(tenant, vaddr >> 12))
    }

    /// Installs a translation in the L1 and L2 TLBs of its size after a walk; the
    /// translation must not be cached already (a walk follows a miss in both levels).
    #[inline(always)]
    pub fn fill(&mut self, tenant: u16, vaddr: u64, e: TlbEntry) {
        let vpn = self.vpn(vaddr, e.huge);
        let (k, v) = (key(tenant, vpn, e.huge), value(&e));
        each_shape!(&mut self.arrays, a => a.fill(k, v, vpn, e.huge))
    }

    /// Marks the cached translation of `vaddr` dirty in every array that holds it.
    #[inline]
    pub fn set_dirty(&mut self, tenant: u16, vaddr: u64, huge: bool) {
        let vpn = self.vpn(vaddr, huge);
        let k = key(tenant, vpn, huge);
        each_shape!(&mut self.arrays, a => a.set_dirty(k, vpn, huge))
    }

    /// Invalidates the translation of the page holding `vaddr` (of the given size), as
    /// INVLPG does, and with it every paging-structure-cache entry of `tenant` (SDM
    /// §4.10.4.1, see [`super::psc`]); returns whether a TLB array held the translation.
    pub fn invalidate(&mut self, tenant: u16, vaddr: u64, huge: bool) -> bool {
        if let Some(p) = &mut self.psc {
            p.flush_tenant(tenant);
        }
        self.reach_invalidate(tenant, vaddr, huge);
        let vpn = self.vpn(vaddr, huge);
        let k = key(tenant, vpn, huge);
        each_shape!(&mut self.arrays, a => a.invalidate(k, vpn, huge))
    }

    /// Drops every translation and paging-structure-cache entry of `tenant`; returns
    /// whether there was any translation.
    pub fn flush_tenant(&mut self, tenant: u16) -> bool {
        if let Some(p) = &mut self.psc {
            p.flush_tenant(tenant);
        }
        let mut any = false;
        let mut others = |k: u64, _| {
            let mine = (k >> 46) & 0xffff == tenant as u64;
            any |= mine;
            !mine
        };
        each_shape!(&mut self.arrays, a => a.retain(&mut others));
        for slot in self.reach.small.iter_mut().chain(self.reach.huge.iter_mut()) {
            if slot[0] != 0 && (slot[0] >> 46) & 0xffff == tenant as u64 {
                *slot = [0; 2];
            }
        }
        any
    }

    /// Every cached translation as (tenant, virtual address of the page, entry); for
    /// invariant checks.
    pub fn entries(&self) -> Vec<(u16, u64, TlbEntry)> {
        let mut all = each_shape!(&self.arrays, a => a.entries());
        all.extend(self.reach.small.iter().chain(&self.reach.huge).filter(|s| s[0] != 0).map(|s| (s[0], s[1])));
        all.into_iter()
            .map(|(k, v)| {
                let huge = k & HUGE_KEY != 0;
                let vpn = k & ((1 << 46) - 1);
                (((k >> 46) & 0xffff) as u16, vpn << if huge { self.huge_shift } else { 12 }, entry(v, huge))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> TlbConfig {
        // L1: 2 sets × 1 way per size; L2: 1 set × 2 ways per size.
        TlbConfig {
            l1_small_entries: 2,
            l1_small_ways: 1,
            l1_huge_entries: 2,
            l1_huge_ways: 1,
            l2_small_entries: 2,
            l2_small_ways: 2,
            l2_huge_entries: 2,
            l2_huge_ways: 2,
            ..TlbConfig::default()
        }
    }

    #[test]
    fn l1_conflict_falls_back_to_l2() {
        let mut t = Tlb::new(&tiny(), 4, 21);
        let e = |pfn| TlbEntry { base_pfn: pfn, huge: false, dirty: false, slot: NO_SLOT };
        // Pages 0 and 2 map to L1 set 0 (vpn & 1 == 0): the second evicts the first from L1,
        // but L2 (2 ways, one set) keeps both.
        t.fill(0, 0x0000, e(7));
        t.fill(0, 0x2000, e(9));
        assert_eq!(t.lookup(0, 0x2000).map(|(h, x)| (h, x.base_pfn)), Some((TlbHit::L1, 9)));
        assert_eq!(t.lookup(0, 0x0123).map(|(h, x)| (h, x.base_pfn)), Some((TlbHit::L2, 7)));
        // The L2 hit refilled L1, so the next lookup hits L1.
        assert_eq!(t.lookup(0, 0x0123).map(|(h, _)| h), Some(TlbHit::L1));
        // A third page in the same sets: L1 set 0 now holds page 4, and the 2-way L2
        // keeps the two most recent (4, then 0), so page 2 is gone from both levels.
        t.fill(0, 0x4000, e(11));
        assert_eq!(t.lookup(0, 0x2000), None);
        assert!(t.invalidate(0, 0x0000, false), "page 0 is still in L2");
        assert_eq!(t.lookup(0, 0x0000), None);
    }

    #[test]
    fn sizes_and_tenants_are_separate() {
        let mut t = Tlb::new(&TlbConfig::default(), 4, 21);
        t.fill(1, 0x20_0000, TlbEntry { base_pfn: 512, huge: true, dirty: false, slot: 7 });
        assert_eq!(t.lookup(2, 0x20_0000), None, "another tenant's translation");
        let (hit, e) = t.lookup(1, 0x3f_ffff).unwrap();
        assert_eq!((hit, e.base_pfn, e.huge, e.slot), (TlbHit::L1, 512, true, 7));
        t.set_dirty(1, 0x20_0000, true);
        assert!(t.lookup(1, 0x20_0000).unwrap().1.dirty);
        t.flush_tenant(1);
        assert_eq!(t.lookup(1, 0x20_0000), None);
    }

    /// The reach arrays of the default TLBs: 32 + 512 base-page entries and 32 + 512
    /// huge-page entries, 1 024 slots each. A huge translation serves every base page
    /// of its 2 MiB; tenants are apart; the arrays' entries are listed for the
    /// invariant check; a tenant's flush empties its slots only.
    #[test]
    fn reach_arrays_hold_one_translation_a_slot() {
        let mut t = Tlb::new(&TlbConfig::default(), 4, 21);
        assert!(!t.reach_on());
        t.enable_reach();
        assert_eq!((t.reach.small.len(), t.reach.huge.len()), (1024, 1024));
        let e = |pfn, huge| TlbEntry { base_pfn: pfn, huge, dirty: false, slot: 3 };
        assert!(!t.reach_fill(0, 0x1000, e(5, false)), "an empty slot");
        assert!(t.reach_fill(0, 0x1fff, e(5, false)), "the same page again");
        assert_eq!(t.reach_lookup(0, 0x1234), Some(e(5, false)));
        assert_eq!(t.reach_lookup(1, 0x1234), None, "another tenant");
        t.reach_fill(1, 0x40_0000, e(512, true));
        assert_eq!(t.reach_lookup(1, 0x5f_f000).map(|x| (x.base_pfn, x.huge)), Some((512, true)), "the last base page of the huge page");
        t.reach_set_dirty(1, 0x40_0000, true);
        assert!(t.reach_lookup(1, 0x40_0000).unwrap().dirty);
        assert_eq!(t.entries().len(), 2, "both reach translations listed");
        t.flush_tenant(1);
        assert_eq!(t.reach_lookup(1, 0x40_0000), None);
        assert!(t.reach_lookup(0, 0x1000).is_some(), "tenant 0 kept");
        t.invalidate(0, 0x1000, false);
        assert_eq!(t.reach_lookup(0, 0x1000), None);
        // Page 1 (slot 1 ^ 0 = 1) and page 1 024 (slot 0 ^ 1 = 1) share a slot: the
        // second replaces the first.
        t.reach_fill(0, 0x1000, e(5, false));
        assert!(!t.reach_fill(0, 1024 << 12, e(6, false)));
        assert_eq!(t.reach_lookup(0, 0x1000), None);
    }

    #[test]
    fn unified_l2_holds_both_sizes() {
        let cfg = TlbConfig { l2_split: false, ..tiny() };
        let mut t = Tlb::new(&cfg, 4, 21);
        t.fill(0, 0, TlbEntry { base_pfn: 1, huge: false, dirty: false, slot: NO_SLOT });
        t.fill(0, 0x40_0000, TlbEntry { base_pfn: 1024, huge: true, dirty: false, slot: NO_SLOT });
        // Evict both from L1 with conflicting fills of each size.
        t.fill(0, 0x2000, TlbEntry { base_pfn: 2, huge: false, dirty: false, slot: NO_SLOT });
        t.fill(0, 0x80_0000, TlbEntry { base_pfn: 2048, huge: true, dirty: false, slot: NO_SLOT });
        // The unified L2 has 2 ways: it now holds the two most recent fills only.
        assert_eq!(t.lookup(0, 0x80_0000).map(|(h, _)| h), Some(TlbHit::L1));
        assert_eq!(t.lookup(0, 0).map(|(h, _)| h), None);
    }
}
