//! `tiersim reproduce PAPER [--quick]`: a paper's matrix as sweeps, and our figures
//! beside the paper's (`study::reproduce`).

use super::output::OutputFile;
use super::{interrupt, Interrupted};
use crate::report::html::{self, SweepSection};
use crate::study::store::StoredRun;
use crate::engine::RunFailed;
use crate::progress::{duration, Mode, Progress};
use crate::study::reproduce::{self, scoreboard, table_text, verdict_counts, Paper, Results, Row, ScoredPaper, PAPERS};
use crate::study::{other_builds_note, run_sweep, Store, SweepOptions};
use anyhow::{bail, Result};
use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug, Default, Clone)]
pub struct ReproduceArgs {
    /// The paper (without it, the list of papers).
    #[arg(conflicts_with = "all")]
    pub paper: Option<String>,
    /// Every paper on the scoreboard in turn, then the scoreboard of their claims
    /// (`-o`, default fidelity.md or fidelity-quick.md); each paper's store and report
    /// take their default names in the current directory.
    #[arg(long, conflicts_with = "db")]
    pub all: bool,
    /// A smaller matrix that finishes in a few minutes.
    #[arg(long)]
    pub quick: bool,
    /// The results store (default: reproduce-PAPER.db, or reproduce-PAPER-quick.db).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Runs at a time (default: the number of cores).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Print a progress line every few seconds even when standard error is not a terminal.
    #[arg(long)]
    pub progress: bool,
    /// Simulate again the stored runs that another build of tiersim simulated (by
    /// default they are kept, and the command says how many and which builds).
    #[arg(long)]
    pub rerun_other_builds: bool,
    /// The HTML report to write (default: reproduce-PAPER.html, or
    /// reproduce-PAPER-quick.html); with `--all`, the scoreboard (Markdown).
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Runs `tiersim reproduce`.
pub fn reproduce(args: &ReproduceArgs) -> Result<()> {
    let started = Instant::now();
    if args.jobs == Some(0) {
        bail!("-j: must be at least 1");
    }
    if args.all {
        return reproduce_all(args, started);
    }
    let Some(name) = &args.paper else {
        println!("Papers (tiersim reproduce PAPER [--quick]; --all for every paper on the scoreboard):");
        let width = PAPERS.iter().map(|p| p.name.len()).max().unwrap_or(0);
        for p in PAPERS {
            let validation = if p.on_scoreboard { "" } else { " — not on the scoreboard" };
            println!("  {:<width$} {} ({}){validation}", p.name, p.title, p.doc);
        }
        return Ok(());
    };
    let paper = reproduce::paper(name)?;
    let outcome = reproduce_paper(paper, args, args.db.clone(), args.out.clone())?;
    println!("{}", outcome.runs_line(started));
    outcome.result()
}

/// What one paper's reproduction left.
struct Outcome {
    db: PathBuf,
    total: usize,
    already: usize,
    left: usize,
    failed: Vec<(String, String)>,
    rows: Vec<Row>,
    setting: String,
    never_acted: Vec<String>,
    /// Runs kept from other builds, by commit ([`SweepOutcome::other_builds`]).
    other_builds: BTreeMap<String, usize>,
}

impl Outcome {
    fn runs_line(&self, started: Instant) -> String {
        let mut line = format!(
            "{} runs in {}: {} already there, the rest run now in {}",
            self.total,
            self.db.display(),
            self.already,
            duration(started.elapsed().as_secs_f64())
        );
        for (label, msg) in &self.failed {
            line += &format!("\n  failed: {label}: {msg}");
        }
        line
    }

    /// The command's outcome: interrupted while runs are left, failed when a run failed.
    fn result(&self) -> Result<()> {
        if self.left > 0 {
            return Err(anyhow::Error::new(Interrupted(format!("interrupted: {} runs left; the same command runs only those", self.left))));
        }
        if !self.failed.is_empty() {
            return Err(runs_failed(self.failed.len()));
        }
        Ok(())
    }
}

/// Runs `paper`'s matrix into `db` (or its default store), prints its table and
/// writes its HTML report to `out` (or its default).
fn reproduce_paper(paper: &Paper, args: &ReproduceArgs, db: Option<PathBuf>, out: Option<PathBuf>) -> Result<Outcome> {
    let suffix = if args.quick { "-quick" } else { "" };
    let db = db.unwrap_or_else(|| PathBuf::from(format!("reproduce-{}{suffix}.db", paper.name)));
    let mut specs = (paper.sweeps)(args.quick);
    for s in &mut specs {
        s.db = Some(db.clone());
        s.check_runs(&s.points())?;
    }
    let html_path = out.unwrap_or_else(|| PathBuf::from(format!("reproduce-{}{suffix}.html", paper.name)));
    let db_shown = db.display().to_string();
    let html_out = OutputFile::create("-o", &html_path, &[db_shown.as_str()], &[])?;
    let mut store = Store::open(&db, true)?;
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    interrupt::install(true);
    let (mut failed, mut left, mut total, mut already) = (Vec::new(), 0, 0, 0);
    let mut other_builds = BTreeMap::new();
    for s in &specs {
        let progress = Progress::new(Mode::for_stderr(args.progress));
        let options = SweepOptions { jobs, progress: progress.clone(), stop: Some(&interrupt::STOP), rerun_other_builds: args.rerun_other_builds };
        let outcome = run_sweep(s, &mut store, &options);
        progress.finish();
        let o = outcome?;
        total += o.total;
        already += o.already;
        for (commit, n) in &o.other_builds {
            *other_builds.entry(commit.clone()).or_insert(0) += n;
        }
        left += o.left;
        failed.extend(o.failed.into_iter().chain(o.failed_elsewhere).map(|(label, msg)| (format!("{}: {label}", s.name), msg)));
        if o.left > 0 {
            break;
        }
    }
    let results = Results::load(&store, &specs)?;
    let rows = (paper.table)(&results);
    let setting = (paper.setting)(args.quick, &results);
    println!("{}{}\n", paper.title, if args.quick { " — quick" } else { "" });
    print!("{}", table_text(&rows));
    println!("\nSetting: {setting}");
    if let Some(note) = other_builds_note(&other_builds) {
        println!("Builds: {note}.");
    }
    let never_acted = results.never_acted();
    if !never_acted.is_empty() {
        println!("Runs in which a policy never acted or moved no page ({}; rows drawn from them show the initial placement):", never_acted.len());
        for n in &never_acted {
            println!("  {n}");
        }
    }
    println!("Discussion: {}", paper.doc);
    let runs: Vec<Vec<_>> = results.sweeps.iter().map(|(_, r)| r.iter().cloned().map(StoredRun::into_sweep_run).collect()).collect();
    let sections: Vec<SweepSection> = results
        .sweeps
        .iter()
        .zip(&runs)
        .map(|((s, _), r)| SweepSection { name: &s.name, spec: &s.spec, runs: r, baseline: s.baseline.as_deref() })
        .collect();
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|r| [r.section.clone(), r.what.clone(), r.paper.clone(), r.ours.clone(), r.verdict().map_or(String::new(), |v| v.label().to_string())])
        .collect();
    let title = format!("tiersim reproduce {}{}: {}", paper.name, if args.quick { " --quick" } else { "" }, paper.title);
    let idle = match never_acted.len() {
        0 => String::new(),
        n => format!(" In {n} runs a policy never acted or moved no page (each sweep's section lists them)."),
    };
    let builds = other_builds_note(&other_builds).map_or_else(String::new, |n| format!(" Builds: {n}."));
    let page_setting = format!("{} {setting}{idle}{builds} Discussion: {}.", verdict_counts(&rows), paper.doc);
    let page = html::sweeps_page(&title, Some((&cells, &page_setting)), &sections)?;
    html_out.write_all_and_commit(page.as_bytes())?;
    println!("Report: {}", html_path.display());
    Ok(Outcome { db, total, already, left, failed, rows, setting, never_acted, other_builds })
}

/// The command's error when `n` runs failed (exit code 1).
fn runs_failed(n: usize) -> anyhow::Error {
    anyhow::Error::new(RunFailed(format!("{n} runs failed; the same command runs them again")))
}

/// `tiersim reproduce --all`: every paper on the scoreboard, then the scoreboard.
/// It is written only when every paper's runs are done (failed runs are named on
/// it); an interrupted command writes none.
fn reproduce_all(args: &ReproduceArgs, started: Instant) -> Result<()> {
    let suffix = if args.quick { "-quick" } else { "" };
    let path = args.out.clone().unwrap_or_else(|| PathBuf::from(format!("fidelity{suffix}.md")));
    let out = OutputFile::create("-o", &path, &[], &[])?;
    let mut papers = Vec::new();
    let mut failed = Vec::new();
    for paper in PAPERS.iter().copied().filter(|p| p.on_scoreboard) {
        let outcome = reproduce_paper(paper, args, None, None)?;
        println!("{}\n", outcome.runs_line(started));
        if outcome.left > 0 {
            return outcome.result();
        }
        failed.extend(outcome.failed.iter().map(|(label, msg)| (format!("{}: {label}", paper.name), msg.clone())));
        let full = if args.quick { full_rows(paper)? } else { None };
        papers.push(ScoredPaper { paper, rows: outcome.rows, setting: outcome.setting, full, never_acted: outcome.never_acted, other_builds: outcome.other_builds });
    }
    let text = scoreboard(&papers, args.quick, env!("TIERSIM_COMMIT"), &failed);
    out.write_all_and_commit(text.as_bytes())?;
    println!("Scoreboard: {} ({} in all)", path.display(), duration(started.elapsed().as_secs_f64()));
    if !failed.is_empty() {
        return Err(runs_failed(failed.len()));
    }
    Ok(())
}

/// `paper`'s rows from its full matrix's default store, when that store is there
/// (the runs it lacks show as not run).
fn full_rows(paper: &Paper) -> Result<Option<Vec<Row>>> {
    let db = PathBuf::from(format!("reproduce-{}.db", paper.name));
    if !db.exists() {
        return Ok(None);
    }
    let store = Store::open(&db, false)?;
    let results = Results::load(&store, &(paper.sweeps)(false))?;
    Ok(Some((paper.table)(&results)))
}
