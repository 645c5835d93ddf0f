//! Thermostat (Agarwal and Wenisch, ASPLOS 2017): target tracking on the emulated
//! platform (docs/policies/thermostat.md, "Target tracking"). Every workload under
//! targets of 3, 6 and 10 % beside kstaled and all-fast on the same input, 1 GiB
//! footprints on TLBs scaled down by 8, 0.5 s periods for about 18 simulated
//! seconds; the throughput loss is measured over the last 40 % of the references,
//! after the warm-up the paper also leaves out (§4.3).

use super::{cycle_at_reference, fmt, number, spec, Paper, Results, Row};
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

/// The share of references left out as warm-up.
const WARMUP: f64 = 0.6;

fn targets(quick: bool) -> &'static [u32] {
    if quick {
        &[3, 10]
    } else {
        &[3, 6, 10]
    }
}

fn sweeps(quick: bool) -> Vec<Spec> {
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

fn setting(quick: bool) -> &'static str {
    if quick {
        "--quick: kv-zipf and hotspot only, x = 3 and 10 %, 0.1 s periods for about 2.5 simulated s (the paper: 30 s periods, 600 s of warm-up); \
         1 GiB footprints on TLBs scaled down by 8; loss over the last 40 % of the references. Short periods change what the estimates see (the doc's \"The period length matters\")."
    } else {
        "0.5 s periods for about 18 simulated s (the paper: 30 s periods, 600 s of warm-up), 1 GiB footprints on TLBs scaled down by 8, \
         loss over the last 40 % of the references; the doc's section \"At the paper's time scale\" runs 30 s periods in sampled mode."
    }
}

/// Throughput loss (the paper's `1 − T_all-fast / T_run`) over the references after
/// the warm-up, in %.
fn loss_pct(run: &Value, base: &Value) -> Option<f64> {
    let refs = number(run, "/summary/references")?;
    let r0 = WARMUP * refs;
    let own = number(run, "/summary/cycles")? - cycle_at_reference(run, r0);
    let theirs = number(base, "/summary/cycles")? - cycle_at_reference(base, r0);
    (own > 0.0).then(|| (1.0 - theirs / own) * 100.0)
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
    for (sweep, _) in &res.sweeps {
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
            let loss = run.zip(base).and_then(|(r, b)| loss_pct(r, b));
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
    rows
}
