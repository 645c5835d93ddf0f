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

use super::geometric_mean;
use anyhow::{anyhow, bail, Context, Result};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;
use std::fmt::Write as _;
use std::ops::Range;

/// A run's value on an axis that does not apply to it: a `policy.<name>.…` axis for a
/// run of another policy (the sweep leaves that parameter out of the run).
pub const NOT_APPLICABLE: &str = "-";

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

/// A plot's width and height (before its legend) in CSS pixels: two side by side fit
/// a 1200-pixel window.
const PLOT_WIDTH_PX: u32 = 560;
const PLOT_HEIGHT_PX: u32 = 320;

/// Height of one row of a legend, in pixels.
const LEGEND_ROW_PX: i32 = 20;

/// Series colours, in the order series get them: Tableau 10 without its grey, which
/// the grid lines would hide.
const PALETTE: [RGBColor; 9] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
];

/// Series of at most this many points also get a marker at every point, so that a
/// run of one or two epochs still shows its values.
const MARKED_POINTS_MAX: usize = 60;

/// The summary figures the sweep page plots: key in `summary`, panel title and unit.
const SWEEP_METRICS: &[(&str, &str, &str)] = &[
    ("cycles", "Execution time", "cycles"),
    ("ipc", "Instructions per cycle", "IPC"),
    ("amat_ns", "Average memory access time", "ns"),
    ("fast_tier_fraction", "Fast-tier share of demand accesses", "share"),
    ("page_moves", "Page moves", "pages"),
    ("migration_to_footprint", "Bytes moved per byte of footprint", "bytes per byte"),
    ("energy_j", "Memory energy", "J"),
    ("slow_tier_writes", "Slow-tier writes", "64-byte writes"),
    ("tlb_mpki", "TLB misses per thousand instructions", "MPKI"),
    ("llc_mpki", "LLC misses per thousand instructions", "MPKI"),
];

/// The title of the epochs' page-moves panel, left out when every epoch moved none.
const PAGE_MOVES_TITLE: &str = "Page moves per epoch";

/// How the tables name the report's fields: key, label with its unit. Keys not listed
/// are shown as they are.
const FIELD_LABELS: &[(&str, &str)] = &[
    ("seconds", "simulated time (s)"),
    ("ipc", "IPC (instructions per cycle)"),
    ("amat_ns", "AMAT (ns; demand memory accesses)"),
    ("fast_tier_fraction", "fast-tier share of demand accesses"),
    ("page_moves", "page moves"),
    ("moved_bytes", "bytes moved"),
    ("migrated_bytes", "bytes migrated"),
    ("merge_copies", "huge pages merged from copies"),
    ("merge_copied_bytes", "bytes copied to merge"),
    ("migration_to_footprint", "bytes moved per byte of footprint"),
    ("tlb_mpki", "TLB misses per 1000 instructions"),
    ("llc_mpki", "LLC misses per 1000 instructions"),
    ("energy_j", "memory energy (J)"),
    ("slow_tier_writes", "slow-tier writes (64 B)"),
    ("capacity_bytes", "capacity (bytes)"),
    ("demand_accesses", "demand accesses"),
    ("mechanism_bytes", "mechanism traffic (bytes)"),
    ("dynamic_energy_j", "dynamic energy (J)"),
    ("static_energy_j", "static energy (J)"),
];

/// The label of field `key` in a table: its words and unit, or the key itself.
fn label(key: &str) -> &str {
    FIELD_LABELS.iter().find(|(k, _)| *k == key).map_or(key, |(_, l)| l)
}

/// The summary figures of the sweep's table of runs.
const RUN_TABLE_METRICS: [&str; 6] = ["cycles", "ipc", "amat_ns", "fast_tier_fraction", "page_moves", "energy_j"];

/// The unit suffixes of the fields of a policy's records: a field whose name ends in
/// `_SUFFIX` is plotted with the other fields of that unit, in the unit named, times
/// the factor. Fields with none of them are counts.
const FIELD_UNITS: &[(&str, &str, f64)] = &[
    ("bytes", "bytes (MiB)", 1.0 / (1u64 << 20) as f64),
    ("mb", "MB", 1.0),
    ("pct", "percent", 1.0),
    ("percent", "percent", 1.0),
    ("fraction", "share", 1.0),
    ("share", "share", 1.0),
    ("rate", "rate", 1.0),
    ("s", "seconds", 1.0),
    ("ms", "milliseconds", 1.0),
    ("ns", "nanoseconds", 1.0),
    ("cycles", "cycles", 1.0),
    ("pages", "pages", 1.0),
    ("frames", "frames", 1.0),
    ("gbps", "GB/s", 1.0),
];

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
pub fn run_page(title: &str, report: &serde_json::Value) -> anyhow::Result<String> {
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
pub struct SweepSection<'a> {
    pub name: &'a str,
    /// The sweep's specification (TOML).
    pub spec: &'a str,
    pub runs: &'a [SweepRun],
    pub baseline: Option<&'a str>,
}

/// Returns the page of several sweeps (a store's, or a paper's reproduction): when
/// `figures` is given, first a table of figures — rows of (section, figure, the
/// paper's, ours, the verdict) — and `setting`, the text that says how the runs differ from the
/// paper's; then a section per sweep as on [`sweep_page`].
pub fn sweeps_page(title: &str, figures: Option<(&[[String; 5]], &str)>, sweeps: &[SweepSection]) -> Result<String> {
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

/// Text with the characters HTML gives a meaning escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// `v` rounded to `digits` significant digits, without trailing zeros.
fn significant(v: f64, digits: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v == 0.0 { "0".to_string() } else { v.to_string() };
    }
    let decimals = (digits - 1 - v.abs().log10().floor() as i32).max(0) as usize;
    let text = format!("{v:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A number short enough for an axis: three significant digits, with k, M or G from
/// 10 000 up and in scientific notation below 0.001.
fn short_number(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{}G", significant(v / 1e9, 3))
    } else if a >= 1e6 {
        format!("{}M", significant(v / 1e6, 3))
    } else if a >= 1e4 {
        format!("{}k", significant(v / 1e3, 3))
    } else if a > 0.0 && a < 1e-3 {
        format!("{v:.1e}")
    } else {
        significant(v, 3)
    }
}

/// A JSON value as a table cell: numbers to four significant digits (whole numbers in
/// full), text escaped.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => "–".to_string(),
        Value::Number(n) if n.is_u64() || n.is_i64() => grouped(&n.to_string()),
        Value::Number(n) => significant(n.as_f64().unwrap_or(f64::NAN), 4),
        Value::String(s) => escape(s),
        Value::Bool(b) => b.to_string(),
        other => escape(&other.to_string()),
    }
}

/// A whole number's digits in groups of three from 10 000 up, split by narrow
/// no-break spaces (96 000 000 100), as the tables show them.
fn grouped(digits: &str) -> String {
    let (sign, digits) = digits.strip_prefix('-').map_or(("", digits), |d| ("-", d));
    if digits.len() < 5 {
        return format!("{sign}{digits}");
    }
    let mut out = String::from(sign);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push('\u{202f}');
        }
        out.push(c);
    }
    out
}

/// The unit simulated times are shown in for a run of `end_s` seconds: its name and
/// the factor from seconds.
fn time_unit(end_s: f64) -> (&'static str, f64) {
    if end_s >= 1.0 {
        ("s", 1.0)
    } else if end_s >= 1e-3 {
        ("ms", 1e3)
    } else {
        ("µs", 1e6)
    }
}

/// `#rrggbb` of a colour.
fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// The range an axis shows for `values`: from zero (or the least value, when negative)
/// to a little above the largest; never empty.
fn axis_range(values: impl Iterator<Item = f64>) -> Range<f64> {
    let (lo, hi) = values.filter(|v| v.is_finite()).fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let span = hi - lo;
    if span <= 0.0 {
        lo..lo + 1.0
    } else {
        lo..hi + span * 0.05
    }
}

/// The x range of a panel of lines: from its first point to its last, so that a run
/// of a few epochs (points at 31, 62 and 93 ms) fills the plot rather than its right
/// two thirds; a single point sits in the middle of a range around it.
fn x_span(xs: impl Iterator<Item = f64>) -> Range<f64> {
    let (lo, hi) = xs.filter(|x| x.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)));
    if !lo.is_finite() {
        0.0..1.0
    } else if hi > lo {
        lo..hi
    } else {
        let half = if lo == 0.0 { 1.0 } else { lo.abs() * 0.5 };
        lo - half..lo + half
    }
}

/// One line of a panel of time series.
struct Line {
    name: String,
    colour: RGBColor,
    points: Vec<(f64, f64)>,
}

/// A panel of lines against a shared x axis.
struct LinePanel {
    title: String,
    x_desc: String,
    y_desc: String,
    /// The y axis's range when fixed (shares go from 0 to 1), else fitted to the data.
    y_range: Option<Range<f64>>,
    lines: Vec<Line>,
    caption: String,
}

/// A panel of bars: in each group one bar per colour.
struct BarPanel {
    title: String,
    y_desc: String,
    /// The name and colour of each bar of a group.
    colours: Vec<(String, RGBColor)>,
    /// The label of each group, one line per axis value.
    groups: Vec<Vec<String>>,
    /// The axis of each line of the groups' labels, written left of the first group.
    group_axes: Vec<String>,
    /// Per group, per colour: the bar's height, or None when no run gave one.
    values: Vec<Vec<Option<f64>>>,
    /// A horizontal line across the plot (1 for bars relative to a baseline).
    reference: Option<f64>,
    caption: String,
}

/// A drawn plot: its SVG text, the pixel box of its plotting area (left, top, right,
/// bottom) within the SVG, and the colours of the series it drew data with.
struct Plot {
    title: String,
    svg: String,
    area_px: [i32; 4],
    colours: Vec<RGBColor>,
}

impl Plot {
    /// The plot as a `<figure>` with `caption` below it.
    fn figure(&self, caption: &str) -> String {
        let colours: Vec<String> = self.colours.iter().map(|c| hex(*c)).collect();
        let [l, t, r, b] = self.area_px;
        // Inline SVG needs no namespace in HTML; without it the page names no URL.
        let svg = self.svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
        let caption = if caption.is_empty() { String::new() } else { format!("<figcaption>{}</figcaption>\n", escape(caption)) };
        let width_px = svg_width_px(&svg);
        format!(
            "<figure class=\"plot\" style=\"width:{width_px}px\" data-title=\"{}\" data-colours=\"{}\" data-plot-area=\"{l} {t} {r} {b}\">\n{svg}{caption}</figure>\n",
            escape(&self.title),
            colours.join(" ")
        )
    }
}

/// The width attribute of an SVG's root element, in pixels.
fn svg_width_px(svg: &str) -> u32 {
    svg.split_once("width=\"").and_then(|(_, rest)| rest.split_once('"')).and_then(|(w, _)| w.parse().ok()).unwrap_or(PLOT_WIDTH_PX)
}

/// Estimated width of `text` at the legend's font size, in pixels (the SVG's text is
/// laid out by the browser; this only spaces the entries).
fn text_width_px(text: &str) -> i32 {
    text.chars().count() as i32 * 7
}

/// Places legend entries in rows across `width_px`: the top-left corner of each, and
/// the legend's height (0 without entries).
fn legend_layout(names: &[&str], width_px: i32) -> (Vec<(i32, i32)>, i32) {
    let (mut x, mut y) = (10, 2);
    let mut places = Vec::with_capacity(names.len());
    for name in names {
        let w = 18 + text_width_px(name) + 16;
        if x > 10 && x + w > width_px - 10 {
            x = 10;
            y += LEGEND_ROW_PX;
        }
        places.push((x, y));
        x += w;
    }
    let height = if names.is_empty() { 0 } else { y + LEGEND_ROW_PX + 2 };
    (places, height)
}

/// The style of the text of legends and group labels, anchored at its top-left or its
/// top centre.
fn label_style(h: HPos) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", 15).into_font()).pos(Pos::new(h, VPos::Top))
}

/// Draws a legend of `entries` (name and colour) at `places` on `area`.
fn draw_legend(area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>, entries: &[(&str, RGBColor)], places: &[(i32, i32)]) -> Result<()> {
    for ((name, colour), &(x, y)) in entries.iter().zip(places) {
        area.draw(&Rectangle::new([(x, y + 3), (x + 12, y + 15)], colour.filled()))?;
        area.draw(&Text::new(name.to_string(), (x + 18, y + 2), label_style(HPos::Left)))?;
    }
    Ok(())
}

/// Draws a panel of lines.
fn draw_lines(panel: &LinePanel) -> Result<Plot> {
    let names: Vec<&str> = if panel.lines.len() > 1 { panel.lines.iter().map(|l| l.name.as_str()).collect() } else { Vec::new() };
    let (places, legend_px) = legend_layout(&names, PLOT_WIDTH_PX as i32);
    let size = (PLOT_WIDTH_PX, PLOT_HEIGHT_PX + legend_px as u32);
    let x_range = x_span(panel.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)));
    let y_range = panel.y_range.clone().unwrap_or_else(|| axis_range(panel.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1))));
    let mut svg = String::new();
    let area_px;
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE)?;
        let body = root.titled(&panel.title, ("sans-serif", 18))?;
        let (key, body) = body.split_vertically(legend_px);
        let entries: Vec<(&str, RGBColor)> = names.iter().zip(&panel.lines).map(|(n, l)| (*n, l.colour)).collect();
        draw_legend(&key, &entries, &places)?;
        let mut chart = ChartBuilder::on(&body)
            .margin_top(4)
            .margin_right(18)
            .margin_bottom(4)
            .x_label_area_size(44)
            .y_label_area_size(68)
            .build_cartesian_2d(x_range, y_range)?;
        chart
            .configure_mesh()
            .x_desc(panel.x_desc.as_str())
            .y_desc(panel.y_desc.as_str())
            .x_label_formatter(&|v| short_number(*v))
            .y_label_formatter(&|v| short_number(*v))
            .max_light_lines(1)
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()?;
        for l in &panel.lines {
            let points: Vec<(f64, f64)> = l.points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
            chart.draw_series(LineSeries::new(points.iter().copied(), l.colour.stroke_width(2)))?;
            if points.len() <= MARKED_POINTS_MAX {
                chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, l.colour.filled())))?;
            }
        }
        let (xs, ys) = chart.plotting_area().get_pixel_range();
        area_px = [xs.start, ys.start, xs.end, ys.end];
        root.present()?;
    }
    // A line counts as drawn when it has a point and no line drawn after it covers it.
    let drawn = |i: usize, l: &Line| l.points.iter().any(|p| p.0.is_finite() && p.1.is_finite()) && panel.lines[i + 1..].iter().all(|later| later.points != l.points);
    let colours = panel.lines.iter().enumerate().filter(|(i, l)| drawn(*i, l)).map(|(_, l)| l.colour).collect();
    Ok(Plot { title: panel.title.clone(), svg, area_px, colours })
}

/// Draws a panel of bars.
fn draw_bars(panel: &BarPanel) -> Result<Plot> {
    let (n_groups, n_colours) = (panel.groups.len().max(1), panel.colours.len().max(1));
    let width_px = PLOT_WIDTH_PX.max((n_groups * n_colours) as u32 * 18 + 140);
    let names: Vec<&str> = if panel.colours.len() > 1 { panel.colours.iter().map(|c| c.0.as_str()).collect() } else { Vec::new() };
    let (places, legend_px) = legend_layout(&names, width_px as i32);
    let label_lines = panel.groups.iter().map(Vec::len).max().unwrap_or(0) as u32;
    let label_px = 16 * label_lines + 8;
    // Room on the left for the y labels and for the group axes' names below them.
    let left_px = panel.group_axes.iter().map(|a| text_width_px(a) + 14).max().unwrap_or(0).max(68) as u32;
    let size = (width_px, PLOT_HEIGHT_PX + legend_px as u32 + label_px);
    let heights = panel.values.iter().flatten().flatten().copied().chain(panel.reference);
    let y_range = axis_range(heights);
    // Bars share 80 % of their group's width, each at most 30 % of it, centred.
    let bar_width = (0.8 / n_colours as f64).min(0.3);
    let first_bar = (1.0 - bar_width * n_colours as f64) / 2.0;
    let mut svg = String::new();
    let area_px;
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE)?;
        let body = root.titled(&panel.title, ("sans-serif", 18))?;
        let (key, body) = body.split_vertically(legend_px);
        let entries: Vec<(&str, RGBColor)> = names.iter().zip(&panel.colours).map(|(n, c)| (*n, c.1)).collect();
        draw_legend(&key, &entries, &places)?;
        let mut chart = ChartBuilder::on(&body)
            .margin_top(4)
            .margin_right(18)
            .margin_bottom(4)
            .x_label_area_size(label_px)
            .y_label_area_size(left_px)
            .build_cartesian_2d(0.0..n_groups as f64, y_range.clone())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(panel.y_desc.as_str())
            .y_label_formatter(&|v| short_number(*v))
            .max_light_lines(1)
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()?;
        for (c, (_, colour)) in panel.colours.iter().enumerate() {
            let bars = panel.values.iter().enumerate().filter_map(|(g, row)| {
                let v = row.get(c).copied().flatten()?;
                let left = g as f64 + first_bar + c as f64 * bar_width;
                Some(Rectangle::new([(left, 0.0f64.max(y_range.start)), (left + bar_width * 0.92, v)], colour.filled()))
            });
            chart.draw_series(bars)?;
        }
        if let Some(r) = panel.reference {
            chart.draw_series(LineSeries::new([(0.0, r), (n_groups as f64, r)], BLACK.stroke_width(1)))?;
        }
        for (g, lines) in panel.groups.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(g as f64 + 0.5, y_range.start));
            for (i, line) in lines.iter().enumerate() {
                root.draw(&Text::new(line.clone(), (x, y + 6 + 16 * i as i32), label_style(HPos::Center)))?;
            }
        }
        // The axis of each label line, in the label area left of the first group.
        let (x, y) = chart.backend_coord(&(0.0, y_range.start));
        for (i, axis) in panel.group_axes.iter().enumerate() {
            root.draw(&Text::new(format!("{axis}:"), (x - 4, y + 6 + 16 * i as i32), label_style(HPos::Right)))?;
        }
        let (xs, ys) = chart.plotting_area().get_pixel_range();
        area_px = [xs.start, ys.start, xs.end, ys.end];
        root.present()?;
    }
    // A colour counts as drawn when one of its bars is at least 2 % of the axis tall.
    let visible = |c: usize| panel.values.iter().any(|row| row.get(c).copied().flatten().is_some_and(|v| v >= 0.02 * y_range.end));
    let colours = panel.colours.iter().enumerate().filter(|(c, _)| visible(*c)).map(|(_, (_, colour))| *colour).collect();
    Ok(Plot { title: panel.title.clone(), svg, area_px, colours })
}

/// `<hN>text</hN>`.
fn heading(level: u8, text: &str) -> String {
    format!("<h{level}>{}</h{level}>\n", escape(text))
}

/// The figures of a list of drawn panels.
fn panels_html(figures: &[String]) -> String {
    format!("<div class=\"panels\">\n{}</div>\n", figures.concat())
}

/// Draws each panel of lines as a figure.
fn line_figures(panels: &[LinePanel]) -> Result<Vec<String>> {
    panels.iter().map(|p| Ok(draw_lines(p).with_context(|| format!("plot {}", p.title))?.figure(&p.caption))).collect()
}

/// The colour of a page's `i`th series.
fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The sections of one run's page, with headings at `level`.
fn run_body(report: &Value, level: u8) -> Result<String> {
    check_report(report)?;
    let mut out = facts_table(report);
    let freq_ghz = report["config"]["machine"]["freq_ghz"].as_f64().unwrap_or(1.0);
    let epochs = report["epochs"].as_array().map(Vec::as_slice).unwrap_or_default();
    let last_cycle = epochs.last().and_then(|e| e["end_cycle"].as_f64()).unwrap_or(0.0);
    let end_s = report["summary"]["seconds"].as_f64().unwrap_or(0.0).max(last_cycle / (freq_ghz * 1e9));
    let time = TimeAxis { freq_ghz, unit: time_unit(end_s) };
    out += &heading(level, "Time series per epoch");
    if epochs.is_empty() {
        out += "<p>The report has no epochs.</p>\n";
    } else {
        let (mut panels, note) = epoch_panels(report, epochs, &time);
        let moved = |l: &Line| l.points.iter().any(|p| p.1 != 0.0);
        let still = panels.iter().position(|p| p.title == PAGE_MOVES_TITLE && !p.lines.iter().any(moved));
        if let Some(i) = still {
            panels.remove(i);
        }
        out += &panels_html(&line_figures(&panels)?);
        if still.is_some() {
            let why = report["never_acted"].as_str().map_or_else(|| format!("policy {} moved no page in any epoch", policy_name(report)), str::to_string);
            let _ = writeln!(out, "<p>No plot of page moves per epoch: {}.</p>", escape(&why));
        }
        if let Some(n) = note {
            let _ = writeln!(out, "<p>{}</p>", escape(&n));
        }
    }
    let policy_panels = policy_panels(report, &time);
    if !policy_panels.is_empty() {
        out += &heading(level, &format!("Records of the policy ({})", policy_name(report)));
        out += &panels_html(&line_figures(&policy_panels)?);
    }
    out += &heading(level, "Summary");
    out += &key_value_table(&report["summary"]);
    out += &tiers_table(&report["tiers"]);
    if let Some(notes) = report["notes"].as_array().filter(|n| !n.is_empty()) {
        out += &heading(level, "Notes");
        out += "<ul>\n";
        for n in notes {
            let _ = writeln!(out, "<li>{}</li>", cell(n));
        }
        out += "</ul>\n";
    }
    out += &heading(level, "Configuration");
    let config = serde_json::to_string_pretty(&report["config"]).context("the configuration")?;
    let _ = write!(out, "<details><summary>the configuration as run</summary>\n<pre>{}</pre></details>\n", escape(&config));
    Ok(out)
}

/// Simulated time on an x axis: the core frequency that turns cycles into seconds,
/// and the unit shown with its factor from seconds.
struct TimeAxis {
    freq_ghz: f64,
    unit: (&'static str, f64),
}

impl TimeAxis {
    /// The x position of cycle `cycles`.
    fn x_of_cycles(&self, cycles: f64) -> f64 {
        cycles / (self.freq_ghz * 1e9) * self.unit.1
    }

    /// The x position of second `s`.
    fn x_of_seconds(&self, s: f64) -> f64 {
        s * self.unit.1
    }

    /// The axis's description.
    fn desc(&self) -> String {
        format!("simulated time ({})", self.unit.0)
    }
}

/// The table of what the run was: policy, workloads, size and length, and whether it
/// completed.
fn facts_table(report: &Value) -> String {
    let mut rows: Vec<(&str, String)> = Vec::new();
    let preset = report["preset"].as_str().map(|p| format!(" (preset {p})")).unwrap_or_default();
    rows.push(("policy", format!("{}{preset}", policy_name(report))));
    rows.push(("workloads", workloads_text(report)));
    if let Some(b) = report["footprint_bytes"].as_f64() {
        rows.push(("footprint", format!("{} MiB", significant(b / (1u64 << 20) as f64, 4))));
    }
    rows.push(("references", cell(&report["summary"]["references"])));
    rows.push(("simulated time", format!("{} s", cell(&report["summary"]["seconds"]))));
    rows.push(("epochs", report["epochs"].as_array().map_or(0, Vec::len).to_string()));
    if let Some(ran) = report["sampling"]["ran"].as_str() {
        rows.push(("mode", format!("{ran} (estimated: {})", report["sampling"]["estimated"].as_str().unwrap_or("nothing"))));
    }
    if let Some(p) = report["slowdown"]["percent"].as_f64() {
        rows.push(("slowdown", format!("{} % against {}", significant(p, 4), report["slowdown"]["reference_policy"].as_str().unwrap_or("?"))));
    }
    if let Some(v) = report["sim"]["version"].as_str() {
        rows.push(("tiersim", v.to_string()));
    }
    let mut out = String::from("<table>\n");
    for (k, v) in rows {
        let _ = writeln!(out, "<tr><th>{k}</th><td>{}</td></tr>", escape(&v));
    }
    if report["complete"] == Value::Bool(false) {
        out += "<tr><th>complete</th><td class=\"warn\">no: the run was stopped before its end; every figure covers the references simulated</td></tr>\n";
    }
    out + "</table>\n"
}

/// A two-column table of an object's fields.
fn key_value_table(v: &Value) -> String {
    let mut out = String::from("<table>\n");
    for (k, v) in v.as_object().into_iter().flatten() {
        let _ = writeln!(out, "<tr><th>{}</th><td class=\"n\">{}</td></tr>", escape(label(k)), cell(v));
    }
    out + "</table>\n"
}

/// The table of the run's tiers: capacity, demand accesses and their AMAT, traffic
/// and energy.
fn tiers_table(tiers: &Value) -> String {
    let Some(tiers) = tiers.as_array().filter(|t| !t.is_empty()) else { return String::new() };
    let columns = ["capacity_bytes", "demand_accesses", "amat_ns", "reads", "writes", "mechanism_bytes", "dynamic_energy_j", "static_energy_j"];
    let mut out = String::from("<table>\n<tr><th>tier</th>");
    for c in columns {
        let _ = write!(out, "<th>{}</th>", escape(label(c)));
    }
    out += "</tr>\n";
    for t in tiers {
        let _ = write!(out, "<tr><td>{}</td>", cell(&t["name"]));
        for c in columns {
            let _ = write!(out, "<td class=\"n\">{}</td>", cell(&t[c]));
        }
        out += "</tr>\n";
    }
    out + "</table>\n"
}

/// The panels of the per-epoch series: fast-tier shares, page moves, IPC, and each
/// tier's bandwidth and AMAT; and a note when the report has no per-tier figures.
fn epoch_panels(report: &Value, epochs: &[Value], time: &TimeAxis) -> (Vec<LinePanel>, Option<String>) {
    let xs: Vec<f64> = epochs.iter().map(|e| time.x_of_cycles(e["end_cycle"].as_f64().unwrap_or(f64::NAN))).collect();
    let series = |get: &dyn Fn(&Value) -> Option<f64>| -> Vec<(f64, f64)> {
        xs.iter().zip(epochs).filter_map(|(&x, e)| Some((x, get(e)?))).collect()
    };
    let line = |name: &str, i: usize, points| Line { name: name.to_string(), colour: colour(i), points };
    let mut panels = vec![
        LinePanel {
            title: "Fast-tier share".into(),
            x_desc: time.desc(),
            y_desc: "share".into(),
            y_range: Some(0.0..1.0),
            lines: vec![
                line("of demand accesses", 0, series(&|e| e["fast_tier_fraction"].as_f64())),
                line("of data pages resident (epoch end)", 1, series(&|e| e["fast_resident_fraction"].as_f64())),
            ],
            caption: "Share of the epoch's demand memory accesses served by the fast tier, and of the data pages that live there at the epoch's end.".into(),
        },
        LinePanel {
            title: PAGE_MOVES_TITLE.into(),
            x_desc: time.desc(),
            y_desc: "pages".into(),
            y_range: None,
            lines: vec![line("page moves", 0, series(&|e| e["page_moves"].as_f64()))],
            caption: "Pages migrated (a swap counts two) and huge pages merged from copied base pages during the epoch.".into(),
        },
        LinePanel {
            title: "Instructions per cycle".into(),
            x_desc: time.desc(),
            y_desc: "IPC".into(),
            y_range: None,
            lines: vec![line("IPC", 0, series(&|e| e["ipc"].as_f64()))],
            caption: "Instructions of all cores per cycle of the epoch.".into(),
        },
    ];
    let n_tiers = epochs.iter().filter_map(|e| e["tiers"].as_array().map(Vec::len)).max().unwrap_or(0);
    if n_tiers == 0 {
        return (panels, Some("This report has no per-tier figures per epoch (written by a tiersim before they were added), so no bandwidth or AMAT panels.".into()));
    }
    let tier_name = |t: usize| report["tiers"][t]["name"].as_str().map_or_else(|| format!("tier {t}"), str::to_string);
    let per_tier = |key: &'static str, skip_idle: bool| -> Vec<Line> {
        (0..n_tiers)
            .map(|t| {
                let points = series(&|e| {
                    let r = &e["tiers"][t];
                    // An epoch without demand accesses has no AMAT, not an AMAT of 0.
                    if skip_idle && r["demand_accesses"].as_u64() == Some(0) {
                        return None;
                    }
                    r[key].as_f64()
                });
                line(&tier_name(t), t, points)
            })
            .collect()
    };
    panels.push(LinePanel {
        title: "Bandwidth per tier".into(),
        x_desc: time.desc(),
        y_desc: "GB/s".into(),
        y_range: None,
        lines: per_tier("bandwidth_gbps", false),
        caption: "Bytes each tier moved during the epoch, demand and mechanism traffic together, per second of the epoch.".into(),
    });
    panels.push(LinePanel {
        title: "Average memory access time per tier".into(),
        x_desc: time.desc(),
        y_desc: "ns".into(),
        y_range: None,
        lines: per_tier("amat_ns", true),
        caption: "Average latency of the epoch's demand accesses to each tier, queueing included (no point where a tier served none).".into(),
    });
    (panels, None)
}

/// The arrays of two or more records (objects) in `v`, a policy's report, with their
/// paths (e.g. `periods`, `tiering.rounds`).
fn record_arrays<'a>(v: &'a Value, path: &str, out: &mut Vec<(String, &'a [Value])>) {
    match v {
        Value::Object(fields) => {
            for (k, child) in fields {
                let child_path = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                record_arrays(child, &child_path, out);
            }
        }
        Value::Array(items) if items.len() > 1 && items.iter().all(Value::is_object) => out.push((path.to_string(), items)),
        _ => {}
    }
}

/// A numeric field of a policy's records: its key, and the entry when the field holds
/// a list of numbers (shown as `key[entry]`).
#[derive(Clone, Debug, PartialEq)]
struct Field {
    key: String,
    entry: Option<usize>,
}

impl Field {
    fn name(&self) -> String {
        match self.entry {
            None => self.key.clone(),
            Some(i) => format!("{}[{i}]", self.key),
        }
    }

    fn value(&self, record: &Value) -> Option<f64> {
        match self.entry {
            None => record[&self.key].as_f64(),
            Some(i) => record[&self.key][i].as_f64(),
        }
    }

    /// The unit group of the field, from its name's suffix: its label and the factor
    /// to it.
    fn unit(&self) -> (&'static str, f64) {
        let suffix = self.key.rsplit_once('_').map_or("", |(_, s)| s);
        FIELD_UNITS.iter().find(|u| u.0 == suffix).map_or(("count", 1.0), |u| (u.1, u.2))
    }
}

/// The numeric fields of `records`, in the order the records first list them.
fn record_fields(records: &[Value]) -> Vec<Field> {
    let mut fields: Vec<Field> = Vec::new();
    let mut add = |f: Field| {
        if !fields.contains(&f) {
            fields.push(f);
        }
    };
    for (k, v) in records.iter().filter_map(Value::as_object).flatten() {
        match v {
            Value::Number(_) => add(Field { key: k.clone(), entry: None }),
            Value::Array(items) if items.iter().all(Value::is_number) => {
                for i in 0..items.len() {
                    add(Field { key: k.clone(), entry: Some(i) });
                }
            }
            _ => {}
        }
    }
    fields
}

/// Whether a field only numbers the records (its value is the record's index, from 0
/// or from 1): not worth a line.
fn numbers_the_records(field: &Field, records: &[Value]) -> bool {
    records.len() > 1
        && [0.0, 1.0].iter().any(|start| records.iter().enumerate().all(|(i, r)| field.value(r) == Some(i as f64 + start)))
}

/// The panels of the policy's own records: for every array of records in its report,
/// one panel per unit of its numeric fields (against the records' `end_s`, or
/// `end_cycle`, or their index), and for Thermostat's periods the measured slow-memory
/// access rate against its target.
fn policy_panels(report: &Value, time: &TimeAxis) -> Vec<LinePanel> {
    let mut arrays = Vec::new();
    record_arrays(&report["policy_report"], "", &mut arrays);
    let mut panels = Vec::new();
    for (path, records) in arrays {
        let mut fields = record_fields(records);
        let all_have = |key: &str| records.iter().all(|r| r[key].is_number());
        let (x_key, x_desc, xs): (Option<&str>, String, Vec<f64>) = if all_have("end_s") {
            (Some("end_s"), time.desc(), records.iter().map(|r| time.x_of_seconds(r["end_s"].as_f64().unwrap_or(f64::NAN))).collect())
        } else if all_have("end_cycle") {
            (Some("end_cycle"), time.desc(), records.iter().map(|r| time.x_of_cycles(r["end_cycle"].as_f64().unwrap_or(f64::NAN))).collect())
        } else {
            (None, "record".into(), (0..records.len()).map(|i| i as f64).collect())
        };
        fields.retain(|f| Some(f.key.as_str()) != x_key && !numbers_the_records(f, records));
        let series = |f: &Field, factor: f64| -> Vec<(f64, f64)> { xs.iter().zip(records).filter_map(|(&x, r)| Some((x, f.value(r)? * factor))).collect() };
        let at = match x_key {
            Some(k) => format!("at each record's {k}"),
            None => "by index".to_string(),
        };
        let has = |key: &str| fields.iter().any(|f| f.key == key && f.entry.is_none());
        if policy_name(report) == "thermostat" && path == "periods" && has("slow_rate") && has("target_rate") {
            let lines = [("measured (poison faults)", "slow_rate"), ("target", "target_rate")]
                .iter()
                .enumerate()
                .map(|(i, (name, key))| Line { name: name.to_string(), colour: colour(i), points: series(&Field { key: key.to_string(), entry: None }, 1.0) })
                .collect();
            panels.push(LinePanel {
                title: "Thermostat: slow-memory access rate against its target".into(),
                x_desc: x_desc.clone(),
                y_desc: "accesses per second".into(),
                y_range: None,
                lines,
                caption: "Per period: the slow-memory accesses per second measured by poison faults, and the target x / (100 · t_s) the period's classification aimed at (Thermostat §3.4).".into(),
            });
            fields.retain(|f| f.key != "slow_rate" && f.key != "target_rate");
        }
        let mut units: Vec<&str> = Vec::new();
        for f in &fields {
            if !units.contains(&f.unit().0) {
                units.push(f.unit().0);
            }
        }
        for unit in units {
            let lines = fields
                .iter()
                .filter(|f| f.unit().0 == unit)
                .enumerate()
                .map(|(i, f)| Line { name: f.name(), colour: colour(i), points: series(f, f.unit().1) })
                .collect();
            panels.push(LinePanel {
                title: format!("{path}: {unit}"),
                x_desc: x_desc.clone(),
                y_desc: unit.to_string(),
                y_range: None,
                lines,
                caption: format!("The fields of the policy's `{path}` records in {unit}, {at}."),
            });
        }
    }
    panels
}

/// The report of a run that finished; None for a failed one.
fn finished(run: &SweepRun) -> Option<&Value> {
    run.report.as_ref().filter(|_| run.error.is_none())
}

/// The run's value on `axis` ("" when it has none).
fn axis_value<'a>(run: &'a SweepRun, axis: &str) -> &'a str {
    run.axes.iter().find(|(a, _)| a == axis).map_or("", |(_, v)| v.as_str())
}

/// The run's axis values, as `axis=value` pairs, to name it in messages.
fn axes_text(run: &SweepRun) -> String {
    let pairs: Vec<String> = run.axes.iter().map(|(a, v)| format!("{a}={v}")).collect();
    pairs.join(", ")
}

/// Values in the order they first appear, each once.
fn distinct<T: PartialEq>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The value of `run` that colours its bar: its value on `axis`, followed, for a
/// policy, by its values on the policy's own parameter axes that apply to it
/// (`thermostat tolerable_slowdown_pct=3`).
fn colour_of(run: &SweepRun, axis: &str, variant_axes: &[String]) -> String {
    let mut out = axis_value(run, axis).to_string();
    for a in variant_axes {
        let v = axis_value(run, a);
        if v != NOT_APPLICABLE {
            let _ = write!(out, " {}={v}", a.rsplit('.').next().unwrap_or(a));
        }
    }
    out
}

/// How a sweep's runs fall into bars.
#[derive(Debug)]
struct Layout {
    /// Every axis, in the sweep's order.
    axes: Vec<String>,
    /// The axis whose values colour the bars: `policy` when the sweep has one, else
    /// its first axis other than `seed` (None when it has no other).
    colour_axis: Option<String>,
    /// The `policy.<name>.…` axes of a sweep with a `policy` axis: their values name
    /// variants of the policy, which get colours of their own.
    variant_axes: Vec<String>,
    /// The axes but the colour axis and `seed`: bars of runs with the same values on
    /// them stand together in a group.
    group_axes: Vec<String>,
    /// Whether the sweep has a `seed` axis, which bars average over.
    seeded: bool,
    /// The colour axis's values and the groups' values on the group axes, in the order
    /// the runs first have them.
    colours: Vec<String>,
    groups: Vec<Vec<String>>,
    /// The colour (a policy) bars are normalised to, by index into `colours`.
    baseline: Option<usize>,
}

impl Layout {
    fn new(runs: &[SweepRun], baseline: Option<&str>) -> Result<Layout> {
        let axes: Vec<String> = distinct(runs.iter().flat_map(|r| r.axes.iter().map(|(a, _)| a.clone())));
        let seeded = axes.iter().any(|a| a == "seed");
        let has_policy = axes.iter().any(|a| a == "policy");
        let colour_axis = if has_policy { Some("policy".to_string()) } else { axes.iter().find(|a| *a != "seed").cloned() };
        // A policy's own parameters (`policy.<name>.…` axes) make variants of the
        // policy: they colour bars with it rather than group them.
        let variant_axes: Vec<String> = axes.iter().filter(|a| has_policy && a.starts_with("policy.")).cloned().collect();
        let group_axes: Vec<String> =
            axes.iter().filter(|a| Some(*a) != colour_axis.as_ref() && *a != "seed" && !variant_axes.contains(a)).cloned().collect();
        let colours = match &colour_axis {
            Some(axis) => distinct(runs.iter().map(|r| colour_of(r, axis, &variant_axes))),
            None => vec![String::new()],
        };
        let groups = distinct(runs.iter().map(|r| group_axes.iter().map(|a| axis_value(r, a).to_string()).collect::<Vec<_>>()));
        let baseline = match (baseline, has_policy) {
            (Some(b), true) => Some(colours.iter().position(|c| c == b || c.starts_with(&format!("{b} "))).ok_or_else(|| anyhow!("baseline {b}: no run of that policy (the sweep's policies: {})", colours.join(", ")))?),
            (Some(b), false) => bail!("baseline {b}: the sweep has no `policy` axis"),
            (None, true) => Some(0),
            (None, false) => None,
        };
        Ok(Layout { axes, colour_axis, variant_axes, group_axes, seeded, colours, groups, baseline })
    }

    /// The group and colour of a run's bar.
    fn place(&self, run: &SweepRun) -> (usize, usize) {
        let key: Vec<&str> = self.group_axes.iter().map(|a| axis_value(run, a)).collect();
        let g = self.groups.iter().position(|k| k.iter().map(String::as_str).eq(key.iter().copied())).unwrap_or(0);
        let c = self.colour_axis.as_ref().map_or(0, |a| self.colours.iter().position(|v| *v == colour_of(run, a, &self.variant_axes)).unwrap_or(0));
        (g, c)
    }

    /// The bars of the summary figure `metric`: per group, per colour, the figure of
    /// the finished runs there — relative to the baseline's run with the same values on
    /// the other axes (seed included) and averaged over seeds by the geometric mean,
    /// or raw and averaged arithmetically when there is no baseline or the baseline's
    /// figure is not positive in every run — and whether the bars are normalised.
    fn bars(&self, runs: &[SweepRun], metric: &str) -> (Vec<Vec<Option<f64>>>, bool) {
        let mut samples: Vec<Vec<Vec<(&str, f64)>>> = vec![vec![Vec::new(); self.colours.len()]; self.groups.len()];
        for run in runs {
            if let Some(v) = finished(run).and_then(|r| r["summary"][metric].as_f64()) {
                let (g, c) = self.place(run);
                samples[g][c].push((axis_value(run, "seed"), v));
            }
        }
        let normalised = self.baseline.is_some_and(|b| samples.iter().all(|row| row[b].iter().all(|s| s.1 > 0.0 && s.1.is_finite())));
        let values = samples
            .iter()
            .map(|row| {
                row.iter()
                    .map(|cell| {
                        if normalised {
                            let base = &row[self.baseline.unwrap_or(0)];
                            let ratios: Vec<f64> = cell.iter().filter_map(|(seed, v)| base.iter().find(|b| b.0 == *seed).map(|b| v / b.1)).collect();
                            geometric_mean(&ratios)
                        } else {
                            (!cell.is_empty()).then(|| cell.iter().map(|s| s.1).sum::<f64>() / cell.len() as f64)
                        }
                    })
                    .collect()
            })
            .collect();
        (values, normalised)
    }
}

/// The sections of a sweep's page, with headings at `level`.
fn sweep_body(runs: &[SweepRun], baseline: Option<&str>, level: u8) -> Result<String> {
    if runs.is_empty() {
        bail!("the sweep has no runs");
    }
    for run in runs {
        match (&run.error, &run.report) {
            (None, None) => bail!("run {}: neither an error nor a report", axes_text(run)),
            (None, Some(r)) => check_report(r).with_context(|| format!("run {}", axes_text(run)))?,
            (Some(_), _) => {}
        }
    }
    let layout = Layout::new(runs, baseline)?;
    let failed: Vec<&SweepRun> = runs.iter().filter(|r| finished(r).is_none()).collect();
    let base_name = layout.baseline.map(|b| layout.colours[b].as_str());
    let mut out = String::from("<ul>\n");
    let _ = writeln!(
        out,
        "<li>{} runs over the axes {}; {} failed{}.</li>",
        runs.len(),
        escape(&layout.axes.join(", ")),
        failed.len(),
        if failed.is_empty() { "" } else { " (listed below, left out of the bars)" }
    );
    match (base_name, &layout.colour_axis) {
        (Some(b), _) => {
            let others: Vec<&str> = layout.group_axes.iter().map(String::as_str).chain(layout.seeded.then_some("seed")).collect();
            let same = if others.is_empty() { String::new() } else { format!(" with the same {}", others.join(", ")) };
            let _ = writeln!(out, "<li>Bars are relative to the run of {}{same} (the line at 1), one colour per policy{}.</li>", escape(b), escape(&grouped_by(&layout)));
        }
        (None, Some(axis)) => {
            let _ = writeln!(out, "<li>No <code>policy</code> axis: bars show raw values, one colour per {}{}.</li>", escape(axis), escape(&grouped_by(&layout)));
        }
        (None, None) => out += "<li>Bars show raw values.</li>\n",
    }
    if layout.seeded {
        out += "<li>Seeds: each bar averages the runs of every seed — the geometric mean of their ratios to the baseline's run of the same seed (the arithmetic mean of raw values where a panel is not normalised).</li>\n";
    }
    out += "</ul>\n";
    out += &heading(level, "Summary figures");
    let mut figures = Vec::new();
    for (metric, title, unit) in SWEEP_METRICS {
        let (values, normalised) = layout.bars(runs, metric);
        let mut caption = match (normalised, base_name) {
            (true, Some(b)) => format!("{metric}, relative to {b}'s run"),
            (false, Some(b)) => format!("{metric}, raw: {b}'s is 0 in some run, so the bars are not normalised"),
            (_, None) => format!("{metric}, raw"),
        };
        if layout.seeded {
            caption += if normalised { "; geometric mean over seeds" } else { "; mean over seeds" };
        }
        caption += ".";
        let present: Vec<f64> = values.iter().flatten().flatten().copied().collect();
        if !present.is_empty() && present.iter().all(|v| *v == 0.0) {
            caption += " Every bar is 0.";
        }
        let missing = missing_bars(&layout, runs, &values);
        if !missing.is_empty() {
            let _ = write!(caption, " No bar for {}: its runs failed, or the baseline's did.", missing.join("; "));
        }
        let panel = BarPanel {
            title: title.to_string(),
            y_desc: if normalised { format!("relative to {}", base_name.unwrap_or("?")) } else { unit.to_string() },
            colours: layout.colours.iter().enumerate().map(|(i, c)| (c.clone(), colour(i))).collect(),
            groups: layout.groups.clone(),
            group_axes: layout.group_axes.clone(),
            values,
            reference: normalised.then_some(1.0),
            caption,
        };
        figures.push(draw_bars(&panel).with_context(|| format!("plot {title}"))?.figure(&panel.caption));
    }
    out += &panels_html(&figures);
    out += &loaded_latency_curves(runs, level)?;
    if !failed.is_empty() {
        out += &heading(level, "Failed runs");
        out += &axes_table_head(&layout, &["error"]);
        for run in &failed {
            let error = run.error.as_deref().unwrap_or("no report");
            let _ = writeln!(out, "<tr>{}<td>{}</td></tr>", axes_cells(&layout, run), escape(error));
        }
        out += "</table>\n";
    }
    let idle: Vec<(&SweepRun, &str)> = runs.iter().filter_map(|r| Some((r, finished(r)?["never_acted"].as_str()?))).collect();
    if !idle.is_empty() {
        out += &heading(level, "Runs in which the policy never acted");
        let _ = writeln!(out, "<p>Their figures are those of the initial placement, not of the policy: the runs are too short for its first period (or it found nothing to move).</p>");
        out += &axes_table_head(&layout, &["why"]);
        for (run, note) in &idle {
            let _ = writeln!(out, "<tr>{}<td>{}</td></tr>", axes_cells(&layout, run), escape(note));
        }
        out += "</table>\n";
    }
    out += &heading(level, "Runs");
    let mut columns = vec!["status"];
    columns.extend(RUN_TABLE_METRICS);
    out += &axes_table_head(&layout, &columns);
    for run in runs {
        let status = match finished(run) {
            None => "<td class=\"warn\">failed</td>",
            Some(r) if r["complete"] == Value::Bool(false) => "<td class=\"warn\">incomplete</td>",
            Some(r) if r["never_acted"].is_string() => "<td class=\"warn\">finished; the policy never acted</td>",
            Some(_) => "<td>finished</td>",
        };
        let _ = write!(out, "<tr>{}{status}", axes_cells(&layout, run));
        for m in RUN_TABLE_METRICS {
            let v = finished(run).map_or(Value::Null, |r| r["summary"][m].clone());
            let _ = write!(out, "<td class=\"n\">{}</td>", cell(&v));
        }
        out += "</tr>\n";
    }
    out += "</table>\n";
    Ok(out)
}

/// The injection-delay axis of a `loaded-latency` sweep: the points of one curve.
const DELAY_AXIS: &str = "workload.loaded_latency.delay_instrs";

/// The latency-against-bandwidth curves of the `loaded-latency` runs of a sweep (their
/// reports' `loaded_latency`), as Intel's Memory Latency Checker draws a machine: one
/// panel per policy (the placement, hence the tier probed), one line per value of the
/// other axes, its points the runs along `workload.loaded_latency.delay_instrs`.
/// Nothing when no run has the figures.
fn loaded_latency_curves(runs: &[SweepRun], level: u8) -> Result<String> {
    // Each run with its policy and its figures.
    let measured: Vec<(&SweepRun, &str, &Value)> = runs
        .iter()
        .filter_map(|r| {
            let report = finished(r)?;
            Some((r, policy_name(report), report.get("loaded_latency")?))
        })
        .collect();
    if measured.is_empty() {
        return Ok(String::new());
    }
    let policies = distinct(measured.iter().map(|(_, p, _)| *p));
    let mut panels = Vec::new();
    for policy in policies {
        let mine: Vec<(&SweepRun, &Value)> = measured.iter().filter(|(_, p, _)| *p == policy).map(|(r, _, l)| (*r, *l)).collect();
        // A line per value of the axes other than the policy and the delay.
        let line_of = |r: &SweepRun| r.axes.iter().filter(|(a, _)| a != "policy" && a != DELAY_AXIS).map(|(a, v)| format!("{}={v}", a.rsplit('.').next().unwrap_or(a))).collect::<Vec<_>>().join(" ");
        let names = distinct(mine.iter().map(|(r, _)| line_of(r)));
        let lines = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let mut points: Vec<(f64, f64, f64)> = mine
                    .iter()
                    .filter(|(r, _)| &line_of(r) == name)
                    .map(|(r, l)| {
                        let delay = axis_value(r, DELAY_AXIS).parse::<f64>().unwrap_or(0.0);
                        let gbps = l["tier_gbps"].as_array().map_or(0.0, |t| t.iter().filter_map(Value::as_f64).sum());
                        (delay, gbps, l["probe_latency_ns"].as_f64().unwrap_or(f64::NAN))
                    })
                    .collect();
                // From the longest delay (least traffic) to none.
                points.sort_by(|a, b| b.0.total_cmp(&a.0));
                Line { name: if name.is_empty() { policy.to_string() } else { name.clone() }, colour: colour(i), points: points.iter().map(|p| (p.1, p.2)).collect() }
            })
            .collect();
        panels.push(LinePanel {
            title: format!("Loaded latency, {policy}"),
            x_desc: "bandwidth of all tiers (GB/s)".into(),
            y_desc: "probe's load latency (ns)".into(),
            y_range: None,
            lines,
            caption: format!("Core 0's average load latency against the bandwidth the tiers served, under {policy}; each point a run, from the longest injection delay to none."),
        });
    }
    let mut out = heading(level, "Loaded latency");
    out += &panels_html(&line_figures(&panels)?);
    Ok(out)
}

/// What the bars are grouped by, as the end of a sentence (nothing with one group).
fn grouped_by(layout: &Layout) -> String {
    if layout.group_axes.is_empty() {
        String::new()
    } else {
        format!(", grouped by {}", layout.group_axes.join(", "))
    }
}

/// The bars a run should have given but no finished run did: colour and group, as
/// text.
fn missing_bars(layout: &Layout, runs: &[SweepRun], values: &[Vec<Option<f64>>]) -> Vec<String> {
    let places = distinct(runs.iter().map(|r| layout.place(r)));
    places
        .into_iter()
        .filter(|&(g, c)| values[g][c].is_none())
        .map(|(g, c)| {
            let group = layout.groups[g].join(", ");
            match (layout.colours[c].as_str(), group.as_str()) {
                ("", "") => "the only group".to_string(),
                (colour, "") => colour.to_string(),
                ("", group) => group.to_string(),
                (colour, group) => format!("{colour} at {group}"),
            }
        })
        .collect()
}

/// The head of a table of runs: a column per axis, then `columns`.
fn axes_table_head(layout: &Layout, columns: &[&str]) -> String {
    let mut out = String::from("<table>\n<tr>");
    for a in layout.axes.iter().map(String::as_str).chain(columns.iter().map(|c| label(c))) {
        let _ = write!(out, "<th>{}</th>", escape(a));
    }
    out + "</tr>\n"
}

/// A run's cells under the axis columns.
fn axes_cells(layout: &Layout, run: &SweepRun) -> String {
    layout.axes.iter().map(|a| format!("<td>{}</td>", escape(axis_value(run, a)))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A minimal run report: two epochs of two tiers, `summary` as given.
    fn report(policy: &str, summary: Value) -> Value {
        let epoch = |end_cycle: u64, amat_ns: f64| {
            json!({"end_cycle": end_cycle, "ipc": 0.5, "fast_tier_fraction": 0.7, "fast_resident_fraction": 0.4, "page_moves": 3,
                "tiers": [{"bandwidth_gbps": 1.5, "demand_accesses": 10, "amat_ns": amat_ns}, {"bandwidth_gbps": 0.5, "demand_accesses": 0, "amat_ns": 0.0}]})
        };
        json!({"policy": policy, "summary": summary, "epochs": [epoch(2_000_000, 20.0), epoch(4_000_000, 22.0)],
            "config": {"machine": {"freq_ghz": 2.0}}, "tiers": [{"name": "DRAM"}, {"name": "PCM"}], "notes": ["a <note>"]})
    }

    fn run(axes: &[(&str, &str)], summary: Value) -> SweepRun {
        let policy = axes.iter().find(|a| a.0 == "policy").map_or("p", |a| a.1);
        SweepRun { axes: axes.iter().map(|(a, v)| (a.to_string(), v.to_string())).collect(), error: None, report: Some(report(policy, summary)) }
    }

    fn failed(axes: &[(&str, &str)]) -> SweepRun {
        SweepRun { error: Some("out of memory".into()), report: None, ..run(axes, json!({})) }
    }

    #[test]
    fn loaded_latency_sweeps_get_latency_against_bandwidth_curves() {
        let ll = |policy: &str, rw: &str, delay: &str, gbps: f64, ns: f64| {
            let mut r = run(&[("policy", policy), ("workload.loaded_latency.rw", rw), (DELAY_AXIS, delay)], json!({}));
            r.report.as_mut().expect("finished")["loaded_latency"] = json!({"probe_latency_ns": ns, "tier_gbps": [gbps, 0.1], "tier_read_gbps": [gbps, 0.1]});
            r
        };
        let runs = [
            ll("all-fast", "read", "0", 8.0, 100.0),
            ll("all-fast", "read", "800", 5.0, 45.0),
            ll("all-fast", "1:1", "800", 5.0, 46.0),
            ll("all-fast", "1:1", "0", 8.5, 110.0),
            ll("all-slow", "read", "800", 4.0, 86.0),
            ll("all-slow", "read", "0", 25.0, 300.0),
        ];
        let html = loaded_latency_curves(&runs, 3).unwrap();
        assert!(html.starts_with("<h3"), "{html}");
        // A panel per policy; all-fast's has a line per mix.
        assert_eq!(html.matches("<figure").count(), 2);
        assert!(html.contains("data-title=\"Loaded latency, all-fast\""));
        let fast = &html[..html.find("Loaded latency, all-slow").unwrap()];
        assert!(fast.contains("rw=read") && fast.contains("rw=1:1"));
        // Runs without the figures get no section.
        assert!(loaded_latency_curves(&[run(&[("policy", "tpp")], json!({}))], 3).unwrap().is_empty());
    }

    #[test]
    fn numbers_are_short_on_axes_and_in_tables() {
        assert_eq!(significant(0.0123456, 3), "0.0123");
        assert_eq!(significant(1234.6, 4), "1235");
        assert_eq!(significant(2.5, 4), "2.5");
        assert_eq!(short_number(0.0), "0");
        assert_eq!(short_number(0.3), "0.3");
        assert_eq!(short_number(1500.0), "1500");
        assert_eq!(short_number(25_000.0), "25k");
        assert_eq!(short_number(3_250_000.0), "3.25M");
        assert_eq!(short_number(0.00025), "2.5e-4");
        assert_eq!(cell(&json!(441109323u64)), "441\u{202f}109\u{202f}323");
        assert_eq!(cell(&json!(-12345)), "-12\u{202f}345");
        assert_eq!(cell(&json!(2048)), "2048");
        assert_eq!(label("amat_ns"), "AMAT (ns; demand memory accesses)");
        assert_eq!(label("some_policy_key"), "some_policy_key");
        assert_eq!(x_span([0.031, 0.062, 0.093].into_iter()), 0.031..0.093);
        assert_eq!(x_span([2.0].into_iter()), 1.0..3.0);
        assert_eq!(x_span(std::iter::empty()), 0.0..1.0);
        assert_eq!(cell(&json!(0.15626)), "0.1563");
        assert_eq!(time_unit(0.0135), ("ms", 1e3));
    }

    #[test]
    fn bars_are_relative_to_the_baselines_run_with_the_same_other_axes_averaged_geometrically_over_seeds() {
        let mut runs = Vec::new();
        // cycles: per (policy, size): seed 1, seed 2.
        for (policy, size, cycles) in [("a", "s1", [100, 200]), ("b", "s1", [150, 400]), ("a", "s2", [100, 100]), ("b", "s2", [50, 200])] {
            for (seed, c) in ["1", "2"].iter().zip(cycles) {
                runs.push(run(&[("policy", policy), ("size", size), ("seed", seed)], json!({"cycles": c})));
            }
        }
        let layout = Layout::new(&runs, None).unwrap();
        assert_eq!((layout.colours.clone(), layout.groups.clone(), layout.baseline), (vec!["a".to_string(), "b".into()], vec![vec!["s1".to_string()], vec!["s2".into()]], Some(0)));
        let (bars, normalised) = layout.bars(&runs, "cycles");
        assert!(normalised);
        // s1: b's ratios 1.5 and 2, geometric mean √3; s2: 0.5 and 2, mean 1.
        assert_eq!(bars[0][0], Some(1.0));
        assert!((bars[0][1].unwrap() - 3f64.sqrt()).abs() < 1e-12);
        assert!((bars[1][1].unwrap() - 1.0).abs() < 1e-12);
        // Normalised to b instead: a at s2 is 2 and 0.5.
        let (bars, _) = Layout::new(&runs, Some("b")).unwrap().bars(&runs, "cycles");
        assert!((bars[1][0].unwrap() - 1.0).abs() < 1e-12 && bars[1][1] == Some(1.0));
        // A failed run leaves its seed out; with the baseline's runs of a group failed, the group has no bars.
        runs[7] = failed(&[("policy", "b"), ("size", "s2"), ("seed", "2")]);
        runs[4] = failed(&[("policy", "a"), ("size", "s2"), ("seed", "1")]);
        runs[5] = failed(&[("policy", "a"), ("size", "s2"), ("seed", "2")]);
        let (bars, _) = layout.bars(&runs, "cycles");
        assert_eq!(bars[1], vec![None, None]);
        assert_eq!(missing_bars(&layout, &runs, &bars), ["a at s2", "b at s2"]);
    }

    #[test]
    fn a_baseline_figure_of_zero_leaves_the_panel_raw_and_averaged_arithmetically() {
        let runs = [
            run(&[("policy", "first-touch"), ("seed", "1")], json!({"page_moves": 0})),
            run(&[("policy", "tpp"), ("seed", "1")], json!({"page_moves": 10})),
            run(&[("policy", "tpp"), ("seed", "2")], json!({"page_moves": 30})),
        ];
        let (bars, normalised) = Layout::new(&runs, None).unwrap().bars(&runs, "page_moves");
        assert!(!normalised);
        assert_eq!(bars, [[Some(0.0), Some(20.0)]]);
    }

    #[test]
    fn without_a_policy_axis_bars_are_raw_and_coloured_by_the_first_axis() {
        let runs = [
            run(&[("capacity", "25%"), ("workload", "kv")], json!({"ipc": 0.5})),
            run(&[("capacity", "50%"), ("workload", "kv")], json!({"ipc": 0.7})),
            run(&[("capacity", "25%"), ("workload", "gups")], json!({"ipc": 0.2})),
        ];
        let layout = Layout::new(&runs, None).unwrap();
        assert_eq!((layout.colour_axis.as_deref(), layout.group_axes.clone()), (Some("capacity"), vec!["workload".to_string()]));
        assert_eq!(layout.bars(&runs, "ipc"), (vec![vec![Some(0.5), Some(0.7)], vec![Some(0.2), None]], false));
        assert_eq!(Layout::new(&runs, Some("tpp")).unwrap_err().to_string(), "baseline tpp: the sweep has no `policy` axis");
        let with_policy = [run(&[("policy", "a")], json!({}))];
        assert!(Layout::new(&with_policy, Some("tpp")).unwrap_err().to_string().contains("no run of that policy (the sweep's policies: a)"));
    }

    #[test]
    fn a_policys_own_parameter_axes_make_variants_of_it_not_groups() {
        // As a sweep of all-fast and thermostat × tolerable_slowdown_pct stores them.
        let x = "policy.thermostat.tolerable_slowdown_pct";
        let runs = [
            run(&[("policy", "all-fast"), (x, "-"), ("workload", "kv")], json!({"cycles": 100})),
            run(&[("policy", "thermostat"), (x, "3"), ("workload", "kv")], json!({"cycles": 103})),
            run(&[("policy", "thermostat"), (x, "10"), ("workload", "kv")], json!({"cycles": 110})),
        ];
        let layout = Layout::new(&runs, Some("all-fast")).unwrap();
        assert_eq!(layout.colours, ["all-fast", "thermostat tolerable_slowdown_pct=3", "thermostat tolerable_slowdown_pct=10"]);
        assert_eq!(layout.group_axes, ["workload"]);
        assert_eq!(layout.bars(&runs, "cycles"), (vec![vec![Some(1.0), Some(1.03), Some(1.1)]], true));
        // A baseline may name a policy with variants: its first.
        assert_eq!(Layout::new(&runs, Some("thermostat")).unwrap().baseline, Some(1));
    }

    #[test]
    fn policy_records_are_plotted_by_unit_against_their_end_time_and_thermostats_rates_together() {
        let mut r = report("thermostat", json!({}));
        let period = |i: u64| json!({"period": i, "end_s": 0.001 * (i + 1) as f64, "slow_rate": 10.0 * i as f64, "target_rate": 30.0, "target_pct": 3.0,
            "hot_2m_bytes": 4u64 << 20, "cold_2m_bytes": 2u64 << 20, "sampled": 7, "hot": [1, 2]});
        r["policy_report"] = json!({"periods": [period(0), period(1), period(2)], "one": [{"x": 1}], "scalar": 3});
        let time = TimeAxis { freq_ghz: 2.0, unit: ("ms", 1e3) };
        let panels = policy_panels(&r, &time);
        let titles: Vec<&str> = panels.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(titles, ["Thermostat: slow-memory access rate against its target", "periods: bytes (MiB)", "periods: count", "periods: percent"]);
        assert_eq!(panels[0].lines[0].points, [(1.0, 0.0), (2.0, 10.0), (3.0, 20.0)]);
        assert_eq!(panels[1].lines.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["cold_2m_bytes", "hot_2m_bytes"]);
        assert_eq!(panels[1].lines[1].points[0], (1.0, 4.0), "bytes in MiB");
        assert_eq!(panels[2].lines.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["hot[0]", "hot[1]", "sampled"], "the period number is left out");
    }

    #[test]
    fn the_run_page_is_self_contained_and_escapes_text() {
        let page = run_page("a <run>", &report("tpp", json!({"cycles": 4_000_000u64}))).unwrap();
        assert!(page.contains("<title>a &lt;run&gt;</title>") && page.contains("a &lt;note&gt;"));
        assert!(!page.contains("http"), "the page names no URL");
        assert_eq!(page.matches("<figure class=\"plot\"").count(), 5);
        // PCM served no demand access: its AMAT has no point, its bandwidth does.
        assert!(page.contains("data-title=\"Average memory access time per tier\" data-colours=\"#4e79a7\""));
        assert!(page.contains("data-title=\"Bandwidth per tier\" data-colours=\"#4e79a7 #f28e2b\""));
        assert_eq!(page, run_page("a <run>", &report("tpp", json!({"cycles": 4_000_000u64}))).unwrap(), "the same page every time");
    }

    #[test]
    fn json_that_is_not_a_run_report_is_refused() {
        assert_eq!(run_page("t", &json!({"summary": {}})).unwrap_err().to_string(), "not a tiersim run report (no `epochs` array)");
        let runs = [SweepRun { axes: vec![("policy".into(), "a".into())], error: None, report: Some(json!([1])) }];
        assert_eq!(format!("{:#}", sweep_page("t", "", &runs, None).unwrap_err()), "run policy=a: not a tiersim run report (no `summary` object)");
    }

    #[test]
    fn the_sweep_page_lists_failed_runs_and_shows_its_specification() {
        let runs = [run(&[("policy", "a")], json!({"cycles": 10})), failed(&[("policy", "b")])];
        let page = sweep_page("sweep", "axes = [\"policy\"]", &runs, None).unwrap();
        assert_eq!(page.matches("<figure class=\"plot\"").count(), SWEEP_METRICS.len());
        assert!(page.contains("<td>b</td><td>out of memory</td>"));
        assert!(page.contains("No bar for b: its runs failed"));
        assert!(page.contains("axes = [&quot;policy&quot;]"));
    }
}
