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
use crate::policy::Policy;
use crate::trace::Format;
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
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig { epoch_cycles: 100_000_000, check_invariants: false }
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
    /// The synthetic workload (unused when `trace` is set).
    pub workload: WorkloadConfig,
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
    ("optane", "HMM-V Table 2: DRAM + Optane PMem (310/94 ns)", include_str!("../../presets/optane.toml")),
    ("thermostat", "Thermostat §4: DRAM + ~1 µs slow memory, 2 MiB huge pages", include_str!("../../presets/thermostat.toml")),
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
    /// `key=value` overrides, applied in order.
    pub sets: Vec<String>,
    /// One trace per core (`--trace`), each its own tenant unless `tenants` says otherwise.
    pub traces: Vec<String>,
    /// Tenant of each trace (`--tenant`), in the order of `traces`; empty for one
    /// tenant per trace.
    pub tenants: Vec<u16>,
    /// Format of every trace (`--format`), or `None` to detect each.
    pub trace_format: Option<String>,
    /// Skip malformed trace lines (`--skip-malformed`).
    pub skip_malformed: bool,
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

impl Config {
    /// Builds the configuration from its layers and validates it.
    pub fn load(src: &Sources) -> Result<Config> {
        // Start from the materialised defaults, so that a partial table (say, a slow
        // tier with only its latencies) keeps that component's own defaults, and so
        // that list entries can be addressed by index in `--set`.
        let mut root: Table = Table::try_from(Config::default()).expect("defaults serialise");
        if let Some(name) = &src.preset {
            let (_, _, text) = PRESETS.iter().find(|p| p.0 == name).ok_or_else(|| {
                anyhow!("--preset: unknown preset `{name}` (known: {})", PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", "))
            })?;
            merge(&mut root, toml::from_str(text).with_context(|| format!("built-in preset {name}"))?);
        }
        if let Some(path) = &src.file {
            let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
            let t: Table = toml::from_str(&text).map_err(|e| anyhow!("{}: {}", path.display(), one_line(&e.to_string())))?;
            merge(&mut root, t);
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
        if !src.traces.is_empty() {
            if !src.mix.is_empty() {
                bail!("--trace and --mix cannot be combined: each gives every core its workload");
            }
            if !src.tenants.is_empty() && src.tenants.len() != src.traces.len() {
                bail!("--tenant: give one per --trace ({} traces, {} tenants)", src.traces.len(), src.tenants.len());
            }
            let mut entries = Vec::new();
            for (i, path) in src.traces.iter().enumerate() {
                let mut t = Table::new();
                t.insert("trace".into(), Value::String(path.clone()));
                if let Some(f) = &src.trace_format {
                    t.insert("format".into(), Value::String(f.clone()));
                }
                if src.skip_malformed {
                    t.insert("skip_malformed".into(), Value::Boolean(true));
                }
                let tenant = src.tenants.get(i).copied().unwrap_or(i as u16);
                t.insert("tenant".into(), Value::Integer(tenant as i64));
                entries.push(Value::Table(t));
            }
            root.insert("workloads".into(), Value::Array(entries));
            set_path(&mut root, "machine.cores", Value::Integer(src.traces.len() as i64))?;
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
        for key in self.policy.params.keys() {
            if !POLICIES.iter().any(|p| p.0 == key) {
                bail!("policy.{key}: unknown policy section (known policies: {})", POLICIES.iter().map(|p| p.0).collect::<Vec<_>>().join(", "));
            }
            // Every section must be valid, not only the chosen policy's: a typo in a
            // section meant for a later `compare` must not pass silently.
            with_policy(key, CheckParams(self))??;
        }
        with_policy(&self.policy.name, CheckParams(self))??;
        for slot in self.slots()? {
            if slot.trace.is_none() {
                slot.workload.validate()?;
            }
        }
        Ok(())
    }

    /// The chosen policy's parameters, from `[policy.<name>]` over its defaults.
    pub fn policy_config<P: Policy>(&self, name: &str) -> Result<P::Config> {
        match self.policy.params.get(name) {
            None => Ok(P::Config::default()),
            Some(v) => deserialize(v.clone(), &format!("policy.{name}")),
        }
    }

    /// The workloads of the run, one per core.
    pub fn slots(&self) -> Result<Vec<WorkloadSlot>> {
        if self.workloads.is_empty() {
            return Ok(vec![WorkloadSlot { core: 0, tenant: 0, kind: self.tenant_kind, workload: self.workload.clone(), trace: None }]);
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
            let trace = match t.remove("trace") {
                None => None,
                Some(Value::String(path)) => Some(TraceSlot { path, format: None, skip_malformed: false }),
                Some(v) => bail!("{field}.trace: expected a file path, got {v}"),
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
            let trace = match trace {
                Some(tr) => Some(TraceSlot { format, skip_malformed, ..tr }),
                None if format.is_some() || skip_malformed => bail!("{field}: `format` and `skip_malformed` need a `trace` file"),
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
            let mut w = base.clone();
            merge(&mut w, t);
            let workload: WorkloadConfig = deserialize(Value::Table(w), &field)?;
            slots.push(WorkloadSlot { core, tenant, kind, workload, trace });
        }
        let tenants = slots.iter().map(|s| s.tenant).max().unwrap_or(0) as usize + 1;
        for t in 0..tenants as u16 {
            if !slots.iter().any(|s| s.tenant == t) {
                bail!("workloads: tenant numbers must be 0, 1, 2, … without gaps; tenant {t} has no workload");
            }
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
        Ok(toml::to_string(&t)?)
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

struct CheckParams<'a>(&'a Config);

impl PolicyVisitor for CheckParams<'_> {
    type Output = Result<()>;
    fn visit<P: Policy>(self, name: &'static str) -> Result<()> {
        self.0.policy_config::<P>(name).map(|_| ())
    }
}

struct PolicyParams<'a>(&'a Config);

impl PolicyVisitor for PolicyParams<'_> {
    type Output = Result<Value>;
    fn visit<P: Policy>(self, name: &'static str) -> Result<Value> {
        Ok(Value::try_from(self.0.policy_config::<P>(name)?)?)
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
        let dir = std::env::temp_dir().join(format!("tiersim-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
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
        let dir = std::env::temp_dir().join(format!("tiersim-cfg-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
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
}
