//! What Linux does today — `linux-tiering` (NUMA balancing's memory-tiering mode) and
//! `tpp` — on small machines with the scan period scaled down so that both act within
//! a short run: under `--verify` on every workload, with processes and VMs, 4 KiB and
//! 2 MiB pages, one and two tenants; and what each must have done.

mod common;

use tiersim::report::Report;
use tiersim::workload::WORKLOADS;

/// Scanning scaled to a run of ~10⁵ references (0.05 ms windows of 1 MiB).
const FAST_PERIODS: &[&str] = &[
    "policy.linux-tiering.scan_delay_ms=0.05",
    "policy.linux-tiering.scan_size_mb=1",
    "policy.linux-tiering.hot_threshold_ms=0.2",
    "policy.linux-tiering.scan_period_max_ms=1",
    "policy.tpp.scan_delay_ms=0.05",
    "policy.tpp.scan_size_mb=1",
];

fn run_with(policy: &str, tenants: &[&str], sets: &[&str]) -> Report {
    let mut all: Vec<String> = FAST_PERIODS.iter().chain(sets).map(|s| s.to_string()).collect();
    if !sets.iter().any(|s| s.starts_with("workload.refs")) {
        all.push("workload.refs=150000".into());
    }
    common::run_verified(policy, tenants, &all)
}

fn u(r: &Report, key: &str) -> u64 {
    r.policy_report["tiering"][key].as_u64().unwrap_or_else(|| panic!("no tiering.{key} in {:?}", r.policy_report))
}

#[test]
fn both_pass_verify_on_every_workload() {
    for policy in ["linux-tiering", "tpp"] {
        for &(workload, _) in WORKLOADS {
            let r = run_with(policy, &[], &[&format!("workload.name=\"{workload}\""), "workload.footprint=\"8MiB\"", "machine.tiers.fast.capacity=\"25%\"", "workload.refs=60000"]);
            assert!(r.sim.verified_reads > 0, "{policy} {workload}");
        }
    }
}

#[test]
fn both_pass_verify_with_two_tenants_in_processes_and_vms_with_both_page_sizes() {
    for policy in ["linux-tiering", "tpp"] {
        for kind in ["process", "vm"] {
            for thp in [false, true] {
                let tenants = [format!("{kind}:hotspot:50%"), format!("{kind}:kv:50%")];
                let tenants: Vec<&str> = tenants.iter().map(|s| s.as_str()).collect();
                let r = run_with(policy, &tenants, &["workload.footprint=\"16MiB\"", "machine.tiers.fast.capacity=\"25%\"", &format!("machine.page_table.thp={thp}"), "workload.hotspot.phases=2"]);
                assert!(r.sim.verified_reads > 0);
                assert_eq!(r.tenants.len(), 2);
            }
        }
    }
}

#[test]
fn linux_tiering_promotes_recently_marked_pages_and_kswapd_makes_room() {
    // The hot region moves; the fast tier (a quarter) fills at first touch, so
    // promotions of the new hot pages fail until kswapd has demoted idle ones.
    let sets = ["workload.name=\"hotspot\"", "workload.hotspot.phases=3", "workload.hotspot.hot_size=0.1", "workload.footprint=\"16MiB\"", "machine.tiers.fast.capacity=\"25%\"", "machine.page_table.thp=false", "workload.refs=400000"];
    let r = run_with("linux-tiering", &[], &sets);
    assert!(u(&r, "hint_faults") > 0);
    assert!(u(&r, "promoted") > 0);
    assert!(u(&r, "demoted") > 0, "{:?}", r.policy_report);
    assert!(u(&r, "kswapd_wakeups") > 0);
    assert!(u(&r, "no_room") > 0, "kswapd is woken by promotions that found no room");
    assert_eq!(r.summary.migrations, u(&r, "promoted") + u(&r, "demoted"));
    // Scanning skips the fast node in tiering mode: no fault on a page marked there.
    assert_eq!(u(&r, "inactive"), 0);
    // With a hot threshold far below any window's latency nothing is hot.
    let cold = run_with("linux-tiering", &[], &[&sets[..], &["policy.linux-tiering.hot_threshold_ms=0.000001"]].concat());
    assert_eq!(u(&cold, "promoted"), 0);
    assert!(u(&cold, "too_slow") > 0);
    assert!(r.summary.fast_tier_fraction > cold.summary.fast_tier_fraction);
}

#[test]
fn tpp_demotes_ahead_of_allocation_and_promotes_only_active_pages() {
    let sets = ["workload.name=\"hotspot\"", "workload.hotspot.phases=3", "workload.hotspot.hot_size=0.1", "workload.footprint=\"16MiB\"", "machine.tiers.fast.capacity=\"25%\"", "machine.page_table.thp=false", "workload.refs=400000"];
    let r = run_with("tpp", &[], &sets);
    // The fast tier fell under the demotion watermark while it filled: kswapd
    // demoted without any promotion asking.
    assert!(u(&r, "kswapd_wakeups") > 0);
    assert!(u(&r, "demoted") > 0);
    // A slow page becomes active only through faults (nothing reclaims the slow
    // node): each page promoted took two faults on the inactive list first.
    assert!(u(&r, "promoted") > 0, "{:?}", r.policy_report);
    assert!(u(&r, "inactive") >= 2 * u(&r, "promoted"), "{:?}", r.policy_report);
    assert_eq!(u(&r, "too_slow") + u(&r, "rate_limited"), 0, "TPP has no latency threshold or rate limit");
    let marks = &r.policy_report["fast_watermarks"];
    assert!(marks["target"].as_u64() >= Some(2 * marks["high"].as_u64().unwrap()));
}
