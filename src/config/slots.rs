//! The workloads of a run, one slot per core ([`Config::slots`]): a `[workload]`
//! alone, or `[[workloads]]` entries (written by `--mix`, `--tenants` and `--trace`
//! too) with their core, tenant, kind, fast-tier share and trace, each checked and
//! named by its field when wrong.

use super::{deserialize, merge, Config};
use crate::machine::TenantKind;
use crate::trace::meta::SampledRun;
use crate::trace::Format;
use crate::workload::WorkloadConfig;
use anyhow::{anyhow, bail, Result};
use serde::Serialize;
use toml::{Table, Value};

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
    pub(crate) fn describe(&self) -> String {
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

impl Config {
    /// The workloads of the run, one per core. A `[workload]` alone runs on core 0,
    /// except `loaded-latency`, which runs on every core of the machine in one
    /// address space (core 0 probes, the others make traffic).
    pub(crate) fn slots(&self) -> Result<Vec<WorkloadSlot>> {
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
pub(super) fn tenant_entry(spec: &str) -> Result<Table> {
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
