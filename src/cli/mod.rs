//! The command line: `demo`, `run`, `compare`, `policies`, `config`, and the trace
//! commands `record` (in [`record`]), `convert` and `inspect` (in [`traces`]).

mod record;
mod traces;

use crate::config::{Config, Sources, PRESETS};
pub use crate::engine::RunFailed;
use crate::engine::{self, RunOptions};
use crate::policy::registry::{with_policy, PolicyVisitor, POLICIES};
use crate::policy::Policy;
use crate::report::{table, Report, Slowdown};
use crate::workload::WORKLOADS;
use anyhow::{anyhow, Context, Result};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(name = "tiersim", version, about = "Fast trace-driven simulator for tiered (hybrid) main memory")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Compare the baselines on a built-in workload (no arguments; under 30 s).
    Demo,
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
}

/// Where the configuration comes from.
#[derive(Args, Debug, Default, Clone)]
pub struct ConfigArgs {
    /// TOML configuration file.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Built-in preset (rainbow, spar, optane, thermostat, cxl).
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
    /// Workload footprint, e.g. 2GiB (shorthand for --set workload.footprint=SIZE).
    #[arg(long)]
    pub footprint: Option<String>,
    /// References to simulate (shorthand for --set workload.refs=N).
    #[arg(long)]
    pub refs: Option<String>,
    /// Random seed (shorthand for --set workload.seed=N).
    #[arg(long)]
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
    #[arg(long = "tenant", value_name = "N")]
    pub trace_tenants: Vec<u16>,
    /// Format of the --trace files (default: detected from their content).
    #[arg(long)]
    pub format: Option<String>,
    /// Skip malformed trace lines (and count them) instead of stopping at the first.
    #[arg(long)]
    pub skip_malformed: bool,
}

impl ConfigArgs {
    pub fn load(&self) -> Result<Config> {
        let mut sets = Vec::new();
        let quoted = |v: &str| format!("\"{}\"", v.replace('"', ""));
        if let Some(p) = &self.policy {
            sets.push(format!("policy.name={}", quoted(p)));
        }
        if let Some(w) = &self.workload {
            sets.push(format!("workload.name={}", quoted(w)));
        }
        if let Some(f) = &self.footprint {
            sets.push(format!("workload.footprint={}", quoted(f)));
        }
        for (key, v) in [("workload.refs", &self.refs), ("workload.seed", &self.seed)] {
            if let Some(v) = v {
                let n: u64 = v.replace('_', "").parse().map_err(|_| anyhow!("--{}: `{v}` is not a whole number", &key[9..]))?;
                sets.push(format!("{key}={n}"));
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
        })
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
    #[arg(long, value_name = "FRACTION")]
    pub warmup: Option<f64>,
}

fn write_outputs(reports: &[Report], json: &Option<PathBuf>, csv: &Option<PathBuf>) -> Result<()> {
    if let Some(path) = json {
        let text = if reports.len() == 1 {
            serde_json::to_string_pretty(&reports[0])?
        } else {
            serde_json::to_string_pretty(reports)?
        };
        std::fs::write(path, text + "\n").with_context(|| format!("{}: cannot write", path.display()))?;
    }
    if let Some(path) = csv {
        std::fs::write(path, table::csv(reports)).with_context(|| format!("{}: cannot write", path.display()))?;
    }
    Ok(())
}

/// Runs `policies` on `cfg`, two at a time (runs are independent, so the results do
/// not depend on the thread count).
pub fn run_many(cfg: &Config, policies: &[String], opts: &RunOptions) -> Result<Vec<Report>> {
    for p in policies {
        with_policy(p, Noop)?;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 2);
    let mut results: Vec<Option<Result<Report>>> = (0..policies.len()).map(|_| None).collect();
    let quiet = &RunOptions { progress: false, ..opts.clone() };
    for chunk in (0..policies.len()).collect::<Vec<_>>().chunks(threads) {
        std::thread::scope(|s| {
            let handles: Vec<_> = chunk.iter().map(|&i| (i, s.spawn(move || engine::run_policy(cfg, &policies[i], quiet)))).collect();
            for (i, h) in handles {
                results[i] = Some(h.join().unwrap_or_else(|_| Err(anyhow!("the run of {} panicked", policies[i]))));
            }
        });
    }
    results.into_iter().map(|r| r.expect("every run finished")).collect()
}

struct Noop;

impl PolicyVisitor for Noop {
    type Output = ();
    fn visit<P: Policy>(self, _: &'static str) {}
}

/// Executes a parsed command line.
pub fn main(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Demo => demo(),
        Command::Run(args) => {
            let cfg = args.cfg.load()?;
            let opts = RunOptions { verify: args.verify, progress: true };
            if let Some(f) = args.warmup {
                if args.slowdown_vs.is_none() {
                    anyhow::bail!("--warmup: only with --slowdown-vs");
                }
                if !(f > 0.0 && f < 1.0) {
                    anyhow::bail!("--warmup: must be a fraction in (0, 1), got {f}");
                }
            }
            let report = match &args.slowdown_vs {
                None => engine::run(&cfg, &opts)?,
                Some(reference) => {
                    let both = run_many(&cfg, &[cfg.policy.name.clone(), reference.clone()], &opts)?;
                    let [mut r, base]: [Report; 2] = both.try_into().map_err(|_| anyhow!("two runs expected"))?;
                    r.slowdown = Some(Slowdown::between(&r, &base, reference, args.warmup));
                    r
                }
            };
            print!("{}", table::run_summary(&report));
            write_outputs(&[report], &args.json, &args.csv)
        }
        Command::Compare { policies, baseline, run } => {
            if run.slowdown_vs.is_some() || run.warmup.is_some() {
                anyhow::bail!("--slowdown-vs, --warmup: only for `run`; `compare` normalises to --baseline");
            }
            let cfg = run.cfg.load()?;
            let base = baseline.unwrap_or_else(|| policies[0].clone());
            let base_idx = policies
                .iter()
                .position(|p| *p == base)
                .ok_or_else(|| anyhow!("--baseline: `{base}` is not one of --policies ({})", policies.join(",")))?;
            let opts = RunOptions { verify: run.verify, progress: false };
            let reports = run_many(&cfg, &policies, &opts)?;
            print!("{}", table::compare(&reports, base_idx));
            write_outputs(&reports, &run.json, &run.csv)
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
    }
}

/// The demo: the five baselines on a hotspot workload whose hot set fits the fast tier.
fn demo() -> Result<()> {
    let args = ConfigArgs {
        workload: Some("hotspot".into()),
        footprint: Some("2GiB".into()),
        refs: Some("4000000".into()),
        ..Default::default()
    };
    let cfg = args.load()?;
    let policies: Vec<String> = ["all-fast", "first-touch", "flat-static", "round-robin", "all-slow"].map(String::from).to_vec();
    println!(
        "tiersim demo: {} over {} ({} refs, {}% of references to a hot {}% of it), fast tier {} of the footprint\n",
        cfg.workload.name,
        cfg.workload.footprint,
        cfg.workload.refs,
        cfg.workload.hotspot.hot_refs * 100.0,
        cfg.workload.hotspot.hot_size * 100.0,
        cfg.machine.tiers.fast.capacity
    );
    let reports = run_many(&cfg, &policies, &RunOptions::default())?;
    print!("{}", table::compare(&reports, 0));
    println!("\nTry: tiersim compare --policies all-fast,first-touch,all-slow --workload zipf --footprint 1GiB");
    Ok(())
}

fn policies_text() -> Result<String> {
    struct Describe;
    impl PolicyVisitor for Describe {
        type Output = String;
        fn visit<P: Policy>(self, _: &'static str) -> String {
            crate::policy::params::describe::<P::Config>()
        }
    }
    let mut out = String::new();
    for (name, about) in POLICIES {
        out += &format!("{name}\n  {about}\n  parameters ([policy.{name}]):\n");
        out += &with_policy(name, Describe)?;
        out += "\n";
    }
    out += "Presets (--preset):\n";
    for (name, about, _) in PRESETS {
        out += &format!("  {name:<11} {about}\n");
    }
    out += "Workloads (--workload):\n";
    for (name, about) in WORKLOADS {
        out += &format!("  {name:<11} {about}\n");
    }
    out += "Trace formats (--trace FILE, detected or --format; see docs/trace-formats.md):\n  ";
    out += &crate::trace::Format::ALL.map(|f| f.1).join(", ");
    out += "\n";
    Ok(out)
}
