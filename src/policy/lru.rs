//! Linux-style active/inactive LRU lists per tier, fed by Accessed-bit scans: slow
//! pages that become active are promoted, and the fast tier's free frames are kept
//! between its watermarks by demoting its least recently used inactive pages (kswapd
//! with demotion). docs/policies.md builds this policy step by step.
//!
//! A background kernel thread scans every page's Accessed bit each period and clears
//! it. A page seen accessed is referenced on its tier's lists (`folio_mark_accessed`:
//! referenced twice in a row, it becomes active). When the scan is done, one job
//! demotes what the watermarks ask for from the fast tier's inactive tail and promotes
//! the slow pages that became active, as far as the fast tier has frames above its
//! high watermark; the fast tier's active list is aged to at most half its pages.

use super::{Policy, PolicyReport, Requirements};
use crate::machine::{MachineInfo, Observer, PageRef, RefOutcome, ScanEvent, TierId};
use crate::mechanism::{Job, JobDone, Mechanisms, Op, ScanMode, Scope, ThreadId, ThreadKind};
use crate::monitor::{LruLists, Pacer, Period, Place, Reclaim, Watermarks, Which};
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
        /// Linux's vm.watermark_scale_factor: the distance between the fast tier's
        /// watermarks, in 1/10000 of its capacity (the kernel's default, 10).
        pub watermark_scale_factor: u64 = 10,
    }
}

const THREAD: ThreadId = ThreadId(0);
const SCAN: u64 = 0;
const MOVE: u64 = 1;

pub struct Lru {
    pacer: Pacer,
    /// Lists per tier, of page numbers; `pages` has each page's name and base pages.
    lists: [LruLists; 2],
    pages: Vec<(PageRef, u64)>,
    /// Slow pages the running scan activated.
    activated: Vec<u64>,
    /// The moves of the last job, in order: page number and destination.
    moving: Vec<(u64, TierId)>,
    reclaim: Reclaim,
    promoted: u64,
    demoted: u64,
}

impl Observer for Lru {
    fn on_scan(&mut self, e: &ScanEvent) {
        let (n, t) = (e.page.page, e.page.tier.index().min(1));
        if n as usize >= self.pages.len() {
            self.pages.resize(n as usize + 1, (PageRef::new(0, 0), 0));
        }
        self.pages[n as usize] = (e.page.at(), e.page.base_pages());
        if self.lists[t].place(n) == Place::Off {
            self.lists[1 - t].remove(n);
            self.lists[t].add(n);
        }
        if e.page.accessed && self.lists[t].referenced(n) && e.page.tier == TierId::SLOW {
            self.activated.push(n);
        }
    }
}

impl Policy for Lru {
    type Config = LruConfig;

    fn requirements(_: &LruConfig) -> Requirements<()> {
        Requirements { threads: vec![ThreadKind::Kernel], ..Requirements::default() }
    }

    fn new(cfg: LruConfig, m: &MachineInfo) -> anyhow::Result<Self> {
        if !m.has(TierId::SLOW) {
            anyhow::bail!("policy.lru: needs a slow tier");
        }
        let period = Period::from_config(cfg.scan_interval_s, cfg.scans_per_run);
        let pacer = Pacer::new(period, m, "policy.lru.scan_interval_s").map_err(anyhow::Error::msg)?;
        let fast = m.tier(TierId::FAST).frames;
        let marks = Watermarks::linux(fast, Watermarks::linux_min(fast), cfg.watermark_scale_factor);
        let lists = [LruLists::new(), LruLists::new()];
        Ok(Lru { pacer, lists, pages: Vec::new(), activated: Vec::new(), moving: Vec::new(), reclaim: Reclaim::new(marks), promoted: 0, demoted: 0 })
    }

    fn on_reference(&mut self, _: &Access, _: &RefOutcome, mech: &mut Mechanisms) {
        let now = mech.now();
        if self.pacer.due(now) {
            if mech.thread(THREAD).is_ok_and(|t| t.idle) {
                self.pacer.start(now);
                let mut job = Job::new(SCAN);
                job.push(Op::Scan { scope: Scope::All, mode: ScanMode::Clear });
                let _ = mech.submit(THREAD, job);
            } else {
                self.pacer.wait(now);
            }
        }
    }

    fn on_job_done(&mut self, done: &JobDone, mech: &mut Mechanisms) {
        if done.tag == MOVE {
            for (&(n, to), r) in self.moving.iter().zip(&done.results) {
                if r.is_ok() {
                    self.lists[1 - to.index()].remove(n);
                    self.lists[to.index()].push_head(n, if to == TierId::FAST { Which::Active } else { Which::Inactive });
                    *if to == TierId::FAST { &mut self.promoted } else { &mut self.demoted } += 1;
                }
            }
            return;
        }
        let free = mech.free_frames(TierId::FAST);
        let (mut job, fast) = (Job::new(MOVE), &mut self.lists[0]);
        self.moving.clear();
        // kswapd: demote from the inactive tail while under the watermarks.
        let mut to_free = self.reclaim.needed(free);
        for n in fast.iter_from_tail(Which::Inactive) {
            if to_free == 0 {
                break;
            }
            self.moving.push((n, TierId::SLOW));
            to_free = to_free.saturating_sub(self.pages[n as usize].1);
        }
        // Promote the newly active slow pages into frames above the high watermark.
        let mut room = free.saturating_sub(self.reclaim.marks.high);
        for n in self.activated.drain(..) {
            let frames = self.pages[n as usize].1;
            if frames <= room {
                room -= frames;
                self.moving.push((n, TierId::FAST));
            }
        }
        for &(n, to) in &self.moving {
            job.push(Op::Migrate { page: self.pages[n as usize].0, to });
        }
        let active = fast.len(Which::Active);
        fast.age(active.saturating_sub(fast.len(Which::Inactive)) / 2);
        if !job.is_empty() {
            let _ = mech.submit(THREAD, job);
        }
    }

    fn report(&self, out: &mut PolicyReport) {
        out.insert("scans".into(), json!(self.pacer.periods()));
        out.insert("promoted_pages".into(), json!(self.promoted));
        out.insert("demoted_pages".into(), json!(self.demoted));
        out.insert("reclaim_wakeups".into(), json!(self.reclaim.wakeups));
        out.insert("pacing".into(), json!(self.pacer.report("the scan interval")));
    }
}
