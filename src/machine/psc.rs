//! Paging-structure caches: per-core caches of the upper page-table entries a walk
//! reads, which let the next walk of a nearby address skip them (Intel SDM vol. 3A
//! §4.10.3; Barr, Cox and Rixner, "Translation caching: skip, don't walk (the page
//! table)", ISCA 2010, call this organisation a split translation cache).
//!
//! There is one cache per non-leaf level: the PDE cache (level 2, keyed by the virtual
//! address above the huge-page offset: VA[47:21] with 2 MiB pages), the PDPTE cache
//! (level 3, VA[47:30]), the PML4E cache (level 4, VA[47:39]) and, with a 5-level
//! table, the PML5E cache (level 5, VA[56:48]; the lower levels' keys then reach bit
//! 56). An entry holds the physical frame of the table its page-table entry points to,
//! so a hit at level k leaves only the references of levels k − 1 down to the leaf.
//! A walk looks the levels up deepest first and takes the deepest hit (only that entry
//! becomes most recent); it then fills every level whose entry it read and that is not
//! a leaf: a PDE that maps a huge page is never cached (SDM §4.10.3.1: "No PDE-cache
//! entry is created for a PDE that maps a page"), so a huge page's walk hits at most in
//! the PDPTE cache and then reads the PDE alone.
//!
//! The caches decide only which references a walk issues: the translation itself
//! always comes from the page table, so a stale entry could never give a wrong frame.
//! They are invalidated as x86 invalidates them all the same: INVLPG "invalidates all
//! entries in all paging-structure caches associated with the current PCID,
//! regardless of the linear addresses to which they correspond" (SDM §4.10.4.1), so
//! every invalidation of a page of a tenant drops all of that tenant's entries
//! ([`PagingStructureCaches::flush_tenant`]); `--verify` checks that every entry left
//! still names the table its page-table entry points to.
//!
//! VM tenants keep two kinds of entries apart by a flag in the key: the EPT's
//! (guest-physical address → EPT table, SDM vol. 3C §28.3.1 "guest-physical
//! paging-structure-cache entries") and the guest table's ("combined paging-structure-
//! cache entries": guest-virtual address → host-physical address of the guest table).

use super::setassoc::{Assoc, SetAssoc};
use serde::{Deserialize, Serialize};

/// Sizes and latency of the paging-structure caches (`[machine.tlb.psc]`). Every size
/// is 0 by default: no caches, and every walk reads every level, as the papers'
/// simulators (Rainbow's, SpAR's) model it.
///
/// Intel publishes no sizes (SDM §4.10.3.1: a processor "may support any or all" of
/// the caches). The `cxl` and `optane` presets use 32 PDE, 4 PDPTE and 2 PML4E entries,
/// fully associative, the figures the literature gives for recent Intel cores; we
/// could not check them against a primary source. ChampSim's default page-table
/// walker (its `champsim_config.json`) is of the same order: 32 PDE entries (4 sets ×
/// 8 ways), 8 PDPTE (2 × 4), 4 PML4E (1 × 4), 2 PML5E.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct PscConfig {
    /// Entries of the PDE cache (level 2: pointers to the tables of base pages); 0: none.
    pub pde_entries: usize,
    /// Associativity of the PDE cache; 0: fully associative.
    pub pde_ways: usize,
    /// Entries of the PDPTE cache (level 3); 0: none.
    pub pdpte_entries: usize,
    /// Associativity of the PDPTE cache; 0: fully associative.
    pub pdpte_ways: usize,
    /// Entries of the PML4E cache (level 4); 0: none.
    pub pml4e_entries: usize,
    /// Associativity of the PML4E cache; 0: fully associative.
    pub pml4e_ways: usize,
    /// Entries of the PML5E cache (level 5; only with `machine.page_table.levels = 5`); 0: none.
    pub pml5e_entries: usize,
    /// Associativity of the PML5E cache; 0: fully associative.
    pub pml5e_ways: usize,
    /// Cycles of one lookup (all levels probed at once), added to every walk that
    /// consults the caches: once per walk of a process, once per dimension walk of a
    /// VM's nested walk (the guest table's and each EPT walk). 1 is our assumption for
    /// a structure of a few dozen entries.
    pub latency_cycles: u64,
}

impl Default for PscConfig {
    fn default() -> Self {
        PscConfig {
            pde_entries: 0,
            pde_ways: 0,
            pdpte_entries: 0,
            pdpte_ways: 0,
            pml4e_entries: 0,
            pml4e_ways: 0,
            pml5e_entries: 0,
            pml5e_ways: 0,
            latency_cycles: 1,
        }
    }
}

/// Level names, by level − 2.
const NAMES: [&str; 4] = ["pde", "pdpte", "pml4e", "pml5e"];

impl PscConfig {
    /// (entries, ways) of each level's cache, by level − 2.
    fn sizes(&self) -> [(usize, usize); 4] {
        [(self.pde_entries, self.pde_ways), (self.pdpte_entries, self.pdpte_ways), (self.pml4e_entries, self.pml4e_ways), (self.pml5e_entries, self.pml5e_ways)]
    }

    /// Whether no level has a cache (the default): then the configuration is left out
    /// of a report's `config`, so that reports of runs without the caches stay as
    /// they were before the caches existed.
    pub fn is_off(&self) -> bool {
        self.sizes().iter().all(|&(entries, _)| entries == 0)
    }

    /// Checks every cache's geometry against a table of `levels` levels.
    pub fn validate(&self, levels: u32) -> anyhow::Result<()> {
        for (name, (entries, ways)) in NAMES.iter().zip(self.sizes()) {
            let fits = ways == 0 || entries % ways == 0 && (entries / ways).is_power_of_two();
            if entries > 0 && !fits {
                anyhow::bail!(
                    "machine.tlb.psc.{name}_entries / {name}_ways: entries ({entries}) must be a multiple of ways ({ways}) giving a power-of-two number of sets (ways = 0: fully associative)"
                );
            }
        }
        if levels < 5 && self.pml5e_entries > 0 {
            anyhow::bail!("machine.tlb.psc.pml5e_entries: a {levels}-level page table has no PML5 level (set machine.page_table.levels = 5, or 0 entries)");
        }
        Ok(())
    }
}

/// Lookups and hits of one core's paging-structure caches.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct PscStats {
    /// Walks that consulted the caches: one per walk of a process; one per dimension
    /// walk of a VM (the guest table's, and each walk of the EPT).
    pub lookups: u64,
    /// Lookups whose deepest hit was in each cache (a PDE hit leaves one reference, a
    /// PDPTE hit two, a PML4E hit three, with 4 KiB pages and 4 levels); the rest missed
    /// every cache and walked the whole table.
    pub pde_hits: u64,
    pub pdpte_hits: u64,
    pub pml4e_hits: u64,
    pub pml5e_hits: u64,
}

impl PscStats {
    fn hit(&mut self, level: u32) {
        match level {
            2 => self.pde_hits += 1,
            3 => self.pdpte_hits += 1,
            4 => self.pml4e_hits += 1,
            _ => self.pml5e_hits += 1,
        }
    }

    /// Lookups that hit in some cache.
    pub fn hits(&self) -> u64 {
        self.pde_hits + self.pdpte_hits + self.pml4e_hits + self.pml5e_hits
    }
}

/// One cached entry, for invariant checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CachedEntry {
    pub tenant: u16,
    /// A guest-table (combined) entry of a VM rather than one of its managed table.
    pub guest: bool,
    pub level: u32,
    /// The first address the entry covers.
    pub vaddr: u64,
    /// Physical frame of the table the page-table entry points to.
    pub next_frame: u64,
}

const VALID: u64 = 1 << 63;
const GUEST: u64 = 1 << 62;
const TENANT_SHIFT: u32 = 46;

#[inline]
fn key(tenant: u16, guest: bool, tag: u64) -> u64 {
    debug_assert!(tag < 1 << TENANT_SHIFT, "virtual-address tag beyond 46 bits");
    VALID | if guest { GUEST } else { 0 } | (tenant as u64) << TENANT_SHIFT | tag
}

#[inline]
fn key_tenant(k: u64) -> u16 {
    (k >> TENANT_SHIFT) as u16
}

/// The paging-structure caches of one core.
#[derive(Clone, Debug)]
pub struct PagingStructureCaches {
    /// Each level's cache, by level − 2 (`None`: the level has none).
    arrays: [Option<SetAssoc>; 4],
    /// The lowest virtual-address bit of each level's key, by level − 2.
    shifts: [u32; 4],
    pub stats: PscStats,
}

impl PagingStructureCaches {
    /// The caches of `cfg` for tables of `levels` levels whose huge pages are
    /// `1 << huge_shift` bytes; `None` when no level has a cache.
    pub fn new(cfg: &PscConfig, levels: u32, huge_shift: u32) -> Option<PagingStructureCaches> {
        if cfg.is_off() {
            return None;
        }
        let mut arrays: [Option<SetAssoc>; 4] = Default::default();
        for (i, (entries, ways)) in cfg.sizes().into_iter().enumerate() {
            if entries > 0 && i as u32 + 2 <= levels {
                let ways = if ways == 0 { entries } else { ways };
                arrays[i] = Some(SetAssoc::new(entries / ways, ways));
            }
        }
        // Level 2 indexes the bits right above the huge-page offset, each level above
        // the next 9 (as `PageTable` lays them out).
        let shifts = [0, 1, 2, 3].map(|i| huge_shift + 9 * i);
        Some(PagingStructureCaches { arrays, shifts, stats: PscStats::default() })
    }

    /// Looks the entries covering `vaddr` up, deepest level first, and counts the
    /// lookup. Returns the level of the deepest hit (whose entry becomes most recent).
    #[inline]
    pub fn lookup(&mut self, tenant: u16, guest: bool, vaddr: u64) -> Option<u32> {
        self.stats.lookups += 1;
        for (i, array) in self.arrays.iter_mut().enumerate() {
            let Some(array) = array else { continue };
            let tag = vaddr >> self.shifts[i];
            if array.lookup(key(tenant, guest, tag), tag).is_some() {
                let level = i as u32 + 2;
                self.stats.hit(level);
                return Some(level);
            }
        }
        None
    }

    /// Caches the non-leaf entry of `level` a walk of `vaddr` read, which points to
    /// the table in frame `next_frame` (a level without a cache ignores it).
    #[inline]
    pub fn fill(&mut self, tenant: u16, guest: bool, vaddr: u64, level: u32, next_frame: u64) {
        let i = level as usize - 2;
        let Some(array) = &mut self.arrays[i] else { return };
        let tag = vaddr >> self.shifts[i];
        let k = key(tenant, guest, tag);
        match array.lookup(k, tag) {
            Some(v) => *v = next_frame,
            None => {
                array.insert(k, next_frame, tag);
            }
        }
    }

    /// Drops every entry of `tenant`, of both kinds (INVLPG, INVEPT).
    pub fn flush_tenant(&mut self, tenant: u16) {
        for array in self.arrays.iter_mut().flatten() {
            array.retain(&mut |k, _| key_tenant(k) != tenant);
        }
    }

    /// Every cached entry; for invariant checks.
    pub fn entries(&self) -> Vec<CachedEntry> {
        let mut out = Vec::new();
        for (i, array) in self.arrays.iter().enumerate() {
            for (k, v) in array.iter().flat_map(|a| a.entries()) {
                let tag = k & ((1 << TENANT_SHIFT) - 1);
                out.push(CachedEntry { tenant: key_tenant(k), guest: k & GUEST != 0, level: i as u32 + 2, vaddr: tag << self.shifts[i], next_frame: v });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Intel-like sizes: 32 PDE, 4 PDPTE, 2 PML4E entries, fully associative.
    fn intel() -> PscConfig {
        PscConfig { pde_entries: 32, pdpte_entries: 4, pml4e_entries: 2, ..PscConfig::default() }
    }

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    #[test]
    fn the_deepest_cached_level_wins() {
        let mut p = PagingStructureCaches::new(&intel(), 4, 21).unwrap();
        let a = 0x7f00_0000_0000u64;
        assert_eq!(p.lookup(0, false, a), None, "cold");
        // A walk of `a` read all three upper levels.
        for level in [4, 3, 2] {
            p.fill(0, false, a, level, 100 + level as u64);
        }
        // Same 2 MiB region: the PDE cache. Same 1 GiB, another 2 MiB: the PDPTE cache.
        // Same 512 GiB, another 1 GiB: the PML4E cache. Another 512 GiB: nothing.
        assert_eq!(p.lookup(0, false, a + 4096), Some(2));
        assert_eq!(p.lookup(0, false, a + 2 * MIB), Some(3));
        assert_eq!(p.lookup(0, false, a + GIB), Some(4));
        assert_eq!(p.lookup(0, false, a + (512 << 30)), None);
        assert_eq!(p.stats, PscStats { lookups: 5, pde_hits: 1, pdpte_hits: 1, pml4e_hits: 1, pml5e_hits: 0 });
        // Another tenant, or the guest dimension of the same tenant, is another key.
        assert_eq!(p.lookup(1, false, a), None);
        assert_eq!(p.lookup(0, true, a), None);
    }

    #[test]
    fn a_small_cache_keeps_the_most_recent_entries() {
        // Two PML4E entries, fully associative: regions 0, 1, then 0 again, then 2
        // evicts region 1 (least recent).
        let mut p = PagingStructureCaches::new(&PscConfig { pml4e_entries: 2, ..PscConfig::default() }, 4, 21).unwrap();
        let r = |i: u64| i << 39;
        p.fill(0, false, r(0), 4, 1);
        p.fill(0, false, r(1), 4, 2);
        assert_eq!(p.lookup(0, false, r(0)), Some(4));
        p.fill(0, false, r(2), 4, 3);
        assert_eq!(p.lookup(0, false, r(1)), None);
        assert_eq!(p.lookup(0, false, r(0) + 5), Some(4));
        // A level without a cache ignores fills.
        p.fill(0, false, r(0), 2, 9);
        assert_eq!(p.entries().len(), 2);
    }

    #[test]
    fn flushing_a_tenant_drops_its_entries_of_both_kinds_only() {
        let mut p = PagingStructureCaches::new(&intel(), 4, 21).unwrap();
        p.fill(3, false, 0, 2, 10);
        p.fill(3, true, 0, 3, 11);
        p.fill(4, false, 0, 2, 12);
        p.flush_tenant(3);
        assert_eq!(p.entries(), vec![CachedEntry { tenant: 4, guest: false, level: 2, vaddr: 0, next_frame: 12 }]);
    }

    #[test]
    fn five_levels_add_a_pml5e_cache_and_keys_follow_the_huge_page_size() {
        let cfg = PscConfig { pml5e_entries: 2, ..intel() };
        assert!(cfg.validate(4).unwrap_err().to_string().starts_with("machine.tlb.psc.pml5e_entries:"));
        cfg.validate(5).unwrap();
        let mut p = PagingStructureCaches::new(&cfg, 5, 21).unwrap();
        let a = 3u64 << 48 | 5 << 39;
        p.fill(0, false, a, 5, 1);
        assert_eq!(p.lookup(0, false, a + (1 << 39)), Some(5), "same VA[56:48]");
        assert_eq!(p.lookup(0, false, a + (1 << 48)), None);
        // 512 KiB huge pages (SpAR): a PDE-cache entry covers 512 KiB.
        let mut p = PagingStructureCaches::new(&intel(), 4, 19).unwrap();
        p.fill(0, false, 0, 2, 1);
        assert_eq!(p.lookup(0, false, (512 << 10) - 1), Some(2));
        assert_eq!(p.lookup(0, false, 512 << 10), None);
    }

    #[test]
    fn geometry_is_checked_and_off_by_default() {
        assert!(PscConfig::default().is_off());
        assert!(PagingStructureCaches::new(&PscConfig::default(), 4, 21).is_none());
        intel().validate(4).unwrap();
        PscConfig { pde_entries: 32, pde_ways: 8, ..PscConfig::default() }.validate(4).unwrap();
        let e = PscConfig { pde_entries: 24, pde_ways: 8, ..PscConfig::default() }.validate(4).unwrap_err();
        assert!(e.to_string().starts_with("machine.tlb.psc.pde_entries / pde_ways:"), "{e}");
        let e = PscConfig { pdpte_entries: 4, pdpte_ways: 3, ..PscConfig::default() }.validate(4).unwrap_err();
        assert!(e.to_string().starts_with("machine.tlb.psc.pdpte_entries / pdpte_ways:"), "{e}");
    }
}
