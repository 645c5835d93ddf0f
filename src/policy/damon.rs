//! DAMON-based memory tiering as Linux 6.11 added it: the DAMOS actions
//! `migrate_cold` and `migrate_hot` of the physical-address operations
//! (mm/damon/paddr.c), from the series "DAMON based tiered memory management for CXL
//! memory" (Honggyu Kim, SK hynix; merged for 6.11). docs/policies/damon.md has the
//! model, every parameter's source and what was measured.
//!
//! Two DAMON contexts, each on its own kernel thread (a kdamond): the fast tier's,
//! whose scheme moves cold regions to the slow tier, and the slow tier's, whose scheme
//! moves hot regions to the fast tier. Each monitors its tier's frames as DAMON's
//! adaptive regions ([`Regions`]). Its loop is `kdamond_fn`'s (mm/damon/core.c):
//!
//! 1. `kdamond_wait_activation`: the scheme's watermarks are checked; an inactive
//!    scheme makes the thread sleep for the watermark interval and check again;
//! 2. `damon_pa_prepare_access_checks`: per region, one random address is picked and
//!    the Accessed bit of the page owning its frame cleared through the reverse map
//!    ([`Mechanisms::young`]; no TLB flush, as x86's `ptep_test_and_clear_young`);
//! 3. the thread sleeps one sampling interval (`Op::Sleep`) while the cores run;
//! 4. `damon_pa_check_accesses`: the bit is read again, and the region's count grows
//!    if it was set (a sample in the folio checked just before reuses its result);
//! 5. at the end of each aggregation interval: merge (`kdamond_merge_regions`, with
//!    a tenth of the largest count as threshold), the scheme (quota, prioritisation,
//!    the pattern; [`Scheme::apply`]), reset of the counts, split
//!    (`kdamond_split_regions`). The pages of the regions the scheme acts on are
//!    found through the reverse map over their frames, filtered by their Accessed bit
//!    (the `young` filter of the evaluated setup) and moved by `Op::Migrate` jobs on
//!    the same thread (`damon_pa_migrate`: synchronous in the kdamond), only while the
//!    destination keeps its low watermark free (the allocation is `GFP_NOWAIT`
//!    without reclaim); the loop goes on once they are done.
//!
//! All the monitoring work is charged on the kdamonds' clocks: it shows as background
//! CPU time, and a thread never does more than its time allows.

use super::{FastReserve, Policy, PolicyReport, Requirements};
use crate::machine::{MachineInfo, Observer, Owner, PageInfo, PageRef, TierId};
use crate::mechanism::{Job, JobDone, Mechanisms, Op, ThreadId, ThreadKind};
use crate::monitor::{AccessPattern, Metric, Prefer, Quota, Regions, Scheme, ScoreScale, Stat, Watermarks, Weights, Wmarks};
use crate::params;
use crate::rng::Rng;
use serde::Serialize;
use serde_json::json;

params! {
    /// Parameters of DAMON-based tiering: the monitoring attributes of both contexts
    /// (DAMON's defaults, mm/damon/core.c `damon_new_ctx`), the two schemes (SK hynix's
    /// HMSDK `tools/gen_config.py`, the setup of the 6.11 series' authors), watermarks
    /// (DAMON_RECLAIM's levels, off as in that setup).
    pub struct DamonConfig {
        /// Seed of the random sampling addresses and split points.
        pub seed: u64 = 1,
        /// Sampling interval in µs (`sample_us`; `damon_new_ctx`: 5 ms).
        pub sample_us: u64 = 5_000,
        /// Aggregation interval in µs (`aggr_us`; `damon_new_ctx`: 100 ms). Schemes are
        /// applied at its end (their `apply_interval_us` is 0).
        pub aggr_us: u64 = 100_000,
        /// Operations update interval in µs (`update_us`; `damon_new_ctx`: 60 s). The
        /// physical-address operations have no update callback: only the regions' size
        /// limit is computed again.
        pub update_us: u64 = 60_000_000,
        /// Fewest regions (`min_nr_regions`; default 10): sets the size limit of a
        /// region, the tier's size over it. At least 3.
        pub min_nr_regions: u32 = 10,
        /// Most regions (`max_nr_regions`; default 1000): splits stop above half of it,
        /// merges go on until under it.
        pub max_nr_regions: u32 = 1000,
        /// migrate_cold: smallest region in bytes (HMSDK: 4096).
        pub cold_min_sz_bytes: u64 = 4096,
        /// migrate_cold: largest region in bytes (0 = no limit; HMSDK: max).
        pub cold_max_sz_bytes: u64 = 0,
        /// migrate_cold: fewest accesses per aggregation (HMSDK: access rate 0 %).
        pub cold_min_nr_accesses: u32 = 0,
        /// migrate_cold: most accesses per aggregation (HMSDK: access rate 0 %).
        pub cold_max_nr_accesses: u32 = 0,
        /// migrate_cold: youngest region, in µs of unchanged access count (HMSDK: 30 s);
        /// a whole number of aggregation intervals, as DAMON_RECLAIM's `min_age`.
        pub cold_min_age_us: u64 = 30_000_000,
        /// migrate_cold: oldest region in µs (0 = no limit; HMSDK: max).
        pub cold_max_age_us: u64 = 0,
        /// migrate_cold: time quota per window in ms (0 = none; HMSDK: 1 s).
        pub cold_quota_ms: u64 = 1_000,
        /// migrate_cold: size quota per window in bytes (0 = none; HMSDK: 50 GiB).
        pub cold_quota_sz_bytes: u64 = 50 << 30,
        /// migrate_cold: quota charge window in ms (HMSDK: 20 s).
        pub cold_quota_reset_interval_ms: u64 = 20_000,
        /// migrate_cold: prioritisation weight of the region size (unused by the
        /// kernel's scores; HMSDK: 0).
        pub cold_weight_sz: u32 = 0,
        /// migrate_cold: prioritisation weight of the access count (HMSDK: 0).
        pub cold_weight_nr_accesses: u32 = 0,
        /// migrate_cold: prioritisation weight of the age (HMSDK: 1).
        pub cold_weight_age: u32 = 1,
        /// migrate_cold: skip pages whose Accessed bit is set, clearing it (the `young`
        /// filter, matching; HMSDK: on).
        pub cold_young_filter: bool = true,
        /// migrate_hot: smallest region in bytes (HMSDK: 4096).
        pub hot_min_sz_bytes: u64 = 4096,
        /// migrate_hot: largest region in bytes (0 = no limit; HMSDK: max).
        pub hot_max_sz_bytes: u64 = 0,
        /// migrate_hot: fewest accesses per aggregation (HMSDK: access rate 5 %, 1 of
        /// the 20 samples of an aggregation).
        pub hot_min_nr_accesses: u32 = 1,
        /// migrate_hot: most accesses per aggregation (HMSDK: 100 %).
        pub hot_max_nr_accesses: u32 = 4_294_967_295,
        /// migrate_hot: youngest region in µs (HMSDK: 0).
        pub hot_min_age_us: u64 = 0,
        /// migrate_hot: oldest region in µs (0 = no limit; HMSDK: max).
        pub hot_max_age_us: u64 = 0,
        /// migrate_hot: time quota per window in ms (0 = none; HMSDK: 2 s).
        pub hot_quota_ms: u64 = 2_000,
        /// migrate_hot: size quota per window in bytes (0 = none; HMSDK: 50 GiB).
        pub hot_quota_sz_bytes: u64 = 50 << 30,
        /// migrate_hot: quota charge window in ms (HMSDK: 20 s).
        pub hot_quota_reset_interval_ms: u64 = 20_000,
        /// migrate_hot: prioritisation weight of the region size (HMSDK: 0).
        pub hot_weight_sz: u32 = 0,
        /// migrate_hot: prioritisation weight of the access count (HMSDK: 0).
        pub hot_weight_nr_accesses: u32 = 0,
        /// migrate_hot: prioritisation weight of the age (HMSDK: 1).
        pub hot_weight_age: u32 = 1,
        /// migrate_hot: skip pages whose Accessed bit is clear, clearing it on the
        /// others (the `young` filter, not matching; HMSDK: on).
        pub hot_young_filter: bool = true,
        /// Watermark metric of both schemes: "none" (always active, as HMSDK) or
        /// "free_mem_rate" (free memory of the whole machine, all tiers, in per mille:
        /// 6.11's only metric).
        pub wmarks_metric: String = "none".to_string(),
        /// Watermark check interval in µs while a scheme is inactive (DAMON_RECLAIM: 5 s).
        pub wmarks_interval_us: u64 = 5_000_000,
        /// High watermark in per mille: above it a scheme goes off (DAMON_RECLAIM: 500).
        pub wmarks_high: u64 = 500,
        /// Mid watermark: an inactive scheme comes back on below it (DAMON_RECLAIM: 400).
        pub wmarks_mid: u64 = 400,
        /// Low watermark: below it a scheme goes off (DAMON_RECLAIM: 200).
        pub wmarks_low: u64 = 200,
        /// vm.watermark_scale_factor (kernel default 10): first touch falls back to the
        /// slow tier below the fast tier's low watermark, and a migration's
        /// `GFP_NOWAIT` allocation fails below the destination's.
        pub watermark_scale_factor: u64 = 10,
    }
}

/// What a finished job was: the kind (above the low byte) and the context (below).
const START: u64 = 0;
const SAMPLE: u64 = 1 << 8;
const WMARK: u64 = 2 << 8;
const APPLY: u64 = 3 << 8;

/// Time-series points of the region count kept per context (every other one is
/// dropped when there would be more).
const SERIES_POINTS: usize = 256;

/// `__damon_pa_check_access`' memory of the last check: the address, its folio's
/// size, the result.
#[derive(Clone, Copy, Debug)]
struct LastCheck {
    addr: u64,
    folio_bytes: u64,
    accessed: bool,
}

/// A context's counters for the report.
#[derive(Clone, Debug, Default, Serialize)]
struct Counters {
    samples: u64,
    aggregations: u64,
    rmap_walks: u64,
    /// Cycles of sampling (prepare and check) and of applying the scheme (page
    /// filters and migrations).
    monitor_cycles: u64,
    apply_cycles: u64,
    migrated_pages: u64,
    migrated_bytes: u64,
    /// Pages the scheme selected but left: no free frame above the destination's low
    /// watermark, or refused by the mechanism layer.
    no_room_pages: u64,
    refused_pages: u64,
    wmark_sleeps: u64,
    regions_min: usize,
    regions_max: usize,
}

/// One DAMON context with its scheme and its kdamond.
struct Context {
    action: &'static str,
    tier: TierId,
    dest: TierId,
    thread: ThreadId,
    young_filter: bool,
    /// Free frames the destination keeps: its low watermark.
    dest_floor: u64,
    regions: Regions,
    scheme: Scheme,
    rng: Rng,
    passed: u64,
    next_aggregation: u64,
    next_ops_update: u64,
    sz_limit: u64,
    max_nr_accesses: u32,
    last: LastCheck,
    /// The moves of the running migration job: ordinal of the region in the pass and
    /// bytes; the cycle the pass began.
    moving: Vec<(u32, u64)>,
    apply_began: u64,
    count: Counters,
    /// (simulated seconds, regions) at aggregations, every `stride`-th.
    series: Vec<(f64, usize)>,
    stride: u64,
}

pub struct DamonTiering {
    cfg: DamonConfig,
    ctxs: Vec<Context>,
    metric: Metric,
    cycles_per_us: f64,
    samples_per_aggr: u64,
}

impl Observer for DamonTiering {}

/// The page owning frame `pfn`, if it is a mapped data page (what `damon_get_folio`
/// finds: free frames and page tables are not on an LRU list).
fn folio<R: crate::machine::Redirect>(mech: &Mechanisms<R>, pfn: u64) -> Option<PageInfo> {
    match mech.owner(pfn) {
        Owner::Data { tenant, addr } => mech.page(PageRef::new(tenant, addr)).ok(),
        _ => None,
    }
}

/// Microseconds as whole aggregation intervals, 0 standing for no limit (`u32::MAX`).
fn intervals(us: u64, aggr_us: u64, zero_is_max: bool) -> u32 {
    if us == 0 && zero_is_max {
        u32::MAX
    } else {
        (us / aggr_us).min(u32::MAX as u64) as u32
    }
}

impl DamonTiering {
    fn cycles(&self, us: u64) -> u64 {
        (us as f64 * self.cycles_per_us).round() as u64
    }

    fn ns(&self, cycles: u64) -> u64 {
        (cycles as f64 * 1000.0 / self.cycles_per_us) as u64
    }

    /// The watermark metric now: free frames of every tier in per mille of all.
    fn metric_value(&self, mech: &Mechanisms) -> Option<u64> {
        match self.metric {
            Metric::None => None,
            Metric::FreeMemRate => {
                let tiers = TierId::first(mech.info().tiers.len());
                let (free, total) = tiers.fold((0, 0), |(f, t), id| (f + mech.free_frames(id), t + mech.capacity_frames(id)));
                Some(free * 1000 / total.max(1))
            }
        }
    }

    /// The top of `kdamond_fn`'s loop for context `c`: the watermarks, then the access
    /// checks prepared and a sampling interval's sleep.
    fn iterate(&mut self, c: usize, mech: &mut Mechanisms) {
        let value = self.metric_value(mech);
        let sample = self.cycles(self.cfg.sample_us);
        let ctx = &mut self.ctxs[c];
        let wait_us = ctx.scheme.wmarks.wait_us(value);
        if wait_us > 0 {
            ctx.count.wmark_sleeps += 1;
            let mut job = Job::new(WMARK | c as u64);
            job.push(Op::Sleep { until: mech.now() + (wait_us as f64 * self.cycles_per_us) as u64 });
            let _ = mech.submit(ctx.thread, job);
            return;
        }
        let began = mech.now();
        let Context { regions, rng, count, .. } = ctx;
        for r in regions.iter_mut() {
            r.sampling_addr = r.start + rng.below(r.size());
            if let Some(p) = folio(mech, r.sampling_addr >> 12) {
                let _ = mech.young(p.at(), true);
                count.rmap_walks += 1;
            }
        }
        count.monitor_cycles += mech.now() - began;
        let mut job = Job::new(SAMPLE | c as u64);
        job.push(Op::Sleep { until: mech.now() + sample });
        let _ = mech.submit(ctx.thread, job);
    }

    /// A sampling interval of context `c` has passed: the checks, and at the end of an
    /// aggregation interval the merge, the scheme and the split.
    fn sampled(&mut self, c: usize, mech: &mut Mechanisms) {
        let began = mech.now();
        let (aggr_us, samples_per_aggr) = (self.cfg.aggr_us, self.samples_per_aggr);
        let (min_nr, max_nr) = (self.cfg.min_nr_regions, self.cfg.max_nr_regions);
        let update_samples = (self.cfg.update_us / self.cfg.sample_us).max(1);
        let seconds = mech.info().seconds(began);
        let ctx = &mut self.ctxs[c];
        ctx.passed += 1;
        ctx.count.samples += 1;
        let Context { regions, last, count, .. } = ctx;
        for i in 0..regions.len() {
            let addr = regions.as_slice()[i].sampling_addr;
            let accessed = if last.addr / last.folio_bytes == addr / last.folio_bytes {
                last.accessed
            } else {
                last.accessed = match folio(mech, addr >> 12) {
                    Some(p) => {
                        last.folio_bytes = p.bytes;
                        count.rmap_walks += 1;
                        mech.young(p.at(), false).unwrap_or(false)
                    }
                    None => false,
                };
                last.addr = addr;
                last.accessed
            };
            regions.update_access_rate(i, accessed);
        }
        ctx.max_nr_accesses = ctx.regions.max_nr_accesses();
        ctx.count.monitor_cycles += mech.now() - began;
        if ctx.passed < ctx.next_aggregation {
            self.iterate(c, mech);
            return;
        }
        ctx.regions.merge(ctx.max_nr_accesses / 10, ctx.sz_limit, max_nr, samples_per_aggr as u32);
        ctx.count.aggregations += 1;
        let n = ctx.regions.len();
        ctx.count.regions_min = if ctx.count.aggregations == 1 { n } else { ctx.count.regions_min.min(n) };
        ctx.count.regions_max = ctx.count.regions_max.max(n);
        if ctx.count.aggregations.is_multiple_of(ctx.stride) {
            ctx.series.push((seconds, n));
            if ctx.series.len() >= SERIES_POINTS {
                let kept: Vec<_> = ctx.series.iter().copied().step_by(2).collect();
                ctx.series = kept;
                ctx.stride *= 2;
            }
        }
        let job = Self::apply(ctx, c, mech, ScoreScale { max_nr_accesses: samples_per_aggr as u32, aggr_us });
        ctx.regions.reset_aggregated();
        ctx.regions.split(max_nr, &mut ctx.rng);
        ctx.next_aggregation += samples_per_aggr;
        if ctx.passed >= ctx.next_ops_update {
            ctx.next_ops_update += update_samples;
            ctx.sz_limit = ctx.regions.sz_limit(min_nr);
        }
        if job.is_empty() {
            let spent = mech.now() - ctx.apply_began;
            ctx.count.apply_cycles += spent;
            let ns = self.ns(spent);
            self.ctxs[c].scheme.quota.total_charged_ns += ns;
            self.iterate(c, mech);
        } else {
            let _ = mech.submit(ctx.thread, job);
        }
    }

    /// The scheme's pass over context `c`'s regions (`kdamond_apply_schemes` with
    /// `damon_pa_migrate`): returns the migrations to run.
    fn apply(ctx: &mut Context, c: usize, mech: &mut Mechanisms, scale: ScoreScale) -> Job {
        ctx.apply_began = mech.now();
        let mut job = Job::new(APPLY | c as u64);
        ctx.moving.clear();
        if !ctx.scheme.wmarks.activated {
            return job;
        }
        let (dest, filter, cold) = (ctx.dest, ctx.young_filter, ctx.scheme.prefer == Prefer::Cold);
        let mut budget = mech.free_frames(dest).saturating_sub(ctx.dest_floor);
        let (mut ordinal, mut last_applied, mut walks, mut no_room) = (0u32, None, 0, 0);
        let Context { regions, scheme, moving, .. } = ctx;
        scheme.apply(regions, mech.now(), scale, |r| {
            let mut passed = 0;
            let mut pfn = r.start >> 12;
            while pfn < r.end >> 12 {
                let Some(p) = folio(mech, pfn) else {
                    pfn += 1;
                    continue;
                };
                pfn += p.base_pages();
                if last_applied == Some(p.page) {
                    continue;
                }
                last_applied = Some(p.page);
                if filter {
                    // `damon_folio_young`, then `damon_folio_mkold` if it was young.
                    walks += 1;
                    let young = mech.young(p.at(), false).unwrap_or(false);
                    if young {
                        walks += 1;
                        let _ = mech.young(p.at(), true);
                    }
                    if young == cold {
                        continue;
                    }
                }
                passed += p.bytes;
                if p.tier == dest {
                    continue;
                }
                if budget < p.base_pages() {
                    no_room += 1;
                    continue;
                }
                budget -= p.base_pages();
                job.push(Op::Migrate { page: p.at(), to: dest });
                moving.push((ordinal, p.bytes));
            }
            ordinal += 1;
            passed
        });
        ctx.count.rmap_walks += walks;
        ctx.count.no_room_pages += no_room;
        job
    }

    /// Context `c`'s migrations are done: what they applied.
    fn applied(&mut self, c: usize, done: &JobDone) {
        let spent = done.finished - self.ctxs[c].apply_began;
        let ns = self.ns(spent);
        let ctx = &mut self.ctxs[c];
        let mut last_region = None;
        for (&(ordinal, bytes), r) in ctx.moving.iter().zip(&done.results) {
            if r.is_err() {
                ctx.count.refused_pages += 1;
                continue;
            }
            ctx.scheme.stat.sz_applied += bytes;
            ctx.count.migrated_pages += 1;
            ctx.count.migrated_bytes += bytes;
            if last_region != Some(ordinal) {
                ctx.scheme.stat.nr_applied += 1;
                last_region = Some(ordinal);
            }
        }
        ctx.count.apply_cycles += spent;
        ctx.scheme.quota.total_charged_ns += ns;
    }

    fn context_report(&self, ctx: &Context) -> serde_json::Value {
        let s = |cycles: u64| cycles as f64 / (self.cycles_per_us * 1e6);
        let q = &ctx.scheme.quota;
        let monitored_s = (ctx.count.aggregations * self.cfg.aggr_us) as f64 / 1e6;
        let mut notes = Vec::new();
        let min_age = ctx.scheme.pattern.min_age as u64;
        if min_age > ctx.count.aggregations {
            notes.push(format!(
                "{}'s min_age ({} s) is longer than the {monitored_s} s monitored: no region could qualify",
                ctx.action,
                (min_age * self.cfg.aggr_us) as f64 / 1e6
            ));
        }
        json!({
            "action": ctx.action,
            "tier": ctx.tier,
            "dest": ctx.dest,
            "nr_regions": ctx.regions.len(),
            "nr_regions_min": ctx.count.regions_min,
            "nr_regions_max": ctx.count.regions_max,
            "nr_regions_series": ctx.series,
            "samples": ctx.count.samples,
            "aggregations": ctx.count.aggregations,
            "monitored_s": monitored_s,
            "rmap_walks": ctx.count.rmap_walks,
            "monitor_cpu_s": s(ctx.count.monitor_cycles),
            "apply_cpu_s": s(ctx.count.apply_cycles),
            "migrated_pages": ctx.count.migrated_pages,
            "migrated_bytes": ctx.count.migrated_bytes,
            "no_room_pages": ctx.count.no_room_pages,
            "refused_pages": ctx.count.refused_pages,
            "stat": ctx.scheme.stat,
            "quota": { "esz": q.esz, "charged_sz": q.charged_sz, "total_charged_sz": q.total_charged_sz + q.charged_sz, "total_charged_ns": q.total_charged_ns, "min_score": q.min_score },
            "wmarks": { "metric": ctx.scheme.wmarks.metric, "activated": ctx.scheme.wmarks.activated, "activations": ctx.scheme.wmarks.activations, "deactivations": ctx.scheme.wmarks.deactivations, "sleeps": ctx.count.wmark_sleeps },
            "notes": notes,
        })
    }
}

/// Checks the configuration; every error names its key.
fn validate(cfg: &DamonConfig) -> anyhow::Result<Metric> {
    let key = |k: &str| format!("policy.damon-tiering.{k}");
    if cfg.sample_us == 0 {
        anyhow::bail!("{}: must be positive", key("sample_us"));
    }
    if cfg.aggr_us < cfg.sample_us {
        anyhow::bail!("{}: must be at least sample_us ({}), got {}", key("aggr_us"), cfg.sample_us, cfg.aggr_us);
    }
    if cfg.update_us < cfg.sample_us {
        anyhow::bail!("{}: must be at least sample_us ({}), got {}", key("update_us"), cfg.sample_us, cfg.update_us);
    }
    if cfg.min_nr_regions < 3 {
        anyhow::bail!("{}: must be at least 3, got {}", key("min_nr_regions"), cfg.min_nr_regions);
    }
    if cfg.max_nr_regions < cfg.min_nr_regions {
        anyhow::bail!("{}: must be at least min_nr_regions ({}), got {}", key("max_nr_regions"), cfg.min_nr_regions, cfg.max_nr_regions);
    }
    for (p, min_sz, max_sz, min_nr, max_nr, min_age, max_age) in [
        ("cold", cfg.cold_min_sz_bytes, cfg.cold_max_sz_bytes, cfg.cold_min_nr_accesses, cfg.cold_max_nr_accesses, cfg.cold_min_age_us, cfg.cold_max_age_us),
        ("hot", cfg.hot_min_sz_bytes, cfg.hot_max_sz_bytes, cfg.hot_min_nr_accesses, cfg.hot_max_nr_accesses, cfg.hot_min_age_us, cfg.hot_max_age_us),
    ] {
        if max_sz != 0 && max_sz < min_sz {
            anyhow::bail!("{}: must be 0 (no limit) or at least {p}_min_sz_bytes ({min_sz}), got {max_sz}", key(&format!("{p}_max_sz_bytes")));
        }
        if max_nr < min_nr {
            anyhow::bail!("{}: must be at least {p}_min_nr_accesses ({min_nr}), got {max_nr}", key(&format!("{p}_max_nr_accesses")));
        }
        if max_age != 0 && max_age < min_age {
            anyhow::bail!("{}: must be 0 (no limit) or at least {p}_min_age_us ({min_age}), got {max_age}", key(&format!("{p}_max_age_us")));
        }
    }
    let metric = match cfg.wmarks_metric.as_str() {
        "none" => Metric::None,
        "free_mem_rate" => Metric::FreeMemRate,
        other => anyhow::bail!("{}: must be \"none\" or \"free_mem_rate\", got \"{other}\"", key("wmarks_metric")),
    };
    if metric != Metric::None {
        if cfg.wmarks_high > 1000 {
            anyhow::bail!("{}: a rate in per mille, at most 1000, got {}", key("wmarks_high"), cfg.wmarks_high);
        }
        if cfg.wmarks_mid > cfg.wmarks_high {
            anyhow::bail!("{}: must be at most wmarks_high ({}), got {}", key("wmarks_mid"), cfg.wmarks_high, cfg.wmarks_mid);
        }
        if cfg.wmarks_low > cfg.wmarks_mid {
            anyhow::bail!("{}: must be at most wmarks_mid ({}), got {}", key("wmarks_low"), cfg.wmarks_mid, cfg.wmarks_low);
        }
        if cfg.wmarks_interval_us == 0 {
            anyhow::bail!("{}: must be positive", key("wmarks_interval_us"));
        }
    }
    Ok(metric)
}

impl Policy for DamonTiering {
    type Config = DamonConfig;

    fn requirements(cfg: &DamonConfig) -> Requirements<()> {
        // One kdamond per context; first touch leaves the fast tier's low watermark free.
        let fast_reserve = FastReserve::LinuxLow { scale_factor: cfg.watermark_scale_factor };
        Requirements { threads: vec![ThreadKind::Kernel, ThreadKind::Kernel], fast_reserve, ..Requirements::default() }
    }

    fn new(cfg: DamonConfig, m: &MachineInfo) -> anyhow::Result<Self> {
        let metric = validate(&cfg)?;
        if !m.has(TierId::SLOW) || m.fast_hidden {
            anyhow::bail!("policy.damon-tiering: needs a fast and a slow tier the OS sees");
        }
        let samples_per_aggr = cfg.aggr_us / cfg.sample_us;
        let aggr = cfg.aggr_us;
        let scheme = |prefer, sz: (u64, u64), nr: (u32, u32), age: (u64, u64), quota: (u64, u64, u64), w: Weights| Scheme {
            pattern: AccessPattern {
                min_sz: sz.0,
                max_sz: if sz.1 == 0 { u64::MAX } else { sz.1 },
                min_nr_accesses: nr.0,
                max_nr_accesses: nr.1,
                min_age: intervals(age.0, aggr, false),
                max_age: intervals(age.1, aggr, true),
            },
            prefer,
            quota: Quota::new(quota.0, quota.1, (quota.2 as f64 * m.freq_ghz * 1e6) as u64, w),
            wmarks: Wmarks::new(metric, cfg.wmarks_interval_us, cfg.wmarks_high, cfg.wmarks_mid, cfg.wmarks_low),
            stat: Stat::default(),
        };
        let cold = scheme(
            Prefer::Cold,
            (cfg.cold_min_sz_bytes, cfg.cold_max_sz_bytes),
            (cfg.cold_min_nr_accesses, cfg.cold_max_nr_accesses),
            (cfg.cold_min_age_us, cfg.cold_max_age_us),
            (cfg.cold_quota_ms, cfg.cold_quota_sz_bytes, cfg.cold_quota_reset_interval_ms),
            Weights { sz: cfg.cold_weight_sz, nr_accesses: cfg.cold_weight_nr_accesses, age: cfg.cold_weight_age },
        );
        let hot = scheme(
            Prefer::Hot,
            (cfg.hot_min_sz_bytes, cfg.hot_max_sz_bytes),
            (cfg.hot_min_nr_accesses, cfg.hot_max_nr_accesses),
            (cfg.hot_min_age_us, cfg.hot_max_age_us),
            (cfg.hot_quota_ms, cfg.hot_quota_sz_bytes, cfg.hot_quota_reset_interval_ms),
            Weights { sz: cfg.hot_weight_sz, nr_accesses: cfg.hot_weight_nr_accesses, age: cfg.hot_weight_age },
        );
        let floor = |t: TierId| {
            let frames = m.tier(t).frames;
            Watermarks::linux(frames, Watermarks::linux_min(frames), cfg.watermark_scale_factor).low
        };
        let context = |i: u16, action, tier: TierId, dest: TierId, young_filter, scheme: Scheme| {
            let t = m.tier(tier);
            let regions = Regions::new(t.base_pfn << 12, (t.base_pfn + t.frames) << 12);
            let sz_limit = regions.sz_limit(cfg.min_nr_regions);
            Context {
                action,
                tier,
                dest,
                thread: ThreadId(i),
                young_filter,
                dest_floor: floor(dest),
                regions,
                scheme,
                rng: Rng::new(cfg.seed.wrapping_add(i as u64)),
                passed: 0,
                next_aggregation: samples_per_aggr,
                next_ops_update: (cfg.update_us / cfg.sample_us).max(1),
                sz_limit,
                max_nr_accesses: 0,
                last: LastCheck { addr: 0, folio_bytes: 4096, accessed: false },
                moving: Vec::new(),
                apply_began: 0,
                count: Counters::default(),
                series: Vec::new(),
                stride: 1,
            }
        };
        let ctxs = vec![
            context(0, "migrate_cold", TierId::FAST, TierId::SLOW, cfg.cold_young_filter, cold),
            context(1, "migrate_hot", TierId::SLOW, TierId::FAST, cfg.hot_young_filter, hot),
        ];
        Ok(DamonTiering { cycles_per_us: m.freq_ghz * 1e3, samples_per_aggr, ctxs, metric, cfg })
    }

    fn on_start(&mut self, mech: &mut Mechanisms) {
        // The kdamonds start with the run.
        for (c, ctx) in self.ctxs.iter().enumerate() {
            let mut job = Job::new(START | c as u64);
            job.push(Op::Run);
            let _ = mech.submit(ctx.thread, job);
        }
    }

    fn on_job_done(&mut self, done: &JobDone, mech: &mut Mechanisms) {
        let c = (done.tag & 0xff) as usize;
        match done.tag & !0xff {
            SAMPLE => self.sampled(c, mech),
            APPLY => {
                self.applied(c, done);
                self.iterate(c, mech);
            }
            _ => self.iterate(c, mech),
        }
    }

    fn report(&self, out: &mut PolicyReport) {
        let ctxs: Vec<_> = self.ctxs.iter().map(|c| self.context_report(c)).collect();
        let notes: Vec<String> = ctxs.iter().flat_map(|c| c["notes"].as_array().cloned().unwrap_or_default()).filter_map(|n| n.as_str().map(String::from)).collect();
        out.insert("contexts".into(), json!(ctxs));
        out.insert("samples_per_aggregation".into(), json!(self.samples_per_aggr));
        out.insert("promoted_pages".into(), json!(self.ctxs[1].count.migrated_pages));
        out.insert("demoted_pages".into(), json!(self.ctxs[0].count.migrated_pages));
        out.insert("monitor_cpu_s".into(), json!(self.ctxs.iter().map(|c| c.count.monitor_cycles).sum::<u64>() as f64 / (self.cycles_per_us * 1e6)));
        if !notes.is_empty() {
            out.insert("note".into(), json!(notes.join("; ")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{Build, Machine, MachineConfig, TenantKind};
    use crate::mechanism::Runtime;
    use crate::monitor::Region;
    use crate::trace::Access;
    use crate::units::Capacity;

    const VA: u64 = 0x7f00_0000_0000;

    /// One core, a 4 MiB fast tier and an 8 MiB slow one, 4 KiB pages.
    fn machine() -> Machine {
        let mut cfg = MachineConfig { cores: 1, ..MachineConfig::default() };
        cfg.page_table.thp = false;
        cfg.tiers.fast.capacity = Capacity::Bytes(4 << 20);
        cfg.tiers.slow.capacity = Capacity::Bytes(8 << 20);
        Machine::new(&cfg, &Build::new(&cfg, &[TenantKind::Process], 4 << 20)).unwrap()
    }

    fn error(sets: &[(&str, &str)]) -> String {
        let doc: String = sets.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
        let cfg: DamonConfig = toml::from_str(&doc).unwrap();
        DamonTiering::new(cfg, machine().info()).err().expect("an error").to_string()
    }

    #[test]
    fn impossible_configurations_name_their_key() {
        assert!(error(&[("min_nr_regions", "2")]).starts_with("policy.damon-tiering.min_nr_regions: must be at least 3"));
        assert!(error(&[("min_nr_regions", "20"), ("max_nr_regions", "10")]).starts_with("policy.damon-tiering.max_nr_regions:"));
        assert!(error(&[("sample_us", "200"), ("aggr_us", "100")]).starts_with("policy.damon-tiering.aggr_us: must be at least sample_us"));
        assert!(error(&[("hot_min_nr_accesses", "5"), ("hot_max_nr_accesses", "4")]).starts_with("policy.damon-tiering.hot_max_nr_accesses:"));
        assert!(error(&[("cold_min_age_us", "500"), ("cold_max_age_us", "400")]).starts_with("policy.damon-tiering.cold_max_age_us:"));
        assert!(error(&[("wmarks_metric", "\"rss\"")]).starts_with("policy.damon-tiering.wmarks_metric:"));
        assert!(error(&[("wmarks_metric", "\"free_mem_rate\""), ("wmarks_low", "450")]).starts_with("policy.damon-tiering.wmarks_low: must be at most wmarks_mid"));
        // Watermark levels are not checked while there is no metric.
        let cfg = DamonConfig { wmarks_low: 900, ..DamonConfig::default() };
        assert!(DamonTiering::new(cfg, machine().info()).is_ok());
    }

    #[test]
    fn ages_in_microseconds_become_whole_aggregation_intervals() {
        // 30 s of 100 ms intervals: 300; 0 is no limit as a maximum, none as a minimum.
        assert_eq!(intervals(30_000_000, 100_000, false), 300);
        assert_eq!(intervals(250_000, 100_000, false), 2);
        assert_eq!(intervals(0, 100_000, true), u32::MAX);
        assert_eq!(intervals(0, 100_000, false), 0);
        let p = DamonTiering::new(DamonConfig::default(), machine().info()).unwrap();
        assert_eq!((p.ctxs[0].scheme.pattern.min_age, p.ctxs[0].scheme.pattern.max_nr_accesses), (300, 0));
        assert_eq!((p.ctxs[1].scheme.pattern.min_nr_accesses, p.samples_per_aggr), (1, 20));
    }

    /// The frequency estimate through the real mechanism: a page sampled every interval
    /// (its region is one page) and accessed in k of n of them counts k — if each access
    /// walks the page table. One that hits a translation still in the TLB sets no
    /// Accessed bit (DAMON clears it without a flush) and is not counted.
    #[test]
    fn a_page_accessed_in_k_of_n_samples_counts_k() {
        let mut m = machine();
        let mut rt = Runtime::new(&[ThreadKind::Kernel, ThreadKind::Kernel], 1);
        m.access(0, &Access::read(VA, 8, 0), &mut ());
        m.access(0, &Access::read(VA + 4096, 8, 0), &mut ());
        let pfn = |m: &Machine, va| m.space().page_info(PageRef::new(0, va)).unwrap().pfn;
        let (x, y) = (pfn(&m, VA), pfn(&m, VA + 4096));
        assert!(x < y, "first touch in address order");
        let mut p = DamonTiering::new(DamonConfig::default(), m.info()).unwrap();
        // Two one-page regions, so that each check of X follows one of Y (a check in the
        // folio checked just before reuses its result, as in the kernel).
        p.ctxs[0].regions = Regions::from_list(vec![Region::new(x << 12, (x + 1) << 12), Region::new(y << 12, (y + 1) << 12)]);
        p.ctxs[0].next_aggregation = u64::MAX;
        p.iterate(0, &mut Mechanisms::on_thread(&mut m, &mut rt, ThreadId(0)));
        // Accessed (through a page walk) in 3 of 5 intervals.
        for hit in [true, false, true, true, false] {
            if hit {
                m.cores[0].tlb.invalidate(0, VA, false);
                m.access(0, &Access::read(VA, 8, 0), &mut ());
            }
            p.sampled(0, &mut Mechanisms::on_thread(&mut m, &mut rt, ThreadId(0)));
        }
        let counts = |p: &DamonTiering| p.ctxs[0].regions.as_slice().iter().map(|r| r.nr_accesses).collect::<Vec<_>>();
        assert_eq!(counts(&p), vec![3, 0]);
        // Accessed in 2 more intervals through the TLB only: not seen.
        for _ in 0..2 {
            m.access(0, &Access::read(VA, 8, 0), &mut ());
            p.sampled(0, &mut Mechanisms::on_thread(&mut m, &mut rt, ThreadId(0)));
        }
        assert_eq!(counts(&p), vec![3, 0]);
        assert_eq!(p.ctxs[0].count.samples, 7);
        // Each interval walked the reverse map twice per region (prepare and check).
        assert_eq!(p.ctxs[0].count.rmap_walks, 2 + 7 * 4);
        assert!(p.ctxs[0].count.monitor_cycles > 0);
    }
}
