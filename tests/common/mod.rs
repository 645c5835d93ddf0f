//! What the integration tests share: running the binary, scratch directories that
//! remove themselves, reading a trace whole, a checked run of a policy.
#![allow(dead_code)]

use std::process::{Command, Output};
use tiersim::config::{Config, Sources};
use tiersim::engine::{run, RunOptions};
use tiersim::report::Report;
use tiersim::trace::{open, Access, OpenOptions};

#[allow(unused_imports)] // not every suite needs one
pub use tiersim::scratch::Scratch;

/// A report as JSON without the wall-time figures of its `sim` section, for
/// comparing runs that must be identical.
pub fn without_wall_time(r: &Report) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap();
    let sim = v["sim"].as_object_mut().unwrap();
    for timing in ["wall_seconds", "setup_seconds", "command_seconds", "references_per_second", "simulated_seconds_per_second"] {
        sim.remove(timing);
    }
    v
}

/// Runs `policy` on `tenants` (none: the workload the settings give) with the
/// `--set` settings `sets`, the machine's invariants checked at every epoch (of
/// 300 000 cycles) and the shadow memory verifying every read; panics with the run's
/// error.
pub fn run_verified(policy: &str, tenants: &[&str], sets: &[String]) -> Report {
    let mut all = sets.to_vec();
    all.extend([format!("policy.name=\"{policy}\""), "engine.epoch_cycles=300000".into(), "engine.check_invariants=true".into()]);
    let cfg = Config::load(&Sources { tenants: tenants.iter().map(|s| s.to_string()).collect(), sets: all, ..Default::default() }).unwrap();
    run(&cfg, &RunOptions { verify: true, ..Default::default() }).unwrap_or_else(|e| panic!("{policy} {tenants:?} {sets:?}: {e}"))
}

/// Runs the tiersim binary with `args`.
pub fn tiersim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tiersim")).args(args).output().unwrap()
}

/// Every record of the trace at `path`.
pub fn read_all(path: &str, opts: &OpenOptions) -> Vec<Access> {
    let mut o = open(path, opts).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut all = Vec::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        o.source.fill(&mut buf, 4096).unwrap_or_else(|e| panic!("{path}: {e}"));
        if buf.is_empty() {
            return all;
        }
        all.extend_from_slice(&buf);
    }
}
