//! What the integration tests share: running the binary, scratch directories that
//! remove themselves, reading a trace whole, a checked run of a policy.
#![allow(dead_code)]

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use tiersim::config::{Config, Sources};
use tiersim::engine::{run, RunOptions};
use tiersim::report::Report;
use tiersim::trace::{open, Access, OpenOptions};

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

/// A fresh, empty directory `tiersim-LABEL-PID-N` under the system temp dir, its own
/// to one test (or helper); dropping the guard removes it and everything in it, also
/// when the test panics. It reads as the directory's [`Path`].
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(label: &str) -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tiersim-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Scratch(dir)
    }

    /// The path of file `name` in the directory, as a command-line argument.
    pub fn file(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_string()
    }
}

impl Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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
