//! Measures how fast each workload generator produces references: 20 M references
//! per generator with the default configuration (1 GiB footprint), plus a few
//! variants of the application workloads, drained in batches of 4096 as the engine
//! does; the best of three runs is reported, since the slower runs measure other
//! load on the machine. Run with `cargo run --release --example rate`, or name
//! generators to measure only those: `cargo run --release --example rate -- kv stream`.
//!
//! Building a generator is timed apart ("setup"): it is where the application
//! workloads build their data (a graph's CSR, a hash table's chains). The first
//! generator built is kept alive during the timed runs, so that the runs share its
//! data (as the cores of one tenant do) instead of rebuilding it.

use std::time::Instant;
use tiersim::workload::{build, footprint_bytes, GemmKernel, Popularity, ValueSizes, WorkloadConfig, WORKLOADS};

const REFS: u64 = 20_000_000;
const BATCH: usize = 4096;
const RUNS: usize = 3;

/// A change to a generator's default configuration.
type Change = fn(&mut WorkloadConfig);

/// Variants measured besides each generator's defaults: a label (the generator's
/// name first) and the change to the defaults.
const VARIANTS: &[(&str, Change)] = &[
    ("kv etc", |c| c.kv.value_sizes = ValueSizes::Etc),
    ("kv hotspot", |c| c.kv.popularity = Popularity::Hotspot),
    ("gemm lu", |c| c.gemm.kernel = GemmKernel::Lu),
];

/// Generates all references of `cfg` once and returns the seconds it took and a
/// checksum of the addresses, which keeps the work from being optimized away.
fn time_one_run(cfg: &WorkloadConfig) -> anyhow::Result<(f64, u64)> {
    let mut source = build(cfg, 0, 0)?;
    let mut out = Vec::with_capacity(BATCH);
    let mut checksum = 0u64;
    let start = Instant::now();
    loop {
        out.clear();
        source.fill(&mut out, BATCH)?;
        if out.is_empty() {
            break;
        }
        checksum = out.iter().fold(checksum, |sum, a| sum.wrapping_add(a.vaddr ^ a.flags as u64));
    }
    Ok((start.elapsed().as_secs_f64(), checksum))
}

fn main() -> anyhow::Result<()> {
    let wanted: Vec<String> = std::env::args().skip(1).collect();
    let defaults = WORKLOADS.iter().map(|(name, _)| (*name, (|_| ()) as Change));
    let all = defaults.chain(VARIANTS.iter().copied());
    println!("{:<11} {:>13} {:>9} {:>10} {:>10}  checksum", "workload", "footprint MiB", "setup s", "seconds", "Mrefs/s");
    for (label, change) in all {
        let name = label.split(' ').next().unwrap_or(label);
        if !wanted.is_empty() && !wanted.iter().any(|w| w == name) {
            continue;
        }
        let mut cfg = WorkloadConfig { name: name.to_string(), refs: REFS, ..WorkloadConfig::default() };
        change(&mut cfg);
        let footprint = footprint_bytes(&cfg)? as f64 / (1 << 20) as f64;
        let setup_start = Instant::now();
        let _keeper = build(&cfg, 0, 0)?;
        let setup = setup_start.elapsed().as_secs_f64();
        let mut best = f64::INFINITY;
        let mut checksum = 0;
        for _ in 0..RUNS {
            let (seconds, sum) = time_one_run(&cfg)?;
            best = best.min(seconds);
            checksum = sum;
        }
        println!("{label:<11} {footprint:>13.1} {setup:>9.2} {best:>10.3} {:>10.1}  {checksum:016x}", REFS as f64 / best / 1e6);
    }
    Ok(())
}
