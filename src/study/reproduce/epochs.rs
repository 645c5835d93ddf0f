//! Epochs mode against detailed mode (docs/epochs.md, "Validation"): every OS- and
//! hypervisor-level policy on kv, hotspot with phases, graph-bfs, stream and zipf, the
//! same run in both modes over a horizon detailed mode can run (about 10 simulated
//! seconds under first touch, periods scaled to it in seconds), and each summary
//! figure of epochs mode against detailed mode. Not a paper: tiersim's own
//! validation; the "paper" column is the bound of issue 36 (cycles within 5 %, the
//! fast tier's share within 3 points, pages moved within 15 %).

use super::{geometric_mean, number, sweep, Paper, Results, Row};
use crate::study::Spec;
use serde_json::Value;

pub const PAPER: Paper = Paper {
    name: "epochs",
    title: "Epochs mode against detailed mode: tiersim's own validation (not a paper)",
    doc: "docs/epochs.md",
    sweeps,
    setting,
    table,
    on_scoreboard: false,
};

/// The workloads, and the references of each that take about 11 simulated seconds
/// under first touch on each machine (measured; `hotspot` moves its hot region four
/// times).
const WORKLOADS: [&str; 5] = ["kv", "hotspot", "graph-bfs", "stream", "zipf"];

/// References per simulated second of each workload under first touch on a preset's
/// machine, 1 GiB, in millions (rounded down from runs of 2·10⁷ references).
fn rate(preset: &str, workload: &str) -> u64 {
    let table: [(&str, [u64; 5]); 4] = [
        ("cxl", [22, 15, 50, 25, 16]),
        ("optane", [24, 12, 40, 16, 12]),
        ("thermostat", [135, 40, 149, 130, 61]),
        ("memos", [118, 24, 97, 99, 35]),
    ];
    let row = table.iter().find(|(p, _)| *p == preset).map_or([20; 5], |r| r.1);
    row[WORKLOADS.iter().position(|w| *w == workload).expect("a validated workload")]
}

/// A group of policies that share a machine: its preset, the policies, and the
/// settings that scale their periods to the horizon (in seconds, so that both modes
/// run the same periods: epochs mode does not apply per-run scaling).
struct Group {
    name: &'static str,
    preset: &'static str,
    policies: &'static [&'static str],
    tenant_kind: &'static str,
    settings: &'static str,
}

const GROUPS: [Group; 5] = [
    Group {
        name: "linux",
        preset: "cxl",
        policies: &["lru", "numa-balancing", "linux-tiering", "tpp", "damon-tiering"],
        tenant_kind: "process",
        settings: "set.'policy.lru.scan_interval_s' = 0.5
set.'policy.damon-tiering.cold_min_age_us' = 2_000_000
set.'policy.damon-tiering.cold_quota_reset_interval_ms' = 2000
set.'policy.damon-tiering.hot_quota_reset_interval_ms' = 2000",
    },
    Group {
        name: "thermostat",
        preset: "thermostat",
        policies: &["thermostat", "kstaled"],
        tenant_kind: "process",
        settings: "set.'policy.thermostat.period_s' = 1.0
set.'policy.thermostat.periods_per_run' = 0
set.'policy.kstaled.scan_interval_s' = 0.5
set.'policy.kstaled.idle_s' = 2.0
set.'policy.kstaled.scans_per_run' = 0",
    },
    Group {
        name: "memos",
        preset: "memos",
        policies: &["memos"],
        tenant_kind: "process",
        settings: "set.'policy.memos.samplings_per_pass' = 20
set.'policy.memos.interval_s' = 2.0
set.'policy.memos.passes_per_run' = 0",
    },
    Group { name: "optane", preset: "optane", policies: &["nimble", "hemem"], tenant_kind: "process", settings: "set.'policy.nimble.period_s' = 1.0" },
    Group {
        name: "optane-vm",
        preset: "optane",
        policies: &["hmm-v", "ept-scanner"],
        tenant_kind: "vm",
        settings: "set.'policy.hmm-v.monitor_window_s' = 0.1
set.'policy.hmm-v.first_switch_s' = 0.5
set.'policy.hmm-v.clock_switch_s' = 5.0
set.'policy.ept-scanner.monitor_window_s' = 0.1",
    },
];

/// `--quick`: kv and hotspot, one policy per machine, about 2 simulated seconds.
const QUICK_WORKLOADS: [&str; 2] = ["kv", "hotspot"];

fn sweeps(quick: bool) -> Vec<Spec> {
    let seconds = if quick { 2 } else { 11 };
    let mut specs = Vec::new();
    for g in &GROUPS {
        let workloads: &[&str] = if quick { &QUICK_WORKLOADS } else { &WORKLOADS };
        let policies: Vec<&str> = if quick { g.policies[..1].to_vec() } else { g.policies.to_vec() };
        for w in workloads {
            let refs = format!("refs = {}", rate(g.preset, w) * 1_000_000 * seconds);
            let run = [
                format!("preset = \"{}\"", g.preset),
                format!("workload = \"{w}\""),
                "footprint = \"1GiB\"".to_string(),
                refs,
                format!("tenant_kind = \"{}\"", g.tenant_kind),
                "set.'workload.hotspot.phases' = 4".to_string(),
                g.settings.to_string(),
            ];
            let run: Vec<&str> = run.iter().map(String::as_str).collect();
            let mut all = vec!["first-touch"];
            all.extend(&policies);
            let axes = format!("policy = [{}]\nmode = [\"detailed\", \"epochs\"]", all.iter().map(|p| format!("\"{p}\"")).collect::<Vec<_>>().join(", "));
            specs.push(sweep(&format!("{}-{w}", g.name), &run, &axes));
        }
    }
    specs
}

fn setting(quick: bool, _: &Results) -> String {
    let text = if quick {
        "--quick: kv and hotspot (four phases), the first policy of each machine and first touch, about 2 simulated seconds, 1 GiB; periods scaled in seconds as in the full matrix."
    } else {
        "Each policy on its paper's machine (Linux's on the cxl preset, Thermostat and kstaled on the thermostat preset, memos on the memos preset, Nimble and HeMem on optane, \
         HMM-V and its EPT scanner with the workload in a VM on optane), with first touch, on kv, hotspot (four phases), graph-bfs, stream and zipf at 1 GiB, for the references \
         that take about 11 simulated seconds under first touch; periods scaled to the horizon in seconds (Thermostat 1 s, kstaled and lru scans 0.5 s, memos rounds 2 s, \
         Nimble 1 s, HMM-V's and the EPT scanner's windows 0.1 s, DAMON's cold age 2 s), the same in both modes. \
         The speed-ups compare runs made two at a time on a shared machine: give -j 1 on an idle one to measure speed."
    };
    text.into()
}

/// The bounds of issue 36: cycles (%), the fast share (points), pages moved (%).
const CYCLES_PCT: f64 = 5.0;
const SHARE_POINTS: f64 = 3.0;
const MOVES_PCT: f64 = 15.0;
/// Fewer pages moved than this in both modes count as within the bound.
const FEW_MOVES: f64 = 16.0;

/// How epochs mode's run `e` compares with detailed mode's `d`: the cycles' error in
/// %, the fast share's in points, the pages moved in both, the speed-up.
struct Pair {
    cycles: f64,
    share: f64,
    moves: (f64, f64),
    speedup: f64,
}

impl Pair {
    fn of(d: &Value, e: &Value) -> Option<Pair> {
        let (dc, ec) = (number(d, "/summary/cycles")?, number(e, "/summary/cycles")?);
        let (ds, es) = (number(d, "/summary/fast_tier_fraction")?, number(e, "/summary/fast_tier_fraction")?);
        Some(Pair {
            cycles: (ec - dc) / dc * 100.0,
            share: (es - ds) * 100.0,
            moves: (number(d, "/summary/page_moves")?, number(e, "/summary/page_moves")?),
            speedup: number(d, "/sim/wall_seconds")? / number(e, "/sim/wall_seconds")?.max(1e-9),
        })
    }

    /// The pages moved: the relative error, when detailed moved any.
    fn moves_pct(&self) -> Option<f64> {
        let (d, e) = self.moves;
        (d > 0.0).then(|| (e - d) / d * 100.0)
    }

    /// The bounds this pair is outside of, by name.
    fn outside(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.cycles.abs() > CYCLES_PCT {
            out.push("cycles");
        }
        if self.share.abs() > SHARE_POINTS {
            out.push("fast share");
        }
        // (A handful of moves either way is within: 15 % of a few pages is noise.)
        let (d, e) = self.moves;
        if d.max(e) >= FEW_MOVES && self.moves_pct().is_none_or(|m| m.abs() > MOVES_PCT) {
            out.push("pages moved");
        }
        out
    }
}

fn table(res: &Results) -> Vec<Row> {
    let mut rows = Vec::new();
    let (mut within, mut of, mut speedups) = (0, 0, Vec::new());
    let mut outliers = Vec::new();
    for (sweep, _) in &res.sweeps {
        let s = &sweep.name;
        for p in res.axis_values(s, "policy") {
            let at = |mode| res.find(s, &[("policy", p.as_str()), ("mode", mode)]);
            let name = format!("{s}: {p}");
            let pair = at("detailed").zip(at("epochs")).and_then(|(d, e)| Pair::of(d, e));
            let ours = pair.as_ref().map(|x| {
                of += 1;
                speedups.push(x.speedup);
                let outside = x.outside();
                if outside.is_empty() {
                    within += 1;
                } else {
                    outliers.push(format!("{name} ({})", outside.join(", ")));
                }
                format!(
                    "cycles {:+.2} %, fast share {:+.2} points, pages moved {:.0} → {:.0}{}; {:.1}×{}",
                    x.cycles,
                    x.share,
                    x.moves.0,
                    x.moves.1,
                    x.moves_pct().map_or(String::new(), |m| format!(" ({m:+.1} %)")),
                    x.speedup,
                    if outside.is_empty() { String::new() } else { format!("; outside: {}", outside.join(", ")) }
                )
            });
            let ours = ours.or_else(|| failure(res, s, &p));
            rows.push(Row::new("issue 36", name, "within 5 % / 3 points / 15 %", ours));
        }
    }
    rows.push(Row::new(
        "issue 36",
        "pairs within every bound",
        "all",
        (of > 0).then(|| format!("{within} of {of}; outside: {}", if outliers.is_empty() { "none".to_string() } else { outliers.join("; ") })),
    ));
    let (lo, hi) = speedups.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    rows.push(Row::new("issue 36", "speed-up of epochs mode (wall time, detailed / epochs)", "-", geometric_mean(&speedups).map(|g| format!("geometric_mean {g:.1}× ({lo:.1}–{hi:.1}×)"))));
    rows
}

/// Why a pair has no figures: the first failed run's message, if one failed.
fn failure(res: &Results, sweep: &str, policy: &str) -> Option<String> {
    let (_, runs) = res.sweeps.iter().find(|(s, _)| s.name == sweep)?;
    runs.iter()
        .filter(|r| r.axes.iter().any(|(k, v)| k == "policy" && v == policy))
        .find_map(|r| r.error.as_ref())
        .map(|e| format!("failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sweep_crosses_first_touch_and_its_policies_with_both_modes() {
        let full = sweeps(false);
        assert_eq!(full.len(), GROUPS.len() * WORKLOADS.len());
        for s in &full {
            let axes: Vec<&str> = s.axes.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(axes, ["policy", "mode"], "{}", s.name);
        }
        let policies: usize = GROUPS.iter().map(|g| g.policies.len()).sum();
        assert_eq!(policies, 12, "the twelve OS- and hypervisor-level policies of issue 36");
        assert_eq!(sweeps(true).len(), GROUPS.len() * QUICK_WORKLOADS.len());
    }

    #[test]
    fn a_pair_is_outside_the_bounds_it_misses() {
        let p = Pair { cycles: 4.0, share: -3.5, moves: (100.0, 120.0), speedup: 10.0 };
        assert_eq!(p.outside(), ["fast share", "pages moved"]);
        let p = Pair { cycles: -5.5, share: 0.0, moves: (0.0, 3.0), speedup: 10.0 };
        assert_eq!(p.outside(), ["cycles"], "a few moves where detailed made none are within");
        let p = Pair { cycles: 0.0, share: 0.0, moves: (1.0, 0.0), speedup: 10.0 };
        assert!(p.outside().is_empty(), "one page against none is within");
        let p = Pair { cycles: 0.0, share: 0.0, moves: (0.0, 40.0), speedup: 10.0 };
        assert_eq!(p.outside(), ["pages moved"]);
    }
}
