//! What Linux does today on a CXL machine (docs/policies/linux.md, "The CXL study"):
//! Linux's tiering mode (`linux-tiering`), TPP (`tpp`) and DAMON (`damon-tiering`)
//! beside default Linux (`first-touch`: no migration), `thermostat`, `rainbow` and the
//! bounds (`oracle`, `oracle-static`, `all-fast`) on the `cxl` preset. Application
//! workloads of 256 MiB that first write their whole footprint in address order
//! (`workload.init`); every policy with its own defaults, at the kernel's time scale.
//! Not a paper: tiersim's own study; the "paper" column quotes what TPP and the
//! kernel claim where the doc cites them.

use super::{geometric_mean, number, sweep, Paper, Results, Row};
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

/// The long runs' workloads and references: about 30 s of simulated time.
const LONG: &[(&str, u64)] = &[("kv", 730_000_000), ("stream", 1_200_000_000)];

/// The policies of the short runs, in the tables' order; all-fast runs at 25 % only
/// (it grows the fast tier to the footprint).
const POLICIES: &[&str] = &["first-touch", "linux-tiering", "tpp", "damon-tiering", "thermostat", "rainbow", "oracle-static", "oracle"];

/// The policies of the long and hot-key runs: Rainbow and Thermostat left out.
const LONG_POLICIES: &[&str] = &["first-touch", "linux-tiering", "tpp", "damon-tiering", "oracle-static", "oracle", "all-fast"];

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

fn sweeps(quick: bool) -> Vec<Spec> {
    let mut out = Vec::new();
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
    if !quick {
        for &(w, refs) in LONG {
            let run = [CXL, "footprint = \"256MiB\"", &format!("workload = \"{w}\""), &format!("refs = {refs}"), "set.'machine.tiers.fast.capacity' = \"25%\""].join("\n");
            out.push(sweep(&format!("long-{w}"), &[&run], &format!("policy = [{}]", list(LONG_POLICIES))));
            out.push(sweep(&format!("long-{w}-tpp-flush"), &[&run, FLUSH], ""));
        }
    }
    // The hot keys' values (a fifth of the footprint) fit in DDR5; 3·10⁸ references
    // are 23 s with first touch. `--quick`: 64 MiB, 10⁸ references (about 5 s).
    let (footprint, refs) = if quick { ("64MiB", 100_000_000) } else { ("256MiB", 300_000_000) };
    let run = [CXL, HOT_KV, &format!("footprint = \"{footprint}\""), &format!("refs = {refs}")].join("\n");
    let policies: Vec<&str> = LONG_POLICIES.iter().copied().filter(|p| !quick || *p != "damon-tiering").collect();
    out.push(sweep("hot-kv", &[&run], &format!("policy = [{}]", list(&policies))));
    if !quick {
        out.push(sweep("hot-kv-tpp-flush", &[&run, FLUSH], ""));
    }
    out
}

fn setting(quick: bool, _: &Results) -> String {
    let text = if quick {
        "--quick: the short runs of kv with every policy and of gemm (a quarter of its references) with first-touch, linux-tiering and TPP, the fast tier at 25 % only; \
         the hot-key kv at 64 MiB for 10⁸ references (about 5 simulated s) without DAMON; no long runs. \
         Otherwise as the full matrix: the cxl preset (DDR5 + CXL expander, THP on), data written in address order first, every policy with its own defaults at the kernel's time scale."
    } else {
        "The cxl preset (DDR5 ≈ 90 ns, CXL ≈ 240 ns at a quarter of the bandwidth, THP on), application workloads of 256 MiB written in address order first (workload.init), \
         every policy with its own defaults at the kernel's time scale: short runs of 1.2–6 simulated s, long runs of about 30 s, the hot-key kv for about 23 s. \
         Our workloads are pure memory streams: TPP's claims are for production services, far less memory-bound (the doc's last section)."
    };
    text.into()
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
        for (p, on, cells) in &per_policy {
            let ours = cells.as_ref().map(|c| {
                let each: Vec<String> = on.iter().zip(c).map(|(w, (s, _))| format!("{w} {s:.3}")).collect();
                let mib: f64 = c.iter().map(|x| x.1).sum();
                let g = mean(on, cells).map_or(String::new(), |g| {
                    let against = oracle.map_or(String::new(), |o| format!(", {:.2}× oracle's", g / o));
                    format!("geometric_mean {g:.3}{against}: ")
                });
                format!("{g}{}; {mib:.0} MiB migrated", each.join(", "))
            });
            rows.push(Row::new(&format!("short runs, {fast} %"), format!("{p}: slowdown against all-fast"), claim(p), ours));
        }
    }
    let gemm = |p: &str| res.find("short-gemm-25", &[("policy", p)]);
    if res.has("short-gemm-25") {
        let ours = (|| {
            let base = gemm("all-fast")?;
            Some(format!("tpp {}, first-touch {}", cell(gemm("tpp")?, base)?, cell(gemm("first-touch")?, base)?))
        })();
        rows.push(Row::new(
            "short runs, 25 %",
            "gemm: TPP's early demotion, against first touch",
            "TPP §5.2: reclaim decoupled from allocation keeps DDR5 free for new pages",
            ours,
        ));
    }
}

fn long_rows(res: &Results, rows: &mut Vec<Row>) {
    let present: Vec<&str> = LONG.iter().map(|w| w.0).filter(|w| res.has(&format!("long-{w}"))).collect();
    if present.is_empty() {
        return;
    }
    let run = |w: &str, p: &str| {
        if p == "tpp-flush" {
            res.find(&format!("long-{w}-tpp-flush"), &[])
        } else {
            res.find(&format!("long-{w}"), &[("policy", p)])
        }
    };
    for p in LONG_POLICIES.iter().copied().filter(|p| *p != "all-fast").chain(["tpp-flush"]) {
        let cells: Option<Vec<String>> = present.iter().map(|&w| Some(format!("{w} {}", cell(run(w, p)?, run(w, "all-fast")?)?))).collect();
        rows.push(Row::new("long runs, 25 %", format!("{p}: slowdown against all-fast (DDR5 share, MiB migrated)"), claim(p), cells.map(|c| c.join(", "))));
    }
    let kv = (|| {
        let (tpp, flush) = (run("kv", "tpp")?, run("kv", "tpp-flush")?);
        let base = run("kv", "all-fast")?;
        Some(format!("{:.0} against {:.0} MiB migrated, slowdown {:.3} against {:.3}", migrated_mib(tpp)?, migrated_mib(flush)?, slowdown(tpp, base)?, slowdown(flush, base)?))
    })();
    rows.push(Row::new(
        "long runs, 25 %",
        "kv: TPP without and with a TLB flush when reclaim clears an Accessed bit",
        "x86 does not flush: stale TLB entries are unlikely to matter (ptep_clear_flush_young)",
        kv,
    ));
}

fn hot_kv_rows(res: &Results, rows: &mut Vec<Row>) {
    let base = res.find("hot-kv", &[("policy", "all-fast")]);
    let mut policies: Vec<String> = res.axis_values("hot-kv", "policy").into_iter().filter(|p| p != "all-fast").collect();
    if res.has("hot-kv-tpp-flush") {
        policies.push("tpp-flush".into());
    }
    let run = |p: &str| if p == "tpp-flush" { res.find("hot-kv-tpp-flush", &[]) } else { res.find("hot-kv", &[("policy", p)]) };
    for p in &policies {
        let ours = run(p).zip(base).and_then(|(r, b)| Some(format!("{}, {:.1} simulated s", cell(r, b)?, number(r, "/summary/seconds")?)));
        rows.push(Row::new("hot-key kv, 25 %", format!("{p}: slowdown against all-fast (DDR5 share, MiB migrated)"), claim(p), ours));
    }
    if !policies.is_empty() {
        let ours = (|| {
            let (tpp, lt, b) = (run("tpp")?, run("linux-tiering")?, base?);
            Some(format!("TPP {:.0} MiB for {:.3}, linux-tiering {:.0} MiB for {:.3}", migrated_mib(tpp)?, slowdown(tpp, b)?, migrated_mib(lt)?, slowdown(lt, b)?))
        })();
        rows.push(Row::new(
            "hot-key kv, 25 %",
            "migration traffic of TPP's active-list check against linux-tiering's",
            "TPP patch 5/5: promoting active pages only avoids ping-pong",
            ours,
        ));
    }
}

fn table(res: &Results) -> Vec<Row> {
    let mut rows = Vec::new();
    short_rows(res, &mut rows);
    long_rows(res, &mut rows);
    hot_kv_rows(res, &mut rows);
    rows
}
