//! The engine's settings (`[engine]`): the epoch length, the mode references run in
//! (detailed, sampled, epochs) and the parameters of sampled and epochs modes.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// Engine settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Epoch length in core cycles: policies decide at epoch boundaries, and the
    /// report's time series has one point per epoch. Default: Rainbow's 10^8-cycle
    /// interval (§III-B).
    pub epoch_cycles: u64,
    /// Check every machine invariant (page conservation, capacities, TLB coherence)
    /// at each epoch; slow, for debugging policies. `--verify` turns it on too.
    pub check_invariants: bool,
    /// `detailed` runs every reference through the full model; `sampled` alternates
    /// detailed windows with fast-forward windows that keep everything a policy can
    /// observe exact and take cache time from a cost model fitted on the detailed
    /// window before (docs/sampled.md). Policies with a redirection structure
    /// (Rainbow, HSCC, SpAR, SpRM, Memory Mode) always run detailed.
    #[serde(skip_serializing_if = "Mode::is_detailed")]
    pub mode: Mode,
    /// Window lengths of sampled mode.
    #[serde(skip_serializing_if = "SampledConfig::is_default")]
    pub sampled: SampledConfig,
    /// Calibration and profiles of epochs mode.
    #[serde(skip_serializing_if = "EpochsConfig::is_default")]
    pub epochs: EpochsConfig,
    /// Simulated seconds to run, in every mode (0: until the references run out). A
    /// run ends at whichever comes first; with a length in seconds and no `--refs`,
    /// the workloads' references are not limited (`workload.refs` becomes 2^60),
    /// so their phases, which divide their references, do not change.
    #[serde(skip_serializing_if = "is_zero")]
    pub seconds: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            epoch_cycles: 100_000_000,
            check_invariants: false,
            mode: Mode::Detailed,
            sampled: SampledConfig::default(),
            epochs: EpochsConfig::default(),
            seconds: 0.0,
        }
    }
}

/// How the engine runs references (`engine.mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Every reference through the full model.
    #[default]
    Detailed,
    /// Detailed windows alternating with fast-forward windows.
    Sampled,
    /// No per-reference work within a stationary stretch: page-granular rates, a cost
    /// model calibrated by short detailed windows, observations drawn when a policy
    /// looks (docs/epochs.md).
    Epochs,
}

impl Mode {
    fn is_detailed(&self) -> bool {
        *self == Mode::Detailed
    }
}

/// The windows of sampled mode, in references of each core: every `period_refs`
/// references start with `detailed_refs` in the full model, the first `warmup_refs`
/// of which re-warm the caches and the rest fit the cost model; the remaining
/// references fast-forward. The defaults run 5 % of references detailed, in periods
/// of 2.5·10⁶ references. A fit prices the rest of its period, so the period bounds
/// how stale a fit gets while a workload drifts: at the same share, periods of
/// 20·10⁶ references left `graph-bfs`'s AMAT 7.3 % low and these 1.5 %
/// (docs/sampled.md, "Windows"). A fitting window of 62 500 references still gives
/// the classes that carry most references thousands of samples each.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SampledConfig {
    pub period_refs: u64,
    pub detailed_refs: u64,
    pub warmup_refs: u64,
    /// How fast-forward translates (docs/sampled.md, "Page-granular fast-forward"):
    /// `tlb` (the default) runs every reference through the TLBs and walks, their
    /// counts exact; `page` keeps per core a direct-mapped array of the translations
    /// the TLBs probably still hold, walks the page table (Accessed and Dirty bits,
    /// traps, faults) only when that array misses, and takes translation time, the
    /// TLB and walk counts and memory traffic from the fitting window.
    #[serde(skip_serializing_if = "FastForward::is_tlb")]
    pub fast_forward: FastForward,
}

/// How sampled mode's fast-forward translates (`engine.sampled.fast_forward`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FastForward {
    /// Every reference through the TLBs and, on a miss, the walk: counts exact.
    #[default]
    Tlb,
    /// Page-granular: reach arrays of the TLBs' size stand for them.
    Page,
}

impl FastForward {
    fn is_tlb(&self) -> bool {
        *self == FastForward::Tlb
    }
}

impl Default for SampledConfig {
    fn default() -> Self {
        SampledConfig { period_refs: 2_500_000, detailed_refs: 125_000, warmup_refs: 62_500, fast_forward: FastForward::Tlb }
    }
}

impl SampledConfig {
    fn is_default(&self) -> bool {
        *self == SampledConfig::default()
    }

    pub(super) fn validate(&self) -> Result<()> {
        if self.detailed_refs == 0 || self.detailed_refs > self.period_refs {
            bail!("engine.sampled.detailed_refs: must be in 1..=period_refs ({}), got {}", self.period_refs, self.detailed_refs);
        }
        if self.warmup_refs >= self.detailed_refs {
            bail!("engine.sampled.warmup_refs: must be below detailed_refs ({}), got {}", self.detailed_refs, self.warmup_refs);
        }
        Ok(())
    }
}

/// Epochs mode (`[engine.epochs]`, docs/epochs.md): when its cost model is
/// calibrated by detailed windows, and how application workloads are profiled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EpochsConfig {
    /// References of a calibration's first part, run in full to re-warm the caches
    /// and TLBs (not measured). The run's first calibration goes on until the
    /// last-level cache is full, up to `first_warmup_refs`: a cold cache's misses
    /// would price the whole run.
    pub warmup_refs: u64,
    pub first_warmup_refs: u64,
    /// References of a calibration's measured part.
    pub calibration_refs: u64,
    /// Simulated seconds after which a core is calibrated again in any case (0:
    /// never on time alone).
    pub recalibrate_s: f64,
    /// A core is calibrated again when its tenant's stretch moves further than this
    /// total variation distance from the stretch of its last calibration (a phase
    /// change), ...
    pub phase_distance: f64,
    /// ... or when pages carrying this share of its references changed tier since.
    pub moved_share: f64,
    /// Simulated seconds between two calibrations of a core triggered by phases or
    /// moves, at least.
    pub min_gap_s: f64,
    /// Simulated seconds a chunk of references lasts at most: the policy's hooks
    /// run between chunks, so a period of a policy comes due at most this late.
    pub max_chunk_s: f64,
    /// Simulated seconds a chunk lasts at least when only another executor's clock
    /// (a core, a background thread's next step) would end it sooner: executors then
    /// pass each other by up to this much, instead of cutting a core's references into
    /// a chunk per step of a scanning thread. Our choice; faults, first touches,
    /// stretch ends, epoch boundaries and the run's end still end a chunk where they
    /// fall.
    pub min_chunk_s: f64,
    /// A poisoned page's repeated faults (it stays poisoned through its faults, as
    /// Thermostat's BadgerTrap pages do) are taken at the end of the chunk they fall
    /// in, each at its count and cost, instead of each ending a chunk; the first
    /// fault after a page is poisoned still ends one. Our choice (docs/epochs.md,
    /// "Poison and hinting faults").
    pub batch_faults: bool,
    /// While a core calibrates, each other core running in chunks has a stand-in
    /// that issues its memory traffic into the tiers' banks and buses, so that the
    /// calibration measures its waits beside the others' traffic, as in detailed
    /// mode (docs/epochs.md, "Calibrating under load"). Our choice; `false` leaves a
    /// calibrating core alone on the tiers.
    pub stand_ins: bool,
    /// A stand-in replays, through the shared last-level cache, the lines its core
    /// brought to that cache in its last calibration (page walks' included), so that
    /// a calibrating core shares the cache with the others as in detailed mode; the
    /// lines that miss go to their tiers' banks and buses. Without it (or before its
    /// core's first calibration) a stand-in issues memory lines drawn from its last
    /// chunk's cost and takes no cache space. Only with `stand_ins` and a shared last
    /// level. Our choice (docs/epochs.md, "Calibrating under load").
    pub replay_lines: bool,
    /// References per window of a profile (application workloads, traces).
    pub window_refs: u64,
    /// References profiled of an application workload at most; its profile repeats
    /// beyond them.
    pub profile_refs: u64,
}

impl Default for EpochsConfig {
    fn default() -> Self {
        EpochsConfig {
            warmup_refs: 200_000,
            first_warmup_refs: 5_000_000,
            calibration_refs: 300_000,
            recalibrate_s: 60.0,
            phase_distance: 0.5,
            moved_share: 0.2,
            min_gap_s: 0.5,
            max_chunk_s: 0.001,
            min_chunk_s: 0.0001,
            batch_faults: true,
            stand_ins: true,
            replay_lines: true,
            window_refs: 1 << 22,
            profile_refs: 1 << 28,
        }
    }
}

impl EpochsConfig {
    fn is_default(&self) -> bool {
        *self == EpochsConfig::default()
    }

    pub(super) fn validate(&self) -> Result<()> {
        if self.calibration_refs < 1000 {
            bail!("engine.epochs.calibration_refs: must be at least 1000, got {}", self.calibration_refs);
        }
        if !(self.max_chunk_s.is_finite() && self.max_chunk_s > 0.0) {
            bail!("engine.epochs.max_chunk_s: must be a positive number of seconds, got {}", self.max_chunk_s);
        }
        if !(self.min_chunk_s.is_finite() && self.min_chunk_s >= 0.0 && self.min_chunk_s <= self.max_chunk_s) {
            bail!("engine.epochs.min_chunk_s: must be a number of seconds from 0 to max_chunk_s ({}), got {}", self.max_chunk_s, self.min_chunk_s);
        }
        for (field, x) in [("recalibrate_s", self.recalibrate_s), ("min_gap_s", self.min_gap_s)] {
            if !(x.is_finite() && x >= 0.0) {
                bail!("engine.epochs.{field}: must be a number of seconds ≥ 0, got {x}");
            }
        }
        for (field, x) in [("phase_distance", self.phase_distance), ("moved_share", self.moved_share)] {
            if !(x > 0.0 && x <= 1.0) {
                bail!("engine.epochs.{field}: must be in (0, 1], got {x}");
            }
        }
        if self.window_refs == 0 || self.profile_refs == 0 {
            bail!("engine.epochs: window_refs and profile_refs must be at least 1");
        }
        Ok(())
    }
}
