//! `tiersim sweep`: a grid of runs into a results store (docs/sweeps.md).

use super::{interrupt, ConfigArgs, Interrupted};
use crate::engine::RunFailed;
use crate::progress::{duration, Mode, Progress};
use crate::study::spec::option_value_from_text;
use crate::study::{run_sweep, Spec, Store, SweepOptions, THIS_BUILD, UNRECORDED};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug, Default, Clone)]
pub struct SweepArgs {
    /// The sweep's specification (TOML: [run] options shared by every run, [axes]
    /// crossed; docs/sweeps.md). Without it the grid comes from --axis and the run
    /// options given here.
    pub spec: Option<PathBuf>,
    /// An axis as KEY=V1,V2,…: a run option (policy, workload, footprint, refs, seed,
    /// preset, mode, …) or a dotted configuration path; repeat for more axes (the
    /// first is outermost).
    #[arg(long = "axis", value_name = "KEY=V1,V2,…")]
    pub axes: Vec<String>,
    /// The results store (SQLite; default: the spec's path with `.db`).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// The sweep's name in the store (default: the spec's `name`, or its file stem).
    #[arg(long)]
    pub name: Option<String>,
    /// The policy reports normalise to.
    #[arg(long)]
    pub baseline: Option<String>,
    /// Runs at a time (default: the number of cores).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Print the grid and which runs the store holds, and run nothing.
    #[arg(long)]
    pub list: bool,
    /// Run on a Dask cluster at this scheduler address (e.g. tcp://10.0.0.5:8786)
    /// through the Python package instead of on local cores.
    #[arg(long, value_name = "ADDRESS")]
    pub scheduler: Option<String>,
    /// Print a progress line every few seconds even when standard error is not a
    /// terminal (a terminal gets a bar).
    #[arg(long)]
    pub progress: bool,
    /// Simulate again the stored runs that another build of tiersim simulated (their
    /// report's `sim.commit` differs from this binary's). By default they are kept,
    /// and the sweep says how many and which builds.
    #[arg(long)]
    pub rerun_other_builds: bool,
    /// Shadow-memory verification in every run.
    #[arg(long)]
    pub verify: bool,
    #[command(flatten)]
    pub cfg: ConfigArgs,
}

/// The spec of a command line: the file's, with the command line's options and axes
/// added (an option given in both takes the command line's value).
pub fn spec_of(args: &SweepArgs) -> Result<Spec> {
    let mut spec = match &args.spec {
        Some(path) => Spec::read(path)?,
        None => Spec { name: "sweep".into(), ..Default::default() },
    };
    let c = &args.cfg;
    if !c.trace_tenants.is_empty() || c.skip_malformed {
        bail!("--tenant, --skip-malformed: not available in sweeps; give each run's traces with `trace` and a --config file");
    }
    let mut given: Vec<(&str, String)> = Vec::new();
    let mut add = |k: &'static str, v: &Option<String>| {
        if let Some(v) = v {
            given.push((k, v.clone()));
        }
    };
    add("preset", &c.preset);
    add("policy", &c.policy);
    add("workload", &c.workload);
    add("footprint", &c.footprint);
    add("refs", &c.refs);
    add("seed", &c.seed);
    add("mode", &c.mode);
    add("format", &c.format);
    add("config", &c.config.as_ref().map(|p| p.display().to_string()));
    for (k, list) in [("mix", &c.mix), ("tenants", &c.tenants), ("trace", &c.traces)] {
        if !list.is_empty() {
            given.push((k, list.join(",")));
        }
    }
    if args.verify {
        given.push(("verify", "true".into()));
    }
    for (k, v) in given {
        spec.base.insert(k.to_string(), option_value_from_text(k, &v, &format!("--{k}"))?.1);
    }
    for s in &c.sets {
        let (k, v) = s.split_once('=').ok_or_else(|| anyhow!("--set {s}: expected key=value"))?;
        let k = k.trim();
        if !k.contains('.') {
            bail!("--set {s}: expected a dotted configuration path");
        }
        spec.base.insert(k.to_string(), option_value_from_text(k, v.trim(), &format!("--set {s}"))?.1);
    }
    for a in &args.axes {
        spec.add_axis_text(a)?;
    }
    spec.check()?;
    if let Some(n) = &args.name {
        spec.name = n.clone();
    }
    if let Some(b) = &args.baseline {
        spec.baseline = Some(b.clone());
    }
    if let Some(db) = &args.db {
        spec.db = Some(db.clone());
    }
    if spec.db.is_none() {
        bail!("--db: needed when the sweep has no spec file");
    }
    spec.check_baseline()?;
    Ok(spec)
}

/// Runs `tiersim sweep`.
pub fn sweep(args: &SweepArgs) -> Result<()> {
    let started = Instant::now();
    let spec = spec_of(args)?;
    let db = spec.db.clone().expect("spec_of sets it");
    if args.scheduler.is_some() {
        if args.rerun_other_builds {
            bail!("--rerun-other-builds: not with --scheduler (the Python package's sweep keeps every finished run)");
        }
        return super::dask::hand_over(args, &spec, &db);
    }
    if args.list {
        return list(&spec, &db);
    }
    if args.jobs == Some(0) {
        bail!("-j: must be at least 1");
    }
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    // The whole grid is checked before the store is touched.
    spec.check_runs(&spec.points())?;
    let mut store = Store::open(&db, true)?;
    interrupt::install(true);
    let progress = Progress::new(Mode::for_stderr(args.progress));
    let options = SweepOptions { jobs, progress: progress.clone(), stop: Some(&interrupt::STOP), rerun_other_builds: args.rerun_other_builds };
    let outcome = run_sweep(&spec, &mut store, &options);
    progress.finish();
    let o = outcome?;
    let ran = o.finished + o.failed.len();
    let elsewhere = match o.elsewhere {
        0 => String::new(),
        n => format!(", {n} by another sweep at the same time ({} failed)", o.failed_elsewhere.len()),
    };
    println!(
        "sweep {}: {} runs in {}: {} already there, {} run now ({} failed){elsewhere} in {}",
        spec.name,
        o.total,
        db.display(),
        o.already,
        ran,
        o.failed.len(),
        duration(started.elapsed().as_secs_f64())
    );
    if let Some(note) = o.other_builds_note() {
        println!("  {note}");
    }
    for (label, msg) in &o.failed {
        println!("  failed: {label}: {msg}");
    }
    for (label, msg) in &o.failed_elsewhere {
        println!("  failed in another sweep: {label}: {msg}");
    }
    let idle = store.never_acted(&spec.name)?;
    if !idle.is_empty() {
        let points = spec.points();
        println!("  runs in which the policy never acted: {} (their figures are the initial placement's)", idle.len());
        for (key, note) in &idle {
            let label = points.iter().find(|p| p.key() == *key).map_or_else(|| key.clone(), |p| p.label());
            println!("  never acted: {label}: {note}");
        }
    }
    if o.left > 0 {
        return Err(anyhow::Error::new(Interrupted(format!(
            "interrupted: {} runs left; the same command runs only those",
            o.left
        ))));
    }
    let failed = o.failed.len() + o.failed_elsewhere.len();
    if failed > 0 {
        return Err(anyhow::Error::new(RunFailed(format!(
            "{} of {} runs failed; their messages are in {} (status 'failed'), and the same command runs them again",
            failed,
            o.total,
            db.display()
        ))));
    }
    Ok(())
}

/// `--list`: the grid, one line per run with its state in the store.
fn list(spec: &Spec, db: &std::path::Path) -> Result<()> {
    let points = spec.points();
    spec.check_runs(&points)?;
    let store = if db.exists() { Some(Store::open(db, false).with_context(|| "--list")?) } else { None };
    let idle: Vec<String> = match &store {
        Some(s) => s.never_acted(&spec.name)?.into_iter().map(|(key, _)| key).collect(),
        None => Vec::new(),
    };
    let builds = match &store {
        Some(s) => s.finished_builds(&spec.name)?,
        None => Default::default(),
    };
    let mut counts = [0usize; 3];
    for p in &points {
        let status = match &store {
            Some(s) => s.status(&spec.name, &p.key())?,
            None => None,
        };
        let (i, word) = match status.as_deref() {
            Some("ok") => (0, "done"),
            Some(_) => (1, "failed"),
            None => (2, "to run"),
        };
        counts[i] += 1;
        let never = if idle.contains(&p.key()) { "  (the policy never acted)" } else { "" };
        let build = match builds.get(&p.key()) {
            Some(Some(c)) if c != THIS_BUILD => format!("  (by {c})"),
            Some(None) => format!("  (by {UNRECORDED})"),
            _ => String::new(),
        };
        println!("{:>5}  {word:<7} {}{never}{build}", p.seq, p.label());
    }
    println!("sweep {}: {} runs: {} done, {} failed, {} to run ({})", spec.name, points.len(), counts[0], counts[1], counts[2], db.display());
    Ok(())
}
