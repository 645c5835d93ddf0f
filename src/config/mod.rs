//! The run configuration: one TOML tree that mirrors the components —
//! `[machine]` (with `[machine.tlb]`, `[[machine.caches]]`, `[machine.page_table]`,
//! `[machine.tiers.fast]`, `[machine.tiers.slow]`, `[machine.costs]`), `[workload]`
//! (or `[[workloads]]`, one per core), `[policy]` with `name` and one
//! `[policy.<name>]` table of that policy's parameters, and `[engine]`.
//!
//! Layers, later ones winning: built-in defaults → preset → config file →
//! `--set key=value` overrides. Every unknown key, unparsable value and impossible
//! setting is an error naming the dotted path of the field.
//!
//! Where things live: this file holds the tree ([`Config`]), its layers (presets,
//! file, options, `--set`) and the policy sections; `engine.rs` the `[engine]` table
//! and its modes; `slots.rs` the run's workloads, one slot per core, from
//! `[workload]` or `[[workloads]]`; `tests.rs` the unit tests.

use crate::machine::{MachineConfig, Redirect, TenantKind};
use crate::policy::registry::{with_policy, PolicyVisitor, POLICIES};
use crate::policy::Policy;
use crate::trace::{Format, OpenOptions};
use crate::workload::WorkloadConfig;
use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use toml::{Table, Value};

mod engine;
mod slots;
#[cfg(test)]
mod tests;

pub use engine::{EngineConfig, EpochsConfig, FastForward, Mode, SampledConfig};
pub use slots::{TraceSlot, WorkloadSlot};
use slots::tenant_entry;

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
    pub(crate) fn validate(&self) -> Result<()> {
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
    pub(crate) fn policy_config<R: Redirect, P: Policy<R>>(&self, name: &str) -> Result<P::Config> {
        match self.policy.params.get(name) {
            None => Ok(P::Config::default()),
            Some(v) => deserialize(v.clone(), &format!("policy.{name}")),
        }
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
