//! The run configuration: one TOML tree that mirrors the components —
//! `[machine]` (with `[machine.tlb]`, `[[machine.caches]]`, `[machine.page_table]`,
//! `[machine.tiers.fast]`, `[machine.tiers.slow]`, `[machine.costs]`), `[workload]`
//! (or `[[workloads]]`, one per core), `[policy]` with `name` and one
//! `[policy.<name>]` table of that policy's parameters, and `[engine]`.
//!
//! Layers, later ones winning: built-in defaults → preset → config file →
//! `--set key=value` overrides. Every unknown key, unparsable value and impossible
//! setting is an error naming the dotted path of the field.

use crate::machine::{MachineConfig, TenantKind};
use crate::policy::registry::{with_policy, PolicyVisitor, POLICIES};
use crate::machine::Redirect;
use crate::policy::Policy;
use crate::trace::meta::SampledRun;
use crate::trace::{Format, OpenOptions};
use crate::workload::WorkloadConfig;
use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use toml::{Table, Value};

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
    pub fn is_detailed(&self) -> bool {
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
}

impl Default for SampledConfig {
    fn default() -> Self {
        SampledConfig { period_refs: 2_500_000, detailed_refs: 125_000, warmup_refs: 62_500 }
    }
}

impl SampledConfig {
    pub fn is_default(&self) -> bool {
        *self == SampledConfig::default()
    }

    fn validate(&self) -> Result<()> {
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
            window_refs: 1 << 22,
            profile_refs: 1 << 28,
        }
    }
}

impl EpochsConfig {
    pub fn is_default(&self) -> bool {
        *self == EpochsConfig::default()
    }

    fn validate(&self) -> Result<()> {
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

/// The `[policy]` table: the chosen policy and every policy's parameter table.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PolicySection {
    /// Policy to run (see `tiersim policies`).
    pub name: String,
    /// `[policy.<name>]` tables.
    #[serde(flatten)]
    pub params: Table,
}

impl Default for PolicySection {
    fn default() -> Self {
        PolicySection { name: "first-touch".into(), params: Table::new() }
    }
}

/// One workload of a multi-programmed or multi-tenant run.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadSlot {
    /// Core that runs it.
    pub core: usize,
    /// Tenant (address space) it runs in.
    pub tenant: u16,
    /// Whether that tenant is a process or a VM.
    pub kind: TenantKind,
    /// The tenant's initial share of the fast tier, in (0, 1], when one is set
    /// (HMM-V §5.9 gives each of four VMs 8 GB of DRAM at the start); every slot of
    /// a tenant carries the same share.
    pub fast_share: Option<f64>,
    /// The synthetic workload (unused when `trace` is set).
    pub workload: WorkloadConfig,
    /// Bytes the workload's data span ([`crate::workload::footprint_bytes`]), or 0 for
    /// a trace (measured from the trace when the run starts) and for the cores after
    /// the first of a `loaded-latency` run (all of whose cores share one footprint):
    /// its share of the run's footprint.
    pub footprint_bytes: u64,
    /// The trace this core replays instead of a synthetic workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceSlot>,
}

impl WorkloadSlot {
    /// What the slot runs, for messages: `workload `gups`` or `trace FILE`.
    pub fn describe(&self) -> String {
        match &self.trace {
            Some(t) => format!("trace {}", t.path),
            None => format!("workload `{}`", self.workload.name),
        }
    }
}

/// A trace replayed by one core: the `trace`, `format` and `skip_malformed` keys of
/// a `[[workloads]]` entry, or one `--trace` option.
#[derive(Clone, Debug, Serialize)]
pub struct TraceSlot {
    /// Path of the trace file.
    pub path: String,
    /// Its format, or `None` to detect it.
    pub format: Option<Format>,
    /// Skip malformed lines (counting them) instead of failing.
    pub skip_malformed: bool,
    /// Replay only the first this many records (`--refs N`, or `refs` in the entry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refs: Option<u64>,
    /// The thread (core of the trace) this core replays, for a trace recorded with
    /// threads as cores; `None` replays every record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<u16>,
    /// The part of the program's run the trace holds, when not the whole run (from
    /// the trace's metadata).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled: Option<SampledRun>,
}

/// The whole configuration.
#[derive(Clone, Debug, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub machine: MachineConfig,
    /// The workload, or the defaults every `[[workloads]]` entry starts from.
    pub workload: WorkloadConfig,
    /// One entry per core: `[workload]` keys plus `core` (default: the entry's index),
    /// `tenant` (default: the entry's index) and `kind` ("process" or "vm").
    pub workloads: Vec<Table>,
    /// Whether the single `[workload]` runs in a VM tenant ("process" or "vm").
    pub tenant_kind: TenantKind,
    pub policy: PolicySection,
    pub engine: EngineConfig,
}

/// Built-in presets: name, description, TOML.
pub const PRESETS: &[(&str, &str, &str)] = &[
    ("rainbow", "Rainbow Table IV: 4 GiB DRAM + 32 GiB PCM, 3.2 GHz, split TLBs", include_str!("../../presets/rainbow.toml")),
    ("spar", "SpAR/SpRM §4: 1 GiB HBM (8 ch) + 16 GiB PCM (2 ch), 512 KiB huge pages", include_str!("../../presets/spar.toml")),
    ("spar-frag", "SpAR 16-core mix: very friendly, internal fragmentation (mcf-like): hot 4 KiB pages scattered over many huge pages", include_str!("../../presets/spar-frag.toml")),
    ("spar-dense", "SpAR 16-core mix: uniformly hot huge pages: contiguous hot regions and windows (lbm-like)", include_str!("../../presets/spar-dense.toml")),
    ("spar-unfriendly", "SpAR 16-core mix: nothing to gain from migration: random updates, streams, chases over more than fits (milc/Gems-like)", include_str!("../../presets/spar-unfriendly.toml")),
    ("spar-blend", "SpAR 16-core mix: a blend of the three classes, as the paper's mix3 and mix6", include_str!("../../presets/spar-blend.toml")),
    ("optane", "HMM-V Table 2: DRAM + Optane PMem (310/94 ns)", include_str!("../../presets/optane.toml")),
    ("thermostat", "Thermostat §4: DRAM + ~1 µs slow memory, 2 MiB huge pages", include_str!("../../presets/thermostat.toml")),
    (
        "thermostat-emulated",
        "Thermostat §4.2 as measured: slow memory emulated by a ~1 µs fault per TLB miss (BadgerTrap)",
        include_str!("../../presets/thermostat-emulated.toml"),
    ),
    ("memos", "memos §5–§7: DRAM and NVM channels side by side (MCHA), bank bits 12–14/20–21, 16 LLC slabs, 7 GB/s DDR3", include_str!("../../presets/memos.toml")),
    ("cxl", "DDR5 local memory + CXL-attached expander (~2.5× latency, lower bandwidth)", include_str!("../../presets/cxl.toml")),
];

/// Merges `over` into `base`: tables recursively, everything else replaced.
fn merge(base: &mut Table, over: Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Table(b)), Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Parses a `--set` value: TOML if it parses as a value, else a plain string.
fn parse_value(text: &str) -> Value {
    match toml::from_str::<Table>(&format!("v = {text}")) {
        Ok(mut t) => t.remove("v").unwrap_or(Value::String(text.into())),
        Err(_) => Value::String(text.into()),
    }
}

/// Sets `path` (dotted; numeric parts index arrays) to `value` in `root`.
fn set_path(root: &mut Table, path: &str, value: Value) -> Result<()> {
    let parts: Vec<&str> = path.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        bail!("--set {path}: empty key segment");
    }
    let mut cur: &mut Value = root.entry(parts[0].to_string()).or_insert_with(|| Value::Table(Table::new()));
    for (i, part) in parts.iter().enumerate().skip(1) {
        let here = parts[..i].join(".");
        cur = match cur {
            Value::Table(t) => t.entry(part.to_string()).or_insert_with(|| Value::Table(Table::new())),
            Value::Array(a) => {
                let idx: usize = part.parse().map_err(|_| anyhow!("--set {path}: `{here}` is a list; index it with a number"))?;
                let len = a.len();
                a.get_mut(idx).ok_or_else(|| anyhow!("--set {path}: `{here}` has {len} entries, no index {idx}"))?
            }
            _ => bail!("--set {path}: `{here}` is a value, not a table"),
        };
    }
    *cur = value;
    Ok(())
}

/// Where a configuration comes from.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    pub preset: Option<String>,
    pub file: Option<std::path::PathBuf>,
    /// One workload per core (multi-programmed mix), each its own tenant.
    pub mix: Vec<String>,
    /// One tenant per core, each `kind:workload[:fast-share]`, e.g. `vm:kv:25%`.
    pub tenants: Vec<String>,
    /// `key=value` overrides, applied in order.
    pub sets: Vec<String>,
    /// One trace per core (`--trace`), each its own tenant unless `trace_tenants` says
    /// otherwise.
    pub traces: Vec<String>,
    /// Tenant of each trace (`--tenant`), in the order of `traces`; empty for one
    /// tenant per trace.
    pub trace_tenants: Vec<u16>,
    /// Format of every trace (`--format`), or `None` to detect each.
    pub trace_format: Option<String>,
    /// Skip malformed trace lines (`--skip-malformed`).
    pub skip_malformed: bool,
    /// Replay only the first this many records of each trace (`--refs` with `--trace`).
    pub trace_refs: Option<u64>,
}

fn deserialize<T: serde::de::DeserializeOwned>(value: Value, prefix: &str) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let full = match (prefix.is_empty(), path.as_str()) {
            (true, _) => path.clone(),
            (false, ".") => prefix.to_string(),
            (false, p) => format!("{prefix}.{p}"),
        };
        anyhow!("{full}: {}", e.into_inner().to_string().lines().next().unwrap_or("invalid value"))
    })
}

/// Completes a trace slot from the trace's metadata (a recorded native trace): its
/// sampling, and a check of the thread it replays. A file that cannot be read yet
/// (or standard input) is left as it is: the run reports what is wrong with it.
fn trace_slot(slot: TraceSlot, field: &str) -> Result<TraceSlot> {
    let facts = match std::path::Path::new(&slot.path).is_file() {
        false => None,
        true => crate::trace::native::read_trailer(&slot.path)?,
    };
    let Some(meta) = facts.and_then(|f| f.meta) else { return Ok(slot) };
    let cores = meta.cores();
    let list = || cores.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ");
    match slot.thread {
        None if cores.len() > 1 => bail!(
            "{field}: trace {} holds {} threads (cores {}): give one entry per thread with `thread = N`, or replay it with --trace, which does",
            slot.path,
            cores.len(),
            list()
        ),
        Some(t) if !cores.contains(&t) => bail!("{field}.thread: trace {} has no thread {t} (its threads: {})", slot.path, list()),
        _ => Ok(TraceSlot { sampled: meta.sampled_run(), ..slot }),
    }
}

/// Merges built-in preset `name` into `root`. A preset that starts with
/// `based_on = "other"` is `other` with its own tables merged on top.
fn merge_preset(root: &mut Table, name: &str) -> Result<()> {
    let (_, _, text) = PRESETS.iter().find(|p| p.0 == name).ok_or_else(|| {
        anyhow!("--preset: unknown preset `{name}` (known: {})", PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", "))
    })?;
    let mut table: Table = toml::from_str(text).with_context(|| format!("built-in preset {name}"))?;
    if let Some(base) = table.remove("based_on") {
        let base = base.as_str().ok_or_else(|| anyhow!("built-in preset {name}: based_on must be a preset name"))?;
        merge_preset(root, base)?;
    }
    merge(root, table);
    Ok(())
}

impl Config {
    /// Builds the configuration from its layers and validates it.
    pub fn load(src: &Sources) -> Result<Config> {
        // Start from the materialised defaults, so that a partial table (say, a slow
        // tier with only its latencies) keeps that component's own defaults, and so
        // that list entries can be addressed by index in `--set`.
        let mut root: Table = Table::try_from(Config::default()).expect("defaults serialise");
        if let Some(name) = &src.preset {
            merge_preset(&mut root, name)?;
        }
        if let Some(path) = &src.file {
            let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
            let t: Table = toml::from_str(&text).map_err(|e| anyhow!("{}: {}", path.display(), one_line(&e.to_string())))?;
            merge(&mut root, t);
        }
        if !src.mix.is_empty() && !src.tenants.is_empty() {
            bail!("--tenants: give either --mix or --tenants, not both");
        }
        if !src.mix.is_empty() {
            let entries = src.mix.iter().map(|name| {
                let mut t = Table::new();
                t.insert("name".into(), Value::String(name.clone()));
                Value::Table(t)
            });
            root.insert("workloads".into(), Value::Array(entries.collect()));
            set_path(&mut root, "machine.cores", Value::Integer(src.mix.len() as i64))?;
        }
        if !src.tenants.is_empty() {
            let entries = src.tenants.iter().map(|spec| tenant_entry(spec).map(Value::Table)).collect::<Result<Vec<_>>>()?;
            root.insert("workloads".into(), Value::Array(entries));
            set_path(&mut root, "machine.cores", Value::Integer(src.tenants.len() as i64))?;
        }
        if !src.traces.is_empty() {
            if !src.tenants.is_empty() {
                bail!("--trace and --tenants cannot be combined: give trace entries a `tenant` in [[workloads]] instead");
            }
            if !src.mix.is_empty() {
                bail!("--trace and --mix cannot be combined: each gives every core its workload");
            }
            if !src.trace_tenants.is_empty() && src.trace_tenants.len() != src.traces.len() {
                bail!("--tenant: give one per --trace ({} traces, {} tenants)", src.traces.len(), src.trace_tenants.len());
            }
            let mut entries = Vec::new();
            let format = src.trace_format.as_deref().map(Format::parse).transpose()?;
            for (i, path) in src.traces.iter().enumerate() {
                // A trace recorded with threads as cores gives each thread a core (a
                // file that cannot be read yet is one core, and the run says why).
                let threads = match std::path::Path::new(path).is_file() {
                    false => vec![0],
                    true => crate::trace::threads::threads(path, &OpenOptions { format, skip_malformed: src.skip_malformed, ..OpenOptions::default() })?,
                };
                for &thread in &threads {
                    let mut t = Table::new();
                    t.insert("trace".into(), Value::String(path.clone()));
                    if let Some(f) = &src.trace_format {
                        t.insert("format".into(), Value::String(f.clone()));
                    }
                    if src.skip_malformed {
                        t.insert("skip_malformed".into(), Value::Boolean(true));
                    }
                    if threads.len() > 1 {
                        t.insert("thread".into(), Value::Integer(thread as i64));
                    }
                    if let Some(n) = src.trace_refs {
                        t.insert(
                            "refs".into(),
                            Value::Integer(
                                i64::try_from(n)
                                    .map_err(|_| anyhow!("--refs: {n} is too large"))?,
                            ),
                        );
                    }
                    let tenant = src.trace_tenants.get(i).copied().unwrap_or(i as u16);
                    t.insert("tenant".into(), Value::Integer(tenant as i64));
                    entries.push(Value::Table(t));
                }
            }
            let cores = entries.len();
            root.insert("workloads".into(), Value::Array(entries));
            set_path(&mut root, "machine.cores", Value::Integer(cores as i64))?;
        }
        for s in &src.sets {
            let (k, v) = s.split_once('=').ok_or_else(|| anyhow!("--set {s}: expected key=value"))?;
            set_path(&mut root, k.trim(), parse_value(v.trim()))?;
        }
        let cfg: Config = deserialize(Value::Table(root), "")?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks the parts that do not depend on the run.
    pub fn validate(&self) -> Result<()> {
        self.machine.validate()?;
        if self.engine.epoch_cycles == 0 {
            bail!("engine.epoch_cycles: must be positive");
        }
        self.engine.sampled.validate()?;
        self.engine.epochs.validate()?;
        if !(self.engine.seconds.is_finite() && self.engine.seconds >= 0.0) {
            bail!("engine.seconds: must be a number of seconds ≥ 0, got {}", self.engine.seconds);
        }
        for key in self.policy.params.keys() {
            if !POLICIES.iter().any(|p| p.0 == key) {
                bail!("policy.{key}: unknown policy section (known policies: {})", POLICIES.iter().map(|p| p.0).collect::<Vec<_>>().join(", "));
            }
            // Every section must be valid, not only the chosen policy's: a typo in a
            // section meant for a later `compare` must not pass silently.
            with_policy(key, CheckParams(self))??;
        }
        with_policy(&self.policy.name, CheckParams(self))??;
        // Building the slots validates every workload (computing its footprint) and
        // the tenants' fast-tier shares.
        self.slots()?;
        Ok(())
    }

    /// The chosen policy's parameters, from `[policy.<name>]` over its defaults.
    pub fn policy_config<R: Redirect, P: Policy<R>>(&self, name: &str) -> Result<P::Config> {
        match self.policy.params.get(name) {
            None => Ok(P::Config::default()),
            Some(v) => deserialize(v.clone(), &format!("policy.{name}")),
        }
    }

    /// The workloads of the run, one per core. A `[workload]` alone runs on core 0,
    /// except `loaded-latency`, which runs on every core of the machine in one
    /// address space (core 0 probes, the others make traffic).
    pub fn slots(&self) -> Result<Vec<WorkloadSlot>> {
        if self.workloads.is_empty() {
            let footprint_bytes = crate::workload::footprint_bytes(&self.workload)?;
            let cores = if self.workload.name == "loaded-latency" { self.machine.cores } else { 1 };
            return Ok((0..cores)
                .map(|core| WorkloadSlot {
                    core,
                    tenant: 0,
                    kind: self.tenant_kind,
                    fast_share: None,
                    workload: self.workload.clone(),
                    footprint_bytes: if core == 0 { footprint_bytes } else { 0 },
                    trace: None,
                })
                .collect());
        }
        let base = Table::try_from(&self.workload).expect("workload serialises");
        let mut slots: Vec<WorkloadSlot> = Vec::new();
        for (i, entry) in self.workloads.iter().enumerate() {
            let field = format!("workloads[{i}]");
            let mut t = entry.clone();
            let core = match t.remove("core") {
                None => i,
                Some(Value::Integer(c)) if c >= 0 => c as usize,
                Some(v) => bail!("{field}.core: expected a core number, got {v}"),
            };
            let tenant = match t.remove("tenant") {
                None => i as u16,
                Some(Value::Integer(c)) if (0..=u16::MAX as i64).contains(&c) => c as u16,
                Some(v) => bail!("{field}.tenant: expected a tenant number, got {v}"),
            };
            let kind = match t.remove("kind") {
                None => TenantKind::Process,
                Some(v) => deserialize(v, &format!("{field}.kind"))?,
            };
            let fast_share = match t.remove("fast_share") {
                None => None,
                Some(v) => Some(share(&v).map_err(|e| anyhow!("{field}.fast_share: {e}"))?),
            };
            let trace = match t.remove("trace") {
                None => None,
                Some(Value::String(path)) => Some(TraceSlot {
                    path,
                    format: None,
                    skip_malformed: false,
                    refs: None,
                    thread: None,
                    sampled: None,
                }),
                Some(v) => bail!("{field}.trace: expected a file path, got {v}"),
            };
            let thread = match t.remove("thread") {
                None => None,
                Some(Value::Integer(c)) if (0..=u16::MAX as i64).contains(&c) => Some(c as u16),
                Some(v) => bail!("{field}.thread: expected a thread (core of the trace) number, got {v}"),
            };
            let format = match t.remove("format") {
                None => None,
                Some(Value::String(f)) => Some(Format::parse(&f).map_err(|e| anyhow!("{field}.format: {}", e.to_string().trim_start_matches("--format: ")))?),
                Some(v) => bail!("{field}.format: expected a trace format name, got {v}"),
            };
            let skip_malformed = match t.remove("skip_malformed") {
                None => false,
                Some(Value::Boolean(b)) => b,
                Some(v) => bail!("{field}.skip_malformed: expected true or false, got {v}"),
            };
            let refs = match (&trace, t.get("refs")) {
                (None, _) | (_, None) => None,
                (Some(_), Some(Value::Integer(n))) if *n >= 1 => {
                    let n = *n as u64;
                    t.remove("refs");
                    Some(n)
                }
                (Some(_), Some(v)) => bail!("{field}.refs: expected the number of records to replay (at least 1), got {v}"),
            };
            let trace = match trace {
                Some(tr) => Some(trace_slot(
                    TraceSlot {
                        format,
                        skip_malformed,
                        refs,
                        thread,
                        ..tr
                    },
                    &field,
                )?),
                None if format.is_some() || skip_malformed || thread.is_some() => {
                    bail!("{field}: `format`, `skip_malformed` and `thread` need a `trace` file")
                }
                None => None,
            };
            if core >= self.machine.cores {
                bail!("{field}.core: core {core} does not exist (machine.cores = {})", self.machine.cores);
            }
            if let Some(other) = slots.iter().find(|s| s.core == core) {
                bail!("{field}.core: core {core} already runs {}; give each core one workload", other.describe());
            }
            if let Some(other) = slots.iter().find(|s| s.tenant == tenant && s.kind != kind) {
                bail!("{field}.kind: tenant {tenant} is already a {:?}", other.kind);
            }
            let earlier = slots.iter().filter(|s| s.tenant == tenant).find_map(|s| s.fast_share);
            if let (Some(new), Some(old)) = (fast_share, earlier) {
                if new != old {
                    bail!("{field}.fast_share: tenant {tenant} already has fast_share {old}, got {new}");
                }
            }
            let mut w = base.clone();
            merge(&mut w, t);
            let workload: WorkloadConfig = deserialize(Value::Table(w), &field)?;
            let footprint_bytes = if trace.is_some() { 0 } else { crate::workload::footprint_bytes(&workload)? };
            slots.push(WorkloadSlot { core, tenant, kind, fast_share, workload, footprint_bytes, trace });
        }
        let tenants = slots.iter().map(|s| s.tenant).max().unwrap_or(0) as usize + 1;
        let mut total_share = 0.0;
        for t in 0..tenants as u16 {
            if !slots.iter().any(|s| s.tenant == t) {
                bail!("workloads: tenant numbers must be 0, 1, 2, … without gaps; tenant {t} has no workload");
            }
            // A share given on one slot of a tenant holds for all of its slots.
            let tenant_share = slots.iter().filter(|s| s.tenant == t).find_map(|s| s.fast_share);
            for s in slots.iter_mut().filter(|s| s.tenant == t) {
                s.fast_share = tenant_share;
            }
            total_share += tenant_share.unwrap_or(0.0);
        }
        if total_share > 1.0 + 1e-9 {
            bail!("workloads: the tenants' fast_share values add up to {total_share}, more than the whole fast tier (1)");
        }
        Ok(slots)
    }

    /// The effective configuration as TOML, with the chosen policy's parameters
    /// written out in full.
    pub fn to_toml(&self) -> Result<String> {
        let mut t = Table::try_from(self)?;
        let params = with_policy(&self.policy.name, PolicyParams(self))??;
        if let Some(Value::Table(p)) = t.get_mut("policy") {
            p.insert(self.policy.name.clone(), params);
        }
        if self.workloads.is_empty() {
            t.remove("workloads");
        }
        // The paging-structure caches and sampled mode are left out of a run's report
        // while off; the printed configuration names their keys all the same.
        if let Some(Value::Table(tlb)) = t.get_mut("machine").and_then(|m| m.get_mut("tlb")) {
            tlb.entry("psc").or_insert(Value::try_from(&self.machine.tlb.psc)?);
        }
        if let Some(Value::Table(engine)) = t.get_mut("engine") {
            engine.entry("mode").or_insert(Value::try_from(self.engine.mode)?);
            engine.entry("sampled").or_insert(Value::try_from(&self.engine.sampled)?);
            engine.entry("epochs").or_insert(Value::try_from(&self.engine.epochs)?);
            engine.entry("seconds").or_insert(Value::try_from(self.engine.seconds)?);
        }
        Ok(toml::to_string(&t)?)
    }
}

/// Reads a share of the fast tier: a number in (0, 1] or a percentage string
/// ("25%"); the error says what was expected.
fn share(value: &Value) -> std::result::Result<f64, String> {
    let x = match value {
        Value::Float(f) => *f,
        Value::Integer(i) => *i as f64,
        Value::String(text) => parse_share(text)?,
        other => return Err(format!("expected a share such as 0.25 or \"25%\", got {other}")),
    };
    if !(x > 0.0 && x <= 1.0) {
        return Err(format!("must be in (0, 1] (or 0% < share <= 100%), got {x}"));
    }
    Ok(x)
}

/// Parses "25%" as 0.25 and "0.25" as 0.25.
fn parse_share(text: &str) -> std::result::Result<f64, String> {
    let t = text.trim();
    let (number, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 100.0),
        None => (t, 1.0),
    };
    number.parse::<f64>().map(|x| x / scale).map_err(|_| format!("`{text}` is not a share (expected e.g. 0.25 or 25%)"))
}

/// The `[[workloads]]` entry of one `--tenants` item, `kind:workload[:fast-share]`.
fn tenant_entry(spec: &str) -> Result<Table> {
    let parts: Vec<&str> = spec.split(':').map(str::trim).collect();
    let (kind, name, fast) = match parts[..] {
        [kind, name] => (kind, name, None),
        [kind, name, fast] => (kind, name, Some(fast)),
        _ => bail!("--tenants {spec}: expected kind:workload or kind:workload:fast-share, e.g. vm:kv:25%"),
    };
    if kind != "vm" && kind != "process" {
        bail!("--tenants {spec}: kind must be `vm` or `process`, got `{kind}`");
    }
    let mut t = Table::new();
    t.insert("kind".into(), Value::String(kind.into()));
    t.insert("name".into(), Value::String(name.into()));
    if let Some(fast) = fast {
        let x = share(&Value::String(fast.into())).map_err(|e| anyhow!("--tenants {spec}: fast share {e}"))?;
        t.insert("fast_share".into(), Value::Float(x));
    }
    Ok(t)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

struct CheckParams<'a>(&'a Config);

impl PolicyVisitor for CheckParams<'_> {
    type Output = Result<()>;
    fn visit<R: Redirect, P: Policy<R>>(self, name: &'static str) -> Result<()> {
        self.0.policy_config::<R, P>(name).map(|_| ())
    }
}

struct PolicyParams<'a>(&'a Config);

impl PolicyVisitor for PolicyParams<'_> {
    type Output = Result<Value>;
    fn visit<R: Redirect, P: Policy<R>>(self, name: &'static str) -> Result<Value> {
        Ok(Value::try_from(self.0.policy_config::<R, P>(name)?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(preset: Option<&str>, sets: &[&str]) -> Result<Config> {
        Config::load(&Sources { preset: preset.map(String::from), sets: sets.iter().map(|s| s.to_string()).collect(), ..Default::default() })
    }

    #[test]
    fn set_overrides_nested_keys_and_list_entries() {
        let c = load(None, &["machine.tiers.fast.capacity=\"2GiB\"", "machine.caches.2.size=16MiB", "workload.zipf.alpha=1.2"]).unwrap();
        assert_eq!(c.machine.tiers.fast.capacity, crate::units::Capacity::Bytes(2 << 30));
        assert_eq!(c.machine.caches[2].size.bytes(), 16 << 20);
        assert_eq!(c.workload.zipf.alpha, 1.2);
    }

    #[test]
    fn errors_name_the_field() {
        let e = load(None, &["machine.tlb.l1_small_entris=4"]).unwrap_err().to_string();
        assert!(e.starts_with("machine.tlb"), "{e}");
        assert!(e.contains("l1_small_entris"), "{e}");
        let e = load(None, &["machine.cores=-1"]).unwrap_err().to_string();
        assert!(e.starts_with("machine.cores"), "{e}");
        let e = load(None, &["policy.name=nonsense"]).unwrap_err().to_string();
        assert!(e.contains("unknown policy `nonsense`"), "{e}");
        let e = load(Some("nope"), &[]).unwrap_err().to_string();
        assert!(e.contains("unknown preset"), "{e}");
        let e = load(None, &["policy.round-robin.fast_pagez=3"]).unwrap_err().to_string();
        assert!(e.starts_with("policy.round-robin"), "{e}");
        let e = load(None, &["machine.tiers.slow.capacity=\"lots\""]).unwrap_err().to_string();
        assert!(e.starts_with("machine.tiers.slow.capacity"), "{e}");
        // A tier's fields are checked when the configuration loads, not at the run.
        let e = load(None, &["machine.tiers.slow.channels=6"]).unwrap_err().to_string();
        assert_eq!(e, "machine.tiers.slow.channels: must be a power of two, got 6");
    }

    #[test]
    fn every_preset_loads_and_round_trips() {
        for (name, _, _) in PRESETS {
            let c = load(Some(name), &[]).unwrap_or_else(|e| panic!("preset {name}: {e}"));
            // `tiersim config` output read back gives the same configuration.
            let text = c.to_toml().unwrap();
            let again: Config = toml::from_str(&text).unwrap_or_else(|e| panic!("preset {name} round trip: {e}"));
            assert_eq!(again.to_toml().unwrap(), text, "preset {name}");
        }
    }

    #[test]
    fn a_preset_based_on_another_keeps_what_it_does_not_override() {
        let base = load(Some("thermostat"), &[]).unwrap();
        let emu = load(Some("thermostat-emulated"), &[]).unwrap();
        // Inherited: the paper's TLBs, THP and the fast tier's share.
        assert_eq!(emu.machine.tlb.l2_small_entries, 1024);
        assert!(emu.machine.page_table.thp);
        assert_eq!(emu.machine.tiers.fast.capacity.to_string(), base.machine.tiers.fast.capacity.to_string());
        // Overridden: the slow tier runs at the fast tier's (DRAM) timing.
        let (fast, slow) = (&emu.machine.tiers.fast, &emu.machine.tiers.slow);
        assert_eq!((slow.read_hit_ns, slow.read_miss_ns, slow.write_hit_ns, slow.write_miss_ns), (fast.read_hit_ns, fast.read_miss_ns, fast.write_hit_ns, fast.write_miss_ns));
        let energy = |t: &crate::machine::tier::TierConfig| {
            [t.read_hit_pj_per_bit, t.read_miss_pj_per_bit, t.write_hit_pj_per_bit, t.write_miss_pj_per_bit, t.static_mw_per_gib]
        };
        for (a, b) in energy(slow).iter().zip(energy(fast)) {
            assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        }
        assert_eq!((slow.channels, slow.banks, slow.endurance_writes), (fast.channels, fast.banks, 0));
        assert_eq!(base.machine.tiers.slow.read_miss_ns, 1000.0);
        // Later layers still win over both presets.
        let c = load(Some("thermostat-emulated"), &["machine.tiers.slow.read_miss_ns=500.0"]).unwrap();
        assert_eq!(c.machine.tiers.slow.read_miss_ns, 500.0);
    }

    fn load_tenants(tenants: &[&str]) -> Result<Config> {
        let sets = vec!["workload.footprint=\"16MiB\"".to_string()];
        Config::load(&Sources { tenants: tenants.iter().map(|t| t.to_string()).collect(), sets, ..Default::default() })
    }

    #[test]
    fn tenants_become_one_slot_per_core_with_their_fast_share() {
        let c = load_tenants(&["vm:kv:25%", "vm:graph-bfs:0.25", "process:pagerank", "vm:stream:25%"]).unwrap();
        assert_eq!(c.machine.cores, 4);
        let slots = c.slots().unwrap();
        let got: Vec<(usize, u16, TenantKind, &str, Option<f64>)> =
            slots.iter().map(|s| (s.core, s.tenant, s.kind, s.workload.name.as_str(), s.fast_share)).collect();
        assert_eq!(
            got,
            [
                (0, 0, TenantKind::Vm, "kv", Some(0.25)),
                (1, 1, TenantKind::Vm, "graph-bfs", Some(0.25)),
                (2, 2, TenantKind::Process, "pagerank", None),
                (3, 3, TenantKind::Vm, "stream", Some(0.25)),
            ]
        );
        // Each slot knows its workload's own footprint: the graph's layout, not 16 MiB.
        assert!(slots[1].footprint_bytes <= 16 << 20 && slots[1].footprint_bytes > 8 << 20);
        // Three whole-page arrays in 16 MiB.
        assert_eq!(slots[3].footprint_bytes, 3 * ((16 << 20) / 3 / 4096 * 4096));
    }

    #[test]
    fn tenant_errors_name_the_option_or_field() {
        let e = |tenants: &[&str]| load_tenants(tenants).unwrap_err().to_string();
        assert!(e(&["vm:kv:150%"]).starts_with("--tenants vm:kv:150%: fast share must be in (0, 1]"), "{}", e(&["vm:kv:150%"]));
        assert!(e(&["vm:kv:0"]).contains("must be in (0, 1]"));
        assert!(e(&["vm:kv:lots"]).contains("is not a share"));
        assert!(e(&["box:kv"]).contains("kind must be `vm` or `process`"));
        assert!(e(&["kv"]).contains("expected kind:workload"));
        assert!(e(&["vm:kv:60%", "vm:stream:60%"]).starts_with("workloads: the tenants' fast_share values add up to 1.2"));
        assert!(e(&["vm:nonsense"]).contains("unknown workload `nonsense`"));
        let both = Sources { mix: vec!["gups".into()], tenants: vec!["vm:kv".into()], ..Default::default() };
        assert!(Config::load(&both).unwrap_err().to_string().starts_with("--tenants:"));
    }

    #[test]
    fn fast_share_in_workload_entries_holds_for_the_whole_tenant() {
        let text = r#"
            [machine]
            cores = 3
            [workload]
            footprint = "16MiB"
            [[workloads]]
            name = "gups"
            tenant = 0
            fast_share = "40%"
            [[workloads]]
            name = "gups"
            tenant = 0
            [[workloads]]
            name = "zipf"
            tenant = 1
            fast_share = 0.5
        "#;
        let dir = crate::scratch::Scratch::new("share");
        let path = dir.join("share.toml");
        std::fs::write(&path, text).unwrap();
        let c = Config::load(&Sources { file: Some(path.clone()), ..Default::default() }).unwrap();
        let shares: Vec<Option<f64>> = c.slots().unwrap().iter().map(|s| s.fast_share).collect();
        assert_eq!(shares, [Some(0.4), Some(0.4), Some(0.5)]);
        std::fs::write(&path, text.replace("fast_share = 0.5", "fast_share = true")).unwrap();
        let e = Config::load(&Sources { file: Some(path.clone()), ..Default::default() }).unwrap_err().to_string();
        assert!(e.starts_with("workloads[2].fast_share: expected a share"), "{e}");
        std::fs::write(&path, text.replace("tenant = 0\n            [[workloads]]\n            name = \"zipf\"", "tenant = 0\n            fast_share = 0.3\n            [[workloads]]\n            name = \"zipf\"")).unwrap();
        let e = Config::load(&Sources { file: Some(path), ..Default::default() }).unwrap_err().to_string();
        assert!(e.starts_with("workloads[1].fast_share: tenant 0 already has fast_share 0.4"), "{e}");
    }

    #[test]
    fn workloads_inherit_from_workload_and_get_cores() {
        let text = r#"
            [machine]
            cores = 2
            [workload]
            footprint = "64MiB"
            [[workloads]]
            name = "gups"
            [[workloads]]
            name = "zipf"
            kind = "vm"
        "#;
        let dir = crate::scratch::Scratch::new("cfg");
        let path = dir.join("mix.toml");
        std::fs::write(&path, text).unwrap();
        let c = Config::load(&Sources { file: Some(path), ..Default::default() }).unwrap();
        let slots = c.slots().unwrap();
        assert_eq!(slots.len(), 2);
        assert_eq!((slots[1].core, slots[1].tenant, slots[1].kind), (1, 1, TenantKind::Vm));
        assert_eq!(slots[0].workload.footprint.bytes(), 64 << 20);
        assert_eq!(slots[1].workload.name, "zipf");
    }

    #[test]
    fn workloads_entries_may_replay_traces() {
        let text = r#"
            [machine]
            cores = 2
            [[workloads]]
            trace = "a.lk.gz"
            format = "lackey"
            skip_malformed = true
            [[workloads]]
            name = "gups"
            tenant = 0
        "#;
        let dir = crate::scratch::Scratch::new("cfg-trace");
        let path = dir.join("traces.toml");
        std::fs::write(&path, text).unwrap();
        let c = Config::load(&Sources { file: Some(path.clone()), ..Default::default() }).unwrap();
        let slots = c.slots().unwrap();
        let t = slots[0].trace.as_ref().expect("a trace slot");
        assert_eq!((t.path.as_str(), t.format, t.skip_malformed), ("a.lk.gz", Some(Format::Lackey), true));
        assert!(slots[1].trace.is_none());
        std::fs::write(&path, text.replace("\"lackey\"", "\"vcd\"")).unwrap();
        let e = Config::load(&Sources { file: Some(path), ..Default::default() }).unwrap_err().to_string();
        assert!(e.starts_with("workloads[0].format: unknown trace format `vcd`"), "{e}");
    }

    #[test]
    fn a_trace_of_threads_takes_a_core_per_thread() {
        use crate::trace::meta::{ThreadCounts, TraceMeta};
        use crate::trace::native::NativeWriter;
        use crate::trace::Access;
        // A recorded trace of two threads (cores 0 and 1), sampled.
        let dir = crate::scratch::Scratch::new("cfg-threads");
        let trace = dir.join("two.tsim");
        let mut w = NativeWriter::with_meta(std::fs::File::create(&trace).unwrap(), true, false).unwrap();
        for i in 0..10u64 {
            w.push(&Access { core: (i % 2) as u16, ..Access::read(0x1000 + 64 * i, 8, 1) }).unwrap();
        }
        let counts = |core| ThreadCounts { core, records: 5, instructions: 10, program_instructions: 40 };
        let sampling = crate::trace::window::Sampling::new(0, Some(40), None, None).unwrap();
        w.set_meta(TraceMeta { recorder: "test".into(), program: vec!["p".into()], sampling, threads: vec![counts(0), counts(1)] }.to_bytes());
        w.finish().unwrap();
        let path = trace.to_str().unwrap().to_string();
        let c = Config::load(&Sources { traces: vec![path.clone()], ..Default::default() }).unwrap();
        let slots = c.slots().unwrap();
        assert_eq!(c.machine.cores, 2);
        let got: Vec<(usize, u16, Option<u16>)> = slots.iter().map(|s| (s.core, s.tenant, s.trace.as_ref().unwrap().thread)).collect();
        assert_eq!(got, [(0, 0, Some(0)), (1, 0, Some(1))]);
        assert_eq!(slots[0].trace.as_ref().unwrap().sampled.as_ref().map(|r| r.scale), Some(4.0));
        // In a config file each thread needs its entry.
        let file = dir.join("threads.toml");
        let entry = |extra: &str| format!("[machine]\ncores = 1\n[[workloads]]\ntrace = \"{path}\"\n{extra}\n");
        std::fs::write(&file, entry("")).unwrap();
        let e = Config::load(&Sources { file: Some(file.clone()), ..Default::default() }).unwrap_err().to_string();
        assert!(e.starts_with("workloads[0]: trace") && e.contains("holds 2 threads (cores 0, 1): give one entry per thread with `thread = N`"), "{e}");
        std::fs::write(&file, entry("thread = 5")).unwrap();
        let e = Config::load(&Sources { file: Some(file.clone()), ..Default::default() }).unwrap_err().to_string();
        assert!(e.starts_with("workloads[0].thread: trace") && e.ends_with("has no thread 5 (its threads: 0, 1)"), "{e}");
        std::fs::write(&file, entry("thread = 1")).unwrap();
        let c = Config::load(&Sources { file: Some(file), ..Default::default() }).unwrap();
        assert_eq!(c.slots().unwrap()[0].trace.as_ref().unwrap().thread, Some(1));
    }
}
