//! The sections of a run's page: the tables of what the run was, its summary and its
//! tiers; the panels of its per-epoch series; and the panels of its policy's own
//! records, grouped by the unit their field names end in.

use super::plot::{colour, line_figures, panels_html, Line, LinePanel};
use super::text::{cell, escape, label, significant};
use super::{check_report, heading, policy_name, workloads_text};
use anyhow::{Context, Result};
use serde_json::Value;
use std::fmt::Write as _;

/// The title of the epochs' page-moves panel, left out when every epoch moved none.
const PAGE_MOVES_TITLE: &str = "Page moves per epoch";

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

/// The unit simulated times are shown in for a run of `end_s` seconds: its name and
/// the factor from seconds.
pub(super) fn time_unit(end_s: f64) -> (&'static str, f64) {
    if end_s >= 1.0 {
        ("s", 1.0)
    } else if end_s >= 1e-3 {
        ("ms", 1e3)
    } else {
        ("µs", 1e6)
    }
}

/// The sections of one run's page, with headings at `level`.
pub(super) fn run_body(report: &Value, level: u8) -> Result<String> {
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
pub(super) struct TimeAxis {
    pub(super) freq_ghz: f64,
    pub(super) unit: (&'static str, f64),
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
pub(super) fn policy_panels(report: &Value, time: &TimeAxis) -> Vec<LinePanel> {
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
