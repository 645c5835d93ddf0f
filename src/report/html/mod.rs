//! The HTML report: one self-contained page with plots of a run's JSON report
//! ([`run_page`]) or of the runs of a sweep ([`sweep_page`]).
//!
//! Plots are drawn with the `plotters` crate into SVG text embedded inline in the
//! page: nothing is fetched from the network and no script draws anything, so the
//! page opens anywhere (also offline, also from a mail attachment), stays small, is
//! byte for byte the same for the same report, and looks the same in every browser.
//! The page's one inline script only writes where each plot was laid out and which
//! series colours it drew into a hidden element, which the browser test
//! (`tests/html_report.rs`) reads; the page shows the same without it.
//!
//! Everything is read from the report's JSON (as `tiersim run --json` writes it), so
//! a report written by an older tiersim still renders, without the panels whose
//! figures it lacks. `docs/report.md` describes every panel.
//!
//! Where things live: this file assembles the pages (their entry points, the page
//! around a body, its style sheet and script); `run.rs` writes a run's sections (its
//! tables, the per-epoch panels, the panels of the policy's own records); `sweep.rs`
//! a sweep's (how runs fall into bars, the table of runs, loaded-latency curves);
//! `plot.rs` draws panels of lines and of bars into SVG; `text.rs` turns values into
//! the text of tables and axes (escaping, numbers, field labels); `tests.rs` holds
//! the unit tests.

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::fmt::Write as _;

mod plot;
mod run;
mod sweep;
mod text;
#[cfg(test)]
mod tests;

use run::run_body;
use sweep::sweep_body;
use text::escape;

/// A run's value on an axis that does not apply to it: a `policy.<name>.…` axis for a
/// run of another policy (the sweep leaves that parameter out of the run).
pub(crate) const NOT_APPLICABLE: &str = "-";

/// One run of a sweep as the report needs it.
pub struct SweepRun {
    /// The run's value on each axis of the sweep, in the sweep's axis order (e.g.
    /// ("policy","tpp"), ("workload","kv"), ("seed","1"),
    /// ("machine.tiers.fast.capacity","25%")).
    pub axes: Vec<(String, String)>,
    /// Why the run failed; None for a finished run.
    pub error: Option<String>,
    /// The run's whole JSON report (as `tiersim run --json` writes it); None for a
    /// failed run.
    pub report: Option<serde_json::Value>,
}

/// The page's style sheet.
const STYLE: &str = "body{font-family:sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:22px}h2{font-size:18px;margin-top:28px}h3{font-size:16px}
.panels{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
figure.plot{margin:0;max-width:100%}
figure.plot svg{display:block;max-width:100%;height:auto}
figcaption{font-size:13px;color:#555;margin-top:4px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{padding:2px 10px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
pre{font-size:12px;background:#f6f6f6;padding:8px;overflow:auto}
.warn{color:#a00}";

/// The page's script: writes every plot's box and plotting area (page pixels) and the
/// colours of the series it drew into `#plot-boxes`, for `tests/html_report.rs`.
const SCRIPT: &str = "(function () {
  var plots = [];
  document.querySelectorAll('figure.plot').forEach(function (f) {
    var svg = f.querySelector('svg'), r = svg.getBoundingClientRect();
    var x = r.left + window.scrollX, y = r.top + window.scrollY, k = r.width / svg.viewBox.baseVal.width;
    var a = f.dataset.plotArea.split(' ').map(Number);
    plots.push({x: x, y: y, w: r.width, h: r.height, area: [x + a[0] * k, y + a[1] * k, x + a[2] * k, y + a[3] * k],
      colours: f.dataset.colours.split(' ').filter(Boolean), title: f.dataset.title});
  });
  document.getElementById('plot-boxes').textContent = JSON.stringify({plots: plots});
})();";

/// Returns the page of one run: its time series per epoch, the series of its policy's
/// own records, its summary, notes and configuration. `report` is the run's JSON
/// report; the error says what it lacks when it is not one.
pub(crate) fn run_page(title: &str, report: &serde_json::Value) -> anyhow::Result<String> {
    Ok(page(title, &run_body(report, 2)?))
}

/// `spec` is the sweep specification's text (shown as its configuration); `baseline`
/// the policy the bars are normalised to (None: the first policy value, or no
/// normalisation when there is no `policy` axis).
///
/// Returns the page of a sweep: one panel of bars per summary figure, the failed runs
/// with their errors, a table of every run, and the specification.
pub fn sweep_page(title: &str, spec: &str, runs: &[SweepRun], baseline: Option<&str>) -> anyhow::Result<String> {
    let mut body = sweep_body(runs, baseline, 2)?;
    let _ = write!(body, "<h2>Specification</h2>\n<details><summary>the sweep's specification</summary>\n<pre>{}</pre></details>\n", escape(spec));
    Ok(page(title, &body))
}

/// One sweep of a page of several.
pub(crate) struct SweepSection<'a> {
    pub(crate) name: &'a str,
    /// The sweep's specification (TOML).
    pub(crate) spec: &'a str,
    pub(crate) runs: &'a [SweepRun],
    pub(crate) baseline: Option<&'a str>,
}

/// Returns the page of several sweeps (a store's, or a paper's reproduction): when
/// `figures` is given, first a table of figures — rows of (section, figure, the
/// paper's, ours, the verdict) — and `setting`, the text that says how the runs differ from the
/// paper's; then a section per sweep as on [`sweep_page`].
pub(crate) fn sweeps_page(title: &str, figures: Option<(&[[String; 5]], &str)>, sweeps: &[SweepSection]) -> Result<String> {
    let mut body = String::new();
    if let Some((rows, setting)) = figures {
        body += "<h2>Figures</h2>\n<table>\n<tr><th>section</th><th>figure</th><th>paper</th><th>tiersim</th><th>verdict</th></tr>\n";
        for r in rows {
            let _ = writeln!(body, "<tr>{}</tr>", r.iter().map(|c| format!("<td>{}</td>", escape(c))).collect::<String>());
        }
        let _ = write!(body, "</table>\n<p>{}</p>\n", escape(setting));
    }
    for s in sweeps {
        let _ = write!(body, "<section>\n<h2>Sweep {}</h2>\n", escape(s.name));
        if s.runs.is_empty() {
            body += "<p>No run of this sweep is in the store yet.</p>\n";
        } else {
            body += &sweep_body(s.runs, s.baseline, 3).with_context(|| format!("sweep {}", s.name))?;
        }
        let _ = write!(body, "<details><summary>the sweep's specification</summary>\n<pre>{}</pre></details>\n</section>\n", escape(s.spec));
    }
    Ok(page(title, &body))
}

/// Returns the page of `compare --json`'s array of reports: the sweep page's bars,
/// normalised to the first run's policy, then each run's own sections.
pub(crate) fn compare_page(title: &str, reports: &[Value]) -> Result<String> {
    for (i, r) in reports.iter().enumerate() {
        check_report(r).with_context(|| format!("entry {}", i + 1))?;
    }
    let runs: Vec<SweepRun> = reports
        .iter()
        .map(|r| SweepRun { axes: vec![("policy".to_string(), policy_name(r).to_string())], error: None, report: Some(r.clone()) })
        .collect();
    let mut body = sweep_body(&runs, None, 2)?;
    for (i, r) in reports.iter().enumerate() {
        let _ = write!(body, "<section>\n<h2>Run {}: {}</h2>\n{}</section>\n", i + 1, escape(policy_name(r)), run_body(r, 3)?);
    }
    Ok(page(title, &body))
}

/// The workloads of a run's report, for a title: each slot's workload or trace,
/// comma-separated.
pub(crate) fn workloads_text(report: &Value) -> String {
    let slots = report["workloads"].as_array().map(Vec::as_slice).unwrap_or_default();
    let names: Vec<&str> = slots
        .iter()
        .map(|s| s["trace"]["path"].as_str().or_else(|| s["workload"]["name"].as_str()).unwrap_or("?"))
        .collect();
    if names.is_empty() {
        "?".to_string()
    } else if names.iter().all(|n| *n == names[0]) && names.len() > 1 {
        format!("{} × {}", names.len(), names[0])
    } else {
        names.join(", ")
    }
}

/// Checks that `report` is a run's JSON report: an object with a `summary` object, an
/// `epochs` array and the machine's frequency in its `config`.
fn check_report(report: &Value) -> Result<()> {
    let lacks = if !report["summary"].is_object() {
        Some("`summary` object")
    } else if !report["epochs"].is_array() {
        Some("`epochs` array")
    } else if !report["config"]["machine"]["freq_ghz"].as_f64().is_some_and(|f| f > 0.0) {
        Some("`config.machine.freq_ghz`")
    } else {
        None
    };
    match lacks {
        Some(what) => bail!("not a tiersim run report (no {what})"),
        None => Ok(()),
    }
}

fn policy_name(report: &Value) -> &str {
    report["policy"].as_str().unwrap_or("?")
}

/// The whole page around `body`.
fn page(title: &str, body: &str) -> String {
    let title = escape(title);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<h1>{title}</h1>\n{body}<pre id=\"plot-boxes\" hidden></pre>\n<script>\n{SCRIPT}\n</script>\n</body>\n</html>\n"
    )
}

/// `<hN>text</hN>`.
fn heading(level: u8, text: &str) -> String {
    format!("<h{level}>{}</h{level}>\n", escape(text))
}
