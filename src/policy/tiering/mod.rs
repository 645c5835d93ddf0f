//! What Linux does with a CPU-less slow node today: NUMA balancing's memory-tiering
//! mode (`linux-tiering`, `kernel.numa_balancing = 2`, Linux 6.x) and Transparent Page
//! Placement (`tpp`, Maruf et al., ASPLOS'23, as its patch series posted to linux-mm
//! in November 2021). Both promote on NUMA hinting faults and demote through kswapd's
//! reclaim of the fast node's LRU lists; they differ in which faulting pages they
//! promote and in when kswapd runs.
//!
//! Shared by both:
//! - **Allocation** prefers the fast node and falls back to the slow one below the
//!   fast node's low watermark (first touch with `FastReserve::LinuxLow`). A new page
//!   starts on its node's inactive list (anonymous pages since Linux 5.9).
//! - **Scanning** (`task_numa_work`, kernel/sched/fair.c): each task marks one window
//!   of `scan_size_mb` of its pages inaccessible every scan period, on its own core
//!   ([`Mechanisms::mark_hinting`]). Pages on the fast node are skipped: with
//!   `NUMA_BALANCING_NORMAL` off, `change_pte_range` (mm/mprotect.c) leaves the top
//!   tier alone, and TPP's patch 2/5 does the same. The scan period stays at its
//!   initial `scan_delay_ms`: `task_numa_fault` returns before any statistics for a
//!   fault on a slow-node page in tiering mode, so `update_task_scan_period` never
//!   runs.
//! - **Promotion** in the hinting fault, on the faulting core (`do_numa_page` →
//!   `migrate_misplaced_folio`): only if the fast node keeps its high watermark free
//!   after the page (`migrate_balanced_pgdat`); if not, the migration fails and the
//!   fast node's kswapd is woken.
//! - **Demotion** by kswapd, a kernel thread (mm/vmscan.c `balance_pgdat`, with
//!   `demotion_enabled`): in batches of `SWAP_CLUSTER_MAX` pages it deactivates the
//!   active list's tail while the inactive list is low (`inactive_is_low`), and takes
//!   pages from the inactive list's tail: each page's Accessed bit is tested and
//!   cleared through the reverse map ([`Mechanisms::young`]) and
//!   `folio_check_references` decides — activate, keep for another trip, or demote to
//!   the slow node (a migration on kswapd's clock). It stops when the fast node's free
//!   frames reach its target watermark.
//!
//! `linux-tiering` (kernel/sched/fair.c `should_numa_migrate_memory`, 6.x): a
//! faulting slow page is promoted if the fast node has plenty of room
//! (`pgdat_free_space_enough`: the promotion watermark plus max(1 GiB, 1/16 of the
//! node) free), or else if its hint-fault latency — the time from the scan that
//! marked it to the fault — is under the hot threshold and the promotion rate limit
//! has room in the current second (`numa_promotion_rate_limit`). The threshold is
//! adjusted once per `scan_period_max_ms` to keep the candidates near the rate limit
//! (`numa_promotion_adjust_threshold`). kswapd is woken only by failed promotions
//! (allocations fall back to the slow node without waking it) and reclaims up to the
//! promotion watermark (`WMARK_PROMO`, high + the watermark distance).
//!
//! `tpp`: a faulting slow page is promoted only if it is on the active list; an
//! inactive one is marked accessed instead (`mark_page_accessed`: two such faults
//! activate it), TPP's patch 5/5 "active LRU-based promotion to avoid ping-pong".
//! kswapd is woken whenever the fast node's free frames are under the demotion
//! watermark (`WMARK_DEMOTE`, `demote_scale_factor` / 10000 of the node, at least
//! twice the high watermark; patch 3/5 checks it after every allocation and on every
//! scheduler tick) and reclaims up to it, so demotion runs ahead of allocation.
//!
//! Where things live: this file holds the parameters, the kernel state both policies
//! share (scanning, hinting faults, the LRU lists, kswapd) and the two policies;
//! `rules.rs` the kernel's rules on plain numbers (the hot threshold's adjustment,
//! the promotion rate limit, `inactive_is_low`, the fast node's watermarks), with
//! their unit tests; `tests.rs` the tests of the two policies on a small machine.

use super::numa::Scanner;
use super::{FastReserve, Policy, PolicyReport, Requirements};
use crate::machine::{FaultEvent, FaultKind, MachineInfo, Observer, PageRef, RefOutcome, TierId};
use crate::mechanism::{Job, JobDone, Mechanisms, Op, ThreadId, ThreadKind};
use crate::monitor::{LruLists, Place, Verdict, Which};
use crate::params;
use crate::trace::Access;
use serde::Serialize;
use serde_json::json;

mod rules;
#[cfg(test)]
mod tests;

use rules::{inactive_is_low, CandidateLimit, FastMarks, HotThreshold};

params! {
    /// Parameters of NUMA balancing's memory-tiering mode (Linux 6.x sysctls, named
    /// and defaulted as there).
    pub struct LinuxTieringConfig {
        /// kernel.numa_balancing_scan_delay_ms: from the task's start to its first
        /// window, and the period between windows (fixed in tiering mode, see the
        /// module documentation).
        pub scan_delay_ms: f64 = 1000.0,
        /// kernel.numa_balancing_scan_size_mb: pages marked per window, in MiB.
        pub scan_size_mb: f64 = 256.0,
        /// kernel.numa_balancing_scan_period_max_ms: the period of the hot threshold's
        /// adjustment (`numa_promotion_adjust_threshold` uses it as `th_period`).
        pub scan_period_max_ms: f64 = 60000.0,
        /// kernel.numa_balancing_hot_threshold_ms: a page faulting within this long of
        /// being marked is hot; the adjusted threshold stays within 1/8 and twice it.
        pub hot_threshold_ms: f64 = 1000.0,
        /// kernel.numa_balancing_promote_rate_limit_MBps: promotion candidates per
        /// second, in MiB/s (the kernel's default, 65536).
        pub promote_rate_limit_mbps: f64 = 65536.0,
        /// vm.watermark_scale_factor: the distance between the fast node's watermarks
        /// in 1/10000 of its capacity.
        pub watermark_scale_factor: u64 = 10,
        /// /sys/kernel/mm/numa/demotion_enabled: kswapd demotes to the slow node (off:
        /// nothing leaves the fast node, promotions stop once it is full).
        pub demotion_enabled: bool = true,
    }
}

params! {
    /// Parameters of Transparent Page Placement (TPP's patch series; scanning as
    /// NUMA balancing's, with the kernel's defaults).
    pub struct TppConfig {
        /// kernel.numa_balancing_scan_delay_ms: from the task's start to its first
        /// window, and the period between windows.
        pub scan_delay_ms: f64 = 1000.0,
        /// kernel.numa_balancing_scan_size_mb: pages marked per window, in MiB.
        pub scan_size_mb: f64 = 256.0,
        /// vm.demote_scale_factor: kswapd demotes while the fast node has less than
        /// this many 1/10000 of its capacity free (TPP §5.2 and patch 3/5: 200, 2 %).
        pub demote_scale_factor: u64 = 200,
        /// vm.watermark_scale_factor: the distance between the fast node's watermarks
        /// in 1/10000 of its capacity.
        pub watermark_scale_factor: u64 = 10,
    }
}

/// `SWAP_CLUSTER_MAX`: pages reclaim isolates at a time.
const SWAP_CLUSTER_MAX: u64 = 32;
/// Scheduler tick (`HZ` = 250) at which TPP checks the fast node's balance.
const TICK_MS: f64 = 4.0;
const KSWAPD: ThreadId = ThreadId(0);

#[derive(Clone, Debug, Default, Serialize)]
struct Totals {
    hint_faults: u64,
    /// Faults on pages already on the fast node (marked before they were promoted).
    fast_faults: u64,
    promoted: u64,
    /// Not promoted: hint-fault latency at or above the threshold.
    too_slow: u64,
    /// Not promoted: the rate limit's window was used up.
    rate_limited: u64,
    /// Not promoted (TPP): inactive, marked accessed instead.
    inactive: u64,
    /// Promotion failed: the fast node would have fallen under its high watermark.
    no_room: u64,
    demoted: u64,
    /// Demotions that failed (the slow node full, a rate limit).
    demote_failed: u64,
    kswapd_wakeups: u64,
    kswapd_batches: u64,
    /// Accessed bits tested by reclaim through the reverse map.
    young_checks: u64,
    activated: u64,
    deactivated: u64,
}

/// The state both policies share; see the module documentation.
struct Kernel {
    /// Tiering mode's promotion rule (`None`: TPP's).
    tiering: Option<TieringParams>,
    window_bytes: u64,
    cycles_per_ms: f64,
    marks: FastMarks,
    demotion: bool,
    scanners: Vec<Scanner>,
    /// Per tier (fast, slow): the node's lists, of page numbers.
    lists: [LruLists; 2],
    /// The page each page number is (tenant, address).
    pages: Vec<Option<PageRef>>,
    /// When each page was last marked by a scan, in cycles.
    marked_at: Vec<u64>,
    /// First touches and hinting faults waiting for the reference to finish.
    new_pages: Vec<(u64, PageRef)>,
    hints: Vec<(u64, PageRef)>,
    kswapd_running: bool,
    idle_checks: u64,
    next_tick: u64,
    tick: u64,
    threshold: HotThreshold,
    limit: CandidateLimit,
    totals: Totals,
}

impl Kernel {
    fn new(tiering: Option<TieringParams>, scan_delay_ms: f64, scan_size_mb: f64, marks: FastMarks, demotion: bool, m: &MachineInfo, policy: &str) -> anyhow::Result<Kernel> {
        if !m.has(TierId::SLOW) {
            anyhow::bail!("policy.{policy}: needs a slow tier");
        }
        for (key, v) in [("scan_delay_ms", scan_delay_ms), ("scan_size_mb", scan_size_mb)] {
            if !(v.is_finite() && v > 0.0) {
                anyhow::bail!("policy.{policy}.{key}: must be a positive number, got {v}");
            }
        }
        let cycles_per_ms = m.freq_ghz * 1e6;
        let scan_delay = ((scan_delay_ms * cycles_per_ms).round() as u64).max(1);
        let window_bytes = ((scan_size_mb * (1 << 20) as f64) as u64).max(4096);
        Ok(Kernel {
            tiering,
            window_bytes,
            cycles_per_ms,
            marks,
            demotion,
            scanners: (0..m.tenants).map(|_| Scanner::new(scan_delay)).collect(),
            lists: [LruLists::new(), LruLists::new()],
            pages: Vec::new(),
            marked_at: Vec::new(),
            new_pages: Vec::new(),
            hints: Vec::new(),
            kswapd_running: false,
            idle_checks: 0,
            next_tick: 0,
            tick: ((TICK_MS * cycles_per_ms) as u64).max(1),
            threshold: HotThreshold::default(),
            limit: CandidateLimit::default(),
            totals: Totals::default(),
        })
    }

    fn record(&mut self, n: u64, page: PageRef) {
        let i = n as usize;
        if i >= self.pages.len() {
            self.pages.resize(i + 1, None);
            self.marked_at.resize(i + 1, 0);
        }
        self.pages[i] = Some(page);
    }

    fn observe(&mut self, e: &FaultEvent) {
        let page = PageRef::new(e.tenant, e.addr);
        match e.kind {
            FaultKind::FirstTouch => self.new_pages.push((e.page, page)),
            FaultKind::Poison => self.hints.push((e.page, page)),
        }
    }

    /// Moves page `n` from one node's lists to the other's, on the same list.
    fn moved(&mut self, n: u64, to: TierId) {
        let (from, to) = (1 - to.index(), to.index());
        let which = match self.lists[from].place(n) {
            Place::On(w) => w,
            Place::Off => Which::Inactive,
        };
        self.lists[from].remove(n);
        self.lists[to].push_head(n, which);
    }

    /// Wakes kswapd if it sleeps.
    fn wake_kswapd(&mut self, mech: &mut Mechanisms) {
        if self.kswapd_running || !self.demotion {
            return;
        }
        if submit_batch(mech) {
            self.kswapd_running = true;
            self.idle_checks = 0;
            self.totals.kswapd_wakeups += 1;
        }
    }

    /// The hinting fault's handler (`do_numa_page`) for page `n`, on the faulting core.
    fn handle(&mut self, n: u64, page: PageRef, mech: &mut Mechanisms) {
        let Ok(info) = mech.page(page) else { return };
        let _ = mech.unpoison(page);
        self.totals.hint_faults += 1;
        if info.tier == TierId::FAST {
            self.totals.fast_faults += 1;
            return;
        }
        let pages = info.base_pages();
        let go = match self.tiering {
            Some(t) => self.hot(t, n, pages, mech),
            None => {
                if self.lists[1].place(n) == Place::On(Which::Active) {
                    true
                } else {
                    self.lists[1].referenced(n);
                    self.totals.inactive += 1;
                    false
                }
            }
        };
        if !go {
            return;
        }
        if mech.fast_room(page.tenant) < self.marks.high + pages {
            self.totals.no_room += 1;
            self.wake_kswapd(mech);
            return;
        }
        if mech.migrate(page, TierId::FAST).is_ok() {
            self.totals.promoted += 1;
            self.moved(n, TierId::FAST);
        } else {
            self.totals.no_room += 1;
        }
    }

    /// `should_numa_migrate_memory` for slow page `n` of `pages` frames in tiering
    /// mode: plenty of room promotes (and resets the threshold); otherwise the
    /// threshold is adjusted, and a page marked too long ago or over the rate limit
    /// stays.
    fn hot(&mut self, t: TieringParams, n: u64, pages: u64, mech: &mut Mechanisms) -> bool {
        if mech.free_frames(TierId::FAST) >= self.marks.plenty {
            self.threshold.threshold = 0;
            return true;
        }
        let (now, second) = (mech.now(), t.second);
        self.threshold.adjust(now, t.period, second, self.limit.candidates, t.limit_pages, t.hot);
        let latency = now.saturating_sub(self.marked_at[n as usize]);
        if latency >= self.threshold.current(t.hot) {
            self.totals.too_slow += 1;
            return false;
        }
        if self.limit.limited(now, second, pages, t.limit_pages) {
            self.totals.rate_limited += 1;
            return false;
        }
        true
    }

    /// `task_numa_work` for `tenant`, on its core: one window, fast pages skipped,
    /// each page marked stamped with the time.
    fn scan(&mut self, tenant: u16, mech: &mut Mechanisms) {
        let now = mech.now();
        let from = self.scanners[tenant as usize].offset;
        let marked_at = &mut self.marked_at;
        let Ok(w) = mech.mark_hinting(tenant, from, self.window_bytes, Some(TierId::FAST), |p| {
            if let Some(t) = marked_at.get_mut(p.page as usize) {
                *t = now;
            }
        }) else {
            return;
        };
        let s = &mut self.scanners[tenant as usize];
        s.window_done(&w);
        s.next_scan = mech.now() + s.period;
    }

    /// What a reference asks of the kernel: usually nothing, which this finds in a few
    /// compares inlined into the engine's loop; the rest is [`Kernel::serve`].
    #[inline(always)]
    fn on_reference(&mut self, a: &Access, mech: &mut Mechanisms) {
        let now = mech.now();
        let idle = self.new_pages.is_empty()
            && self.hints.is_empty()
            && now < self.scanners[a.tenant as usize].next_scan
            && (self.tiering.is_some() || now < self.next_tick);
        if !idle {
            self.serve(a, mech);
        }
    }

    /// [`Kernel::on_reference`] when something is due: the pages first touched and the
    /// hinting faults taken during the reference, a scan, kswapd's tick.
    #[inline(never)]
    fn serve(&mut self, a: &Access, mech: &mut Mechanisms) {
        // (The queues are taken and given back, so that their buffers are reused.)
        if !self.new_pages.is_empty() {
            let mut new_pages = std::mem::take(&mut self.new_pages);
            for &(n, page) in &new_pages {
                let Ok(info) = mech.page(page) else { continue };
                self.record(n, page);
                self.lists[info.tier.index().min(1)].add(n);
            }
            new_pages.clear();
            self.new_pages = new_pages;
        }
        if !self.hints.is_empty() {
            let mut hints = std::mem::take(&mut self.hints);
            for &(n, page) in &hints {
                self.handle(n, page, mech);
            }
            hints.clear();
            self.hints = hints;
        }
        let now = mech.now();
        if now >= self.scanners[a.tenant as usize].next_scan {
            self.scan(a.tenant, mech);
        }
        if self.tiering.is_none() && now >= self.next_tick {
            self.next_tick = now + self.tick;
            if mech.free_frames(TierId::FAST) < self.marks.target {
                self.wake_kswapd(mech);
            }
        }
    }

    /// One batch of kswapd's reclaim on the fast node, on its clock; true if it goes
    /// on.
    fn reclaim_batch(&mut self, mech: &mut Mechanisms) -> bool {
        self.totals.kswapd_batches += 1;
        let fast = 0;
        if inactive_is_low(self.lists[fast].len(Which::Inactive), self.lists[fast].len(Which::Active)) {
            // shrink_active_list: anonymous pages are deactivated whether referenced
            // or not; their Accessed bits are cleared on the way.
            for _ in 0..SWAP_CLUSTER_MAX {
                let Some(n) = self.lists[fast].tail(Which::Active) else { break };
                if let Some(page) = self.pages[n as usize] {
                    self.totals.young_checks += 1;
                    let _ = mech.young(page, true);
                }
                self.lists[fast].push_head(n, Which::Inactive);
                self.totals.deactivated += 1;
            }
        }
        let mut progress = false;
        for _ in 0..SWAP_CLUSTER_MAX.min(self.lists[fast].len(Which::Inactive)) {
            let Some(n) = self.lists[fast].tail(Which::Inactive) else { break };
            let Some(page) = self.pages[n as usize] else {
                self.lists[fast].remove(n);
                continue;
            };
            self.totals.young_checks += 1;
            let Ok(young) = mech.young(page, true) else {
                self.lists[fast].remove(n);
                continue;
            };
            match self.lists[fast].check_references(n, young) {
                Verdict::Activate => self.totals.activated += 1,
                Verdict::Keep => {}
                Verdict::Reclaim => {
                    if mech.migrate(page, TierId::SLOW).is_ok() {
                        self.totals.demoted += 1;
                        self.moved(n, TierId::SLOW);
                        progress = true;
                    } else {
                        self.totals.demote_failed += 1;
                        self.lists[fast].push_head(n, Which::Inactive);
                    }
                }
            }
            if mech.free_frames(TierId::FAST) >= self.marks.target {
                break;
            }
        }
        // kswapd gives up when it has gone twice over the node's lists without
        // freeing anything (a young page needs two trips to be found idle), as
        // `balance_pgdat` fails after scanning down to its lowest priority; it sleeps
        // until it is woken again.
        let lists = self.lists[fast].len(Which::Inactive) + self.lists[fast].len(Which::Active);
        self.idle_checks = if progress { 0 } else { self.idle_checks + SWAP_CLUSTER_MAX };
        mech.free_frames(TierId::FAST) < self.marks.target && lists > 0 && self.idle_checks <= 2 * lists && submit_batch(mech)
    }

    fn on_job_done(&mut self, mech: &mut Mechanisms) {
        self.kswapd_running = self.reclaim_batch(mech);
    }

    fn report(&self, out: &mut PolicyReport) {
        out.insert("tiering".into(), json!(self.totals));
        let per_tenant: Vec<_> = self.scanners.iter().map(|s| json!({ "windows": s.windows, "passes": s.passes, "pages_marked": s.marked })).collect();
        out.insert("scanners".into(), json!(per_tenant));
        out.insert("fast_watermarks".into(), json!(self.marks));
        if let Some(t) = self.tiering {
            out.insert("hot_threshold_ms".into(), json!(self.threshold.current(t.hot) as f64 / self.cycles_per_ms));
            out.insert("threshold_adjustments".into(), json!(self.threshold.adjustments));
            out.insert("promotion_candidates".into(), json!(self.limit.candidates));
        }
        let lists = |l: &LruLists| json!({ "active": l.len(Which::Active), "inactive": l.len(Which::Inactive) });
        out.insert("lru_pages".into(), json!({ "fast": lists(&self.lists[0]), "slow": lists(&self.lists[1]) }));
    }
}

/// Queues one batch of reclaim on kswapd's thread.
fn submit_batch(mech: &mut Mechanisms) -> bool {
    let mut job = Job::new(0);
    job.push(Op::Run);
    mech.submit(KSWAPD, job).is_ok()
}

/// The tiering mode's promotion parameters, in cycles and pages.
#[derive(Clone, Copy, Debug)]
struct TieringParams {
    hot: u64,
    period: u64,
    second: u64,
    limit_pages: u64,
}

/// NUMA balancing in memory-tiering mode (Linux 6.x).
pub struct LinuxTiering(Kernel);

/// Transparent Page Placement (ASPLOS'23).
pub struct Tpp(Kernel);

impl Observer for LinuxTiering {
    fn on_fault(&mut self, e: &FaultEvent) {
        self.0.observe(e);
    }
}

impl Observer for Tpp {
    fn on_fault(&mut self, e: &FaultEvent) {
        self.0.observe(e);
    }
}

fn requirements(scale_factor: u64) -> Requirements<()> {
    Requirements { threads: vec![ThreadKind::Kernel], fast_reserve: FastReserve::LinuxLow { scale_factor }, ..Requirements::default() }
}

impl Policy for LinuxTiering {
    type Config = LinuxTieringConfig;

    fn requirements(cfg: &LinuxTieringConfig) -> Requirements<()> {
        requirements(cfg.watermark_scale_factor)
    }

    fn new(cfg: LinuxTieringConfig, m: &MachineInfo) -> anyhow::Result<Self> {
        for (key, v) in [("scan_period_max_ms", cfg.scan_period_max_ms), ("hot_threshold_ms", cfg.hot_threshold_ms), ("promote_rate_limit_mbps", cfg.promote_rate_limit_mbps)] {
            if !(v.is_finite() && v > 0.0) {
                anyhow::bail!("policy.linux-tiering.{key}: must be a positive number, got {v}");
            }
        }
        let marks = FastMarks::tiering(m.tier(TierId::FAST).frames, cfg.watermark_scale_factor);
        // The sysctl is in MB/s; the kernel shifts it by 20 − PAGE_SHIFT into pages.
        let cycles = |ms: f64| ((ms * m.freq_ghz * 1e6).round() as u64).max(1);
        let t = TieringParams { hot: cycles(cfg.hot_threshold_ms), period: cycles(cfg.scan_period_max_ms), second: cycles(1000.0), limit_pages: (cfg.promote_rate_limit_mbps * 256.0) as u64 };
        Ok(LinuxTiering(Kernel::new(Some(t), cfg.scan_delay_ms, cfg.scan_size_mb, marks, cfg.demotion_enabled, m, "linux-tiering")?))
    }

    #[inline(always)]
    fn on_reference(&mut self, a: &Access, _: &RefOutcome, mech: &mut Mechanisms) {
        self.0.on_reference(a, mech);
    }

    fn on_job_done(&mut self, _: &JobDone, mech: &mut Mechanisms) {
        self.0.on_job_done(mech);
    }

    fn report(&self, out: &mut PolicyReport) {
        self.0.report(out);
    }
}

impl Policy for Tpp {
    type Config = TppConfig;

    fn requirements(cfg: &TppConfig) -> Requirements<()> {
        requirements(cfg.watermark_scale_factor)
    }

    fn new(cfg: TppConfig, m: &MachineInfo) -> anyhow::Result<Self> {
        if !(1..=10_000).contains(&cfg.demote_scale_factor) {
            anyhow::bail!("policy.tpp.demote_scale_factor: must be between 1 and 10000 (1/10000 of the fast node), got {}", cfg.demote_scale_factor);
        }
        let marks = FastMarks::tpp(m.tier(TierId::FAST).frames, cfg.watermark_scale_factor, cfg.demote_scale_factor);
        Ok(Tpp(Kernel::new(None, cfg.scan_delay_ms, cfg.scan_size_mb, marks, true, m, "tpp")?))
    }

    #[inline(always)]
    fn on_reference(&mut self, a: &Access, _: &RefOutcome, mech: &mut Mechanisms) {
        self.0.on_reference(a, mech);
    }

    fn on_job_done(&mut self, _: &JobDone, mech: &mut Mechanisms) {
        self.0.on_job_done(mech);
    }

    fn report(&self, out: &mut PolicyReport) {
        self.0.report(out);
    }
}
