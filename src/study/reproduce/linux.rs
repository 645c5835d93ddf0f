//! What Linux does today on a CXL machine (docs/policies/linux.md, "The CXL study"):
//! Linux's tiering mode (`linux-tiering`), TPP (`tpp`) and DAMON (`damon-tiering`)
//! beside default Linux (`first-touch`: no migration), `thermostat`, `rainbow` and the
//! bounds (`oracle`, `oracle-static`, `all-fast`) on the `cxl` preset. Application
//! workloads of 256 MiB that first write their whole footprint in address order
//! (`workload.init`); every policy with its own defaults and the kernel's own periods.
//! Not a paper: tiersim's own study; the "paper" column quotes what TPP and the
//! kernel claim where the doc cites them.
//!
//! Two time scales. The short runs (1.2–6 simulated s, detailed mode) compare every
//! policy, Rainbow and the oracles among them. The kernel runs reach the kernel
//! policies' own time scale: ten simulated minutes in epochs mode (docs/epochs.md),
//! over which NUMA balancing's scanner passes over a 256 MiB footprint hundreds of
//! times and DAMON's 30 s cold age comes due twenty times (issue 36: "TPP and DAMON
//! over 10 simulated minutes"); `--quick` keeps the periods and runs one minute at
//! 64 MiB. Epochs mode refuses the policies that redirect on the memory path or read
//! the whole stream first (rainbow, oracle, oracle-static), so the hot-key kv's bounds
//! run beside in detailed mode, over the horizon the table states.

use super::{geometric_mean, number, relative_throughput_pct, sweep, Paper, Results, Row};
use crate::machine::Redirect;
use crate::policy::registry::{with_policy, PolicyVisitor};
use crate::policy::Policy;
use crate::study::Spec;
use serde_json::Value;

pub const PAPER: Paper = Paper {
    name: "linux",
    title: "What Linux does today on the CXL preset: tiersim's own study of linux-tiering, TPP and DAMON (not a paper)",
    doc: "docs/policies/linux.md",
    sweeps,
    setting,
    table,
    on_scoreboard: false,
};

/// The short runs' workloads and references: about 3 s (kv, stream) and 1.5 s (the
/// others) of simulated time with first touch at 25 %.
const SHORT: &[(&str, u64)] =
    &[("kv", 75_000_000), ("stream", 120_000_000), ("graph-bfs", 160_000_000), ("pagerank", 320_000_000), ("spmv-cg", 320_000_000), ("gemm", 380_000_000)];

/// The policies of the short runs, in the tables' order; all-fast runs at 25 % only
/// (it grows the fast tier to the footprint).
const POLICIES: &[&str] = &["first-touch", "linux-tiering", "tpp", "damon-tiering", "thermostat", "rainbow", "oracle-static", "oracle"];

/// The kernel runs' workloads: the sweep's name after `kernel-`, its lines, whether
/// `--quick` runs it, and whether TPP with a flush on clearing an Accessed bit runs
/// beside (the huge-page workloads only: with 4 KiB pages beyond the TLBs' reach the
/// flush changed TPP's cycles by 0.4 % in the 23 s detailed runs of
/// docs/policies/linux.md, so it is not worth ten more minutes).
const KERNEL: &[(&str, &str, bool, bool)] = &[
    ("kv", "workload = \"kv\"\nset.'machine.tiers.fast.capacity' = \"25%\"", true, true),
    ("stream", "workload = \"stream\"\nset.'machine.tiers.fast.capacity' = \"25%\"", false, true),
    ("hot-kv", HOT_KV, true, false),
];

/// The kernel runs' policies: the kernels, default Linux and the all-fast baseline.
/// Thermostat has its own reproduction at its 30 s periods in epochs mode (reproduce
/// thermostat); rainbow, oracle and oracle-static are refused in epochs mode.
const KERNEL_POLICIES: &[&str] = &["first-touch", "linux-tiering", "tpp", "damon-tiering", "all-fast"];

/// The hot-key kv's bounds, in detailed mode beside the kernel runs, with first touch
/// and all-fast on the same references.
const BOUNDS_POLICIES: &[&str] = &["first-touch", "oracle-static", "oracle", "all-fast"];

/// The kernel runs' horizon in simulated seconds: ten minutes, over which TPP's and
/// DAMON's periods (a scan window a second, a 30 s cold age) come due hundreds and
/// tens of times; `--quick` one minute.
fn seconds(quick: bool) -> u32 {
    if quick {
        60
    } else {
        600
    }
}

/// The kernel runs' footprint. 256 MiB, the short runs' own (so their bounds, run on
/// the same footprint in detailed mode, apply), is as large as the full matrix's wall
/// time allows: what a run costs is the kernels' activity, not the pages. One minute
/// at 256 MiB took, one run at a time on this 2-core machine beside other work:
/// kv 0.6 s (first-touch, all-fast), 1.7 s (linux-tiering), 5.0 s (tpp), 10.1 s
/// (damon-tiering); kv at 1 GiB 13.5 s (tpp); stream 8.3 s (tpp), 12.8 s
/// (linux-tiering), 17.0 s (damon-tiering); the hot-key kv (4 KiB pages) 4.4 s
/// (damon-tiering), 51.7 s (tpp: 1.2 M pages moved in that minute) and 83.9 s
/// (linux-tiering). In the full matrix (`-j 1` beside two other agents' builds and
/// runs, load average 7–8; docs/policies/linux.md) ten minutes took kv 2–118 s
/// (damon-tiering the longest), stream 58–207 s, the hot-key kv 1–487 s (TPP 189 s,
/// linux-tiering 487 s): 29 minutes for the 17 kernel runs, where the detailed short
/// runs alone take about 45 minutes two at a time (BENCHMARKS.md), the matrix's whole
/// budget: a larger footprint would add to what is already over it. `--quick`: 64 MiB.
fn footprint(quick: bool) -> &'static str {
    if quick {
        "64MiB"
    } else {
        "256MiB"
    }
}

/// The hot-key kv's bounds' footprint and references in detailed mode: 3·10⁸
/// references are 23 simulated s with first touch; `--quick`: 10⁸ at 64 MiB (5 s).
fn bounds_run(quick: bool) -> (&'static str, u64) {
    if quick {
        ("64MiB", 100_000_000)
    } else {
        ("256MiB", 300_000_000)
    }
}

/// The share of a kernel run's time, at its end, over which the tables give where
/// the policy got to: the last tenth (60 s of 600).
const LATE: f64 = 0.9;

/// Every run: the CXL machine, data written in address order first.
const CXL: &str = "preset = \"cxl\"\nset.'workload.init' = true";

/// TPP with an arm64-like TLB flush when reclaim clears an Accessed bit.
const FLUSH: &str = "policy = \"tpp\"\nset.'machine.costs.flush_on_clear_young' = true";

/// kv with HMM-V's skew, a fifth of the keys taking 80 % of the operations, and 4 KiB
/// pages: a hot set to find.
const HOT_KV: &str = "workload = \"kv\"
set.'workload.kv.popularity' = \"hotspot\"
set.'workload.kv.hot_keys' = 0.2
set.'machine.page_table.thp' = false
set.'machine.tiers.fast.capacity' = \"25%\"";

/// TOML list of `items`, quoted.
fn list(items: &[&str]) -> String {
    items.iter().map(|i| format!("\"{i}\"")).collect::<Vec<_>>().join(", ")
}

/// The lines of a kernel run: the CXL machine in epochs mode with the kernel's own
/// periods (the policies' defaults) for [`seconds`], one report point per simulated
/// second (3·10⁹ cycles at the preset's 3 GHz).
fn kernel_run(lines: &str, quick: bool) -> String {
    [
        CXL,
        "mode = \"epochs\"",
        &format!("seconds = {}", seconds(quick)),
        &format!("footprint = \"{}\"", footprint(quick)),
        lines,
        "set.'engine.epoch_cycles' = 3000000000",
    ]
    .join("\n")
}

fn sweeps(quick: bool) -> Vec<Spec> {
    let mut out = Vec::new();
    // The kernel runs first: the longest, they decide the matrix's wall time when
    // runs go two at a time.
    for &(w, lines, in_quick, flush) in KERNEL {
        if quick && !in_quick {
            continue;
        }
        let run = kernel_run(lines, quick);
        out.push(sweep(&format!("kernel-{w}"), &[&run], &format!("policy = [{}]", list(KERNEL_POLICIES))));
        if flush && !quick {
            out.push(sweep(&format!("kernel-{w}-tpp-flush"), &[&run, FLUSH], ""));
        }
    }
    // The hot-key kv's bounds, refused in epochs mode, in detailed mode: the hot keys'
    // values (a fifth of the footprint) fit in DDR5.
    let (fp, refs) = bounds_run(quick);
    let run = [CXL, HOT_KV, &format!("footprint = \"{fp}\""), &format!("refs = {refs}")].join("\n");
    out.push(sweep("hot-kv-bounds", &[&run], &format!("policy = [{}]", list(BOUNDS_POLICIES))));
    for &(w, refs) in SHORT {
        // `--quick`: kv with every policy, gemm (TPP's early demotion) with the
        // kernels and a quarter of its references; the fast tier at 25 % only.
        if quick && w != "kv" && w != "gemm" {
            continue;
        }
        let refs = if quick && w == "gemm" { refs / 4 } else { refs };
        let workload = [CXL, "footprint = \"256MiB\"", &format!("workload = \"{w}\""), &format!("refs = {refs}")].join("\n");
        for fast in [25, 50] {
            if quick && fast == 50 {
                continue;
            }
            let mut policies: Vec<&str> = if quick && w == "gemm" { vec!["first-touch", "linux-tiering", "tpp"] } else { POLICIES.to_vec() };
            if fast == 25 {
                policies.push("all-fast");
            }
            out.push(sweep(
                &format!("short-{w}-{fast}"),
                &[&workload, &format!("set.'machine.tiers.fast.capacity' = \"{fast}%\"")],
                &format!("policy = [{}]", list(&policies)),
            ));
        }
    }
    out
}

/// Whether epochs mode refuses policy `name`, by the engine's own rule
/// (`engine::epochs_refusal`: a redirection structure on the memory path, or a first
/// pass over the whole stream; docs/epochs.md).
fn epochs_refuses(name: &str) -> bool {
    struct Refused;
    impl PolicyVisitor for Refused {
        type Output = bool;
        fn visit<R: Redirect, P: Policy<R>>(self, _: &'static str) -> bool {
            crate::engine::epochs_refusal::<R, P>(&P::Config::default()).is_some()
        }
    }
    with_policy(name, Refused).unwrap_or(false)
}

/// The finished reports of the sweeps whose names start with `prefix`.
fn reports<'a>(res: &'a Results, prefix: &str) -> Vec<&'a Value> {
    res.sweeps.iter().filter(|(s, _)| s.name.starts_with(prefix)).flat_map(|(_, runs)| runs.iter().filter_map(|r| r.report.as_ref())).collect()
}

/// The scale of runs `runs`, from their reports: the mode, the simulated seconds (the
/// configured horizon when they share one, else the range they ran) and the
/// footprint, as `epochs, 600 s, 256 MiB`; none without a report.
fn scale(runs: &[&Value]) -> Option<String> {
    let mut modes: Vec<&str> = runs.iter().filter_map(|r| r["config"]["engine"]["mode"].as_str()).collect();
    modes.dedup();
    let horizons: Vec<f64> = runs.iter().filter_map(|r| number(r, "/config/engine/seconds")).collect();
    let ran: Vec<f64> = runs.iter().filter_map(|r| number(r, "/summary/seconds")).collect();
    let lo = ran.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ran.iter().copied().fold(0.0, f64::max);
    let secs = match horizons.first() {
        Some(&h) if horizons.len() == runs.len() && horizons.iter().all(|&x| x == h) => format!("{h} s"),
        _ if ran.is_empty() => return None,
        _ if format!("{lo:.1}") == format!("{hi:.1}") => format!("{lo:.1} s"),
        _ => format!("{lo:.1}–{hi:.1} s"),
    };
    let mut mib: Vec<u64> = runs.iter().filter_map(|r| r["footprint_bytes"].as_u64()).map(|b| (b + (1 << 19)) >> 20).collect();
    mib.sort_unstable();
    mib.dedup();
    let fp: Vec<String> = mib.iter().map(|m| format!("{m} MiB")).collect();
    let mode = if modes.is_empty() { "detailed".to_string() } else { modes.join("+") };
    Some(format!("{mode}, {secs}, {}", fp.join("/")))
}

/// The policies run in the sweeps whose names start with `prefix`, in the order met,
/// with `tpp-flush` for a TPP-with-flush sweep.
fn policies_of(res: &Results, prefix: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (s, _) in res.sweeps.iter().filter(|(s, _)| s.name.starts_with(prefix)) {
        let names = if s.name.ends_with("-tpp-flush") { vec!["tpp-flush".to_string()] } else { res.axis_values(&s.name, "policy") };
        for p in names {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// `values` as `lo–hi` (or one figure when they agree); none when empty.
fn range(values: &[u64]) -> Option<String> {
    let (lo, hi) = (values.iter().min()?, values.iter().max()?);
    Some(if lo == hi { lo.to_string() } else { format!("{lo}–{hi}") })
}

/// What the kernels did in the kernel runs, from their reports: the windows NUMA
/// balancing's scanner marked (linux-tiering, tpp) and the times DAMON's schemes were
/// applied, per run.
fn kernel_activity(res: &Results) -> String {
    let runs = reports(res, "kernel-");
    let of = |names: &[&str]| -> Vec<&Value> { runs.iter().copied().filter(|r| names.iter().any(|n| r["policy"] == *n)).collect() };
    let windows: Vec<u64> =
        of(&["linux-tiering", "tpp"]).iter().filter_map(|r| r["policy_report"]["scanners"].as_array()?.iter().map(|s| s["windows"].as_u64()).sum()).collect();
    let applied: Vec<u64> =
        of(&["damon-tiering"]).iter().filter_map(|r| r["policy_report"]["contexts"].as_array()?.iter().map(|c| c["stat"]["nr_applied"].as_u64()).sum()).collect();
    let mut parts = Vec::new();
    if let Some(w) = range(&windows) {
        parts.push(format!("NUMA balancing's scanner marked {w} windows per run"));
    }
    if let Some(a) = range(&applied) {
        parts.push(format!("DAMON's schemes were applied {a} times per run"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}

fn setting(quick: bool, res: &Results) -> String {
    let which = if quick {
        "--quick: the short runs of kv with every policy and of gemm (a quarter of its references) with first-touch, linux-tiering and TPP, the fast tier at 25 % only; \
         the kernel runs on kv and the hot-key kv only, without TPP with a flush. "
    } else {
        ""
    };
    let group = |prefix: &str| scale(&reports(res, prefix)).unwrap_or_else(|| "not run".into());
    let kernel_workloads: Vec<&str> = KERNEL.iter().map(|k| k.0).filter(|w| res.has(&format!("kernel-{w}"))).collect();
    let kernel = policies_of(res, "kernel-");
    let mut detailed_only: Vec<String> = Vec::new();
    for p in policies_of(res, "short-").into_iter().chain(policies_of(res, "hot-kv-bounds")) {
        if !kernel.contains(&p) && !detailed_only.contains(&p) {
            detailed_only.push(p);
        }
    }
    let refused: Vec<&str> = detailed_only.iter().map(String::as_str).filter(|p| epochs_refuses(p)).collect();
    format!(
        "{which}The cxl preset (DDR5 ≈ 90 ns, CXL ≈ 240 ns at a quarter of the bandwidth, THP on), application workloads written in address order first (workload.init), \
         every policy with its own defaults and the kernel's own periods. \
         Short runs ({}): {}. Kernel runs on {} ({}): {}{}. Detailed only: {} (refused in epochs mode: {}); \
         the hot-key kv's bounds in detailed mode ({}): {}. \
         Our workloads are pure memory streams: TPP's claims are for production services, far less memory-bound (the doc's last section).",
        group("short-"),
        policies_of(res, "short-").join(", "),
        kernel_workloads.join(", "),
        group("kernel-"),
        kernel.join(", "),
        kernel_activity(res),
        detailed_only.join(", "),
        if refused.is_empty() { "none".to_string() } else { refused.join(", ") },
        group("hot-kv-bounds"),
        policies_of(res, "hot-kv-bounds").join(", "),
    )
}

/// Cycles of run `r` over `base`'s.
fn slowdown(r: &Value, base: &Value) -> Option<f64> {
    Some(number(r, "/summary/cycles")? / number(base, "/summary/cycles")?)
}

/// MiB migrated by run `r`.
fn migrated_mib(r: &Value) -> Option<f64> {
    Some(number(r, "/summary/migrated_bytes")? / f64::from(1 << 20))
}

/// Run `r` against `base` as `3.058 (26 %, 0 MiB)`: its slowdown, the share of demand
/// accesses DDR5 served and the MiB migrated.
fn cell(r: &Value, base: &Value) -> Option<String> {
    Some(format!("{:.3} ({:.0} %, {:.0} MiB)", slowdown(r, base)?, 100.0 * number(r, "/summary/fast_tier_fraction")?, migrated_mib(r)?))
}

/// The slowdown of run `r` against `base` when both ran the same simulated time (the
/// kernel runs): `base`'s references per cycle over `r`'s, over the cycles after the
/// first fraction `warmup` of each run's (0: the whole run).
fn rate_slowdown(r: &Value, base: &Value, warmup: f64) -> Option<f64> {
    Some(100.0 / relative_throughput_pct(r, base, warmup)?)
}

/// The share of demand memory accesses DDR5 served in run `r` over its report
/// points that end after the first fraction `from` of its cycles.
fn late_fast_share(r: &Value, from: f64) -> Option<f64> {
    let after = from * number(r, "/summary/cycles")?;
    let (mut fast, mut all) = (0.0, 0.0);
    for e in r["epochs"].as_array()?.iter().filter(|e| e["end_cycle"].as_f64().is_some_and(|c| c > after)) {
        let tiers = e["tiers"].as_array()?;
        fast += tiers.first()?["demand_accesses"].as_f64()?;
        all += tiers.iter().filter_map(|t| t["demand_accesses"].as_f64()).sum::<f64>();
    }
    (all > 0.0).then(|| fast / all)
}

/// A kernel run `r` against `base` as `1.052 → 1.010 (24 % → 26 %, 1777 MiB)`: its
/// slowdown over the whole run and over the last tenth ([`LATE`]), DDR5's share of
/// the demand accesses over the same two, and the MiB migrated; with the report's
/// note when the policy never acted.
fn kernel_cell(r: &Value, base: &Value) -> Option<String> {
    let mut out = format!(
        "{:.3} → {:.3} ({:.0} % → {:.0} %, {:.0} MiB)",
        rate_slowdown(r, base, 0.0)?,
        rate_slowdown(r, base, LATE)?,
        100.0 * number(r, "/summary/fast_tier_fraction")?,
        100.0 * late_fast_share(r, LATE)?,
        migrated_mib(r)?
    );
    if let Some(note) = r["never_acted"].as_str() {
        out += &format!("; never acted: {note}");
    }
    Some(out)
}

/// What TPP's cover letter claims for default Linux and for TPP against all-DRAM on
/// Meta's services, as a slowdown (1 / (1 − the throughput lost)).
fn claim(policy: &str) -> &'static str {
    match policy {
        "first-touch" => "default Linux ≈ 1.22: 18 % of throughput lost (TPP cover letter)",
        "tpp" => "≈ 1.05: 5 % of throughput lost (TPP cover letter)",
        _ => "—",
    }
}

/// A policy's short runs at one size of the fast tier: the policy, the workloads it
/// ran on, and its slowdown and MiB migrated on each (none when a run is missing).
type ShortRuns<'a> = (&'a str, Vec<&'a str>, Option<Vec<(f64, f64)>>);

fn short_rows(res: &Results, rows: &mut Vec<Row>) {
    for fast in [25, 50] {
        let present: Vec<&str> = SHORT.iter().map(|w| w.0).filter(|w| res.has(&format!("short-{w}-{fast}"))).collect();
        let base = |w: &str| res.find(&format!("short-{w}-25"), &[("policy", "all-fast")]);
        // The geometric means compare only policies that ran on every workload.
        let mut per_policy: Vec<ShortRuns> = Vec::new();
        for &p in POLICIES {
            let on: Vec<&str> = present.iter().copied().filter(|w| res.axis_values(&format!("short-{w}-{fast}"), "policy").iter().any(|v| v == p)).collect();
            if on.is_empty() {
                continue;
            }
            let cells = on
                .iter()
                .map(|&w| {
                    let r = res.find(&format!("short-{w}-{fast}"), &[("policy", p)])?;
                    Some((slowdown(r, base(w)?)?, migrated_mib(r)?))
                })
                .collect();
            per_policy.push((p, on, cells));
        }
        let mean = |on: &[&str], cells: &Option<Vec<(f64, f64)>>| {
            let c = cells.as_ref()?;
            (on.len() == present.len()).then(|| geometric_mean(&c.iter().map(|x| x.0).collect::<Vec<_>>())).flatten()
        };
        let oracle = per_policy.iter().find(|p| p.0 == "oracle").and_then(|(_, on, cells)| mean(on, cells));
        let runs: Vec<&Value> = present.iter().flat_map(|w| reports(res, &format!("short-{w}-{fast}"))).collect();
        let section = format!("short runs, {fast} % ({})", scale(&runs).unwrap_or_else(|| "not run".into()));
        for (p, on, cells) in &per_policy {
            let ours = cells.as_ref().map(|c| {
                let each: Vec<String> = on.iter().zip(c).map(|(w, (s, _))| format!("{w} {s:.3}")).collect();
                let mib: f64 = c.iter().map(|x| x.1).sum();
                let g = mean(on, cells).map_or(String::new(), |g| {
                    let against = oracle.map_or(String::new(), |o| format!(", {:.2}× oracle's", g / o));
                    format!("geometric_mean {g:.3}{against}: ")
                });
                let idle: Vec<&str> =
                    on.iter().copied().filter(|w| res.find(&format!("short-{w}-{fast}"), &[("policy", p)]).is_some_and(|r| r["never_acted"].is_string())).collect();
                let idle = if idle.is_empty() { String::new() } else { format!("; never acted on {}", idle.join(", ")) };
                format!("{g}{}; {mib:.0} MiB migrated{idle}", each.join(", "))
            });
            rows.push(Row::new(&section, format!("{p}: slowdown against all-fast"), claim(p), ours));
        }
    }
    let gemm = |p: &str| res.find("short-gemm-25", &[("policy", p)]);
    if res.has("short-gemm-25") {
        let ours = (|| {
            let base = gemm("all-fast")?;
            Some(format!("tpp {}, first-touch {}", cell(gemm("tpp")?, base)?, cell(gemm("first-touch")?, base)?))
        })();
        let section = format!("short runs, 25 % ({})", scale(&reports(res, "short-gemm-25")).unwrap_or_else(|| "not run".into()));
        rows.push(Row::new(
            &section,
            "gemm: TPP's early demotion, against first touch",
            "TPP §5.2: reclaim decoupled from allocation keeps DDR5 free for new pages",
            ours,
        ));
    }
}

fn kernel_rows(res: &Results, rows: &mut Vec<Row>) {
    for &(w, _, _, _) in KERNEL {
        let name = format!("kernel-{w}");
        if !res.has(&name) {
            continue;
        }
        let flush = format!("{name}-tpp-flush");
        let run = |p: &str| if p == "tpp-flush" { res.find(&flush, &[]) } else { res.find(&name, &[("policy", p)]) };
        let base = run("all-fast");
        let section = format!("kernel runs, {w}, 25 % ({})", scale(&reports(res, &name)).unwrap_or_else(|| "not run".into()));
        let mut policies: Vec<String> = res.axis_values(&name, "policy").into_iter().filter(|p| p != "all-fast").collect();
        if res.has(&flush) {
            policies.push("tpp-flush".into());
        }
        for p in &policies {
            let ours = run(p).zip(base).and_then(|(r, b)| kernel_cell(r, b));
            rows.push(Row::new(&section, format!("{p}: slowdown against all-fast, whole run → last tenth (DDR5 share, MiB migrated)"), claim(p), ours));
        }
        if res.has(&flush) {
            let ours = (|| {
                let (tpp, flush, b) = (run("tpp")?, run("tpp-flush")?, base?);
                Some(format!(
                    "{:.0} against {:.0} MiB migrated, slowdown {:.3} against {:.3}",
                    migrated_mib(tpp)?,
                    migrated_mib(flush)?,
                    rate_slowdown(tpp, b, 0.0)?,
                    rate_slowdown(flush, b, 0.0)?
                ))
            })();
            rows.push(Row::new(
                &section,
                "TPP without and with a TLB flush when reclaim clears an Accessed bit",
                "x86 does not flush: stale TLB entries are unlikely to matter (ptep_clear_flush_young)",
                ours,
            ));
        }
        if w == "hot-kv" {
            let ours = (|| {
                let (tpp, lt, b) = (run("tpp")?, run("linux-tiering")?, base?);
                Some(format!(
                    "TPP {:.0} MiB for {:.3}, linux-tiering {:.0} MiB for {:.3}",
                    migrated_mib(tpp)?,
                    rate_slowdown(tpp, b, 0.0)?,
                    migrated_mib(lt)?,
                    rate_slowdown(lt, b, 0.0)?
                ))
            })();
            rows.push(Row::new(&section, "migration traffic of TPP's active-list check against linux-tiering's", "TPP patch 5/5: promoting active pages only avoids ping-pong", ours));
        }
    }
}

/// The hot-key kv's bounds in detailed mode, each against all-fast on the same
/// references, with the simulated seconds each took.
fn bounds_rows(res: &Results, rows: &mut Vec<Row>) {
    if !res.has("hot-kv-bounds") {
        return;
    }
    let base = res.find("hot-kv-bounds", &[("policy", "all-fast")]);
    let section = format!("hot-key kv bounds, 25 % ({})", scale(&reports(res, "hot-kv-bounds")).unwrap_or_else(|| "not run".into()));
    for p in res.axis_values("hot-kv-bounds", "policy").iter().filter(|p| *p != "all-fast") {
        let ours = res.find("hot-kv-bounds", &[("policy", p)]).zip(base).and_then(|(r, b)| Some(format!("{}, {:.1} simulated s", cell(r, b)?, number(r, "/summary/seconds")?)));
        rows.push(Row::new(&section, format!("{p}: slowdown against all-fast (DDR5 share, MiB migrated)"), claim(p), ours));
    }
}

fn table(res: &Results) -> Vec<Row> {
    let mut rows = Vec::new();
    short_rows(res, &mut rows);
    kernel_rows(res, &mut rows);
    bounds_rows(res, &mut rows);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::reproduce::results_of;
    use serde_json::json;

    /// The sweeps of `results` one after the other in one set of results.
    fn merged(results: Vec<Results>) -> Results {
        Results { sweeps: results.into_iter().flat_map(|r| r.sweeps).collect() }
    }

    /// The matrix: the kernel runs in epochs mode for ten simulated minutes at 256 MiB
    /// (one at 64 MiB with `--quick`), with the kernels, first touch and all-fast
    /// only; the policies epochs mode refuses in detailed mode only; the short runs
    /// as they were.
    #[test]
    fn the_kernel_runs_reach_ten_minutes_in_epochs_mode() {
        let specs = sweeps(false);
        let shape: Vec<(&str, usize)> = specs.iter().map(|s| (s.name.as_str(), s.points().len())).collect();
        let mut expected = vec![("kernel-kv", 5), ("kernel-kv-tpp-flush", 1), ("kernel-stream", 5), ("kernel-stream-tpp-flush", 1), ("kernel-hot-kv", 5), ("hot-kv-bounds", 4)];
        let short: Vec<String> = SHORT.iter().flat_map(|w| [format!("short-{}-25", w.0), format!("short-{}-50", w.0)]).collect();
        // Eight policies, and all-fast at 25 %.
        expected.extend(short.iter().map(|s| (s.as_str(), if s.ends_with("-25") { 9 } else { 8 })));
        assert_eq!(shape, expected);
        for s in specs.iter().filter(|s| s.name.starts_with("kernel-")) {
            for p in s.points() {
                let o = &p.options;
                assert_eq!((o["mode"].as_str(), o["seconds"].as_str(), o["footprint"].as_str()), ("epochs", "600", "256MiB"), "{}", s.name);
                assert!(!o.contains_key("refs"), "{}: the horizon is the seconds alone", s.name);
                assert_eq!(o["engine.epoch_cycles"], "3000000000");
                // No policy period is set: the kernel's own.
                assert!(!o.keys().any(|k| k.starts_with("policy.")), "{}: {o:?}", s.name);
                assert!(!epochs_refuses(&o["policy"]), "{}: {}", s.name, o["policy"]);
            }
        }
        let policies = |name: &str| specs.iter().find(|s| s.name == name).expect(name).points().iter().map(|p| p.options["policy"].clone()).collect::<Vec<_>>();
        assert_eq!(policies("kernel-hot-kv"), ["first-touch", "linux-tiering", "tpp", "damon-tiering", "all-fast"]);
        assert_eq!(policies("kernel-stream-tpp-flush"), ["tpp"]);
        let hot = &specs[4].points()[0].options;
        assert_eq!((hot["machine.page_table.thp"].as_str(), hot["workload.kv.popularity"].as_str()), ("false", "\"hotspot\""));
        // The bounds, refused in epochs mode, run detailed on a horizon of references.
        let bounds = &specs[5].points();
        assert_eq!(policies("hot-kv-bounds"), ["first-touch", "oracle-static", "oracle", "all-fast"]);
        assert!(["oracle-static", "oracle"].iter().all(|p| epochs_refuses(p)) && epochs_refuses("rainbow"));
        assert!(!bounds[0].options.contains_key("mode") && !bounds[0].options.contains_key("seconds"));
        assert_eq!((bounds[0].options["refs"].as_str(), bounds[0].options["footprint"].as_str()), ("300000000", "256MiB"));
        // The short runs stay detailed, on references.
        let kv = specs.iter().find(|s| s.name == "short-kv-25").expect("short-kv-25").points();
        assert!(!kv[0].options.contains_key("mode") && kv[0].options["refs"] == "75000000");

        let quick = sweeps(true);
        let names: Vec<&str> = quick.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["kernel-kv", "kernel-hot-kv", "hot-kv-bounds", "short-kv-25", "short-gemm-25"]);
        for s in &quick[..2] {
            let o = &s.points()[0].options;
            assert_eq!((o["mode"].as_str(), o["seconds"].as_str(), o["footprint"].as_str()), ("epochs", "60", "64MiB"), "{}", s.name);
            assert_eq!(s.points().len(), 5);
        }
        let b = &quick[2].points()[0].options;
        assert_eq!((b["refs"].as_str(), b["footprint"].as_str()), ("100000000", "64MiB"));
    }

    /// A report of `policy` in `mode` over `seconds` simulated (configured as the
    /// horizon when `horizon`), on 256 MiB.
    fn report(policy: &str, mode: &str, seconds: f64, horizon: bool) -> Value {
        let engine = if horizon { json!({ "mode": mode, "seconds": seconds }) } else { json!({ "mode": mode }) };
        json!({ "policy": policy, "config": { "engine": engine }, "footprint_bytes": 268_435_456u64, "summary": { "seconds": seconds } })
    }

    /// The setting says each group's mode, horizon and footprint from its reports,
    /// which policies ran where (refusal by the engine's own test: thermostat is
    /// detailed only by choice, not refused), and counts the kernels' work.
    #[test]
    fn the_setting_is_computed_from_the_runs() {
        let mut tpp = report("tpp", "epochs", 600.0, true);
        // Two scanners of 599 and 1 windows: 600 in the run.
        tpp["policy_report"] = json!({ "scanners": [{ "windows": 599 }, { "windows": 1 }] });
        let mut lt = report("linux-tiering", "epochs", 600.0, true);
        lt["policy_report"] = json!({ "scanners": [{ "windows": 598 }] });
        let mut damon = report("damon-tiering", "epochs", 600.0, true);
        // Its cold scheme applied 12 times, its hot one 3: 15.
        damon["policy_report"] = json!({ "contexts": [{ "stat": { "nr_applied": 12 } }, { "stat": { "nr_applied": 3 } }] });
        let res = merged(vec![
            results_of(
                "kernel-kv",
                vec![
                    (&[("policy", "first-touch")], report("first-touch", "epochs", 600.0, true)),
                    (&[("policy", "linux-tiering")], lt),
                    (&[("policy", "tpp")], tpp),
                    (&[("policy", "damon-tiering")], damon),
                ],
            ),
            results_of(
                "short-kv-25",
                vec![
                    (&[("policy", "first-touch")], report("first-touch", "detailed", 2.84, false)),
                    (&[("policy", "thermostat")], report("thermostat", "detailed", 2.84, false)),
                    (&[("policy", "rainbow")], report("rainbow", "detailed", 2.43, false)),
                ],
            ),
            results_of(
                "hot-kv-bounds",
                vec![(&[("policy", "oracle-static")], report("oracle-static", "detailed", 11.8, false)), (&[("policy", "oracle")], report("oracle", "detailed", 8.5, false))],
            ),
        ]);
        let text = setting(false, &res);
        let expect = [
            "Short runs (detailed, 2.4–2.8 s, 256 MiB): first-touch, thermostat, rainbow.",
            "Kernel runs on kv (epochs, 600 s, 256 MiB): first-touch, linux-tiering, tpp, damon-tiering \
             (NUMA balancing's scanner marked 598–600 windows per run; DAMON's schemes were applied 15 times per run).",
            "Detailed only: thermostat, rainbow, oracle-static, oracle (refused in epochs mode: rainbow, oracle-static, oracle);",
            "the hot-key kv's bounds in detailed mode (detailed, 8.5–11.8 s, 256 MiB): oracle-static, oracle.",
        ];
        for e in expect {
            assert!(text.contains(e), "{e}\nnot in\n{text}");
        }
        assert!(!text.starts_with("--quick"));
        assert!(setting(true, &res).starts_with("--quick: "));
    }

    /// A kernel run's cell: the slowdown from references per cycle (both runs last
    /// the same simulated time), over the run and its last tenth, DDR5's share over
    /// both, and the note of a policy that never acted.
    #[test]
    fn a_kernel_row_compares_throughput_over_the_run_and_its_last_tenth() {
        // Ten report points of 10 cycles. all-fast: 100 references in each (10 per
        // cycle). tpp: 50 in each of the first nine, 100 in the last: 550 in 100
        // cycles, 5.5 per cycle, a slowdown of 10 / 5.5 = 1.818 over the run and of
        // 10 / 10 = 1.000 over the last tenth (cycles 90–100). DDR5 served 10 of 100
        // demand accesses in each point but the last, 80 of 100 in it: 80 % over the
        // last tenth; the summary's share over the run is 30 %; 2 MiB migrated.
        let points = |refs: &[u64], fast: &[u64]| -> Value {
            refs.iter()
                .zip(fast)
                .enumerate()
                .map(|(i, (r, f))| json!({ "end_cycle": 10 * (i + 1), "references": r, "tiers": [{ "demand_accesses": f }, { "demand_accesses": 100 - f }] }))
                .collect()
        };
        let run = |policy: &str, refs: &[u64], fast: &[u64], share: f64, migrated: u64| {
            let mut r = report(policy, "epochs", 600.0, true);
            r["summary"] = json!({ "seconds": 600.0, "cycles": 100, "references": refs.iter().sum::<u64>(), "fast_tier_fraction": share, "migrated_bytes": migrated });
            r["epochs"] = points(refs, fast);
            r
        };
        let base = run("all-fast", &[100; 10], &[100; 10], 1.0, 0);
        let tpp = run("tpp", &[50, 50, 50, 50, 50, 50, 50, 50, 50, 100], &[10, 10, 10, 10, 10, 10, 10, 10, 10, 80], 0.3, 2 << 20);
        let mut damon = run("damon-tiering", &[100; 10], &[10; 10], 0.1, 0);
        damon["never_acted"] = json!("its first period never came due");
        let res = results_of("kernel-kv", vec![(&[("policy", "tpp")], tpp), (&[("policy", "damon-tiering")], damon), (&[("policy", "all-fast")], base)]);
        let rows = table(&res);
        let row = |p: &str| rows.iter().find(|r| r.what.starts_with(&format!("{p}:"))).unwrap_or_else(|| panic!("a row for {p}"));
        assert_eq!(row("tpp").section, "kernel runs, kv, 25 % (epochs, 600 s, 256 MiB)");
        assert_eq!(row("tpp").ours, "1.818 → 1.000 (30 % → 80 %, 2 MiB)");
        assert_eq!(row("damon-tiering").ours, "1.000 → 1.000 (10 % → 10 %, 0 MiB); never acted: its first period never came due");
        // No bounds sweep, no short runs: no rows for them.
        assert_eq!(rows.len(), 2);
    }
}
