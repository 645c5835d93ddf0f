//! Mechanism tests on a small machine: each mechanism's effect and cost, the
//! `--verify` shadow memory catching a deliberately broken migration, and random
//! operation sequences that must keep every invariant.

use super::*;
use crate::machine::placement::Placement;
use crate::machine::{FaultKind, MachineConfig, TenantKind};
use crate::trace::Access;
use crate::units::Capacity;
use proptest::prelude::*;

const MIB: u64 = 1 << 20;

/// Two cores; a 4 MiB fast tier (1024 frames) and an 8 MiB slow tier; 2 MiB huge pages.
fn machine(thp: bool, verify: bool, kinds: &[TenantKind]) -> Machine {
    machine_with(thp, verify, kinds, 4 * MIB)
}

fn machine_with(thp: bool, verify: bool, kinds: &[TenantKind], fast: u64) -> Machine {
    let mut cfg = MachineConfig { cores: 2, ..MachineConfig::default() };
    cfg.page_table.thp = thp;
    cfg.tiers.fast.capacity = Capacity::Bytes(fast);
    cfg.tiers.slow.capacity = Capacity::Bytes(8 * MIB);
    Machine::new(&cfg, kinds, 4 * MIB, Placement::FastFirst, false, verify).unwrap()
}

fn read(m: &mut Machine, core: usize, tenant: u16, vaddr: u64) {
    m.access(core, &Access { tenant, ..Access::read(vaddr, 8, 0) }, &mut ());
}

fn write(m: &mut Machine, core: usize, tenant: u16, vaddr: u64) {
    m.access(core, &Access { tenant, ..Access::write(vaddr, 8, 0) }, &mut ());
}

const BASE: u64 = 0x7f00_0000_0000;

#[test]
fn migrate_moves_the_page_and_charges_its_cost() {
    let mut m = machine(false, true, &[TenantKind::Process]);
    write(&mut m, 0, 0, BASE);
    read(&mut m, 1, 0, BASE); // core 1 caches the translation too
    let before = Mechanisms::new(&mut m, 0).page(0, BASE).unwrap();
    assert_eq!(before.tier, 0);
    assert!(before.dirty && before.accessed);
    let clock0 = m.cores[0].clock;
    let clock1 = m.cores[1].clock;
    let after = Mechanisms::new(&mut m, 0).migrate(0, BASE + 100, 1).unwrap();
    assert_eq!((after.tier, after.addr), (1, BASE));
    // Software cost alone: 2000 ns at 3.2 GHz = 6400 cycles; plus the copy, the flush of
    // 64 lines (8 cycles each) and a 300-cycle shootdown.
    assert!(m.cores[0].clock - clock0 >= 6400 + 64 * 8 + 300, "{}", m.cores[0].clock - clock0);
    assert_eq!(m.cores[1].clock - clock1, 300, "the remote core handles the shootdown IPI");
    assert_eq!(m.mech.migrations, 1);
    assert_eq!(m.mech.migrations_between[0][1], 1);
    assert!(!m.caches.holds_any(before.pfn << 12, 4096), "old frame flushed");
    m.check_invariants().unwrap();
    read(&mut m, 1, 0, BASE);
    assert_eq!(m.error, None);
    assert_eq!(Mechanisms::new(&mut m, 0).migrate(0, BASE, 1), Err(MechError::SameTier));
    assert!(matches!(Mechanisms::new(&mut m, 0).migrate(0, BASE + (1 << 30), 0), Err(MechError::NotMapped { .. })));
}

#[test]
fn verify_catches_a_migration_that_skips_the_copy() {
    let mut m = machine(false, true, &[TenantKind::Process]);
    write(&mut m, 0, 0, BASE);
    m.break_migration_copy = true;
    Mechanisms::new(&mut m, 0).migrate(0, BASE, 1).unwrap();
    read(&mut m, 0, 0, BASE);
    let e = m.error.clone().expect("the stale read must be caught");
    assert!(e.starts_with("verify: stale read"), "{e}");
}

#[test]
fn verify_catches_a_stale_tlb_entry() {
    // A translation that survives a migration serves the freed frame.
    let mut m = machine(false, true, &[TenantKind::Process]);
    write(&mut m, 0, 0, BASE);
    let old = Mechanisms::new(&mut m, 0).page(0, BASE).unwrap();
    Mechanisms::new(&mut m, 0).migrate(0, BASE, 1).unwrap();
    let stale = crate::machine::tlb::TlbEntry { base_pfn: old.pfn, huge: false, dirty: true, slot: crate::machine::tlb::NO_SLOT };
    m.cores[0].tlb.fill(0, BASE, stale);
    assert!(m.check_invariants().unwrap_err().contains("stale TLB entry"));
    read(&mut m, 0, 0, BASE);
    assert!(m.error.clone().unwrap().contains("<freed>"));
}

#[test]
fn swap_exchanges_frames() {
    let mut m = machine(false, true, &[TenantKind::Process]);
    // Fill the fast tier so the next page lands in the slow tier.
    let fast_pages = m.alloc.free_frames(0);
    for i in 0..fast_pages + 1 {
        write(&mut m, 0, 0, BASE + i * 4096);
    }
    let hot = BASE + fast_pages * 4096;
    let mut mech = Mechanisms::new(&mut m, 0);
    let (a, b) = (mech.page(0, BASE + 4096 * 3).unwrap(), mech.page(0, hot).unwrap());
    assert_eq!((a.tier, b.tier), (0, 1));
    mech.swap((0, hot), (0, a.addr)).unwrap();
    assert_eq!(mech.page(0, hot).unwrap().pfn, a.pfn);
    assert_eq!(mech.page(0, a.addr).unwrap().pfn, b.pfn);
    assert_eq!(mech.swap((0, hot), (0, BASE)), Err(MechError::Mismatch), "both now fast");
    m.check_invariants().unwrap();
    read(&mut m, 0, 0, hot);
    read(&mut m, 0, 0, a.addr);
    assert_eq!(m.error, None);
}

#[test]
fn split_then_merge_round_trip_keeps_data_and_bits() {
    let mut m = machine(true, true, &[TenantKind::Process]);
    write(&mut m, 0, 0, BASE + 5 * 4096);
    let huge = Mechanisms::new(&mut m, 0).page(0, BASE).unwrap();
    assert!(huge.huge);
    Mechanisms::new(&mut m, 0).split(0, BASE).unwrap();
    let p = Mechanisms::new(&mut m, 0).page(0, BASE + 5 * 4096).unwrap();
    assert!(!p.huge && p.dirty, "base pages inherit the dirty bit");
    assert_eq!(p.pfn, huge.pfn + 5, "split maps the same frames");
    m.check_invariants().unwrap();
    read(&mut m, 0, 0, BASE + 5 * 4096);
    // Merge in place (frames still contiguous in the fast tier), then into the slow tier.
    Mechanisms::new(&mut m, 0).merge(0, BASE, 0).unwrap();
    assert_eq!(Mechanisms::new(&mut m, 0).page(0, BASE).unwrap().pfn, huge.pfn);
    Mechanisms::new(&mut m, 0).split(0, BASE).unwrap();
    Mechanisms::new(&mut m, 0).merge(0, BASE, 1).unwrap();
    let moved = Mechanisms::new(&mut m, 0).page(0, BASE).unwrap();
    assert!(moved.huge && moved.tier == 1);
    m.check_invariants().unwrap();
    read(&mut m, 0, 0, BASE + 5 * 4096);
    assert_eq!(m.error, None);
    assert_eq!(Mechanisms::new(&mut m, 0).merge(0, BASE, 1), Err(MechError::WrongSize));
}

#[test]
fn scan_reports_and_clears_accessed_bits() {
    let mut m = machine(false, false, &[TenantKind::Process]);
    for i in 0..4 {
        read(&mut m, 0, 0, BASE + i * 4096);
    }
    write(&mut m, 0, 0, BASE);
    let mut seen = Vec::new();
    let n = Mechanisms::new(&mut m, 0).scan(0, BASE, BASE + (1 << 20), true, |p| seen.push((p.accessed, p.dirty)));
    assert_eq!(n, 4);
    assert_eq!(seen, vec![(true, true), (true, false), (true, false), (true, false)]);
    assert!(m.cores[0].tlb.lookup(0, BASE).is_none(), "cleared entries are flushed from the TLB");
    read(&mut m, 0, 0, BASE + 4096);
    let mut acc = Vec::new();
    Mechanisms::new(&mut m, 0).scan(0, BASE, BASE + (1 << 20), false, |p| acc.push(p.accessed));
    assert_eq!(acc, vec![false, true, false, false]);
}

#[test]
fn poisoned_page_faults_once_per_tlb_miss() {
    struct Faults(u64);
    impl crate::machine::Observer for Faults {
        fn on_fault(&mut self, e: &crate::machine::FaultEvent) {
            self.0 += (e.kind == FaultKind::Poison) as u64;
        }
    }
    let mut m = machine(false, false, &[TenantKind::Process]);
    read(&mut m, 0, 0, BASE);
    Mechanisms::new(&mut m, 0).poison(0, BASE).unwrap();
    let mut f = Faults(0);
    let c0 = m.cores[0].clock;
    m.access(0, &Access::read(BASE, 8, 0), &mut f);
    m.access(0, &Access::read(BASE + 8, 8, 0), &mut f); // TLB hit: no second fault
    assert_eq!(f.0, 1);
    assert_eq!(m.cores[0].stats.poison_faults, 1);
    assert!(m.cores[0].clock - c0 >= 3200, "1 µs fault at 3.2 GHz");
}

#[test]
fn nested_walks_take_24_and_15_references() {
    // 4 KiB guest and host pages: 4 guest levels × (4 EPT + 1) + 4 EPT = 24.
    let mut m = machine(false, true, &[TenantKind::Vm]);
    read(&mut m, 0, 0, BASE);
    assert_eq!(m.cores[0].stats.walk_references, 24);
    // Huge pages in both dimensions: 3 × (3 + 1) + 3 = 15. (The fast tier needs whole
    // free huge frames for the guest's page-table region and its data region.)
    let mut m = machine_with(true, true, &[TenantKind::Vm], 16 * MIB);
    read(&mut m, 0, 0, BASE);
    assert_eq!(m.cores[0].stats.walk_references, 15);
    // A process walks 4 levels (3 with huge pages).
    let mut m = machine(false, false, &[TenantKind::Process]);
    read(&mut m, 0, 0, BASE);
    assert_eq!(m.cores[0].stats.walk_references, 4);
    let mut m = machine(true, false, &[TenantKind::Process]);
    read(&mut m, 0, 0, BASE);
    assert_eq!(m.cores[0].stats.walk_references, 3);
}

#[test]
fn vm_page_migration_keeps_guest_data_consistent() {
    let mut m = machine(false, true, &[TenantKind::Vm, TenantKind::Process]);
    write(&mut m, 0, 0, BASE);
    write(&mut m, 1, 1, BASE);
    let gpa = m.managed_addr(0, BASE).unwrap();
    Mechanisms::new(&mut m, 0).migrate(0, gpa, 1).unwrap();
    read(&mut m, 0, 0, BASE);
    read(&mut m, 1, 1, BASE);
    assert_eq!(m.error, None);
    m.check_invariants().unwrap();
}

#[derive(Clone, Debug)]
enum Op {
    Read(u8, u8),
    Write(u8, u8),
    Migrate(u8, u8),
    Swap(u8, u8),
    Split(u8),
    Merge(u8, u8),
    Scan,
    Poison(u8),
    Unpoison(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..2, 0u8..48).prop_map(|(c, p)| Op::Read(c, p)),
        4 => (0u8..2, 0u8..48).prop_map(|(c, p)| Op::Write(c, p)),
        3 => (0u8..48, 0u8..2).prop_map(|(p, t)| Op::Migrate(p, t)),
        2 => (0u8..48, 0u8..48).prop_map(|(a, b)| Op::Swap(a, b)),
        1 => (0u8..3).prop_map(Op::Split),
        1 => (0u8..3, 0u8..2).prop_map(|(r, t)| Op::Merge(r, t)),
        1 => Just(Op::Scan),
        1 => (0u8..48).prop_map(Op::Poison),
        1 => (0u8..48).prop_map(Op::Unpoison),
    ]
}

/// Pages 0..48 spread over three 2 MiB regions (16 pages at the start of each).
fn page_addr(p: u8) -> u64 {
    BASE + (p as u64 / 16) * (2 << 20) + (p as u64 % 16) * 4096
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any sequence of accesses and mechanism calls keeps every page mapped exactly
    /// once, every tier within capacity, every TLB entry current, and every read served
    /// the newest data. Refusals (no free frame, wrong size, …) are fine.
    #[test]
    fn random_operations_keep_the_invariants(thp in any::<bool>(), ops in proptest::collection::vec(op(), 1..60)) {
        let mut m = machine(thp, true, &[TenantKind::Process]);
        for o in &ops {
            match *o {
                Op::Read(c, p) => read(&mut m, c as usize, 0, page_addr(p)),
                Op::Write(c, p) => write(&mut m, c as usize, 0, page_addr(p)),
                Op::Migrate(p, t) => { let _ = Mechanisms::new(&mut m, 0).migrate(0, page_addr(p), t as usize); }
                Op::Swap(a, b) => { let _ = Mechanisms::new(&mut m, 1).swap((0, page_addr(a)), (0, page_addr(b))); }
                Op::Split(r) => { let _ = Mechanisms::new(&mut m, 0).split(0, page_addr(r * 16)); }
                Op::Merge(r, t) => { let _ = Mechanisms::new(&mut m, 0).merge(0, page_addr(r * 16), t as usize); }
                Op::Scan => { Mechanisms::new(&mut m, 0).scan(0, 0, u64::MAX, true, |_| {}); }
                Op::Poison(p) => { let _ = Mechanisms::new(&mut m, 0).poison(0, page_addr(p)); }
                Op::Unpoison(p) => { let _ = Mechanisms::new(&mut m, 0).unpoison(0, page_addr(p)); }
            }
            prop_assert_eq!(m.error.clone(), None, "after {:?}", o);
            if let Err(e) = m.check_invariants() {
                prop_assert!(false, "after {:?}: {}", o, e);
            }
        }
        for p in 0..48 {
            read(&mut m, 0, 0, page_addr(p));
        }
        prop_assert_eq!(m.error.clone(), None);
    }
}

#[test]
fn colours_from_bank_and_llc_bits() {
    // memos-like mapping on the slow tier: bank bits 12–14, 20–21 (32 banks), one channel.
    let mut cfg = MachineConfig { cores: 1, ..MachineConfig::default() };
    cfg.tiers.fast.capacity = Capacity::Bytes(4 * MIB);
    cfg.tiers.slow.capacity = Capacity::Bytes(8 * MIB);
    cfg.tiers.slow.channels = 1;
    cfg.tiers.slow.banks = 32;
    cfg.tiers.slow.channel_bits = vec![];
    cfg.tiers.slow.bank_bits = vec![12, 13, 14, 20, 21];
    let mut m = Machine::new(&cfg, &[TenantKind::Process], 4 * MIB, Placement::FastFirst, false, true).unwrap();
    write(&mut m, 0, 0, BASE);
    let mech = Mechanisms::new(&mut m, 0);
    // Bank 0b10_101 = 21: bits 12 and 14 set, 13 clear, 20 clear, 21 set.
    // As frame bits (minus 12): mask 0b11_0000_0111, value 0b10_0000_0101.
    let c = mech.colour(1, None, Some(21), None).unwrap();
    assert_eq!((c.mask, c.value), (0b11_0000_0111, 0b10_0000_0101));
    // The 8 MiB L3 has 8192 sets: set-index bits 6–18, colour bits 12–18 (128 colours).
    let c = mech.colour(1, None, None, Some(5)).unwrap();
    assert_eq!((c.mask, c.value), (0x7f, 5));
    assert!(mech.colour(1, None, None, Some(128)).unwrap_err().contains("does not exist"));
    // The fast tier interleaves channels by cache line: no channel colour at page grain.
    let mut m2 = machine(false, false, &[TenantKind::Process]);
    m2.tiers[0] = crate::machine::tier::Tier::new(
        &crate::machine::tier::TierConfig { channels: 2, ..Default::default() },
        4 * MIB,
        3.2,
    )
    .unwrap();
    assert!(Mechanisms::new(&mut m2, 0).colour(0, Some(1), None, None).unwrap_err().contains("address bit 6"));
    // A coloured migration lands on a frame of that bank.
    let mut mech = Mechanisms::new(&mut m, 0);
    let c = mech.colour(1, None, Some(21), None).unwrap();
    let p = mech.migrate_coloured(0, BASE, 1, c).unwrap();
    let local = p.pfn - m.alloc.base(1);
    assert_eq!(m.tiers[1].decode(local << 12).bank, 21);
    read(&mut m, 0, 0, BASE);
    assert_eq!(m.error, None);
}

#[test]
fn fast_tier_quota_limits_first_touch_and_moves() {
    let mut m = machine(false, true, &[TenantKind::Process, TenantKind::Process]);
    Mechanisms::new(&mut m, 0).set_fast_quota(0, Some(4));
    for i in 0..8 {
        write(&mut m, 0, 0, BASE + i * 4096);
    }
    write(&mut m, 1, 1, BASE);
    let mut mech = Mechanisms::new(&mut m, 0);
    // Tenant 0: 4 pages in the fast tier (its quota), the rest in the slow tier.
    assert_eq!((mech.tenant_frames(0, 0), mech.tenant_frames(0, 1)), (4, 4));
    assert_eq!(mech.tenant_frames(1, 0), 1, "tenant 1 has no quota");
    let slow_page = (0..8).map(|i| BASE + i * 4096).find(|&a| mech.page(0, a).unwrap().tier == 1).unwrap();
    let fast_page = (0..8).map(|i| BASE + i * 4096).find(|&a| mech.page(0, a).unwrap().tier == 0).unwrap();
    assert_eq!(mech.migrate(0, slow_page, 0), Err(MechError::OverQuota { tenant: 0 }));
    // Within the tenant a swap keeps its fast share, so it is allowed.
    mech.swap((0, slow_page), (0, fast_page)).unwrap();
    // Across tenants: tenant 0 would gain a fast frame.
    assert_eq!(mech.swap((0, fast_page), (1, BASE)), Err(MechError::OverQuota { tenant: 0 }));
    mech.set_fast_quota(0, Some(5));
    mech.migrate(0, fast_page, 0).unwrap();
    assert_eq!(mech.tenant_frames(0, 0), 5);
    // Lowering the quota refuses growth but leaves what is there to the policy.
    mech.set_fast_quota(0, Some(2));
    let slow_page = (0..8).map(|i| BASE + i * 4096).find(|&a| mech.page(0, a).unwrap().tier == 1).unwrap();
    assert_eq!(mech.migrate(0, slow_page, 0), Err(MechError::OverQuota { tenant: 0 }));
    m.check_invariants().unwrap();
}

#[test]
fn background_work_stalls_no_core_but_interrupts_all() {
    let mut m = machine(false, true, &[TenantKind::Process]);
    write(&mut m, 0, 0, BASE);
    let (c0, c1) = (m.cores[0].clock, m.cores[1].clock);
    Mechanisms::new(&mut m, 0).in_background().migrate(0, BASE, 1).unwrap();
    // Only the shootdown IPI reaches the application cores, both of them.
    assert_eq!((m.cores[0].clock - c0, m.cores[1].clock - c1), (300, 300));
    assert!(m.mech.background_cycles >= 6400, "the software cost is counted as background work");
    read(&mut m, 0, 0, BASE);
    assert_eq!(m.error, None);
}

#[test]
fn background_work_queues_on_one_thread() {
    let mut m = machine(false, false, &[TenantKind::Process]);
    write(&mut m, 0, 0, BASE);
    write(&mut m, 0, 0, BASE + 4096);
    let mut mech = Mechanisms::new(&mut m, 0);
    assert!(!mech.background_busy());
    mech.in_background().migrate(0, BASE, 1).unwrap();
    let after_one = m.background_until;
    let mut mech = Mechanisms::new(&mut m, 0);
    assert!(mech.background_busy(), "the thread is still copying");
    mech.in_background().migrate(0, BASE + 4096, 1).unwrap();
    // The second migration starts when the first ends.
    assert!(m.background_until >= after_one + 6400);
}
