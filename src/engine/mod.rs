//! The engine: drives every core's references through the machine, interleaving
//! cores by their clocks (the core furthest behind goes next, as ChampSim and
//! Ramulator do), calls the policy's hooks and epochs, and collects the report.
//!
//! `run::<P>` is generic over the policy: hooks inline into the per-reference loop.
//! Sources are `Box<dyn Source>` but are called once per batch of references.
//!
//! A core replays either a synthetic workload or a trace. Before the machine is
//! built, every trace is measured (its native trailer, or one streaming pass) for
//! its footprint, since tier capacities may be shares of it, and for the tenants its
//! records name. Trace records come from outside, so each batch is checked once,
//! by a maximum over it, against the page tables' reach and the run's tenants; the
//! per-reference loop itself does no checking.

use crate::config::{Config, WorkloadSlot};
use crate::machine::{Machine, MachineInfo, TenantKind};
use crate::mechanism::Mechanisms;
use crate::policy::registry::{with_policy, PolicyVisitor};
use crate::policy::{Policy, PolicyReport};
use crate::report::{EpochRecord, Report};
use crate::trace::{Access, Source};
use anyhow::{bail, Result};
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// An error in the simulated run itself — the machine ran out of memory, `--verify`
/// caught a stale read, an invariant broke — as opposed to bad input. The CLI exits
/// with 1 for these and 2 for everything else.
#[derive(Debug)]
pub struct RunFailed(pub String);

impl std::fmt::Display for RunFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RunFailed {}

fn failed(msg: String) -> anyhow::Error {
    anyhow::Error::new(RunFailed(msg))
}

/// How to run: what the CLI adds to the configuration.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Shadow-memory verification of every read (and invariant checks per epoch).
    pub verify: bool,
    /// Show a progress bar (only used when stdout and stderr are terminals).
    pub progress: bool,
}

const BATCH: usize = 4096;

/// Runs the configured policy on the configured workloads.
pub fn run(cfg: &Config, opts: &RunOptions) -> Result<Report> {
    with_policy(&cfg.policy.name, Runner { cfg, opts })?
}

/// Runs policy `name` with the rest of `cfg` unchanged.
pub fn run_policy(cfg: &Config, name: &str, opts: &RunOptions) -> Result<Report> {
    let mut c = cfg.clone();
    c.policy.name = name.to_string();
    run(&c, opts)
}

struct Runner<'a> {
    cfg: &'a Config,
    opts: &'a RunOptions,
}

impl PolicyVisitor for Runner<'_> {
    type Output = Result<Report>;
    fn visit<P: Policy>(self, name: &'static str) -> Result<Report> {
        run_with::<P>(self.cfg, name, self.opts)
    }
}

/// The tenants of a run and their kinds, from its workload slots; `at_least` more
/// may come from traces whose records name their tenant (those are processes).
fn tenant_kinds(slots: &[WorkloadSlot], at_least: usize) -> Vec<TenantKind> {
    let n = slots.iter().map(|s| s.tenant as usize + 1).max().unwrap_or(1).max(at_least);
    (0..n).map(|t| slots.iter().find(|s| s.tenant as usize == t).map_or(TenantKind::Process, |s| s.kind)).collect()
}

/// What the engine checks in each batch of a trace: records come from outside, so
/// their addresses must fit the machine's page tables and their tenants must exist.
struct TraceCheck {
    name: String,
    /// One past the highest virtual address the page tables map.
    va_limit: u64,
    /// Number of tenants of the run.
    tenants: u16,
    /// Records the trace produced before this batch.
    consumed: u64,
}

impl TraceCheck {
    /// Checks one batch: a maximum over it, then a search only when it fails.
    fn batch(&mut self, buf: &[Access], levels: u32) -> Result<()> {
        let (max_addr, max_tenant) = buf.iter().fold((0, 0), |(a, t), r| (a.max(r.vaddr), t.max(r.tenant)));
        if max_addr >= self.va_limit || max_tenant >= self.tenants {
            for (i, r) in buf.iter().enumerate() {
                let n = self.consumed + i as u64;
                if r.vaddr >= self.va_limit {
                    bail!(
                        "{}: record {n}: address {:#x} is beyond the {}-bit virtual address space of {levels}-level page tables; rerun with --set machine.page_table.levels=5",
                        self.name,
                        r.vaddr,
                        self.va_limit.trailing_zeros()
                    );
                }
                if r.tenant >= self.tenants {
                    bail!(
                        "{}: record {n}: tenant {} does not exist (the run has {} tenants, 0 to {})",
                        self.name,
                        r.tenant,
                        self.tenants,
                        self.tenants - 1
                    );
                }
            }
        }
        self.consumed += buf.len() as u64;
        Ok(())
    }
}

struct CoreFeed {
    source: Option<Box<dyn Source>>,
    buf: Vec<Access>,
    pos: usize,
    tenant: u16,
    /// Keep each record's own tenant (native traces that carry one).
    keep_tenant: bool,
    check: Option<TraceCheck>,
    /// Malformed lines the exhausted source skipped.
    skipped: u64,
}

impl CoreFeed {
    /// Refills the buffer; false when the source is exhausted.
    fn refill(&mut self, levels: u32) -> Result<bool> {
        let Some(src) = &mut self.source else { return Ok(false) };
        self.buf.clear();
        self.pos = 0;
        src.fill(&mut self.buf, BATCH)?;
        if self.buf.is_empty() {
            self.skipped = src.malformed_skipped();
            self.source = None;
            return Ok(false);
        }
        if !self.keep_tenant {
            for a in &mut self.buf {
                a.tenant = self.tenant;
            }
        }
        if let Some(c) = &mut self.check {
            c.batch(&self.buf, levels)?;
        }
        Ok(true)
    }
}

/// What the engine learnt about the trace of each slot before the run.
struct SlotTrace {
    facts: crate::trace::footprint::TraceFacts,
    opts: crate::trace::OpenOptions,
}

/// Measures every trace slot (footprint, records, tenants).
fn measure_traces(slots: &[WorkloadSlot]) -> Result<Vec<Option<SlotTrace>>> {
    slots
        .iter()
        .map(|s| {
            let Some(t) = &s.trace else { return Ok(None) };
            if t.path == "-" {
                bail!(
                    "--trace -: a run reads its traces twice (first to measure the footprint), and standard input cannot be read twice; save it to a file (inspect and convert read standard input)"
                );
            }
            let opts = crate::trace::OpenOptions { format: t.format, skip_malformed: t.skip_malformed, thread: t.thread };
            let facts = crate::trace::footprint::measure(&t.path, &opts)?;
            Ok(Some(SlotTrace { facts, opts }))
        })
        .collect()
}

fn run_with<P: Policy>(cfg: &Config, name: &str, opts: &RunOptions) -> Result<Report> {
    let slots = cfg.slots()?;
    let traces = measure_traces(&slots)?;
    let footprint: u64 = slots
        .iter()
        .zip(&traces)
        .map(|(s, t)| t.as_ref().map_or(s.footprint_bytes, |t| t.facts.footprint_bytes()))
        .sum();
    let record_tenants = traces
        .iter()
        .flatten()
        .filter(|t| t.facts.record_tenants)
        .flat_map(|t| t.facts.tenants.iter().map(|p| p.tenant as usize + 1))
        .max()
        .unwrap_or(0);
    let kinds = tenant_kinds(&slots, record_tenants);
    let mut feeds: Vec<CoreFeed> = (0..cfg.machine.cores)
        .map(|_| CoreFeed { source: None, buf: Vec::with_capacity(BATCH), pos: 0, tenant: 0, keep_tenant: false, check: None, skipped: 0 })
        .collect();
    let levels = cfg.machine.page_table.levels;
    let va_limit = 1u64 << cfg.machine.page_table.va_bits();
    let mut total_refs = 0u64;
    for (s, t) in slots.iter().zip(&traces) {
        let feed = &mut feeds[s.core];
        match (&s.trace, t) {
            (Some(slot), Some(t)) => {
                let opened = crate::trace::open(&slot.path, &t.opts)?;
                total_refs += t.facts.records;
                feed.source = Some(opened.source);
                feed.keep_tenant = opened.record_tenants;
                feed.check = Some(TraceCheck { name: slot.path.clone(), va_limit, tenants: kinds.len() as u16, consumed: 0 });
            }
            _ => {
                let src = crate::workload::build(&s.workload, s.core as u16, s.tenant)?;
                total_refs += src.len_hint().unwrap_or(0);
                feed.source = Some(src);
            }
        }
        feed.tenant = s.tenant;
    }
    let info = MachineInfo::planned(&cfg.machine, footprint, total_refs);
    let mut policy = P::new(cfg.policy_config::<P>(name)?, &info)?;
    // A policy defined for one page size runs with it, and the report says so.
    let with_thp;
    let cfg = match policy.thp() {
        Some(thp) if thp != cfg.machine.page_table.thp => {
            let mut c = cfg.clone();
            c.machine.page_table.thp = thp;
            with_thp = c;
            &with_thp
        }
        _ => cfg,
    };
    let mut machine = Machine::new(&cfg.machine, &kinds, footprint, policy.placement(), policy.fast_tier_unlimited(), opts.verify)?;
    if let Some(spec) = policy.copies() {
        machine.enable_copies(&spec).map_err(|e| anyhow::anyhow!("policy {name}: {e}"))?;
    }
    machine.total_refs = total_refs;
    // A tenant's initial share of the fast tier becomes its fast-tier quota (HMM-V's
    // per-VM DRAM); policies may change it at run time.
    let fast_frames = machine.alloc.frames(0);
    for s in &slots {
        if let Some(share) = s.fast_share {
            machine.tenants[s.tenant as usize].fast_quota = Some((share * fast_frames as f64) as u64);
        }
    }
    let check = cfg.engine.check_invariants || opts.verify;
    let epoch = cfg.engine.epoch_cycles;
    let mut next_epoch = epoch;
    let mut epochs = Vec::new();
    let mut last = EpochRecord::default();
    let mut progress = Progress::new(opts.progress, total_refs);
    let started = Instant::now();
    let mut done_refs = 0u64;

    let mut active: Vec<usize> = Vec::new();
    for (core, f) in feeds.iter_mut().enumerate() {
        if f.refill(levels)? {
            active.push(core);
        }
    }
    while !active.is_empty() {
        // The core furthest behind runs until it passes the next one (or the epoch end).
        let (i, &core) = active.iter().enumerate().min_by_key(|&(_, &c)| (machine.cores[c].clock, c)).expect("non-empty");
        let next_other = active.iter().filter(|&&c| c != core).map(|&c| machine.cores[c].clock).min().unwrap_or(u64::MAX);
        let limit = next_other.min(next_epoch);
        let feed = &mut feeds[core];
        let mut exhausted = false;
        loop {
            if feed.pos == feed.buf.len() && !feed.refill(levels)? {
                exhausted = true;
                break;
            }
            let a = feed.buf[feed.pos];
            feed.pos += 1;
            // Host prefetch only (nothing simulated): the leaf PTE of the reference four
            // places ahead, so its host cache miss overlaps this reference's work.
            if let Some(far) = feed.buf.get(feed.pos + 3) {
                machine.prefetch_far(core, far);
            }
            let out = machine.access(core, &a, &mut policy);
            policy.on_reference(&a, &out, &mut Mechanisms::new(&mut machine, core));
            done_refs += 1;
            if machine.cores[core].clock >= limit {
                break;
            }
        }
        if let Some(e) = machine.error.take() {
            return Err(failed(e));
        }
        if exhausted {
            active.swap_remove(i);
        }
        loop {
            let behind = active.iter().map(|&c| (machine.cores[c].clock, c)).min();
            let Some((_, c)) = behind.filter(|&(clock, _)| clock >= next_epoch) else { break };
            policy.on_epoch(next_epoch, &mut Mechanisms::new(&mut machine, c));
            if let Some(e) = machine.error.take() {
                return Err(failed(e));
            }
            if check {
                if let Err(e) = machine.check_invariants() {
                    return Err(failed(format!("invariant broken at cycle {next_epoch} (policy {name}): {e}")));
                }
            }
            epochs.push(EpochRecord::take(&machine, next_epoch, &mut last));
            next_epoch += epoch;
        }
        progress.update(done_refs);
    }
    progress.finish();
    let wall = started.elapsed();
    if check {
        if let Err(e) = machine.check_invariants() {
            return Err(failed(format!("invariant broken at the end of the run (policy {name}): {e}")));
        }
    }
    let end = machine.now();
    if end > last.end_cycle {
        epochs.push(EpochRecord::take(&machine, end, &mut last));
    }
    let mut policy_report = PolicyReport::new();
    policy.report(&mut policy_report);
    let mut report = Report::build(cfg, name, &slots, &machine, epochs, policy_report, wall, opts.verify);
    report.malformed_lines_skipped = feeds.iter().map(|f| f.skipped).sum();
    Ok(report)
}

/// A one-line progress bar on stderr, for runs longer than a second, only when both
/// stdout and stderr are terminals.
struct Progress {
    enabled: bool,
    total: u64,
    start: Instant,
    last_draw: Instant,
    checks: u32,
    drawn: bool,
}

impl Progress {
    fn new(wanted: bool, total: u64) -> Progress {
        let now = Instant::now();
        Progress {
            enabled: wanted && std::io::stdout().is_terminal() && std::io::stderr().is_terminal(),
            total,
            start: now,
            last_draw: now,
            checks: 0,
            drawn: false,
        }
    }

    #[inline]
    fn update(&mut self, done: u64) {
        if !self.enabled {
            return;
        }
        self.checks += 1;
        if !self.checks.is_multiple_of(64) {
            return;
        }
        let now = Instant::now();
        if now - self.start < Duration::from_secs(1) || now - self.last_draw < Duration::from_millis(200) {
            return;
        }
        self.last_draw = now;
        self.drawn = true;
        let rate = done as f64 / (now - self.start).as_secs_f64();
        let frac = if self.total > 0 { (done as f64 / self.total as f64).min(1.0) } else { 0.0 };
        let width = 30;
        let filled = (frac * width as f64) as usize;
        let eta = if rate > 0.0 && self.total > done { (self.total - done) as f64 / rate } else { 0.0 };
        eprint!(
            "\r[{}{}] {:5.1}%  {:.1} M refs/s  ETA {:.0}s ",
            "#".repeat(filled),
            " ".repeat(width - filled),
            frac * 100.0,
            rate / 1e6,
            eta
        );
        let _ = std::io::stderr().flush();
    }

    fn finish(&self) {
        if self.drawn {
            eprint!("\r{}\r", " ".repeat(72));
        }
    }
}
