//! kstaled-style idle-page detection (Thermostat §2.1, Fig. 1): the baseline that
//! Thermostat argues against.
//!
//! A background thread scans every page's Accessed bit at a fixed interval and clears
//! it (flushing the translations it cleared, which is what makes frequent scanning
//! expensive). A page whose bit stayed clear for `idle_s` worth of scans moves to the
//! slow tier; there it is poisoned, and the first access to it faults and brings it
//! back. The scheme sees only "touched or not": it cannot estimate access rates, so
//! it has no way to bound the slowdown — Thermostat's point.

use super::Policy;
use crate::machine::{FaultEvent, FaultKind, MachineInfo, Observer, RefOutcome};
use crate::mechanism::Mechanisms;
use crate::params;
use crate::trace::Access;
use serde_json::json;
use std::collections::HashMap;

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

pub struct Kstaled {
    cfg: KstaledConfig,
    /// Scans a page must stay idle before it is demoted.
    idle_scans: u32,
    scan_refs: u64,
    scan_cycles: u64,
    refs: u64,
    next_check: u64,
    last_scan: u64,
    /// Consecutive idle scans per page (tenant, managed address of the page).
    idle: HashMap<(u16, u64), u32>,
    /// Slow pages that faulted and go back to the fast tier at the next reference.
    promote: Vec<(u16, u64)>,
    demoted: u64,
    promoted: u64,
    scans: u64,
}

impl Observer for Kstaled {
    fn on_fault(&mut self, e: &FaultEvent) {
        if e.kind == FaultKind::Poison {
            self.promote.push((e.tenant, e.addr));
        }
    }
}

impl Kstaled {
    fn scan(&mut self, mech: &mut Mechanisms) {
        self.scans += 1;
        let mut demote = Vec::new();
        for t in 0..mech.tenants() as u16 {
            let idle = &mut self.idle;
            let limit = self.idle_scans;
            mech.scan(t, 0, u64::MAX, true, |p| {
                let n = idle.entry((t, p.addr)).or_insert(0);
                *n = if p.accessed { 0 } else { *n + 1 };
                if *n >= limit && p.tier == 0 {
                    demote.push((t, p.addr));
                }
            });
        }
        for (t, addr) in demote {
            if mech.migrate(t, addr, 1).is_ok() {
                let _ = mech.poison(t, addr);
                self.demoted += 1;
            }
        }
    }
}

impl Policy for Kstaled {
    type Config = KstaledConfig;

    fn new(cfg: KstaledConfig, m: &MachineInfo) -> anyhow::Result<Self> {
        if !(cfg.scan_interval_s.is_finite() && cfg.scan_interval_s > 0.0) {
            anyhow::bail!("policy.kstaled.scan_interval_s: must be positive, got {}", cfg.scan_interval_s);
        }
        if !(cfg.idle_s.is_finite() && cfg.idle_s >= cfg.scan_interval_s) {
            anyhow::bail!("policy.kstaled.idle_s: must be at least scan_interval_s, got {}", cfg.idle_s);
        }
        if m.tier_frames.len() < 2 {
            anyhow::bail!("policy.kstaled: needs a slow tier");
        }
        let idle_scans = (cfg.idle_s / cfg.scan_interval_s).round().max(1.0) as u32;
        let scan_refs = if cfg.scans_per_run > 0 { (m.total_refs / cfg.scans_per_run as u64).max(1) } else { 0 };
        Ok(Kstaled {
            idle_scans,
            scan_refs,
            scan_cycles: (cfg.scan_interval_s * m.freq_ghz * 1e9) as u64,
            refs: 0,
            next_check: if scan_refs > 0 { scan_refs } else { 1024 },
            last_scan: 0,
            idle: HashMap::new(),
            promote: Vec::new(),
            demoted: 0,
            promoted: 0,
            scans: 0,
            cfg,
        })
    }

    #[inline]
    fn on_reference(&mut self, _a: &Access, _o: &RefOutcome, mech: &mut Mechanisms) {
        self.refs += 1;
        if !self.promote.is_empty() {
            // The hint fault's handler migrates the page back (synchronously, on the
            // faulting core, as NUMA hinting faults do).
            for (t, addr) in std::mem::take(&mut self.promote) {
                if mech.migrate(t, addr, 0).is_ok() {
                    let _ = mech.unpoison(t, addr);
                    self.idle.insert((t, addr), 0);
                    self.promoted += 1;
                }
            }
        }
        if self.refs < self.next_check {
            return;
        }
        let now = mech.now();
        if mech.background_busy() {
            // The scanner thread has not finished its previous scan.
            self.next_check = self.refs + 1024;
            return;
        }
        if self.scan_refs > 0 || now >= self.last_scan + self.scan_cycles {
            self.last_scan = now;
            self.scan(&mut mech.in_background());
        }
        self.next_check = self.refs + if self.scan_refs > 0 { self.scan_refs } else { 1024 };
    }

    fn report(&self, out: &mut super::PolicyReport) {
        out.insert("scans".into(), json!(self.scans));
        out.insert("idle_scans_to_demote".into(), json!(self.idle_scans));
        out.insert("demoted_pages".into(), json!(self.demoted));
        out.insert("promoted_pages".into(), json!(self.promoted));
        if self.scan_refs > 0 {
            out.insert(
                "note".into(),
                json!(format!("scan interval scaled to the run: {} scans of {} references", self.cfg.scans_per_run, self.scan_refs)),
            );
        }
    }
}
