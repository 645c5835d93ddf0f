//! `tiersim sweep --scheduler ADDRESS`: hands the sweep to the Python package
//! (`python/`), which runs it on a Dask cluster and writes the same store.

use super::sweep::SweepArgs;
use crate::scratch::Scratch;
use crate::study::Spec;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

/// The Python interpreter: `$TIERSIM_PYTHON`, else `python3`.
fn python() -> String {
    std::env::var("TIERSIM_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// SIGINT ignored by this process until the guard is dropped, which restores what was
/// there before.
struct IgnoreSigint(libc::sighandler_t);

impl IgnoreSigint {
    fn now() -> IgnoreSigint {
        // SAFETY: signal(2) with SIG_IGN installs no handler code; the previous
        // disposition is kept to be restored.
        IgnoreSigint(unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) })
    }
}

impl Drop for IgnoreSigint {
    fn drop(&mut self) {
        // SAFETY: puts back the disposition signal(2) returned, as it was.
        unsafe { libc::signal(libc::SIGINT, self.0) };
    }
}

/// Runs `python3 -m tiersim sweep --scheduler ADDRESS --db DB RESOLVED.toml` with the
/// resolved spec, and ends with its exit code.
pub fn hand_over(args: &SweepArgs, spec: &Spec, db: &Path) -> Result<()> {
    let address = args.scheduler.as_deref().expect("called with --scheduler");
    if args.list {
        bail!("--list, --scheduler: --list only reads the store; give one of them");
    }
    let py = python();
    let found = Command::new(&py).args(["-c", "import tiersim"]).output();
    match found {
        Err(e) => bail!("--scheduler: cannot run {py} ({e}); set TIERSIM_PYTHON to a Python with tiersim's package (pip install ./python)"),
        Ok(o) if !o.status.success() => bail!("--scheduler: {py} has no `tiersim` package; install it with `pip install ./python` (docs/python.md)"),
        Ok(_) => {}
    }
    spec.check_runs(&spec.points())?;
    // Removed with its contents on every return, an error writing the spec included.
    let dir = Scratch::create("sweep")?;
    let resolved = dir.join("spec.toml");
    std::fs::write(&resolved, spec.to_toml()).with_context(|| format!("{}: cannot write", resolved.display()))?;
    let mut cmd = Command::new(&py);
    cmd.args(["-m", "tiersim", "sweep", "--scheduler", address, "--db"]).arg(db).arg(&resolved);
    if let Some(j) = args.jobs {
        cmd.args(["--jobs", &j.to_string()]);
    }
    let status = cmd.spawn().and_then(|mut child| {
        // Ctrl-C reaches the whole process group: the package stops its sweep and
        // says so, and this process waits for it and removes the spec rather than
        // dying first. (The child was started with the default disposition, which
        // an exec keeps; ignoring it here afterwards changes only this process.)
        let _deaf = IgnoreSigint::now();
        child.wait()
    });
    let status = status.with_context(|| format!("--scheduler: cannot run {py}"));
    // Removed before `exit`, which runs no destructors.
    drop(dir);
    let code = status?.code().unwrap_or(1);
    if code != 0 {
        // The package printed its own one-line error.
        std::process::exit(code);
    }
    Ok(())
}
