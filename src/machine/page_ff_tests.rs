//! Page-granular fast-forward (`engine.sampled.fast_forward = "page"`): the reach
//! arrays stand for the TLBs, so a page whose translation they still hold does not set
//! its Accessed bit again after a clear without a flush, and does not fault again while
//! poisoned; a miss (a conflict in the array, a shootdown) walks and does.

use super::page_table::{ACCESSED, POISONED};
use super::sampled::{PAGE, WARM};
use super::*;
use crate::units::Capacity;

const BASE: u64 = 0x7f00_0000_0000;
/// A page whose base-page reach slot is page `BASE`'s. The array has 1 024 slots (32
/// L1 + 512 L2 base-page entries, rounded up to a power of two) and a slot is the
/// virtual page number's low 10 bits XOR-ed with the bits above them (tenant 0 adds
/// nothing): `BASE`'s page number 0x7f00_0000 gives 0x000 ^ (0x1f_c000 & 0x3ff) = 0,
/// and 1 025 pages further, 0x7f00_0401, gives 0x001 ^ (0x1f_c001 & 0x3ff) = 0 too.
const CONFLICT: u64 = BASE + 1025 * 4096;

fn machine() -> Machine {
    let mut cfg = MachineConfig { cores: 1, ..MachineConfig::default() };
    cfg.tiers.fast.capacity = Capacity::Bytes(16 << 20);
    cfg.tiers.slow.capacity = Capacity::Bytes(16 << 20);
    let mut m = Machine::new(&cfg, &Build::new(&cfg, &[TenantKind::Process], 8 << 20)).unwrap();
    assert!(m.start_sampling(true), "a process only: page-granular");
    m
}

fn read<const M: u8>(m: &mut Machine, vaddr: u64) -> RefOutcome {
    m.access_in::<M, ()>(0, &Access::read(vaddr, 8, 0), &mut ())
}

/// The leaf entry of the page holding `vaddr`.
fn pte(m: &mut Machine, vaddr: u64) -> &mut u64 {
    let slot = m.space.mapped(PageRef::new(0, vaddr)).unwrap().slot;
    m.space.entry_mut(0, slot)
}

#[test]
fn a_translation_the_reach_array_holds_does_not_set_the_accessed_bit_again() {
    let mut m = machine();
    // The first reference maps the page (first touch) and walks: Accessed set.
    read::<PAGE>(&mut m, BASE);
    assert_eq!(m.cores[0].stats.first_touch_faults, 1);
    assert_ne!(*pte(&mut m, BASE) & ACCESSED, 0);
    // A scanner clears the bit without a flush: the next reference hits the reach
    // array and leaves it clear, as a TLB hit does.
    *pte(&mut m, BASE) &= !ACCESSED;
    read::<PAGE>(&mut m, BASE + 64);
    assert_eq!(*pte(&mut m, BASE) & ACCESSED, 0, "a reach hit does not walk");
    // A page in the same slot evicts the translation: the next reference walks again.
    read::<PAGE>(&mut m, CONFLICT);
    read::<PAGE>(&mut m, BASE + 128);
    assert_ne!(*pte(&mut m, BASE) & ACCESSED, 0, "a reach miss walks and sets the bit");
    // A shootdown (the clear with a flush) drops it too.
    *pte(&mut m, BASE) &= !ACCESSED;
    m.cores[0].tlb.invalidate(0, BASE, false);
    read::<PAGE>(&mut m, BASE);
    assert_ne!(*pte(&mut m, BASE) & ACCESSED, 0);
    // No TLB count moves per reference at page granularity: they are estimated when
    // the window ends (none fitted here, so none).
    assert_eq!((m.cores[0].stats.tlb_l1_hits, m.cores[0].stats.tlb_misses), (0, 0));
    m.end_fast_forward(0);
    assert_eq!((m.cores[0].stats.tlb_l1_hits, m.cores[0].stats.tlb_misses), (0, 0));
}

#[test]
fn a_poisoned_page_faults_on_a_reach_miss_only() {
    let mut m = machine();
    read::<PAGE>(&mut m, BASE);
    // Poisoning shoots the translation down (`ops::set_poison`): the next reference
    // misses the reach array, walks, and faults; the one after hits, and does not.
    *pte(&mut m, BASE) |= POISONED;
    m.cores[0].tlb.invalidate(0, BASE, false);
    read::<PAGE>(&mut m, BASE);
    assert_eq!(m.cores[0].stats.poison_faults, 1);
    read::<PAGE>(&mut m, BASE + 8);
    assert_eq!(m.cores[0].stats.poison_faults, 1, "a reach hit does not fault");
    // Evicted by a conflicting page, the still-poisoned translation faults again
    // (BadgerTrap counts every TLB miss, Thermostat §3.3).
    read::<PAGE>(&mut m, CONFLICT);
    read::<PAGE>(&mut m, BASE);
    assert_eq!(m.cores[0].stats.poison_faults, 2);
}

#[test]
fn detailed_windows_keep_the_reach_array_current() {
    let mut m = machine();
    // A detailed reference (re-warming) walks through the real TLBs and fills the
    // reach array too; a fast-forward reference then hits it and does not walk.
    read::<WARM>(&mut m, BASE);
    *pte(&mut m, BASE) &= !ACCESSED;
    read::<PAGE>(&mut m, BASE + 256);
    assert_eq!(*pte(&mut m, BASE) & ACCESSED, 0);
    // The invariant check reads the reach array's translations too: none is stale.
    m.check_invariants().unwrap();
    // A migration's shootdown reaches it (the invalidation every mechanism makes).
    m.cores[0].tlb.invalidate(0, BASE, false);
    assert!(m.cores[0].tlb.reach_lookup(0, BASE).is_none());
}
