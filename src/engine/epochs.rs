//! Epochs mode's driver (docs/epochs.md): time advances in chunks of references that
//! are never simulated one by one.
//!
//! Each tenant's references come from its statement (module `workload::rates`): a
//! sequence of stationary stretches of page rates. A core runs its tenant's current
//! stretch in chunks: a chunk's time and traffic come from a cost model per core,
//! and what a policy observes — Accessed and Dirty bits, poison and hinting faults,
//! first touches — is drawn by the machine from the rates (module `machine::epochs`).
//! A chunk ends where the engine's scheduler says (the next executor, the next epoch
//! boundary), at the core's next fault, at its tenant's next first touch, or at the
//! stretch's end; the policy's `on_reference` is called once per chunk, told how many
//! references it stands for, and once after each fault, so that every policy runs
//! unchanged.
//!
//! # The cost model
//! A reference's cost depends on how hot its page is and where the page lives. The
//! model is calibrated per core by short detailed windows that run the real
//! references (the workload's generator or trace) through the full machine — first a
//! warm-up, since the caches and TLBs went stale, then a measured part. The measured
//! part records, per *class* of page (its rate in powers of two and its size) and per
//! direction: the translation cycles, the stall of the cache hierarchy, the share of
//! references that reach memory and their weight in the stall (1 for a dependent
//! load, 1/MLP otherwise), the TLB and walk counts and the level that served them;
//! per tier, the device latency of its demand accesses and how they queued against
//! the tier's load. A chunk then costs, per reference,
//!
//! ```text
//! cycles = CPI · (1 + instructions) + Σ_classes,tiers share(c, t) · (translation(c)
//!          + cache stall(c) + memory weight(c) · L_t)
//! L_t    = device_t + κ_t · burst_t · ρ_t / (1 − ρ_t)
//! ```
//!
//! where `share(c, t)` is the rate of the class's pages in tier `t` (kept up to date
//! as pages move, so placement changes cost at once) and `ρ_t` is the tier's load —
//! every access the tier counted — over the last millisecond. A class the window did
//! not see borrows the nearest rate's fit. Calibrations come at the start, when a
//! stretch changes the distribution (a phase), when pages carrying a share of the
//! references changed tier, when the tenant's mapped pages grew by a quarter since the
//! last one (the page tables grew with them), and every `recalibrate_s` seconds.
//!
//! # Calibrating under load
//! While a core calibrates, the other cores that run in chunks have stand-ins that
//! put their memory traffic on the tiers' banks and buses (module `stand_in`), so
//! that the calibration measures its waits as detailed mode would; a calibration
//! beside other cores' traffic fits the wait's scale `κ_t` to its own waits at the
//! load it ran at (`TierFit`). docs/epochs.md has the measurements, and what is left
//! (the shared last-level cache).

use super::CoreFeed;
use crate::config::{Config, EpochsConfig, WorkloadSlot};
use crate::machine::epochs::{class_parts, Chunk, TenantSetup, CLASSES, MAX_TIERS};
use crate::machine::sampled::MAX_LEVELS;
use crate::machine::{Machine, Redirect, RefOutcome, TierId};
use crate::mechanism::{Mechanisms, Runtime};
use crate::policy::Policy;
use crate::trace::Access;
use crate::workload::rates::{AccessModel, Profile, ProfileOptions, Stretch};
use anyhow::{bail, Result};
use serde::Serialize;
use stand_in::{StandIn, StandIns};

mod stand_in;

/// Cycles a calibration's warm-up runs between two looks at the other cores'
/// stand-ins (our choice: a fraction of a microsecond, a few dozen references).
const WARM_STEP: u64 = 1000;

/// Fewest references of a class in a calibration for its fit to replace the last.
const MIN_SAMPLES: u64 = 16;
/// Pages a tenant's mapped footprint must grow by, besides a quarter, to call for a
/// calibration (our choice: 4 MiB of base pages).
const GROWN_PAGES: u64 = 1024;
/// Cycles over which a tier's load is measured.
const LOAD_WINDOW: u64 = 1 << 22;
/// The highest load the wait model is evaluated at (our choice): past it a tier's
/// wait stays that of this load.
const MAX_LOAD: f64 = 0.95;
/// The least wait scale fitted (our choice): an M/D/1 queue's. The device latency a
/// calibration's waits are measured above takes the tier's row-hit share over all
/// its traffic, the chunks' included, so a core whose own accesses hit open rows
/// more often than the others' can measure no wait at all.
const MIN_KAPPA: f64 = 0.5;
/// The least load of a calibration from which the wait's scale is fitted (our
/// choice): below it the waits are too few to tell a scale.
const MIN_FITTED_LOAD: f64 = 0.05;

/// What a calibration measured of one class and direction.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    refs: u64,
    translation: f64,
    /// L1 TLB hits, L2 TLB hits, misses.
    tlb: [u64; 3],
    /// Walk cycles, references and memory accesses.
    walk: [u64; 3],
    cache_stall: f64,
    memory: u64,
    memory_weight: f64,
    levels: [u64; MAX_LEVELS],
    /// Per tier: memory latency of the references it served, summed, and their count.
    latency: [f64; MAX_TIERS],
    served: [u64; MAX_TIERS],
}

/// The fitted per-reference cost of one class and direction.
#[derive(Clone, Copy, Debug, Default)]
struct Fit {
    fitted: bool,
    translation: f64,
    tlb: [f64; 3],
    walk: [f64; 3],
    cache_stall: f64,
    /// References that reach memory, and their weight in the stall, per reference.
    memory: f64,
    memory_weight: f64,
    levels: [f64; MAX_LEVELS],
    /// Per tier: the mean memory latency of the class's references it served, with
    /// the tier's load at the time (`None`: the class had no pages there).
    latency: [Option<(f64, f64)>; MAX_TIERS],
}

impl Fit {
    fn from(s: &Sums, loads: &[f64]) -> Fit {
        let n = s.refs.max(1) as f64;
        let mut levels = [0.0; MAX_LEVELS];
        for (l, &c) in levels.iter_mut().zip(&s.levels) {
            *l = c as f64 / n;
        }
        let mut latency = [None; MAX_TIERS];
        for (t, l) in latency.iter_mut().enumerate().take(loads.len()) {
            if s.served[t] >= MIN_SAMPLES / 2 {
                *l = Some((s.latency[t] / s.served[t] as f64, loads[t]));
            }
        }
        Fit {
            fitted: true,
            translation: s.translation / n,
            tlb: s.tlb.map(|x| x as f64 / n),
            walk: s.walk.map(|x| x as f64 / n),
            cache_stall: s.cache_stall / n,
            memory: s.memory as f64 / n,
            memory_weight: s.memory_weight / n,
            levels,
            latency,
        }
    }
}

/// A tier's latency model. A demand access costs its device latency — a row hit's
/// or a row miss's, in the proportion its class's pattern gives (a value read through
/// hits the row it opened) — plus queueing of two kinds: behind the other lines of
/// its own burst (a 4 KiB value's lines serialised on one bank), which depends on
/// the pattern too, and behind other traffic, which grows with the tier's load `ρ`
/// as `κ · burst · ρ / (1 − ρ)`: an M/D/1 queue's wait with κ = 1/2, until a
/// calibration runs beside other cores' traffic (module `stand_in`), which fits κ to
/// what its own accesses waited at the load it ran at (with in-order banks and buses
/// a tier's wait grows faster than an M/D/1 queue's: docs/machine.md, "Loaded
/// latency"). A class's latency measured
/// in one tier is its latency at load 0 there; in a tier where it was not measured,
/// the part above a row hit scales with the tiers' gaps between a row miss and a row
/// hit (both parts of the excess — misses, and waits on a bank busy with the burst's
/// other lines — grow with the array's latency).
#[derive(Clone, Copy, Debug)]
struct TierFit {
    /// Device latencies of a row hit and of a row miss (reads), in cycles.
    hit: f64,
    miss: f64,
    /// Share of demand accesses that found their row open.
    row_hits: f64,
    /// Bus cycles of a read and of a write, and the channels.
    burst: f64,
    write_burst: f64,
    channels: f64,
    /// The tier's load over the last calibration.
    load: f64,
    /// The wait's scale, in bursts (above).
    kappa: f64,
}

impl TierFit {
    /// The bus cycles of every access the tier counted (per channel: divide by
    /// `channels`).
    fn bus(&self, s: &crate::machine::TierStats) -> f64 {
        s.reads as f64 * self.burst + s.writes as f64 * self.write_burst + (s.mechanism_reads + s.mechanism_writes) as f64 * self.burst
    }

    /// The wait behind other traffic at load `rho`: `κ · burst · ρ / (1 − ρ)`.
    fn contention(&self, rho: f64) -> f64 {
        let rho = rho.clamp(0.0, MAX_LOAD);
        self.kappa * self.burst * rho / (1.0 - rho)
    }

    /// The latency at load 0 of an access of class `fit` to tier `t` (this one):
    /// measured here, or scaled from where it was measured, or a row miss's.
    fn base_latency(&self, fit: &Fit, tiers: &[TierFit], t: usize) -> f64 {
        if let Some((l, load)) = fit.latency[t] {
            return (l - self.contention(load)).max(self.hit);
        }
        match (0..tiers.len()).find_map(|u| fit.latency[u].map(|x| (u, x))) {
            Some((u, (l, load))) => {
                let there = &tiers[u];
                let excess = (l - there.contention(load) - there.hit).max(0.0);
                self.hit + excess * (self.miss - self.hit) / (there.miss - there.hit).max(1.0)
            }
            None => self.miss,
        }
    }
}

/// A tier's counters at the start of a calibration.
#[derive(Clone, Copy, Debug, Default)]
struct TierMark {
    reads: u64,
    row_hits: u64,
    row_misses: u64,
    /// Bus cycles of every access counted (`TierFit::bus`).
    bus: f64,
    demand_reads: u64,
}

/// One core's cost model.
#[derive(Clone, Debug)]
struct CostModel {
    sums: Vec<Sums>,
    fits: Vec<Fit>,
    tiers: Vec<TierFit>,
    marks: Vec<TierMark>,
    /// Write-backs per demand access (the share of the last-level cache's lines
    /// that are dirty at the end of the calibration: in a full cache every miss
    /// evicts a line).
    writebacks_per_miss: f64,
    /// The calibrating core's own counts at each cache level over the calibration
    /// (hits, misses, write-backs: each access's change of the levels' counters, so
    /// that other cores' chunks and calibrations beside it count no part).
    own_levels: [[u64; 3]; MAX_LEVELS],
    /// The share of page-walk references each level served.
    walk_levels: [f64; MAX_LEVELS],
    /// Write-backs per access of each level.
    level_writebacks: [f64; MAX_LEVELS],
    /// The share of the walks' memory accesses each tier served: the tiers holding
    /// the page tables (a VM's guest tables are its pages, which policies move).
    walk_tiers: [f64; MAX_TIERS],
    started_at: u64,
    /// Cycles of the calibration's references that the previous fit predicts, and
    /// that the full model charged (faults apart).
    predicted: f64,
    measured: f64,
    /// Relative errors of the calibrations predicted so far.
    errors: Vec<f64>,
}

impl CostModel {
    fn new<R: Redirect>(m: &Machine<R>) -> CostModel {
        assert!(m.memory().tiers().all().len() <= MAX_TIERS, "epochs mode models at most {MAX_TIERS} tiers");
        let tiers: Vec<TierFit> = m
            .memory()
            .tiers()
            .all()
            .iter()
            .map(|t| {
                // Before any calibration: a row miss's device latency.
                TierFit {
                    hit: t.device_cycles(false, true) as f64,
                    miss: t.device_cycles(false, false) as f64,
                    row_hits: 0.0,
                    burst: t.burst_cycles() as f64,
                    write_burst: t.write_burst_cycles() as f64,
                    channels: t.channels() as f64,
                    load: 0.0,
                    kappa: 0.5,
                }
            })
            .collect();
        CostModel {
            sums: vec![Sums::default(); 2 * CLASSES],
            fits: vec![Fit::default(); 2 * CLASSES],
            marks: vec![TierMark::default(); tiers.len()],
            tiers,
            writebacks_per_miss: 0.0,
            own_levels: [[0; 3]; MAX_LEVELS],
            walk_levels: [0.0; MAX_LEVELS],
            level_writebacks: [0.0; MAX_LEVELS],
            walk_tiers: std::array::from_fn(|t| (t == 0) as u8 as f64),
            started_at: 0,
            predicted: 0.0,
            measured: 0.0,
            errors: Vec::new(),
        }
    }

    fn fitted(&self) -> bool {
        self.fits.iter().any(|f| f.fitted)
    }

    fn begin<R: Redirect>(&mut self, m: &Machine<R>, core: usize) {
        self.sums.iter_mut().for_each(|s| *s = Sums::default());
        self.predicted = 0.0;
        self.measured = 0.0;
        self.started_at = m.cores()[core].clock;
        self.own_levels = [[0; 3]; MAX_LEVELS];
        let tiers = m.memory().tiers();
        self.marks = (0..self.tiers.len())
            .map(|i| {
                let t = TierId(i as u8);
                let s = tiers.get(t).stats();
                let d = tiers.demand(t);
                TierMark { reads: s.reads, row_hits: s.row_hits, row_misses: s.row_misses, bus: self.tiers[i].bus(&s), demand_reads: d.reads }
            })
            .collect();
    }

    /// Fits the classes and tiers from the calibration that began at `begin`.
    fn end<R: Redirect>(&mut self, m: &Machine<R>, core: usize, beside_others: bool) {
        if self.fitted() && self.measured > 0.0 {
            self.errors.push((self.predicted - self.measured) / self.measured);
        }
        let cycles = (m.cores()[core].clock - self.started_at).max(1) as f64;
        let tiers = m.memory().tiers();
        // The walks' reads that reached each tier: its reads outside mechanisms, less
        // its demand reads (metadata reads, Rainbow's alone, count with the walks).
        let mut walk_reads = [0.0; MAX_TIERS];
        for (i, (w, mark)) in walk_reads.iter_mut().zip(&self.marks).enumerate() {
            let t = TierId(i as u8);
            *w = (tiers.get(t).stats().reads - mark.reads).saturating_sub(tiers.demand(t).reads - mark.demand_reads) as f64;
        }
        let all: f64 = walk_reads.iter().sum();
        if all >= MIN_SAMPLES as f64 {
            self.walk_tiers = walk_reads.map(|w| w / all);
        }
        for (i, (fit, mark)) in self.tiers.iter_mut().zip(&self.marks).enumerate() {
            let t = TierId(i as u8);
            let s = tiers.get(t).stats();
            let (hits, misses) = (s.row_hits - mark.row_hits, s.row_misses - mark.row_misses);
            if hits + misses >= MIN_SAMPLES {
                fit.row_hits = hits as f64 / (hits + misses) as f64;
            }
            fit.load = ((fit.bus(&s) - mark.bus) / (cycles * fit.channels)).clamp(0.0, MAX_LOAD);
        }
        // The wait's scale, from a calibration beside other cores' traffic: what the
        // calibrating core's own accesses waited (their latency less the device's at
        // the tier's row-hit share), at the load the calibration ran at. (Alone, a
        // core's waits are mostly behind its own bursts, which do not grow with load.)
        for (t, fit) in self.tiers.iter_mut().enumerate() {
            let (sum, served) = self.sums.iter().fold((0.0, 0), |(l, n), s| (l + s.latency[t], n + s.served[t]));
            if beside_others && served >= MIN_SAMPLES && fit.load >= MIN_FITTED_LOAD {
                let device = fit.hit * fit.row_hits + fit.miss * (1.0 - fit.row_hits);
                let wait = (sum / served as f64 - device).max(0.0);
                fit.kappa = (wait * (1.0 - fit.load) / (fit.load * fit.burst)).max(MIN_KAPPA);
            }
        }
        let loads: Vec<f64> = self.tiers.iter().map(|t| t.load).collect();
        for (f, s) in self.fits.iter_mut().zip(&self.sums) {
            if s.refs >= MIN_SAMPLES || (!f.fitted && s.refs > 0) {
                let old = f.latency;
                *f = Fit::from(s, &loads);
                // A tier the class has no pages in now keeps what was measured there.
                for (l, o) in f.latency.iter_mut().zip(old) {
                    if l.is_none() {
                        *l = o;
                    }
                }
            }
        }
        // A class never seen borrows from the nearest fitted class of the same
        // direction: the same size first, then the nearest density, then the nearest
        // rate.
        for i in 0..self.fits.len() {
            if self.fits[i].fitted {
                continue;
            }
            let (dir, (size, density, bucket)) = (i % 2, class_parts(i / 2));
            let donor = (0..self.fits.len())
                .filter(|&j| self.fits[j].fitted && j % 2 == dir)
                .min_by_key(|&j| {
                    let (s, d, b) = class_parts(j / 2);
                    ((s != size) as usize, d.abs_diff(density), b.abs_diff(bucket), j)
                })
                .or_else(|| (0..self.fits.len()).find(|&j| self.fits[j].fitted));
            if let Some(j) = donor {
                self.fits[i] = Fit { fitted: false, ..self.fits[j] };
            }
        }
        self.writebacks_per_miss = m.memory().caches().dirty_share();
        if std::env::var("TIERSIM_DEBUG_EPOCHS").is_ok() {
            let refs: u64 = self.sums.iter().map(|s| s.refs).sum();
            let n = refs.max(1) as f64;
            let tr: f64 = self.sums.iter().map(|s| s.translation).sum();
            let walk: [u64; 3] = self.sums.iter().fold([0; 3], |a, s| [a[0] + s.walk[0], a[1] + s.walk[1], a[2] + s.walk[2]]);
            let miss: u64 = self.sums.iter().map(|s| s.tlb[2]).sum();
            let st = &m.cores()[core].stats;
            eprintln!(
                "calibration end core {core} at cycle {}: {refs} refs, {:.1} cycles/ref, translation {:.1}/ref, TLB misses {:.3}/ref, walk cycles {:.1} refs {:.2} memory {:.3} per ref, walk memory by tier {:?}; core exits {} fault cycles {}",
                m.cores()[core].clock,
                cycles / n,
                tr / n,
                miss as f64 / n,
                walk[0] as f64 / n,
                walk[1] as f64 / n,
                walk[2] as f64 / n,
                &self.walk_tiers[..self.tiers.len()],
                st.vm_exits,
                st.fault_cycles
            );
            eprintln!("calibration end core {core}: tiers {:?}", self.tiers);
            for (i, f) in self.fits.iter().enumerate() {
                if self.sums[i].refs > 0 {
                    eprintln!("  class {:?} dir {} refs {} memory {:.3} lat {:?}", class_parts(i / 2), i % 2, self.sums[i].refs, f.memory, f.latency);
                }
            }
        }
        // What the walks took of each level: the core's own counts at the level over
        // the calibration, less those of its data references.
        let depth = m.memory().caches().depth();
        let mut data = [0u64; MAX_LEVELS];
        let mut walk_refs = 0u64;
        for s in &self.sums {
            for (d, x) in data.iter_mut().zip(&s.levels) {
                *d += x;
            }
            walk_refs += s.walk[1];
        }
        for (l, &[hits, misses, writebacks]) in self.own_levels.iter().enumerate().take(depth) {
            if walk_refs > 0 {
                self.walk_levels[l] = hits.saturating_sub(data[l]) as f64 / walk_refs as f64;
            }
            if hits + misses > 0 {
                self.level_writebacks[l] = writebacks as f64 / (hits + misses) as f64;
            }
        }
        if walk_refs > 0 && depth < MAX_LEVELS {
            let walk_memory: u64 = self.sums.iter().map(|s| s.walk[2]).sum();
            self.walk_levels[depth] = walk_memory as f64 / walk_refs as f64;
        }
    }
}

/// The cost of a reference of a core as its tenant's pages lie now.
#[derive(Clone, Copy, Debug, Default)]
struct PerRef {
    reads: f64,
    writes: f64,
    instructions: f64,
    translation: f64,
    cache_stall: f64,
    tlb: [f64; 3],
    walk: [f64; 3],
    levels: [f64; MAX_LEVELS],
    level_writebacks: [f64; MAX_LEVELS],
    /// The stall of the references that reach memory at load 0, and per tier their
    /// latency at load 0 summed (per reference).
    memory_stall: f64,
    memory_latency: [f64; MAX_TIERS],
    /// Per tier: stall weight of references reaching it, those references and the
    /// loads among them, stores to its pages.
    memory_weight: [f64; MAX_TIERS],
    memory: [f64; MAX_TIERS],
    memory_reads: [f64; MAX_TIERS],
    stores: [f64; MAX_TIERS],
    /// References to each tier's pages.
    by_tier: [f64; MAX_TIERS],
}

impl PerRef {
    /// Each tier's share of the write-backs: every miss evicts a line, and a tier's
    /// share of the dirty ones is that of its misses weighted by the share of its
    /// references that store (the lines leaving are those that missed).
    fn writeback_shares(&self, tiers: usize) -> [f64; MAX_TIERS] {
        let mut dirtied = [0.0; MAX_TIERS];
        for (t, d) in dirtied.iter_mut().enumerate().take(tiers) {
            if self.by_tier[t] > 0.0 {
                *d = self.memory[t] * self.stores[t] / self.by_tier[t];
            }
        }
        let all: f64 = dirtied.iter().sum();
        if all > 0.0 {
            dirtied.iter_mut().for_each(|d| *d /= all);
        }
        dirtied
    }
}

/// Fractions carried from chunk to chunk, so that whole counts add up exactly.
#[derive(Clone, Debug, Default)]
struct Carry(Vec<f64>);

impl Carry {
    /// The whole part of `x` plus the carried fraction of slot `i`.
    #[inline]
    fn take(&mut self, i: usize, x: f64) -> u64 {
        if self.0.len() <= i {
            self.0.resize(i + 1, 0.0);
        }
        let v = self.0[i] + x.max(0.0);
        // (A truncation: `v` is not negative.)
        let whole = v as u64;
        self.0[i] = v - whole as f64;
        whole
    }
}

/// A core's place in epochs mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Running its tenant's stretches in chunks.
    Chunks,
    /// A calibration's warm-up, detailed.
    Warm,
    /// A calibration's measured part, detailed and recorded.
    Measure,
}

struct CoreRun {
    tenant: u16,
    /// References left for the core, and made (detailed and in chunks).
    left: u64,
    made: u64,
    /// References its source has produced.
    fed: u64,
    cost: CostModel,
    per_ref: Option<PerRef>,
    carry: Carry,
    calibrations: u64,
    last_calibration: u64,
    /// Its tenant's pages mapped at its last calibration.
    mapped_at_calibration: u64,
    /// A calibration is due (a phase change, pages moved, time).
    due: bool,
    /// Whether the source could be positioned for every calibration.
    positioned: bool,
    chunks: u64,
    chunk_refs: u64,
    detailed_refs: u64,
    last_vpn: u64,
    /// Handler cycles of the faults taken at a chunk's end, per reference of the
    /// chunk: the last chunks' figure, so that a chunk is planned with the time its
    /// faults will add and ends near its limit.
    fault_cycles_per_ref: f64,
    /// Whether it runs its references in detail now (a warm-up or a calibration).
    detailed: bool,
    /// Its traffic beside another core's calibration.
    stand_in: StandIn,
}

impl CoreRun {
    fn new<R: Redirect>(m: &Machine<R>, tenant: u16, left: u64) -> CoreRun {
        CoreRun {
            tenant,
            left,
            made: 0,
            fed: 0,
            cost: CostModel::new(m),
            per_ref: None,
            carry: Carry::default(),
            calibrations: 0,
            last_calibration: 0,
            mapped_at_calibration: 0,
            due: left > 0,
            positioned: true,
            chunks: 0,
            chunk_refs: 0,
            detailed_refs: 0,
            last_vpn: 0,
            fault_cycles_per_ref: 0.0,
            detailed: true,
            stand_in: StandIn::default(),
        }
    }
}

struct TenantRun {
    model: Option<Box<dyn AccessModel>>,
    describe: String,
    stretch: Stretch,
    /// References left in the current stretch (all the tenant's cores).
    left: f64,
    stretches: u64,
    done: bool,
    cores: Vec<usize>,
}

/// A tier's recent load.
#[derive(Clone, Copy, Debug, Default)]
struct Load {
    /// The cycle the window began, and the tier's bus cycles counted by then.
    since: u64,
    bus: f64,
    rho: f64,
}

/// What epochs mode did, for the report.
#[derive(Clone, Debug, Serialize)]
pub struct EpochsReport {
    /// `epochs`, or `detailed` when the policy's machine could not run in epochs.
    pub ran: String,
    /// Each tenant's statement.
    pub statements: Vec<String>,
    pub chunks: u64,
    /// References run in chunks and in calibrations' detailed windows.
    pub chunk_references: u64,
    pub detailed_references: u64,
    pub detailed_share: f64,
    pub calibrations: u64,
    /// Stretches of the statements run.
    pub stretches: u64,
    /// Calibrations whose references the previous fit predicted, and the relative
    /// error of its cycles: mean of the absolute value, largest, mean with sign.
    pub predicted_calibrations: u64,
    pub model_error_mean: f64,
    pub model_error_max: f64,
    pub model_error_bias: f64,
    /// Whether every calibration ran the references at the stretch's place (sources
    /// that cannot skip ahead fast — application workloads — run theirs from where
    /// their last calibration left them).
    pub calibrated_in_place: bool,
    pub counts: crate::machine::epochs::EpochsCounts,
    pub config: EpochsConfig,
    pub estimated: String,
}

/// The profile of the trace at `path` (its first `refs` references): the file
/// `tiersim profile` wrote beside it when it was made from this trace, limited alike,
/// in windows of `window_refs`; else counted now from `source` (and the statement's
/// description says so).
fn trace_profile(path: &str, refs: Option<u64>, window_refs: u64, source: Box<dyn crate::trace::Source>) -> Result<Profile> {
    let of = crate::workload::rates::ProfileOf::trace(path, refs)?;
    let file = format!("{path}.profile");
    if let Ok(bytes) = std::fs::read(&file) {
        let (p, made_of) = Profile::from_bytes(&bytes, &file)?;
        if made_of == of && p.window_refs == window_refs {
            return Ok(p);
        }
    }
    let mut src = crate::trace::take(source, refs);
    let mut p = Profile::record(src.as_mut(), window_refs, u64::MAX, path)?;
    p.what = format!("{path} (counted when the run started; `tiersim profile {path}` keeps the count for later runs)");
    Ok(p)
}

/// Epochs mode for one run.
pub(super) struct Driver {
    cfg: EpochsConfig,
    tenants: Vec<TenantRun>,
    cores: Vec<CoreRun>,
    load: Vec<Load>,
    cpi: f64,
    inv_mlp: f64,
    l1: u64,
    llc: u64,
    depth: usize,
    freq_hz: f64,
    stand_ins: StandIns,
}

impl Driver {
    /// Builds each tenant's statement and the machine's page state; checks that the
    /// run can go in epochs.
    pub fn new<R: Redirect>(cfg: &Config, slots: &[WorkloadSlot], machine: &mut Machine<R>) -> Result<Driver> {
        let e = &cfg.engine.epochs;
        let opts = ProfileOptions { window_refs: e.window_refs, max_refs: e.profile_refs };
        let tenants_n = machine.space().tenants().len();
        let mut tenants: Vec<TenantRun> = (0..tenants_n).map(|_| TenantRun { model: None, describe: String::new(), stretch: Stretch::default(), left: 0.0, stretches: 0, done: true, cores: Vec::new() }).collect();
        for s in slots {
            tenants[s.tenant as usize].cores.push(s.core);
        }
        for (tenant, t) in tenants.iter_mut().enumerate() {
            if t.cores.is_empty() {
                continue;
            }
            let mine: Vec<&WorkloadSlot> = slots.iter().filter(|s| s.tenant as usize == tenant).collect();
            let first = mine[0];
            let n = mine.len() as u64;
            let model: Box<dyn AccessModel> = match &first.trace {
                Some(tr) => {
                    if mine.len() > 1 {
                        bail!("engine.mode = \"epochs\": tenant {tenant} replays {} traces; epochs mode profiles one trace per tenant", mine.len());
                    }
                    let opened = crate::trace::open(&tr.path, &crate::trace::OpenOptions { format: tr.format, skip_malformed: tr.skip_malformed, thread: tr.thread, page_table_levels: Some(cfg.machine.page_table.levels) })?;
                    if opened.record_tenants {
                        bail!("{}: its records name their tenants; epochs mode profiles a trace of one tenant", tr.path);
                    }
                    let p = trace_profile(&tr.path, tr.refs, e.window_refs, opened.source)?;
                    let total = p.refs();
                    Box::new(p.replay(total, 1))
                }
                None => {
                    if mine.iter().any(|s| s.workload.name != first.workload.name || s.workload.refs != first.workload.refs) {
                        bail!("engine.mode = \"epochs\": tenant {tenant} runs different workloads on its cores; epochs mode states one workload per tenant");
                    }
                    crate::workload::rates::model(&first.workload, tenant as u16, n, &opts)?
                }
            };
            t.describe = model.describe();
            t.model = Some(model);
            t.done = false;
        }
        let setups: Vec<TenantSetup> = tenants
            .iter()
            .enumerate()
            .map(|(i, t)| TenantSetup { universe: t.model.as_ref().map_or(Vec::new(), |m| m.universe()), cores: t.cores.clone(), vm: machine.is_vm(i as u16) })
            .collect();
        let seed = slots.first().map_or(1, |s| s.workload.seed);
        machine.start_epochs(&setups, seed);
        machine.epochs_mut().expect("epochs state").batch_faults = e.batch_faults;
        let mc = machine.cfg();
        // A core without a slot has nothing to run.
        let mut runs: Vec<CoreRun> = (0..machine.cores().len()).map(|_| CoreRun::new(machine, 0, 0)).collect();
        for s in slots {
            // A trace's references are its statement's: the statement ends the core.
            let left = if s.trace.is_some() { u64::MAX } else { s.workload.refs };
            runs[s.core] = CoreRun::new(machine, s.tenant, left);
        }
        let cores = runs;
        Ok(Driver {
            cfg: e.clone(),
            tenants,
            cores,
            load: vec![Load::default(); machine.memory().tiers().all().len()],
            cpi: mc.base_cpi,
            inv_mlp: 1.0 / mc.mlp,
            l1: machine.memory().caches().l1_latency(),
            llc: machine.memory().caches().llc_latency(),
            depth: machine.memory().caches().depth(),
            freq_hz: mc.freq_ghz * 1e9,
            stand_ins: StandIns::new(seed),
        })
    }

    /// Installs every tenant's first stretch (calibrations classify references by
    /// their pages' rates).
    pub fn start<R: Redirect>(&mut self, machine: &mut Machine<R>) -> Result<()> {
        for tenant in 0..self.tenants.len() {
            if self.tenants[tenant].model.is_some() {
                self.ensure_stretch(machine, tenant as u16, 0)?;
            }
        }
        Ok(())
    }

    /// The phase a core starts in, and the references of it.
    pub fn first_phase(&self) -> (Phase, u64) {
        (Phase::Warm, self.cfg.warmup_refs)
    }

    /// The next phase of `core` after `phase` with `left` references to go in it.
    pub fn next_phase<R: Redirect>(&mut self, machine: &mut Machine<R>, core: usize, phase: Phase, left: u64) -> (Phase, u64) {
        match phase {
            Phase::Warm if left == 0 && self.cores[core].calibrations == 0 && self.cores[core].detailed_refs < self.cfg.first_warmup_refs && machine.memory().caches().valid_share() < 0.95 => {
                // The first warm-up goes on while the last-level cache fills.
                (Phase::Warm, (self.cfg.warmup_refs / 4).max(1).min(self.cfg.first_warmup_refs - self.cores[core].detailed_refs))
            }
            Phase::Warm if left == 0 => {
                self.cores[core].cost.begin(machine, core);
                self.start_stand_ins(core, machine.cores()[core].clock);
                self.start_recording(machine, core);
                (Phase::Measure, self.cfg.calibration_refs)
            }
            Phase::Measure if left == 0 => {
                self.stop_recording(machine, core);
                let c = &mut self.cores[core];
                c.cost.end(machine, core, self.stand_ins.ran);
                c.per_ref = None;
                c.calibrations += 1;
                c.last_calibration = machine.cores()[core].clock;
                c.due = false;
                c.detailed = false;
                if let Some(p) = machine.epochs_mut().and_then(|e| e.tenants.get_mut(c.tenant as usize)) {
                    p.moved_share = 0.0;
                    c.mapped_at_calibration = p.mapped;
                }
                (Phase::Chunks, u64::MAX)
            }
            Phase::Chunks if self.cores[core].due => {
                self.cores[core].detailed = true;
                self.stop_stand_in(core);
                // The others' stand-ins run through the warm-up too, so that the
                // shared cache holds their lines when the measured part begins.
                self.start_stand_ins(core, machine.cores()[core].clock);
                (Phase::Warm, self.cfg.warmup_refs)
            }
            other => (other, left),
        }
    }

    /// Positions `core`'s source at the references its core has made, before a
    /// calibration, when the source can skip ahead fast.
    pub fn position(&mut self, feed: &mut CoreFeed, core: usize) {
        let c = &mut self.cores[core];
        let mut behind = c.made.saturating_sub(c.fed);
        if behind == 0 {
            return;
        }
        let buffered = (feed.buf.len() - feed.pos) as u64;
        let from_buffer = behind.min(buffered);
        feed.pos += from_buffer as usize;
        behind -= from_buffer;
        c.fed += from_buffer;
        if behind > 0 {
            if feed.source.as_mut().is_some_and(|s| s.skip(behind)) {
                c.fed += behind;
            } else {
                c.positioned = false;
            }
        }
    }

    /// References of a detailed window that `core` ran from its source.
    pub fn ran_detailed(&mut self, core: usize, refs: u64) {
        let c = &mut self.cores[core];
        c.made += refs;
        c.fed += refs;
        c.detailed_refs += refs;
        c.left = c.left.saturating_sub(refs);
        self.tenants[c.tenant as usize].left -= refs as f64;
    }

    /// Runs `core`'s calibration warm-up in detail, as the engine's detailed slice
    /// does, in steps of at most [`WARM_STEP`] cycles while other cores' stand-ins
    /// are active, each step after their lines due by then: the shared cache then
    /// holds their lines beside this core's when the measured part begins.
    #[allow(clippy::too_many_arguments)]
    pub fn warm<R: Redirect, P: Policy<R>>(&mut self, feed: &mut CoreFeed, machine: &mut Machine<R>, rt: &mut Runtime, policy: &mut P, core: usize, limit: u64, max: u64, levels: u32) -> Result<(u64, bool)> {
        let mut n = 0;
        loop {
            let now = machine.cores()[core].clock;
            self.stand(machine, now);
            let step = if self.stand_ins.next.is_finite() { limit.min(now.saturating_add(WARM_STEP)) } else { limit };
            let (k, exhausted) = super::scheduler::run_slice::<{ crate::machine::sampled::DETAILED }, R, P>(feed, machine, rt, policy, core, step, max - n, levels)?;
            n += k;
            if exhausted || n >= max || machine.cores()[core].clock >= limit || rt.threads.woken() {
                return Ok((n, exhausted));
            }
        }
    }

    /// Runs `core`'s measured calibration: like the engine's detailed slice, each
    /// reference recorded by class. Returns the references run and whether the
    /// source is exhausted.
    #[allow(clippy::too_many_arguments)]
    pub fn measure<R: Redirect, P: Policy<R>>(&mut self, feed: &mut CoreFeed, machine: &mut Machine<R>, rt: &mut Runtime, policy: &mut P, core: usize, limit: u64, max: u64, levels: u32) -> Result<(u64, bool)> {
        let mut n = 0;
        let (l1, llc, depth, inv_mlp, cpi) = (self.l1, self.llc, self.depth, self.inv_mlp, self.cpi);
        while n < max {
            if feed.pos == feed.buf.len() && !feed.refill(levels)? {
                return Ok((n, true));
            }
            self.stand(machine, machine.cores()[core].clock);
            let c = &mut self.cores[core];
            let a = feed.buf[feed.pos];
            feed.pos += 1;
            let (class, tier_of_page) = {
                let e = machine.epochs().expect("epochs state");
                let p = &e.tenants[a.tenant as usize];
                match p.index(a.vaddr >> 12) {
                    Some(i) => (p.class(i), p.tier_of(i)),
                    None => (CLASSES - 1, None),
                }
            };
            let before = machine.cores()[core].stats.clone();
            let clock0 = machine.cores()[core].clock;
            let levels0 = machine.memory().caches().counts();
            let out = machine.access_in::<{ crate::machine::epochs::CALIBRATE }, P>(core, &a, policy);
            let levels1 = machine.memory().caches().counts();
            for ((own, now), before) in c.cost.own_levels.iter_mut().zip(&levels1).zip(&levels0) {
                for k in 0..3 {
                    own[k] += now[k] - before[k];
                }
            }
            let after = &machine.cores()[core].stats;
            let write = a.is_write();
            let f = if a.is_dependent() { 1.0 } else { inv_mlp };
            let faults = after.fault_cycles - before.fault_cycles;
            let tier = machine.memory().tiers().tier_of(out.paddr >> 12).index();
            let s = &mut c.cost.sums[2 * class + write as usize];
            s.refs += 1;
            let translation = out.translation_cycles.saturating_sub(faults) as f64;
            s.translation += translation;
            s.tlb[0] += after.tlb_l1_hits - before.tlb_l1_hits;
            s.tlb[1] += after.tlb_l2_hits - before.tlb_l2_hits;
            s.tlb[2] += after.tlb_misses - before.tlb_misses;
            s.walk[0] += after.walk_cycles - before.walk_cycles;
            s.walk[1] += after.walk_references - before.walk_references;
            s.walk[2] += after.walk_memory_accesses - before.walk_memory_accesses;
            s.levels[out.level.min(MAX_LEVELS - 1)] += 1;
            let data = out.data_cycles as f64;
            let cache_part = if out.level == depth { (llc - l1) as f64 } else { data };
            s.cache_stall += f * cache_part;
            if out.level == depth {
                s.memory += 1;
                s.memory_weight += f;
                s.latency[tier] += data - cache_part;
                s.served[tier] += 1;
            }
            // The previous fit's prediction of this reference, against what it cost.
            if c.cost.fitted() {
                let fit = &c.cost.fits[2 * class + write as usize];
                let t = tier_of_page.map_or(tier, |t| t.index());
                let tf = &c.cost.tiers[t];
                let lat = tf.base_latency(fit, &c.cost.tiers, t) + tf.contention(self.load[t].rho);
                c.cost.predicted += cpi * (1.0 + a.instrs as f64) + fit.translation + fit.cache_stall + fit.memory_weight * lat;
                c.cost.measured += (machine.cores()[core].clock - clock0 - faults) as f64;
            }
            policy.on_reference(&a, &out, &mut Mechanisms::on_core(machine, rt, core));
            n += 1;
            if machine.cores()[core].clock >= limit || rt.threads.woken() {
                break;
            }
        }
        Ok((n, false))
    }

    /// The next stretch of `tenant`, when the current one is used up; false when its
    /// statement is exhausted.
    fn ensure_stretch<R: Redirect>(&mut self, machine: &mut Machine<R>, tenant: u16, now: u64) -> Result<bool> {
        let t = &mut self.tenants[tenant as usize];
        while t.left <= 0.0 {
            if t.done {
                return Ok(false);
            }
            let model = t.model.as_mut().expect("a statement");
            if !model.next(&mut t.stretch)? {
                t.done = true;
                return Ok(false);
            }
            // What the cores overshot of the last stretch comes off this one.
            t.left += t.stretch.refs as f64;
            t.stretches += 1;
            let e = machine.epochs_mut().expect("epochs state");
            let h = e.hazard(tenant, now);
            let sw = e.switch(tenant, &t.stretch, h);
            if sw.distance > self.cfg.phase_distance {
                for &c in &t.cores {
                    let run = &mut self.cores[c];
                    if now >= run.last_calibration + (self.cfg.min_gap_s * self.freq_hz) as u64 || run.calibrations == 0 {
                        run.due = true;
                    }
                }
            }
            for &c in &t.cores {
                self.cores[c].per_ref = None;
            }
        }
        Ok(true)
    }

    /// The cost of a reference of `core` as its tenant's pages lie now.
    fn per_ref<R: Redirect>(&mut self, machine: &mut Machine<R>, core: usize) -> PerRef {
        let tenant = self.cores[core].tenant as usize;
        let e = machine.epochs_mut().expect("epochs state");
        let p = &mut e.tenants[tenant];
        if p.changed {
            p.changed = false;
            for &c in &self.tenants[tenant].cores {
                self.cores[c].per_ref = None;
            }
        }
        if let Some(r) = self.cores[core].per_ref {
            return r;
        }
        let tiers = self.load.len();
        let fits = &self.cores[core].cost.fits;
        debug_assert_eq!(p.by_class.len(), CLASSES * tiers);
        // (Only the classes that ever had a rate: the others' zeros add nothing, and
        // the sums come out the same, in the same order.)
        let mapped: f64 = p.seen_classes().flat_map(|c| &p.by_class[c * tiers..(c + 1) * tiers]).map(|a| a[0] + a[1]).sum();
        let unmapped: f64 = p.seen_classes().map(|c| p.unmapped[c][0] + p.unmapped[c][1]).sum();
        let total = mapped + unmapped;
        let placing = p.placing.index();
        let mut r = PerRef::default();
        let tier_fits = &self.cores[core].cost.tiers;
        if total > 0.0 {
            // The references of pages not mapped yet are their first bursts, in the
            // tier first touch places pages in now.
            let scale = 1.0 / total;
            for class in p.seen_classes() {
                for t in 0..tiers {
                    let mut rates = p.by_class[class * tiers + t];
                    if t == placing {
                        rates = [rates[0] + p.unmapped[class][0], rates[1] + p.unmapped[class][1]];
                    }
                    let [reads, writes] = rates.map(|x| x * scale);
                    for (dir, share) in [(0, reads), (1, writes)] {
                        if share == 0.0 {
                            continue;
                        }
                        let f = &fits[2 * class + dir];
                        r.translation += share * f.translation;
                        r.cache_stall += share * f.cache_stall;
                        for k in 0..3 {
                            r.tlb[k] += share * f.tlb[k];
                            r.walk[k] += share * f.walk[k];
                        }
                        for (l, x) in r.levels.iter_mut().zip(&f.levels) {
                            *l += share * x;
                        }
                        let base = tier_fits[t].base_latency(f, tier_fits, t);
                        r.memory_stall += share * f.memory_weight * base;
                        r.memory_latency[t] += share * f.memory * base;
                        r.memory_weight[t] += share * f.memory_weight;
                        r.memory[t] += share * f.memory;
                        if dir == 0 {
                            r.memory_reads[t] += share * f.memory;
                        } else {
                            r.stores[t] += share;
                        }
                    }
                    r.reads += reads;
                    r.writes += writes;
                    r.by_tier[t] += reads + writes;
                }
            }
        }
        let cost = &self.cores[core].cost;
        for (l, w) in r.levels.iter_mut().zip(&cost.walk_levels) {
            *l += r.walk[1] * w;
        }
        // Write-backs of each level per reference, from its accesses (those served
        // there and below).
        let accesses: [f64; MAX_LEVELS] = std::array::from_fn(|l| r.levels[l..].iter().sum());
        for (l, a) in accesses.iter().enumerate() {
            r.level_writebacks[l] = a * cost.level_writebacks[l];
        }
        r.instructions = p.instrs_per_ref;
        // Each class's share of loads reaching memory, for PEBS-like samples.
        p.set_load_misses(|c| fits[2 * c].memory as f32);
        self.cores[core].per_ref = Some(r);
        r
    }

    /// Updates the tiers' loads at cycle `now` from the traffic the tiers counted:
    /// chunks', calibrations' and mechanisms', measured as a calibration measures
    /// its own load (`CostModel::end`), so that the wait fitted at a calibration's
    /// load is met again at the same load.
    fn update_load<R: Redirect>(&mut self, machine: &Machine<R>, core: usize, now: u64) {
        for (i, l) in self.load.iter_mut().enumerate() {
            if now < l.since + LOAD_WINDOW {
                continue;
            }
            let fit = &self.cores[core].cost.tiers[i];
            let bus = fit.bus(&machine.memory().tiers().get(TierId(i as u8)).stats());
            if l.since > 0 || l.bus > 0.0 {
                l.rho = (bus - l.bus) / ((now - l.since) as f64 * fit.channels);
            }
            *l = Load { since: now, bus, rho: l.rho };
        }
    }

    /// The least cycles another executor's clock lets a chunk last
    /// (`engine.epochs.min_chunk_s`).
    pub fn min_chunk_cycles(&self) -> u64 {
        (self.cfg.min_chunk_s * self.freq_hz) as u64
    }

    /// Runs one chunk of `core`'s references, up to cycle `limit`: see the module
    /// documentation. Returns the references run and whether the core is done.
    pub fn chunk<R: Redirect, P: Policy<R>>(&mut self, machine: &mut Machine<R>, rt: &mut Runtime, policy: &mut P, core: usize, limit: u64) -> Result<(u64, bool)> {
        machine.epochs_catch_up();
        let tenant = self.cores[core].tenant;
        let now = machine.cores()[core].clock;
        if self.cores[core].left == 0 || !self.ensure_stretch(machine, tenant, now)? {
            return Ok((0, true));
        }
        let (moved, mapped) = machine.epochs().map_or((0.0, 0), |e| (e.tenants[tenant as usize].moved_share, e.tenants[tenant as usize].mapped));
        {
            let c = &mut self.cores[core];
            let gap = (self.cfg.min_gap_s * self.freq_hz) as u64;
            let every = (self.cfg.recalibrate_s * self.freq_hz) as u64;
            // The footprint grew: by a quarter of the pages mapped at the last
            // calibration (and GROWN_PAGES more). Its page tables grew with it, and
            // walks that hit in the caches then miss now (hotspot 4 GiB in a VM,
            // all-fast: 9.1 M references per second as calibrated at the start, 7.2 M
            // once every page was mapped).
            let grown = mapped >= c.mapped_at_calibration + c.mapped_at_calibration / 4 + GROWN_PAGES;
            if ((moved > self.cfg.moved_share || grown) && now >= c.last_calibration + gap) || (every > 0 && now >= c.last_calibration + every) {
                c.due = true;
                return Ok((0, false));
            }
        }
        let r = self.per_ref(machine, core);
        self.cores[core].stand_in.per_ref = Some(r);
        // The wait behind other traffic at each tier's load.
        let mut wait = [0.0; MAX_TIERS];
        for (w, (f, l)) in wait.iter_mut().zip(self.cores[core].cost.tiers.iter().zip(&self.load)) {
            *w = f.contention(l.rho);
        }
        let base = self.cpi * (1.0 + r.instructions);
        let memory_stall = r.memory_stall + r.memory_weight.iter().zip(&wait).map(|(w, q)| w * q).sum::<f64>();
        let cycles_per_ref = base + r.translation + r.cache_stall + memory_stall;
        // How far this chunk goes.
        let limit = limit.min(now + (self.cfg.max_chunk_s * self.freq_hz) as u64);
        let planned = cycles_per_ref + self.cores[core].fault_cycles_per_ref;
        let mut n = ((limit.saturating_sub(now)) as f64 / planned.max(1e-9)).ceil().max(1.0);
        let e = machine.epochs_mut().expect("epochs state");
        let my_refs = e.core_refs(core);
        if let Some(at) = e.next_event(core) {
            n = n.min((at - my_refs).ceil().max(1.0));
        }
        if let Some(at) = e.next_first_touch(tenant) {
            n = n.min((at - e.hazard(tenant, now)).ceil().max(1.0));
        }
        let t = &self.tenants[tenant as usize];
        n = n.min(t.left.ceil().max(1.0)).min(self.cores[core].left as f64);
        let n = n as u64;
        // Its counts, the fractions carried.
        let c = &mut self.cores[core];
        let nf = n as f64;
        let mut k = Chunk { refs: n, ..Chunk::default() };
        k.reads = c.carry.take(0, nf * r.reads / (r.reads + r.writes).max(1e-300));
        k.writes = n - k.reads.min(n);
        k.instructions = n + c.carry.take(1, nf * r.instructions);
        k.base_cycles = c.carry.take(2, nf * base);
        k.translation_cycles = c.carry.take(3, nf * r.translation);
        k.stall_cycles = c.carry.take(4, nf * (r.cache_stall + memory_stall));
        for i in 0..3 {
            k.tlb[i] = c.carry.take(5 + i, nf * r.tlb[i]);
        }
        k.walk_cycles = c.carry.take(8, nf * r.walk[0]);
        k.walk_references = c.carry.take(9, nf * r.walk[1]);
        k.walk_memory_accesses = c.carry.take(10, nf * r.walk[2]);
        for (l, (x, share)) in k.levels.iter_mut().zip(&r.levels).enumerate() {
            *x = c.carry.take(11 + l, nf * share);
        }
        for (l, (x, per_ref)) in k.level_writebacks.iter_mut().zip(&r.level_writebacks).enumerate() {
            *x = c.carry.take(11 + MAX_LEVELS + l, nf * per_ref);
        }
        let base_slot = 11 + 2 * MAX_LEVELS;
        let tiers = self.load.len();
        // Write-backs: every miss evicts a line, dirty with the calibrated share,
        // spread over the tiers by `PerRef::writeback_shares`.
        let misses: f64 = r.memory.iter().sum::<f64>() + r.walk[2];
        let shares = r.writeback_shares(tiers);
        for t in 0..tiers {
            let fit = c.cost.tiers[t];
            let slot = base_slot + 8 * t;
            let accesses = c.carry.take(slot, nf * r.memory[t]);
            let share = shares[t];
            let writebacks = c.carry.take(slot + 1, nf * misses * c.cost.writebacks_per_miss * share);
            let walks = c.carry.take(slot + 6, k.walk_memory_accesses as f64 * c.cost.walk_tiers[t]);
            let all = accesses + writebacks + walks;
            let tk = &mut k.tiers[t];
            tk.accesses = accesses;
            tk.reads = c.carry.take(slot + 2, nf * r.memory_reads[t]).min(accesses);
            tk.latency_cycles = c.carry.take(slot + 3, nf * (r.memory_latency[t] + r.memory[t] * wait[t]));
            tk.writebacks = writebacks;
            tk.walk_reads = walks;
            tk.row_hits = c.carry.take(slot + 4, all as f64 * fit.row_hits);
            tk.queue_cycles = c.carry.take(slot + 5, all as f64 * wait[t]);
        }
        machine.epochs_advance(core, &k);
        let c = &mut self.cores[core];
        c.left -= n;
        c.made += n;
        c.chunks += 1;
        c.chunk_refs += n;
        self.tenants[tenant as usize].left -= nf;
        let clock = machine.cores()[core].clock;
        self.update_load(machine, core, clock);
        // Faults due (a first fault ends the chunk; repeats fall within it), each
        // followed by the policy's hook (its handler runs there).
        let refs_now = machine.epochs().expect("epochs state").core_refs(core);
        let rep = |vpn: u64| Access { vaddr: vpn << 12, instrs: 0, core: core as u16, tenant, size: 8, flags: 0 };
        let before_faults = machine.cores()[core].stats.fault_cycles;
        while machine.epochs_fault(core, refs_now, policy) {
            let vpn = self.cores[core].last_vpn;
            policy.on_reference(&rep(vpn), &RefOutcome::default(), &mut Mechanisms::on_core_for(machine, rt, core, 0));
        }
        let fault_cycles = machine.cores()[core].stats.fault_cycles - before_faults;
        let c = &mut self.cores[core];
        c.fault_cycles_per_ref = 0.5 * c.fault_cycles_per_ref + 0.5 * fault_cycles as f64 / nf;
        // First touches due.
        let now = machine.cores()[core].clock;
        loop {
            let h = machine.epochs().expect("epochs state").hazard(tenant, now);
            let Some(vpn) = machine.epochs_mut().expect("epochs state").take_first_touch(tenant, h) else { break };
            self.cores[core].last_vpn = vpn;
            if !machine.epochs_first_touch(core, tenant, vpn, policy) {
                return Ok((n, true));
            }
        }
        let vpn = self.cores[core].last_vpn;
        // The chunk's events for PEBS-like sampling, while the hook runs.
        let slow: u64 = k.tiers[1..tiers].iter().map(|t| t.reads).sum();
        let e = machine.epochs_mut().expect("epochs state");
        e.chunk_events[core] = Some([k.tiers[0].reads, slow, k.writes]);
        policy.on_reference(&rep(vpn), &RefOutcome::default(), &mut Mechanisms::on_core_for(machine, rt, core, n));
        machine.epochs_mut().expect("epochs state").chunk_events[core] = None;
        let done = self.cores[core].left == 0 || (self.tenants[tenant as usize].done && self.tenants[tenant as usize].left <= 0.0);
        Ok((n, done))
    }

    /// The report of the run.
    pub fn report(&self, machine: &Machine<impl Redirect>) -> EpochsReport {
        let errors: Vec<f64> = self.cores.iter().flat_map(|c| c.cost.errors.iter().copied()).collect();
        let n = errors.len().max(1) as f64;
        let chunk_refs: u64 = self.cores.iter().map(|c| c.chunk_refs).sum();
        let detailed: u64 = self.cores.iter().map(|c| c.detailed_refs).sum();
        EpochsReport {
            ran: "epochs".into(),
            statements: self.tenants.iter().filter(|t| t.model.is_some()).map(|t| t.describe.clone()).collect(),
            chunks: self.cores.iter().map(|c| c.chunks).sum(),
            chunk_references: chunk_refs,
            detailed_references: detailed,
            detailed_share: detailed as f64 / (chunk_refs + detailed).max(1) as f64,
            calibrations: self.cores.iter().map(|c| c.calibrations).sum(),
            stretches: self.tenants.iter().map(|t| t.stretches).sum(),
            predicted_calibrations: errors.len() as u64,
            model_error_mean: errors.iter().map(|e| e.abs()).sum::<f64>() / n,
            model_error_max: errors.iter().fold(0.0, |a, e| a.max(e.abs())),
            model_error_bias: errors.iter().sum::<f64>() / n,
            calibrated_in_place: self.cores.iter().all(|c| c.positioned),
            counts: machine.epochs().map(|e| e.counts.clone()).unwrap_or_default(),
            config: self.cfg.clone(),
            estimated: "outside calibrations: time, cache, TLB and walk counts, and the tiers' demand traffic from the calibrated cost model; Accessed/Dirty bits, faults and first touches drawn from the statements' rates".into(),
        }
    }
}
