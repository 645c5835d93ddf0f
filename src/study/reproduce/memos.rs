//! memos (Liu et al., "memos: a full hierarchy hybrid memory management framework")
//! on the memos preset (docs/policies/memos.md, "Measured"): DRAM and NVM channels
//! side by side, 256 MiB per program (64 MiB with `--quick`), every page born in NVM (§7.1), memos
//! beside DRAM-only (`all-fast`), NVM-only (`all-slow`), channel interleaving (the
//! paper's baseline, §7.1 footnote 4) and, with two programs, vertical cache-bank
//! colouring (§7.3); on `kv` alone also memos' sensitivity to its parameters.
//!
//! memos runs at the paper's own time scale, in epochs mode (docs/epochs.md): a
//! sampling every 25 ms, 100 samplings a pass, a placement round every 20 s (§4.2,
//! §5.3), for 210 simulated seconds (10 rounds); `--quick` keeps the periods and runs
//! `kv` alone, smaller, for 70 s (3 rounds). The footprints are smaller than the
//! paper's 4 GB of DRAM beside 4–16 GB of NVM: memos' SysMon settles every page's
//! bits at every sampling, and that bounds what a run can afford (docs/policies/memos.md,
//! "Measured").

use super::{fmt, number, signed_pct, spec, Claim, Paper, Results, Row};
use crate::study::Spec;
use serde_json::Value;

pub const PAPER: Paper = Paper {
    name: "memos",
    title: "memos: a full hierarchy hybrid memory management framework (Liu et al.)",
    doc: "docs/policies/memos.md",
    sweeps,
    setting,
    table,
    on_scoreboard: true,
};

/// The sets of programs: name, what runs (one program per core), whether the quick
/// matrix runs it, and whether `cache-bank-colouring` runs too (it partitions
/// between programs, so only with two).
const SETS: &[(&str, &str, bool, bool)] = &[
    ("kv", r#"workload = "kv""#, true, false),
    ("gups-chase", r#"mix = "gups,chase""#, false, true),
    ("kv-stream", r#"mix = "kv,stream""#, false, true),
];

/// memos' sensitivity on `kv`: the parameter, the values run beside its default,
/// where the paper discusses it and what it says.
const SENSITIVITY: &[(&str, &[&str], &str, &str)] = &[
    ("k_len", &["1", "5"], "§3.2, Fig. 4", "K_Len not given (ours 3)"),
    ("hot_share", &["0.3", "0.7"], "§4.2", "hot: \"most of samplings\" (ours 0.5)"),
    ("thrash_max_gap", &["0"], "§3.3, §7.2", "a slab for thrashing pages cuts LLC misses"),
    ("dma_demotions", &["false"], "§6.3", "DMA migration cuts the overhead further"),
];

/// The run's horizon in simulated seconds: 10 of memos' 20 s rounds, 3 with `--quick`,
/// and half a round after the last, so that it completes (a round falls due at the
/// end of its eighth pass).
fn seconds(quick: bool) -> u32 {
    if quick {
        70
    } else {
        210
    }
}

/// The footprint per program: as large as the full matrix's wall time allows (a
/// memos run of 210 s took 1–2 minutes on kv and about 5 on the pairs, on this
/// 2-core machine: docs/policies/memos.md, "Measured").
fn footprint(quick: bool) -> &'static str {
    if quick {
        "64MiB"
    } else {
        "256MiB"
    }
}

/// Every run: the memos preset in epochs mode with memos' own periods, one report
/// point per simulated second (3.2·10⁹ cycles at the preset's 3.2 GHz).
fn run_text(programs: &str, quick: bool) -> String {
    format!(
        r#"[run]
preset = "memos"
mode = "epochs"
{programs}
footprint = "{}"
seconds = {}
set.'engine.epoch_cycles' = 3200000000
"#,
        footprint(quick),
        seconds(quick)
    )
}

fn sweeps(quick: bool) -> Vec<Spec> {
    let mut specs = Vec::new();
    for &(name, programs, in_quick, colouring) in SETS {
        if quick && !in_quick {
            continue;
        }
        let colouring = if colouring { r#", "cache-bank-colouring""# } else { "" };
        let text = format!(
            "baseline = \"interleave\"\n{}[axes]\npolicy = [\"all-fast\", \"all-slow\", \"interleave\", \"memos\"{colouring}]\n",
            run_text(programs, quick)
        );
        specs.push(spec(name, &text));
        if name == "kv" && !quick {
            for (key, values, _, _) in SENSITIVITY {
                let text = format!("{}policy = \"memos\"\n[axes]\n'policy.memos.{key}' = [{}]\n", run_text(programs, quick), values.join(", "));
                specs.push(spec(&format!("kv-{key}"), &text));
            }
        }
    }
    specs
}

fn setting(quick: bool, res: &Results) -> String {
    let (secs, fp) = (seconds(quick), footprint(quick));
    let which = if quick { "--quick: kv alone (no two-program sets, so no cache-bank-colouring) and no sensitivity runs; " } else { "" };
    let memos_runs = || res.sweeps.iter().flat_map(|(_, runs)| runs.iter().filter_map(|r| r.report.as_ref())).filter(|r| r["policy"] == "memos");
    // memos' periods as its runs had them (its defaults: the spec sets none).
    let periods = memos_runs()
        .find_map(|r| {
            let c = &r["config"]["policy"]["memos"];
            Some(format!(
                "a sampling every {} ms, {} samplings a pass, a round every {} s",
                c["sampling_interval_ms"].as_f64()?,
                c["samplings_per_pass"].as_u64()?,
                c["interval_s"].as_f64()?
            ))
        })
        .unwrap_or_else(|| "its defaults".into());
    // The rounds memos completed: its passes over its passes per round.
    let rounds: Vec<u64> = memos_runs()
        .filter_map(|r| {
            let passes = r["policy_report"]["passes"].as_u64()?;
            Some(passes / r["policy_report"]["passes_per_round"].as_u64()?.max(1))
        })
        .collect();
    let done = match (rounds.iter().min(), rounds.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!(" ({lo} rounds completed)"),
        (Some(lo), Some(hi)) => format!(" ({lo}–{hi} rounds completed)"),
        _ => String::new(),
    };
    format!(
        "{which}memos' own periods ({periods}) in epochs mode (docs/epochs.md), {secs} simulated s per run{done}; \
         {fp} per program, every page born in NVM; the paper: SPEC, Memcached and Redis on 4 GB of DRAM beside 4–16 GB of NVM, runs of minutes. \
         Epochs mode times a mix from calibrations in which the other programs take bank and bus time but no LLC space (docs/epochs.md, \"Calibrating under load\"). \
         Fig. 17's gain is measured with DRAM in all channels and many programs injected over time, which we do not run."
    )
}

/// Figure `key` of tier `i` of run `r` (0 when the run has no such tier).
fn tier(r: &Value, i: usize, key: &str) -> f64 {
    r["tiers"][i][key].as_f64().unwrap_or(0.0)
}

/// Instructions per simulated second over all cores.
fn throughput(r: &Value) -> Option<f64> {
    Some(number(r, "/summary/instructions")? / number(r, "/summary/seconds")?)
}

/// `a` against `b` as a signed change in %, or `None` when `b` is zero.
fn change_pct(a: f64, b: f64) -> Option<f64> {
    (b != 0.0).then(|| (a / b - 1.0) * 100.0)
}

fn signed(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |x| signed_pct(x, 1))
}

/// The passes of memos' per-pass series that end after its first round.
fn passes_after_first_round(m: &Value) -> Vec<usize> {
    let round_s = number(m, "/config/policy/memos/interval_s").unwrap_or(0.0);
    let ends = m["policy_report"]["series"]["end_s"].as_array().cloned().unwrap_or_default();
    (0..ends.len()).filter(|&i| ends[i].as_f64().unwrap_or(0.0) > round_s).collect()
}

/// The sum over passes `at` of channel `ch`'s entry in series `name`.
fn series_sum(m: &Value, name: &str, ch: usize, at: &[usize]) -> f64 {
    at.iter().map(|&i| m["policy_report"]["series"][name][i][ch].as_f64().unwrap_or(0.0)).sum()
}

/// memos' thread `role` (`sysmon`, `migration` or `dma`) in run `m`'s `threads`, as
/// its policy report names them.
fn thread<'a>(m: &'a Value, role: &str) -> Option<&'a Value> {
    m["threads"].get(m["policy_report"]["threads"][role].as_u64()? as usize)
}

/// The time the migration thread spends on one locked CPU move, in µs.
fn cpu_move_us(m: &Value) -> Option<f64> {
    let ghz = number(m, "/config/machine/freq_ghz")?;
    let t = thread(m, "migration")?;
    let ops = t["ops_done"].as_f64()?;
    (ops > 0.0).then(|| t["busy_cycles"].as_f64().unwrap_or(0.0) / ops / ghz / 1e3)
}

/// The busy time of memos' thread `role` in run `m`, as a share of the run in %.
fn busy_pct(m: &Value, role: &str) -> Option<f64> {
    Some(thread(m, role)?["busy_cycles"].as_f64()? / number(m, "/summary/cycles")? * 100.0)
}

/// §7.4's migration overhead as we can measure it: the time the migration thread (CPU
/// moves) and the DMA engine were busy, as shares of the run: their sum in %, and the
/// text that shows it.
fn migration_busy(m: &Value) -> Option<(f64, String)> {
    let (cpu, dma) = (busy_pct(m, "migration")?, busy_pct(m, "dma")?);
    Some((cpu + dma, format!("{} (CPU moves {}, DMA {})", fmt(cpu + dma, 1, " %"), fmt(cpu, 1, " %"), fmt(dma, 1, " %"))))
}

/// The causes of "Against the paper" (docs/policies/memos.md), row by row.
const START_IN_NVM: &str = "Every page starts in NVM and the first round comes only after 20 s (a tenth of the full run, a third of --quick's): \
the writes before it happen in NVM; kv's updates spread over most of its footprint, of which DRAM holds half.";
const LIFETIME: &str = "The baseline (interleave) already sends half the writes to DRAM, so the lifetime at most doubles when NVM's \
writes halve; the paper's baseline lifetimes come from its own emulation of SPEC and memcached, whose write sets are smaller than our footprints.";
const NVM_LATENCY: &str = "Our PCM reads (75 ns on a row miss) are about twice DRAM's, so NVM-only's AMAT is not far from DRAM-only's; \
energy follows the writes that left NVM.";
const BANKS: &str = "Active pages per NVM bank fall once the first round has moved the hot pages to DRAM and rebalanced the rest: \
fewer NVM pages stay active, beside the rebalancing the paper measures.";
const THRASHING: &str = "Accessed bits cannot tell a streaming page from a hot page whose lines stay cached: kv's hottest pages are seen \
at every sampling, classified thrashing and confined to slab 0 (1/16 of the LLC); with thrash_max_gap = 0 the misses are +2.7 % on kv (full matrix).";
const NVM_TRAFFIC: &str = "kv's updates spread over most of its footprint, of which DRAM holds half, so many of its writes stay in NVM; \
on kv+stream, stream's written arrays are write-dominated every pass although each page is touched rarely: they fill DRAM first (WD before RD, \
§5.3) beside kv's hot read pages.";
const THROUGHPUT: &str = "Fig. 17 is measured on an all-DRAM machine (§7.3) with many SPEC programs injected over time, where the gain is \
partitioning cache, banks and channels among interfering programs; our mixes have one or two programs, and the thrashing class costs kv LLC hits.";
const MIGRATION: &str = "The paper does not say what its 8 % is relative to; ours is the share of the run the migration thread and the \
DMA engine were busy, the nearest figure, not the same one.";

fn table(res: &Results) -> Vec<Row> {
    let mut rows = Vec::new();
    for &(set, _, _, _) in SETS {
        if !res.sweeps.iter().any(|(s, _)| s.name == set) {
            continue;
        }
        let run = |p: &str| res.find(set, &[("policy", p)]);
        let (m, base, slow, fast, colouring) = (run("memos"), run("interleave"), run("all-slow"), run("all-fast"), run("cache-bank-colouring"));
        let both = m.zip(base);
        let dram_share = |r: &Value, key: &str| {
            let (a, b) = (tier(r, 0, key), tier(r, 1, key));
            (a + b > 0.0).then(|| a / (a + b) * 100.0)
        };
        rows.push(Row::measured(
            "§7.1",
            format!("{set}: DRAM's share of the writes, memos (interleave) (judged: memos' at least the paper's)"),
            "83.2 % of writes moved to DRAM",
            both.and_then(|(m, b)| {
                let share = dram_share(m, "writes")?;
                Some((share, format!("{} ({})", fmt(share, 1, " %"), fmt(dram_share(b, "writes")?, 1, " %"))))
            }),
            Claim::AtLeast(83.2),
        ).because(START_IN_NVM));
        rows.push(Row::measured(
            "§7.1",
            format!("{set}: NVM lifetime (Start-Gap), memos vs interleave"),
            "×40 on average (up to ×500)",
            both.and_then(|(m, b)| {
                let (a, b) = (tier(m, 1, "start_gap_lifetime_years"), tier(b, 1, "start_gap_lifetime_years"));
                (b > 0.0).then(|| (a / b, format!("×{:.2}", a / b)))
            }),
            Claim::Factor(40.0),
        ).because(LIFETIME));
        rows.push(Row::measured(
            "§7.1, Fig. 14",
            format!("{set}: memory AMAT, memos vs NVM-only"),
            "−79.6 %",
            m.zip(slow).and_then(|(m, s)| {
                let (a, b) = (number(m, "/summary/amat_ns")?, number(s, "/summary/amat_ns")?);
                let change = change_pct(a, b)?;
                let dram = fast.and_then(|f| number(f, "/summary/amat_ns")).map_or_else(|| "not run".into(), |d| fmt(d, 1, " ns"));
                Some((change / 100.0, format!("{a:.1} vs {b:.1} ns: {} (DRAM-only {dram})", signed(Some(change)))))
            }),
            Claim::Change(-0.796),
        ).because(NVM_LATENCY));
        rows.push(Row::measured(
            "§7.1, Fig. 14",
            format!("{set}: NVM dynamic energy, memos vs NVM-only"),
            "−77.2 %",
            m.zip(slow).and_then(|(m, s)| {
                let (a, b) = (tier(m, 1, "dynamic_energy_j"), tier(s, 1, "dynamic_energy_j"));
                let change = change_pct(a, b)?;
                Some((change / 100.0, format!("{a:.1} vs {b:.1} J: {}", signed(Some(change)))))
            }),
            Claim::Change(-0.772),
        ).because(NVM_LATENCY));
        let later = m.map(passes_after_first_round).unwrap_or_default();
        rows.push(Row::new(
            "§7.1, Fig. 13",
            format!("{set}: memos' sampled HOT/COLD and WD/RD, DRAM vs NVM channel, passes after the first round"),
            "higher in DRAM (HOT/COLD 85.4 %, WD/RD 83.2 %)",
            m.filter(|_| !later.is_empty()).map(|m| {
                let rate = |num: &str, den: &str, ch: usize| {
                    let d = series_sum(m, den, ch, &later);
                    if d > 0.0 {
                        format!("{:.2}", series_sum(m, num, ch, &later) / d)
                    } else {
                        "-".into()
                    }
                };
                format!("HOT/COLD {} vs {}, WD/RD {} vs {}", rate("hot", "cold", 0), rate("hot", "cold", 1), rate("writes", "reads", 0), rate("writes", "reads", 1))
            }),
        ));
        let banks = m.filter(|_| !later.is_empty()).and_then(|m| {
            let first = m["policy_report"]["series"]["bank_sd"][0][1].as_f64()?;
            Some((first, series_sum(m, "bank_sd", 1, &later) / later.len() as f64))
        });
        let (section, what, paper) = ("§7.2, Fig. 15", format!("{set}: SD of active pages per NVM bank, memos' first pass → mean after the first round"), "−60–70 %");
        rows.push(match banks {
            // With no imbalance at the first pass (every page active, as on gups+chase)
            // there is none to cut: the claim does not apply.
            Some((first, after)) if first == 0.0 => Row::new(section, what, paper, Some(format!("{first:.1} → {after:.1} (no imbalance at the first pass)"))),
            _ => Row::measured(
                section,
                what,
                paper,
                banks.and_then(|(first, after)| {
                    let change = change_pct(after, first)?;
                    Some((change / 100.0, format!("{first:.1} → {after:.1} ({})", signed(Some(change)))))
                }),
                Claim::Change(-0.65),
            )
            .because(BANKS),
        });
        rows.push(Row::measured(
            "§7.2",
            format!("{set}: LLC misses, memos vs interleave"),
            "−27.4 % (against cache hashing)",
            both.and_then(|(m, b)| {
                let change = change_pct(number(m, "/summary/llc_mpki")?, number(b, "/summary/llc_mpki")?)?;
                Some((change / 100.0, signed(Some(change))))
            }),
            Claim::Change(-0.274),
        ).because(THRASHING));
        rows.push(Row::measured(
            "§7.2, Fig. 16",
            format!("{set}: NVM reads / writes, memos vs interleave (judged: the writes)"),
            "−42 % / −50 %",
            both.and_then(|(m, b)| {
                let writes = change_pct(tier(m, 1, "writes"), tier(b, 1, "writes"))?;
                Some((writes / 100.0, format!("{} / {}", signed(change_pct(tier(m, 1, "reads"), tier(b, 1, "reads"))), signed(Some(writes)))))
            }),
            Claim::Change(-0.50),
        ).because(NVM_TRAFFIC));
        let gain = |r: Option<&Value>| r.zip(base).and_then(|(r, b)| change_pct(throughput(r)?, throughput(b)?));
        let ours = m.zip(base).and_then(|_| {
            let own = gain(m)?;
            Some((own / 100.0, match colouring {
                Some(c) => format!("{} (cache-bank-colouring {})", signed(Some(own)), signed(gain(Some(c)))),
                None => signed(Some(own)),
            }))
        });
        rows.push(Row::measured("§7.3, Fig. 17", format!("{set}: throughput vs interleave, memos"), "+19.1 % (7.3 % above the best other scheme)", ours, Claim::Change(0.191)).because(THROUGHPUT));
        rows.push(Row::measured(
            "§7.4",
            format!("{set}: a locked CPU move of 4 KiB, migration thread's time"),
            "3 µs",
            m.and_then(cpu_move_us).map(|us| (us, fmt(us, 2, " µs"))),
            Claim::Figure(3.0),
        ).because("The model's copy, flush, page-table update, shootdown and migrate_software_ns, nothing fitted; a busier channel lengthens the copy."));
        rows.push(Row::measured(
            "§7.4",
            format!("{set}: migration (lazy), the migration thread and the DMA engine busy, share of the run"),
            "migration overhead < 8 % on average with lazy migration",
            m.and_then(migration_busy),
            Claim::AtMost(8.0),
        ).because(MIGRATION));
        rows.push(Row::new(
            "§7.4",
            format!("{set}: SysMon's page-table scans, share of the run"),
            "— (no figure: \"depends on the workloads' memory footprint\")",
            m.and_then(|m| busy_pct(m, "sysmon")).map(|p| fmt(p, 1, " %")),
        ));
    }
    rows.extend(sensitivity_rows(res));
    rows
}

/// Throughput and LLC misses against interleave, and pages moved, of a `kv` run.
fn against_interleave(r: &Value, base: &Value) -> Option<String> {
    let t = throughput(r)? / throughput(base)?;
    let llc = number(r, "/summary/llc_mpki")? / number(base, "/summary/llc_mpki")?;
    Some(format!("throughput ×{t:.3}, LLC misses ×{llc:.3}, {:.0} moves", number(r, "/summary/migrations")?))
}

/// The rows of memos' sensitivity on `kv`, each beside the default's figures.
fn sensitivity_rows(res: &Results) -> Vec<Row> {
    let mut rows = Vec::new();
    let base = res.find("kv", &[("policy", "interleave")]);
    let default = res.find("kv", &[("policy", "memos")]).zip(base).and_then(|(m, b)| against_interleave(m, b));
    for (key, values, section, claim) in SENSITIVITY {
        let sweep = format!("kv-{key}");
        if !res.sweeps.iter().any(|(s, _)| s.name == sweep) {
            continue;
        }
        for v in *values {
            let axis = format!("policy.memos.{key}");
            let run = res.find(&sweep, &[(axis.as_str(), v)]);
            let ours = run.zip(base).and_then(|(r, b)| against_interleave(r, b)).map(|o| format!("{o} (default: {})", default.as_deref().unwrap_or("not run")));
            rows.push(Row::new(section, format!("kv, memos with {key} = {v}"), claim, ours));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::reproduce::results_of;
    use serde_json::json;

    /// The threads are found by the roles memos' report gives them, wherever they
    /// are: 10^6 cycles at 2 GHz; the migration thread busy 30 000 cycles for 5 moves
    /// (3 % of the run, 3 µs a move), the DMA engine 20 000 (2 %), SysMon 70 000 (7 %).
    #[test]
    fn migration_and_scans_are_read_from_the_threads_memos_names() {
        let m = json!({
            "summary": { "cycles": 1_000_000 },
            "config": { "machine": { "freq_ghz": 2.0 } },
            "threads": [{ "busy_cycles": 20_000, "ops_done": 7 }, { "busy_cycles": 70_000, "ops_done": 1 }, { "busy_cycles": 30_000, "ops_done": 5 }],
            "policy_report": { "threads": { "sysmon": 1, "migration": 2, "dma": 0 } },
        });
        assert_eq!(cpu_move_us(&m), Some(3.0));
        let rows = table(&results_of("kv", vec![(&[("policy", "memos")], m)]));
        let ours = |what: &str| rows.iter().find(|r| r.what.contains(what)).map(|r| r.ours.clone());
        assert_eq!(ours("migration (lazy)").as_deref(), Some("5.0 % (CPU moves 3.0 %, DMA 2.0 %)"));
        assert_eq!(ours("SysMon's page-table scans").as_deref(), Some("7.0 %"));
        assert_eq!(ours("a locked CPU move").as_deref(), Some("3.00 µs"));
        // 3.00 µs against the paper's 3 µs, and 5 % busy under its 8 %: both
        // reproduced; SysMon's row carries no claim; a row needing interleave's run
        // is not measured.
        let verdict = |what: &str| rows.iter().find(|r| r.what.contains(what)).and_then(Row::verdict);
        use crate::study::reproduce::Verdict;
        assert_eq!(verdict("a locked CPU move"), Some(Verdict::Reproduced));
        assert_eq!(verdict("migration (lazy)"), Some(Verdict::Reproduced));
        assert_eq!(verdict("SysMon's page-table scans"), None);
        assert_eq!(verdict("LLC misses"), Some(Verdict::NotMeasured));
    }

    /// A run of 1 s with the given DRAM and NVM tiers and summary figures.
    fn run(dram: Value, nvm: Value, summary: Value) -> Value {
        json!({ "tiers": [dram, nvm], "summary": summary })
    }

    #[test]
    fn the_claims_are_judged_on_the_figures_the_rows_show() {
        // memos: DRAM takes 90 of 100 writes (90 %, at least 83.2: reproduced); NVM
        // lives 2 years against interleave's 0.05 (×40: reproduced); AMAT 20 ns
        // against NVM-only's 25 (−20 %: the way of −79.6 % but under half of it,
        // partly); NVM energy 3 J against 10 (−70 %: reproduced); LLC misses 1.1
        // against 1.0 (+10 %: the other way, not); NVM writes 10 against 50 (−80 %,
        // 1.6 times −50 %: reproduced); 1.2·10^9 instructions a second against 10^9
        // (+20 %: reproduced). No per-pass series: the banks' row is not measured.
        let memos: &[(&str, &str)] = &[("policy", "memos")];
        let interleave: &[(&str, &str)] = &[("policy", "interleave")];
        let slow: &[(&str, &str)] = &[("policy", "all-slow")];
        let res = results_of(
            "kv",
            vec![
                (
                    memos,
                    run(
                        json!({ "writes": 90, "reads": 60 }),
                        json!({ "writes": 10, "reads": 40, "start_gap_lifetime_years": 2.0, "dynamic_energy_j": 3.0 }),
                        json!({ "amat_ns": 20.0, "llc_mpki": 1.1, "instructions": 1.2e9, "seconds": 1.0 }),
                    ),
                ),
                (
                    interleave,
                    run(
                        json!({ "writes": 50, "reads": 50 }),
                        json!({ "writes": 50, "reads": 50, "start_gap_lifetime_years": 0.05 }),
                        json!({ "llc_mpki": 1.0, "instructions": 1e9, "seconds": 1.0 }),
                    ),
                ),
                (slow, run(json!({}), json!({ "dynamic_energy_j": 10.0 }), json!({ "amat_ns": 25.0 }))),
            ],
        );
        let rows = table(&res);
        let seen = |what: &str| rows.iter().find(|r| r.what.contains(what)).map(|r| (r.ours.clone(), r.verdict())).unwrap_or_else(|| panic!("a row {what}"));
        use crate::study::reproduce::Verdict;
        assert_eq!(seen("DRAM's share of the writes"), ("90.0 % (50.0 %)".into(), Some(Verdict::Reproduced)));
        assert_eq!(seen("NVM lifetime"), ("×40.00".into(), Some(Verdict::Reproduced)));
        assert_eq!(seen("memory AMAT"), ("20.0 vs 25.0 ns: −20.0 % (DRAM-only not run)".into(), Some(Verdict::Partly)));
        assert_eq!(seen("NVM dynamic energy"), ("3.0 vs 10.0 J: −70.0 %".into(), Some(Verdict::Reproduced)));
        assert_eq!(seen("LLC misses"), ("+10.0 %".into(), Some(Verdict::Not)));
        assert_eq!(seen("NVM reads / writes"), ("−20.0 % / −80.0 %".into(), Some(Verdict::Reproduced)));
        assert_eq!(seen("throughput vs interleave"), ("+20.0 %".into(), Some(Verdict::Reproduced)));
        assert_eq!(seen("SD of active pages").1, Some(Verdict::NotMeasured));
    }

    /// With no imbalance at memos' first pass (every page active) the banks' row
    /// shows the figures and carries no claim: there was nothing to cut.
    #[test]
    fn no_imbalance_at_the_first_pass_leaves_the_banks_unjudged() {
        // Rounds of 4 s; passes ending at 0.5, 4.5 and 8.5 s; NVM's SD 0, then 6
        // and 2 (a mean of 4 after the first round).
        let m = json!({
            "config": { "policy": { "memos": { "interval_s": 4.0 } } },
            "policy_report": { "series": { "end_s": [0.5, 4.5, 8.5], "bank_sd": [[0.0, 0.0], [1.0, 6.0], [1.0, 2.0]] } },
        });
        let rows = table(&results_of("kv", vec![(&[("policy", "memos")], m)]));
        let banks = rows.iter().find(|r| r.what.contains("SD of active pages")).expect("the banks' row");
        assert_eq!(banks.ours, "0.0 → 4.0 (no imbalance at the first pass)");
        assert_eq!(banks.verdict(), None);
    }

    /// The setting names memos' periods and the rounds it completed, from its
    /// report: 84 passes of 2.5 s, 8 to a round, are 10 rounds (the eleventh half
    /// done).
    #[test]
    fn the_setting_counts_the_rounds_memos_completed() {
        let m = json!({
            "policy": "memos",
            "config": { "policy": { "memos": { "sampling_interval_ms": 25.0, "samplings_per_pass": 100, "interval_s": 20.0 } } },
            "policy_report": { "passes": 84, "passes_per_round": 8 },
        });
        let text = setting(false, &results_of("kv", vec![(&[("policy", "memos")], m)]));
        assert!(text.contains("210 simulated s per run (10 rounds completed); 256MiB per program"), "{text}");
        assert!(text.contains("(a sampling every 25 ms, 100 samplings a pass, a round every 20 s)"), "{text}");
    }

    #[test]
    fn the_full_matrix_is_the_docs() {
        let specs = sweeps(false);
        let runs: Vec<(String, usize)> = specs.iter().map(|s| (s.name.clone(), s.points().len())).collect();
        let names = ["kv", "kv-k_len", "kv-hot_share", "kv-thrash_max_gap", "kv-dma_demotions", "gups-chase", "kv-stream"];
        assert_eq!(runs, names.iter().zip([4, 2, 2, 1, 1, 5, 5]).map(|(n, r)| (n.to_string(), r)).collect::<Vec<_>>());
        let kv = specs[0].points();
        // memos' own periods (its defaults, not set), epochs mode, ten rounds.
        let memos = kv.iter().find(|p| p.options["policy"] == "memos").expect("memos");
        assert!(!memos.options.contains_key("policy.memos.sampling_interval_ms"));
        assert!(!memos.options.contains_key("policy.memos.interval_s"));
        assert!(!memos.options.contains_key("refs"));
        assert_eq!(memos.options["mode"], "epochs");
        assert_eq!(memos.options["seconds"], "210");
        assert_eq!(memos.options["footprint"], "256MiB");
        let quick = sweeps(true);
        assert_eq!(quick.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["kv"]);
        let q = quick[0].points();
        assert_eq!((q[0].options["seconds"].as_str(), q[0].options["footprint"].as_str()), ("70", "64MiB"));
        let dma = specs[4].points();
        assert_eq!(dma[0].options["policy.memos.dma_demotions"], "false");
        assert_eq!(specs[6].points()[0].options["mix"], "kv,stream");
    }
}
