//! `tiersim report`: draws a run's JSON report (or `compare`'s array of them), or the
//! sweeps of a results store, as one self-contained HTML page with plots (module
//! `report::html`, docs/report.md).

use super::output::{io_reason, OutputFile};
use crate::report::html::{self, SweepSection};
use crate::study::store::{Store, StoredRun};
use crate::trace::{decompress, detect};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use serde_json::Value;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A run's JSON report (`run --json`), the array of reports `compare --json`
    /// writes, or a sweep store (`.db`, `tiersim sweep`).
    pub input: PathBuf,
    /// The HTML page to write.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,
    /// With a sweep store: only this sweep (default: every sweep in the store).
    #[arg(long)]
    pub sweep: Option<String>,
}

/// Reads the report, draws its page and writes it to `-o`.
pub fn report(args: &ReportArgs) -> Result<()> {
    let shown = args.input.display().to_string();
    let out = OutputFile::create("-o", &args.out, &[shown.as_str()], &[])?;
    if args.input.extension().is_some_and(|e| e == "db") {
        let page = sweeps_page(&args.input, args.sweep.as_deref())?;
        return out.write_all_and_commit(page.as_bytes());
    }
    if args.sweep.is_some() {
        bail!("--sweep: only for a sweep store (a .db file)");
    }
    let bytes = std::fs::read(&args.input).map_err(|e| anyhow!("{shown}: cannot read: {}", io_reason(&e)))?;
    let value: Value = match std::str::from_utf8(&bytes) {
        Ok(text) => serde_json::from_str(text).map_err(|e| match what_else(&shown, &bytes) {
            Some(what) => not_a_report(&shown, &what),
            None => anyhow!("{shown}: not JSON: {e}"),
        })?,
        Err(_) => return Err(not_a_report(&shown, &what_else(&shown, &bytes).unwrap_or_else(|| "binary data".into()))),
    };
    let page = match &value {
        Value::Array(reports) if reports.is_empty() => bail!("{shown}: an empty array, no report in it"),
        Value::Array(reports) => {
            let policies: Vec<&str> = reports.iter().map(|r| r["policy"].as_str().unwrap_or("?")).collect();
            let title = format!("tiersim compare: {} on {}", policies.join(", "), html::workloads_text(&reports[0]));
            html::compare_page(&title, reports)
        }
        report => {
            let title = format!("tiersim run: {} on {}", report["policy"].as_str().unwrap_or("?"), html::workloads_text(report));
            html::run_page(&title, report)
        }
    }
    .with_context(|| shown.clone())?;
    out.write_all_and_commit(page.as_bytes())
}

/// What the input of `report` is when it is not JSON: a sweep store under another
/// name or a trace (by its content, compressed or not), or `None` when it is
/// neither, so that a damaged report keeps its JSON error with line and column.
fn what_else(shown: &str, bytes: &[u8]) -> Option<String> {
    if bytes.starts_with(b"SQLite format 3\0") {
        return Some("an SQLite database (a sweep store is read by its .db name)".into());
    }
    let input = decompress::wrap(Box::new(std::io::Cursor::new(bytes.to_vec())), shown.to_string()).ok()?;
    let what = match (detect::detect(&input.head), input.compression) {
        (Some(_), None) => detect::describe(&input.head),
        (Some(_), Some(c)) => format!("{} ({c}-compressed)", detect::describe(&input.head)),
        (None, Some(c)) => format!("{c}-compressed data"),
        (None, None) if detect::is_binary(&input.head) => "binary data".into(),
        (None, None) => return None,
    };
    Some(what)
}

/// The error for an input that is `what` instead of a report.
fn not_a_report(shown: &str, what: &str) -> anyhow::Error {
    anyhow!("{shown}: is {what}, not a report; `tiersim report` reads a run's JSON report (`run --json`), the array `compare --json` writes, or a sweep store (.db)")
}

/// The page of a sweep store: sweep `only`, or every sweep in it.
fn sweeps_page(db: &Path, only: Option<&str>) -> Result<String> {
    let store = Store::open(db, false)?;
    let sweeps = match only {
        Some(name) => vec![store.sweep(Some(name))?],
        None => store.sweeps()?,
    };
    if sweeps.is_empty() {
        bail!("{}: holds no sweep yet", db.display());
    }
    let runs = sweeps.iter().map(|s| store.runs(s).map(|r| r.into_iter().map(StoredRun::into_sweep_run).collect::<Vec<_>>())).collect::<Result<Vec<_>>>()?;
    let sections: Vec<SweepSection> =
        sweeps.iter().zip(&runs).map(|(s, r)| SweepSection { name: &s.name, spec: &s.spec, runs: r, baseline: s.baseline.as_deref() }).collect();
    let names: Vec<&str> = sweeps.iter().map(|s| s.name.as_str()).collect();
    html::sweeps_page(&format!("tiersim sweep: {}", names.join(", ")), None, &sections).with_context(|| db.display().to_string())
}
