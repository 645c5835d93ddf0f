//! Running a sweep: the runs the store does not hold yet, `jobs` at a time, each
//! claimed in the store before it starts and written to it as soon as it ends, so
//! that sweeps running at once on one store share the runs out (module `store`).

use super::spec::{Point, Spec};
use super::store::{unix_now, Claim, Store, CLAIM_BEAT_S};
use crate::engine::{self, RunOptions};
use crate::progress::Progress;
use anyhow::{bail, Result};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How a sweep runs.
#[derive(Clone, Debug, Default)]
pub struct SweepOptions {
    /// Runs at a time (at least 1).
    pub jobs: usize,
    pub progress: Progress,
    /// When set (Ctrl-C), running runs stop at their next epoch boundary and are not
    /// recorded, and no new run starts.
    pub stop: Option<&'static AtomicBool>,
    /// Simulate again the finished runs that another build of tiersim simulated (the
    /// commit in their report differs from this binary's, or is not recorded). Without
    /// it they are kept, and [`SweepOutcome::other_builds`] counts them.
    pub rerun_other_builds: bool,
}

/// This binary's commit, as a report's `sim.commit` names it.
pub const THIS_BUILD: &str = env!("TIERSIM_COMMIT");

/// What [`SweepOutcome::other_builds`] calls the build of a run stored before reports
/// named their commit.
pub const UNRECORDED: &str = "an older build that did not record its commit";

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
    /// Runs another sweep of the store recorded while this one ran (it had claimed
    /// them), finished or failed.
    pub elsewhere: usize,
    /// Those of them that failed: their label and message.
    pub failed_elsewhere: Vec<(String, String)>,
    /// Runs left to do because the sweep was stopped.
    pub left: usize,
    /// Of the runs the store already held, those another build simulated: the
    /// number of runs by that build's commit ([`UNRECORDED`] for runs stored before
    /// reports named their commit). Empty with [`SweepOptions::rerun_other_builds`].
    pub other_builds: BTreeMap<String, usize>,
}

impl SweepOutcome {
    /// One line saying which of the kept runs other builds simulated, if any.
    pub fn other_builds_note(&self) -> Option<String> {
        other_builds_note(&self.other_builds)
    }
}

/// The line that says `builds` (runs by commit) were simulated by builds other than
/// this one, and how to simulate them again; `None` when there are none.
pub fn other_builds_note(builds: &BTreeMap<String, usize>) -> Option<String> {
    if builds.is_empty() {
        return None;
    }
    let n: usize = builds.values().sum();
    let each: Vec<String> = builds.iter().map(|(commit, k)| format!("{k} by {commit}")).collect();
    Some(format!(
        "{n} stored runs were simulated by another build of tiersim ({}), not this one ({THIS_BUILD}); their figures stand beside this build's, and --rerun-other-builds simulates them again",
        each.join(", ")
    ))
}

/// What a worker of a sweep tells the thread that writes the store.
enum Event {
    /// It simulated run `i` of the list: the result, and its wall seconds.
    Ran(usize, std::result::Result<serde_json::Value, String>, f64),
    /// Another sweep recorded run `i` since this one started (`Some` if it failed).
    Elsewhere(usize, Option<String>),
    /// The store could not be read or written.
    Store(anyhow::Error),
}

/// The value behind a lock; a worker that panicked while holding it (it cannot: runs
/// catch their panics) would not make the rest of the sweep panic.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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
///
/// Each run is claimed in the store before it starts ([`Store::claim`]): a run another
/// sweep holds goes to the back of the list and is looked at again, until that sweep
/// records it (it counts in [`SweepOutcome::elsewhere`]) or is found gone (its run is
/// then simulated here). So sweeps started at once share the runs out, each is
/// simulated once, and every one of them ends with the whole grid in the store.
pub fn run_sweep(spec: &Spec, store: &mut Store, opts: &SweepOptions) -> Result<SweepOutcome> {
    let points = spec.points();
    check_same_grid(spec, store, &points)?;
    let since = unix_now();
    store.begin_sweep(&spec.name, &spec.to_toml(), &spec.axis_names(), spec.baseline.as_deref())?;
    store.renumber(&spec.name, &points)?;
    let done = store.finished_builds(&spec.name)?;
    let mut other_builds = BTreeMap::new();
    let todo: Vec<&Point> = points
        .iter()
        .filter(|p| match done.get(&p.key()) {
            None => true,
            Some(Some(commit)) if commit == THIS_BUILD => false,
            Some(other) => {
                if !opts.rerun_other_builds {
                    *other_builds.entry(other.clone().unwrap_or_else(|| UNRECORDED.into())).or_insert(0) += 1;
                }
                opts.rerun_other_builds
            }
        })
        .collect();
    let mut out = SweepOutcome { total: points.len(), already: points.len() - todo.len(), other_builds, ..Default::default() };
    if todo.is_empty() {
        return Ok(out);
    }
    opts.progress.set_runs(todo.len() as u32);
    // A flag of the sweep's own when the caller gave none, so that a store that
    // cannot be written stops the runs.
    let stop: &'static AtomicBool = opts.stop.unwrap_or_else(|| Box::leak(Box::new(AtomicBool::new(false))));
    // The runs not handled yet, by position in `todo`.
    let queue = Mutex::new((0..todo.len()).collect::<VecDeque<usize>>());
    // Runs found held by other sweeps one after the other: once as many as the list
    // holds, every run left is another sweep's, and workers wait between looks.
    let taken_in_a_row = AtomicUsize::new(0);
    let store = Mutex::new(store);
    let (tx, rx) = mpsc::channel();
    let mut written: Result<()> = Ok(());
    let mut handled = 0;
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.clamp(1, todo.len()) {
            let tx = tx.clone();
            let (todo, queue, taken_in_a_row, store, progress) = (&todo, &queue, &taken_in_a_row, &store, &opts.progress);
            s.spawn(move || loop {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Some(i) = lock(queue).pop_front() else { return };
                let p = todo[i];
                let claim = lock(store).claim(&spec.name, &p.key(), since);
                let event = match claim {
                    Err(e) => Event::Store(e),
                    Ok(Claim::Taken) => {
                        let left = {
                            let mut q = lock(queue);
                            q.push_back(i);
                            q.len()
                        };
                        if taken_in_a_row.fetch_add(1, Ordering::SeqCst) + 1 >= left {
                            std::thread::sleep(Duration::from_millis(500));
                        }
                        continue;
                    }
                    Ok(Claim::Done(failed)) => {
                        taken_in_a_row.store(0, Ordering::SeqCst);
                        progress.run_done();
                        Event::Elsewhere(i, failed)
                    }
                    Ok(Claim::Mine) => {
                        taken_in_a_row.store(0, Ordering::SeqCst);
                        let started = Instant::now();
                        let result = run_point(p, progress, Some(stop));
                        progress.run_done();
                        Event::Ran(i, result, started.elapsed().as_secs_f64())
                    }
                };
                if tx.send(event).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        // This thread writes the store, and beats for the runs claimed while they run.
        let mut beat = Instant::now();
        loop {
            let event = match rx.recv_timeout(Duration::from_secs_f64(CLAIM_BEAT_S)) {
                Ok(e) => Some(e),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let mut store = lock(&store);
            let mut recorded = Ok(());
            if beat.elapsed().as_secs_f64() >= CLAIM_BEAT_S {
                beat = Instant::now();
                recorded = store.beat();
            }
            match event {
                None => {}
                Some(Event::Store(e)) => recorded = recorded.and(Err(e)),
                Some(Event::Elsewhere(i, failed)) => {
                    handled += 1;
                    out.elsewhere += 1;
                    if let Some(msg) = failed {
                        out.failed_elsewhere.push((todo[i].label(), msg));
                    }
                }
                // Stopped, not failed: runs again next time.
                Some(Event::Ran(_, Err(_), _)) if stop.load(Ordering::SeqCst) => {}
                Some(Event::Ran(i, result, wall)) => {
                    let p = todo[i];
                    handled += 1;
                    let write = match &result {
                        Ok(report) => store.record(&spec.name, p, Ok(report), wall).map(|_| out.finished += 1),
                        Err(msg) => {
                            out.failed.push((p.label(), msg.clone()));
                            store.record(&spec.name, p, Err(msg), wall)
                        }
                    };
                    recorded = recorded.and(write);
                }
            }
            if let Err(e) = recorded {
                stop.store(true, Ordering::SeqCst);
                if written.is_ok() {
                    written = Err(e);
                }
            }
        }
    });
    // The claims of runs stopped here (Ctrl-C, a store that failed) go too.
    let released = lock(&store).release_claims();
    written?;
    released?;
    out.left = out.total - out.already - handled;
    Ok(out)
}
