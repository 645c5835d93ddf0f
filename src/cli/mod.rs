//! The command line: `demo`, `run`, `compare`, `policies`, `config`, the trace
//! commands `record` (in [`record`]), `convert` and `inspect` (in [`traces`]), the
//! studies `sweep` (in [`sweep`]) and `reproduce` (in [`reproduce`]), `report`
//! (in [`report`]), and `tier-stream` (in [`tier_stream`]), one tier alone under a
//! stream of requests.
//!
//! Every command checks its output paths before it starts ([`output`]), and runs
//! stop cleanly on Ctrl-C ([`interrupt`]).

pub mod interrupt;
pub(crate) mod output;
mod dask;
mod record;
mod suite;
mod report;
pub mod reproduce;
pub mod sweep;
mod tier_stream;
mod traces;

use crate::config::{Config, Sources, PRESETS};
pub use crate::engine::RunFailed;
use crate::engine::{self, RunOptions};
use crate::policy::registry::{with_policy, PolicyVisitor, POLICIES};
use crate::machine::Redirect;
use crate::policy::Policy;
use crate::progress::{Mode, Progress};
use crate::report::{table, Report, Slowdown};
use crate::workload::WORKLOADS;
use anyhow::{anyhow, bail, Result};
use clap::{Args, Parser, Subcommand};
use output::OutputFile;
use std::path::PathBuf;
use std::time::Instant;

/// A run stopped by Ctrl-C: its partial report was written; the CLI exits with 130.
#[derive(Debug)]
pub struct Interrupted(pub String);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Interrupted {}

#[derive(Parser, Debug)]
#[command(name = "tiersim", version, about = "Fast trace-driven simulator for tiered (hybrid) main memory")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Baselines, two paper systems and a Linux policy on a built-in workload, with a
    /// report page (no arguments; about 12 s).
    Demo(DemoArgs),
    /// Run one policy on one configuration.
    Run(RunArgs),
    /// Run several policies on the same configuration; one table normalised to a baseline.
    Compare {
        /// Policies to compare, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        policies: Vec<String>,
        /// Policy the others are normalised to (default: the first of --policies).
        #[arg(long)]
        baseline: Option<String>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// List every policy with its parameters, defaults and documentation.
    Policies,
    /// Print the full effective configuration as TOML.
    Config {
        #[command(flatten)]
        cfg: ConfigArgs,
    },
    /// Run a program under QEMU with tiersim's plugin (or valgrind lackey) and write
    /// its memory trace in the native format, one core per thread.
    Record(record::RecordArgs),
    /// Convert a trace from any supported format to the native format.
    Convert(traces::ConvertArgs),
    /// Print a trace's statistics: footprint, references per page, hot pages per interval.
    Inspect(traces::InspectArgs),
    /// Count a trace's references per page and window once, for every epochs-mode run
    /// of it (written beside the trace as TRACE.profile).
    Profile(traces::ProfileArgs),
    /// Run a grid of runs (policies × workloads × seeds × any configuration key) into
    /// a SQLite results store; a sweep started again runs only what is missing.
    Sweep(sweep::SweepArgs),
    /// Run a paper's documented matrix and print our figures beside the paper's.
    Reproduce(reproduce::ReproduceArgs),
    /// Draw a run's JSON report (or compare's), or a sweep store, as one self-contained
    /// HTML page with plots.
    Report(report::ReportArgs),
    /// Drive one tier alone with a synthetic stream of requests at a fixed rate and print
    /// its read latency and bandwidth; optionally write the stream as a Ramulator 2
    /// trace (docs/machine.md, "Against Ramulator 2").
    TierStream(tier_stream::TierStreamArgs),
}

/// Where the configuration comes from.
#[derive(Args, Debug, Default, Clone)]
pub struct ConfigArgs {
    /// TOML configuration file.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Built-in preset (rainbow, spar, optane, thermostat, thermostat-emulated, cxl); a
    /// paper's preset also selects its paper's policy (`tiersim policies` lists them).
    #[arg(long)]
    pub preset: Option<String>,
    /// Policy to run (shorthand for --set policy.name=NAME).
    #[arg(long)]
    pub policy: Option<String>,
    /// Synthetic workload (shorthand for --set workload.name=NAME).
    #[arg(long)]
    pub workload: Option<String>,
    /// One workload per core, each in its own address space: e.g. gups,zipf,hotspot.
    #[arg(long, value_delimiter = ',')]
    pub mix: Vec<String>,
    /// One tenant per core as kind:workload[:fast-share], e.g.
    /// vm:kv:25%,vm:graph-bfs:25%,vm:pagerank:25%,vm:stream:25% (HMM-V's four VMs).
    #[arg(long, value_delimiter = ',')]
    pub tenants: Vec<String>,
    /// Workload footprint, e.g. 2GiB (shorthand for --set workload.footprint=SIZE), per
    /// core with --mix and --tenants; the graph workloads take the largest graph that
    /// fits it. Sizes are binary everywhere: 1KB = 1KiB = 1024 bytes, 1GB = 1GiB = 2^30
    /// bytes.
    #[arg(long, allow_hyphen_values = true)]
    pub footprint: Option<String>,
    /// References to simulate (shorthand for --set workload.refs=N), per core with
    /// --mix and --tenants; with --trace, replay only the first N references of each
    /// trace.
    #[arg(long, allow_hyphen_values = true)]
    pub refs: Option<String>,
    /// Random seed (shorthand for --set workload.seed=N).
    #[arg(long, allow_hyphen_values = true)]
    pub seed: Option<String>,
    /// Override any configuration key by its dotted path, e.g. machine.tiers.fast.capacity=2GiB.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// A trace to replay instead of a synthetic workload, any supported format; repeat
    /// for one trace per core (each in its own address space unless --tenant says otherwise).
    #[arg(long = "trace", value_name = "FILE")]
    pub traces: Vec<String>,
    /// Tenant (address space) of each --trace, in order: traces with the same tenant
    /// share an address space.
    #[arg(long = "tenant", value_name = "N", allow_negative_numbers = true)]
    pub trace_tenants: Vec<u16>,
    /// Format of the --trace files (default: detected from their content).
    #[arg(long)]
    pub format: Option<String>,
    /// Skip malformed trace lines (and count them) instead of stopping at the first.
    #[arg(long)]
    pub skip_malformed: bool,
    /// `detailed` (the full model for every reference), `sampled` (detailed windows
    /// and fast-forward; docs/sampled.md) or `epochs` (page-granular rates, for the
    /// papers' periods of seconds to minutes; docs/epochs.md); shorthand for --set
    /// engine.mode=MODE.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,
    /// Simulated seconds to run (shorthand for --set engine.seconds=S); without
    /// --refs the workloads' references are then not limited.
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    pub seconds: Option<String>,
}

/// The references of a workload run by `--seconds` alone: more than any run makes.
pub const UNLIMITED_REFS: u64 = 1 << 60;

/// Parses the value of a whole-number option; the error names the option.
fn whole_number(option: &str, v: &str) -> Result<u64> {
    let t = v.replace('_', "");
    if t.starts_with('-') {
        bail!("{option}: must not be negative, got {v}");
    }
    t.parse().map_err(|_| anyhow!("{option}: `{v}` is not a whole number"))
}

impl ConfigArgs {
    pub fn load(&self) -> Result<Config> {
        if !self.traces.is_empty() {
            let why = "the traces are the workload, and their footprint is measured from them";
            for (option, given) in [("--footprint", self.footprint.is_some()), ("--workload", self.workload.is_some())] {
                if given {
                    bail!("{option}: cannot be combined with --trace: {why}");
                }
            }
            if let Some(s) = self.sets.iter().find(|s| s.trim_start().starts_with("workload.")) {
                bail!("--set {s}: cannot be combined with --trace: {why} (--refs N replays the first N references of each trace)");
            }
        }
        let mut sets = Vec::new();
        let quoted = |v: &str| format!("\"{}\"", v.replace('"', ""));
        if let Some(p) = &self.policy {
            sets.push(format!("policy.name={}", quoted(p)));
        }
        if let Some(w) = &self.workload {
            sets.push(format!("workload.name={}", quoted(w)));
        }
        if let Some(f) = &self.footprint {
            if f.trim_start().starts_with('-') {
                bail!("--footprint: must not be negative, got {f}");
            }
            sets.push(format!("workload.footprint={}", quoted(f)));
        }
        let refs = self.refs.as_deref().map(|v| whole_number("--refs", v)).transpose()?;
        if let (Some(n), false) = (refs, self.traces.is_empty()) {
            if n == 0 {
                bail!("--refs: must be at least 1 with --trace");
            }
        } else if let Some(n) = refs {
            sets.push(format!("workload.refs={n}"));
        }
        if let Some(v) = &self.seed {
            sets.push(format!("workload.seed={}", whole_number("--seed", v)?));
        }
        if let Some(m) = &self.mode {
            if !matches!(m.as_str(), "detailed" | "sampled" | "epochs") {
                bail!("--mode: expected detailed, sampled or epochs, got {m}");
            }
            sets.push(format!("engine.mode={}", quoted(m)));
        }
        if let Some(v) = &self.seconds {
            let s: f64 = v.trim().parse().map_err(|_| anyhow!("--seconds: `{v}` is not a number of seconds"))?;
            if !(s.is_finite() && s > 0.0) {
                bail!("--seconds: must be a positive number of seconds, got {v}");
            }
            sets.push(format!("engine.seconds={s:?}"));
            if refs.is_none() && self.traces.is_empty() && !self.sets.iter().any(|s| s.trim_start().starts_with("workload.refs")) {
                sets.push(format!("workload.refs={}", UNLIMITED_REFS));
            }
        }
        sets.extend(self.sets.iter().cloned());
        if let Some(f) = &self.format {
            crate::trace::Format::parse(f)?;
        }
        Config::load(&Sources {
            preset: self.preset.clone(),
            file: self.config.clone(),
            mix: self.mix.clone(),
            tenants: self.tenants.clone(),
            sets,
            traces: self.traces.clone(),
            trace_tenants: self.trace_tenants.clone(),
            trace_format: self.format.clone(),
            skip_malformed: self.skip_malformed,
            trace_refs: refs.filter(|_| !self.traces.is_empty()),
        })
    }

    /// The files the configuration reads: the config file and every trace.
    fn inputs(&self, cfg: &Config) -> Result<Vec<String>> {
        let mut files: Vec<String> = self.config.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        files.extend(cfg.slots()?.into_iter().filter_map(|s| s.trace.map(|t| t.path)));
        Ok(files)
    }
}

#[derive(Args, Debug, Default, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub cfg: ConfigArgs,
    /// Write the whole report as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the summary as CSV (one row per run).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Shadow-memory mode: every read must be served by a frame holding the newest
    /// version of its page; machine invariants are checked at every epoch.
    #[arg(long)]
    pub verify: bool,
    /// Also run this policy (e.g. all-fast) on the same input and report the slowdown
    /// against it (`run` only).
    #[arg(long, value_name = "POLICY")]
    pub slowdown_vs: Option<String>,
    /// With --slowdown-vs: also report the slowdown over the references after this
    /// fraction of them (in (0, 1)), the steady state of a policy that settles slowly.
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true)]
    pub warmup: Option<f64>,
    /// Print a progress line on standard error every few seconds even when it is not
    /// a terminal (on a terminal a progress bar is shown anyway).
    #[arg(long)]
    pub progress: bool,
}

/// The `--json` and `--csv` files of a run, checked and opened before it starts.
struct RunOutputs {
    json: Option<OutputFile>,
    csv: Option<OutputFile>,
}

impl RunOutputs {
    fn open(args: &RunArgs, cfg: &Config) -> Result<RunOutputs> {
        let inputs = args.cfg.inputs(cfg)?;
        let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let json = OutputFile::create_opt("--json", &args.json, &inputs, &[])?;
        let csv = OutputFile::create_opt("--csv", &args.csv, &inputs, &json.iter().collect::<Vec<_>>())?;
        Ok(RunOutputs { json, csv })
    }

    /// Writes the reports; a run stopped by Ctrl-C then ends the command with
    /// [`Interrupted`] (the outputs hold its partial report).
    fn write(self, reports: &[Report]) -> Result<()> {
        if let Some(out) = self.json {
            let text = if reports.len() == 1 { serde_json::to_string_pretty(&reports[0])? } else { serde_json::to_string_pretty(reports)? };
            out.write_all_and_commit((text + "\n").as_bytes())?;
        }
        if let Some(out) = self.csv {
            out.write_all_and_commit(table::csv(reports).as_bytes())?;
        }
        interrupted(reports)
    }
}

/// [`Interrupted`] if a run was stopped by Ctrl-C.
fn interrupted(reports: &[Report]) -> Result<()> {
    if reports.iter().all(|r| r.complete) {
        return Ok(());
    }
    let refs: Vec<String> = reports.iter().map(|r| r.summary.references.to_string()).collect();
    Err(anyhow::Error::new(Interrupted(format!(
        "interrupted: the reports cover the first {} references simulated and say \"complete\": false",
        refs.join(", ")
    ))))
}

/// Runs `f` with the progress display of a command, then takes it off the screen.
fn with_progress<T>(lines_elsewhere: bool, f: impl FnOnce(&Progress) -> Result<T>) -> Result<T> {
    let progress = Progress::new(Mode::for_stderr(lines_elsewhere));
    let result = f(&progress);
    progress.finish();
    result
}

/// Runs `policies` on `cfg`, two at a time (runs are independent, so the results do
/// not depend on the thread count).
pub fn run_many(cfg: &Config, policies: &[String], opts: &RunOptions) -> Result<Vec<Report>> {
    for p in policies {
        with_policy(p, Noop)?;
    }
    opts.progress.set_runs(policies.len() as u32);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 2);
    let mut results: Vec<Option<Result<Report>>> = (0..policies.len()).map(|_| None).collect();
    for chunk in (0..policies.len()).collect::<Vec<_>>().chunks(threads) {
        std::thread::scope(|s| {
            let run = |i: usize| {
                let r = engine::run_policy(cfg, &policies[i], opts);
                opts.progress.run_done();
                r
            };
            let handles: Vec<_> = chunk.iter().map(|&i| (i, s.spawn(move || run(i)))).collect();
            for (i, h) in handles {
                results[i] = Some(h.join().unwrap_or_else(|_| Err(anyhow!("the run of {} panicked", policies[i]))));
            }
        });
    }
    results.into_iter().map(|r| r.expect("every run finished")).collect()
}

/// Fills in what only the command knows: its preset and its whole wall time.
fn finish_reports(reports: &mut [Report], preset: &Option<String>, started: Instant) {
    for r in reports {
        r.preset = preset.clone();
        r.sim.command_seconds = started.elapsed().as_secs_f64();
    }
}

struct Noop;

impl PolicyVisitor for Noop {
    type Output = ();
    fn visit<R: Redirect, P: Policy<R>>(self, _: &'static str) {}
}

/// Executes a parsed command line.
pub fn main(cli: Cli) -> Result<()> {
    let started = Instant::now();
    match cli.command {
        Command::Demo(args) => {
            interrupt::install(true);
            demo(&args, started)
        }
        Command::Run(args) => {
            if let Some(f) = args.warmup {
                if args.slowdown_vs.is_none() {
                    bail!("--warmup: only with --slowdown-vs");
                }
                if !(f > 0.0 && f < 1.0) {
                    bail!("--warmup: must be a fraction in (0, 1), got {f}");
                }
            }
            let cfg = args.cfg.load()?;
            let outputs = RunOutputs::open(&args, &cfg)?;
            interrupt::install(true);
            let mut report = with_progress(args.progress, |progress| {
                let opts = RunOptions { verify: args.verify, progress: progress.clone(), stop: Some(&interrupt::STOP) };
                match &args.slowdown_vs {
                    None => engine::run(&cfg, &opts),
                    Some(reference) => {
                        let both = run_many(&cfg, &[cfg.policy.name.clone(), reference.clone()], &opts)?;
                        let [mut r, base]: [Report; 2] = both.try_into().map_err(|_| anyhow!("two runs expected"))?;
                        if r.complete && base.complete {
                            r.slowdown = Some(Slowdown::between(&r, &base, reference, args.warmup));
                        } else {
                            r.complete = false;
                            r.notes.push(format!("no slowdown against {reference}: the runs were interrupted at different points"));
                        }
                        Ok(r)
                    }
                }
            })?;
            finish_reports(std::slice::from_mut(&mut report), &args.cfg.preset, started);
            print!("{}", table::run_summary(&report));
            outputs.write(&[report])
        }
        Command::Compare { policies, baseline, run } => {
            if run.slowdown_vs.is_some() || run.warmup.is_some() {
                bail!("--slowdown-vs, --warmup: only for `run`; `compare` normalises to --baseline");
            }
            let cfg = run.cfg.load()?;
            let base = baseline.unwrap_or_else(|| policies[0].clone());
            let base_idx = policies
                .iter()
                .position(|p| *p == base)
                .ok_or_else(|| anyhow!("--baseline: `{base}` is not one of --policies ({})", policies.join(",")))?;
            let outputs = RunOutputs::open(&run, &cfg)?;
            interrupt::install(true);
            let mut reports = with_progress(run.progress, |progress| {
                let opts = RunOptions { verify: run.verify, progress: progress.clone(), stop: Some(&interrupt::STOP) };
                run_many(&cfg, &policies, &opts)
            })?;
            finish_reports(&mut reports, &run.cfg.preset, started);
            print!("{}", table::compare(&reports, base_idx));
            outputs.write(&reports)
        }
        Command::Policies => {
            print!("{}", policies_text()?);
            Ok(())
        }
        Command::Config { cfg } => {
            print!("{}", cfg.load()?.to_toml()?);
            Ok(())
        }
        Command::Record(args) => record::record(&args),
        Command::Convert(args) => traces::convert(&args),
        Command::Inspect(args) => traces::inspect(&args),
        Command::Profile(args) => traces::profile(&args),
        Command::Sweep(args) => sweep::sweep(&args),
        Command::Reproduce(args) => reproduce::reproduce(&args),
        Command::Report(args) => report::report(&args),
        Command::TierStream(args) => tier_stream::tier_stream(&args),
    }
}

/// The demo's policies: baselines that never move a page, two of the papers' systems
/// (Rainbow in hardware, memos in the OS) and Linux's TPP, paired two at a time by
/// [`run_many`] in this order (the slowest, rainbow, beside a quick baseline).
const DEMO_POLICIES: [&str; 6] = ["all-fast", "first-touch", "all-slow", "rainbow", "memos", "tpp"];

/// The demo's periods scaled to its run of under a simulated second: key, value, and
/// the value at the paper's (or the kernel's) scale. Rainbow's 10^8-cycle interval
/// (31 ms) needs no scaling.
const DEMO_SCALED: [(&str, &str, &str); 4] = [
    ("policy.memos.interval_s", "0.2", "20 s rounds (memos §5)"),
    ("policy.memos.passes_per_run", "40", "ours: a pass every 2.5 s (25 ms samplings; the paper gives no period)"),
    ("policy.memos.samplings_per_pass", "10", "100 samplings a pass (memos §4.2)"),
    ("policy.tpp.scan_delay_ms", "200", "1000 ms, kernel.numa_balancing_scan_delay_ms"),
];

/// Arguments of `tiersim demo`.
#[derive(Args, Debug, Default)]
pub struct DemoArgs {
    /// The report page to write: the comparison's bars and each run's series.
    #[arg(long, value_name = "FILE", default_value = "demo.html")]
    pub html: PathBuf,
}

/// The demo: baselines, two paper systems and a Linux policy on one machine and a
/// hotspot workload whose hot set moves halfway, so that where pages start is wrong
/// for the second half; a table, a few computed sentences and a report page.
fn demo(args: &DemoArgs, started: Instant) -> Result<()> {
    let mut sets = vec!["workload.hotspot.phases=2".to_string()];
    sets.extend(DEMO_SCALED.iter().map(|(k, v, _)| format!("{k}={v}")));
    let cfg_args = ConfigArgs {
        workload: Some("hotspot".into()),
        footprint: Some("256MiB".into()),
        refs: Some("20000000".into()),
        sets,
        ..Default::default()
    };
    let cfg = cfg_args.load()?;
    let page = OutputFile::create("--html", &args.html, &[], &[])?;
    let policies: Vec<String> = DEMO_POLICIES.map(String::from).to_vec();
    let (fast, slow) = (&cfg.machine.tiers.fast, &cfg.machine.tiers.slow);
    println!(
        "tiersim demo: {} over {} ({} references), {:.0} % of them to a hot {:.0} % of it that moves to a new place halfway; \
         fast tier {} (capacity {}), slow tier {} (capacity {}).",
        cfg.workload.name,
        cfg.workload.footprint,
        cfg.workload.refs,
        cfg.workload.hotspot.hot_refs * 100.0,
        cfg.workload.hotspot.hot_size * 100.0,
        fast.name,
        fast.capacity,
        slow.name,
        slow.capacity,
    );
    println!(
        "Policies: baselines that never move a page (all-fast, first-touch, all-slow); Rainbow (rainbow, hardware, its \
         paper's interval of {} cycles, engine.epoch_cycles); memos and Linux's TPP (tpp) with their periods scaled to \
         this run of under a simulated second:",
        cfg.engine.epoch_cycles
    );
    for (key, value, paper) in DEMO_SCALED {
        println!("  --set {key}={value}   (paper or kernel: {paper})");
    }
    println!("Six runs, two at a time (about 12 s on two idle cores)...\n");
    let mut reports = with_progress(false, |progress| {
        run_many(&cfg, &policies, &RunOptions { progress: progress.clone(), stop: Some(&interrupt::STOP), ..Default::default() })
    })?;
    finish_reports(&mut reports, &None, started);
    print!("{}", table::compare(&reports, 0));
    interrupted(&reports)?;
    println!();
    for line in demo_findings(&reports) {
        println!("{line}");
    }
    let values = reports.iter().map(serde_json::to_value).collect::<Result<Vec<_>, _>>()?;
    let title = format!("tiersim demo: {} on {}", DEMO_POLICIES.join(", "), crate::report::html::workloads_text(&values[0]));
    page.write_all_and_commit(crate::report::html::compare_page(&title, &values)?.as_bytes())?;
    println!("\nReport page: {} (bars relative to all-fast, then each run's series per epoch); open it in a browser, \
              e.g. `xdg-open {0}` (Linux) or `open {0}` (macOS).", args.html.display());
    println!(
        "Next, a paper's own matrix at its own scale, our figures beside the paper's with a verdict on each claim: \
         tiersim reproduce rainbow --quick (about 2 minutes); `tiersim reproduce` lists the papers."
    );
    Ok(())
}

/// What the demo's table shows, in sentences computed from its reports.
fn demo_findings(reports: &[Report]) -> Vec<String> {
    let by = |name: &str| reports.iter().find(|r| r.policy == name);
    let (Some(fast), Some(first)) = (by("all-fast"), by("first-touch")) else { return Vec::new() };
    let time = |r: &Report| r.summary.cycles as f64 / fast.summary.cycles.max(1) as f64;
    let pct = |r: &Report| r.summary.fast_tier_fraction * 100.0;
    let mut out = vec![format!(
        "- first-touch keeps each page where it was first touched: {:.1} % of accesses reach the fast tier and it takes \
         {:.2}× all-fast's time, because the hot set that moved halfway now lies mostly in the slow tier.",
        pct(first),
        time(first)
    )];
    for r in reports.iter().filter(|r| r.summary.page_moves > 0) {
        let verdict = if r.summary.cycles < first.summary.cycles { "faster" } else { "slower" };
        let mut line = format!(
            "- {} moved {} pages ({:.1} MiB, {:.2}× the footprint): {:.1} % of accesses in the fast tier, {:.2}× all-fast's time, \
             {verdict} than first-touch.",
            r.policy,
            r.summary.page_moves,
            r.summary.moved_bytes as f64 / (1u64 << 20) as f64,
            r.summary.migration_to_footprint,
            pct(r),
            time(r)
        );
        let remap = r.redirect.get("breakdown").and_then(|b| b.pointer("/overhead_cycles/remapping")).and_then(|v| v.as_f64());
        if let Some(remap) = remap.filter(|c| *c > 0.0) {
            line += &format!(
                " {:.0} % of its cycles are remapping: a reference to a page copied to DRAM whose 4 KiB translation is not \
                 in the TLB first reads a pointer in the slow tier (docs/policies/rainbow.md).",
                remap / r.summary.cycles.max(1) as f64 * 100.0
            );
        }
        if verdict == "slower" && remap.is_none() {
            line += " Its moves cost more time than they saved.";
        }
        out.push(line);
    }
    for r in reports.iter().filter_map(|r| r.never_acted.as_ref()) {
        out.push(format!("- {r}"));
    }
    out
}

fn policies_text() -> Result<String> {
    struct Describe;
    impl PolicyVisitor for Describe {
        type Output = String;
        fn visit<R: Redirect, P: Policy<R>>(self, name: &'static str) -> String {
            let modes = match engine::epochs_refusal::<R, P>(&P::Config::default()) {
                Some(engine::EpochsRefusal::Redirects) => "detailed (sampled runs detailed: every reference reaches its redirection structure; epochs refused)",
                Some(engine::EpochsRefusal::Foresight) => "detailed or sampled (it reads the whole stream first; epochs refused)",
                None if crate::policy::registry::PLACES_ONLY.contains(&name) => "any: detailed for the model's every figure, epochs for long horizons (docs/epochs.md)",
                None => "epochs for its periods of seconds to minutes (docs/epochs.md); detailed or sampled for short runs",
            };
            format!("  modes: {modes}\n  parameters ([policy.{name}]):\n{}", crate::policy::params::describe::<P::Config>())
        }
    }
    let mut out = String::from(
        "Modes (--mode): detailed runs every reference through the whole model; sampled fits caches' cost in detailed windows \
         (docs/sampled.md); epochs advances in page-granular chunks for the papers' periods of seconds to minutes (docs/epochs.md).\n\n",
    );
    for (name, about) in POLICIES {
        out += &format!("{name}\n  {about}\n");
        out += &with_policy(name, Describe)?;
        out += "\n";
    }
    let width = PRESETS.iter().map(|p| p.0.len()).chain(WORKLOADS.iter().map(|w| w.0.len())).max().unwrap_or(0);
    out += "Presets (--preset; each runs the policy it names unless --policy says otherwise):\n";
    for (name, about, _) in PRESETS {
        let policy = Config::load(&Sources { preset: Some(name.to_string()), ..Default::default() })?.policy.name;
        out += &format!("  {name:<width$} {about}; policy {policy}\n");
    }
    out += "Workloads (--workload):\n";
    for (name, about) in WORKLOADS {
        out += &format!("  {name:<width$} {about}\n");
    }
    out += "Trace formats (--trace FILE, detected or --format; see docs/trace-formats.md):\n  ";
    out += &crate::trace::Format::ALL.map(|f| f.1).join(", ");
    out += "\n";
    Ok(out)
}
