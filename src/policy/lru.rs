//! Linux-style active/inactive LRU lists per tier, fed by Accessed-bit scans of a
//! kernel thread (docs/policies.md builds this policy step by step). A page seen
//! accessed is referenced on its tier's lists (`folio_mark_accessed`: twice in a row
//! and it is active). After each scan one job promotes the active slow pages found
//! accessed (most recently accessed first, at most `promote_batch`), demoting first
//! from the fast tier's inactive tail what its watermarks then ask for (kswapd with
//! demotion); the fast tier's active list is aged to at most half its pages.

use super::{FastReserve, Policy, PolicyReport, Requirements};
use crate::machine::{MachineInfo, Observer, PageInfo, RefOutcome, ScanEvent, TierId};
use crate::mechanism::{Job, JobDone, Mechanisms, Op, ScanMode, Scope, ThreadId, ThreadKind};
use crate::monitor::{LruLists, Pacer, Period, Place, Reclaim, Tracker, Watermarks, Which};
use crate::params;
use crate::trace::Access;
use serde_json::json;

params! {
    /// Parameters of the LRU promoter.
    pub struct LruConfig {
        /// Seconds between Accessed-bit scans.
        pub scan_interval_s: f64 = 1.0,
        /// If above 0, ignore `scan_interval_s` and make this many scans over the run.
        pub scans_per_run: u32 = 0,
        /// Most pages promoted after one scan (our choice, not a kernel parameter).
        pub promote_batch: usize = 512,
        /// Linux's vm.watermark_scale_factor: the distance between the fast tier's
        /// watermarks, in 1/10000 of its capacity (the kernel's default, 10).
        pub watermark_scale_factor: u64 = 10,
    }
}

const THREAD: ThreadId = ThreadId(0);
const SCAN: u64 = 0;
const MOVE: u64 = 1;

pub struct Lru {
    cfg: LruConfig,
    pacer: Pacer,
    tracker: Tracker,
    /// Lists per tier, of page numbers; `pages` has the page each number is.
    lists: [LruLists; 2],
    pages: Vec<Option<PageInfo>>,
    /// Active slow pages the running scan found accessed.
    activated: Vec<PageInfo>,
    /// The moves of the last job, in order: page number and destination.
    moving: Vec<(u64, TierId)>,
    reclaim: Reclaim,
    moved: [u64; 2],
}

impl Observer for Lru {
    fn on_scan(&mut self, e: &ScanEvent) {
        let (p, t) = (e.page, e.page.tier.index().min(1));
        self.tracker.record_scan(&p);
        if p.page as usize >= self.pages.len() {
            self.pages.resize(p.page as usize + 1, None);
        }
        self.pages[p.page as usize] = Some(p);
        if self.lists[t].place(p.page) == Place::Off {
            self.lists[1 - t].remove(p.page);
            self.lists[t].add(p.page);
        }
        if p.accessed {
            self.lists[t].referenced(p.page);
            if p.tier == TierId::SLOW && self.lists[t].place(p.page) == Place::On(Which::Active) {
                self.activated.push(p);
            }
        }
    }
}

impl Policy for Lru {
    type Config = LruConfig;

    fn requirements(cfg: &LruConfig) -> Requirements<()> {
        // New pages go to the slow tier below the fast tier's low watermark.
        let fast_reserve = FastReserve::LinuxLow { scale_factor: cfg.watermark_scale_factor };
        Requirements { threads: vec![ThreadKind::Kernel], fast_reserve, ..Requirements::default() }
    }

    fn new(cfg: LruConfig, m: &MachineInfo) -> anyhow::Result<Self> {
        if !m.has(TierId::SLOW) {
            anyhow::bail!("policy.lru: needs a slow tier");
        }
        let period = Period::from_config(cfg.scan_interval_s, cfg.scans_per_run);
        let pacer = Pacer::new(period, m, "policy.lru.scan_interval_s").map_err(anyhow::Error::msg)?;
        let fast = m.tier(TierId::FAST).frames;
        let reclaim = Reclaim::new(Watermarks::linux(fast, Watermarks::linux_min(fast), cfg.watermark_scale_factor));
        let (lists, pages, activated, moving) = ([LruLists::new(), LruLists::new()], Vec::new(), Vec::new(), Vec::new());
        Ok(Lru { cfg, pacer, tracker: Tracker::new(), lists, pages, activated, moving, reclaim, moved: [0; 2] })
    }

    fn on_reference(&mut self, _: &Access, _: &RefOutcome, mech: &mut Mechanisms) {
        // A scan per period, once the thread has finished the last one and its moves.
        self.pacer.submit_when_due(mech, THREAD, || {
            let mut job = Job::new(SCAN);
            job.push(Op::Scan { scope: Scope::All, mode: ScanMode::Clear });
            job
        });
    }

    fn on_job_done(&mut self, done: &JobDone, mech: &mut Mechanisms) {
        if done.tag == MOVE {
            for (&(n, to), _) in self.moving.iter().zip(&done.results).filter(|(_, r)| r.is_ok()) {
                self.lists[1 - to.index()].remove(n);
                self.lists[to.index()].push_head(n, if to == TierId::FAST { Which::Active } else { Which::Inactive });
                self.moved[to.index()] += 1;
            }
            return;
        }
        // The hottest active slow pages: accessed in the most recent scans.
        let tracker = &self.tracker;
        self.activated.sort_by_key(|p| (std::cmp::Reverse(tracker.accessed_scans(p, 8)), p.page));
        self.activated.truncate(self.cfg.promote_batch);
        // Promotions take fast frames; kswapd demotes from the inactive tail while that
        // leaves the fast tier under its watermarks.
        let (promote, free) = (self.activated.iter().map(|p| p.base_pages()).sum::<u64>(), mech.free_frames(TierId::FAST));
        let mut to_free = self.reclaim.needed(free.saturating_sub(promote)) + promote.saturating_sub(free);
        let (mut job, fast) = (Job::new(MOVE), &mut self.lists[0]);
        self.moving.clear();
        for n in fast.iter_from_tail(Which::Inactive) {
            let Some(p) = self.pages[n as usize].filter(|_| to_free > 0) else { break };
            self.moving.push((n, TierId::SLOW));
            to_free = to_free.saturating_sub(p.base_pages());
        }
        self.moving.extend(self.activated.drain(..).map(|p| (p.page, TierId::FAST)));
        for &(n, to) in &self.moving {
            job.push(Op::Migrate { page: self.pages[n as usize].expect("a scanned page").at(), to });
        }
        let active = fast.len(Which::Active);
        fast.age(active.saturating_sub(fast.len(Which::Inactive)) / 2);
        if !job.is_empty() {
            let _ = mech.submit(THREAD, job);
        }
    }

    fn report(&self, out: &mut PolicyReport) {
        out.insert("scans".into(), json!(self.pacer.periods()));
        out.insert("promoted_pages".into(), json!(self.moved[0]));
        out.insert("demoted_pages".into(), json!(self.moved[1]));
        out.insert("reclaim_wakeups".into(), json!(self.reclaim.wakeups));
        out.insert("pacing".into(), json!(self.pacer.report("the scan interval")));
    }
}
