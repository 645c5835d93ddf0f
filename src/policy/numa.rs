//! Linux's automatic NUMA balancing as HMM-V runs it (`NUMA_B`, §5): the kernel 5.4
//! behaviour on a machine whose slow tier is a CPU-less NUMA node (PMem or CXL
//! memory exposed as a node), with no demotion.
//!
//! - **Allocation** prefers the fast node and falls back to the slow one below the
//!   fast tier's low watermark (first touch with `FastReserve::LinuxLow`).
//! - **Scanning** (`task_numa_work`, kernel/sched/fair.c): the task itself, on its
//!   own core, marks one window of its address space inaccessible each scan period
//!   ([`Mechanisms::mark_hinting`]: 256 MB of pages, one TLB-flush round); the first
//!   window comes `scan_delay_ms` after the task starts. Pages on the task's own node
//!   are skipped for single-threaded tasks (mm/mprotect.c `change_pte_range`).
//! - **Hinting faults**: the next access to a marked page takes a fault
//!   (`machine.costs.poison_fault_ns`). The handler (`do_numa_page`) restores the
//!   entry and, if the page is on the slow node, migrates it to the fast node in the
//!   fault, on the faulting core — if the fast node keeps its high watermark plus the
//!   page free afterwards (mm/migrate.c `migrate_balanced_pgdat`); otherwise the
//!   migration fails. The two-stage `cpupid` filter of `should_numa_migrate_memory`
//!   always passes here: every core sits on the fast node, so the last accessor's
//!   node is always the destination.
//! - **The scan period adapts** once per pass over the address space
//!   (`update_task_scan_period`): it doubles (up to the maximum) after a pass with no
//!   local or shared faults or with a failed migration; otherwise it grows by
//!   `max(1, r − 7)` tenths when the private-fault ratio `r` (or the local ratio) is at
//!   least 7/10, and shrinks by `7 − max(ratios)` tenths when neither is. Faults are
//!   all private here (one task per tenant); a fault whose page is on the fast node
//!   after the handler (migrated or already there) is local. The period stays within
//!   [max(100 ms, `scan_period_min_ms` / windows), `scan_period_max_ms` / windows],
//!   windows being the tenant's resident size in `scan_size_mb` units.
//!
//! In a VM the scanner, the faults and the migrations are the guest's: the windows
//! run over the VM's guest-physical pages (Linux walks the guest process's virtual
//! areas; for the dense address spaces of our workloads a window covers the same
//! pages) and the fault is a guest page fault, with no VM exit. Kernel parameters
//! from Linux 5.4 (`kernel.numa_balancing_scan_*` sysctls and their defaults).

use super::{FastReserve, Policy, PolicyReport, Requirements};
use crate::machine::placement::Placement;
use crate::machine::{FaultEvent, FaultKind, MachineInfo, Observer, PageRef, RefOutcome, TierId};
use crate::mechanism::{HintWindow, Mechanisms};
use crate::monitor::Watermarks;
use crate::params;
use crate::trace::Access;
use serde::Serialize;
use serde_json::json;

params! {
    /// Parameters of automatic NUMA balancing (Linux 5.4 sysctls, defaults as there).
    pub struct NumaBalancingConfig {
        /// kernel.numa_balancing_scan_delay_ms: from the task's start to its first
        /// window, and the scan period it starts with.
        pub scan_delay_ms: f64 = 1000.0,
        /// kernel.numa_balancing_scan_period_min_ms: the shortest time to scan the whole
        /// address space (divided among its windows).
        pub scan_period_min_ms: f64 = 1000.0,
        /// kernel.numa_balancing_scan_period_max_ms: the longest.
        pub scan_period_max_ms: f64 = 60000.0,
        /// kernel.numa_balancing_scan_size_mb: pages marked per window, in MiB.
        pub scan_size_mb: f64 = 256.0,
        /// Skip pages already on the task's node when marking (what the kernel does for
        /// a single-threaded task; each tenant here runs one task on one core).
        pub single_threaded: bool = true,
        /// vm.watermark_scale_factor: the fast node's watermarks (allocation falls back
        /// below the low one; a promotion needs the high one free after it).
        pub watermark_scale_factor: u64 = 10,
        /// Place new pages on the slow node (as `numactl --preferred` to it would), so
        /// that promotions have room; the paper's NUMA_B prefers the fast node.
        pub first_touch_slow: bool = false,
    }
}

/// Linux's floor on a window's period: 256 MB at 2560 MB/s (`MAX_SCAN_WINDOW`).
const MAX_SCAN_MB_PER_S: f64 = 2560.0;
/// `NUMA_PERIOD_SLOTS` and `NUMA_PERIOD_THRESHOLD` of update_task_scan_period.
const PERIOD_SLOTS: u64 = 10;
const PERIOD_THRESHOLD: u64 = 7;

/// Hinting faults of one pass, as `numa_faults_locality` and the private/shared counts
/// keep them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PassFaults {
    pub local: u64,
    pub remote: u64,
    pub failed: u64,
    pub private: u64,
    pub shared: u64,
}

/// `update_task_scan_period` of Linux 5.4: the next scan period, in cycles, from the
/// current one, the faults of the pass that ended, and the bounds.
pub fn next_scan_period(period: u64, f: &PassFaults, min: u64, max: u64) -> u64 {
    if f.local + f.shared == 0 || f.failed > 0 {
        return (period * 2).min(max).max(min);
    }
    let slot = period.div_ceil(PERIOD_SLOTS) as i64;
    let ratio = |a: u64, b: u64| (a * PERIOD_SLOTS).checked_div(a + b).unwrap_or(0);
    let (lr, ps) = (ratio(f.local, f.remote), ratio(f.private, f.shared));
    let th = PERIOD_THRESHOLD;
    let diff = if ps >= th {
        (ps - th).max(1) as i64 * slot
    } else if lr >= th {
        (lr - th).max(1) as i64 * slot
    } else {
        -((th - lr.max(ps)) as i64) * slot
    };
    (period as i64 + diff).clamp(min as i64, max as i64) as u64
}

/// `migrate_balanced_pgdat` of Linux 5.4: a page of `frames` frames may move to the
/// fast node only if `free` frames there leave its high watermark free after it.
pub fn promotes(free: u64, high_watermark: u64, frames: u64) -> bool {
    free >= high_watermark + frames
}

/// One task's scanner: `mm->numa_scan_offset`, `numa_next_scan`, `numa_scan_period`
/// (tiering mode's scanner too, whose period never changes).
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Scanner {
    pub offset: u64,
    pub next_scan: u64,
    pub period: u64,
    pub pass: PassFaults,
    pub windows: u64,
    pub passes: u64,
    pub marked: u64,
}

impl Scanner {
    /// A task that scans its first window `delay` cycles in, at that period.
    pub fn new(delay: u64) -> Scanner {
        Scanner { next_scan: delay, period: delay.max(1), ..Scanner::default() }
    }

    /// Window `w` was marked: where the next one starts. Returns whether it ended a
    /// pass over the address space (the next starts again from its beginning).
    pub fn window_done(&mut self, w: &HintWindow) -> bool {
        self.windows += 1;
        self.marked += w.marked;
        match w.next {
            Some(next) => {
                self.offset = next;
                false
            }
            None => {
                self.offset = 0;
                self.passes += 1;
                true
            }
        }
    }
}

/// A hinting fault waiting for its handler, which runs after the reference.
#[derive(Clone, Copy, Debug)]
struct Hint {
    tenant: u16,
    addr: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
struct Totals {
    hint_faults: u64,
    local: u64,
    remote: u64,
    promoted: u64,
    failed: u64,
}

pub struct NumaBalancing {
    cfg: NumaBalancingConfig,
    scanners: Vec<Scanner>,
    pending: Vec<Hint>,
    marks: Watermarks,
    window_bytes: u64,
    cycles_per_ms: f64,
    totals: Totals,
}

impl Observer for NumaBalancing {
    fn on_fault(&mut self, e: &FaultEvent) {
        if e.kind == FaultKind::Poison {
            self.pending.push(Hint { tenant: e.tenant, addr: e.addr });
        }
    }
}

impl NumaBalancing {
    fn ms(&self, ms: f64) -> u64 {
        (ms * self.cycles_per_ms).round().max(1.0) as u64
    }

    /// `do_numa_page`: restore the entry; migrate a slow page to the fast node if
    /// that leaves its high watermark free.
    fn handle(&mut self, h: Hint, mech: &mut Mechanisms) {
        let page = PageRef::new(h.tenant, h.addr);
        let Ok(info) = mech.page(page) else { return };
        let _ = mech.unpoison(page);
        let s = &mut self.scanners[h.tenant as usize];
        s.pass.private += 1;
        self.totals.hint_faults += 1;
        if info.tier == TierId::FAST {
            s.pass.local += 1;
            self.totals.local += 1;
            return;
        }
        if promotes(mech.fast_room(h.tenant), self.marks.high, info.base_pages()) && mech.migrate(page, TierId::FAST).is_ok() {
            s.pass.local += 1;
            self.totals.local += 1;
            self.totals.promoted += 1;
        } else {
            s.pass.remote += 1;
            s.pass.failed += 1;
            self.totals.remote += 1;
            self.totals.failed += 1;
        }
    }

    /// `task_numa_work` for `tenant`, on its core: one window, and the period's update
    /// at the end of a pass.
    fn scan(&mut self, tenant: u16, mech: &mut Mechanisms) {
        let skip = self.cfg.single_threaded.then_some(TierId::FAST);
        let from = self.scanners[tenant as usize].offset;
        let Ok(w) = mech.mark_hinting(tenant, from, self.window_bytes, skip, |_| {}) else { return };
        let resident: u64 = (0..2).map(|t| mech.tenant_frames(tenant, TierId(t))).sum::<u64>() << 12;
        let windows = resident.div_ceil(self.window_bytes).max(1);
        let floor = self.ms(1000.0 * self.window_bytes as f64 / (1 << 20) as f64 / MAX_SCAN_MB_PER_S);
        let min = self.ms(self.cfg.scan_period_min_ms / windows as f64).max(floor);
        let max = self.ms(self.cfg.scan_period_max_ms / windows as f64).max(min);
        let s = &mut self.scanners[tenant as usize];
        if s.window_done(&w) {
            s.period = next_scan_period(s.period, &s.pass, min, max);
            s.pass = PassFaults::default();
        }
        s.next_scan = mech.now() + s.period;
    }
}

impl Policy for NumaBalancing {
    type Config = NumaBalancingConfig;

    fn requirements(cfg: &NumaBalancingConfig) -> Requirements<()> {
        let placement = if cfg.first_touch_slow { Placement::SlowOnly } else { Placement::FastFirst };
        Requirements { placement, fast_reserve: FastReserve::LinuxLow { scale_factor: cfg.watermark_scale_factor }, ..Requirements::default() }
    }

    fn new(cfg: NumaBalancingConfig, m: &MachineInfo) -> anyhow::Result<Self> {
        if !m.has(TierId::SLOW) {
            anyhow::bail!("policy.numa-balancing: needs a slow tier");
        }
        for (key, v) in [("scan_delay_ms", cfg.scan_delay_ms), ("scan_period_min_ms", cfg.scan_period_min_ms), ("scan_period_max_ms", cfg.scan_period_max_ms), ("scan_size_mb", cfg.scan_size_mb)] {
            if !(v.is_finite() && v > 0.0) {
                anyhow::bail!("policy.numa-balancing.{key}: must be a positive number, got {v}");
            }
        }
        if cfg.scan_period_max_ms < cfg.scan_period_min_ms {
            anyhow::bail!("policy.numa-balancing.scan_period_max_ms: must be at least scan_period_min_ms ({}), got {}", cfg.scan_period_min_ms, cfg.scan_period_max_ms);
        }
        let fast = m.tier(TierId::FAST).frames;
        let marks = Watermarks::linux(fast, Watermarks::linux_min(fast), cfg.watermark_scale_factor);
        let window_bytes = ((cfg.scan_size_mb * (1 << 20) as f64) as u64).max(4096);
        let cycles_per_ms = m.freq_ghz * 1e6;
        let delay = (cfg.scan_delay_ms * cycles_per_ms).round() as u64;
        let scanners = (0..m.tenants).map(|_| Scanner::new(delay)).collect();
        Ok(NumaBalancing { cfg, scanners, pending: Vec::new(), marks, window_bytes, cycles_per_ms, totals: Totals::default() })
    }

    #[inline]
    fn on_reference(&mut self, a: &Access, _: &RefOutcome, mech: &mut Mechanisms) {
        if !self.pending.is_empty() {
            // Taken and given back, so that its buffer is reused.
            let mut pending = std::mem::take(&mut self.pending);
            for &h in &pending {
                self.handle(h, mech);
            }
            pending.clear();
            self.pending = pending;
        }
        if mech.now() >= self.scanners[a.tenant as usize].next_scan {
            self.scan(a.tenant, mech);
        }
    }

    fn report(&self, out: &mut PolicyReport) {
        out.insert("hinting".into(), json!(self.totals));
        let per_tenant: Vec<_> = self
            .scanners
            .iter()
            .map(|s| json!({ "windows": s.windows, "passes": s.passes, "pages_marked": s.marked, "scan_period_ms": s.period as f64 / self.cycles_per_ms }))
            .collect();
        out.insert("scanners".into(), json!(per_tenant));
        out.insert("promotion_needs_free_frames".into(), json!(self.marks.high));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bounds of 100 and 10 000 cycles, a period of 1 000 (slots of 100).
    fn next(f: PassFaults) -> u64 {
        next_scan_period(1000, &f, 100, 10_000)
    }

    #[test]
    fn a_promotion_needs_the_high_watermark_free_after_it() {
        // High watermark 100 frames: a base page needs 101 free, a 2 MiB page 612.
        assert!(promotes(101, 100, 1));
        assert!(!promotes(100, 100, 1));
        assert!(!promotes(611, 100, 512));
        assert!(promotes(612, 100, 512));
    }

    #[test]
    fn a_pass_without_local_faults_or_with_a_failed_migration_doubles_the_period() {
        assert_eq!(next(PassFaults { remote: 50, private: 50, ..PassFaults::default() }), 2000);
        assert_eq!(next(PassFaults { local: 40, remote: 10, failed: 1, private: 50, ..PassFaults::default() }), 2000);
        // Up to the maximum.
        assert_eq!(next_scan_period(8000, &PassFaults::default(), 100, 10_000), 10_000);
    }

    #[test]
    fn mostly_private_faults_slow_the_scan_by_tenths() {
        // All private: ps = 10, diff = (10 − 7) slots = 300.
        assert_eq!(next(PassFaults { local: 5, remote: 5, private: 10, ..PassFaults::default() }), 1300);
        // ps = 7 exactly: at least one slot.
        assert_eq!(next(PassFaults { local: 5, remote: 5, private: 7, shared: 3, ..PassFaults::default() }), 1100);
    }

    #[test]
    fn shared_remote_faults_speed_the_scan_up() {
        // ps = 2, lr = 1 (1 local of 10): diff = −(7 − 2) slots = −500.
        assert_eq!(next(PassFaults { local: 1, remote: 9, private: 2, shared: 8, ..PassFaults::default() }), 500);
        // Mostly local shared faults: lr = 8 ≥ 7, diff = +1 slot.
        assert_eq!(next(PassFaults { local: 8, remote: 2, private: 0, shared: 10, ..PassFaults::default() }), 1100);
        // Not below the minimum.
        assert_eq!(next_scan_period(150, &PassFaults { local: 1, remote: 9, shared: 10, ..PassFaults::default() }, 100, 10_000), 100);
    }
}
