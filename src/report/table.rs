//! Plain-text tables and CSV for reports.

use super::Report;
use crate::machine::copies::CopyStats;
use std::fmt::Write;

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn times(x: f64, base: f64) -> String {
    if base == 0.0 {
        "-".into()
    } else {
        format!("{:.3}", x / base)
    }
}

/// Years as a plain decimal with three significant digits (whole years from 100 on).
fn years(y: f64) -> String {
    if y >= 100.0 || y == 0.0 {
        return format!("{y:.0}");
    }
    let decimals = (2 - y.log10().floor() as i32).clamp(0, 12) as usize;
    format!("{y:.decimals$}")
}

/// The summary of one run.
pub fn run_summary(r: &Report) -> String {
    let s = &r.summary;
    let mut out = String::new();
    let w = &mut out;
    if !r.complete {
        let _ = writeln!(w, "INCOMPLETE        interrupted after {} references: every figure covers only those", s.references);
    }
    let preset = r.preset.as_ref().map_or(String::new(), |p| format!(" (preset {p})"));
    let _ = writeln!(w, "policy            {}{preset}", r.policy);
    for slot in &r.workloads {
        match &slot.trace {
            Some(t) => {
                let thread = t.thread.map_or(String::new(), |k| format!(" (thread {k})"));
                let _ = writeln!(w, "trace             core {} tenant {} ({:?}): {}{thread}", slot.core, slot.tenant, slot.kind, t.path);
            }
            None => {
                let _ = writeln!(
                    w,
                    "workload          core {} tenant {} ({:?}): {} over {:.1} MiB{}",
                    slot.core,
                    slot.tenant,
                    slot.kind,
                    slot.workload.name,
                    mib(slot.footprint_bytes),
                    slot.fast_share.map_or(String::new(), |s| format!(", fast-tier share {:.1} %", s * 100.0))
                );
            }
        }
    }
    if r.workloads.iter().any(|s| s.trace.is_some()) {
        let mut tenants: Vec<u16> = r.workloads.iter().map(|s| s.tenant).collect();
        tenants.sort_unstable();
        tenants.dedup();
        let summed = if tenants.len() > 1 { format!(", the sum of {} tenants' address spaces", tenants.len()) } else { String::new() };
        let _ = writeln!(w, "footprint         {:.2} MiB measured from the traces{summed}", mib(r.footprint_bytes));
    }
    let mut sampled: Vec<(&str, &crate::trace::meta::SampledRun)> = r.workloads.iter().filter_map(|s| s.trace.as_ref()).filter_map(|t| Some((t.path.as_str(), t.sampled.as_ref()?))).collect();
    sampled.dedup_by_key(|s| s.0);
    for (path, run) in sampled {
        let _ = writeln!(
            w,
            "sampled trace     {path} holds {} (1/{:.1} of the instructions the program ran until the recording ended): the counts below cover the recorded windows; \
             for that whole span multiply totals (references, instructions, cycles, seconds, migrations, energy) by about {:.1}; rates and ratios stand as they are",
            run.sampling.describe(),
            run.scale,
            run.scale
        );
    }
    if r.malformed_lines_skipped > 0 {
        let _ = writeln!(w, "malformed lines   {} skipped", r.malformed_lines_skipped);
    }
    for n in &r.notes {
        let _ = writeln!(w, "note              {n}");
    }
    let _ = writeln!(w, "references        {}", s.references);
    let _ = writeln!(w, "instructions      {}", s.instructions);
    let _ = writeln!(w, "cycles            {} ({:.6} s simulated)", s.cycles, s.seconds);
    let _ = writeln!(w, "IPC               {:.4}", s.ipc);
    let _ = writeln!(w, "AMAT              {:.2} ns (demand memory accesses)", s.amat_ns);
    let _ = writeln!(w, "fast-tier share   {:.2} % of demand memory accesses", s.fast_tier_fraction * 100.0);
    let _ = writeln!(w, "TLB MPKI          {:.3}", s.tlb_mpki);
    if r.cores.iter().any(|c| c.stats.psc.is_some()) {
        let mut p = crate::machine::psc::PscStats::default();
        for c in r.cores.iter().filter_map(|c| c.stats.psc.as_ref()) {
            p.lookups += c.lookups;
            p.pde_hits += c.pde_hits;
            p.pdpte_hits += c.pdpte_hits;
            p.pml4e_hits += c.pml4e_hits;
            p.pml5e_hits += c.pml5e_hits;
        }
        let refs: u64 = r.cores.iter().map(|c| c.stats.walk_references).sum();
        let pml5e = if p.pml5e_hits > 0 { format!(", PML5E {}", p.pml5e_hits) } else { String::new() };
        let _ = writeln!(
            w,
            "walk caches       {} lookups, {:.1} % hit: PDE {}, PDPTE {}, PML4E {}{pml5e}; {refs} walk references",
            p.lookups,
            p.hits() as f64 / p.lookups.max(1) as f64 * 100.0,
            p.pde_hits,
            p.pdpte_hits,
            p.pml4e_hits
        );
    }
    let _ = writeln!(w, "LLC MPKI          {:.3}", s.llc_mpki);
    let _ = writeln!(
        w,
        "page moves        {} ({:.1} MiB copied): {} migrations ({:.1} MiB), {} huge pages merged from copied base pages ({:.1} MiB)",
        s.page_moves,
        mib(s.moved_bytes),
        s.migrations,
        mib(s.migrated_bytes),
        s.merge_copies,
        mib(s.merge_copied_bytes)
    );
    for (i, t) in r.threads.iter().enumerate() {
        let busy = t.busy_cycles as f64 / s.cycles.max(1) as f64;
        let _ = writeln!(
            w,
            "thread {i}          busy {:.1} % of the run, {} jobs, {} operations ({} refused){}",
            busy * 100.0,
            t.jobs_done,
            t.ops_done,
            t.ops_refused,
            if t.ops_unfinished > 0 { format!(", {} operations unfinished at the end", t.ops_unfinished) } else { String::new() }
        );
    }
    if let Some(v) = &r.vm_exits {
        let cycles = r.summary.cycles.max(1) as f64;
        let _ = writeln!(
            w,
            "VM exits          {} ({:.2} % of the cycles): EPT violation {}, write protection {}, PML full {}, hypercall {}, kick {}, TLB flush {}",
            v.exits(),
            v.exit_cycles as f64 / cycles * 100.0,
            v.ept_violation,
            v.write_protect,
            v.pml_full,
            v.hypercall,
            v.kick,
            v.tlb_flush
        );
    }
    if let Some(v) = r.vm_moves.as_ref().filter(|v| v.linux + v.write_protect + v.pml + v.dma + v.dma_discarded > 0) {
        let dma = if v.dma_batches > 0 { format!(", dma {} ({} batches, {} pages discarded as written during their copy)", v.dma, v.dma_batches, v.dma_discarded) } else { String::new() };
        let _ = writeln!(
            w,
            "page moves        linux {}, write-protect {}, pml {} ({} batches, {} pages copied again){dma}; {} accesses waited {} cycles for a moving page",
            v.linux, v.write_protect, v.pml, v.pml_batches, v.pml_recopied, v.waits, v.wait_cycles
        );
    }
    if let Some(c) = r.redirect.get("copies").and_then(|v| serde_json::from_value::<CopyStats>(v.clone()).ok()) {
        let _ = writeln!(
            w,
            "copies            {} made, {} dropped clean, {} written back, {} frames held; migration traffic {:.3}× footprint",
            c.copies_made, c.clean_drops, c.dirty_drops, c.copy_frames_held, s.migration_to_footprint
        );
        if c.bitmap_checks > 0 {
            let _ = writeln!(
                w,
                "bitmap checks     {} ({} cache hits, {} misses), {} remaps",
                c.bitmap_checks, c.bitmap_cache_hits, c.bitmap_cache_misses, c.remaps
            );
        }
    }
    if let Some(mm) = r.redirect.get("memory_mode") {
        let pct = |v: &serde_json::Value| 100.0 * v.as_f64().unwrap_or(0.0);
        let per: Vec<String> = mm["tenants"].as_array().into_iter().flatten().map(|t| format!("tenant {} {:.1} %", t["tenant"], pct(&t["read_miss_ratio"]))).collect();
        let _ = writeln!(
            w,
            "DRAM cache        load miss ratio {:.1} % ({}), all accesses {:.1} %; {} dirty lines written back",
            pct(&mm["read_miss_ratio"]),
            per.join(", "),
            pct(&mm["miss_ratio"]),
            mm["total"]["dirty_evictions"]
        );
    }
    let figures: Vec<String> = r
        .policy_report
        .iter()
        .filter_map(|(k, v)| match v {
            serde_json::Value::Number(n) if n.is_f64() => Some(format!("{k} {:.4}", n.as_f64().unwrap_or(0.0))),
            serde_json::Value::Number(n) => Some(format!("{k} {n}")),
            serde_json::Value::Array(a) => Some(format!("{k} {}", a.len())),
            _ => None,
        })
        .collect();
    if !figures.is_empty() {
        let _ = writeln!(w, "policy figures    {} (all in the JSON report's policy_report)", figures.join(", "));
    }
    let _ = writeln!(w, "energy            {:.6} J", s.energy_j);
    if let Some(sd) = &r.slowdown {
        let _ = writeln!(
            w,
            "slowdown          {:+.2} % against {} ({} cycles); throughput loss {:.2} %",
            sd.percent, sd.reference_policy, sd.reference_cycles, sd.throughput_loss_percent
        );
        if let Some(warm) = &sd.after_warmup {
            let _ = writeln!(
                w,
                "  after warm-up   {:+.2} %; throughput loss {:.2} % (references after the first {:.0} %)",
                warm.percent,
                warm.throughput_loss_percent,
                warm.warmup_fraction * 100.0
            );
        }
    }
    let _ = writeln!(w, "slow-tier writes  {}", s.slow_tier_writes);
    let name_width = r.tiers.iter().map(|t| t.name.chars().count()).max().unwrap_or(0).max(12);
    for t in &r.tiers {
        let _ = writeln!(
            w,
            "tier {:<name_width$} {:>9.1} MiB used of {:>9.1} MiB, {} demand accesses, AMAT {:.1} ns{}",
            t.name,
            mib(t.used_frames << 12),
            mib(t.capacity_bytes),
            t.demand_accesses,
            t.amat_ns,
            t.lifetime_years.map_or(String::new(), |y| format!(", lifetime {} years", years(y)))
        );
    }
    if let Some(sm) = &r.sampling {
        let _ = writeln!(
            w,
            "mode              {}: {:.1} % of references detailed; cost model error per window {:.2} % mean, {:.2} % worst, bias {:+.2} % ({} windows)",
            sm.ran,
            sm.detailed_share * 100.0,
            sm.model_error_mean * 100.0,
            sm.model_error_max * 100.0,
            sm.model_error_bias * 100.0,
            sm.predicted_windows
        );
    }
    if let Some(e) = &r.epochs_mode {
        let error = if e.predicted_calibrations == 0 {
            "no calibration was predicted by an earlier fit".to_string()
        } else {
            format!(
                "cost model error per calibration {:.2} % mean, {:.2} % worst, bias {:+.2} % ({} predicted)",
                e.model_error_mean * 100.0,
                e.model_error_max * 100.0,
                e.model_error_bias * 100.0 + 0.0,
                e.predicted_calibrations
            )
        };
        let chunks = if e.chunks == 0 { "no chunks (the run ended inside its first detailed warm-up)".to_string() } else { format!("{} chunks", e.chunks) };
        let _ = writeln!(
            w,
            "mode              {}: {chunks}, {:.2} % of references detailed in {} calibrations; {error}",
            e.ran,
            e.detailed_share * 100.0,
            e.calibrations,
        );
        for st in &e.statements {
            let _ = writeln!(w, "  statement       {st}");
        }
    }
    let _ = writeln!(
        w,
        "simulation        {:.2} s wall, {:.2} M refs/s, {} simulated s per wall s{}",
        r.sim.wall_seconds,
        r.sim.references_per_second / 1e6,
        sig3(r.sim.simulated_seconds_per_second),
        if r.sim.verify { format!(", verified {} reads", r.sim.verified_reads) } else { String::new() }
    );
    let _ = writeln!(w, "wall time         {:.2} s setup; {:.2} s for the whole command", r.sim.setup_seconds, r.sim.command_seconds);
    out
}

/// A positive number with three significant digits (0.000123, 0.0456, 1.23, 45.6).
fn sig3(x: f64) -> String {
    if x <= 0.0 || !x.is_finite() {
        return "0".to_string();
    }
    let decimals = (2 - x.log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}")
}

/// One row per policy, normalised to `reports[base]` where a ratio makes sense.
pub fn compare(reports: &[Report], base: usize) -> String {
    let b = &reports[base].summary;
    let header = ["policy", "time×", "IPC×", "AMAT ns", "fast %", "page moves", "moved MiB", "TLB MPKI", "energy×", "slow writes×"];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for r in reports {
        let s = &r.summary;
        rows.push(vec![
            r.policy.clone(),
            times(s.cycles as f64, b.cycles as f64),
            times(s.ipc, b.ipc),
            format!("{:.1}", s.amat_ns),
            format!("{:.1}", s.fast_tier_fraction * 100.0),
            s.page_moves.to_string(),
            format!("{:.1}", mib(s.moved_bytes)),
            format!("{:.3}", s.tlb_mpki),
            times(s.energy_j, b.energy_j),
            times(s.slow_tier_writes as f64, b.slow_tier_writes as f64),
        ]);
    }
    let widths: Vec<usize> = (0..header.len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| if c == 0 { format!("{cell:<w$}", w = widths[c]) } else { format!("{cell:>w$}", w = widths[c]) })
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
        if i == 0 {
            let _ = writeln!(out, "{}", "-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
        }
    }
    let preset = reports[base].preset.as_ref().map_or(String::new(), |p| format!("; preset {p}"));
    let _ = writeln!(
        out,
        "(× = relative to {}; AMAT = mean latency of demand memory accesses; page moves = migrations + huge pages merged from copies{preset})",
        reports[base].policy
    );
    let setup: f64 = reports.iter().map(|r| r.sim.setup_seconds).sum();
    let _ = writeln!(out, "wall time: {:.2} s for the whole command ({} runs, whose setup took {setup:.2} s in all)", reports[base].sim.command_seconds, reports.len());
    for r in reports.iter().filter(|r| !r.complete) {
        let _ = writeln!(out, "INCOMPLETE: {} was interrupted after {} references", r.policy, r.summary.references);
    }
    let mut notes: Vec<&String> = Vec::new();
    for n in reports.iter().flat_map(|r| &r.notes) {
        if !notes.contains(&n) {
            notes.push(n);
        }
    }
    for n in notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// The summaries as CSV, one row per report.
pub fn csv(reports: &[Report]) -> String {
    let mut out = String::from(
        "policy,references,instructions,cycles,seconds,ipc,amat_ns,fast_tier_fraction,migrations,migrated_bytes,tlb_mpki,llc_mpki,energy_j,slow_tier_writes,wall_seconds,merge_copies,merge_copied_bytes,setup_seconds,complete\n",
    );
    for r in reports {
        let s = &r.summary;
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.policy,
            s.references,
            s.instructions,
            s.cycles,
            s.seconds,
            s.ipc,
            s.amat_ns,
            s.fast_tier_fraction,
            s.migrations,
            s.migrated_bytes,
            s.tlb_mpki,
            s.llc_mpki,
            s.energy_j,
            s.slow_tier_writes,
            r.sim.wall_seconds,
            s.merge_copies,
            s.merge_copied_bytes,
            r.sim.setup_seconds,
            r.complete
        );
    }
    out
}
