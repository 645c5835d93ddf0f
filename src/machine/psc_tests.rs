//! The paging-structure caches in the walk: which references a walk issues, what it
//! costs, what a huge page fills, how invalidations reach the caches, and a VM's two
//! dimensions.

use super::ops::{Exec, Shootdown};
use super::psc::{PscConfig, PscStats};
use super::*;
use crate::units::Capacity;

const BASE: u64 = 0x7f00_0000_0000;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// 32 PDE, 4 PDPTE and 2 PML4E entries, fully associative, a 3-cycle lookup.
fn intel() -> PscConfig {
    PscConfig { pde_entries: 32, pdpte_entries: 4, pml4e_entries: 2, latency_cycles: 3, ..PscConfig::default() }
}

fn config(psc: PscConfig, thp: bool) -> MachineConfig {
    let mut cfg = MachineConfig { cores: 2, ..MachineConfig::default() };
    cfg.tlb.psc = psc;
    cfg.page_table.thp = thp;
    cfg.tiers.fast.capacity = Capacity::Bytes(16 * MIB);
    cfg.tiers.slow.capacity = Capacity::Bytes(16 * MIB);
    cfg
}

fn machine(cfg: &MachineConfig, kinds: &[TenantKind]) -> Machine {
    Machine::new(cfg, &Build::new(cfg, kinds, 4 * MIB)).unwrap()
}

fn read(m: &mut Machine, core: usize, tenant: u16, vaddr: u64) -> RefOutcome {
    m.access(core, &Access { tenant, ..Access::read(vaddr, 8, 0) }, &mut ())
}

fn stats(m: &Machine, core: usize) -> PscStats {
    m.cores[core].tlb.psc().unwrap().stats.clone()
}

fn exec() -> Exec {
    Exec { core: 0, at: 0, in_flight: 1, foreground: Some(0) }
}

#[test]
fn walks_skip_the_levels_the_caches_hold() {
    let mut m = machine(&config(intel(), false), &[TenantKind::Process]);
    // Each address is a new 4 KiB page (a TLB miss); walk references so far, by hand:
    // a cold walk reads 4 entries; the next page of the same 2 MiB hits the PDE cache
    // and reads the PTE only (5); another 2 MiB of the same 1 GiB hits the PDPTE cache
    // and reads PDE and PTE (7); another 1 GiB of the same 512 GiB hits the PML4E cache
    // (10); another 512 GiB misses everything (14).
    let mut refs = Vec::new();
    for a in [BASE, BASE + 4096, BASE + 2 * MIB, BASE + GIB, BASE + (512 << 30)] {
        read(&mut m, 0, 0, a);
        refs.push(m.cores[0].stats.walk_references);
    }
    assert_eq!(refs, vec![4, 5, 7, 10, 14]);
    assert_eq!(stats(&m, 0), PscStats { lookups: 5, pde_hits: 1, pdpte_hits: 1, pml4e_hits: 1, pml5e_hits: 0 });
    assert_eq!(m.cores[0].stats.tlb_misses, 5);
    m.check_invariants().unwrap();
}

#[test]
fn a_hit_costs_the_lookup_and_the_references_left() {
    // The second page's walk finds every line the first walk read in the L1 (its PTE
    // shares a line with the first page's): without the caches it costs the fault and
    // 4 L1 hits; with them the fault, the 3-cycle lookup and one L1 hit.
    let walk_of_second_page = |psc: PscConfig| {
        let mut m = machine(&config(psc, false), &[TenantKind::Process]);
        read(&mut m, 0, 0, BASE);
        read(&mut m, 0, 0, BASE + 4096).translation_cycles
    };
    let cfg = config(PscConfig::default(), false);
    let (fault, l1) = (cfg.cycles(cfg.costs.page_fault_ns), cfg.caches[0].latency_cycles);
    assert_eq!(walk_of_second_page(PscConfig::default()), fault + 4 * l1);
    assert_eq!(walk_of_second_page(intel()), fault + 3 + l1);
}

#[test]
fn a_huge_page_walk_does_not_fill_the_pde_cache() {
    let mut m = machine(&config(intel(), true), &[TenantKind::Process]);
    read(&mut m, 0, 0, BASE);
    // Three references (PML4E, PDPTE, the PDE that maps the page); the PDE is a leaf,
    // so only the PML4E and PDPTE caches are filled.
    assert_eq!(m.cores[0].stats.walk_references, 3);
    let mut levels: Vec<u32> = m.cores[0].tlb.psc().unwrap().entries().iter().map(|e| e.level).collect();
    levels.sort();
    assert_eq!(levels, vec![3, 4]);
    // The next huge page of the same 1 GiB hits the PDPTE cache: its PDE alone (4).
    read(&mut m, 0, 0, BASE + 2 * MIB);
    assert_eq!(m.cores[0].stats.walk_references, 4);
    assert_eq!(stats(&m, 0), PscStats { lookups: 2, pdpte_hits: 1, ..PscStats::default() });
    m.check_invariants().unwrap();
}

#[test]
fn a_shootdown_drops_the_tenants_entries_on_every_core() {
    let mut m = machine(&config(intel(), false), &[TenantKind::Process, TenantKind::Process]);
    for core in 0..2 {
        read(&mut m, core, 0, BASE);
        read(&mut m, core, 1, BASE);
    }
    // Each core holds PML4E, PDPTE and PDE entries of both tenants.
    assert_eq!(m.cores[1].tlb.psc().unwrap().entries().len(), 6);
    // INVLPG of one page of tenant 0 drops all of tenant 0's entries (SDM §4.10.4.1).
    m.shootdown(&mut exec(), Shootdown::Page { page: PageRef::new(0, BASE + 4096), huge: false });
    for core in 0..2 {
        let left = m.cores[core].tlb.psc().unwrap().entries();
        assert_eq!((left.len(), left.iter().all(|e| e.tenant == 1)), (3, true), "core {core}");
    }
    // So the next walk of tenant 0 reads every level again (4 more), tenant 1's only
    // the PTE (1 more).
    let before = m.cores[1].stats.walk_references;
    read(&mut m, 1, 0, BASE + 8192);
    read(&mut m, 1, 1, BASE + 8192);
    assert_eq!(m.cores[1].stats.walk_references - before, 5);
    m.check_invariants().unwrap();
}

#[test]
fn split_and_merge_invalidate_and_the_checker_catches_a_stale_entry() {
    let mut m = machine(&config(intel(), true), &[TenantKind::Process]);
    let page = PageRef::new(0, BASE);
    read(&mut m, 0, 0, BASE);
    // Split: the PDE becomes a pointer to a new table; the huge page's shootdown drops
    // the PML4E and PDPTE entries, and the next walk reads all 4 levels and caches the
    // new PDE (3 + 4 references).
    m.split(&mut exec(), page).unwrap();
    assert!(m.cores[0].tlb.psc().unwrap().entries().is_empty());
    read(&mut m, 0, 0, BASE + 4096);
    assert_eq!(m.cores[0].stats.walk_references, 7);
    assert!(m.cores[0].tlb.psc().unwrap().entries().iter().any(|e| e.level == 2));
    m.check_invariants().unwrap();
    // Merge: the PDE maps the page again and its table is freed; the region's
    // shootdown drops the PDE entry that pointed to it.
    m.merge(&mut exec(), page, TierId::FAST).unwrap();
    assert!(m.cores[0].tlb.psc().unwrap().entries().is_empty());
    m.check_invariants().unwrap();
    read(&mut m, 0, 0, BASE + 8192);
    assert_eq!(m.cores[0].stats.walk_references, 10, "a cold huge walk: 3 more");
    // An entry that names another table than the page table's is reported.
    m.cores[0].tlb.psc_mut().unwrap().fill(0, false, BASE, 3, 12345);
    let e = m.check_invariants().unwrap_err();
    assert!(e.contains("stale paging-structure-cache entry of tenant 0 (managed table) at level 3"), "{e}");
}

#[test]
fn a_vm_walk_skips_in_both_dimensions() {
    let mut m = machine(&config(intel(), false), &[TenantKind::Vm]);
    // The guest's tables take guest frames 0 (root), 2, 3, 4 and the first data page
    // frame 1, all in the first 2 MiB of guest-physical space. Cold: the EPT walk of
    // the guest root's address reads 4 entries and fills the EPT caches; the EPT walks
    // of frames 2, 3, 4 and of the data page hit the EPT's PDE cache (1 each); with
    // the 4 guest entries read, 4 + 4 × 1 + 4 = 12 references, 6 lookups (the guest
    // table's and 5 EPT walks).
    read(&mut m, 0, 0, BASE);
    assert_eq!(m.cores[0].stats.walk_references, 12);
    assert_eq!(stats(&m, 0), PscStats { lookups: 6, pde_hits: 4, ..PscStats::default() });
    // The next guest page hits the guest's PDE cache, whose combined entry gives the
    // host address of the guest PTE (no EPT walk for it): the guest PTE, then the data
    // page's EPT walk, a PDE hit (guest frame 5): 2 more references, 2 more lookups.
    read(&mut m, 0, 0, BASE + 4096);
    assert_eq!(m.cores[0].stats.walk_references, 14);
    assert_eq!(stats(&m, 0), PscStats { lookups: 8, pde_hits: 6, ..PscStats::default() });
    assert!(m.cores[0].tlb.psc().unwrap().entries().iter().any(|e| e.guest));
    m.check_invariants().unwrap();
    // A host shootdown of a VM page flushes all of the VM's translations (INVEPT):
    // both kinds of entries go.
    m.shootdown(&mut exec(), Shootdown::Page { page: PageRef::new(0, 4096), huge: false });
    assert!(m.cores[0].tlb.psc().unwrap().entries().is_empty());
    // With the caches off the same two walks read 24 + 24 entries.
    let mut off = machine(&config(PscConfig::default(), false), &[TenantKind::Vm]);
    read(&mut off, 0, 0, BASE);
    read(&mut off, 0, 0, BASE + 4096);
    assert_eq!(off.cores[0].stats.walk_references, 48);
}

#[test]
fn five_levels_cache_the_pml5e_too() {
    let mut cfg = config(PscConfig { pml5e_entries: 2, ..intel() }, false);
    cfg.page_table.levels = 5;
    let mut m = machine(&cfg, &[TenantKind::Process]);
    // Cold: 5 references. Another 512 GiB of the same 256 TiB (VA[56:48]) hits the
    // PML5E cache and reads the 4 levels below it (9).
    read(&mut m, 0, 0, BASE);
    read(&mut m, 0, 0, BASE + (512 << 30));
    assert_eq!(m.cores[0].stats.walk_references, 9);
    assert_eq!(stats(&m, 0).pml5e_hits, 1);
    m.check_invariants().unwrap();
}
