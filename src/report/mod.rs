//! The report of a run: summary figures, per-core, per-TLB, per-cache and per-tier
//! counters, mechanism counts, the policy's own figures and a per-epoch time series;
//! written as JSON, CSV or a table, and drawn as an HTML page ([`html`]).

pub mod html;
pub mod table;

use crate::config::{Config, FastForward, SampledConfig, WorkloadSlot};
use crate::machine::cache::CacheStats;
use crate::machine::sampled::CostModel;
use crate::machine::ops::MechanismStats;
use crate::machine::placement::Placement;
use crate::machine::{CoreStats, Machine, Redirect, TenantKind, TierId, TiersConfig};
use crate::mechanism::ThreadStats;
use crate::units::Size;
use crate::policy::PolicyReport;
use std::collections::BTreeMap;
use serde::Serialize;
use std::time::Duration;

/// The figures `compare` tabulates and scripts read first.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub references: u64,
    pub instructions: u64,
    /// Execution time: the largest core clock at the end, in cycles.
    pub cycles: u64,
    /// Execution time in simulated seconds.
    pub seconds: f64,
    /// Instructions of all cores per cycle of execution time.
    pub ipc: f64,
    /// Average latency of demand memory accesses (LLC misses of loads, stores and page
    /// walks), queueing included, in ns.
    pub amat_ns: f64,
    /// Share of demand memory accesses served by the fast tier.
    pub fast_tier_fraction: f64,
    /// Every page move: `migrations` plus `merge_copies`.
    pub page_moves: u64,
    /// Bytes copied by all of them: `migrated_bytes` plus `merge_copied_bytes`.
    pub moved_bytes: u64,
    /// Pages moved between tiers by migration (a swap counts two; a fast-tier copy
    /// made, or a dirty one written back, counts one).
    pub migrations: u64,
    /// Bytes the migrations copied.
    pub migrated_bytes: u64,
    /// Huge pages merged from base pages copied into a new huge frame (Thermostat
    /// merging a sampled page into the slow tier); merges in place copy nothing.
    pub merge_copies: u64,
    /// Bytes those merges copied.
    pub merge_copied_bytes: u64,
    /// Bytes moved (both directions, every kind of move) per byte of footprint
    /// (Rainbow Fig. 11).
    pub migration_to_footprint: f64,
    /// TLB misses (page walks) per thousand instructions.
    pub tlb_mpki: f64,
    /// Last-level cache misses per thousand instructions.
    pub llc_mpki: f64,
    /// Dynamic plus static energy of all tiers, in joules.
    pub energy_j: f64,
    /// 64-byte writes that reached the slow tier (write-backs and migration copies).
    pub slow_tier_writes: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct TierReport {
    pub name: String,
    pub capacity_bytes: u64,
    /// Frames in use at the end (data and page tables).
    pub used_frames: u64,
    /// Data frames at the end.
    pub data_frames: u64,
    pub demand_accesses: u64,
    pub demand_reads: u64,
    pub demand_writes: u64,
    pub amat_ns: f64,
    /// 64-byte reads and writes of demand traffic (loads, walks, write-backs).
    pub reads: u64,
    pub writes: u64,
    /// 64-byte reads and writes of mechanisms (copies, page-table scans, flush
    /// write-backs, metadata).
    pub mechanism_reads: u64,
    pub mechanism_writes: u64,
    pub row_hits: u64,
    pub row_misses: u64,
    pub queue_cycles: u64,
    pub mechanism_bytes: u64,
    pub dynamic_energy_j: f64,
    pub static_energy_j: f64,
    /// Years until the most-written frame wears out at this run's write rate (none for
    /// tiers with unlimited endurance or no writes).
    pub lifetime_years: Option<f64>,
    /// Years until wear-out with perfect wear levelling over the whole tier.
    pub ideal_lifetime_years: Option<f64>,
    /// Standard deviation of the demand accesses per bank over their mean (memos
    /// Fig. 15's bank balance, by accesses rather than active pages).
    pub bank_imbalance: Option<f64>,
    /// Years until wear-out behind a Start-Gap leveller: the ideal lifetime times the
    /// tier's `start_gap_efficiency` (memos §7.1: 95 %).
    pub start_gap_lifetime_years: Option<f64>,
}

/// One point of the time series: what happened during the epoch ending at `end_cycle`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EpochRecord {
    pub end_cycle: u64,
    pub references: u64,
    pub instructions: u64,
    pub ipc: f64,
    pub fast_tier_fraction: f64,
    /// Page moves and the bytes they copied (as the summary's `page_moves`).
    pub page_moves: u64,
    pub moved_bytes: u64,
    /// Share of the data frames that live in the fast tier at the end of the epoch.
    pub fast_resident_fraction: f64,
    /// Each tier's traffic during the epoch, fastest first.
    pub tiers: Vec<EpochTier>,
    #[serde(skip)]
    cum: [u64; 6],
}

/// One tier's traffic during an epoch.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EpochTier {
    /// Bytes of demand traffic (loads, walks, write-backs), as the tier's `reads` and
    /// `writes` count it.
    pub demand_bytes: u64,
    /// Bytes of mechanism traffic (copies, page-table scans, flush write-backs,
    /// metadata), as the tier's `mechanism_bytes`.
    pub mechanism_bytes: u64,
    /// Both together over the epoch's simulated time, in GB/s (bytes per ns, as the
    /// tiers' `channel_gbps`).
    pub bandwidth_gbps: f64,
    /// Demand accesses the tier served (LLC misses of loads, stores and walks).
    pub demand_accesses: u64,
    /// Their average latency, queueing included, in ns (as the tier's `amat_ns`).
    pub amat_ns: f64,
    /// Totals since the start: demand bytes, mechanism bytes, demand accesses and
    /// their latency in cycles.
    #[serde(skip)]
    cum: [u64; 4],
}

/// Every page move so far: the pages and bytes of migrations (one per page migrated,
/// two per swap, one per fast-tier copy made and per dirty copy written back, one per
/// unit a migration controller moved), and the
/// huge pages merges assembled from copied base pages, with their bytes.
fn moves(st: &MechanismStats) -> (u64, u64, u64, u64) {
    let migrations = [st.migrate, st.swap, st.copy_in, st.copy_back, st.onfly];
    (migrations.iter().map(|c| c.pages).sum(), migrations.iter().map(|c| c.bytes).sum(), st.merges_copied, st.merge.bytes)
}

impl EpochRecord {
    /// Records the epoch ending at `end`; `last` holds the previous record's totals and
    /// is updated.
    pub fn take<R: Redirect>(m: &Machine<R>, end: u64, last: &mut EpochRecord) -> EpochRecord {
        let refs: u64 = m.cores().iter().map(|c| c.stats.references).sum();
        let instrs: u64 = m.cores().iter().map(|c| c.stats.instructions).sum();
        let tiers = m.memory().tiers();
        let n = tiers.all().len();
        let fast = tiers.demand(TierId::FAST).accesses;
        let all: u64 = TierId::first(n).map(|t| tiers.demand(t).accesses).sum();
        let (migrations, migrated_bytes, merges, merged_bytes) = moves(m.stats());
        let cum = [refs, instrs, fast, all, migrations + merges, migrated_bytes + merged_bytes];
        let d: Vec<u64> = cum.iter().zip(&last.cum).map(|(a, b)| a - b).collect();
        let cycles = end.saturating_sub(last.end_cycle).max(1);
        let data: Vec<u64> = TierId::first(n).map(|t| m.space().data_frames_in(t)).collect();
        let total: u64 = data.iter().sum();
        let ghz = m.cfg().freq_ghz;
        let tier_records = TierId::first(n)
            .map(|t| {
                let (s, d) = (tiers.get(t).stats(), tiers.demand(t));
                let cum = [s.read_bytes() + s.written_bytes(), s.mechanism_bytes(), d.accesses, d.latency_cycles];
                let before = last.tiers.get(t.index()).map_or([0; 4], |e| e.cum);
                let [demand_bytes, mechanism_bytes, accesses, latency_cycles] = std::array::from_fn(|i| cum[i] - before[i]);
                EpochTier {
                    demand_bytes,
                    mechanism_bytes,
                    bandwidth_gbps: (demand_bytes + mechanism_bytes) as f64 * ghz / cycles as f64,
                    demand_accesses: accesses,
                    amat_ns: ratio(latency_cycles, accesses) / ghz,
                    cum,
                }
            })
            .collect();
        let rec = EpochRecord {
            end_cycle: end,
            references: d[0],
            instructions: d[1],
            ipc: d[1] as f64 / cycles as f64,
            fast_tier_fraction: ratio(d[2], d[3]),
            page_moves: d[4],
            moved_bytes: d[5],
            fast_resident_fraction: ratio(data[0], total),
            tiers: tier_records,
            cum,
        };
        *last = rec.clone();
        rec
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Where one tenant's pages are at the end of the run.
#[derive(Clone, Debug, Serialize)]
pub struct TenantReport {
    pub kind: TenantKind,
    /// Data frames in each tier, fastest first.
    pub frames_per_tier: Vec<u64>,
    /// Fast-tier quota in frames, if any.
    pub fast_quota_frames: Option<u64>,
    /// A VM's guest page-table pages in each tier, fastest first: they are pages of
    /// the VM, which a hypervisor's policy may move like any other (and its walks
    /// then read the slow tier).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_table_frames_per_tier: Option<Vec<u64>>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct CoreReport {
    pub ipc: f64,
    #[serde(flatten)]
    pub stats: CoreStats,
}

/// The figures of a `loaded-latency` run, as Intel's Memory Latency Checker gives
/// them: the probe core's load latency beside the bandwidth the tiers served.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoadedLatencyReport {
    /// Average latency of core 0's (the probe's) loads in ns: its memory stall per
    /// reference plus the first-level cache latency the stall leaves out. Dependent
    /// loads stall for their whole data latency beyond an L1 hit, so this is the time
    /// from issue to data of a load; address translation is not in it.
    pub probe_latency_ns: f64,
    /// Demand bandwidth of each tier over the run, fastest first, in GB/s (10^9
    /// bytes/s): its 64-byte reads and writes (loads, walks, write-backs) over the
    /// run's simulated time.
    pub tier_gbps: Vec<f64>,
    /// Of `tier_gbps`, the reads.
    pub tier_read_gbps: Vec<f64>,
}

impl LoadedLatencyReport {
    /// The figures of a run at `ghz` GHz lasting `seconds`, from the probe core's
    /// counters `probe`, the first cache level's hit latency `l1_cycles` and the tiers.
    fn new(probe: &CoreStats, l1_cycles: u64, ghz: f64, seconds: f64, tiers: &[TierReport]) -> LoadedLatencyReport {
        let gbps = |lines: u64| if seconds > 0.0 { (lines * 64) as f64 / seconds / 1e9 } else { 0.0 };
        LoadedLatencyReport {
            probe_latency_ns: (ratio(probe.memory_stall_cycles, probe.references) + l1_cycles as f64) / ghz,
            tier_gbps: tiers.iter().map(|t| gbps(t.reads + t.writes)).collect(),
            tier_read_gbps: tiers.iter().map(|t| gbps(t.reads)).collect(),
        }
    }
}

/// Execution time against a reference run of another policy on the same input.
#[derive(Clone, Debug, Serialize)]
pub struct Slowdown {
    pub reference_policy: String,
    pub reference_cycles: u64,
    /// (cycles / reference cycles − 1) × 100.
    pub percent: f64,
    /// (1 − reference cycles / cycles) × 100: the throughput lost, the paper's
    /// measure (Thermostat §3.4: x % of every second spent on slow accesses).
    pub throughput_loss_percent: f64,
    /// With `--warmup F`: the same over the references after the first fraction F of
    /// them, once a policy that converges over many periods has settled (Thermostat
    /// measures after 600 s of warm-up, §4.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_warmup: Option<WarmSlowdown>,
}

/// Slowdown over the references after a warm-up.
#[derive(Clone, Debug, Serialize)]
pub struct WarmSlowdown {
    pub warmup_fraction: f64,
    pub percent: f64,
    pub throughput_loss_percent: f64,
}

impl Slowdown {
    /// The slowdown of `run` against `reference` (the same input under another policy);
    /// with `warmup`, also over the references after that fraction of them.
    pub fn between(run: &Report, reference: &Report, reference_policy: &str, warmup: Option<f64>) -> Slowdown {
        let percent = |a: f64, b: f64| (a / b.max(1.0) - 1.0) * 100.0;
        let loss = |a: f64, b: f64| (1.0 - b / a.max(1.0)) * 100.0;
        let after_warmup = warmup.map(|f| {
            let refs = f * run.summary.references as f64;
            let own = run.summary.cycles as f64 - run.cycle_at_reference(refs);
            let base = reference.summary.cycles as f64 - reference.cycle_at_reference(refs);
            WarmSlowdown { warmup_fraction: f, percent: percent(own, base), throughput_loss_percent: loss(own, base) }
        });
        let (own, base) = (run.summary.cycles as f64, reference.summary.cycles as f64);
        Slowdown {
            reference_policy: reference_policy.to_string(),
            reference_cycles: reference.summary.cycles,
            percent: percent(own, base),
            throughput_loss_percent: loss(own, base),
            after_warmup,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct SimInfo {
    pub version: String,
    /// The commit the binary was built from (`git rev-parse --short=12 HEAD`, with
    /// `+modified` when tracked files differed from it; `unknown` outside a git
    /// checkout): a sweep store tells runs of other builds by it.
    pub commit: String,
    /// Wall time of the simulation proper (the reference loop).
    pub wall_seconds: f64,
    /// Wall time before it: the footprint pass over traces, building the workloads
    /// (graphs, matrices) and the machine, and the first pass of a policy with
    /// foresight.
    pub setup_seconds: f64,
    /// Of the setup, the first pass over every source of a policy that reads the
    /// reference stream before the run (`oracle`, `oracle-static`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub foresight_seconds: Option<f64>,
    /// Wall time of the whole command, every run of it included (`compare`,
    /// `--slowdown-vs`).
    pub command_seconds: f64,
    /// References per second of simulation wall time.
    pub references_per_second: f64,
    /// Simulated seconds per second of simulation wall time.
    pub simulated_seconds_per_second: f64,
    pub verify: bool,
    /// Reads checked against shadow memory (with `--verify`).
    pub verified_reads: u64,
}

/// What a sampled run did (module `machine::sampled`, docs/sampled.md).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SamplingReport {
    /// `sampled`, or `detailed` when the policy's redirection structure kept the run
    /// detailed throughout.
    pub ran: String,
    pub period_refs: u64,
    pub detailed_refs: u64,
    pub warmup_refs: u64,
    /// References run in the full model (warm-up and fitting) and fast-forwarded.
    pub detailed_references: u64,
    pub fast_forward_references: u64,
    /// Share of references run in the full model.
    pub detailed_share: f64,
    /// Fitting windows that the previous fit predicted, over all cores.
    pub predicted_windows: u64,
    /// The cost model's estimated error: over those windows, the stall cycles the
    /// previous fit predicts minus those measured, as a share of the window's cycles —
    /// the mean of its absolute value, its largest absolute value, and its mean with
    /// sign (a bias: positive when the model overestimates time).
    pub model_error_mean: f64,
    pub model_error_max: f64,
    pub model_error_bias: f64,
    /// What in the report is estimated rather than simulated.
    pub estimated: String,
}

impl SamplingReport {
    /// The sampling section of a run that was `sampled` (or detailed throughout),
    /// whose fast-forward translated as `ff` says.
    pub fn new(sampled: bool, ff: FastForward, refs_by_window: [u64; 2], models: &[CostModel], w: &SampledConfig) -> SamplingReport {
        let errors: Vec<f64> = models.iter().flat_map(|m| m.errors.iter().copied()).collect();
        let n = errors.len().max(1) as f64;
        let total = refs_by_window[0] + refs_by_window[1];
        SamplingReport {
            ran: if sampled { "sampled" } else { "detailed" }.to_string(),
            period_refs: w.period_refs,
            detailed_refs: w.detailed_refs,
            warmup_refs: w.warmup_refs,
            detailed_references: refs_by_window[0],
            fast_forward_references: refs_by_window[1],
            detailed_share: ratio(refs_by_window[0], total),
            predicted_windows: errors.len() as u64,
            model_error_mean: errors.iter().map(|e| e.abs()).sum::<f64>() / n,
            model_error_max: errors.iter().fold(0.0, |a, e| a.max(e.abs())),
            model_error_bias: errors.iter().sum::<f64>() / n,
            estimated: match (sampled, ff) {
                (false, _) => String::new(),
                (true, FastForward::Tlb) => {
                    "in fast-forward windows: cache-hierarchy latencies, cache hit and miss counts, walk references served by memory, and which references reach memory (at the fitted rate)".to_string()
                }
                (true, FastForward::Page) => "in fast-forward windows: cache-hierarchy latencies, cache hit and miss counts, which references reach memory (at the fitted rate), the tiers' row hits, queueing and walk reads (at the fitting window's rates, counted per window), translation times, and the TLB counts (L1 and L2 hits, misses), walk references, walk memory accesses and walk cycles (from the fitting window, by whether the core's reach array held the translation); Accessed and Dirty bits, first-touch, poison and hinting faults and traps follow the reach array's misses".to_string(),
            },
        }
    }
}

/// Everything a run reports.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// False when the run was stopped (Ctrl-C) before its workloads ended: every
    /// figure then covers the `summary.references` simulated.
    pub complete: bool,
    pub policy: String,
    /// The `--preset` the configuration started from.
    pub preset: Option<String>,
    /// What the user should know to read the figures: capacities rounded or grown,
    /// placements that could not be honoured, traces in an older format.
    pub notes: Vec<String>,
    /// Set when a policy that moves pages did nothing in the run (its first period
    /// never came due, or it moved no page): the same text as its note. Sweeps and
    /// `reproduce` mark the run by it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub never_acted: Option<String>,
    pub workloads: Vec<WorkloadSlot>,
    pub footprint_bytes: u64,
    pub summary: Summary,
    pub cores: Vec<CoreReport>,
    pub caches: Vec<CacheStats>,
    pub tiers: Vec<TierReport>,
    pub tenants: Vec<TenantReport>,
    pub mechanisms: MechanismStats,
    /// VM exits by cause, their cycles, and PML entries logged and drained (runs with
    /// a VM tenant only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vm_exits: Option<crate::machine::vmx::VmxStats>,
    /// Pages each way of moving a page moved (`linux`, `write-protect`, `pml`,
    /// `dma`), PML batches and recopies, DMA batches and discards, and the accesses
    /// that waited for a moving page (runs with a VM tenant, or in which a process's
    /// page moved one of these ways; `machine::hypervisor`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vm_moves: Option<crate::machine::hypervisor::VmMoveStats>,
    /// The background threads the policy used: busy time, jobs and operations done,
    /// refused and left unfinished.
    pub threads: Vec<ThreadStats>,
    /// Sections of the machine's redirection structure, by key: with Rainbow's and
    /// HSCC's copies, `copies` (checks, remaps, copies made and dropped, their cycles
    /// by kind) and `breakdown` (address-translation cycles by kind, Rainbow Fig. 9,
    /// and runtime overhead cycles by kind, Fig. 15, each also as a share of execution
    /// cycles).
    #[serde(flatten)]
    pub redirect: BTreeMap<String, serde_json::Value>,
    pub policy_report: PolicyReport,
    /// Runs asked to be sampled (`engine.mode = "sampled"`): what ran detailed and
    /// fast-forward, and the cost model's estimated error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingReport>,
    /// What epochs mode did (present when `engine.mode = "epochs"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epochs_mode: Option<crate::engine::EpochsReport>,
    /// With `--slowdown-vs P`: execution time relative to a run of P on the same input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slowdown: Option<Slowdown>,
    /// The probe's latency and the tiers' bandwidth (runs of `loaded-latency` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded_latency: Option<LoadedLatencyReport>,
    pub epochs: Vec<EpochRecord>,
    pub sim: SimInfo,
    pub config: serde_json::Value,
    /// Malformed trace lines skipped (with `--skip-malformed`).
    pub malformed_lines_skipped: u64,
}

/// States how the machine sized each tier against its configured capacity — rounded
/// up to whole huge pages, the fast tier grown to hold the footprint (all-fast), the
/// slow tier grown by the redirection structure's metadata —
/// as notes, and records every tier's resolved capacity (and the note) in its table
/// of the report's `config`.
fn capacity_notes<R: Redirect>(cfg: &Config, m: &Machine<R>, tiers: &[TierReport], config: &mut serde_json::Value) -> Vec<String> {
    let footprint = m.info().footprint_bytes;
    let huge = 1u64 << m.huge_shift();
    let mut notes = Vec::new();
    for (i, (t, got)) in cfg.machine.tiers.all().into_iter().zip(tiers).enumerate() {
        let id = TierId(i as u8);
        let field = TiersConfig::field(id);
        let (asked, rounded) = (t.capacity.exact(footprint), t.capacity.resolve(footprint, huge));
        let what = match t.capacity {
            crate::units::Capacity::Percent(p) => format!("\"{p}%\" of the {} footprint is {}", mib_text(footprint), mib_text(asked)),
            crate::units::Capacity::Bytes(_) => format!("\"{}\"", Size(asked)),
        };
        let note = if got.capacity_bytes > rounded && id == TierId::FAST {
            // The machine sizes it as the footprint, 1/128 of it and 64 MiB for the
            // page tables, rounded up to huge pages (`machine::capacities`).
            Some(format!(
                "{field}.capacity: {what}; grown to {} to hold the whole footprint (policy all-fast): the {} footprint and {} of room for its page tables (1/128 of the footprint plus 64 MiB, rounded up to whole {} huge pages)",
                mib_text(got.capacity_bytes),
                mib_text(footprint),
                mib_text(got.capacity_bytes.saturating_sub(footprint)),
                Size(huge)
            ))
        } else if got.capacity_bytes > rounded && m.info().fast_hidden {
            Some(format!("{field}.capacity: {what}; grown to {} to hold every page and its page tables (the fast tier is Memory Mode's cache)", mib_text(got.capacity_bytes)))
        } else if got.capacity_bytes > rounded {
            Some(format!("{field}.capacity: {what}; grown to {} for the machine's metadata (Rainbow's migration bitmap)", mib_text(got.capacity_bytes)))
        } else if got.capacity_bytes != asked {
            Some(format!("{field}.capacity: {what}; rounded up to {} (whole {} huge pages)", mib_text(got.capacity_bytes), Size(huge)))
        } else {
            None
        };
        let path = format!("/{}", field.replace('.', "/").replace("extra[", "extra/").replace(']', ""));
        if let Some(serde_json::Value::Object(table)) = config.pointer_mut(&path) {
            table.insert("resolved_capacity_bytes".into(), got.capacity_bytes.into());
            if let Some(n) = &note {
                table.insert("capacity_note".into(), n.clone().into());
            }
        }
        notes.extend(note);
    }
    notes
}

/// The tenant each of `cores` cores ran (0 for a core no slot used).
fn core_tenants(slots: &[WorkloadSlot], cores: usize) -> Vec<u16> {
    let mut t = vec![0; cores];
    for s in slots.iter().filter(|s| s.core < cores) {
        t[s.core] = s.tenant;
    }
    t
}

/// Bytes as MiB with two decimals, or KiB below 1 MiB.
fn mib_text(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.2} MiB", bytes as f64 / (1 << 20) as f64)
    }
}

impl Report {
    /// The cycle at which the run had issued `refs` references (all cores), from the
    /// epoch series, linear within an epoch; the run's end beyond the last epoch.
    pub fn cycle_at_reference(&self, refs: f64) -> f64 {
        let (mut done, mut start) = (0.0, 0.0);
        for e in &self.epochs {
            let n = e.references as f64;
            if n > 0.0 && done + n >= refs {
                return start + (e.end_cycle as f64 - start) * (refs - done) / n;
            }
            done += n;
            start = e.end_cycle as f64;
        }
        self.summary.cycles as f64
    }

    #[allow(clippy::too_many_arguments)]
    pub fn build<R: Redirect>(
        cfg: &Config,
        policy: &str,
        slots: &[WorkloadSlot],
        m: &Machine<R>,
        threads: Vec<ThreadStats>,
        epochs: Vec<EpochRecord>,
        policy_report: PolicyReport,
        wall: Duration,
        verify: bool,
    ) -> Report {
        let ghz = m.cfg().freq_ghz;
        let cycles = m.now();
        let seconds = cycles as f64 / (ghz * 1e9);
        let cores = m.cores();
        let refs: u64 = cores.iter().map(|c| c.stats.references).sum();
        let instrs: u64 = cores.iter().map(|c| c.stats.instructions).sum();
        let tlb_misses: u64 = cores.iter().map(|c| c.stats.tlb_misses).sum();
        let caches = m.memory().caches().stats();
        let llc_misses = caches.last().map_or(0, |c| c.misses);
        let mem = m.memory().tiers();
        let tiers: Vec<TierReport> = mem
            .all()
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let id = TierId(i as u8);
                let s = t.stats();
                let d = mem.demand(id);
                TierReport {
                    name: t.name().to_string(),
                    capacity_bytes: t.capacity_bytes(),
                    used_frames: m.space().used_frames(id),
                    data_frames: m.space().data_frames_in(id),
                    demand_accesses: d.accesses,
                    demand_reads: d.reads,
                    demand_writes: d.writes,
                    amat_ns: ratio(d.latency_cycles, d.accesses) / ghz,
                    reads: s.reads,
                    writes: s.writes,
                    mechanism_reads: s.mechanism_reads,
                    mechanism_writes: s.mechanism_writes,
                    row_hits: s.row_hits,
                    row_misses: s.row_misses,
                    queue_cycles: s.queue_cycles,
                    mechanism_bytes: s.mechanism_bytes(),
                    dynamic_energy_j: t.dynamic_energy_pj() * 1e-12,
                    static_energy_j: t.static_energy_j(seconds),
                    lifetime_years: t.lifetime_years(seconds),
                    ideal_lifetime_years: t.ideal_lifetime_years(seconds),
                    start_gap_lifetime_years: t.start_gap_lifetime_years(seconds),
                    bank_imbalance: t.bank_imbalance(),
                }
            })
            .collect();
        let demand_lat: u64 = TierId::first(tiers.len()).map(|t| mem.demand(t).latency_cycles).sum();
        let demand_all: u64 = TierId::first(tiers.len()).map(|t| mem.demand(t).accesses).sum();
        let (migrations, migrated_bytes, merge_copies, merge_copied_bytes) = moves(m.stats());
        let summary = Summary {
            references: refs,
            instructions: instrs,
            cycles,
            seconds,
            ipc: ratio(instrs, cycles),
            amat_ns: ratio(demand_lat, demand_all) / ghz,
            fast_tier_fraction: ratio(mem.demand(TierId::FAST).accesses, demand_all),
            page_moves: migrations + merge_copies,
            moved_bytes: migrated_bytes + merge_copied_bytes,
            migrations,
            migrated_bytes,
            merge_copies,
            merge_copied_bytes,
            migration_to_footprint: ratio(migrated_bytes + merge_copied_bytes, m.info().footprint_bytes),
            tlb_mpki: ratio(tlb_misses * 1000, instrs),
            llc_mpki: ratio(llc_misses * 1000, instrs),
            energy_j: tiers.iter().map(|t| t.dynamic_energy_j + t.static_energy_j).sum(),
            slow_tier_writes: tiers.get(1).map_or(0, |t| t.writes + t.mechanism_writes),
        };
        let loaded_latency = slots
            .first()
            .filter(|s| s.trace.is_none() && s.workload.name == "loaded-latency")
            .map(|s| LoadedLatencyReport::new(&cores[s.core].stats, m.cfg().caches[0].latency_cycles, ghz, seconds, &tiers));
        let core_reports = cores.iter().map(|c| CoreReport { ipc: ratio(c.stats.instructions, c.clock), stats: CoreStats { cycles: c.clock, psc: c.tlb.psc().map(|p| p.stats.clone()), ..c.stats.clone() } }).collect();
        let wall_s = wall.as_secs_f64();
        // The configuration as run: the machine as built (the policy's page size).
        let mut as_run = cfg.clone();
        as_run.machine = m.cfg().clone();
        let mut config = serde_json::to_value(&as_run).unwrap_or(serde_json::Value::Null);
        let mut notes = capacity_notes(cfg, m, &tiers, &mut config);
        if loaded_latency.is_some() && cfg.engine.seconds == 0.0 && cores.len() > 1 {
            notes.push("loaded-latency without a simulated time (--seconds): each core made its own number of references and the cores ended at different times, so part of the run was not loaded as configured".to_string());
        }
        // Pages a policy migrated or copied into the fast tier later do not count.
        let fast_born = m.space().first_touch_frames_in(TierId::FAST);
        if m.space().placement() == Placement::SlowOnly && fast_born > 0 {
            notes.push(format!("the slow tier filled up: {} of pages were placed in the fast tier instead", Size(fast_born << 12)));
        }
        Report {
            complete: true,
            policy: policy.to_string(),
            preset: None,
            notes,
            never_acted: None,
            workloads: slots.to_vec(),
            footprint_bytes: m.info().footprint_bytes,
            summary,
            cores: core_reports,
            caches,
            tiers,
            tenants: m
                .space()
                .tenants()
                .iter()
                .enumerate()
                .map(|(i, t)| TenantReport { kind: t.kind, frames_per_tier: t.frames_per_tier().to_vec(), fast_quota_frames: t.fast_quota(), guest_table_frames_per_tier: m.guest_table_frames_per_tier(i as u16) })
                .collect(),
            mechanisms: m.stats().clone(),
            vm_exits: m.space().tenants().iter().any(|t| t.guest.is_some()).then(|| m.vmx().clone()),
            vm_moves: (m.space().tenants().iter().any(|t| t.guest.is_some()) || {
                let v = m.vm_moves();
                v.linux + v.write_protect + v.pml + v.dma_batches > 0
            })
            .then(|| m.vm_moves().clone()),
            threads,
            redirect: m.redirect().report(cores, &m.cfg().tlb, &core_tenants(slots, cores.len())).into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            policy_report,
            sampling: None,
            epochs_mode: None,
            slowdown: None,
            loaded_latency,
            epochs,
            sim: SimInfo {
                version: env!("CARGO_PKG_VERSION").to_string(),
                commit: env!("TIERSIM_COMMIT").to_string(),
                wall_seconds: wall_s,
                setup_seconds: 0.0,
                foresight_seconds: None,
                command_seconds: 0.0,
                references_per_second: if wall_s > 0.0 { refs as f64 / wall_s } else { 0.0 },
                simulated_seconds_per_second: if wall_s > 0.0 { seconds / wall_s } else { 0.0 },
                verify,
                verified_reads: m.verified_reads(),
            },
            config,
            malformed_lines_skipped: 0,
        }
    }
}

/// The geometric mean of `xs` (ratios, speed-ups, shares): 0 when one is 0; none when
/// there are none, or one is negative or not a number, where it has no meaning. The
/// one mean of the report pages and of `reproduce`.
pub fn geometric_mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|x| !(x.is_finite() && *x >= 0.0)) {
        return None;
    }
    if xs.contains(&0.0) {
        return Some(0.0);
    }
    Some((xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::geometric_mean;

    #[test]
    fn the_geometric_mean_is_of_non_negative_numbers() {
        assert!((geometric_mean(&[1.0, 4.0]).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(geometric_mean(&[2.0, 0.0]), Some(0.0));
        assert_eq!(geometric_mean(&[]), None);
        assert_eq!(geometric_mean(&[2.0, -1.0]), None);
        assert_eq!(geometric_mean(&[2.0, f64::NAN]), None);
    }

    use super::*;

    fn with_epochs(points: &[(u64, u64)], cycles: u64) -> Report {
        let epochs = points.iter().map(|&(end_cycle, references)| EpochRecord { end_cycle, references, ..Default::default() }).collect();
        let summary = Summary { references: points.iter().map(|p| p.1).sum(), cycles, ..Default::default() };
        Report { epochs, summary, ..Default::default() }
    }

    #[test]
    fn cycle_at_reference_interpolates_within_an_epoch() {
        // 100 references by cycle 1000, 300 more by cycle 1600, none until 2000.
        let r = with_epochs(&[(1000, 100), (1600, 300), (2000, 0)], 2000);
        assert_eq!(r.cycle_at_reference(0.0), 0.0);
        assert_eq!(r.cycle_at_reference(50.0), 500.0);
        assert_eq!(r.cycle_at_reference(100.0), 1000.0);
        assert_eq!(r.cycle_at_reference(250.0), 1300.0);
        assert_eq!(r.cycle_at_reference(400.0), 1600.0);
        assert_eq!(r.cycle_at_reference(401.0), 2000.0);
    }

    #[test]
    fn slowdown_after_warmup_counts_only_the_later_references() {
        // Both issue 400 references; the run is twice as slow in the second half only.
        let base = with_epochs(&[(1000, 200), (2000, 200)], 2000);
        let run = with_epochs(&[(1000, 200), (3000, 200)], 3000);
        let s = Slowdown::between(&run, &base, "all-fast", Some(0.5));
        assert_eq!(s.percent, 50.0);
        assert!((s.throughput_loss_percent - 100.0 / 3.0).abs() < 1e-12);
        let w = s.after_warmup.unwrap();
        assert_eq!((w.warmup_fraction, w.percent, w.throughput_loss_percent), (0.5, 100.0, 50.0));
        assert!(Slowdown::between(&run, &base, "all-fast", None).after_warmup.is_none());
    }
}
