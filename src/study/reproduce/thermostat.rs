//! Thermostat (Agarwal and Wenisch, ASPLOS 2017) on the emulated platform
//! (docs/policies/thermostat.md), at the paper's own time scale in epochs mode
//! (docs/epochs.md):
//!
//! - "Target tracking": every workload under targets of 3, 6 and 10 % beside kstaled
//!   and all-fast on the same input, at footprints of the paper's applications
//!   (Table 2: 2.3–17.2 GB) on the preset's own TLBs, with the paper's 30 s periods
//!   for about 1200 simulated seconds; the throughput loss is measured over the last
//!   half of the references, after the 600 s of warm-up the paper leaves out (§4.3).
//! - "Moving phases": a hot half of `hotspot` that jumps to the other half three
//!   times, at a 3 % target beside all-fast; for each change, the periods the
//!   measured slow-memory rate stays over the target before the correction (§3.5)
//!   brings it back under.
//!
//! Runs are bounded by references, not seconds, so that a run and its all-fast
//! baseline do the same work and the loss compares their times over the same
//! references. The references are all-fast's rate (measured over 120 s in epochs
//! mode) times the horizon; the doc's table gives each run's simulated seconds.

use super::{cycle_at_reference, fmt, number, relative_performance_pct, spec, Claim, Paper, Results, Row};
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
    on_scoreboard: true,
};

/// A workload of the tracking table.
struct Workload {
    name: &'static str,
    footprint: &'static str,
    /// References for about 1200 simulated seconds with all memory fast (the
    /// paper's 600 s of warm-up and 600 s measured); for `--quick`, about 600 s, or
    /// 0 when `--quick` leaves the workload out.
    full: u64,
    quick: u64,
    options: &'static str,
}

/// The tracking table's workloads, standing for the paper's applications by their
/// access pattern and footprint (Table 2). All-fast's rates in epochs mode, 120 s:
/// kv-hot 16 GiB 173.9 M references/s, kv-zipf 8 GiB 125.2 M/s, hotspot 8 GiB
/// 38.2 M/s, graph-bfs (6 GiB asked, 4.5 GiB made) 91.3 M/s, seqscan 4 GiB 344.2 M/s.
const WORKLOADS: &[Workload] = &[
    // Redis (17.2 GB): 0.01 % of the keys take 90 % of the operations.
    Workload {
        name: "kv-hot",
        footprint: "16GiB",
        full: 209_000_000_000,
        quick: 0,
        options: r#"workload = "kv"
set.'workload.kv.popularity' = "hotspot"
set.'workload.kv.hot_ops' = 0.9
set.'workload.kv.hot_keys' = 0.0001"#,
    },
    // Aerospike and Cassandra under YCSB (12.3 and 8 GB): Zipfian keys.
    Workload { name: "kv-zipf", footprint: "8GiB", full: 150_000_000_000, quick: 75_000_000_000, options: r#"workload = "kv""# },
    Workload {
        name: "hotspot",
        footprint: "8GiB",
        full: 45_800_000_000,
        quick: 22_900_000_000,
        options: r#"workload = "hotspot"
set.'workload.hotspot.hot_size' = 0.1
set.'workload.hotspot.hot_refs' = 0.95"#,
    },
    // In-memory analytics (6.2 GB): a graph kernel.
    Workload { name: "graph-bfs", footprint: "6GiB", full: 109_600_000_000, quick: 0, options: r#"workload = "graph-bfs""# },
    // Ours: sweeps of a window that moves (HMM-V §5.5's sequential benchmark).
    Workload { name: "seqscan", footprint: "4GiB", full: 413_000_000_000, quick: 0, options: r#"workload = "seqscan""# },
];

/// The paper's period (§5: "5% of huge pages sampled in every scan interval of 30s").
const PERIOD_S: f64 = 30.0;

/// Lines common to every run: epochs mode, periods in simulated seconds (not cut
/// from the run's length), and one report point per simulated second (3.2·10⁹ cycles
/// at the preset's 3.2 GHz) to keep 1200 s of report small.
const COMMON: &str = r#"preset = "thermostat-emulated"
mode = "epochs"
set.'engine.epoch_cycles' = 3200000000
set.'policy.thermostat.periods_per_run' = 0
set.'policy.kstaled.scans_per_run' = 0"#;

/// The share of references left out as warm-up in the tracking runs: the paper's
/// 600 s of 1200 (§5).
const WARMUP: f64 = 0.5;

/// The sweep of "Moving phases".
const PHASES: &str = "hotspot-phases";

/// The share of references left out as warm-up in the phases run: the first phase.
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
    WORKLOADS
        .iter()
        .filter(|w| !quick || w.quick > 0)
        .map(|w| {
            let xs: Vec<String> = targets(quick).iter().map(u32::to_string).collect();
            let text = format!(
                r#"baseline = "all-fast"
[run]
{COMMON}
footprint = "{footprint}"
refs = {refs}
{options}
set.'policy.thermostat.period_s' = {PERIOD_S:?}
[axes]
policy = ["all-fast", "kstaled", "thermostat"]
'policy.thermostat.tolerable_slowdown_pct' = [{xs}]
"#,
                footprint = w.footprint,
                refs = if quick { w.quick } else { w.full },
                options = w.options,
                xs = xs.join(", ")
            );
            spec(w.name, &text)
        })
        .collect()
}

/// "Moving phases": `hotspot` on 8 GiB whose hot half (99.9 % of the references)
/// moves to the other half at each phase change, at the default 3 % target, beside
/// all-fast: 4 phases of about 300 s (10 periods each) over about 1200 simulated
/// seconds; `--quick` has 2 phases over about 600 s. All-fast's rate: 37.4 M
/// references/s.
fn phases_sweep(quick: bool) -> Spec {
    let (refs, phases): (u64, u32) = if quick { (22_500_000_000, 2) } else { (44_900_000_000, 4) };
    let text = format!(
        r#"baseline = "all-fast"
[run]
{COMMON}
workload = "hotspot"
footprint = "8GiB"
refs = {refs}
set.'workload.hotspot.hot_size' = 0.5
set.'workload.hotspot.hot_refs' = 0.999
set.'workload.hotspot.phases' = {phases}
set.'policy.thermostat.period_s' = {PERIOD_S:?}
[axes]
policy = ["all-fast", "thermostat"]
"#
    );
    spec(PHASES, &text)
}

fn setting(quick: bool, _: &Results) -> String {
    let text = if quick {
        "--quick: epochs mode, the paper's 30 s periods for about 600 simulated s (the paper: 600 s of warm-up and 600 s measured), kv-zipf 8 GiB and hotspot 8 GiB only, x = 3 and 10 %, \
         the preset's own TLBs; loss over the last half of the references. Moving phases: 2 phases (one change) over about 600 s, loss after the first quarter."
    } else {
        "epochs mode (docs/epochs.md), the paper's 30 s periods for about 1200 simulated s, loss over the last half of the references (the paper's 600 s after 600 s of warm-up); \
         footprints of the paper's applications (kv-hot 16 GiB as Redis' 17.2 GB, kv-zipf 8 GiB, hotspot 8 GiB, graph-bfs 4.5 GiB, seqscan 4 GiB) on the preset's own TLBs. \
         graph-bfs's rows are not to be trusted: Thermostat on graph-bfs is an outlier of epochs mode's validation (+114 % cycles against detailed mode; docs/epochs.md). \
         Moving phases: hotspot 8 GiB, its hot half (99.9 % of the references) jumps to the other half at 3 changes, about 300 s apart, loss after the first quarter; \
         the paper shows no phase change, only that the correction brings a rate over the target back (§3.5, Fig. 3)."
    };
    text.into()
}

/// Why Thermostat's loss on workload `w` differs from the target it was given, from
/// the runs at the paper's setting (docs/policies/thermostat.md, "At the paper's time
/// scale").
fn loss_cause(w: &str) -> &'static str {
    match w {
        "kv-hot" => "Meets its targets at the paper's setting (2.53 / 5.88 / 10.34 % for 3 / 6 / 10): the estimate's error, a few tenths of a point, can put it just over.",
        "kv-zipf" => "Partly explained: 0.9–1.3 points over its target at the paper's setting, about 0.6 of them monitoring faults on sampled pages; in the scaled runs the rest was the measured slow rate sitting 3–5 % over the target (placement adds pages on noisy estimates every period), not yet checked at the paper's setting.",
        "hotspot" => "Monitoring: a sampled hot huge page, split, misses the TLB on almost every access (uniform references over 800 MiB) and each miss to a poisoned base page faults (about 5 points); without it the loss is at the target.",
        "graph-bfs" => "Not to be trusted in epochs mode: Thermostat on graph-bfs is an outlier of the mode's validation (+114 % cycles against detailed mode; docs/epochs.md), its calibrations price one part of a BFS level with another's costs.",
        _ => "Not yet explained: this workload is ours, not one of the paper's.",
    }
}

/// Why the cold share at the end does not grow with the target on workload `w`.
fn cold_cause(w: &str) -> &'static str {
    match w {
        "seqscan" => "Every page outside the swept window has no accesses and the window moves at each phase, so all of the footprint is cold at the end at any target.",
        "graph-bfs" => "Not to be trusted in epochs mode (an outlier of its validation, docs/epochs.md): 77–97 % of the footprint ends cold at every target.",
        _ => "Not yet explained: the cold share is read at the last period, one sample of a placement that moves from period to period.",
    }
}

/// Throughput loss (the paper's `1 − T_all-fast / T_run`) over the references after
/// the first `warmup` share of them, in %.
fn loss_pct(run: &Value, base: &Value, warmup: f64) -> Option<f64> {
    relative_performance_pct(run, base, warmup).map(|p| 100.0 - p)
}

/// Of the steps from one target to the next larger one (`colds` in the targets'
/// order), the share where the cold share at the end grew; none unless every run
/// finished.
fn grown_share(colds: &[Option<f64>]) -> Option<f64> {
    let v: Option<Vec<f64>> = colds.iter().copied().collect();
    let v = v.filter(|v| v.len() > 1)?;
    Some(v.windows(2).filter(|w| w[1] > w[0]).count() as f64 / (v.len() - 1) as f64)
}

/// The share of the footprint that is cold at the end of the run, in %.
fn end_cold_pct(run: &Value) -> Option<f64> {
    let last = run.pointer("/policy_report/periods")?.as_array()?.last()?;
    let get = |k: &str| last[k].as_f64().unwrap_or(0.0);
    let total = get("hot_2m_bytes") + get("hot_4k_bytes") + get("cold_2m_bytes") + get("cold_4k_bytes");
    (total > 0.0).then(|| (get("cold_2m_bytes") + get("cold_4k_bytes")) / total * 100.0)
}

/// What kstaled demoted in run `k`: its pages, and the share of the data in slow
/// memory at the end (Fig. 1's fraction of pages found idle, less those faulted back).
fn kstaled_demoted(k: &Value) -> Option<String> {
    let demoted = number(k, "/policy_report/demoted_pages")?;
    let fast = k["epochs"].as_array()?.last()?["fast_resident_fraction"].as_f64()?;
    Some(format!("{demoted:.0} pages; {} of the data slow at the end", fmt((1.0 - fast) * 100.0, 1, " %")))
}

/// The lowest, the highest and the mean of `v`, or none when it is empty.
fn spread(v: &[f64]) -> Option<(f64, f64, f64)> {
    (!v.is_empty()).then(|| {
        let (lo, hi) = v.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        (lo, hi, v.iter().sum::<f64>() / v.len() as f64)
    })
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
        let mut cold_values = Vec::new();
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
            let target: f64 = x.parse().unwrap_or(f64::NAN);
            rows.push(
                Row::new("§5.1", format!("{w}, x = {x} %: throughput loss after warm-up"), &format!("≤ {x} % (every benchmark meets its target)"), loss.map(|l| fmt(l, 2, " %")))
                    .judge(Claim::AtMost(target), loss)
                    .because(loss_cause(w)),
            );
            let cold = run.and_then(end_cold_pct);
            colds.push(cold.map_or("-".to_string(), |c| fmt(c, 1, "")));
            cold_values.push(cold);
            if let Some(r) = run {
                migration.extend(number(r, "/policy_report/migration_mb_per_s"));
                monitoring.extend(monitoring_pct(r));
            }
            if w == "kv-hot" && x == "3" {
                rows.push(
                    Row::new(
                        "§5, Fig. 8",
                        "kv-hot (Redis: 0.01 % of keys take 90 % of accesses), x = 3 %: cold share of the footprint (judged: at least the paper's)",
                        "10 %",
                        cold.map(|c| fmt(c, 1, " %")),
                    )
                    .judge(Claim::AtLeast(10.0), cold)
                    .because("Not yet explained: our kv-hot's cold share is read at the last period; the paper's Fig. 8 averages its Redis run."),
                );
            }
        }
        if !xs.is_empty() {
            rows.push(
                Row::new(
                    "§5.1, Fig. 11",
                    format!("{w}: cold share at the end, x = {} % (judged: the share of steps up in x where it grew)", xs.join(" / ")),
                    "grows with x",
                    Some(format!("{} %", colds.join(" / "))),
                )
                .judge(Claim::AtLeast(1.0), grown_share(&cold_values))
                .because(cold_cause(w)),
            );
        }
        let kstaled = res.find(w, &[("policy", "kstaled")]);
        rows.push(Row::new(
            "§1, Fig. 1",
            format!("{w}: kstaled (2 MiB pages idle for 10 s) demotes"),
            "substantial cold data (> 50 % for MySQL), but no bound on the slowdown (> 10 % for Redis)",
            kstaled.and_then(kstaled_demoted),
        ));
    }
    let (migration, monitoring) = (spread(&migration), spread(&monitoring));
    let range = |s: Option<(f64, f64, f64)>, unit: &str| s.map(|(lo, hi, mean)| format!("{lo:.1}–{hi:.1}{unit} (mean {mean:.1})"));
    rows.push(
        Row::new("§5.2, Table 3", "migration rate over every Thermostat run (judged: the mean)", "< 30 MB/s on average", range(migration, " MB/s"))
            .judge(Claim::AtMost(30.0), migration.map(|s| s.2))
            .because("kv-hot at x = 10 % moves about 46 MB/s (15 at 3 %): with a larger budget more of its 16 GiB goes slow, and what the sampling misclassifies comes back."),
    );
    rows.push(
        Row::new("§4.4, §7", "monitoring (poison faults on sampled pages), share of the run (judged: the highest, at most 1 %)", "no observable overhead", range(monitoring, " %"))
            .judge(Claim::AtMost(1.0), monitoring.map(|s| s.1))
            .because("On hotspot a sampled hot huge page, split, misses the TLB on almost every access and each miss to a poisoned base page faults (about 5 % of the run); graph-bfs's 14–16 % in the full matrix are epochs mode's outlier (docs/epochs.md). The paper's applications had TLB locality within a huge page."),
    );
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
    rows.push(
        Row::new("§5.1", format!("{what}: throughput loss after the first quarter"), "≤ 3 %", loss.map(|l| fmt(l, 2, " %")))
            .judge(Claim::AtMost(3.0), loss)
            .because("Each change makes the slow rate jump to several times the target for a few periods (the rows above), and monitoring the hot half costs about 6 points, as on hotspot; the paper shows no phase change."),
    );
    let monitoring = run.and_then(monitoring_pct);
    rows.push(
        Row::new("§4.4", format!("{what}: monitoring, share of the run"), "< 1 % (no measurable slowdown)", monitoring.map(|m| fmt(m, 2, " %")))
            .judge(Claim::AtMost(1.0), monitoring)
            .because("A sampled hot huge page, split, misses the TLB on almost every access (uniform references over the hot half) and each miss to a poisoned base page faults."),
    );
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::reproduce::{results_of, Verdict};
    use serde_json::json;

    /// kstaled's row gives the pages it demoted and the share of the data left in slow
    /// memory at the end: 30 % in fast memory is 70 % slow.
    #[test]
    fn kstaled_shows_how_much_it_found_cold() {
        let k = json!({ "policy_report": { "demoted_pages": 12 }, "epochs": [{ "fast_resident_fraction": 1.0 }, { "fast_resident_fraction": 0.3 }] });
        assert_eq!(kstaled_demoted(&k).as_deref(), Some("12 pages; 70.0 % of the data slow at the end"));
    }

    #[test]
    fn the_cold_share_is_judged_on_the_steps_where_it_grew() {
        // 5 → 11 → 19 % grows at both steps; 100 → 100 → 100 at neither; 5 → 4 → 6 at
        // one of two (partly); a run not finished leaves it unmeasured.
        assert_eq!(grown_share(&[Some(5.0), Some(11.0), Some(19.0)]), Some(1.0));
        assert_eq!(grown_share(&[Some(100.0), Some(100.0), Some(100.0)]), Some(0.0));
        assert_eq!(grown_share(&[Some(5.0), Some(4.0), Some(6.0)]), Some(0.5));
        assert_eq!(grown_share(&[Some(5.0), None]), None);
        assert_eq!(Claim::AtLeast(1.0).judge(0.5), Verdict::Partly);
        // A loss of 2.53 % at x = 3 keeps the bound; 8.01 % is more than twice it.
        assert_eq!(Claim::AtMost(3.0).judge(2.53), Verdict::Reproduced);
        assert_eq!(Claim::AtMost(3.0).judge(8.01), Verdict::Not);
    }

    /// A tracking run of 200 references in two epochs, the second ending at cycle
    /// `end` (the first at 10^9), `sample_fault_s` of its 10 s in monitoring faults,
    /// `cold` % of its footprint cold at the last period and `mb_per_s` of migration.
    fn tracking_run(end: u64, sample_fault_s: f64, cold: u64, mb_per_s: f64) -> Value {
        json!({
            "summary": { "cycles": end, "seconds": 10.0, "references": 200 },
            "epochs": [{ "references": 100, "end_cycle": 1_000_000_000u64 }, { "references": 100, "end_cycle": end }],
            "policy_report": {
                "migration_mb_per_s": mb_per_s,
                "monitoring": { "sample_fault_seconds": sample_fault_s },
                "periods": [{ "hot_2m_bytes": 100 - cold, "hot_4k_bytes": 0, "cold_2m_bytes": cold, "cold_4k_bytes": 0 }],
            },
        })
    }

    #[test]
    fn the_tracking_claims_are_judged_on_the_figures_the_rows_show() {
        // After the first 100 references, all-fast takes 0.98·10^9 cycles, x = 3 %
        // 10^9 (98 %: a loss of 2 %, within 3) and x = 10 % 1.4·10^9 (70 %: a loss of
        // 30 %, more than twice 10). Cold 10 → 25 %: grew at the one step (1 of 1).
        // Migration 20 and 50 MB/s: a mean of 35, over 30 but within twice it.
        // Monitoring 0.05 and 0.25 s of 10 s: 0.5 and 2.5 %, the highest over
        // twice 1 %.
        let fast: &[(&str, &str)] = &[("policy", "all-fast")];
        let x3: &[(&str, &str)] = &[("policy", "thermostat"), ("policy.thermostat.tolerable_slowdown_pct", "3")];
        let x10: &[(&str, &str)] = &[("policy", "thermostat"), ("policy.thermostat.tolerable_slowdown_pct", "10")];
        let res = results_of(
            "hotspot",
            vec![
                (fast, tracking_run(1_980_000_000, 0.0, 0, 0.0)),
                (x3, tracking_run(2_000_000_000, 0.05, 10, 20.0)),
                (x10, tracking_run(2_400_000_000, 0.25, 25, 50.0)),
            ],
        );
        let rows = table(&res);
        let row = |what: &str| rows.iter().find(|r| r.what.starts_with(what)).unwrap_or_else(|| panic!("a row {what}"));
        let seen = |what: &str| (row(what).ours.clone(), row(what).verdict());
        assert_eq!(seen("hotspot, x = 3 %"), ("2.00 %".into(), Some(Verdict::Reproduced)));
        assert_eq!(seen("hotspot, x = 10 %"), ("30.00 %".into(), Some(Verdict::Not)));
        assert_eq!(seen("hotspot: cold share"), ("10.0 / 25.0 %".into(), Some(Verdict::Reproduced)));
        assert_eq!(seen("migration rate"), ("20.0–50.0 MB/s (mean 35.0)".into(), Some(Verdict::Partly)));
        assert_eq!(seen("monitoring (poison"), ("0.5–2.5 % (mean 1.5)".into(), Some(Verdict::Not)));
        // kstaled did not run; the phases sweep is not in these results.
        assert_eq!(row("hotspot: kstaled").verdict(), None);
        assert_eq!(row("hotspot, hot half moving (99.9 % of refs), x = 3 %: throughput").verdict(), Some(Verdict::NotMeasured));
    }

    #[test]
    fn the_full_matrix_is_the_docs() {
        let specs = sweeps(false);
        let runs: Vec<usize> = specs.iter().map(|s| s.points().len()).collect();
        // The tracking table: all-fast, kstaled and x = 3, 6, 10 % per workload;
        // the doc's phases run: thermostat beside all-fast.
        assert_eq!(runs, [5, 5, 5, 5, 5, 2]);
        let kv_hot = specs[0].points().into_iter().find(|p| p.options.get("policy.thermostat.tolerable_slowdown_pct").is_some_and(|x| x == "6")).expect("x = 6 %");
        assert_eq!(kv_hot.options["refs"], "209000000000");
        assert_eq!(kv_hot.options["footprint"], "16GiB");
        assert_eq!(kv_hot.options["workload.kv.popularity"], "\"hotspot\"");
        assert_eq!(kv_hot.options["policy.thermostat.period_s"], "30.0");
        assert!(!kv_hot.options.contains_key("machine.tlb.l2_small_entries"), "the paper's own TLBs");
        let phases = specs[5].points().into_iter().find(|p| p.options["policy"] == "thermostat").expect("thermostat");
        assert_eq!(phases.options["workload.hotspot.phases"], "4");
        assert_eq!(phases.options["policy.thermostat.period_s"], "30.0");
        assert!(!phases.options.contains_key("policy.thermostat.tolerable_slowdown_pct"), "the default target, 3 %");
        for s in specs.iter().chain(&sweeps(true)) {
            for p in s.points() {
                assert_eq!(p.options["mode"], "epochs", "{}: every run in epochs mode", s.name);
            }
        }
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
