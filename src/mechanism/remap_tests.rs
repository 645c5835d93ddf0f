//! The migration controller and its ReMap table on a small machine built directly:
//! lookups and their latency, requests served from MigC's buffers while a subpage
//! moves, one-way and paired moves, the table running full, reconciliation (its cost
//! from Table 2 by hand, the PTEs it rewrites), reverse migration, and `--verify`
//! catching a reconciliation that leaves a PTE stale.

use super::*;
use crate::machine::placement::Placement;
use crate::machine::remap::{Dest, RemapSpec};
use crate::machine::{Build, MachineConfig, MemEvent, MemKind, Observer, TenantKind};
use crate::trace::Access;
use crate::units::{Capacity, Size};

const FAST: TierId = TierId::FAST;
const SLOW: TierId = TierId::SLOW;
const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const BASE: u64 = 0x7f00_0000_0000;
/// 512 KiB huge pages of 128 frames; 64 KiB subpages of 16 frames.
const HUGE: u64 = 512 * KIB;
const SUB: u64 = 64 * KIB;

/// Records the memory-controller accesses that reach a tier or MigC's buffers.
#[derive(Default)]
struct Seen(Vec<MemEvent>);

impl Observer for Seen {
    fn on_memory_access(&mut self, e: &MemEvent) {
        self.0.push(*e);
    }
}

/// Two cores; 512 KiB huge pages on first touch; a 4 MiB fast tier (8 huge frames)
/// and an 8 MiB slow one; eight pages placed one fast, one slow in turn; MigC as
/// `spec` says (Table 2 costs otherwise).
fn machine(spec: RemapSpec, verify: bool) -> (Machine<Remap>, Runtime) {
    let mut cfg = MachineConfig { cores: 2, ..MachineConfig::default() };
    cfg.page_table.huge_page = Size(HUGE);
    cfg.tiers.fast.capacity = Capacity::Bytes(4 * MIB);
    cfg.tiers.slow.capacity = Capacity::Bytes(8 * MIB);
    let mut b = Build::new(&cfg, &[TenantKind::Process], 4 * MIB);
    b.thp = true;
    b.placement = Placement::RoundRobin { fast: 1, slow: 1 };
    b.verify = verify;
    b.redirect = spec;
    let mut m = Machine::new(&cfg, &b).unwrap();
    for i in 0..8 {
        m.access(0, &Access::read(BASE + i * HUGE, 8, 0), &mut ());
    }
    (m, Runtime::new(&[], 2))
}

/// The first pages in the fast and in the slow tier: (address, first frame).
fn pages(m: &Machine<Remap>) -> ((u64, u64), (u64, u64)) {
    let find = |t| {
        (0..8)
            .map(|i| m.space().page_info(PageRef::new(0, BASE + i * HUGE)).unwrap())
            .find(|p| p.tier == t && p.huge)
            .map(|p| (p.addr, p.pfn))
            .unwrap()
    };
    (find(FAST), find(SLOW))
}

/// A read of `vaddr` by core 0, with what the controller saw.
fn read(m: &mut Machine<Remap>, vaddr: u64) -> (crate::machine::RefOutcome, Vec<MemEvent>) {
    let mut seen = Seen::default();
    let o = m.access(0, &Access::read(vaddr, 8, 0), &mut seen);
    (o, seen.0.into_iter().filter(|e| e.kind == MemKind::Demand).collect())
}

/// Moves core `c`'s clock to `at` (as if it had computed until then).
fn set_clock(m: &mut Machine<Remap>, c: usize, at: u64) {
    m.cores[c].clock = at;
}

/// A machine (verifying) whose ReMap entries cover whole huge pages, with the hot page
/// moved one-way into a free fast frame and core 0 past the move's end. Returns it,
/// the hot page's address and frame, and that cycle.
fn whole_page_moved() -> (Machine<Remap>, Runtime, u64, u64, u64) {
    let (mut m, mut rt) = machine(RemapSpec { unit_frames: 0, ..RemapSpec::default() }, true);
    let (_, (hot, hot_pfn)) = pages(&m);
    let mv = Mechanisms::on_core(&mut m, &mut rt, 0).otf_migrate(hot_pfn, Dest::Free).unwrap();
    set_clock(&mut m, 0, mv.done + 1);
    (m, rt, hot, hot_pfn, mv.done + 1)
}

#[test]
fn every_llc_miss_pays_the_lookup_and_a_moved_subpage_is_served_from_its_new_frame() {
    let (mut m, mut rt) = machine(RemapSpec::default(), true);
    let ((_, _), (hot, hot_pfn)) = pages(&m);
    // A read of a fresh line of the slow page, with the table empty.
    let looked = m.redirect().stats.lookups;
    let (a, ev) = read(&mut m, hot + 3 * SUB + 64);
    assert_eq!((ev.len(), ev[0].tier), (1, SLOW));
    assert_eq!(m.redirect().stats.lookups - looked, 1, "one LLC miss, one lookup");
    let before = m.redirect().stats.lookups;
    let moved = Mechanisms::on_core(&mut m, &mut rt, 0).otf_migrate(hot_pfn + 16, Dest::Free).unwrap();
    assert_eq!((moved.new_entries, moved.swapped), (1, false));
    let e = *m.redirect().entry(m.redirect().entry_of(hot_pfn).unwrap());
    assert_eq!((e.old, e.migrated, e.pair), (hot_pfn, 0b10, None), "one entry per huge page, subpage 1 moved");
    assert_eq!(m.space().tier_of(e.new), FAST);
    // After MigC is done, subpage 1 is read from the fast tier under its OS address;
    // subpage 0 still from the slow tier.
    set_clock(&mut m, 0, moved.done + 1);
    let (o, ev) = read(&mut m, hot + SUB + 128);
    assert_eq!((ev[0].tier, ev[0].paddr >> 12), (FAST, hot_pfn + 16), "the controller sees the old address");
    assert_eq!(o.paddr >> 12, hot_pfn + 16, "the caches keep the OS-visible address");
    let (_, ev) = read(&mut m, hot + 128);
    assert_eq!(ev[0].tier, SLOW);
    assert_eq!(m.redirect().stats.lookups - before, 2);
    assert_eq!(m.redirect().stats.redirected, 1);
    // The same unit again is refused; the cores were never stalled by MigC.
    let again = Mechanisms::on_core(&mut m, &mut rt, 0).otf_migrate(hot_pfn + 20, Dest::Free);
    assert_eq!(again.unwrap_err(), MechError::AlreadyMoved { pfn: hot_pfn + 20 });
    assert!(a.data_cycles > 0);
    m.check_invariants().unwrap();
}

#[test]
fn the_lookup_costs_ten_cycles_on_a_miss() {
    // Same machine without MigC in the path: the first miss to the same line differs
    // by exactly the lookup latency.
    let mut cfg = MachineConfig { cores: 2, ..MachineConfig::default() };
    cfg.page_table.huge_page = Size(HUGE);
    cfg.tiers.fast.capacity = Capacity::Bytes(4 * MIB);
    cfg.tiers.slow.capacity = Capacity::Bytes(8 * MIB);
    let mut b = Build::new(&cfg, &[TenantKind::Process], 4 * MIB);
    b.thp = true;
    let mut plain: Machine = Machine::new(&cfg, &b).unwrap();
    let mut b2: Build<RemapSpec> = Build::new(&cfg, &[TenantKind::Process], 4 * MIB);
    b2.thp = true;
    let mut with = Machine::<Remap>::new(&cfg, &b2).unwrap();
    for _ in 0..2 {
        plain.access(0, &Access::read(BASE, 8, 0), &mut ());
        with.access(0, &Access::read(BASE, 8, 0), &mut ());
    }
    let p = plain.access(0, &Access::read(BASE + 4096, 8, 0), &mut ());
    let w = with.access(0, &Access::read(BASE + 4096, 8, 0), &mut ());
    assert_eq!(w.data_cycles - p.data_cycles, 10);
}

#[test]
fn requests_during_a_move_wait_for_the_buffers_and_are_served_from_them() {
    let (mut m, mut rt) = machine(RemapSpec::default(), true);
    let (_, (hot, hot_pfn)) = pages(&m);
    let now = m.cores[0].clock;
    let moved = Mechanisms::on_core(&mut m, &mut rt, 0).otf_migrate(hot_pfn, Dest::Free).unwrap();
    assert!(moved.started >= now && moved.done > moved.started);
    assert_eq!(m.cores[0].clock, now, "the triggering core is not stalled");
    let w = m.redirect().entry(m.redirect().entry_of(hot_pfn).unwrap()).window;
    // A read arriving now (before the 64 KiB are in the buffers) waits for them:
    // lookup 10 + (buffered − arrival) beyond the caches.
    let (o, ev) = read(&mut m, hot + 64 * 5);
    let st = &m.redirect().stats;
    assert_eq!((st.buffer_served, st.wait_queue_stalls), (1, 1));
    assert_eq!(ev.len(), 1, "the buffer serves it: no tier access beyond the event");
    assert!(st.wait_queue_cycles > 0 && st.wait_queue_cycles <= w.buffered - now);
    assert!(o.data_cycles >= st.wait_queue_cycles + 10);
    // Between buffered and done: served from the buffers at once.
    set_clock(&mut m, 0, w.buffered + 1);
    read(&mut m, hot + 64 * 900);
    assert_eq!((m.redirect().stats.buffer_served, m.redirect().stats.wait_queue_stalls), (2, 1));
    assert!(m.verified_reads() > 0 && m.take_error().is_none());
}

#[test]
fn a_swap_pairs_two_mirrored_entries_and_reconciliation_swaps_the_ptes() {
    let (mut m, mut rt) = machine(RemapSpec::default(), true);
    let ((cold, cold_pfn), (hot, hot_pfn)) = pages(&m);
    let mv = Mechanisms::on_core(&mut m, &mut rt, 0).otf_migrate(hot_pfn + 32, Dest::Swap(cold_pfn + 5)).unwrap();
    assert_eq!((mv.new_entries, mv.swapped), (2, true));
    let r = m.redirect();
    let (a, b) = (r.entry_of(hot_pfn).unwrap(), r.entry_of(cold_pfn).unwrap());
    assert_eq!((r.entry(a).pair, r.entry(b).pair), (Some(b), Some(a)));
    assert_eq!((r.entry(a).new, r.entry(b).new, r.entry(a).migrated, r.entry(b).migrated), (cold_pfn, hot_pfn, 0b100, 0b100));
    set_clock(&mut m, 0, mv.done + 1);
    // The cold page's subpage 2 now lives in the slow tier, the hot one's in the fast.
    assert_eq!(read(&mut m, cold + 2 * SUB).1[0].tier, SLOW);
    assert_eq!(read(&mut m, hot + 2 * SUB + 64).1[0].tier, FAST);
    // Writes to both, then reconcile: every subpage of the pair is completed, the
    // PTEs point at each other's frames, the entries go.
    m.access(0, &Access::write(hot + 7 * SUB, 8, 0), &mut ());
    m.access(0, &Access::write(cold + 2 * SUB + 8, 8, 0), &mut ());
    Mechanisms::on_core(&mut m, &mut rt, 0).reconcile(hot_pfn).unwrap();
    let st = &m.redirect().stats;
    assert_eq!((st.reconciliations, st.reconciled_pages, st.completed.pages), (1, 2, 14), "7 subpages each way completed");
    assert_eq!(m.redirect().occupancy(), 0);
    let (h, c) = (m.space().page_info(PageRef::new(0, hot)).unwrap(), m.space().page_info(PageRef::new(0, cold)).unwrap());
    assert_eq!((h.pfn, h.tier, c.pfn, c.tier), (cold_pfn, FAST, hot_pfn, SLOW));
    for off in [0, 2 * SUB, 7 * SUB] {
        read(&mut m, hot + off);
        read(&mut m, cold + off + 8);
    }
    assert!(m.take_error().is_none());
    m.check_invariants().unwrap();
}

#[test]
fn reconciliation_costs_table_2_by_hand() {
    // One whole huge page moved one-way (the entry's unit is the page), then
    // reconciled by core 0 with nothing left to move and nothing dirty in the caches:
    //   invalidate 128 frames × 64 lines × 1 cycle (MigC)  =  8 192
    //   PTE     rewritten through the caches: an L1 hit (the walk just read it) = 0
    //   TLB     one shootdown round, 300 cycles for the initiator
    //   OS      page walk 150 + reverse mapping 4 480       =  4 630
    // total 13 122 cycles on core 0; core 1 takes the 300-cycle invalidation.
    let (mut m, mut rt, hot, hot_pfn, done) = whole_page_moved();
    set_clock(&mut m, 1, done);
    read(&mut m, hot + 64);
    let (c0, c1) = (m.cores[0].clock, m.cores[1].clock);
    Mechanisms::on_core(&mut m, &mut rt, 0).reconcile(hot_pfn).unwrap();
    assert_eq!(m.cores[0].clock - c0, 8192 + 300 + 150 + 4480);
    assert_eq!(m.cores[1].clock - c1, 300);
    assert_eq!(m.redirect().stats.reconcile_cycles, 8192 + 300 + 150 + 4480);
    let p = m.space().page_info(PageRef::new(0, hot)).unwrap();
    assert_eq!(p.tier, FAST);
    read(&mut m, hot + 64);
    assert!(m.take_error().is_none());
    m.check_invariants().unwrap();
}

#[test]
fn the_table_refuses_when_full() {
    let spec = RemapSpec { entries: 2, ..RemapSpec::default() };
    let (mut m, mut rt) = machine(spec, false);
    let ((_, cold_pfn), (_, hot_pfn)) = pages(&m);
    let mut mech = Mechanisms::on_core(&mut m, &mut rt, 0);
    mech.otf_migrate(hot_pfn, Dest::Swap(cold_pfn)).unwrap();
    assert_eq!(mech.remap().occupancy(), 2);
    // Another subpage of the same page needs no new entry.
    mech.otf_migrate(hot_pfn + 16, Dest::Free).unwrap();
    let other = hot_pfn + 2 * (HUGE >> 12);
    assert_eq!(mech.otf_migrate(other, Dest::Free).unwrap_err(), MechError::RemapFull);
    // A cold victim must be a fast page with no entry.
    assert!(matches!(mech.otf_migrate(cold_pfn, Dest::Free), Err(MechError::NotRemappable { .. })));
}

#[test]
fn reverse_migration_moves_a_subpage_back_and_drops_its_entry_when_done() {
    // SpRM: entries are subpages, targets slots of a swap area of 1/8 of the 4 MiB
    // fast tier: one huge frame of 8 slots.
    let spec = RemapSpec { entry_frames: 16, unit_frames: 16, swap_area_share: 0.125, ..RemapSpec::default() };
    let (mut m, mut rt) = machine(spec, true);
    assert_eq!(m.redirect().swap_slots(), (8, 8));
    let (_, (hot, hot_pfn)) = pages(&m);
    let mv = Mechanisms::on_core(&mut m, &mut rt, 0).otf_migrate(hot_pfn + 48, Dest::SwapArea).unwrap();
    assert_eq!(m.redirect().swap_slots(), (8, 7));
    set_clock(&mut m, 0, mv.done + 1);
    m.access(0, &Access::write(hot + 3 * SUB + 16, 8, 0), &mut ());
    assert_eq!(read(&mut m, hot + 3 * SUB + 4096).1[0].tier, FAST);
    let done = Mechanisms::on_core(&mut m, &mut rt, 0).reverse_migrate(hot_pfn + 48).unwrap();
    assert!(m.redirect().entry_of(hot_pfn + 48).is_some(), "kept until the copy back is done");
    set_clock(&mut m, 0, done + 1);
    // The next controller action drops it and frees the slot.
    let other = hot_pfn + 16;
    Mechanisms::on_core(&mut m, &mut rt, 0).otf_migrate(other, Dest::SwapArea).unwrap();
    assert!(m.redirect().entry_of(hot_pfn + 48).is_none());
    assert_eq!(m.redirect().swap_slots(), (8, 7));
    assert_eq!(m.redirect().stats.reversed.pages, 1);
    // The write made while it lived in the swap area came back with it.
    let (_, ev) = read(&mut m, hot + 3 * SUB + 16 + 4096 * 2);
    assert_eq!(ev[0].tier, SLOW);
    read(&mut m, hot + 3 * SUB + 16);
    assert!(m.take_error().is_none());
    m.check_invariants().unwrap();
}

#[test]
fn verify_catches_a_reconciliation_that_leaves_the_pte_stale() {
    let (mut m, mut rt, hot, hot_pfn, _) = whole_page_moved();
    m.access(0, &Access::write(hot + 64, 8, 0), &mut ());
    m.break_reconcile_pte = true;
    Mechanisms::on_core(&mut m, &mut rt, 0).reconcile(hot_pfn).unwrap();
    read(&mut m, hot + 64);
    let err = m.take_error().expect("a stale read");
    assert!(err.contains("stale read"), "{err}");
    assert!(m.check_invariants().is_err());
}
