//! kstaled-style idle-page detection (Thermostat §2.1, Fig. 1): the baseline that
//! Thermostat argues against.
//!
//! A background kernel thread scans every page's Accessed bit at a fixed interval and
//! clears it (flushing the translations it cleared, which is what makes frequent
//! scanning expensive). A page whose bit stayed clear for `idle_s` worth of scans
//! moves to the slow tier; there it is poisoned, and the first access to it faults and
//! brings it back (in the fault handler, on the faulting core, as NUMA hinting faults
//! do). The scheme sees only "touched or not": it cannot estimate access rates, so it
//! has no way to bound the slowdown — Thermostat's point.
//!
//! Built on the monitoring layer: a [`Pacer`] times the scans (a scan that comes due
//! while the thread still scans or demotes waits for it), a [`Tracker`] keeps each
//! page's idle age. The scan and the demotions are jobs of one kernel thread, run
//! over simulated time beside the application.

use super::{Policy, Requirements};
use crate::machine::{FaultEvent, FaultKind, MachineInfo, Observer, PageRef, RefOutcome, ScanEvent, TierId};
use crate::mechanism::{Job, JobDone, Mechanisms, Op, ScanMode, Scope, ThreadId, ThreadKind};
use crate::monitor::{Pacer, Period, Tracker};
use crate::params;
use crate::trace::Access;
use serde_json::json;

params! {
    /// Parameters of the kstaled baseline.
    pub struct KstaledConfig {
        /// Seconds between Accessed-bit scans (an assumption; kstaled's scan period is
        /// configurable and the paper does not give the one behind Fig. 1).
        pub scan_interval_s: f64 = 1.0,
        /// A page idle this long goes to slow memory (Fig. 1: 10 s).
        pub idle_s: f64 = 10.0,
        /// If above 0, ignore `scan_interval_s` and make this many scans over the run,
        /// at equal reference counts (runs are far shorter than tens of seconds).
        pub scans_per_run: u32 = 0,
    }
}

const THREAD: ThreadId = ThreadId(0);
const SCAN: u64 = 0;
const DEMOTE: u64 = 1;

pub struct Kstaled {
    /// Scans a page must stay idle before it is demoted.
    idle_scans: u32,
    pacer: Pacer,
    tracker: Tracker,
    /// Fast pages the running scan found idle long enough.
    idle: Vec<PageRef>,
    /// Slow pages that faulted and go back to the fast tier at the next reference.
    promote: Vec<PageRef>,
    demoted: u64,
    promoted: u64,
}

impl Observer for Kstaled {
    fn on_fault(&mut self, e: &FaultEvent) {
        if e.kind == FaultKind::Poison {
            self.promote.push(PageRef::new(e.tenant, e.addr));
        }
    }

    fn on_scan(&mut self, e: &ScanEvent) {
        self.tracker.record_scan(&e.page);
        if e.page.tier == TierId::FAST && self.tracker.idle_scans(&e.page) >= self.idle_scans {
            self.idle.push(e.page.at());
        }
    }
}

impl Policy for Kstaled {
    type Config = KstaledConfig;

    fn requirements(_: &KstaledConfig) -> Requirements<()> {
        Requirements { threads: vec![ThreadKind::Kernel], ..Requirements::default() }
    }

    fn new(cfg: KstaledConfig, m: &MachineInfo) -> anyhow::Result<Self> {
        if !(cfg.idle_s.is_finite() && cfg.idle_s >= cfg.scan_interval_s) {
            anyhow::bail!("policy.kstaled.idle_s: must be at least scan_interval_s, got {}", cfg.idle_s);
        }
        if !m.has(TierId::SLOW) {
            anyhow::bail!("policy.kstaled: needs a slow tier");
        }
        let idle_scans = (cfg.idle_s / cfg.scan_interval_s).round().clamp(1.0, 255.0) as u32;
        let period = Period::from_config(cfg.scan_interval_s, cfg.scans_per_run);
        let pacer = Pacer::new(period, m, "policy.kstaled.scan_interval_s").map_err(anyhow::Error::msg)?;
        Ok(Kstaled { idle_scans, pacer, tracker: Tracker::new(), idle: Vec::new(), promote: Vec::new(), demoted: 0, promoted: 0 })
    }

    #[inline]
    fn on_reference(&mut self, _a: &Access, _o: &RefOutcome, mech: &mut Mechanisms) {
        if !self.promote.is_empty() {
            // The hint fault's handler migrates the page back (synchronously, on the
            // faulting core, as NUMA hinting faults do).
            for page in std::mem::take(&mut self.promote) {
                if mech.migrate(page, TierId::FAST).is_ok() {
                    let _ = mech.unpoison(page);
                    self.promoted += 1;
                }
            }
        }
        // A scan per period, once the thread has finished the last one and its
        // demotions.
        self.pacer.submit_when_due(mech, THREAD, || {
            let mut job = Job::new(SCAN);
            job.push(Op::Scan { scope: Scope::All, mode: ScanMode::Clear });
            job
        });
    }

    fn on_job_done(&mut self, done: &JobDone, mech: &mut Mechanisms) {
        match done.tag {
            SCAN => {
                let mut job = Job::new(DEMOTE);
                for page in std::mem::take(&mut self.idle) {
                    job.push(Op::Migrate { page, to: TierId::SLOW }).then(Op::Poison { page });
                }
                if !job.is_empty() {
                    let _ = mech.submit(THREAD, job);
                }
            }
            _ => self.demoted += done.results.iter().step_by(2).filter(|r| r.is_ok()).count() as u64,
        }
    }

    fn report(&self, out: &mut super::PolicyReport) {
        out.insert("scans".into(), json!(self.pacer.periods()));
        out.insert("idle_scans_to_demote".into(), json!(self.idle_scans));
        out.insert("demoted_pages".into(), json!(self.demoted));
        out.insert("promoted_pages".into(), json!(self.promoted));
        let pacing = self.pacer.report("the scan interval");
        if let Some(note) = &pacing.note {
            out.insert("note".into(), json!(note));
        }
        out.insert("pacing".into(), json!(pacing));
    }
}
