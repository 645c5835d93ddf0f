//! `tiersim report`: draws a run's JSON report (or `compare`'s array of them) as one
//! self-contained HTML page with plots (module `report::html`, docs/report.md).

use super::output::{io_reason, OutputFile};
use crate::report::html;
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use serde_json::Value;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A run's JSON report (`run --json`), or the array of reports `compare --json`
    /// writes.
    pub input: PathBuf,
    /// The HTML page to write.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,
}

/// Reads the report, draws its page and writes it to `-o`.
pub fn report(args: &ReportArgs) -> Result<()> {
    let shown = args.input.display().to_string();
    if args.input.extension().is_some_and(|e| e == "db") {
        bail!("{shown}: sweep databases are read by the sweep store (not built yet)");
    }
    let out = OutputFile::create("-o", &args.out, &[shown.as_str()], &[])?;
    let text = std::fs::read_to_string(&args.input).map_err(|e| anyhow!("{shown}: cannot read: {}", io_reason(&e)))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| anyhow!("{shown}: not JSON: {e}"))?;
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
