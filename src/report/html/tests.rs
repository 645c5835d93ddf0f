use super::*;
use super::plot::x_span;
use super::run::{policy_panels, time_unit, TimeAxis};
use super::sweep::{loaded_latency_curves, missing_bars, Layout, DELAY_AXIS, SWEEP_METRICS};
use super::text::{cell, label, short_number, significant};
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
