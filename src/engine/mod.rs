//! The engine: drives every core's references through the machine, interleaving
//! cores by their clocks (the core furthest behind goes next, as ChampSim and
//! Ramulator do), calls the policy's hooks and epochs, and collects the report.
//!
//! `run_with::<R, P>` is generic over the policy and the machine's redirection
//! structure: hooks inline into the per-reference loop. Sources are `Box<dyn Source>`
//! but are called once per batch of references.
//!
//! Executors are scheduled by their clocks: the core or busy background thread
//! furthest behind goes next and runs until it passes the next one, so a thread's
//! work interleaves with the cores' references in simulated time. Epochs follow the
//! slowest core; boundaries it crossed at once (a long stall) are one `on_epoch`
//! call that says how many.
//!
//! A core replays either a synthetic workload or a trace. Before the machine is
//! built, every trace is measured (its native trailer, or one streaming pass) for
//! its footprint, since tier capacities may be shares of it, and for the tenants its
//! records name. A footprint larger than the tiers is refused then, before any
//! workload is built (graphs take minutes). Trace records come from outside, so each batch is checked once,
//! by a maximum over it, against the page tables' reach and the run's tenants; the
//! per-reference loop itself does no checking.
//!
//! A run asked to stop ([`RunOptions::stop`], set on Ctrl-C) ends at its next epoch
//! boundary and reports what it simulated, marked incomplete.
//!
//! This file holds the run and its phases (`run_with`: prepare, simulate, finish).
//! `feeds`: what each core replays (traces measured before the run and their notes,
//! the feeds and their batches' checks, the foresight pass). `scheduler`: the heap of
//! core clocks, sampled mode's windows and `run_slice`, one core's slice of references.

mod epochs;
mod feeds;
mod scheduler;

pub use epochs::EpochsReport;

use crate::config::{Config, FastForward, Mode, WorkloadSlot};
use crate::machine::sampled::{DETAILED, FAST, FIT, PAGE, WARM};
use crate::machine::{Build, Machine, MachineInfo, Redirect, TierId};
use crate::mechanism::{Mechanisms, Runtime, ThreadId};
use crate::policy::registry::{with_policy, PolicyVisitor};
use crate::policy::{Epoch, FastTier, Policy, PolicyReport};
use crate::progress::Progress;
use crate::report::{EpochRecord, Report, SamplingReport};
use anyhow::{bail, Result};
use feeds::{foresight, measure_traces, open_feeds, run_footprint, short_traces, tenant_kinds, CoreFeed};
use scheduler::{next_window, run_slice, Clocks, Window};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// An error in the simulated run itself — the machine ran out of memory, `--verify`
/// caught a stale read, an invariant broke — as opposed to bad input. The CLI exits
/// with 1 for these and 2 for everything else.
#[derive(Debug)]
pub struct RunFailed(pub String);

impl std::fmt::Display for RunFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RunFailed {}

fn failed(msg: String) -> anyhow::Error {
    anyhow::Error::new(RunFailed(msg))
}

/// How to run: what the CLI adds to the configuration.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Shadow-memory verification of every read (and invariant checks per epoch).
    pub verify: bool,
    /// Where to show the run's phases and progress.
    pub progress: Progress,
    /// When set, the run stops at the next epoch boundary and reports what it
    /// simulated so far, marked incomplete (the CLI sets it on Ctrl-C).
    pub stop: Option<&'static AtomicBool>,
}

/// Runs the configured policy on the configured workloads.
pub fn run(cfg: &Config, opts: &RunOptions) -> Result<Report> {
    with_policy(&cfg.policy.name, Runner { cfg, opts })?
}

/// Why epochs mode cannot run a policy (docs/epochs.md): the one rule that
/// `engine::run`, `tiersim policies` and the reproductions' setting lines all apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpochsRefusal {
    /// A redirection structure on the memory path, which every reference must reach
    /// as the full model sends it.
    Redirects,
    /// A first pass over the whole reference stream, which counts every reference.
    Foresight,
}

/// Why epochs mode refuses policy `P` with configuration `cfg`, or none.
pub fn epochs_refusal<R: Redirect, P: Policy<R>>(cfg: &P::Config) -> Option<EpochsRefusal> {
    if !R::PLAIN {
        Some(EpochsRefusal::Redirects)
    } else if P::requirements(cfg).foresight {
        Some(EpochsRefusal::Foresight)
    } else {
        None
    }
}

/// Runs policy `name` with the rest of `cfg` unchanged.
pub fn run_policy(cfg: &Config, name: &str, opts: &RunOptions) -> Result<Report> {
    let mut c = cfg.clone();
    c.policy.name = name.to_string();
    run(&c, opts)
}

struct Runner<'a> {
    cfg: &'a Config,
    opts: &'a RunOptions,
}

impl PolicyVisitor for Runner<'_> {
    type Output = Result<Report>;
    fn visit<R: Redirect, P: Policy<R>>(self, name: &'static str) -> Result<Report> {
        run_with::<R, P>(self.cfg, name, self.opts)
    }
}

/// Refuses a footprint larger than the tiers before the workloads are built, which
/// takes minutes for a mix of graphs ([`Machine::new`] checks the same figures
/// again). A policy that keeps every page in one tier (all-slow, Rainbow) names the
/// capacity it needs when it sees the plan, so it is asked first, as it is before
/// the machine is built.
fn check_room<R: Redirect, P: Policy<R>>(cfg: &Config, name: &str, pcfg: &P::Config, build: &Build<R::Spec>) -> Result<()> {
    let Err(too_small) = MachineInfo::check_room::<R>(&cfg.machine, build) else { return Ok(()) };
    let info = MachineInfo::plan::<R>(&cfg.machine, build).map_err(|e| in_policy(name, e))?;
    P::new(pcfg.clone(), &info)?;
    Err(in_policy(name, too_small))
}

/// A run set up and ready to simulate ([`prepare`]).
struct Prepared<R: Redirect, P: Policy<R>> {
    setup_started: Instant,
    slots: Vec<WorkloadSlot>,
    /// What the traces say of themselves (an older format), and of traces shared by
    /// cores or shorter than asked.
    trace_notes: Vec<String>,
    feeds: Vec<CoreFeed>,
    /// References the workloads will make, where they say (for the progress bar).
    total_refs: u64,
    machine: Machine<R>,
    rt: Runtime,
    policy: P,
    /// Epochs mode's driver (`engine.mode = "epochs"`).
    driver: Option<epochs::Driver>,
    /// Wall seconds of the first pass, for a policy that requires foresight.
    foresight_seconds: Option<f64>,
}

/// What [`simulate`] leaves for the report.
struct Simulated {
    epochs: Vec<EpochRecord>,
    /// When the simulation started, and its wall time.
    started: Instant,
    wall: std::time::Duration,
    /// Stopped by Ctrl-C before the workloads ended.
    stopped: bool,
    /// Whether the run was sampled, and its references in detailed and fast-forward
    /// windows.
    sampled: bool,
    refs_by_window: [u64; 2],
}

/// Runs policy `P` on `cfg` in three phases: [`prepare`] the machine, the policy and
/// the feeds, [`simulate`], [`finish`] the report.
fn run_with<R: Redirect, P: Policy<R>>(cfg: &Config, name: &str, opts: &RunOptions) -> Result<Report> {
    let run = prepare::<R, P>(cfg, name, opts)?;
    let (run, simulated) = simulate(run, cfg, name, opts)?;
    finish(run, simulated, cfg, name, opts)
}

/// The first phase of [`run_with`]: the workloads' slots and traces measured, the
/// policy's requirements checked, the machine built, the policy made (and given the
/// stream first if it requires foresight), the feeds opened.
fn prepare<R: Redirect, P: Policy<R>>(cfg: &Config, name: &str, opts: &RunOptions) -> Result<Prepared<R, P>> {
    let setup_started = Instant::now();
    opts.progress.setup();
    let slots = cfg.slots()?;
    let traces = measure_traces(&slots, cfg.machine.page_table.levels, &opts.progress)?;
    let (footprint, shared_traces) = run_footprint(&slots, &traces);
    let short_traces = short_traces(&slots, &traces);
    let record_tenants = traces
        .iter()
        .flatten()
        .filter(|t| t.facts.record_tenants)
        .flat_map(|t| t.facts.tenants.iter().map(|p| p.tenant as usize + 1))
        .max()
        .unwrap_or(0);
    let kinds = tenant_kinds(&slots, record_tenants);
    let tenants = kinds.len() as u16;
    let pcfg = cfg.policy_config::<R, P>(name)?;
    let req = P::requirements(&pcfg);
    let epochs = cfg.engine.mode == Mode::Epochs;
    if epochs {
        match epochs_refusal::<R, P>(&pcfg) {
            Some(EpochsRefusal::Redirects) => bail!(
                "engine.mode = \"epochs\": policy {name} puts a redirection structure on the memory path, which every reference must reach as the full model sends it; run it detailed or sampled"
            ),
            Some(EpochsRefusal::Foresight) => {
                bail!("engine.mode = \"epochs\": policy {name} reads the whole reference stream before the run and counts every reference; run it detailed or sampled")
            }
            None => {}
        }
    }
    let mut build = Build {
        tenants: kinds,
        footprint,
        total_refs: 0,
        thp: req.page_size.thp(cfg.machine.page_table.thp),
        placement: req.placement,
        fast_holds_footprint: req.fast_tier == FastTier::HoldsFootprint,
        fast_reserve: 0,
        redirect: req.redirect.clone(),
        verify: opts.verify,
        paper_periods: epochs,
    };
    check_room::<R, P>(cfg, name, &pcfg, &build)?;
    let (feeds, total_refs) = open_feeds(cfg, &slots, &traces, tenants)?;
    build.total_refs = total_refs;
    let info = MachineInfo::plan::<R>(&cfg.machine, &build).map_err(|e| in_policy(name, e))?;
    build.fast_reserve = req.fast_reserve.frames(info.tier(TierId::FAST).frames);
    let mut policy = P::new(pcfg, &info)?;
    // (Only a policy that asked for it pays for the pass; the loop is unchanged.)
    let foresight_seconds = if req.foresight {
        let pass = Instant::now();
        foresight::<R, P>(&mut policy, cfg, &slots, &traces, tenants)?;
        Some(pass.elapsed().as_secs_f64())
    } else {
        None
    };
    let mut machine = Machine::<R>::new(&cfg.machine, &build).map_err(|e| in_policy(name, e))?;
    let mut rt = Runtime::new(&req.threads, cfg.machine.cores);
    // A tenant's initial share of the fast tier becomes its fast-tier quota (HMM-V's
    // per-VM DRAM); policies may change it at run time.
    let fast_frames = machine.info().tier(TierId::FAST).frames;
    for s in &slots {
        if let Some(share) = s.fast_share {
            machine.set_fast_quota(s.tenant, Some((share * fast_frames as f64) as u64));
        }
    }
    policy.on_start(&mut Mechanisms::on_core(&mut machine, &mut rt, 0));
    let mut driver = if epochs { Some(epochs::Driver::new(cfg, &slots, &mut machine)?) } else { None };
    if let Some(d) = &mut driver {
        d.start(&mut machine)?;
    }
    let mut trace_notes: Vec<String> = traces.iter().flatten().filter_map(|t| t.facts.note.clone()).collect();
    trace_notes.extend(shared_traces);
    trace_notes.extend(short_traces);
    Ok(Prepared { setup_started, slots, trace_notes, feeds, total_refs, machine, rt, policy, driver, foresight_seconds })
}

/// The second phase of [`run_with`]: every executor in turn, the one furthest
/// behind first, until every workload ends, the run's simulated seconds are over or
/// Ctrl-C stops it; the policy's epochs at their boundaries. The run's parts are
/// taken as locals for the loop (so that the compiler keeps them as it did when this
/// was one function) and handed back with what the simulation left.
fn simulate<R: Redirect, P: Policy<R>>(run: Prepared<R, P>, cfg: &Config, name: &str, opts: &RunOptions) -> Result<(Prepared<R, P>, Simulated)> {
    let Prepared { setup_started, slots, trace_notes, mut feeds, total_refs, mut machine, mut rt, mut policy, mut driver, foresight_seconds } = run;
    let levels = cfg.machine.page_table.levels;
    let check = cfg.engine.check_invariants || opts.verify;
    // A run given in simulated seconds ends there.
    let end_cycle = if cfg.engine.seconds > 0.0 { machine.info().cycles(cfg.engine.seconds) } else { u64::MAX };
    let epoch = cfg.engine.epoch_cycles;
    let mut next_epoch = epoch;
    let mut epochs = Vec::new();
    let mut last = EpochRecord::default();
    let mut progress = opts.progress.simulation(total_refs);
    let started = Instant::now();
    let mut done_refs = 0u64;
    let mut stopped = false;

    // Sampled mode, when asked for and possible (module `machine::sampled`).
    let sampled = cfg.engine.mode == Mode::Sampled && R::PLAIN;
    let windows = &cfg.engine.sampled;
    let first = if let Some(d) = &driver {
        let (phase, left) = d.first_phase();
        (Window::Epochs(phase), left)
    } else if sampled {
        (Window::Warm, windows.warmup_refs)
    } else {
        (Window::Detailed, u64::MAX)
    };
    let mut window: Vec<(Window, u64)> = vec![first; feeds.len()];
    if let Some(d) = &mut driver {
        for (core, f) in feeds.iter_mut().enumerate() {
            d.position(f, core);
        }
    }
    let mut refs_by_window = [0u64; 2];
    // A machine with a VM tenant fast-forwards through the TLBs (`finish` notes it).
    let page = sampled && machine.start_sampling(windows.fast_forward == FastForward::Page);
    let mut active = Clocks::default();
    for (core, f) in feeds.iter_mut().enumerate() {
        if f.refill(levels)? {
            active.push(machine.cores()[core].clock, core);
        }
    }
    while let Some((core_clock, core)) = active.first(&machine) {
        // The executor furthest behind goes next: a core, or a background thread with
        // work queued (ties go to cores, then to the lower index).
        let thread = rt.threads.next_busy().filter(|&(clock, _)| clock < core_clock);
        if let Some((_, t)) = thread {
            // It runs until it passes the slowest core (or another thread).
            let others = rt.threads.next_busy_except(t).map_or(u64::MAX, |(c, _)| c);
            let limit = core_clock.min(others);
            loop {
                if let Some(done) = rt.threads.step(&mut machine, &mut rt.limits, t, &mut policy) {
                    policy.on_job_done(&done, &mut Mechanisms::on_thread(&mut machine, &mut rt, ThreadId(t as u16)));
                }
                if let Some(e) = machine.take_error() {
                    return Err(failed(e));
                }
                match rt.threads.next_busy() {
                    Some((clock, u)) if u == t && clock < limit => {}
                    _ => break,
                }
            }
            continue;
        }
        // The core runs until it passes the next executor (or the epoch end).
        let next_other = active.second_bound();
        let next_thread = rt.threads.next_busy().map_or(u64::MAX, |(clock, _)| clock);
        let limit = next_other.min(next_thread).min(next_epoch).min(end_cycle);
        let feed = &mut feeds[core];
        let (kind, left) = window[core];
        let (n, exhausted) = match kind {
            Window::Detailed => run_slice::<DETAILED, R, P>(feed, &mut machine, &mut rt, &mut policy, core, limit, left, levels)?,
            Window::Warm => run_slice::<WARM, R, P>(feed, &mut machine, &mut rt, &mut policy, core, limit, left, levels)?,
            Window::Fit => run_slice::<FIT, R, P>(feed, &mut machine, &mut rt, &mut policy, core, limit, left, levels)?,
            Window::Fast if page => run_slice::<PAGE, R, P>(feed, &mut machine, &mut rt, &mut policy, core, limit, left, levels)?,
            Window::Fast => run_slice::<FAST, R, P>(feed, &mut machine, &mut rt, &mut policy, core, limit, left, levels)?,
            Window::Epochs(phase) => {
                let d = driver.as_mut().expect("epochs mode has a driver");
                let from = machine.cores()[core].clock;
                let ran = match phase {
                    epochs::Phase::Chunks => {
                        // Other executors' clocks end a chunk no sooner than its floor.
                        let floor = from.saturating_add(d.min_chunk_cycles());
                        let limit = next_other.min(next_thread).max(floor).min(next_epoch).min(end_cycle);
                        d.chunk(&mut machine, &mut rt, &mut policy, core, limit)?
                    }
                    epochs::Phase::Warm => d.warm(feed, &mut machine, &mut rt, &mut policy, core, limit, left, levels)?,
                    epochs::Phase::Measure => d.measure(feed, &mut machine, &mut rt, &mut policy, core, limit, left, levels)?,
                };
                if phase != epochs::Phase::Chunks {
                    d.ran_detailed(core, ran.0);
                    machine.epochs_detailed(core, from);
                }
                let left = if phase == epochs::Phase::Chunks { left } else { left - ran.0 };
                let (next, left) = d.next_phase(&mut machine, core, phase, left);
                if next == epochs::Phase::Warm && phase == epochs::Phase::Chunks {
                    d.position(feed, core);
                }
                window[core] = (Window::Epochs(next), left);
                ran
            }
        };
        done_refs += n;
        if sampled {
            refs_by_window[(kind == Window::Fast) as usize] += n;
            window[core] = next_window(&mut machine, core, kind, left - n, windows);
        }
        if let Some(e) = machine.take_error() {
            return Err(failed(e));
        }
        if exhausted || machine.cores()[core].clock >= end_cycle {
            active.remove_first();
        } else {
            active.rekey_first(machine.cores()[core].clock);
        }
        // Epoch boundaries the slowest core has crossed: one call for all of them.
        let behind = active.first(&machine);
        if let Some((clock, c)) = behind.filter(|&(clock, _)| clock >= next_epoch) {
            let crossed = (clock - next_epoch) / epoch + 1;
            let boundary = next_epoch + (crossed - 1) * epoch;
            let e = Epoch { now: boundary, boundaries: crossed, index: boundary / epoch };
            policy.on_epoch(&e, &mut Mechanisms::on_core(&mut machine, &mut rt, c));
            if let Some(e) = machine.take_error() {
                return Err(failed(e));
            }
            if check {
                if let Err(e) = machine.check_invariants() {
                    return Err(failed(format!("invariant broken at cycle {boundary} (policy {name}): {e}")));
                }
            }
            epochs.push(EpochRecord::take(&machine, boundary, &mut last));
            next_epoch = boundary + epoch;
            stopped = opts.stop.is_some_and(|s| s.load(Ordering::Relaxed));
            if stopped {
                break;
            }
        }
        progress.update(done_refs);
        if end_cycle != u64::MAX {
            // (The slowest active core's clock before this slice.)
            progress.update_time(core_clock as f64 / end_cycle as f64);
        }
        if stopped {
            break;
        }
    }
    let wall = started.elapsed();
    for (core, &(kind, _)) in window.iter().enumerate() {
        if kind == Window::Fast {
            machine.end_fast_forward(core);
        }
    }
    if check {
        if let Err(e) = machine.check_invariants() {
            return Err(failed(format!("invariant broken at the end of the run (policy {name}): {e}")));
        }
    }
    let end = machine.now();
    if end > last.end_cycle {
        epochs.push(EpochRecord::take(&machine, end, &mut last));
    }
    let run = Prepared { setup_started, slots, trace_notes, feeds, total_refs, machine, rt, policy, driver, foresight_seconds };
    Ok((run, Simulated { epochs, wall, started, stopped, sampled, refs_by_window }))
}

/// The last phase of [`run_with`]: the report, with the policy's own figures, the
/// notes, and what sampled or epochs mode did.
fn finish<R: Redirect, P: Policy<R>>(run: Prepared<R, P>, simulated: Simulated, cfg: &Config, name: &str, opts: &RunOptions) -> Result<Report> {
    let Prepared { setup_started, slots, trace_notes, feeds, machine, rt, policy, driver, foresight_seconds, .. } = run;
    let Simulated { epochs, wall, started, stopped, sampled, refs_by_window } = simulated;
    let windows = &cfg.engine.sampled;
    let mut policy_report = PolicyReport::new();
    policy.report(&mut policy_report);
    let mut report = Report::build(cfg, name, &slots, &machine, rt.threads.report(), epochs, policy_report, wall, opts.verify);
    report.malformed_lines_skipped = feeds.iter().map(|f| f.skipped).sum();
    report.complete = !stopped;
    report.sim.setup_seconds = (started - setup_started).as_secs_f64();
    report.sim.foresight_seconds = foresight_seconds;
    report.notes.extend(trace_notes);
    report.never_acted = never_acted(name, cfg, &report);
    report.notes.extend(report.never_acted.clone());
    if cfg.engine.mode == Mode::Sampled {
        if !sampled {
            report.notes.push(format!(
                "engine.mode = \"sampled\": policy {name} puts a redirection structure on the memory path, which every reference must reach as the full model sends it, so the run was detailed throughout"
            ));
        }
        let mut ff = windows.fast_forward;
        if sampled && ff == FastForward::Page && machine.space().tenants().iter().any(|t| t.guest.is_some()) {
            ff = FastForward::Tlb;
            report.notes.push(
                "engine.sampled.fast_forward = \"page\": a VM's nested walks and EPT bits are not modelled at page granularity, so fast-forward ran through the TLBs (\"tlb\")".to_string(),
            );
        }
        report.sampling = Some(SamplingReport::new(sampled, ff, refs_by_window, machine.cost_models(), windows));
    }
    if let Some(d) = &driver {
        report.epochs_mode = Some(d.report(&machine));
        // A frame's writes and a bank's accesses are not simulated outside
        // calibrations: only the tier's.
        for t in report.tiers.iter_mut() {
            t.bank_imbalance = None;
            if t.lifetime_years.take().is_some() {
                report.notes.push(format!(
                    "{}: no lifetime from the most-written frame in epochs mode, which counts a tier's writes but not each frame's (ideal_lifetime_years and start_gap_lifetime_years stand)",
                    t.name
                ));
            }
        }
    }
    Ok(report)
}

/// A note when policy `name`, one that moves pages, did nothing in the run: its first
/// period never came due (its report's `pacing.periods` is 0, or `intervals` for the
/// policies that act at each epoch's end), or it moved no page. A run too short for a
/// policy's period otherwise looks like a result of the policy. The note is also the
/// report's `never_acted`, which sweeps and `reproduce` read.
fn never_acted(name: &str, cfg: &Config, report: &Report) -> Option<String> {
    if crate::policy::registry::PLACES_ONLY.contains(&name) {
        return None;
    }
    let seconds = report.summary.seconds;
    let policy = &report.policy_report;
    let period = if let Some(p) = policy.get("pacing").filter(|p| p["periods"].as_u64() == Some(0)) {
        Some(match (p["period_s"].as_f64(), p["period_references"].as_u64()) {
            (Some(s), _) => format!(" ({s} s)"),
            (None, Some(n)) => format!(" ({n} references)"),
            (None, None) => String::new(),
        })
    } else if policy.get("intervals").and_then(Value::as_u64) == Some(0) {
        let cycles = cfg.engine.epoch_cycles;
        Some(format!(" (an epoch, engine.epoch_cycles = {cycles} cycles, {:.3} s)", cycles as f64 / (cfg.machine.freq_ghz * 1e9)))
    } else {
        None
    };
    if let Some(period) = period {
        return Some(format!(
            "policy {name} never acted: its first period{period} did not come due in the run's {seconds:.3} simulated seconds, so the run shows its initial placement only (run longer: --seconds, or --mode epochs)"
        ));
    }
    (report.summary.page_moves == 0).then(|| format!("policy {name} moved no page in the run's {seconds:.3} simulated seconds: the run shows its initial placement only"))
}


/// A build error of a policy's machine, naming the policy.
fn in_policy(name: &str, e: anyhow::Error) -> anyhow::Error {
    let msg = e.to_string();
    if msg.starts_with("machine.") {
        e
    } else {
        anyhow::anyhow!("policy {name}: {msg}")
    }
}

#[cfg(test)]
mod tests;
