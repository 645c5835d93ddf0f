//! Paging-structure caches end to end: no trace of them in a report while they are
//! off; counted, cheaper walks and current entries (`--verify` checks every one at each
//! epoch) while on, for processes whose pages move, split and merge, and for VMs.

mod common;

use common::{run_verified, without_wall_time};
use tiersim::config::{Config, Sources};
use tiersim::engine::{run, RunOptions};
use tiersim::report::Report;

/// Intel-like caches: 32 PDE, 4 PDPTE, 2 PML4E entries.
const ON: [&str; 3] = ["machine.tlb.psc.pde_entries=32", "machine.tlb.psc.pdpte_entries=4", "machine.tlb.psc.pml4e_entries=2"];

fn sets(lists: &[&[&str]]) -> Vec<String> {
    lists.iter().flat_map(|l| l.iter().map(|s| s.to_string())).collect()
}

fn run_with(sets: Vec<String>) -> Report {
    run(&Config::load(&Sources { sets, ..Default::default() }).unwrap(), &RunOptions::default()).unwrap()
}


#[test]
fn the_caches_leave_no_trace_in_a_report_while_off_and_shorten_walks_while_on() {
    let gups: &[&str] = &["workload.name=\"gups\"", "workload.footprint=\"16MiB\"", "workload.refs=100000"];
    let off = run_with(sets(&[gups]));
    let text = serde_json::to_string(&off).unwrap();
    assert!(!text.contains("psc"), "a run without the caches mentions them");
    // Sizes of 0 given explicitly are the same run.
    let zeros = run_with(sets(&[gups, &["machine.tlb.psc.pde_entries=0", "machine.tlb.psc.latency_cycles=5"]]));
    assert_eq!(without_wall_time(&zeros), without_wall_time(&off));

    let on = run_with(sets(&[gups, &ON]));
    let (a, b) = (&off.cores[0].stats, &on.cores[0].stats);
    let p = b.psc.as_ref().expect("per-core counters while on");
    // One lookup per walk of a process; the TLBs miss as often either way. 16 MiB of
    // base pages is 8 regions of 2 MiB, all held by the PDE cache once touched: every
    // walk after the first of each region reads its PTE alone.
    assert_eq!((p.lookups, a.tlb_misses), (b.tlb_misses, b.tlb_misses));
    assert_eq!(p.pde_hits + 8, p.lookups, "{p:?}");
    assert_eq!(b.walk_references, p.pde_hits + 4 + 7 * 2, "one cold walk, 7 PDPTE hits");
    assert!(a.walk_references > 3 * b.walk_references);
    assert!(b.walk_cycles < a.walk_cycles, "{} against {}", b.walk_cycles, a.walk_cycles);
    assert_eq!(on.config["machine"]["tlb"]["psc"]["pde_entries"], 32);
}

#[test]
fn pages_that_move_split_and_merge_keep_the_caches_current() {
    // Thermostat splits sampled huge pages and merges them back; every epoch checks
    // that no cached entry outlived the table it named.
    let r = run_verified(
        "thermostat",
        &[],
        &sets(&[
            &ON,
            &[
                "workload.name=\"kv\"",
                "workload.footprint=\"32MiB\"",
                "workload.refs=300000",
                "machine.page_table.thp=true",
                "machine.tiers.fast.capacity=\"50%\"",
                "policy.thermostat.periods_per_run=4",
                "policy.thermostat.sample_fraction=0.5",
            ],
        ]),
    );
    assert!(r.mechanisms.splits > 0 && r.mechanisms.merges > 0, "splits {}, merges {}", r.mechanisms.splits, r.mechanisms.merges);
    assert!(r.cores[0].stats.psc.as_ref().unwrap().hits() > 0);
    // A policy that migrates base pages, its shootdowns dropping the tenant's entries.
    let r = run_verified("tpp", &[], &sets(&[&ON, &["workload.name=\"hotspot\"", "workload.footprint=\"32MiB\"", "workload.refs=300000"]]));
    assert!(r.summary.migrations > 0);
}

#[test]
fn a_vm_walks_both_dimensions_through_the_caches_verified() {
    let r = run_verified("hmm-v", &["vm:hotspot"], &sets(&[&ON, &["workload.footprint=\"16MiB\"", "workload.refs=200000"]]));
    let s = &r.cores[0].stats;
    let p = s.psc.as_ref().unwrap();
    // A nested walk looks up once for the guest table and once per EPT walk.
    assert!(p.lookups >= 2 * s.tlb_misses, "{p:?}, {} misses", s.tlb_misses);
    assert!(s.walk_references < 6 * s.tlb_misses, "{} references for {} walks", s.walk_references, s.tlb_misses);
}
