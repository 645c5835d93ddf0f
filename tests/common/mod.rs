//! What the integration tests share: running the binary, scratch files, reading a
//! trace whole.

use std::process::{Command, Output};
use tiersim::trace::{open, Access, OpenOptions};

/// Runs the tiersim binary with `args`.
pub fn tiersim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tiersim")).args(args).output().unwrap()
}

/// A path for scratch file `name` in this test binary's own directory (`suite`
/// names it).
pub fn temp(suite: &str, name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("tiersim-{suite}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).to_str().unwrap().to_string()
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
