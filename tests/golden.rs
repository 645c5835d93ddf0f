//! Detailed mode's results must not change by accident: a fixed set of small runs —
//! every workload, the policies that move pages, a mix, VMs, the redirection
//! structures — each reduced to a hash of its JSON report without the `sim` section
//! (wall times), compared with `tests/data/golden-reports.txt`.
//!
//! A change that is meant to change results re-blesses the file, and its commit says
//! why:
//!
//!     TIERSIM_BLESS=1 cargo test --release --test golden
//!
//! `TIERSIM_GOLDEN_BIN=PATH` runs another build instead (e.g. the commit before a
//! change, to bless the file with the old results and check the new build against
//! them).

mod common;

use std::path::PathBuf;
use std::process::Command;

const GOLDEN: &str = "tests/data/golden-reports.txt";

/// Every run: its arguments after `tiersim run`.
fn runs() -> Vec<String> {
    let workloads = ["uniform", "gups", "zipf", "hotspot", "seqscan", "chase", "graph-bfs", "pagerank", "kv", "spmv-cg", "gemm", "stream"];
    let mut runs: Vec<String> = workloads.iter().map(|w| format!("--workload {w} --footprint 32MiB --refs 300000 --seed 7")).collect();
    runs.extend(
        [
            "--policy tpp --workload kv --footprint 32MiB --refs 1000000",
            "--policy linux-tiering --workload zipf --footprint 32MiB --refs 1000000",
            "--policy kstaled --workload hotspot --footprint 32MiB --refs 1000000 --set policy.kstaled.scans_per_run=10",
            "--policy thermostat --workload kv --footprint 64MiB --refs 2000000 --set policy.thermostat.periods_per_run=5",
            "--policy lru --mix gups,chase --footprint 32MiB --refs 1000000",
            "--policy hemem --workload kv --footprint 32MiB --refs 1000000",
            "--policy memos --preset memos --mix gups,chase --footprint 16MiB --refs 2000000 --set policy.memos.passes_per_run=10 --set policy.memos.samplings_per_pass=5",
            "--policy hmm-v --tenants vm:kv:25%,vm:gups:25% --footprint 16MiB --refs 500000",
            "--policy rainbow --preset rainbow --workload zipf --footprint 64MiB --refs 500000",
            "--policy spar --preset spar --workload hotspot --footprint 64MiB --refs 500000",
            "--policy memory-mode --workload kv --footprint 32MiB --refs 500000",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    runs
}

/// FNV-1a, 64 bits: a stable hash with no dependency.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// The hash of the run's JSON report without its `sim` section.
fn report_hash(bin: &str, args: &str, i: usize) -> u64 {
    let dir = common::Scratch::new("golden");
    let json = dir.file(&format!("run{i}.json"));
    let mut cmd = Command::new(bin);
    cmd.arg("run").args(args.split_whitespace()).arg("--json").arg(&json);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "tiersim run {args}: {}", String::from_utf8_lossy(&out.stderr));
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("sim");
    fnv(v.to_string().as_bytes())
}

#[test]
fn detailed_reports_match_the_golden_hashes() {
    let bin = std::env::var("TIERSIM_GOLDEN_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_tiersim").to_string());
    let got: Vec<(u64, String)> = runs().into_iter().enumerate().map(|(i, a)| (report_hash(&bin, &a, i), a)).collect();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(GOLDEN);
    if std::env::var_os("TIERSIM_BLESS").is_some() {
        let text: String = got.iter().map(|(h, a)| format!("{h:016x} {a}\n")).collect();
        std::fs::write(&path, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap();
    let want: Vec<(&str, &str)> = want.lines().map(|l| l.split_once(' ').unwrap()).collect();
    assert_eq!(want.len(), got.len(), "{GOLDEN} lists {} runs, the test {}: re-bless (see the module docs)", want.len(), got.len());
    let changed: Vec<String> =
        want.iter().zip(&got).filter(|((h, a), (g, b))| *h != format!("{g:016x}") || a != b).map(|(_, (_, b))| format!("tiersim run {b}")).collect();
    assert!(changed.is_empty(), "detailed results changed (re-bless only if the change is meant to change them):\n{}", changed.join("\n"));
}
