//! The systems HMM-V is measured against (numa-balancing, memory-mode, nimble, hemem)
//! on small machines with their periods scaled down so that each acts within a short
//! run: under `--verify` (shadow memory and the machine's invariants at every epoch)
//! with processes and VMs, 4 KiB and 2 MiB pages, one and two tenants; and what each
//! must have done.

mod common;

use tiersim::config::{Config, Sources};
use tiersim::engine::{run, RunOptions};
use tiersim::report::Report;

/// Every baseline's periods scaled to a run of ~10⁵ references.
const FAST_PERIODS: &[&str] = &[
    "policy.numa-balancing.scan_delay_ms=0.05",
    "policy.numa-balancing.scan_period_min_ms=0.05",
    "policy.numa-balancing.scan_period_max_ms=5",
    "policy.numa-balancing.scan_size_mb=1",
    "policy.nimble.steps_per_run=8",
    "policy.hemem.sample_period=50",
    "policy.hemem.policy_period_ms=0.05",
];

fn run_with(policy: &str, tenants: &[&str], sets: &[&str]) -> Report {
    let mut all: Vec<String> = FAST_PERIODS.iter().chain(sets).map(|s| s.to_string()).collect();
    all.push("workload.refs=150000".into());
    common::run_verified(policy, tenants, &all)
}

fn u(r: &Report, path: &str) -> u64 {
    r.policy_report.get(path.split('.').next().unwrap()).and_then(|v| path.split('.').skip(1).try_fold(v, |v, k| v.get(k))).and_then(|v| v.as_u64()).unwrap_or_else(|| panic!("no {path} in {:?}", r.policy_report))
}

#[test]
fn every_baseline_passes_verify_in_processes_and_vms_with_both_page_sizes() {
    for policy in ["numa-balancing", "nimble", "hemem", "memory-mode"] {
        for kind in ["process", "vm"] {
            for thp in [false, true] {
                // Two tenants sharing a fast tier of a quarter of their footprint.
                let tenants = [format!("{kind}:hotspot:50%"), format!("{kind}:kv:50%")];
                let tenants: Vec<&str> = tenants.iter().map(|s| s.as_str()).collect();
                let r = run_with(policy, &tenants, &["workload.footprint=\"16MiB\"", "machine.tiers.fast.capacity=\"25%\"", &format!("machine.page_table.thp={thp}"), "workload.hotspot.phases=2"]);
                assert!(r.sim.verified_reads > 0);
                assert_eq!(r.tenants.len(), 2);
                let single = run_with(policy, &[&format!("{kind}:zipf:100%")], &["workload.footprint=\"8MiB\"", "machine.tiers.fast.capacity=\"25%\"", &format!("machine.page_table.thp={thp}")]);
                assert!(single.sim.verified_reads > 0);
            }
        }
    }
}

#[test]
fn numa_balancing_faults_on_marked_pages_and_promotes_only_with_room() {
    // The paper's NUMA_B: the fast tier fills on first touch; hint faults on slow
    // pages then fail to promote (no room above the high watermark, no demotion),
    // and each failed pass doubles the scan period.
    let full = run_with("numa-balancing", &[], &["workload.name=\"hotspot\"", "workload.footprint=\"16MiB\"", "machine.tiers.fast.capacity=\"25%\""]);
    assert!(u(&full, "hinting.hint_faults") > 0);
    assert_eq!(u(&full, "hinting.promoted"), 0);
    assert!(u(&full, "hinting.failed") > 0);
    assert_eq!(full.summary.migrations, 0);
    let period = full.policy_report["scanners"][0]["scan_period_ms"].as_f64().unwrap();
    assert!(period > 0.05, "the period grew from 0.05 ms: {period}");
    // Pages placed on the slow node with a fast tier that has room: faults promote.
    let room = run_with("numa-balancing", &[], &["workload.name=\"hotspot\"", "workload.footprint=\"16MiB\"", "machine.tiers.fast.capacity=\"100%\"", "policy.numa-balancing.first_touch_slow=true"]);
    assert!(u(&room, "hinting.promoted") > 0);
    assert_eq!(room.summary.migrations, u(&room, "hinting.promoted"));
    assert!(room.summary.fast_tier_fraction > full.summary.fast_tier_fraction);
}

#[test]
fn nimble_promotes_active_pages_and_exchanges_huge_pages() {
    let r = run_with("nimble", &[], &["workload.name=\"hotspot\"", "workload.hotspot.phases=2", "workload.hotspot.hot_size=0.1", "workload.footprint=\"64MiB\"", "machine.tiers.fast.capacity=\"50%\"", "machine.page_table.thp=true"]);
    assert!(u(&r, "promoted_pages") > 0);
    assert!(u(&r, "exchanges") > 0, "{:?}", r.policy_report);
    assert!(u(&r, "steps") >= 7, "{:?}", r.policy_report);
    // Its moves are unmapped while they copy: the report counts them as linux moves.
    assert!(r.mechanisms.swaps > 0);
}

#[test]
fn hemem_samples_and_moves_hot_slow_pages_write_protected() {
    for kind in ["process", "vm"] {
        // A small hot spot that moves, sampled densely.
        let sets = ["workload.footprint=\"32MiB\"", "machine.tiers.fast.capacity=\"25%\"", "workload.hotspot.phases=2", "workload.hotspot.hot_size=0.05", "policy.hemem.sample_period=10", "workload.refs=300000"];
        let r = run_with("hemem", &[&format!("{kind}:hotspot:100%")], &sets);
        assert!(u(&r, "samples") > 100);
        assert!(u(&r, "promoted_pages") > 0, "{kind}: {:?}", r.policy_report);
        let moves = r.vm_moves.as_ref().map(|m| m.write_protect);
        if kind == "vm" {
            assert_eq!(moves, Some(u(&r, "promoted_pages") + u(&r, "demoted_pages")));
        }
    }
    // The fewer events per sample, the more samples (and PEBS time) it takes.
    let sparse = run_with("hemem", &[], &["workload.footprint=\"8MiB\"", "policy.hemem.sample_period=500"]);
    let dense = run_with("hemem", &[], &["workload.footprint=\"8MiB\"", "policy.hemem.sample_period=50"]);
    assert!(u(&dense, "samples") > 8 * u(&sparse, "samples"));
}

#[test]
fn memory_mode_hides_the_fast_tier_and_reports_miss_ratios_per_tenant() {
    let r = run_with("memory-mode", &["vm:hotspot:50%", "vm:uniform:50%"], &["workload.footprint=\"32MiB\"", "machine.tiers.fast.capacity=\"25%\""]);
    for t in &r.tenants {
        assert_eq!(t.frames_per_tier[0], 0, "no page in the fast tier");
    }
    let mm = &r.redirect["memory_mode"];
    let ratio = |i: usize| mm["tenants"][i]["read_miss_ratio"].as_f64().unwrap();
    // The uniform tenant misses more than the one with a hot spot.
    assert!(ratio(1) > ratio(0), "{mm}");
    assert!(r.summary.fast_tier_fraction > 0.0, "hits are served by the fast tier");
    assert_eq!(r.summary.migrations, 0);
    // Footprints beyond the slow tier are refused with the reason.
    let cfg = Config::load(&Sources {
        sets: ["policy.name=\"memory-mode\"", "workload.footprint=\"64MiB\"", "machine.tiers.slow.capacity=\"32MiB\"", "workload.refs=1000"].map(String::from).to_vec(),
        ..Default::default()
    })
    .unwrap();
    let e = run(&cfg, &RunOptions::default()).map(|_| ()).expect_err("refused").to_string();
    assert!(e.contains("being the machine's cache"), "{e}");
}
