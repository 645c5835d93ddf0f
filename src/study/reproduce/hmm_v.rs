//! HMM-V (Sha, Li, Luo, Wang and Wang): its own figures on our model
//! (docs/policies/hmm-v.md). Fig. 2a and §5.3.2 (VM memory scanned per window by the
//! GPT and the EPT scanner, and what tracking costs), Tables 3–5 (the three migration
//! variants), Fig. 4 (the ablation), Fig. 5 (fixed and dynamic hot sets) and §5.9.1
//! (four VMs, island against pool). The `optane` preset (the paper's Table 2), VM
//! tenants with 4 KiB pages. Fig. 4, Fig. 5 and §5.9.1 run at the paper's own periods
//! — 600 ms windows, the 60 s clock switch — for 300 simulated seconds in epochs mode
//! (docs/epochs.md), with 4 GiB per VM (the paper's 16–36 GB ÷ 4–9: what two runs at
//! a time hold on a machine of 24 GB, at about one simulated second per wall second);
//! Fig. 2a (already in the paper's 600 ms windows) and Tables 3–5 (one migration in
//! 50 ms rounds) stay in detailed mode at the paper's footprints ÷ 16. The comparisons
//! with its baselines are the paper `hmm-v-baselines`.

use super::{fmt, geometric_mean, number, relative_performance_pct, relative_throughput_pct, slot_of, sweep, Claim, Paper, Results, Row, NO_EFFECT};
use crate::study::Spec;
use serde_json::Value;

pub const PAPER: Paper = Paper {
    name: "hmm-v",
    title: "HMM-V: heterogeneous memory management for virtualization (Sha, Li, Luo, Wang and Wang)",
    doc: "docs/policies/hmm-v.md",
    sweeps,
    setting,
    table,
    on_scoreboard: true,
};

/// Every run: the paper's machine, one VM per core, 4 KiB pages.
const VM: &str = r#"preset = "optane"
tenant_kind = "vm"
set.'machine.page_table.thp' = false"#;

/// The runs at the paper's periods: epochs mode, HMM-V's own defaults (600 ms
/// windows, 8 to a round, the clock switch every 60 s, the first round at 0.6 s; the
/// EPT tracker's window likewise, §5.3.2), one report point per simulated second (the
/// preset's 2.2 GHz).
const PAPER_PERIODS: &str = r#"mode = "epochs"
set.'engine.epoch_cycles' = 2200000000
set.'policy.ept-scanner.monitor_window_s' = 0.6"#;

/// Simulated seconds of a run at the paper's periods: five clock switches (rounds at
/// 0.6, 60, 120, 180 and 240 s); `--quick`: two.
fn horizon_s(quick: bool) -> f64 {
    if quick {
        130.0
    } else {
        300.0
    }
}

/// References for `seconds` at all-fast's rate, for runs whose workload changes
/// phase by references (a run and its all-fast baseline then do the same work).
/// All-fast's rates in epochs mode, 20 s, 4 GiB (measured 2026-11-28, with the
/// calibrations that follow the footprint's growth): `hotspot` (hot set 25 %, 90 % of
/// the accesses) 7.58 M references/s, `seqscan` (window 20 %, half writes) 119.5 M/s,
/// `graph-bfs` (4 GiB asked, 2.25 GiB made) 37.3 M/s.
fn refs_for(rate_per_s: f64, seconds: f64) -> String {
    format!("refs = {:.0}", rate_per_s * seconds)
}

/// Fig. 2a's access patterns: name, label, options, and the hot-set sizes of the full
/// matrix. `90` is the paper's (90 % of the accesses on a hot set of X % of the RSS);
/// `moving` puts every access on a hot set that moves four times, so that the VM maps
/// four times what it uses, as the paper's VM maps 64 GB for a 10 GB RSS.
const PATTERNS: &[(&str, &str, &str, &str)] = &[
    ("90", "90 % of accesses on the hot set", "set.'workload.hotspot.hot_refs' = 0.9", "0.1, 0.2, 0.4, 0.8"),
    (
        "moving",
        "every access on a hot set that moves 4×",
        "set.'workload.hotspot.hot_refs' = 1.0\nset.'workload.hotspot.phases' = 4",
        "0.05, 0.1, 0.2",
    ),
];

/// Fig. 2a's trackers: name and options. They track all the time and move nothing;
/// `none` is HMM-V never switched on, the same placement without tracking, which the
/// tracking overhead is measured against. HMM-V's window is its default, the paper's
/// 600 ms (§5.3.2), and the EPT scanner's is set to it; `--quick` runs both at 100 ms.
fn trackers(quick: bool) -> Vec<(&'static str, String)> {
    let (hmmv_window, ept_window_s) = if quick {
        ("\nset.'policy.hmm-v.monitor_window_s' = 0.1\nset.'policy.hmm-v.first_switch_s' = 0.1", 0.1)
    } else {
        ("", 0.6)
    };
    let gpt = format!("policy = \"hmm-v\"\nset.'policy.hmm-v.clock_switch' = false\nset.'policy.hmm-v.migrate' = false{hmmv_window}");
    vec![
        ("gpt", gpt.clone()),
        ("gpt-nomlq", format!("{gpt}\nset.'policy.hmm-v.multi_level_queue' = false")),
        (
            "ept",
            format!("policy = \"ept-scanner\"\nset.'policy.ept-scanner.monitor_window_s' = {ept_window_s:?}\nset.'policy.ept-scanner.migrate' = false"),
        ),
        ("none", "policy = \"hmm-v\"\nset.'policy.hmm-v.first_switch_s' = 1e9\nset.'policy.hmm-v.migrate' = false".into()),
    ]
}

/// Fig. 4's workloads: name, the paper's name, all-fast's references per simulated
/// second, options. `seqscan` is the paper's sequential access (36 GB, a hot set of
/// 7.2 GB): 50 % writes, every access in a window of 20 % that moves four times over
/// the run, once per 75 s (the paper: "periodically"), longer than a clock switch.
const FIG4_WORKLOADS: &[(&str, &str, f64, &str)] = &[
    ("graph-bfs", "graph500", 37.3e6, "workload = \"graph-bfs\"\nfootprint = \"4GiB\""),
    (
        "seqscan",
        "sequential access",
        119.5e6,
        "workload = \"seqscan\"
footprint = \"4GiB\"
set.'workload.write_fraction' = 0.5
set.'workload.seqscan.window' = 0.2
set.'workload.seqscan.phases' = 4",
    ),
];

/// Fig. 4's variants of HMM-V, each with one component swapped for the one it is
/// measured against (§5.5): name, label, HMM-V's lead over it in the paper (graph500,
/// sequential access) as the paper gives it and as a change, why ours differs
/// (sequential access; graph500's is [`FIG4_GRAPH_CAUSE`]), options.
const ABLATION: &[(&str, &str, [(&str, f64); 2], &str, &str)] = &[
    (
        "ept",
        "+EPT scanner",
        [("+3.9 %", 0.039), ("+3.2 %", 0.032)],
        "Tracking costs little on our workloads: +EPT scanner was level with HMM-V in the scaled matrix (docs/policies/hmm-v.md, Fig. 4) \
         and tracking stayed within ±0.2 % of no tracking in Fig. 2b; the paper's tracking costs are a TLB-friendly program's (429.mcf).",
        "set.'policy.hmm-v.tracker' = \"ept\"\nset.'policy.hmm-v.multi_level_queue' = false",
    ),
    (
        "fixed",
        "+fixed threshold",
        [("+9.4 %", 0.094), ("+65 %", 0.65)],
        "A sweeping page is seen in only some windows, so its degree stays at or under 8 and few pages pass the fixed threshold \
         (920 in the scaled matrix, where HMM-V led by 35 %: docs/policies/hmm-v.md, Fig. 4); not yet explained at the paper's periods.",
        "set.'policy.hmm-v.classifier' = \"fixed\"",
    ),
    (
        "linux",
        "+PM_Linux",
        [("+16.3 %", 0.163), ("+9.3 %", 0.093)],
        "PM_Linux's serial moves make a round's migration only a little longer (1.1 s against 0.9 in the scaled matrix, where +PM_Linux was \
         1.8 % behind), a small part of the run (docs/policies/hmm-v.md, Fig. 4); not yet explained at the paper's periods.",
        "set.'policy.hmm-v.migration' = \"linux\"",
    ),
];

/// Why ours differs from the paper's on Fig. 4's graph500, whatever the variant.
const FIG4_GRAPH_CAUSE: &str = "Our graph-bfs builds its graph and then runs BFS over it in the order it touched it, so first touch already puts \
the hottest arrays in DRAM and HMM-V's rounds exchange pages of nearly the same degree: every variant stays near no migration (within 1 % in the \
scaled matrix, docs/policies/hmm-v.md, Fig. 4). The paper's lead needs a run whose first-touch placement is bad.";

/// Why HMM-V reaches less of all-DRAM than the paper's on a fixed hot set that fits in
/// DRAM (docs/policies/hmm-v.md, Fig. 5a and 5).
const FIG5A_CAUSE: &str = "A round moves the guest's page-table pages to NVM: HMM-V's GPT tracker counts a page from the leaf entries \
that map it, and none maps a page-table page, so their degree is 0 (docs/policies/hmm-v.md, Fig. 5a); with 4 KiB pages at 4 GiB nearly every \
reference misses the TLB, so walks then read NVM (9.1 → 5.6 M references/s). Besides, the 10 % of accesses on the cold pages in NVM cost about \
20 % of the time in our loop of 4 instructions per reference, where the paper's benchmark computes more between accesses.";

/// The four VMs of §5.9.1: a fotonik3d-like stream, graph500, a Redis-like store with
/// hot keys and page rank, 4 GiB each asked (graph-bfs and pagerank make 2.25 GiB; the
/// paper's VMs have 40 GB, fotonik3d a 10 GB RSS), sharing a DRAM of 20 % of their
/// total. Bounded by simulated time: each VM's performance is the references it
/// issued against all-fast's in the same seconds.
const FOUR_VMS: &str = r#"tenants = ["vm:stream", "vm:graph-bfs", "vm:kv", "vm:pagerank"]
set.'workload.kv.popularity' = "hotspot"
footprint = "4GiB"
set.'machine.tiers.fast.capacity' = "20%""#;

fn sweeps(quick: bool) -> Vec<Spec> {
    let mut out = Vec::new();
    // §5.3.1, Fig. 2a: 1 GiB RSS, DRAM 50 %; the full matrix's 2.5·10⁷ references are
    // about 2.9 simulated s, four 600 ms windows.
    let fig2a_refs = if quick { "refs = 6_000_000" } else { "refs = 25_000_000" };
    for &(pattern, _, options, sizes) in PATTERNS {
        if quick && pattern != "moving" {
            continue;
        }
        let sizes = if quick { "0.1" } else { sizes };
        for (tracker, policy) in trackers(quick) {
            if tracker == "gpt-nomlq" && pattern == "moving" {
                continue;
            }
            out.push(sweep(
                &format!("fig2a-{pattern}-{tracker}"),
                &[VM, "workload = \"hotspot\"", "footprint = \"1GiB\"", "set.'machine.tiers.fast.capacity' = \"50%\"", fig2a_refs, options, &policy],
                &format!("'workload.hotspot.hot_size' = [{sizes}]"),
            ));
        }
    }
    // §5.4.2, Tables 3–5: random read / write over the whole RSS, every page first in
    // NVM and DRAM large enough for all of it; one-window rounds of 50 ms back to back,
    // so each page moves to DRAM in the round after its first touch.
    let (footprints, refs) = if quick { ("\"128MiB\"", "refs = 7_500_000") } else { ("\"256MiB\", \"1GiB\"", "refs = 15_000_000") };
    out.push(sweep(
        "tables",
        &[
            VM,
            "workload = \"uniform\"",
            "set.'machine.tiers.fast.capacity' = \"110%\"",
            "set.'machine.tiers.slow.capacity' = \"150%\"",
            refs,
            "set.'policy.hmm-v.first_touch_slow' = true
set.'policy.hmm-v.windows' = 1
set.'policy.hmm-v.clock_switch' = false
set.'policy.hmm-v.monitor_window_s' = 0.05
set.'policy.hmm-v.first_switch_s' = 0.05",
        ],
        &format!(
            "'workload.write_fraction' = [0.0, 1.0]
footprint = [{footprints}]
policy = [\"hmm-v\", \"all-slow\", \"all-fast\"]
'policy.hmm-v.migration' = [\"pml\", \"write-protect\", \"linux\"]"
        ),
    ));
    // §5.5, Fig. 4: DRAM 20 % of the RSS; HMM-V, no migration and all-DRAM, then each
    // variant on its own, at the paper's periods. Not in `--quick`.
    let horizon = horizon_s(quick);
    let seconds = format!("seconds = {horizon:?}");
    for &(w, _, rate, options) in FIG4_WORKLOADS.iter().filter(|_| !quick) {
        let refs = refs_for(rate, horizon);
        let run = [VM, PAPER_PERIODS, options, &refs, "set.'machine.tiers.fast.capacity' = \"20%\""];
        out.push(sweep(&format!("fig4-{w}"), &run, "policy = [\"hmm-v\", \"first-touch\", \"all-fast\"]"));
        for &(name, _, _, _, options) in ABLATION {
            let mut with = run.to_vec();
            with.extend(["policy = \"hmm-v\"", options]);
            out.push(sweep(&format!("fig4-{w}-{name}"), &with, ""));
        }
    }
    // §5.6.1, Fig. 5a: fixed hot sets, DRAM 50 %, bounded by time (the hot set does
    // not move): the throughput over the last half of the run.
    let sizes = if quick { "0.2, 0.8" } else { "0.1, 0.2, 0.4, 0.8" };
    let hotspot = [VM, PAPER_PERIODS, "workload = \"hotspot\"", "footprint = \"4GiB\"", "set.'workload.hotspot.hot_refs' = 0.9", "set.'machine.tiers.fast.capacity' = \"50%\""];
    let mut fig5a = hotspot.to_vec();
    fig5a.push(&seconds);
    out.push(sweep("fig5a", &fig5a, &format!("'workload.hotspot.hot_size' = [{sizes}]\npolicy = [\"hmm-v\", \"all-fast\"]")));
    if !quick {
        // §5.6.2, Fig. 5b: four hot regions of 25 % in turn (the paper: 4 GB of 16),
        // 75 s each at all-fast's rate, so that each stage sees a clock switch.
        let mut fig5b = hotspot.to_vec();
        let refs = refs_for(7.58e6, horizon);
        fig5b.extend(["set.'workload.hotspot.hot_size' = 0.25", "set.'workload.hotspot.phases' = 4", &refs]);
        out.push(sweep("fig5b", &fig5b, "policy = [\"hmm-v\", \"first-touch\", \"all-fast\"]"));
        // §5.9.1: island and pool, and all-fast once.
        out.push(sweep("four-vms", &[VM, PAPER_PERIODS, FOUR_VMS, &seconds, "policy = \"hmm-v\""], "'policy.hmm-v.mode' = [\"island\", \"pool\"]"));
        out.push(sweep("four-vms-dram", &[VM, PAPER_PERIODS, FOUR_VMS, &seconds, "policy = \"all-fast\""], ""));
    }
    out
}

fn setting(quick: bool, _: &Results) -> String {
    let text = if quick {
        "--quick: Fig. 2a on the moving hot set of 10 % only, in 100 ms windows (the paper: 600 ms); Tables 3–5 at 128 MiB (the paper's 2 GB ÷ 16) with 7.5·10⁶ references \
         (as many per page as the full matrix's 256 MiB); Fig. 5a at the paper's periods for 130 simulated s (two clock switches) in epochs mode, 4 GiB, hot sets of 20 and 80 %; \
         no Fig. 4, Fig. 5b nor four VMs. Otherwise as the full matrix."
    } else {
        "The optane preset (Table 2), one vCPU per VM, 4 KiB pages. Fig. 4, Fig. 5 and the four VMs at the paper's own periods (600 ms windows, the 60 s clock switch, \
         the first round at 0.6 s) for 300 simulated s in epochs mode (docs/epochs.md), 4 GiB per VM (the paper's 16–36 GB ÷ 4–9; graph-bfs and pagerank make 2.25 GiB); \
         Fig. 4 and 5b bounded by references (all-fast's rate × 300 s, so each run does all-fast's work), Fig. 5a and the four VMs by time. \
         Fig. 2a in the paper's 600 ms windows and Tables 3–5 (one migration, in 50 ms rounds) in detailed mode at footprints of the paper ÷ 16 (16 GB → 1 GiB). \
         No migration (first touch) where the paper has NUMA balancing (Fig. 4, 5b; `tiersim reproduce hmm-v-baselines` runs NUMA balancing itself)."
    };
    text.into()
}

/// The mean of `key` over the windows of run `r`'s report.
fn windows_mean(r: &Value, key: &str) -> Option<f64> {
    let w = r.pointer("/policy_report/windows")?.as_array()?;
    (!w.is_empty()).then(|| w.iter().map(|x| x[key].as_f64().unwrap_or(0.0)).sum::<f64>() / w.len() as f64)
}

/// `bytes` in MiB, without decimals.
fn mib(bytes: f64) -> String {
    fmt(bytes / f64::from(1 << 20), 0, " MiB")
}

/// How much slower run `r` is than run `base`, in % of `base`'s cycles.
fn slowdown_pct(r: &Value, base: &Value) -> Option<f64> {
    Some((number(r, "/summary/cycles")? / number(base, "/summary/cycles")? - 1.0) * 100.0)
}

/// The smallest and largest of `v` as `lo…hi` with a unit, or the one value.
fn span(v: &[f64], unit: &str) -> String {
    let (lo, hi) = v.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    if v.len() == 1 || lo == hi {
        fmt(lo, 2, unit)
    } else {
        format!("{lo:.2}…{hi:.2}{unit}")
    }
}

/// Size text such as `256MiB` or `1GiB` in MiB.
fn size_mib(text: &str) -> Option<f64> {
    let (n, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit())?);
    let n: f64 = n.parse().ok()?;
    match unit {
        "MiB" => Some(n),
        "GiB" => Some(n * 1024.0),
        _ => None,
    }
}

/// Tables 3 and 4: RSS in GB, then the slowdown against DRAM in % with NVM only,
/// PM_Linux, PM_WP and PM_PML, for random read and random write.
const TABLES_3_4: [[(u32, [f64; 4]); 4]; 2] = [
    [(2, [62.8, 6.9, 0.7, 0.1]), (4, [60.6, 7.0, 2.8, 1.5]), (8, [72.1, 7.6, 3.1, 1.7]), (16, [78.0, 8.0, 3.3, 2.2])],
    [(2, [188.2, 4.8, 0.7, 0.3]), (4, [190.6, 5.0, 3.6, 1.8]), (8, [189.8, 5.4, 5.7, 2.5]), (16, [183.5, 10.0, 8.4, 3.4])],
];

/// Table 5: RSS in GB, then the VMTraps of page migration, in thousands, with PM_Linux,
/// PM_WP and PM_PML, for random read and random write, then PM_PML's at most, in
/// thousands (1 where the paper prints `< 1`).
const TABLE_5: [[(u32, [&str; 3], f64); 4]; 2] = [
    [(2, ["523", "526", "< 1"], 1.0), (4, ["1 039", "1 051", "< 1"], 1.0), (8, ["2 097", "2 102", "1"], 1.0), (16, ["4 188", "4 203", "2"], 2.0)],
    [(2, ["524", "1 030", "< 1"], 1.0), (4, ["1 049", "1 988", "< 1"], 1.0), (8, ["2 080", "3 927", "1"], 1.0), (16, ["4 196", "7 721", "2"], 2.0)],
];

/// Base pages (4 KiB) in a GB of the paper's RSS, as Table 5's rows count them (2 GB:
/// 512 k pages).
const PAGES_PER_GB: f64 = 256.0 * 1024.0;

/// The claim of a slowdown of `pct` % against all-DRAM, on ours as a fraction: a
/// change, or no change where the paper's is below what counts as an effect.
fn slowdown_claim(pct: f64) -> Claim {
    if pct < 100.0 * NO_EFFECT {
        Claim::NoChange(NO_EFFECT)
    } else {
        Claim::Change(pct / 100.0)
    }
}

/// The migration variants of Tables 3–5 as the sweep names them, and as the paper.
const VARIANTS: [(&str, &str); 3] = [("linux", "PM_Linux"), ("write-protect", "PM_WP"), ("pml", "PM_PML")];

fn fig2a_rows(res: &Results, rows: &mut Vec<Row>) {
    for &(pattern, label, _, _) in PATTERNS {
        let gpt = format!("fig2a-{pattern}-gpt");
        if !res.has(&gpt) {
            continue;
        }
        let (nomlq, ept, none) = (format!("fig2a-{pattern}-gpt-nomlq"), format!("fig2a-{pattern}-ept"), format!("fig2a-{pattern}-none"));
        let mut overheads = Some((Vec::new(), Vec::new(), Vec::new()));
        for h in res.axis_values(&gpt, "workload.hotspot.hot_size") {
            let at = [("workload.hotspot.hot_size", h.as_str())];
            let (g, q, e, n) = (res.find(&gpt, &at), res.find(&nomlq, &at), res.find(&ept, &at), res.find(&none, &at));
            let scanned = g.zip(e).and_then(|(g, e)| {
                let total = g.pointer("/policy_report/vms/0/gpt_pages")?.as_f64()?;
                let queueless = if res.has(&nomlq) { format!("; no queue {}", mib(windows_mean(q?, "mapped_bytes")?)) } else { String::new() };
                Some(format!(
                    "GPT {} ({:.0} of {total:.0} page-table pages{queueless}), EPT {}",
                    mib(windows_mean(g, "mapped_bytes")?),
                    windows_mean(g, "gpt_pages")?,
                    mib(windows_mean(e, "mapped_bytes")?)
                ))
            });
            let pct: f64 = h.parse().unwrap_or(0.0) * 100.0;
            rows.push(Row::new(
                "§5.3.1, Fig. 2a",
                format!("{label}, hot set {pct:.0} % of 1 GiB: VM memory scanned per window"),
                "GPT follows the hot ratio; EPT scans every mapping (64 GB for a 10 GB RSS)",
                scanned,
            ));
            overheads = overheads.and_then(|(mut gs, mut qs, mut es)| {
                let n = n?;
                gs.push(slowdown_pct(g?, n)?);
                if res.has(&nomlq) {
                    qs.push(slowdown_pct(q?, n)?);
                }
                es.push(slowdown_pct(e?, n)?);
                Some((gs, qs, es))
            });
        }
        // Judged on the GPT scanner's largest slowdown, in %.
        let ours = overheads.filter(|(gs, _, _)| !gs.is_empty()).map(|(gs, qs, es)| {
            let queueless = if qs.is_empty() { String::new() } else { format!(", no queue {}", span(&qs, " %")) };
            (gs.iter().copied().fold(f64::MIN, f64::max), format!("GPT {}{queueless}, EPT {}", span(&gs, " %"), span(&es, " %")))
        });
        rows.push(
            Row::measured(
                "§5.3.2, Fig. 2b",
                format!("{label}: tracking slowdown against no tracking, over the hot sets, judged: GPT < 2 %"),
                "EPT up to 20 %, GPT 2.6 % (429.mcf); GPT < 2 % in windows ≥ 600 ms",
                ours,
                Claim::AtMost(2.0),
            )
            .because(
                "Our hotspot over 1 GiB misses the TLB on nearly every access, so flushing the VM's translations every window costs almost nothing \
                 and tracking stays within ±0.2 % of no tracking (docs/policies/hmm-v.md, Fig. 2a); the paper's slowdowns are 429.mcf's, \
                 a TLB-friendly program that loses its TLB every window, which we do not run.",
            ),
        );
    }
}

fn tables_rows(res: &Results, rows: &mut Vec<Row>) {
    for (i, rw) in res.axis_values("tables", "workload.write_fraction").iter().enumerate() {
        let access = if i == 0 { "random read" } else { "random write" };
        for fp in res.axis_values("tables", "footprint") {
            let gb = size_mib(&fp).map_or(0, |m| (m * 16.0 / 1024.0) as u32);
            let at = |policy: &'static str, how: &'static str| {
                let mut axes = vec![("workload.write_fraction", rw.as_str()), ("footprint", fp.as_str()), ("policy", policy)];
                if !how.is_empty() {
                    axes.push(("policy.hmm-v.migration", how));
                }
                res.find("tables", &axes)
            };
            let dram = at("all-fast", "");
            let moved: Vec<Option<&Value>> = VARIANTS.iter().map(|(how, _)| at("hmm-v", how)).collect();
            let what = format!("{access}, {fp} (the paper's {gb} GB)");
            let names = VARIANTS.map(|v| v.1).join(" / ");
            let paper = TABLES_3_4[i].iter().find(|t| t.0 == gb).map(|t| t.1);
            // Judged on PM_PML's slowdown (the last), as a fraction.
            let ours = dram.and_then(|d| {
                let all: Option<Vec<f64>> = std::iter::once(at("all-slow", "")).chain(moved.iter().copied()).map(|r| slowdown_pct(r?, d)).collect();
                all.map(|v| (v[3] / 100.0, v.iter().map(|x| format!("{x:.1}")).collect::<Vec<_>>().join(" / ") + " %"))
            });
            let row = Row::new(
                &format!("§5.4.2, Table {}", 3 + i),
                format!("{what}: slowdown against all-DRAM, NVM only / {names}, judged: PM_PML"),
                paper.map(|p| p.map(|x| format!("{x:.1}")).join(" / ") + " %").as_deref().unwrap_or("— (the paper: 2–16 GB)"),
                ours.as_ref().map(|o| o.1.clone()),
            );
            rows.push(match paper {
                Some(p) => row.judge(slowdown_claim(p[3]), ours.map(|o| o.0)).because(
                    "Our slowdowns include each page's time in NVM before its round (every page starts there), the part all three variants share, \
                     and our runs of 7.5–15·10⁶ references are short next to the paper's, so the migration is a larger share of the run \
                     (docs/policies/hmm-v.md, Tables 3–5); PM_PML < PM_WP < PM_Linux holds on every row, as in the paper.",
                ),
                None => row,
            });
            let traps: Option<Vec<(f64, f64)>> = moved
                .iter()
                .map(|r| {
                    let r = (*r)?;
                    let exits = number(r, "/vm_exits/ept_violation")? + number(r, "/vm_exits/write_protect")?;
                    let pages = number(r, "/vm_moves/pml")? + number(r, "/vm_moves/linux")? + number(r, "/vm_moves/write_protect")?;
                    Some((exits, pages))
                })
                .collect();
            let paper = TABLE_5[i].iter().find(|t| t.0 == gb);
            // Judged on PM_PML's VMTraps per 1000 pages moved.
            let ours = traps.map(|t| {
                let pages: Vec<String> = t.iter().map(|x| format!("{:.0}", x.1)).collect();
                let pml = 1000.0 * t[2].0 / t[2].1;
                let exits = t.iter().map(|x| format!("{:.0}", x.0)).collect::<Vec<_>>().join(" / ");
                (pml, format!("{exits} for {} pages moved; PM_PML {pml:.2} per 1000 pages", pages.join(" / ")))
            });
            let text = paper.map(|(_, p, _)| format!("{} thousand ({gb} GB: {} k pages)", p.join(" / "), gb * 256));
            let row = Row::new(
                "§5.4.2, Table 5",
                format!("{what}: VMTraps (EPT violation + write protection), {names}, judged: PM_PML per 1000 pages moved"),
                text.as_deref().unwrap_or("—"),
                ours.as_ref().map(|o| o.1.clone()),
            );
            rows.push(match paper {
                Some(&(_, _, pml)) => row.judge(Claim::AtMost(1000.0 * pml * 1000.0 / (f64::from(gb) * PAGES_PER_GB)), ours.map(|o| o.0)).because(
                    "Not yet explained: PM_PML's VMTraps are accesses that met a page during its batch's finish (docs/policies/hmm-v.md, Tables 3–5); \
                     with random writes they come to about a hundred a run at every footprint (60–120 at 128 MiB–1 GiB), so per page they exceed \
                     the paper's at our footprints (÷ 16). The batch (512 pages) is an assumption: the paper gives none.",
                ),
                None => row,
            });
            let speeds: Option<Vec<f64>> = moved
                .iter()
                .map(|r| {
                    let rounds = r.as_ref()?.pointer("/policy_report/rounds")?.as_array()?;
                    let seconds: f64 = rounds.iter().map(|x| x["end_s"].as_f64().unwrap_or(0.0) - x["tracked_s"].as_f64().unwrap_or(0.0)).sum();
                    let mb: f64 = rounds.iter().map(|x| x["migrated_mb"].as_f64().unwrap_or(0.0)).sum();
                    (seconds > 0.0).then(|| mb / seconds)
                })
                .collect();
            let recopied = moved[2].and_then(|r| number(r, "/vm_moves/pml_recopied"));
            // Judged on PM_PML's speed over PM_Linux's.
            let ours = speeds.map(|s| {
                let recopies = recopied.filter(|_| i == 1).map_or(String::new(), |n| format!("; PM_PML recopied {n:.0} pages"));
                let factor = s[2] / s[0];
                (factor, format!("{} MB/s (PM_PML {factor:.2}× PM_Linux){recopies}", s.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(" / ")))
            });
            rows.push(
                Row::measured("§5.4.1", format!("{what}: migration speed, {names}, judged: PM_PML over PM_Linux"), "PM_WP ≈ PM_PML ≈ 2 × PM_Linux", ours, Claim::Factor(2.0))
                    .because(
                        "Our PM_Linux is strictly serial (one thread) and PM_PML copies with four threads, so PM_PML is about 3× as fast where the paper's is twice \
                         (docs/policies/hmm-v.md, Tables 3–5).",
                    ),
            );
        }
    }
}

fn fig4_rows(res: &Results, rows: &mut Vec<Row>) {
    for (k, &(w, name, _, _)) in FIG4_WORKLOADS.iter().enumerate() {
        let main = format!("fig4-{w}");
        if !res.has(&main) {
            continue;
        }
        let base = res.find(&main, &[("policy", "all-fast")]);
        // Steady state: over the second half of the references.
        let perf = |r: Option<&Value>| relative_performance_pct(r?, base?, 0.5);
        let hmmv = perf(res.find(&main, &[("policy", "hmm-v")]));
        rows.push(
            Row::measured("§5.5, Fig. 4", format!("{name} ({w}), DRAM 20 %: HMM-V, performance of all-DRAM"), "> 87 %", hmmv.map(|p| (p, fmt(p, 1, " %"))), Claim::AtLeast(87.0))
                .because(
                    "Not yet explained at the paper's periods (Fig. 4's full runs are not yet in docs/policies/hmm-v.md; the scaled matrix had HMM-V at \
                     78.5 % on graph500 and 49.6 % on sequential access). Known: each round moves the guest's page-table pages to NVM, as HMM-V's GPT \
                     tracker never counts them (docs/policies/hmm-v.md, Fig. 5a), so the guest's page walks read NVM.",
                ),
        );
        // HMM-V's lead over another configuration, as a change.
        let lead = |other: Option<f64>| hmmv.zip(other).map(|(a, b)| (a / b - 1.0, format!("{:+.1} % ({a:.1} against {b:.1} % of all-DRAM)", (a / b - 1.0) * 100.0)));
        for &(variant, label, paper, cause, _) in ABLATION {
            let sweep = format!("fig4-{w}-{variant}");
            if res.has(&sweep) {
                let (text, change) = paper[k];
                let cause = if k == 0 { FIG4_GRAPH_CAUSE } else { cause };
                rows.push(Row::measured("§5.5, Fig. 4", format!("{name}: HMM-V over {label}"), text, lead(perf(res.find(&sweep, &[]))), Claim::Change(change)).because(cause));
            }
        }
        let (paper, change) = [("+105 % over NUMA_B", 1.05), ("+74 % over NUMA_B", 0.74)][k];
        let cause = if k == 0 {
            FIG4_GRAPH_CAUSE
        } else {
            "Not yet explained at the paper's periods: the scaled matrix had HMM-V 35 % over no migration (docs/policies/hmm-v.md, Fig. 4). \
             No migration (first touch) stands for NUMA_B, which moves nothing once first touch has filled DRAM (docs/policies/baselines.md)."
        };
        let none = lead(perf(res.find(&main, &[("policy", "first-touch")])));
        rows.push(Row::measured("§5.5, Fig. 4", format!("{name}: HMM-V over no migration (the paper: NUMA_B)"), paper, none, Claim::Change(change)).because(cause));
    }
}

fn fig5_rows(res: &Results, rows: &mut Vec<Row>) {
    for h in res.axis_values("fig5a", "workload.hotspot.hot_size") {
        let at = |policy| res.find("fig5a", &[("workload.hotspot.hot_size", h.as_str()), ("policy", policy)]);
        let (run, base) = (at("hmm-v"), at("all-fast"));
        let pct: f64 = h.parse().unwrap_or(0.0) * 100.0;
        let ours = run.zip(base).and_then(|(r, b)| {
            let promoted: f64 = r.pointer("/policy_report/rounds")?.as_array()?.iter().map(|x| x["promoted_pages"].as_f64().unwrap_or(0.0)).sum();
            // Runs bounded by time: the throughput over the second half.
            let p = relative_throughput_pct(r, b, 0.5)?;
            Some((p, format!("{p:.1} % ({promoted:.0} pages promoted)")))
        });
        let what = format!("hot set {pct:.0} % of the RSS, DRAM 50 %: HMM-V, performance of all-DRAM");
        // A hot set beyond DRAM has no figure of the paper's.
        rows.push(if pct <= 50.0 {
            Row::measured("§5.6.1, Fig. 5a", what, "> 93 %", ours, Claim::AtLeast(93.0)).because(FIG5A_CAUSE)
        } else {
            Row::new("§5.6.1, Fig. 5a", what, "— (exceeds DRAM: converges with NUMA_B)", ours.map(|o| o.1))
        });
    }
    if res.has("fig5b") {
        let base = res.find("fig5b", &[("policy", "all-fast")]);
        let perf = |policy| relative_performance_pct(res.find("fig5b", &[("policy", policy)])?, base?, 0.0);
        let rounds = res.find("fig5b", &[("policy", "hmm-v")]).and_then(|r| r.pointer("/policy_report/rounds")?.as_array().map(Vec::len));
        let hmmv = perf("hmm-v").zip(rounds).map(|(p, n)| (p, format!("{p:.1} % ({n} rounds)")));
        rows.push(
            Row::measured("§5.6.2, Fig. 5b", "four hot regions of 25 % in turn: HMM-V, performance of all-DRAM", "94 %", hmmv, Claim::AtLeast(94.0)).because(
                "Not yet explained at the paper's periods (Fig. 5b's full run is not yet in docs/policies/hmm-v.md). Known: a new region's pages move \
                 only at the next clock switch (every 60 s; a stage lasts about 75 s), after a round's 4.8 s of tracking, and each round moves the \
                 guest's page-table pages to NVM (docs/policies/hmm-v.md, Fig. 5a).",
            ),
        );
        // Judged on the slowdown, all-DRAM's performance over ours.
        let none = perf("first-touch").map(|p| (100.0 / p, format!("{p:.1} % (a {:.2}× slowdown)", 100.0 / p)));
        rows.push(
            Row::measured(
                "§5.6.2, Fig. 5b",
                "four hot regions in turn: no migration (the paper: NUMA_B), performance of all-DRAM",
                "67 % (a 1.5× slowdown)",
                none,
                Claim::Factor(1.5),
            )
            .because(
                "Not yet explained at the paper's periods (the scaled matrix had no migration at 68.8 % of all-DRAM, docs/policies/hmm-v.md, Fig. 5). \
                 No migration (first touch) stands for NUMA_B, which moves nothing once first touch has filled DRAM (docs/policies/baselines.md).",
            ),
        );
    }
}

/// The performance of each VM of run `r` relative to `base`, in %, with the workload it
/// runs (each VM found in both runs by its workload): runs of the same simulated
/// seconds, so the references each VM issued, over `base`'s.
fn per_vm_pct(r: &Value, base: &Value) -> Option<Vec<(String, f64)>> {
    let refs = |x: &Value, name: &str| x["cores"][slot_of(x, name)?.0]["references"].as_f64();
    r["workloads"]
        .as_array()?
        .iter()
        .map(|w| {
            let name = w["workload"]["name"].as_str()?;
            Some((name.to_string(), 100.0 * refs(r, name)? / refs(base, name)?))
        })
        .collect()
}

/// Each VM's DRAM in HMM-V's run `r`, at the start and at the end, in MiB: the frames
/// its report gives, in its `frame_bytes`; VMs named by the workload of their tenant.
fn dram_per_vm(r: &Value) -> Option<String> {
    let frame_mib = number(r, "/policy_report/frame_bytes")? / f64::from(1 << 20);
    let workload = |tenant: u64| r["workloads"].as_array()?.iter().find(|w| w["tenant"].as_u64() == Some(tenant))?["workload"]["name"].as_str();
    let vms = r.pointer("/policy_report/vms")?.as_array()?;
    vms.iter()
        .map(|v| {
            let mib = |k: &str| v[k].as_f64().map(|f| f * frame_mib);
            Some(format!("{} {:.0}→{:.0}", workload(v["tenant"].as_u64()?)?, mib("initial_dram_frames")?, mib("dram_frames")?))
        })
        .collect::<Option<Vec<_>>>()
        .map(|v| v.join(", ") + " MiB")
}

fn four_vms_rows(res: &Results, rows: &mut Vec<Row>) {
    if !res.has("four-vms") {
        return;
    }
    let base = res.find("four-vms-dram", &[]);
    let run = |mode| res.find("four-vms", &[("policy.hmm-v.mode", mode)]);
    let perf = |mode| per_vm_pct(run(mode)?, base?);
    let (island, pool) = (perf("island"), perf("pool"));
    let show = |v: &Option<Vec<(String, f64)>>| v.as_ref().map(|v| v.iter().map(|(w, x)| format!("{w} {x:.1} %")).collect::<Vec<_>>().join(" / "));
    let what = "four VMs, DRAM 20 %, 300 s";
    rows.push(Row::new("§5.9.1, Fig. 8a", format!("{what}: island, performance of all-DRAM per VM"), "—", show(&island)));
    rows.push(Row::new("§5.9.1, Fig. 8a", format!("{what}: pool, performance of all-DRAM per VM"), "ahead of island on every VM", show(&pool)));
    let values = |v: &[(String, f64)]| v.iter().map(|x| x.1).collect::<Vec<_>>();
    let lead = island.as_deref().zip(pool.as_deref()).and_then(|(i, p)| Some(geometric_mean(&values(p))? / geometric_mean(&values(i))? - 1.0));
    rows.push(
        Row::measured("§5.9.1, Fig. 8a", "four VMs: pool over island (geometric mean)", "+12 %", lead.map(|l| (l, format!("{:+.1} %", l * 100.0))), Claim::Change(0.12)).because(
            "The first round (0.6 to about 5.4 s) comes when stream has touched a third of its 4 GiB, so its hot set looks small and pool mode \
             takes its DRAM down to the lower limit (75 %), where the paper's fotonik3d gained 1.5 GB; later rounds find it small again, as stream \
             sweeps its arrays more slowly than a round tracks, and pagerank stayed at the lower limit (docs/policies/hmm-v.md, §5.9.1). \
             When the paper's first round comes is not given.",
        ),
    );
    rows.push(Row::new("§5.9.1", "four VMs, pool: DRAM per VM, initial → at the end", "VM1 +1.5 GB, VM2 −1.5, VM3 −1.5, VM4 −2 (8 GB each)", run("pool").and_then(dram_per_vm)));
}

fn table(res: &Results) -> Vec<Row> {
    let mut rows = Vec::new();
    fig2a_rows(res, &mut rows);
    tables_rows(res, &mut rows);
    fig4_rows(res, &mut rows);
    fig5_rows(res, &mut rows);
    four_vms_rows(res, &mut rows);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::reproduce::{results_of, Verdict};
    use serde_json::json;

    /// Two VMs, kv on core 1 (tenant 1) and stream on core 0 (tenant 0), HMM-V's
    /// frames in 4 KiB.
    fn run(refs: [u64; 2]) -> Value {
        json!({
            "workloads": [
                { "core": 0, "tenant": 0, "workload": { "name": "stream" } },
                { "core": 1, "tenant": 1, "workload": { "name": "kv" } },
            ],
            "cores": [{ "references": refs[0] }, { "references": refs[1] }],
            "policy_report": {
                "frame_bytes": 4096,
                "vms": [
                    { "tenant": 1, "initial_dram_frames": 2048, "dram_frames": 1536 },
                    { "tenant": 0, "initial_dram_frames": 2048, "dram_frames": 2560 },
                ],
            },
        })
    }

    #[test]
    fn vms_are_named_by_their_workload_and_dram_counted_in_the_reports_frames() {
        // 2048 frames of 4 KiB = 8 MiB; 1536 = 6 MiB; 2560 = 10 MiB.
        assert_eq!(dram_per_vm(&run([0, 0])).as_deref(), Some("kv 8→6, stream 8→10 MiB"));
        let mut huge = run([0, 0]);
        huge["policy_report"]["frame_bytes"] = json!(2 << 20);
        assert_eq!(dram_per_vm(&huge).as_deref(), Some("kv 4096→3072, stream 4096→5120 MiB"));
        // The baseline lists its VMs in another order: each is matched by workload.
        let mut base = run([400, 100]);
        base["workloads"] = json!([
            { "core": 0, "tenant": 0, "workload": { "name": "kv" } },
            { "core": 1, "tenant": 1, "workload": { "name": "stream" } },
        ]);
        assert_eq!(per_vm_pct(&run([50, 100]), &base), Some(vec![("stream".to_string(), 50.0), ("kv".to_string(), 25.0)]));
    }

    /// A run of 200 cycles that issued `refs` references in each half, whose one round
    /// promoted 10 pages.
    fn timed(refs: [u64; 2]) -> Value {
        json!({
            "summary": { "references": refs[0] + refs[1], "cycles": 200 },
            "epochs": [{ "references": refs[0], "end_cycle": 100 }, { "references": refs[1], "end_cycle": 200 }],
            "policy_report": { "rounds": [{ "promoted_pages": 10 }] },
        })
    }

    /// Fig. 5a is judged on the throughput over the second half of the cycles: on the
    /// hot set of 20 %, HMM-V issues 80 references in cycles 100–200 where all-DRAM
    /// issues 100, so 80.0 % of all-DRAM against the paper's > 93 %: short of the bound
    /// but above half of it (46.5 %), partly. The hot set of 80 % (beyond DRAM) has no
    /// figure of the paper's, so no verdict.
    #[test]
    fn fig5a_is_judged_on_the_throughput_of_the_second_half() {
        let at = |h, p| [("workload.hotspot.hot_size", h), ("policy", p)];
        let (a, b, c, d) = (at("0.2", "hmm-v"), at("0.2", "all-fast"), at("0.8", "hmm-v"), at("0.8", "all-fast"));
        let res = results_of("fig5a", vec![(&a, timed([100, 80])), (&b, timed([100, 100])), (&c, timed([100, 40])), (&d, timed([100, 100]))]);
        let mut rows = Vec::new();
        fig5_rows(&res, &mut rows);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].ours, "80.0 % (10 pages promoted)");
        let Some((claim, Some(ours))) = rows[0].judged else { panic!("the hot set of 20 % carries the paper's claim") };
        assert_eq!(claim, Claim::AtLeast(93.0));
        assert!((ours - 80.0).abs() < 1e-9);
        assert_eq!(rows[0].verdict(), Some(Verdict::Partly));
        assert!(rows[0].cause.is_some());
        assert_eq!(rows[1].ours, "40.0 % (10 pages promoted)");
        assert_eq!(rows[1].verdict(), None);
    }
}
