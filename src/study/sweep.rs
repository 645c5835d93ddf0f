//! Running a sweep: the runs the store does not hold yet, `jobs` at a time, each
//! written to the store as soon as it ends.

use super::spec::{Point, Spec};
use super::store::Store;
use crate::engine::{self, RunOptions};
use crate::progress::Progress;
use anyhow::{bail, Result};
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

/// How a sweep runs.
#[derive(Clone, Debug, Default)]
pub struct SweepOptions {
    /// Runs at a time (at least 1).
    pub jobs: usize,
    pub progress: Progress,
    /// When set (Ctrl-C), running runs stop at their next epoch boundary and are not
    /// recorded, and no new run starts.
    pub stop: Option<&'static AtomicBool>,
}

/// What a sweep did.
#[derive(Clone, Debug, Default)]
pub struct SweepOutcome {
    /// Runs in the grid.
    pub total: usize,
    /// Runs the store already held finished.
    pub already: usize,
    /// Runs finished now.
    pub finished: usize,
    /// Runs that failed now: their label and message.
    pub failed: Vec<(String, String)>,
    /// Runs left to do because the sweep was stopped.
    pub left: usize,
}

/// Runs point `p` as `tiersim run` would and returns its report as JSON, or the
/// reason it failed, on one line.
pub fn run_point(p: &Point, progress: &Progress, stop: Option<&'static AtomicBool>) -> std::result::Result<serde_json::Value, String> {
    let started = Instant::now();
    let go = || -> Result<serde_json::Value> {
        let cfg = p.config()?;
        let mut r = engine::run(&cfg, &RunOptions { verify: p.verify(), progress: progress.clone(), stop })?;
        r.preset = p.options.get("preset").cloned();
        r.sim.command_seconds = started.elapsed().as_secs_f64();
        if !r.complete {
            anyhow::bail!("stopped before the end");
        }
        Ok(serde_json::to_value(&r)?)
    };
    match catch_unwind(AssertUnwindSafe(go)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(one_line(&format!("{e:#}"))),
        Err(panic) => {
            let what = panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            Err(one_line(&format!("the run panicked: {what}")))
        }
    }
}

/// Refuses to run `spec` into a sweep of the same name whose stored runs are not all
/// in its grid (`points`): the sweep would then hold runs of two specs (say two
/// `refs`), and its report would mix them. A grid that only adds runs to the stored
/// ones (another seed) extends the sweep.
fn check_same_grid(spec: &Spec, store: &Store, points: &[Point]) -> Result<()> {
    let grid: HashSet<String> = points.iter().map(Point::key).collect();
    let stored = store.keys(&spec.name)?;
    let outside = stored.iter().filter(|k| !grid.contains(*k)).count();
    if outside == 0 {
        return Ok(());
    }
    let before = store.sweep(Some(&spec.name)).ok().and_then(|s| Spec::parse(&s.spec, "stored", &spec.name).ok());
    let what = match before.map(|b| b.differences(spec)).filter(|d| !d.is_empty()) {
        Some(d) => format!(" ({})", d.join("; ")),
        None => String::new(),
    };
    bail!(
        "sweep {}: {} already holds this sweep from a different spec{what}, and this grid leaves out {outside} of its stored runs; give the sweep a new name (`name =` or --name) or use another store (--db)",
        spec.name,
        store.path().display()
    )
}

fn one_line(text: &str) -> String {
    text.split('\n').map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" / ")
}

/// Runs the points of `spec` that `store` does not hold finished, writing each to the
/// store in its own transaction as it ends. A failed run is recorded with its message
/// and the others go on; a run stopped by `opts.stop` is not recorded. The caller
/// checks the grid first ([`Spec::check_runs`]), before it opens the store, so that a
/// bad spec leaves no store behind.
pub fn run_sweep(spec: &Spec, store: &mut Store, opts: &SweepOptions) -> Result<SweepOutcome> {
    let points = spec.points();
    check_same_grid(spec, store, &points)?;
    store.begin_sweep(&spec.name, &spec.to_toml(), &spec.axis_names(), spec.baseline.as_deref())?;
    store.renumber(&spec.name, &points)?;
    let done = store.finished_keys(&spec.name)?;
    let todo: Vec<&Point> = points.iter().filter(|p| !done.contains(&p.key())).collect();
    let mut out = SweepOutcome { total: points.len(), already: points.len() - todo.len(), ..Default::default() };
    if todo.is_empty() {
        return Ok(out);
    }
    opts.progress.set_runs(todo.len() as u32);
    // A flag of the sweep's own when the caller gave none, so that a store that
    // cannot be written stops the runs.
    let stop: &'static AtomicBool = opts.stop.unwrap_or_else(|| Box::leak(Box::new(AtomicBool::new(false))));
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    let mut written: Result<()> = Ok(());
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.clamp(1, todo.len()) {
            let tx = tx.clone();
            let (todo, next, progress) = (&todo, &next, &opts.progress);
            s.spawn(move || loop {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(p) = todo.get(i) else { return };
                let started = Instant::now();
                let result = run_point(p, progress, Some(stop));
                progress.run_done();
                if tx.send((i, result, started.elapsed().as_secs_f64())).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        for (i, result, wall) in rx {
            let p = todo[i];
            if stop.load(Ordering::SeqCst) && result.is_err() {
                // Stopped, not failed: runs again next time.
                continue;
            }
            let recorded = match &result {
                Ok(report) => store.record(&spec.name, p, Ok(report), wall).map(|_| out.finished += 1),
                Err(msg) => {
                    out.failed.push((p.label(), msg.clone()));
                    store.record(&spec.name, p, Err(msg), wall)
                }
            };
            if let Err(e) = recorded {
                stop.store(true, Ordering::SeqCst);
                if written.is_ok() {
                    written = Err(e);
                }
            }
        }
    });
    written?;
    out.left = out.total - out.already - out.finished - out.failed.len();
    Ok(out)
}
