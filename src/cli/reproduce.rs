//! `tiersim reproduce PAPER [--quick]`: a paper's matrix as sweeps, and our figures
//! beside the paper's (`study::reproduce`).

use super::output::OutputFile;
use super::{interrupt, Interrupted};
use crate::report::html::{self, SweepSection};
use crate::study::store::StoredRun;
use crate::engine::RunFailed;
use crate::progress::{duration, Mode, Progress};
use crate::study::reproduce::{self, table_text, Results, PAPERS};
use crate::study::{run_sweep, Store, SweepOptions};
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug, Default, Clone)]
pub struct ReproduceArgs {
    /// The paper (without it, the list of papers).
    pub paper: Option<String>,
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
    /// The HTML report to write (default: reproduce-PAPER.html, or
    /// reproduce-PAPER-quick.html).
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Runs `tiersim reproduce`.
pub fn reproduce(args: &ReproduceArgs) -> Result<()> {
    let started = Instant::now();
    let Some(name) = &args.paper else {
        println!("Papers (tiersim reproduce PAPER [--quick]):");
        let width = PAPERS.iter().map(|p| p.name.len()).max().unwrap_or(0);
        for p in PAPERS {
            println!("  {:<width$} {} ({})", p.name, p.title, p.doc);
        }
        return Ok(());
    };
    let paper = reproduce::paper(name)?;
    if args.jobs == Some(0) {
        bail!("-j: must be at least 1");
    }
    let suffix = if args.quick { "-quick" } else { "" };
    let db = args.db.clone().unwrap_or_else(|| PathBuf::from(format!("reproduce-{}{suffix}.db", paper.name)));
    let mut specs = (paper.sweeps)(args.quick);
    for s in &mut specs {
        s.db = Some(db.clone());
        s.check_runs(&s.points())?;
    }
    let html_path = args.out.clone().unwrap_or_else(|| PathBuf::from(format!("reproduce-{}{suffix}.html", paper.name)));
    let db_shown = db.display().to_string();
    let html_out = OutputFile::create("-o", &html_path, &[db_shown.as_str()], &[])?;
    let mut store = Store::open(&db, true)?;
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    interrupt::install(true);
    let (mut failed, mut left, mut total, mut already) = (Vec::new(), 0, 0, 0);
    for s in &specs {
        let progress = Progress::new(Mode::for_stderr(args.progress));
        let outcome = run_sweep(s, &mut store, &SweepOptions { jobs, progress: progress.clone(), stop: Some(&interrupt::STOP) });
        progress.finish();
        let o = outcome?;
        total += o.total;
        already += o.already;
        left += o.left;
        failed.extend(o.failed.into_iter().chain(o.failed_elsewhere).map(|(label, msg)| (format!("{}: {label}", s.name), msg)));
        if o.left > 0 {
            break;
        }
    }
    let results = Results::load(&store, &specs)?;
    let rows = (paper.table)(&results);
    println!("{}{}\n", paper.title, if args.quick { " — quick" } else { "" });
    print!("{}", table_text(&rows));
    println!("\nSetting: {}", (paper.setting)(args.quick));
    println!("Discussion: {}", paper.doc);
    let runs: Vec<Vec<_>> = results.sweeps.iter().map(|(_, r)| r.iter().cloned().map(StoredRun::into_sweep_run).collect()).collect();
    let sections: Vec<SweepSection> = results
        .sweeps
        .iter()
        .zip(&runs)
        .map(|((s, _), r)| SweepSection { name: &s.name, spec: &s.spec, runs: r, baseline: s.baseline.as_deref() })
        .collect();
    let cells: Vec<[String; 4]> = rows.iter().map(|r| [r.section.clone(), r.what.clone(), r.paper.clone(), r.ours.clone()]).collect();
    let title = format!("tiersim reproduce {}{}: {}", paper.name, if args.quick { " --quick" } else { "" }, paper.title);
    let setting = format!("{} Discussion: {}.", (paper.setting)(args.quick), paper.doc);
    let page = html::sweeps_page(&title, Some((&cells, &setting)), &sections)?;
    html_out.write_all_and_commit(page.as_bytes())?;
    println!("Report: {}", html_path.display());
    println!(
        "{total} runs in {}: {already} already there, the rest run now in {}",
        db.display(),
        duration(started.elapsed().as_secs_f64())
    );
    for (label, msg) in &failed {
        println!("  failed: {label}: {msg}");
    }
    if left > 0 {
        return Err(anyhow::Error::new(Interrupted(format!("interrupted: {left} runs left; the same command runs only those"))));
    }
    if !failed.is_empty() {
        return Err(anyhow::Error::new(RunFailed(format!("{} runs failed; the same command runs them again", failed.len()))));
    }
    Ok(())
}
