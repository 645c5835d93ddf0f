//! Mechanism tests on a small machine: each mechanism's effect and cost, the
//! `--verify` shadow memory catching a deliberately broken migration, and random
//! operation sequences that must keep every invariant.

use super::*;
use crate::machine::{Build, FaultKind, MachineConfig, TenantKind};
use crate::trace::Access;
use crate::units::Capacity;
use proptest::prelude::*;

const MIB: u64 = 1 << 20;
const FAST: TierId = TierId::FAST;
const SLOW: TierId = TierId::SLOW;

/// A machine of `cfg` for `kinds` tenants and a 4 MiB footprint.
pub(crate) fn build(cfg: &MachineConfig, kinds: &[TenantKind], verify: bool) -> Machine {
    let mut b = Build::new(cfg, kinds, 4 * MIB);
    b.verify = verify;
    Machine::new(cfg, &b).unwrap()
}

/// Two cores; a 4 MiB fast tier (1024 frames) and an 8 MiB slow tier; 2 MiB huge pages.
fn machine(thp: bool, verify: bool, kinds: &[TenantKind]) -> Machine {
    machine_with(thp, verify, kinds, 4 * MIB)
}

fn machine_with(thp: bool, verify: bool, kinds: &[TenantKind], fast: u64) -> Machine {
    build(&config(thp, fast), kinds, verify)
}

fn config(thp: bool, fast: u64) -> MachineConfig {
    let mut cfg = MachineConfig { cores: 2, ..MachineConfig::default() };
    cfg.page_table.thp = thp;
    cfg.tiers.fast.capacity = Capacity::Bytes(fast);
    cfg.tiers.slow.capacity = Capacity::Bytes(8 * MIB);
    cfg
}

/// The mechanisms of `core`, with a runtime of one kernel thread.
fn on<'a>(m: &'a mut Machine, rt: &'a mut Runtime, core: usize) -> Mechanisms<'a> {
    Mechanisms::on_core(m, rt, core)
}

fn rt() -> Runtime {
    Runtime::new(&[ThreadKind::Kernel], 2)
}

fn pg(addr: u64) -> PageRef {
    PageRef::new(0, addr)
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
    let (mut m, mut rt) = (machine(false, true, &[TenantKind::Process]), rt());
    write(&mut m, 0, 0, BASE);
    read(&mut m, 1, 0, BASE); // core 1 caches the translation too
    let before = on(&mut m, &mut rt, 0).page(pg(BASE)).unwrap();
    assert_eq!(before.tier, FAST);
    assert!(before.dirty && before.accessed);
    let clock0 = m.cores[0].clock;
    let clock1 = m.cores[1].clock;
    let after = on(&mut m, &mut rt, 0).migrate(pg(BASE + 100), SLOW).unwrap();
    assert_eq!((after.tier, after.addr, after.bytes), (SLOW, BASE, 4096));
    // Software cost alone: 2000 ns at 3.2 GHz = 6400 cycles; plus the copy, the flush of
    // 64 lines (8 cycles each) and a 300-cycle shootdown.
    assert!(m.cores[0].clock - clock0 >= 6400 + 64 * 8 + 300, "{}", m.cores[0].clock - clock0);
    assert_eq!(m.cores[1].clock - clock1, 300, "the remote core handles the shootdown IPI");
    assert_eq!(m.stats.migrate, crate::machine::ops::MoveCount { pages: 1, bytes: 4096 });
    assert_eq!(m.stats.pages_between[0][1], 1);
    assert!(!m.mem.caches.holds_any(before.pfn << 12, 4096), "old frame flushed");
    m.check_invariants().unwrap();
    read(&mut m, 1, 0, BASE);
    assert_eq!(m.error, None);
    assert_eq!(on(&mut m, &mut rt, 0).migrate(pg(BASE), SLOW), Err(MechError::AlreadyThere { page: pg(BASE), tier: SLOW }));
    assert!(matches!(on(&mut m, &mut rt, 0).migrate(pg(BASE + (1 << 30)), FAST), Err(MechError::NotMapped { .. })));
    assert_eq!(on(&mut m, &mut rt, 0).migrate(pg(BASE), TierId(5)), Err(MechError::NoSuchTier { tier: TierId(5) }));
    assert_eq!(on(&mut m, &mut rt, 0).migrate(PageRef::new(9, BASE), FAST), Err(MechError::NoSuchTenant { tenant: 9 }));
}

#[test]
fn verify_catches_a_migration_that_skips_the_copy() {
    let (mut m, mut rt) = (machine(false, true, &[TenantKind::Process]), rt());
    write(&mut m, 0, 0, BASE);
    m.break_migration_copy = true;
    on(&mut m, &mut rt, 0).migrate(pg(BASE), SLOW).unwrap();
    read(&mut m, 0, 0, BASE);
    let e = m.error.clone().expect("the stale read must be caught");
    assert!(e.starts_with("verify: stale read"), "{e}");
}

#[test]
fn verify_catches_a_stale_tlb_entry() {
    // A translation that survives a migration serves the freed frame.
    let (mut m, mut rt) = (machine(false, true, &[TenantKind::Process]), rt());
    write(&mut m, 0, 0, BASE);
    let old = on(&mut m, &mut rt, 0).page(pg(BASE)).unwrap();
    on(&mut m, &mut rt, 0).migrate(pg(BASE), SLOW).unwrap();
    let stale = crate::machine::tlb::TlbEntry { base_pfn: old.pfn, huge: false, dirty: true, slot: crate::machine::tlb::NO_SLOT };
    m.cores[0].tlb.fill(0, BASE, stale);
    assert!(m.check_invariants().unwrap_err().contains("stale TLB entry"));
    read(&mut m, 0, 0, BASE);
    assert!(m.error.clone().unwrap().contains("<freed>"));
}

#[test]
fn swap_exchanges_frames() {
    let (mut m, mut rt) = (machine(false, true, &[TenantKind::Process]), rt());
    // Fill the fast tier so the next page lands in the slow tier.
    let fast_pages = m.space.allocator().free_frames(FAST);
    for i in 0..fast_pages + 1 {
        write(&mut m, 0, 0, BASE + i * 4096);
    }
    let hot = BASE + fast_pages * 4096;
    let mut mech = on(&mut m, &mut rt, 0);
    let (a, b) = (mech.page(pg(BASE + 4096 * 3)).unwrap(), mech.page(pg(hot)).unwrap());
    assert_eq!((a.tier, b.tier), (FAST, SLOW));
    mech.swap(pg(hot), a.at()).unwrap();
    assert_eq!(mech.page(pg(hot)).unwrap().pfn, a.pfn);
    assert_eq!(mech.page(a.at()).unwrap().pfn, b.pfn);
    assert_eq!(mech.swap(pg(hot), pg(BASE)), Err(MechError::SameTier { a: pg(hot), b: pg(BASE), tier: FAST }), "both now fast");
    assert_eq!(m.stats.swap.pages, 2);
    m.check_invariants().unwrap();
    read(&mut m, 0, 0, hot);
    read(&mut m, 0, 0, a.addr);
    assert_eq!(m.error, None);
}

#[test]
fn split_then_merge_round_trip_keeps_data_and_bits() {
    let (mut m, mut rt) = (machine(true, true, &[TenantKind::Process]), rt());
    write(&mut m, 0, 0, BASE + 5 * 4096);
    let huge = on(&mut m, &mut rt, 0).page(pg(BASE)).unwrap();
    assert!(huge.huge && huge.bytes == 2 * MIB && huge.base_pages() == 512);
    on(&mut m, &mut rt, 0).split(pg(BASE)).unwrap();
    let p = on(&mut m, &mut rt, 0).page(pg(BASE + 5 * 4096)).unwrap();
    assert!(!p.huge && p.dirty, "base pages inherit the dirty bit");
    assert_eq!(p.pfn, huge.pfn + 5, "split maps the same frames");
    assert_eq!(p.page, huge.page + 5, "page numbers do not change with the mapping");
    m.check_invariants().unwrap();
    read(&mut m, 0, 0, BASE + 5 * 4096);
    // Merge in place (frames still contiguous in the fast tier), then into the slow tier.
    on(&mut m, &mut rt, 0).merge(pg(BASE), FAST).unwrap();
    assert_eq!(on(&mut m, &mut rt, 0).page(pg(BASE)).unwrap().pfn, huge.pfn);
    on(&mut m, &mut rt, 0).split(pg(BASE)).unwrap();
    on(&mut m, &mut rt, 0).merge(pg(BASE), SLOW).unwrap();
    let moved = on(&mut m, &mut rt, 0).page(pg(BASE)).unwrap();
    assert!(moved.huge && moved.tier == SLOW && moved.page == huge.page);
    assert_eq!((m.stats.merges, m.stats.merges_copied, m.stats.merge.pages), (2, 1, 512));
    assert_eq!(m.stats.pages_between[0][1], 512, "every base page moved to the slow tier");
    m.check_invariants().unwrap();
    read(&mut m, 0, 0, BASE + 5 * 4096);
    assert_eq!(m.error, None);
    assert_eq!(on(&mut m, &mut rt, 0).merge(pg(BASE), SLOW), Err(MechError::AlreadyHuge { page: pg(BASE) }));
    assert_eq!(on(&mut m, &mut rt, 0).split(pg(BASE + 4096)), Ok(()));
    assert_eq!(on(&mut m, &mut rt, 0).split(pg(BASE + 4096)), Err(MechError::NotHuge { page: pg(BASE + 4096) }));
}

#[test]
fn scan_reports_and_clears_accessed_bits() {
    let (mut m, mut rt) = (machine(false, false, &[TenantKind::Process]), rt());
    for i in 0..4 {
        read(&mut m, 0, 0, BASE + i * 4096);
    }
    write(&mut m, 0, 0, BASE);
    let mut seen = Vec::new();
    let range = Scope::Range { tenant: 0, start: BASE, end: BASE + MIB };
    let n = on(&mut m, &mut rt, 0).scan(range, ScanMode::Clear, |p| seen.push((p.accessed, p.dirty)));
    assert_eq!(n, ScanSummary { entries: 4, accessed: 4, cleared: 4 });
    assert_eq!(seen, vec![(true, true), (true, false), (true, false), (true, false)]);
    assert!(m.cores[0].tlb.lookup(0, BASE).is_none(), "cleared entries are flushed from the TLB");
    read(&mut m, 0, 0, BASE + 4096);
    let mut acc = Vec::new();
    on(&mut m, &mut rt, 0).scan(range, ScanMode::Read, |p| acc.push(p.accessed));
    assert_eq!(acc, vec![false, true, false, false]);
    // The whole tenant, and every tenant, without sentinel addresses.
    assert_eq!(on(&mut m, &mut rt, 0).scan(Scope::Tenant(0), ScanMode::Read, |_| {}).entries, 4);
    assert_eq!(on(&mut m, &mut rt, 0).scan(Scope::All, ScanMode::Read, |_| {}).accessed, 1);
}

#[test]
fn poisoned_page_faults_once_per_tlb_miss() {
    struct Faults(u64);
    impl crate::machine::Observer for Faults {
        fn on_fault(&mut self, e: &crate::machine::FaultEvent) {
            self.0 += (e.kind == FaultKind::Poison) as u64;
        }
    }
    let (mut m, mut rt) = (machine(false, false, &[TenantKind::Process]), rt());
    read(&mut m, 0, 0, BASE);
    on(&mut m, &mut rt, 0).poison(pg(BASE)).unwrap();
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
    let (mut m, mut rt) = (machine(false, true, &[TenantKind::Vm, TenantKind::Process]), rt());
    write(&mut m, 0, 0, BASE);
    write(&mut m, 1, 1, BASE);
    let gpa = m.space.managed_addr(0, BASE).unwrap();
    on(&mut m, &mut rt, 0).migrate(pg(gpa), SLOW).unwrap();
    read(&mut m, 0, 0, BASE);
    read(&mut m, 1, 1, BASE);
    assert_eq!(m.error, None);
    m.check_invariants().unwrap();
}

#[derive(Clone, Debug)]
enum Step {
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

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u8..2, 0u8..48).prop_map(|(c, p)| Step::Read(c, p)),
        4 => (0u8..2, 0u8..48).prop_map(|(c, p)| Step::Write(c, p)),
        3 => (0u8..48, 0u8..2).prop_map(|(p, t)| Step::Migrate(p, t)),
        2 => (0u8..48, 0u8..48).prop_map(|(a, b)| Step::Swap(a, b)),
        1 => (0u8..3).prop_map(Step::Split),
        1 => (0u8..3, 0u8..2).prop_map(|(r, t)| Step::Merge(r, t)),
        1 => Just(Step::Scan),
        1 => (0u8..48).prop_map(Step::Poison),
        1 => (0u8..48).prop_map(Step::Unpoison),
    ]
}

/// Pages 0..48 spread over three 2 MiB regions (16 pages at the start of each).
fn page_addr(p: u8) -> u64 {
    BASE + (p as u64 / 16) * (2 << 20) + (p as u64 % 16) * 4096
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any sequence of accesses and mechanism calls keeps every page mapped exactly
    /// once, every tier within capacity, every TLB and paging-structure-cache entry
    /// current, and every read served the newest data. Refusals (no free frame, wrong
    /// size, …) are fine.
    #[test]
    fn random_operations_keep_the_invariants(thp in any::<bool>(), psc in any::<bool>(), ops in proptest::collection::vec(step(), 1..60)) {
        let mut cfg = config(thp, 4 * MIB);
        if psc {
            cfg.tlb.psc = crate::machine::psc::PscConfig { pde_entries: 32, pdpte_entries: 4, pml4e_entries: 2, ..Default::default() };
        }
        let (mut m, mut rt) = (build(&cfg, &[TenantKind::Process], true), rt());
        for o in &ops {
            let page = |p: u8| pg(page_addr(p));
            match *o {
                Step::Read(c, p) => read(&mut m, c as usize, 0, page_addr(p)),
                Step::Write(c, p) => write(&mut m, c as usize, 0, page_addr(p)),
                Step::Migrate(p, t) => { let _ = on(&mut m, &mut rt, 0).migrate(page(p), TierId(t)); }
                Step::Swap(a, b) => { let _ = on(&mut m, &mut rt, 1).swap(page(a), page(b)); }
                Step::Split(r) => { let _ = on(&mut m, &mut rt, 0).split(page(r * 16)); }
                Step::Merge(r, t) => { let _ = on(&mut m, &mut rt, 0).merge(page(r * 16), TierId(t)); }
                Step::Scan => { on(&mut m, &mut rt, 0).scan(Scope::All, ScanMode::Clear, |_| {}); }
                Step::Poison(p) => { let _ = on(&mut m, &mut rt, 0).poison(page(p)); }
                Step::Unpoison(p) => { let _ = on(&mut m, &mut rt, 0).unpoison(page(p)); }
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

/// A 4 MiB fast tier and an 8 MiB slow tier of one channel whose banks are memos'
/// bank bits 12–14, 20–21 (32 banks).
fn memos_like() -> MachineConfig {
    let mut cfg = MachineConfig { cores: 1, ..MachineConfig::default() };
    cfg.tiers.fast.capacity = Capacity::Bytes(4 * MIB);
    cfg.tiers.slow.capacity = Capacity::Bytes(8 * MIB);
    cfg.tiers.slow.channels = 1;
    cfg.tiers.slow.banks = 32;
    cfg.tiers.slow.channel_bits = vec![];
    cfg.tiers.slow.bank_bits = vec![12, 13, 14, 20, 21];
    cfg
}

#[test]
fn colours_from_bank_and_llc_bits() {
    let mut m = build(&memos_like(), &[TenantKind::Process], true);
    let mut rt = rt();
    write(&mut m, 0, 0, BASE);
    let mech = on(&mut m, &mut rt, 0);
    // Bank 0b10_101 = 21: bits 12 and 14 set, 13 clear, 20 clear, 21 set.
    // As frame bits (minus 12): mask 0b11_0000_0111, value 0b10_0000_0101.
    let c = mech.colour(SLOW, None, Some(21), None).unwrap();
    assert_eq!((c.mask, c.value), (0b11_0000_0111, 0b10_0000_0101));
    // The 8 MiB L3 has 8192 sets: set-index bits 6–18, colour bits 12–18 (128 colours).
    let c = mech.colour(SLOW, None, None, Some(5)).unwrap();
    assert_eq!((c.mask, c.value), (0x7f, 5));
    assert!(mech.colour(SLOW, None, None, Some(128)).unwrap_err().contains("does not exist"));
    // The fast tier interleaves channels by cache line: no channel colour at page grain.
    let mut cfg2 = MachineConfig { cores: 2, ..MachineConfig::default() };
    cfg2.tiers.fast.channels = 2;
    let mut m2 = build(&cfg2, &[TenantKind::Process], false);
    let mut rt2 = Runtime::new(&[], 2);
    assert!(on(&mut m2, &mut rt2, 0).colour(FAST, Some(1), None, None).unwrap_err().contains("address bit 6"));
    // A coloured migration lands on a frame of that bank; a huge page has no colour.
    let mut mech = on(&mut m, &mut rt, 0);
    let c = mech.colour(SLOW, None, Some(21), None).unwrap();
    let p = mech.migrate_coloured(pg(BASE), SLOW, c).unwrap();
    let local = p.pfn - m.space.allocator().base(SLOW);
    assert_eq!(m.mem.tiers.get(SLOW).decode(local << 12).bank, 21);
    read(&mut m, 0, 0, BASE);
    assert_eq!(m.error, None);
}

#[test]
fn colour_bits_count_free_frames_per_colour_and_are_checked() {
    let cfg = MachineConfig { colour_bits: vec![12, 13, 14, 20, 21], ..memos_like() };
    let mut m = build(&cfg, &[TenantKind::Process], true);
    let mut rt = rt();
    write(&mut m, 0, 0, BASE);
    let mut mech = on(&mut m, &mut rt, 0);
    // 2048 slow frames over 32 banks: 64 free frames of bank 21, none used yet.
    let c = mech.colour(SLOW, None, Some(21), None).unwrap();
    assert_eq!(mech.free_frames_coloured(SLOW, c), 64);
    assert_eq!(mech.free_frames_coloured(SLOW, Colour::ANY), 2048);
    mech.migrate_coloured(pg(BASE), SLOW, c).unwrap();
    assert_eq!(mech.free_frames_coloured(SLOW, c), 63);
    // The LLC colour (bits 12–18) is not all counted: it is counted from the bitmap.
    let llc = mech.colour(SLOW, None, None, Some(0b101)).unwrap();
    assert_eq!(mech.free_frames_coloured(SLOW, llc), 2048 / 128 - 1, "the page moved to bank 21 has LLC colour 0b101");
    assert_eq!(m.error, None);
    // Errors name the field.
    let check = |bits: Vec<u8>| {
        let cfg = MachineConfig { colour_bits: bits, ..cfg.clone() };
        Machine::<crate::machine::NoRedirect>::new(&cfg, &Build::new(&cfg, &[TenantKind::Process], 4 * MIB)).err().map(|e| e.to_string()).unwrap_or_default()
    };
    assert!(check(vec![11, 12]).starts_with("machine.colour_bits: bit 11 is inside the 4 KiB page offset"), "{}", check(vec![11]));
    assert!(check(vec![12, 13, 12]).starts_with("machine.colour_bits: bit 12 is named twice"));
    assert!(check((12..23).collect()).starts_with("machine.colour_bits: at most 10 bits"));
    // 2^22 = 4 MiB: every fast frame has bit 22 clear.
    assert_eq!(check(vec![21, 22]), "machine.colour_bits: bit 22 is above the size of machine.tiers.fast (4MiB): every frame there has it clear");
    assert_eq!(check(vec![21]), "");
}

#[test]
fn fast_tier_quota_limits_first_touch_and_moves() {
    let (mut m, mut rt) = (machine(false, true, &[TenantKind::Process, TenantKind::Process]), rt());
    on(&mut m, &mut rt, 0).set_fast_quota(0, Some(4));
    for i in 0..8 {
        write(&mut m, 0, 0, BASE + i * 4096);
    }
    write(&mut m, 1, 1, BASE);
    let mut mech = on(&mut m, &mut rt, 0);
    // Tenant 0: 4 pages in the fast tier (its quota), the rest in the slow tier.
    assert_eq!((mech.tenant_frames(0, FAST), mech.tenant_frames(0, SLOW)), (4, 4));
    assert_eq!(mech.tenant_frames(1, FAST), 1, "tenant 1 has no quota");
    let in_tier = |mech: &Mechanisms, t| (0..8).map(|i| pg(BASE + i * 4096)).find(|&a| mech.page(a).unwrap().tier == t).unwrap();
    let (slow_page, fast_page) = (in_tier(&mech, SLOW), in_tier(&mech, FAST));
    let over = Err(MechError::OverQuota { tenant: 0, quota_frames: 4 });
    assert_eq!(mech.migrate(slow_page, FAST).map(|_| ()), over);
    // Within the tenant a swap keeps its fast share, so it is allowed.
    mech.swap(slow_page, fast_page).unwrap();
    // Across tenants: tenant 0 would gain a fast frame.
    assert_eq!(mech.swap(fast_page, PageRef::new(1, BASE)), over);
    mech.set_fast_quota(0, Some(5));
    mech.migrate(fast_page, FAST).unwrap();
    assert_eq!(mech.tenant_frames(0, FAST), 5);
    // Lowering the quota refuses growth but leaves what is there to the policy.
    mech.set_fast_quota(0, Some(2));
    let slow_page = in_tier(&mech, SLOW);
    assert_eq!(mech.migrate(slow_page, FAST).map(|_| ()), Err(MechError::OverQuota { tenant: 0, quota_frames: 2 }));
    m.check_invariants().unwrap();
}

/// Runs thread 0 until its queue is empty; returns the jobs it finished.
fn drain(m: &mut Machine, rt: &mut Runtime) -> Vec<JobDone> {
    let mut done = Vec::new();
    while rt.threads.next_busy().is_some() {
        done.extend(rt.threads.step(m, &mut rt.limits, 0, &mut ()));
    }
    done
}

#[test]
fn background_work_stalls_no_core_but_interrupts_all() {
    let (mut m, mut rt) = (machine(false, true, &[TenantKind::Process]), rt());
    write(&mut m, 0, 0, BASE);
    let (c0, c1) = (m.cores[0].clock, m.cores[1].clock);
    let mut job = Job::new(7);
    job.push(Op::Migrate { page: pg(BASE), to: SLOW });
    let id = on(&mut m, &mut rt, 0).submit(ThreadId(0), job).unwrap();
    assert!(!on(&mut m, &mut rt, 0).thread(ThreadId(0)).unwrap().idle);
    // Nothing happens until the thread runs: the page is still fast.
    assert_eq!(on(&mut m, &mut rt, 0).page(pg(BASE)).unwrap().tier, FAST);
    let done = drain(&mut m, &mut rt);
    assert_eq!((done.len(), done[0].id, done[0].tag, done[0].results.clone()), (1, id, 7, vec![Ok(())]));
    // Only the shootdown IPI reaches the application cores, both of them.
    assert_eq!((m.cores[0].clock - c0, m.cores[1].clock - c1), (300, 300));
    assert!(m.stats.background_cycles >= 6400, "the software cost is the thread's busy time");
    assert_eq!(rt.threads.report()[0].busy_cycles, m.stats.background_cycles);
    read(&mut m, 0, 0, BASE);
    assert_eq!(m.error, None);
    assert_eq!(on(&mut m, &mut rt, 0).submit(ThreadId(3), Job::new(0)), Err(MechError::NoSuchThread { thread: 3 }));
}

#[test]
fn a_thread_runs_its_jobs_in_order_and_groups_stop_at_a_refusal() {
    let (mut m, mut rt) = (machine(false, false, &[TenantKind::Process]), rt());
    write(&mut m, 0, 0, BASE);
    write(&mut m, 0, 0, BASE + 4096);
    let mut first = Job::new(1);
    first.push(Op::Migrate { page: pg(BASE), to: SLOW }).then(Op::Poison { page: pg(BASE) });
    // Already slow after the first job: the migration is refused, the poison skipped,
    // the next group runs.
    let mut second = Job::new(2);
    second.push(Op::Migrate { page: pg(BASE), to: SLOW }).then(Op::Unpoison { page: pg(BASE) });
    second.push(Op::Migrate { page: pg(BASE + 4096), to: SLOW });
    on(&mut m, &mut rt, 0).submit(ThreadId(0), first).unwrap();
    on(&mut m, &mut rt, 0).submit(ThreadId(0), second).unwrap();
    let status = on(&mut m, &mut rt, 0).thread(ThreadId(0)).unwrap();
    assert_eq!((status.queued_jobs, status.queued_ops), (2, 5));
    let done = drain(&mut m, &mut rt);
    assert_eq!(done.iter().map(|d| d.tag).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(done[0].results, vec![Ok(()), Ok(())]);
    assert_eq!(done[1].results, vec![Err(MechError::AlreadyThere { page: pg(BASE), tier: SLOW }), Err(MechError::Skipped), Ok(())]);
    assert!(on(&mut m, &mut rt, 0).page(pg(BASE)).unwrap().poisoned, "the unpoison was skipped");
    // The second job started when the first ended: the thread's busy time is their sum.
    assert!(done[1].finished >= done[0].finished + 6400 && done[1].submitted == done[0].submitted);
    let r = &rt.threads.report()[0];
    assert_eq!((r.jobs_done, r.ops_done, r.ops_refused, r.ops_unfinished), (2, 5, 2, 0));
}

#[test]
fn rate_limits_hold_every_executor() {
    let (mut m, mut rt) = (machine(false, false, &[TenantKind::Process]), rt());
    for i in 0..4 {
        write(&mut m, 0, 0, BASE + i * 4096);
    }
    let mut mech = on(&mut m, &mut rt, 0);
    // 0.008 MB/s: 8000 bytes per simulated second: one page, then a second (the last
    // move of a window may overshoot), then refused until the next second.
    mech.set_rate_limit(Direction::Demote, Some(0.008));
    mech.migrate(pg(BASE), SLOW).unwrap();
    mech.migrate(pg(BASE + 4096), SLOW).unwrap();
    let refused = mech.migrate(pg(BASE + 8192), SLOW);
    assert!(matches!(refused, Err(MechError::RateLimited { direction: Direction::Demote, retry_at: 3_200_000_000 })), "{refused:?}");
    // Promotion is not limited; a background job meets the same limit.
    mech.migrate(pg(BASE), FAST).unwrap();
    let mut job = Job::new(0);
    job.push(Op::Migrate { page: pg(BASE + 12288), to: SLOW });
    mech.submit(ThreadId(0), job).unwrap();
    let done = drain(&mut m, &mut rt);
    assert!(matches!(done[0].results[0], Err(MechError::RateLimited { .. })));
}

/// PML (HMM-V §3.2): with it on, every EPT dirty bit set is logged — the guest
/// page-table pages a walk reads (their accesses count as writes for EPT A/D) and the
/// data pages written; a full 512-entry buffer is a VM exit; collecting the log kicks
/// the vCPUs still holding entries.
#[test]
fn pml_logs_dirtied_guest_pages_and_exits_when_full() {
    use crate::machine::vmx::ExitCause;
    // Off: nothing logged, no exit, the walk unchanged (24 references).
    let (mut m, mut r) = (machine(false, false, &[TenantKind::Vm]), rt());
    write(&mut m, 0, 0, BASE);
    assert_eq!((m.cores[0].stats.walk_references, m.vmx().pml_logged, m.cores[0].stats.vm_exits), (24, 0, 0));
    assert!(on(&mut m, &mut r, 0).take_pml_log(0).is_empty());

    let (mut m, mut r) = (machine(false, false, &[TenantKind::Vm]), rt());
    on(&mut m, &mut r, 0).set_pml(0, true);
    // First write: the 4 guest page-table pages of the walk, then the data page.
    write(&mut m, 0, 0, BASE);
    assert_eq!((m.cores[0].stats.walk_references, m.vmx().pml_logged), (24, 5));
    // Second page under the same guest page tables: only its data page is new.
    write(&mut m, 0, 0, BASE + 4096);
    // A read dirties nothing but pages never walked before (none here).
    read(&mut m, 0, 0, BASE + 8);
    assert_eq!(m.vmx().pml_logged, 6);
    let c0 = m.cores[0].clock;
    let log = on(&mut m, &mut r, 0).take_pml_log(0);
    let data = |vaddr: u64| m.space.managed_addr(0, vaddr).unwrap() >> 12;
    assert_eq!(log.len(), 6);
    assert_eq!(&log[4..], &[data(BASE), data(BASE + 4096)]);
    // The kick: 500 ns round trip at 3.2 GHz plus 6 entries × 5 ns = 1 600 + 6 × 16.
    assert_eq!((m.vmx().kick, m.cores[0].stats.vm_exits, m.cores[0].clock - c0), (1, 1, 1696));
    assert!(on(&mut m, &mut r, 0).take_pml_log(0).is_empty(), "taken, and no kick for an empty buffer");
    assert_eq!(m.vmx().kick, 1);

    // 600 pages written: 600 data pages + 5 page-table pages (a second last-level
    // table after 512 pages) = 605 entries: one PML-full exit at the 513th.
    let (mut m, mut r) = (machine(false, false, &[TenantKind::Vm]), rt());
    on(&mut m, &mut r, 0).set_pml(0, true);
    for i in 0..600 {
        write(&mut m, 0, 0, BASE + (i << 12));
    }
    let v = m.vmx().clone();
    assert_eq!((v.pml_logged, v.pml_full, v.pml_drained), (605, 1, 512));
    assert_eq!(on(&mut m, &mut r, 0).take_pml_log(0).len(), 605);
    assert_eq!(m.vmx().exits(), 2);
    assert_eq!(on(&mut m, &mut r, 0).vm_exit(0, ExitCause::Hypercall), 1600);
    // A process has no PML.
    let (mut m, mut r) = (machine(false, false, &[TenantKind::Process]), rt());
    on(&mut m, &mut r, 0).set_pml(0, true);
    write(&mut m, 0, 0, BASE);
    assert_eq!(m.vmx().pml_logged, 0);
}

/// A VM (tenant 0) on core 0 and a process (tenant 1) on core 1, each with the page at
/// `BASE` written; returns the VM page's guest-physical address.
fn vm_and_process(verify: bool) -> (Machine, Runtime, u64) {
    let (mut m, r) = (machine(false, verify, &[TenantKind::Vm, TenantKind::Process]), rt());
    write(&mut m, 0, 0, BASE);
    write(&mut m, 1, 1, BASE);
    let gpa = m.space.managed_addr(0, BASE).unwrap();
    (m, r, gpa)
}

/// Runs the next step of thread 0 and returns its clock after it.
fn step_thread(m: &mut Machine, runtime: &mut Runtime) -> u64 {
    runtime.threads.step(m, &mut runtime.limits, 0, &mut ());
    runtime.threads.status(ThreadId(0), 0).clock
}

#[test]
fn a_vm_flush_kicks_the_cores_holding_its_translations() {
    let (mut m, mut r, _) = vm_and_process(false);
    let (c0, c1) = (m.cores[0].clock, m.cores[1].clock);
    // From a thread: core 0 holds VM translations and takes a TlbFlush exit (the
    // 500 ns round trip at 3.2 GHz); core 1 runs only the process and is left alone.
    Mechanisms::on_thread(&mut m, &mut r, ThreadId(0)).flush_vm(0).unwrap();
    assert_eq!((m.cores[0].clock - c0, m.cores[1].clock - c1, m.vmx().tlb_flush), (1600, 0, 1));
    assert_eq!(m.stats.shootdowns, 1);
    let misses = m.cores[0].stats.tlb_misses;
    read(&mut m, 0, 0, BASE);
    assert_eq!(m.cores[0].stats.tlb_misses, misses + 1, "the translation was flushed");
    // From core 0 itself: no exit for its own flush; it pays the initiator's 300 cycles.
    let c0 = m.cores[0].clock;
    on(&mut m, &mut r, 0).flush_vm(0).unwrap();
    assert_eq!((m.cores[0].clock - c0, m.vmx().tlb_flush), (300, 1));
    assert_eq!(on(&mut m, &mut r, 0).flush_vm(1), Err(MechError::NotVm { tenant: 1 }));
}

#[test]
fn a_linux_move_makes_an_access_wait_and_exits_to_fill_the_new_entry() {
    let (mut m, mut r, gpa) = vm_and_process(true);
    let mut job = Job::new(0);
    job.push(Op::MoveAs { page: pg(gpa), to: SLOW, how: MoveHow::Linux, colour: Colour::ANY });
    on(&mut m, &mut r, 0).submit(ThreadId(0), job).unwrap();
    let before = m.cores[0].clock;
    let end = step_thread(&mut m, &mut r);
    // The unmap's flush kicked core 0 once.
    assert_eq!((m.vmx().tlb_flush, m.cores[0].clock - before), (1, 1600));
    assert_eq!(m.vm_moves().linux, 1);
    let at = m.cores[0].clock;
    assert!(at < end, "the core reaches the page while it moves");
    // The read (1 cycle of instruction) misses, finds the page unmapped: an EPT
    // violation (500 + 1 500 ns = 6 400 cycles), then waits for the move's end.
    read(&mut m, 0, 0, BASE);
    let wait = end - (at + 1 + 6400);
    assert_eq!((m.vmx().ept_violation, m.cores[0].stats.migration_wait_cycles, m.vm_moves().waits), (1, wait, 1));
    assert!(m.cores[0].clock > end);
    // The handler filled the entry: no more exits.
    read(&mut m, 0, 0, BASE + 64);
    write(&mut m, 0, 0, BASE + 128);
    assert_eq!(m.vmx().ept_violation, 1);
    assert_eq!(on(&mut m, &mut r, 0).page(pg(gpa)).unwrap().tier, SLOW);

    // Moved back with the core already past the move's end: one exit to fill the
    // entry, no wait.
    let mut job = Job::new(0);
    job.push(Op::MoveAs { page: pg(gpa), to: FAST, how: MoveHow::Linux, colour: Colour::ANY });
    on(&mut m, &mut r, 0).submit(ThreadId(0), job).unwrap();
    let end = step_thread(&mut m, &mut r);
    m.cores[0].clock = m.cores[0].clock.max(end + 10_000);
    let waited = m.cores[0].stats.migration_wait_cycles;
    read(&mut m, 0, 0, BASE);
    assert_eq!((m.vmx().ept_violation, m.cores[0].stats.migration_wait_cycles), (2, waited));
    assert_eq!(m.error, None);
    m.check_invariants().unwrap();
}

#[test]
fn a_write_protected_move_lets_reads_through_and_traps_a_write() {
    let (mut m, mut r, gpa) = vm_and_process(true);
    let mut job = Job::new(0);
    job.push(Op::MoveAs { page: pg(gpa), to: SLOW, how: MoveHow::WriteProtect, colour: Colour::ANY });
    on(&mut m, &mut r, 0).submit(ThreadId(0), job).unwrap();
    let end = step_thread(&mut m, &mut r);
    // Protect, flush (core 0 kicked); copy; remap, flush (nothing left to kick).
    assert_eq!((m.vmx().tlb_flush, m.vm_moves().write_protect), (1, 1));
    // A read during the copy: no exit, no wait.
    read(&mut m, 0, 0, BASE);
    assert_eq!((m.vmx().exits(), m.cores[0].stats.migration_wait_cycles), (1, 0));
    // A write: a write-protection exit (6 400 cycles), then it waits for the move.
    let at = m.cores[0].clock;
    assert!(at < end);
    write(&mut m, 0, 0, BASE + 8);
    assert_eq!(m.vmx().write_protect, 1);
    assert_eq!(m.cores[0].stats.migration_wait_cycles, end - (at + 1 + 6400));
    // After the wait, the new entry is filled by an EPT violation (only PML moves fill
    // it themselves).
    assert_eq!(m.vmx().ept_violation, 1);
    write(&mut m, 0, 0, BASE + 16);
    assert_eq!(m.vmx().write_protect, 1, "protection ends with the move");
    read(&mut m, 0, 0, BASE + 8);
    assert_eq!(m.error, None);
}

/// A PML batch moving the pages at `BASE` and `BASE + 4 KiB` to the slow tier, with
/// a write to the first between its copy and the finish. Returns the machine after
/// reading both pages back.
fn pml_batch_with_a_write_during_the_copy(skip_recopy: bool) -> Machine {
    let (mut m, mut r, gpa) = vm_and_process(true);
    m.break_pml_recopy = skip_recopy;
    write(&mut m, 0, 0, BASE + 4096);
    let gpb = m.space.managed_addr(0, BASE + 4096).unwrap();
    let batch = on(&mut m, &mut r, 0).plan_pml_batch(vec![(pg(gpa), SLOW), (pg(gpb), SLOW)]);
    let mut job = Job::new(0);
    job.push(Op::MoveBatch { batch });
    on(&mut m, &mut r, 0).submit(ThreadId(0), job).unwrap();
    step_thread(&mut m, &mut r); // prepare: dirty bits cleared, one flush (core 0 kicked)
    assert_eq!(m.vmx().tlb_flush, 1);
    step_thread(&mut m, &mut r); // copy of the first page; it stays mapped
    assert_eq!(on(&mut m, &mut r, 0).page(pg(gpa)).unwrap().tier, FAST);
    write(&mut m, 0, 0, BASE + 24); // the VM writes it: EPT dirty bit set again
    step_thread(&mut m, &mut r); // copy of the second
    step_thread(&mut m, &mut r); // finish: unmap, flush, recopy the first, remap
    let v = m.vm_moves().clone();
    assert_eq!((v.pml, v.pml_batches, v.pml_recopied), (2, 1, 1));
    assert_eq!(m.vmx().tlb_flush, 2, "one flush to clear the dirty bits, one to unmap");
    assert_eq!(m.vmx().ept_violation, 0, "the hypervisor fills the new entries itself");
    assert!(r.threads.next_busy().is_none(), "the job is done");
    read(&mut m, 0, 0, BASE + 24);
    read(&mut m, 0, 0, BASE + 4096);
    m
}

#[test]
fn a_pml_move_copies_again_a_page_written_during_its_copy() {
    let m = pml_batch_with_a_write_during_the_copy(false);
    assert_eq!(m.error, None);
    m.check_invariants().unwrap();
    assert_eq!(m.space().tenants()[0].frames_per_tier()[1], 2, "both pages moved");
}

#[test]
fn verify_catches_a_pml_move_that_skips_the_recopy() {
    let m = pml_batch_with_a_write_during_the_copy(true);
    assert!(m.error.as_deref().is_some_and(|e| e.contains("stale read")), "{:?}", m.error);
}

#[test]
fn the_host_reads_and_clears_guest_page_table_bits_and_pml_logs_walked_table_pages() {
    let (mut m, mut r, _) = vm_and_process(false);
    write(&mut m, 0, 0, BASE + 4096);
    read(&mut m, 0, 0, BASE + 8192);
    let nodes = on(&mut m, &mut r, 0).collect_gpt(0, 0).unwrap();
    assert_eq!(nodes.len(), 1, "three pages under one last-level table");
    assert_eq!(on(&mut m, &mut r, 0).collect_gpt(1, 1), Err(MechError::NotVm { tenant: 1 }));
    assert_eq!(m.vmx().hypercall, 1);
    // The scan sees each leaf's bits (two written, one read) and clears them.
    let mut seen = Vec::new();
    let (scanned, c0) = (m.stats.ptes_scanned, m.cores[0].clock);
    let n = on(&mut m, &mut r, 0).scan_gpt(0, &nodes, |e| {
        seen.push((e.accessed, e.dirty));
        true
    });
    assert_eq!((n, seen, m.stats.ptes_scanned - scanned), (3, vec![(true, true), (true, true), (true, false)], 3));
    // 64 line reads of the table page (beyond L1) and 3 × 20 cycles of per-entry work.
    assert!(m.cores[0].clock - c0 >= 60);
    on(&mut m, &mut r, 0).scan_gpt(0, &nodes, |e| {
        assert!(!e.accessed && !e.dirty, "cleared");
        false
    });
    // Clear the table page's EPT dirty bit, flush, PML on: the next walk through the
    // table page logs it (with the pages of the other levels it passes).
    let gpt = nodes[0].gpfn << 12;
    assert!(!on(&mut m, &mut r, 0).clear_ept_dirty(0, gpt).unwrap(), "with PML off, walks only mark the table page accessed");
    on(&mut m, &mut r, 0).flush_vm(0).unwrap();
    on(&mut m, &mut r, 0).set_pml(0, true);
    let _ = on(&mut m, &mut r, 0).take_pml_log(0);
    read(&mut m, 0, 0, BASE + 4096);
    assert!(on(&mut m, &mut r, 0).take_pml_log(0).contains(&nodes[0].gpfn));
    // The read set the guest Accessed bit of its page only.
    let mut bits = Vec::new();
    on(&mut m, &mut r, 0).scan_gpt(0, &nodes, |e| {
        bits.push((e.accessed, e.dirty));
        false
    });
    assert_eq!(bits, vec![(false, false), (true, false), (false, false)]);
    // A later write through the clean TLB entry sets the guest Dirty bit too.
    write(&mut m, 0, 0, BASE + 4096 + 8);
    let mut bits = Vec::new();
    on(&mut m, &mut r, 0).scan_gpt(0, &nodes, |e| {
        bits.push((e.accessed, e.dirty));
        false
    });
    assert_eq!(bits[1], (true, true));
}

#[test]
fn a_pml_batch_is_held_to_the_rate_limits() {
    let (mut m, mut r, gpa) = vm_and_process(false);
    write(&mut m, 0, 0, BASE + 4096);
    let gpb = m.space.managed_addr(0, BASE + 4096).unwrap();
    let mut mech = on(&mut m, &mut r, 0);
    // 0.008 MB/s of demotion: the first page moves, the window is then used up.
    mech.set_rate_limit(Direction::Demote, Some(0.008));
    mech.move_as(pg(gpa), SLOW, MoveHow::Pml).unwrap();
    mech.move_as(pg(gpb), SLOW, MoveHow::Pml).unwrap();
    let refused = mech.move_as(pg(gpa), SLOW, MoveHow::Pml);
    assert!(matches!(refused, Err(MechError::AlreadyThere { .. })), "{refused:?}");
    write(&mut m, 0, 0, BASE + 8192);
    let gpc = m.space.managed_addr(0, BASE + 8192).unwrap();
    let refused = on(&mut m, &mut r, 0).move_as(pg(gpc), SLOW, MoveHow::Pml);
    assert!(matches!(refused, Err(MechError::RateLimited { direction: Direction::Demote, .. })), "{refused:?}");
    assert_eq!(m.space().tenants()[0].frames_per_tier()[1], 2);
}

#[test]
fn young_reads_and_clears_the_accessed_bit_without_a_flush() {
    let (mut m, mut rt) = (machine(false, false, &[TenantKind::Process]), rt());
    read(&mut m, 0, 0, BASE);
    let before = m.cores[0].clock;
    // Read only: set, and still set.
    assert_eq!(on(&mut m, &mut rt, 0).young(pg(BASE + 8), false), Ok(true));
    assert_eq!(on(&mut m, &mut rt, 0).young(pg(BASE), false), Ok(true));
    // Cleared: reads as set once, then clear.
    assert_eq!(on(&mut m, &mut rt, 0).young(pg(BASE), true), Ok(true));
    assert_eq!(on(&mut m, &mut rt, 0).young(pg(BASE), false), Ok(false));
    // No flush: the translation is still cached, so a new access hits the TLB and
    // does not set the bit again (x86 `ptep_test_and_clear_young`).
    assert!(m.cores[0].tlb.lookup(0, BASE).is_some());
    read(&mut m, 0, 0, BASE);
    assert_eq!(on(&mut m, &mut rt, 0).young(pg(BASE), false), Ok(false));
    // Once evicted (a shootdown here), the next access walks and sets it.
    for c in &mut m.cores {
        c.tlb.invalidate(0, BASE, false);
    }
    read(&mut m, 0, 0, BASE);
    assert_eq!(on(&mut m, &mut rt, 0).young(pg(BASE), false), Ok(true));
    // Each check costs at least the rmap walk (500 ns at 3.2 GHz: 1600 cycles) and
    // `scan_pte_cycles`: 6 checks, plus the two reads' own cycles.
    let spent = m.cores[0].clock - before;
    assert!(spent >= 6 * (1600 + 20), "{spent} cycles");
    assert_eq!(m.stats.ptes_scanned, 6);
    assert_eq!(on(&mut m, &mut rt, 0).young(pg(BASE + MIB), false), Err(MechError::NotMapped { page: pg(BASE + MIB) }));
}

#[test]
fn a_sleep_moves_the_thread_clock_without_busy_time() {
    let (mut m, mut rt) = (machine(false, false, &[TenantKind::Process]), rt());
    write(&mut m, 0, 0, BASE);
    let mut job = Job::new(5);
    job.push(Op::Sleep { until: 1_000_000 });
    on(&mut m, &mut rt, 0).submit(ThreadId(0), job).unwrap();
    // The first step only moves the clock: the job is not done before the engine comes
    // back to the thread at cycle 1 000 000, and a sleeping job is not unfinished work.
    assert!(rt.threads.step(&mut m, &mut rt.limits, 0, &mut ()).is_none());
    assert_eq!(rt.threads.next_busy(), Some((1_000_000, 0)));
    assert_eq!((rt.threads.report()[0].jobs_unfinished, rt.threads.report()[0].ops_unfinished), (0, 0));
    let done = rt.threads.step(&mut m, &mut rt.limits, 0, &mut ()).expect("done when reached");
    assert_eq!((done.tag, done.finished, done.results.clone()), (5, 1_000_000, vec![Ok(())]));
    assert_eq!(rt.threads.report()[0].busy_cycles, 0);
    assert_eq!(m.stats.background_cycles, 0);
    // A sleep already due completes at once.
    let mut job = Job::new(6);
    job.push(Op::Sleep { until: 10 });
    on(&mut m, &mut rt, 0).submit(ThreadId(0), job).unwrap();
    assert_eq!(rt.threads.step(&mut m, &mut rt.limits, 0, &mut ()).map(|d| d.finished), Some(1_000_000));
}

#[test]
fn a_linux_move_of_a_process_page_locks_it_during_the_cpu_copy() {
    // memos' migrate_cpu (§6.3): the page is unmapped while a CPU copies it.
    let (mut m, mut r) = (machine(false, true, &[TenantKind::Process]), rt());
    write(&mut m, 0, 0, BASE);
    read(&mut m, 1, 0, BASE);
    let mut job = Job::new(0);
    job.push(Op::MoveAs { page: pg(BASE), to: SLOW, how: MoveHow::Linux, colour: Colour::ANY });
    on(&mut m, &mut r, 0).submit(ThreadId(0), job).unwrap();
    let end = step_thread(&mut m, &mut r);
    assert_eq!((m.vm_moves().linux, m.stats.migrate.pages), (1, 1));
    assert_eq!(on(&mut m, &mut r, 0).page(pg(BASE)).unwrap().tier, SLOW);
    // Core 0 reaches the page while it moves: its translation was shot down, the walk
    // finds the migration entry, and the fault (`page_fault_ns`) sleeps until the end.
    let at = m.cores[0].clock;
    assert!(at < end, "the core reaches the page while it moves");
    read(&mut m, 0, 0, BASE);
    let fault = m.cfg().cycles(m.cfg().costs.page_fault_ns);
    assert_eq!((m.cores[0].stats.migration_wait_cycles, m.vm_moves().waits), (end - (at + 1 + fault), 1));
    assert!(m.cores[0].clock >= end);
    // In the foreground, into a frame of colour "address bit 12 set" (an odd frame):
    // core 1 runs the move; core 0, behind it, waits for its end.
    let odd = Colour::from_bits(&[12], 1).unwrap();
    let at = m.cores[0].clock;
    m.cores[1].clock = at;
    on(&mut m, &mut r, 1).move_as_coloured(pg(BASE), FAST, MoveHow::Linux, odd).unwrap();
    let end = m.cores[1].clock;
    let p = on(&mut m, &mut r, 1).page(pg(BASE)).unwrap();
    assert!(p.tier == FAST && p.pfn % 2 == 1, "{p:?}");
    assert!(end - at >= 6400, "at least the software cost (2 µs at 3.2 GHz)");
    let waited = m.cores[0].stats.migration_wait_cycles;
    read(&mut m, 0, 0, BASE + 8);
    // Core 0 took the shootdown's interrupt (300 cycles) before it got there.
    let ipi = m.cfg().costs.shootdown_remote_cycles;
    assert_eq!(m.cores[0].stats.migration_wait_cycles - waited, end - (at + ipi + 1 + fault));
    assert_eq!(m.vm_moves().waits, 2);
    // A huge page has no colour.
    let (mut h, mut hr) = (machine(true, false, &[TenantKind::Process]), rt());
    write(&mut h, 0, 0, BASE);
    assert_eq!(on(&mut h, &mut hr, 0).move_as_coloured(pg(BASE), SLOW, MoveHow::Linux, odd), Err(MechError::HugeNotColoured { page: pg(BASE) }));
    assert_eq!(m.error, None);
    m.check_invariants().unwrap();
}

/// What a DMA batch run left behind.
struct DmaRun {
    m: Machine,
    /// The pages at `BASE` and `BASE + 4 KiB`, by their managed address.
    a: PageRef,
    b: PageRef,
    results: Vec<Result<(), MechError>>,
    /// The engine's clock before and after the copy step of the first page.
    copy: (u64, u64),
}

/// An unlocked DMA batch (memos §6.3) on thread 0 of `kind` moving the pages at
/// `BASE` and `BASE + 4 KiB` of tenant 0 (a VM or a process) to the slow tier, the
/// second into an odd frame; with `write_during_copy`, core 0 writes the first page
/// between its copy and the finish. Both pages are read back afterwards.
/// What happens to the first page while its DMA copy is in flight.
#[derive(Clone, Copy, PartialEq, Eq)]
enum During {
    Nothing,
    Write,
    /// A write, then a scan that clears Accessed and Dirty bits (memos' SysMon).
    WriteThenScan,
}

fn dma_batch(vm: bool, kind: ThreadKind, during: During, break_check: bool) -> DmaRun {
    let tenant = if vm { TenantKind::Vm } else { TenantKind::Process };
    dma_batch_on(machine(false, true, &[tenant, TenantKind::Process]), SLOW, kind, during, break_check)
}

/// [`dma_batch`] on machine `m` (tenant 0 a VM or a process, tenant 1 a process) to
/// tier `to`: for the fast tier, the pages are first demoted.
fn dma_batch_on(mut m: Machine, to: TierId, kind: ThreadKind, during: During, break_check: bool) -> DmaRun {
    let mut r = Runtime::new(&[kind], 2);
    let vm = m.is_vm(0);
    m.break_dma_dirty_check = break_check;
    write(&mut m, 0, 0, BASE);
    write(&mut m, 0, 0, BASE + 4096);
    write(&mut m, 1, 1, BASE);
    let at = |m: &Machine, vaddr: u64| pg(m.space.managed_addr(0, vaddr).unwrap());
    let (a, b) = (at(&m, BASE), at(&m, BASE + 4096));
    if to == FAST {
        on(&mut m, &mut r, 0).migrate(a, SLOW).unwrap();
        on(&mut m, &mut r, 0).migrate(b, SLOW).unwrap();
    }
    let from = on(&mut m, &mut r, 0).page(a).unwrap().tier;
    let odd = Colour::from_bits(&[12], 1).unwrap();
    let batch = on(&mut m, &mut r, 0).plan_dma_batch(vec![(a, to, Colour::ANY), (b, to, odd)]);
    let mut job = Job::new(0);
    job.push(Op::MoveBatch { batch });
    on(&mut m, &mut r, 0).submit(ThreadId(0), job).unwrap();
    let (shootdowns, flushes) = (m.stats.shootdowns, m.vmx().tlb_flush);
    let prepared = step_thread(&mut m, &mut r);
    if vm {
        assert_eq!(m.vmx().tlb_flush - flushes, 1, "one flush of the VM (core 0 kicked)");
    } else {
        assert_eq!(m.stats.shootdowns - shootdowns, 2, "a shootdown per process page");
    }
    let copied = step_thread(&mut m, &mut r);
    assert_eq!(on(&mut m, &mut r, 0).page(a).unwrap().tier, from, "mapped during its copy");
    if during != During::Nothing {
        write(&mut m, 0, 0, BASE + 24);
    }
    if during == During::WriteThenScan {
        on(&mut m, &mut r, 1).scan(Scope::Tenant(0), ScanMode::Clear, |_| {});
    }
    read(&mut m, 0, 0, BASE + 4096 + 8);
    step_thread(&mut m, &mut r);
    let done = r.threads.step(&mut m, &mut r.limits, 0, &mut ()).expect("the finish ends the job");
    read(&mut m, 0, 0, BASE + 24);
    read(&mut m, 0, 0, BASE + 4096);
    DmaRun { m, a, b, results: done.results, copy: (prepared, copied) }
}

#[test]
fn a_dma_move_discards_a_page_written_during_its_copy() {
    for vm in [false, true] {
        let DmaRun { m, a, b, results, .. } = dma_batch(vm, ThreadKind::CopyEngine, During::Write, false);
        assert_eq!(m.error, None, "vm {vm}");
        m.check_invariants().unwrap();
        assert_eq!(results, vec![Err(MechError::DirtiedDuringCopy { page: a })]);
        let v = m.vm_moves();
        assert_eq!((v.dma, v.dma_batches, v.dma_discarded, v.waits), (1, 1, 1, 0), "vm {vm}");
        let (pa, pb) = (m.space().page_info(a).unwrap(), m.space().page_info(b).unwrap());
        assert_eq!((pa.tier, pb.tier), (FAST, SLOW), "vm {vm}: the written page stays");
        assert_eq!(pb.pfn % 2, 1, "into a frame of its colour");
        assert_eq!(m.space().tenants()[0].frames_per_tier()[1], 1);
        assert_eq!((m.stats.migrate.pages, m.stats.pages_between[0][1]), (1, 1));
        assert!(m.cores.iter().all(|c| c.stats.migration_wait_cycles == 0), "no access waits for a DMA move");
        // Untouched during the copy, both pages move.
        let DmaRun { m, results, .. } = dma_batch(vm, ThreadKind::CopyEngine, During::Nothing, false);
        assert_eq!((results, m.vm_moves().dma, m.vm_moves().dma_discarded, m.error.clone()), (vec![Ok(())], 2, 0, None));
    }
}

#[test]
fn a_scan_clearing_dirty_bits_does_not_hide_a_write_from_a_dma_copy() {
    // memos' SysMon clears Accessed and Dirty bits while its DMA engine copies: the
    // entry under copy keeps its Dirty bit, so the write is still seen and the page
    // discarded (without `COPYING` the verifier caught a stale read here).
    for vm in [false, true] {
        let DmaRun { m, a, results, .. } = dma_batch(vm, ThreadKind::CopyEngine, During::WriteThenScan, false);
        assert_eq!(m.error, None, "vm {vm}");
        assert_eq!(results, vec![Err(MechError::DirtiedDuringCopy { page: a })], "vm {vm}");
        assert_eq!(m.space().page_info(a).unwrap().tier, FAST);
        // The copy is over: the next scan clears the Dirty bit as always.
        let mut m = m;
        let mut r = rt();
        on(&mut m, &mut r, 1).scan(Scope::Tenant(0), ScanMode::Clear, |_| {});
        assert!(!m.space().page_info(a).unwrap().dirty, "vm {vm}");
    }
}

#[test]
fn verify_catches_a_dma_move_that_skips_the_dirty_check() {
    for vm in [false, true] {
        let run = dma_batch(vm, ThreadKind::CopyEngine, During::Write, true);
        assert!(run.m.error.as_deref().is_some_and(|e| e.contains("stale read")), "vm {vm}: {:?}", run.m.error);
        assert_eq!(run.m.vm_moves().dma, 2, "vm {vm}: both remapped unchecked");
        assert_eq!(dma_batch(vm, ThreadKind::CopyEngine, During::Write, false).m.error, None);
    }
}

#[test]
fn a_dma_copy_step_takes_the_engine_the_copy_time() {
    // The same page copied in the same step by a copy engine (64 lines in flight) and
    // by a kernel thread (16): the step is the flush of the page and its copy. A
    // promotion reads the slow tier, whose latency more lines in flight hide: the
    // engine's step is shorter. A demotion is paced by the slow tier's writes: the
    // same either way. No core waits for either.
    // The slow tier is given Optane's 310 ns reads (HMM-V's PMem) to make a
    // promotion's copy latency-bound at 16 lines in flight: 64 lines in 4 rounds.
    let optane = || {
        let mut cfg = MachineConfig { cores: 2, ..MachineConfig::default() };
        cfg.tiers.fast.capacity = Capacity::Bytes(4 * MIB);
        cfg.tiers.slow.capacity = Capacity::Bytes(8 * MIB);
        (cfg.tiers.slow.read_hit_ns, cfg.tiers.slow.read_miss_ns) = (310.0, 310.0);
        build(&cfg, &[TenantKind::Process, TenantKind::Process], true)
    };
    for (to, shorter) in [(FAST, true), (SLOW, false)] {
        let engine = dma_batch_on(optane(), to, ThreadKind::CopyEngine, During::Nothing, false);
        let kernel = dma_batch_on(optane(), to, ThreadKind::Kernel, During::Nothing, false);
        let (de, dk) = (engine.copy.1 - engine.copy.0, kernel.copy.1 - kernel.copy.0);
        eprintln!("4 KiB DMA copy step to {to}: engine {de} cycles, kernel thread {dk} cycles");
        assert_eq!(de < dk, shorter, "to {to}: engine {de} vs kernel {dk}");
        assert!(de <= dk && de > 64, "to {to}: engine {de} vs kernel {dk}");
        for m in [&engine.m, &kernel.m] {
            assert!(m.cores.iter().all(|c| c.stats.migration_wait_cycles == 0) && m.vm_moves().waits == 0);
            assert_eq!((m.vm_moves().dma, m.error.clone()), (2, None));
        }
    }
    // A locked CPU copy (`linux`) of the same page on a kernel thread: its copy is the
    // kernel thread's step above, plus the software cost and the page-table work.
    let (mut m, mut r) = (machine(false, false, &[TenantKind::Process]), rt());
    write(&mut m, 0, 0, BASE);
    let mut job = Job::new(0);
    job.push(Op::MoveAs { page: pg(BASE), to: SLOW, how: MoveHow::Linux, colour: Colour::ANY });
    on(&mut m, &mut r, 0).submit(ThreadId(0), job).unwrap();
    let start = r.threads.status(ThreadId(0), 0).clock;
    let linux = step_thread(&mut m, &mut r) - start;
    eprintln!("4 KiB locked CPU copy (linux) to the slow tier on a kernel thread: {linux} cycles in all");
    assert!(linux > 6400, "{linux}");
}

/// Epochs mode's Accessed and Dirty bits against their law (module
/// `machine::epochs`): 400 pages come back to at β₁ = 1/2000 bursts per reference
/// of the tenant, a quarter of the bursts with a store, and 400 at β₂ = 1/200, with
/// no store. Each round the tenant makes R = 1000 references and every entry is
/// settled and cleared: the Accessed bit is found set with chance 1 − exp(−βR)
/// (0.3935 and 0.9933), the first half's Dirty bit with 1 − exp(−βR/4) (0.1175), the
/// second half's never. Over 100 rounds (40 000 draws per figure) the counts must
/// lie within four standard deviations of these (a hazard 10 % off is 13 away).
#[test]
fn epochs_accessed_and_dirty_bits_are_drawn_at_their_hazard() {
    use crate::machine::epochs::TenantSetup;
    use crate::machine::page_table::{ACCESSED, DIRTY};
    use crate::workload::rates::{Order, PageLoad, Stretch};
    let mut m = machine(false, false, &[TenantKind::Process]);
    let (n, first) = (800u64, BASE >> 12);
    m.start_epochs(
        &[TenantSetup {
            universe: vec![first..first + n],
            cores: vec![0],
            vm: false,
        }],
        11,
    );
    for i in 0..n {
        read(&mut m, 0, 0, BASE + (i << 12));
    }
    m.epochs_catch_up();
    // A stretch of 10⁶ references: counts per page are rates × 10⁶.
    let stretch_refs = 1_000_000u64;
    let pages = (0..n)
        .map(|i| {
            let (beta, store) = if i < n / 2 {
                (1.0 / 2000.0, 0.25)
            } else {
                (1.0 / 200.0, 0.0)
            };
            let bursts = (beta * stretch_refs as f64) as f32;
            PageLoad {
                vpn: first + i,
                reads: bursts,
                writes: bursts * store,
                bursts,
                write_bursts: bursts * store,
            }
        })
        .collect();
    let s = Stretch {
        refs: stretch_refs,
        instrs: stretch_refs,
        dependent: 0,
        order: Order::Random,
        pages,
    };
    let slots: Vec<(u64, usize)> = (0..n)
        .map(|i| BASE + (i << 12))
        .map(|a| (a, m.mapped(pg(a)).unwrap().slot))
        .collect();
    let clear = |m: &mut Machine| {
        for &(_, slot) in &slots {
            *m.space.entry_mut(0, slot) &= !(ACCESSED | DIRTY);
        }
    };
    // Settle once at hazard 0 (the first touches' bits) and clear, then switch.
    let mut t = 1_000_000u64;
    m.epochs.as_deref_mut().unwrap().advanced(0, 0, t, 0.0);
    for &(addr, slot) in &slots {
        m.epochs_settle(0, addr, false, slot, t);
    }
    clear(&mut m);
    let e = m.epochs.as_deref_mut().unwrap();
    let h = e.hazard(0, t);
    e.switch(0, &s, h);
    let rounds = 100u64;
    let (mut a, mut d) = ([0u64; 2], [0u64; 2]);
    for _ in 0..rounds {
        m.epochs
            .as_deref_mut()
            .unwrap()
            .advanced(0, t, t + 1_000_000, 1000.0);
        t += 1_000_000;
        for (i, &(addr, slot)) in slots.iter().enumerate() {
            let entry = m.epochs_settle(0, addr, false, slot, t);
            let half = (i as u64 >= n / 2) as usize;
            a[half] += (entry & ACCESSED != 0) as u64;
            d[half] += (entry & DIRTY != 0) as u64;
        }
        clear(&mut m);
    }
    let draws = (n / 2 * rounds) as f64;
    let within = |got: u64, p: f64, what: &str| {
        let sd = (draws * p * (1.0 - p)).sqrt().max(0.5);
        assert!(
            (got as f64 - draws * p).abs() <= 4.0 * sd,
            "{what}: {got} of {draws}, expected {:.0} ± {:.0}",
            draws * p,
            4.0 * sd
        );
    };
    within(a[0], 1.0 - (-0.5f64).exp(), "Accessed, β = 1/2000");
    within(a[1], 1.0 - (-5.0f64).exp(), "Accessed, β = 1/200");
    within(
        d[0],
        1.0 - (-0.125f64).exp(),
        "Dirty, a quarter of β = 1/2000",
    );
    assert_eq!(d[1], 0, "no store, no Dirty bit");
}

/// Epochs mode: a VM's guest page-table pages are pages of the VM, read by its
/// walks, so the EPT Accessed bits of their entries are drawn at the walks' rate
/// (`machine::epochs::refresh_tables`). The VM's 512 pages lie under one guest
/// leaf-level table; each is come back to at β = 1/2000 bursts per reference and,
/// with the TLB's characteristic time set to 0, each burst walks: the leaf-level
/// table is read at 512/2000 = 0.256 walks per reference, and the three tables
/// above it at the same rate. Each round the VM makes R = 2 references and the four
/// entries are settled and cleared: each is found accessed with chance
/// 1 − exp(−0.512) = 0.4007; over 200 rounds (800 draws) within four standard
/// deviations (±55) of 320.6. (Before, they were never found accessed once
/// cleared.) Moving the leaf-level table to the slow tier then counts its walks,
/// 0.256 of the references, in the share that calls for a calibration.
#[test]
fn epochs_guest_page_tables_are_accessed_at_the_walks_rate() {
    use crate::machine::epochs::TenantSetup;
    use crate::machine::page_table::{ACCESSED, DIRTY};
    use crate::workload::rates::{Order, PageLoad, Stretch};
    let (mut m, mut r) = (machine(false, false, &[TenantKind::Vm]), rt());
    let (n, first) = (512u64, BASE >> 12);
    m.start_epochs(
        &[TenantSetup {
            universe: vec![first..first + n],
            cores: vec![0],
            vm: true,
        }],
        11,
    );
    for i in 0..n {
        read(&mut m, 0, 0, BASE + (i << 12));
    }
    m.epochs_catch_up();
    let stretch_refs = 1_000_000u64;
    let bursts = (stretch_refs / 2000) as f32;
    let pages = (0..n).map(|i| PageLoad { vpn: first + i, reads: bursts, writes: 0.0, bursts, write_bursts: 0.0 }).collect();
    let s = Stretch { refs: stretch_refs, instrs: stretch_refs, dependent: 0, order: Order::Random, pages };
    let mut tables = m.space.tenants()[0].guest.as_ref().unwrap().table.node_frames();
    tables.sort_unstable();
    assert_eq!(tables.len(), 4, "root, two upper levels, one leaf-level table");
    let slots: Vec<(u64, usize)> = tables.iter().map(|&g| (g << 12, m.mapped(pg(g << 12)).unwrap().slot)).collect();
    let mut t = 1_000_000u64;
    let e = m.epochs.as_deref_mut().unwrap();
    e.advanced(0, 0, t, 0.0);
    let h = e.hazard(0, t);
    e.switch(0, &s, h);
    e.tenants[0].tlb_time = [0.0, 0.0];
    for &(addr, slot) in &slots {
        m.epochs_settle(0, addr, false, slot, t);
        *m.space.entry_mut(0, slot) &= !(ACCESSED | DIRTY);
    }
    let rounds = 200u64;
    let mut accessed = 0u64;
    for _ in 0..rounds {
        m.epochs.as_deref_mut().unwrap().advanced(0, t, t + 1_000_000, 2.0);
        t += 1_000_000;
        for &(addr, slot) in &slots {
            accessed += (m.epochs_settle(0, addr, false, slot, t) & ACCESSED != 0) as u64;
            *m.space.entry_mut(0, slot) &= !(ACCESSED | DIRTY);
        }
    }
    let (draws, p) = ((4 * rounds) as f64, 1.0 - (-0.512f64).exp());
    let sd = (draws * p * (1.0 - p)).sqrt();
    assert!((accessed as f64 - draws * p).abs() <= 4.0 * sd, "{accessed} of {draws}, expected {:.1} ± {:.1}", draws * p, 4.0 * sd);
    // The leaf-level table (the last allocated) to the slow tier.
    m.epochs.as_deref_mut().unwrap().tenants[0].moved_share = 0.0;
    on(&mut m, &mut r, 0).migrate(pg(tables[3] << 12), SLOW).unwrap();
    m.epochs_catch_up();
    let moved = m.epochs.as_deref().unwrap().tenants[0].moved_share;
    assert!((moved - 0.256).abs() < 1e-4, "moved share {moved}");
    assert_eq!(m.guest_table_frames_per_tier(0), Some(vec![3, 1]));
}
