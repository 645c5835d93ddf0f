//! Thermostat (Agarwal and Wenisch, ASPLOS 2017) on the emulated platform
//! (docs/policies/thermostat.md):
//!
//! - "Target tracking": every workload under targets of 3, 6 and 10 % beside kstaled
//!   and all-fast on the same input, 1 GiB footprints on TLBs scaled down by 8, 0.5 s
//!   periods for about 18 simulated seconds; the throughput loss is measured over the
//!   last 40 % of the references, after the warm-up the paper also leaves out (§4.3).
//! - "Moving phases": a hot half of `hotspot` that jumps to the other half three
//!   times, at a 3 % target beside all-fast; for each change, the periods the
//!   measured slow-memory rate stays over the target before the correction (§3.5)
//!   brings it back under.

use super::{cycle_at_reference, fmt, number, relative_performance_pct, spec, Paper, Results, Row};
use crate::study::spec::NOT_APPLICABLE;
use crate::study::Spec;
use serde_json::Value;

pub const PAPER: Paper = Paper {
    name: "thermostat",
    title: "Thermostat: application-transparent page management for two-tiered main memory (ASPLOS 2017)",
    doc: "docs/policies/thermostat.md",
    sweeps,
    setting,
    table,
};

/// The workloads: name, references for the full matrix (about 18 simulated seconds
/// with all memory fast), references for `--quick` (about 2.5 s), options.
const WORKLOADS: &[(&str, u64, u64, &str)] = &[
    ("kv-hot", 4_600_000_000, 0, r#"workload = "kv"
set.'workload.kv.popularity' = "hotspot"
set.'workload.kv.hot_ops' = 0.9
set.'workload.kv.hot_keys' = 0.0001"#),
    ("kv-zipf", 2_450_000_000, 340_000_000, r#"workload = "kv""#),
    ("hotspot", 760_000_000, 106_000_000, r#"workload = "hotspot"
set.'workload.hotspot.hot_size' = 0.1
set.'workload.hotspot.hot_refs' = 0.95"#),
    ("graph-bfs", 3_200_000_000, 0, r#"workload = "graph-bfs""#),
    ("seqscan", 6_000_000_000, 0, r#"workload = "seqscan""#),
];

/// The share of references left out as warm-up in the tracking runs.
const WARMUP: f64 = 0.6;

/// The sweep of "Moving phases".
const PHASES: &str = "hotspot-phases";

/// The share of references left out as warm-up in the phases run: the first phase's
/// warm-up (the doc's `--warmup 0.25`).
const PHASES_WARMUP: f64 = 0.25;

fn targets(quick: bool) -> &'static [u32] {
    if quick {
        &[3, 10]
    } else {
        &[3, 6, 10]
    }
}

fn sweeps(quick: bool) -> Vec<Spec> {
    let mut specs = tracking_sweeps(quick);
    specs.push(phases_sweep(quick));
    specs
}

/// "Target tracking": one sweep per workload.
fn tracking_sweeps(quick: bool) -> Vec<Spec> {
    let period_s = if quick { 0.1 } else { 0.5 };
    WORKLOADS
        .iter()
        .filter(|w| !quick || w.2 > 0)
        .map(|&(name, full, short, options)| {
            let xs: Vec<String> = targets(quick).iter().map(u32::to_string).collect();
            let text = format!(
                r#"baseline = "all-fast"
[run]
preset = "thermostat-emulated"
footprint = "1GiB"
refs = {refs}
{options}
# 1/8 of the paper's TLBs: 128 L2 entries of 2 MiB reach 1/4 of the footprint, as the
# paper's footprints are several times its TLB reach.
set.'machine.tlb.l1_small_entries' = 8
set.'machine.tlb.l1_huge_entries' = 4
set.'machine.tlb.l2_small_entries' = 128
set.'policy.thermostat.periods_per_run' = 0
set.'policy.thermostat.period_s' = {period_s}
set.'policy.kstaled.scans_per_run' = 0
[axes]
policy = ["all-fast", "kstaled", "thermostat"]
'policy.thermostat.tolerable_slowdown_pct' = [{xs}]
"#,
                refs = if quick { short } else { full },
                xs = xs.join(", ")
            );
            spec(name, &text)
        })
        .collect()
}

/// "Moving phases": `hotspot` on 1 GiB whose hot half (99.9 % of the references)
/// moves to the other half at each phase change, at the default 3 % target, beside
/// all-fast. The full run has 4 phases of 0.5 s periods over 58 simulated seconds;
/// `--quick` has 2 phases of 0.1 s periods and about as many periods per phase
/// (29), over a tenth of the references.
fn phases_sweep(quick: bool) -> Spec {
    let (refs, phases, period_s): (u64, u32, f64) = if quick { (220_000_000, 2, 0.1) } else { (2_200_000_000, 4, 0.5) };
    let text = format!(
        r#"baseline = "all-fast"
[run]
preset = "thermostat-emulated"
workload = "hotspot"
footprint = "1GiB"
refs = {refs}
set.'workload.hotspot.hot_size' = 0.5
set.'workload.hotspot.hot_refs' = 0.999
set.'workload.hotspot.phases' = {phases}
set.'machine.tlb.l1_small_entries' = 8
set.'machine.tlb.l1_huge_entries' = 4
set.'machine.tlb.l2_small_entries' = 128
set.'policy.thermostat.periods_per_run' = 0
set.'policy.thermostat.period_s' = {period_s}
[axes]
policy = ["all-fast", "thermostat"]
"#
    );
    spec(PHASES, &text)
}

fn setting(quick: bool) -> &'static str {
    if quick {
        "--quick: kv-zipf and hotspot only, x = 3 and 10 %, 0.1 s periods for about 2.5 simulated s (the paper: 30 s periods, 600 s of warm-up); \
         1 GiB footprints on TLBs scaled down by 8; loss over the last 40 % of the references. Short periods change what the estimates see (the doc's \"The period length matters\"). \
         Moving phases: 2 phases (one change) of 0.1 s periods over about 5.8 simulated s, instead of 4 phases (three changes) of 0.5 s periods over 58 s; loss after the first quarter."
    } else {
        "0.5 s periods for about 18 simulated s (the paper: 30 s periods, 600 s of warm-up), 1 GiB footprints on TLBs scaled down by 8, \
         loss over the last 40 % of the references; the doc's section \"At the paper's time scale\" runs 30 s periods in sampled mode. \
         Moving phases: hotspot's hot half (99.9 % of the references) jumps to the other half at 3 changes, 0.5 s periods over 58 simulated s, loss after the first quarter; \
         the paper shows no phase change, only that the correction brings a rate over the target back (§3.5, Fig. 3)."
    }
}

/// Throughput loss (the paper's `1 − T_all-fast / T_run`) over the references after
/// the first `warmup` share of them, in %.
fn loss_pct(run: &Value, base: &Value, warmup: f64) -> Option<f64> {
    relative_performance_pct(run, base, warmup).map(|p| 100.0 - p)
}

/// The share of the footprint that is cold at the end of the run, in %.
fn end_cold_pct(run: &Value) -> Option<f64> {
    let last = run.pointer("/policy_report/periods")?.as_array()?.last()?;
    let get = |k: &str| last[k].as_f64().unwrap_or(0.0);
    let total = get("hot_2m_bytes") + get("hot_4k_bytes") + get("cold_2m_bytes") + get("cold_4k_bytes");
    (total > 0.0).then(|| (get("cold_2m_bytes") + get("cold_4k_bytes")) / total * 100.0)
}

/// The time spent in poison faults on sampled pages, as a share of the run, in %.
fn monitoring_pct(run: &Value) -> Option<f64> {
    Some(number(run, "/policy_report/monitoring/sample_fault_seconds")? / number(run, "/summary/seconds")? * 100.0)
}

fn table(res: &Results) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut migration = Vec::new();
    let mut monitoring = Vec::new();
    for (sweep, _) in res.sweeps.iter().filter(|(s, _)| s.name != PHASES) {
        let w = sweep.name.as_str();
        let base = res.find(w, &[("policy", "all-fast")]);
        let mut colds = Vec::new();
        let mut xs: Vec<String> = Vec::new();
        for r in &res.sweeps.iter().find(|(s, _)| s.name == w).expect("listed above").1 {
            for (k, v) in &r.axes {
                if k == "policy.thermostat.tolerable_slowdown_pct" && v != NOT_APPLICABLE && !xs.contains(v) {
                    xs.push(v.clone());
                }
            }
        }
        for x in &xs {
            let run = res.find(w, &[("policy", "thermostat"), ("policy.thermostat.tolerable_slowdown_pct", x)]);
            let loss = run.zip(base).and_then(|(r, b)| loss_pct(r, b, WARMUP));
            rows.push(Row::new("§5.1", format!("{w}, x = {x} %: throughput loss after warm-up"), &format!("≤ {x} % (every benchmark meets its target)"), loss.map(|l| fmt(l, 2, " %"))));
            colds.push(run.and_then(end_cold_pct).map_or("-".to_string(), |c| fmt(c, 1, "")));
            if let Some(r) = run {
                migration.extend(number(r, "/policy_report/migration_mb_per_s"));
                monitoring.extend(monitoring_pct(r));
            }
            if w == "kv-hot" && x == "3" {
                rows.push(Row::new("§5, Fig. 8", "kv-hot (Redis: 0.01 % of keys take 90 % of accesses), x = 3 %: cold share of the footprint", "10 %", run.and_then(end_cold_pct).map(|c| fmt(c, 1, " %"))));
            }
        }
        if !xs.is_empty() {
            rows.push(Row::new(
                "§5.1, Fig. 11",
                format!("{w}: cold share at the end, x = {} %", xs.join(" / ")),
                "grows with x",
                Some(format!("{} %", colds.join(" / "))),
            ));
        }
        let kstaled = res.find(w, &[("policy", "kstaled")]);
        rows.push(Row::new(
            "§2.1, Fig. 1",
            format!("{w}: kstaled (idle 2 MiB pages) demotes"),
            "little: a huge page is rarely idle as a whole",
            kstaled.and_then(|k| number(k, "/policy_report/demoted_pages")).map(|d| format!("{d:.0} pages")),
        ));
    }
    let range = |v: &[f64], unit: &str| {
        (!v.is_empty()).then(|| {
            let (lo, hi) = v.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
            format!("{:.1}–{:.1}{unit} (mean {:.1})", lo, hi, v.iter().sum::<f64>() / v.len() as f64)
        })
    };
    rows.push(Row::new("§5.2, Table 3", "migration rate over every Thermostat run", "< 30 MB/s on average", range(&migration, " MB/s")));
    rows.push(Row::new("§4.4, §7", "monitoring (poison faults on sampled pages), share of the run", "no observable overhead", range(&monitoring, " %")));
    rows.extend(phases_rows(res));
    rows
}

/// What happened after one phase change.
#[derive(Clone, Debug, PartialEq)]
struct Recovery {
    /// When the phase changed, in simulated seconds.
    change_s: f64,
    /// Periods ending after the change whose measured slow-memory rate was over the
    /// target, before the first one under it.
    periods_over: usize,
    /// When the first period under the target ended, if one did.
    back_at_s: Option<f64>,
    /// The highest measured rate of those periods over the target.
    peak_rate_to_target: f64,
    /// Huge pages the first period after the change moved back to fast memory.
    first_corrected: u64,
}

/// For each phase change of `run` (the workload's phases split its references
/// equally), the periods from the first to end after it until one measures the
/// slow-memory rate under its target.
fn recoveries(run: &Value) -> Option<Vec<Recovery>> {
    let phases = number(run, "/config/workload/hotspot/phases")? as u64;
    let hz = number(run, "/summary/cycles")? / number(run, "/summary/seconds")?;
    let refs = number(run, "/summary/references")?;
    let periods = run.pointer("/policy_report/periods")?.as_array()?;
    let get = |p: &Value, k: &str| p[k].as_f64().unwrap_or(0.0);
    let mut out = Vec::new();
    for k in 1..phases {
        let change_s = cycle_at_reference(run, refs * k as f64 / phases as f64) / hz;
        let after: Vec<&Value> = periods.iter().filter(|p| get(p, "end_s") >= change_s).collect();
        let over = after.iter().take_while(|p| get(p, "slow_rate") > get(p, "target_rate")).count();
        out.push(Recovery {
            change_s,
            periods_over: over,
            back_at_s: after.get(over).map(|p| get(p, "end_s")),
            peak_rate_to_target: after[..over].iter().map(|p| get(p, "slow_rate") / get(p, "target_rate").max(1.0)).fold(0.0, f64::max),
            first_corrected: after.first().map_or(0, |p| get(p, "corrected") as u64),
        });
    }
    Some(out)
}

/// The rows of "Moving phases".
fn phases_rows(res: &Results) -> Vec<Row> {
    let run = res.find(PHASES, &[("policy", "thermostat")]);
    let base = res.find(PHASES, &[("policy", "all-fast")]);
    let what = "hotspot, hot half moving (99.9 % of refs), x = 3 %";
    let mut rows = Vec::new();
    match run.and_then(recoveries) {
        Some(changes) => {
            for (i, c) in changes.iter().enumerate() {
                let ours = match c.back_at_s {
                    Some(t) => format!(
                        "{} periods over, under again {:.1} s after it; peak {:.1}× the target; {} huge pages moved back at once",
                        c.periods_over,
                        t - c.change_s,
                        c.peak_rate_to_target,
                        c.first_corrected
                    ),
                    None => format!("over the target until the end ({} periods); peak {:.1}× the target", c.periods_over, c.peak_rate_to_target),
                };
                rows.push(Row::new(
                    "§3.5, Fig. 3",
                    format!("{what}: change {} at {:.1} s, periods over the target", i + 1, c.change_s),
                    "exceeds the target for a while, brought back under by the correction",
                    Some(ours),
                ));
            }
        }
        None => rows.push(Row::new("§3.5, Fig. 3", format!("{what}: periods over the target after each change"), "exceeds the target for a while, brought back under by the correction", None)),
    }
    let loss = run.zip(base).and_then(|(r, b)| loss_pct(r, b, PHASES_WARMUP));
    rows.push(Row::new("§5.1", format!("{what}: throughput loss after the first quarter"), "≤ 3 %", loss.map(|l| fmt(l, 2, " %"))));
    rows.push(Row::new("§4.4", format!("{what}: monitoring, share of the run"), "< 1 % (no measurable slowdown)", run.and_then(monitoring_pct).map(|m| fmt(m, 2, " %"))));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_full_matrix_is_the_docs() {
        let specs = sweeps(false);
        let runs: Vec<usize> = specs.iter().map(|s| s.points().len()).collect();
        // The tracking table: all-fast, kstaled and x = 3, 6, 10 % per workload;
        // the doc's phases run: thermostat beside all-fast.
        assert_eq!(runs, [5, 5, 5, 5, 5, 2]);
        let kv_hot = specs[0].points().into_iter().find(|p| p.options.get("policy.thermostat.tolerable_slowdown_pct").is_some_and(|x| x == "6")).expect("x = 6 %");
        assert_eq!(kv_hot.options["refs"], "4600000000");
        assert_eq!(kv_hot.options["workload.kv.popularity"], "\"hotspot\"");
        assert_eq!(kv_hot.options["machine.tlb.l2_small_entries"], "128");
        let phases = specs[5].points().into_iter().find(|p| p.options["policy"] == "thermostat").expect("thermostat");
        assert_eq!(phases.options["workload.hotspot.phases"], "4");
        assert_eq!(phases.options["policy.thermostat.period_s"], "0.5");
        assert!(!phases.options.contains_key("policy.thermostat.tolerable_slowdown_pct"), "the default target, 3 %");
    }

    /// A run of 2 phases over 4 equal epochs of 1 s at 1 GHz, with the given
    /// periods as (end in s, slow rate, corrected).
    fn phases_run(periods: &[(f64, f64, u64)]) -> Value {
        let epochs: Vec<Value> = (1..=4).map(|i| json!({"references": 100, "end_cycle": i * 1_000_000_000u64})).collect();
        let periods: Vec<Value> = periods.iter().map(|&(end_s, slow_rate, corrected)| json!({"end_s": end_s, "slow_rate": slow_rate, "target_rate": 100.0, "corrected": corrected})).collect();
        json!({
            "config": {"workload": {"hotspot": {"phases": 2}}},
            "summary": {"cycles": 4_000_000_000u64, "seconds": 4.0, "references": 400},
            "epochs": epochs,
            "policy_report": {"periods": periods},
        })
    }

    #[test]
    fn a_recovery_counts_the_periods_over_the_target_after_the_change() {
        // The phase changes at reference 200, the end of the second second.
        let run = phases_run(&[(1.5, 50.0, 0), (2.5, 900.0, 7), (3.0, 300.0, 2), (3.5, 80.0, 1), (4.0, 400.0, 0)]);
        let r = recoveries(&run).expect("a phases run");
        assert_eq!(r, vec![Recovery { change_s: 2.0, periods_over: 2, back_at_s: Some(3.5), peak_rate_to_target: 9.0, first_corrected: 7 }]);
        let never = phases_run(&[(2.5, 900.0, 7), (3.0, 300.0, 2)]);
        let r = recoveries(&never).expect("a phases run");
        assert_eq!((r[0].periods_over, r[0].back_at_s), (2, None));
    }
}
