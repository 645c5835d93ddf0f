//! What each core replays: the run's traces measured before the machine is built
//! (footprint, records, tenants) with the notes they call for, the feeds that hand a
//! core its references batch by batch, a trace's batches checked against the page
//! tables' reach and the run's tenants, and the first pass of a policy that requires
//! foresight.

use crate::config::{Config, WorkloadSlot};
use crate::machine::{Redirect, TenantKind};
use crate::policy::Policy;
use crate::progress::Progress;
use crate::trace::footprint::FootprintCheck;
use crate::trace::{Access, Source};
use anyhow::{bail, Result};

const BATCH: usize = 4096;

/// The tenants of a run and their kinds, from its workload slots; `at_least` more
/// may come from traces whose records name their tenant (those are processes).
pub(super) fn tenant_kinds(slots: &[WorkloadSlot], at_least: usize) -> Vec<TenantKind> {
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
    /// The pages the records touch against the trailer's count, when the run took
    /// its footprint from a native trailer.
    footprint: Option<FootprintCheck>,
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
        if let Some(f) = &mut self.footprint {
            f.add(buf);
        }
        Ok(())
    }
}

pub(super) struct CoreFeed {
    pub(super) source: Option<Box<dyn Source>>,
    pub(super) buf: Vec<Access>,
    pub(super) pos: usize,
    tenant: u16,
    /// Keep each record's own tenant (native traces that carry one).
    keep_tenant: bool,
    check: Option<TraceCheck>,
    /// Malformed lines the exhausted source skipped.
    pub(super) skipped: u64,
}

impl CoreFeed {
    /// Refills the buffer; false when the source is exhausted.
    pub(super) fn refill(&mut self, levels: u32) -> Result<bool> {
        let Some(src) = &mut self.source else { return Ok(false) };
        self.buf.clear();
        self.pos = 0;
        src.fill(&mut self.buf, BATCH)?;
        if self.buf.is_empty() {
            self.skipped = src.malformed_skipped();
            self.source = None;
            if let Some(f) = self.check.as_ref().and_then(|c| c.footprint.as_ref()) {
                f.finish()?;
            }
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
pub(super) struct SlotTrace {
    pub(super) facts: crate::trace::footprint::TraceFacts,
    opts: crate::trace::OpenOptions,
}

/// Measures every trace slot (footprint, records, tenants); a text trace's address
/// beyond page tables of `levels` levels is refused there, naming its line.
pub(super) fn measure_traces(slots: &[WorkloadSlot], levels: u32, progress: &Progress) -> Result<Vec<Option<SlotTrace>>> {
    slots
        .iter()
        .map(|s| {
            let Some(t) = &s.trace else { return Ok(None) };
            if t.path == "-" {
                bail!(
                    "--trace -: a run reads its traces twice (first to measure the footprint), and standard input cannot be read twice; save it to a file (inspect and convert read standard input)"
                );
            }
            let opts = crate::trace::OpenOptions { format: t.format, skip_malformed: t.skip_malformed, thread: t.thread, page_table_levels: Some(levels) };
            let facts = crate::trace::footprint::measure(&t.path, &opts, t.refs, progress)?;
            Ok(Some(SlotTrace { facts, opts }))
        })
        .collect()
}

/// The run's footprint: every workload's, and every trace's once per address space,
/// since cores replaying the same records in one tenant (`--trace T --trace T
/// --tenant 0 --tenant 0`) touch the same pages there; traces whose records name
/// their tenants fill those address spaces, whatever the slot's. Returns it with a
/// note for each trace counted once for several cores.
pub(super) fn run_footprint(slots: &[WorkloadSlot], traces: &[Option<SlotTrace>]) -> (u64, Vec<String>) {
    let mut bytes = 0;
    // Per replay (file, records, thread, the tenant it fills): its cores.
    let mut replays: Vec<((&str, Option<u64>, Option<u16>, Option<u16>), Vec<usize>)> = Vec::new();
    for (s, t) in slots.iter().zip(traces) {
        let (Some(tr), Some(t)) = (&s.trace, t) else {
            bytes += s.footprint_bytes;
            continue;
        };
        let key = (tr.path.as_str(), tr.refs, tr.thread, (!t.facts.record_tenants).then_some(s.tenant));
        match replays.iter_mut().find(|r| r.0 == key) {
            Some(r) => r.1.push(s.core),
            None => {
                bytes += t.facts.footprint_bytes();
                replays.push((key, vec![s.core]));
            }
        }
    }
    let notes = replays
        .iter()
        .filter(|r| r.1.len() > 1)
        .map(|((path, _, _, tenant), cores)| {
            let cores: Vec<String> = cores.iter().map(|c| c.to_string()).collect();
            let space = tenant.map_or("the tenants its records name".to_string(), |t| format!("tenant {t}"));
            format!("trace {path} is replayed by cores {} in one address space ({space}): its pages count once in the footprint", cores.join(", "))
        })
        .collect();
    (bytes, notes)
}

/// A note for each trace shorter than the references asked of it (`--refs N`, or
/// `refs` of its entry): its core replays it once, to its end, and no further.
pub(super) fn short_traces(slots: &[WorkloadSlot], traces: &[Option<SlotTrace>]) -> Vec<String> {
    let mut notes = Vec::new();
    for (s, t) in slots.iter().zip(traces) {
        let (Some(tr), Some(t)) = (&s.trace, t) else { continue };
        let Some(asked) = tr.refs.filter(|&n| n > t.facts.records) else { continue };
        let thread = tr.thread.map_or(String::new(), |k| format!(" (thread {k})"));
        notes.push(format!(
            "--refs {asked}: trace {}{thread} holds only {} references; core {} replayed it once, to its end, and stopped there (a trace is not repeated)",
            tr.path, t.facts.records, s.core
        ));
    }
    notes
}


/// Opens every slot's source on its core, as a run reads it: a trace through its
/// reader limited to the slot's references and checked batch by batch, a workload
/// from its generator. Returns the feeds, one per core, and the references they will
/// make when known (0 for the sources that do not know).
pub(super) fn open_feeds(cfg: &Config, slots: &[WorkloadSlot], traces: &[Option<SlotTrace>], tenants: u16) -> Result<(Vec<CoreFeed>, u64)> {
    let mut feeds: Vec<CoreFeed> = (0..cfg.machine.cores)
        .map(|_| CoreFeed { source: None, buf: Vec::with_capacity(BATCH), pos: 0, tenant: 0, keep_tenant: false, check: None, skipped: 0 })
        .collect();
    let va_limit = 1u64 << cfg.machine.page_table.va_bits();
    let mut total_refs = 0u64;
    for (s, t) in slots.iter().zip(traces) {
        let feed = &mut feeds[s.core];
        match (&s.trace, t) {
            (Some(slot), Some(t)) => {
                let opened = crate::trace::open(&slot.path, &t.opts)?;
                total_refs += t.facts.records;
                feed.source = Some(crate::trace::take(opened.source, slot.refs));
                feed.keep_tenant = opened.record_tenants;
                let footprint = t.facts.from_trailer.then(|| FootprintCheck::new(&slot.path, &t.facts));
                feed.check = Some(TraceCheck { name: slot.path.clone(), va_limit, tenants, consumed: 0, footprint });
            }
            _ => {
                let src = crate::workload::build(&s.workload, s.core as u16, s.tenant)?;
                total_refs += src.len_hint().unwrap_or(0);
                feed.source = Some(src);
            }
        }
        feed.tenant = s.tenant;
    }
    Ok((feeds, total_refs))
}

/// The first pass of a policy that requires foresight: every core's references, read
/// from sources opened a second time exactly as the run's ([`open_feeds`]), go to
/// `Policy::foresee` batch by batch, then `Policy::foreseen`. Generators are
/// deterministic (their seed, core and tenant fix the sequence), and traces are
/// files (`--trace -` is refused before this), so the pass sees what the run will.
pub(super) fn foresight<R: Redirect, P: Policy<R>>(policy: &mut P, cfg: &Config, slots: &[WorkloadSlot], traces: &[Option<SlotTrace>], tenants: u16) -> Result<()> {
    let levels = cfg.machine.page_table.levels;
    let (mut feeds, _) = open_feeds(cfg, slots, traces, tenants)?;
    for (core, feed) in feeds.iter_mut().enumerate() {
        while feed.refill(levels)? {
            policy.foresee(core, &feed.buf);
        }
    }
    policy.foreseen()
}
