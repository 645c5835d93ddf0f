//! Theory against measurement for the time mechanisms take, as Ramulator 2 tests its
//! DRAM model: a scan is a stream whose cost is what the documented model predicts for
//! its lines and entries, and a batch of copies costs its size times one copy — for
//! sizes over four orders of magnitude, so that nothing is charged quadratically.

use super::*;
use crate::machine::page_table::ACCESSED;
use crate::machine::placement::Placement;
use crate::machine::{Build, MachineConfig, TenantKind};
use crate::units::Capacity;

const BASE: u64 = 0x7f00_0000_0000;

/// A one-core machine with `fast` bytes of fast tier (DRAM, Rainbow's Table IV) and a
/// small slow tier, first touch in `placement`.
fn machine(fast: u64, slow: u64, placement: Placement) -> Machine {
    let mut cfg = MachineConfig::default();
    cfg.tiers.fast.capacity = Capacity::Bytes(fast);
    cfg.tiers.slow.capacity = Capacity::Bytes(slow);
    let mut b = Build::new(&cfg, &[TenantKind::Process], fast.min(slow));
    b.placement = placement;
    Machine::new(&cfg, &b).unwrap()
}

/// Maps `n` base pages from `BASE` without touching them through the caches.
fn map(m: &mut Machine, n: u64) {
    for i in 0..n {
        m.space.first_touch(0, BASE + (i << 12), None).expect("room for the page");
    }
}

/// Runs thread 0 until its queue is empty; returns its busy cycles.
fn run_thread(m: &mut Machine, rt: &mut Runtime) -> u64 {
    let before = rt.threads.report()[0].busy_cycles;
    while rt.threads.next_busy().is_some() {
        rt.threads.step(m, &mut rt.limits, 0, &mut ());
    }
    rt.threads.report()[0].busy_cycles - before
}

fn within(measured: u64, expected: u64, tolerance: f64) -> bool {
    (measured as f64 - expected as f64).abs() <= tolerance * expected as f64
}

/// A background scan (with clearing) of N Accessed PTEs costs, per the model of
/// docs/machine.md: each page-table line (8 entries) read once through the caches —
/// the last level's latency plus the DRAM read, a row miss for the first line of each
/// page-table frame (one 4 KiB row) and a row hit for the other 63, less the L1 hit
/// that is part of the per-entry cost — plus `scan_pte_cycles` per entry (clearing
/// rewrites a line just read, an L1 hit), plus one shootdown round.
#[test]
fn a_scan_costs_its_lines_and_entries_plus_one_shootdown() {
    for n in [100u64, 1_000, 10_000, 100_000, 1_000_000] {
        let mut m = machine((n << 12) + (64 << 20), 64 << 20, Placement::FastFirst);
        map(&mut m, n);
        let tenant = &mut m.space;
        let mut slots = Vec::new();
        tenant.visit_slots(0, 0, u64::MAX, &mut |_, slot| {
            slots.push(slot);
            std::ops::ControlFlow::Continue(())
        });
        for &s in &slots {
            *tenant.entry_mut(0, s) |= ACCESSED;
        }
        let mut rt = Runtime::new(&[ThreadKind::Kernel], 1);
        let mut job = Job::new(0);
        job.push(Op::Scan { scope: Scope::Tenant(0), mode: ScanMode::Clear });
        Mechanisms::on_core(&mut m, &mut rt, 0).submit(ThreadId(0), job).unwrap();
        let busy = run_thread(&mut m, &mut rt);

        let cfg = m.cfg().clone();
        let (l1, llc) = (cfg.caches[0].latency_cycles, cfg.caches.last().unwrap().latency_cycles);
        let dram = m.memory().tiers().get(TierId::FAST);
        let (hit, miss) = (llc - l1 + dram.device_cycles(false, true), llc - l1 + dram.device_cycles(false, false));
        let frames = n.div_ceil(512);
        let lines = n.div_ceil(8);
        let expected = frames * miss + (lines - frames) * hit + n * cfg.costs.scan_pte_cycles + cfg.costs.shootdown_cycles;
        assert!(within(busy, expected, 0.10), "{n} entries: {busy} cycles, model {expected}");
        assert_eq!(m.stats.ptes_scanned, n);
        assert_eq!(m.stats.shootdowns, 1, "one round for the whole scan");
    }
}

/// A batch of K background migrations (slow → fast, 4 KiB) costs K times one: each
/// starts when the one before has completed, on the thread's clock.
#[test]
fn a_batch_of_copies_costs_its_size_times_one_copy() {
    let one = |k: u64| {
        let mut m = machine(64 << 20, 64 << 20, Placement::SlowOnly);
        map(&mut m, k);
        let mut rt = Runtime::new(&[ThreadKind::Kernel], 1);
        let mut job = Job::new(0);
        for i in 0..k {
            job.push(Op::Migrate { page: PageRef::new(0, BASE + (i << 12)), to: TierId::FAST });
        }
        Mechanisms::on_core(&mut m, &mut rt, 0).submit(ThreadId(0), job).unwrap();
        let busy = run_thread(&mut m, &mut rt);
        assert_eq!(m.stats.migrate.pages, k);
        busy
    };
    let single = one(1);
    for k in [10u64, 100, 1_000, 10_000] {
        let per_copy = one(k) / k;
        assert!(within(per_copy, single, 0.10), "{k} copies: {per_copy} cycles each, one alone {single}");
    }
}
