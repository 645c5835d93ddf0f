//! The sections of a sweep's page: how its runs fall into bars ([`Layout`]: colours by
//! policy and its variants, groups by the other axes, averages over seeds, ratios to
//! the baseline), the tables of failed, idle and all runs, and the loaded-latency
//! curves of `loaded-latency` sweeps.

use super::plot::{colour, draw_bars, line_figures, panels_html, BarPanel, Line, LinePanel};
use super::text::{cell, escape, label};
use super::{check_report, heading, policy_name, SweepRun, NOT_APPLICABLE};
use crate::report::geometric_mean;
use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use std::fmt::Write as _;

/// The summary figures the sweep page plots: key in `summary`, panel title and unit.
pub(super) const SWEEP_METRICS: &[(&str, &str, &str)] = &[
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

/// The summary figures of the sweep's table of runs.
const RUN_TABLE_METRICS: [&str; 6] = ["cycles", "ipc", "amat_ns", "fast_tier_fraction", "page_moves", "energy_j"];

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
pub(super) struct Layout {
    /// Every axis, in the sweep's order.
    axes: Vec<String>,
    /// The axis whose values colour the bars: `policy` when the sweep has one, else
    /// its first axis other than `seed` (None when it has no other).
    pub(super) colour_axis: Option<String>,
    /// The `policy.<name>.…` axes of a sweep with a `policy` axis: their values name
    /// variants of the policy, which get colours of their own.
    variant_axes: Vec<String>,
    /// The axes but the colour axis and `seed`: bars of runs with the same values on
    /// them stand together in a group.
    pub(super) group_axes: Vec<String>,
    /// Whether the sweep has a `seed` axis, which bars average over.
    seeded: bool,
    /// The colour axis's values and the groups' values on the group axes, in the order
    /// the runs first have them.
    pub(super) colours: Vec<String>,
    pub(super) groups: Vec<Vec<String>>,
    /// The colour (a policy) bars are normalised to, by index into `colours`.
    pub(super) baseline: Option<usize>,
}

impl Layout {
    pub(super) fn new(runs: &[SweepRun], baseline: Option<&str>) -> Result<Layout> {
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
    pub(super) fn bars(&self, runs: &[SweepRun], metric: &str) -> (Vec<Vec<Option<f64>>>, bool) {
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
pub(super) fn sweep_body(runs: &[SweepRun], baseline: Option<&str>, level: u8) -> Result<String> {
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
pub(super) const DELAY_AXIS: &str = "workload.loaded_latency.delay_instrs";

/// The latency-against-bandwidth curves of the `loaded-latency` runs of a sweep (their
/// reports' `loaded_latency`), as Intel's Memory Latency Checker draws a machine: one
/// panel per policy (the placement, hence the tier probed), one line per value of the
/// other axes, its points the runs along `workload.loaded_latency.delay_instrs`.
/// Nothing when no run has the figures.
pub(super) fn loaded_latency_curves(runs: &[SweepRun], level: u8) -> Result<String> {
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
pub(super) fn missing_bars(layout: &Layout, runs: &[SweepRun], values: &[Vec<Option<f64>>]) -> Vec<String> {
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
