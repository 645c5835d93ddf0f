//! Nimble page management (Yan et al., ASPLOS'19), as HMM-V compares against it (§2,
//! §5.8): Linux's active/inactive LRU lists decide what is hot and what is cold, and
//! the pages move with Nimble's mechanisms — THP-native migration, copies spread over
//! parallel threads, and the exchange of a hot and a cold huge page in place of two
//! migrations.
//!
//! Every `period_s` (its launcher's `mm_manage` call; the authors' scripts use 5 s)
//! one step runs on kernel threads:
//! 1. **Shrink the lists** (`--shrink_page_lists`): an Accessed-bit scan of every
//!    page (clearing the bits, one flush round). A page seen accessed is referenced on
//!    its node's lists — twice in a row while inactive and it becomes active
//!    (`page_referenced` with the second chance of `PageReferenced`); then half of
//!    each active list, from its tail, is deactivated (Nimble's `shrink_active_list`
//!    deactivates every anonymous page it scans, and it scans half of each list).
//!    New pages start on the active list, as anonymous pages do.
//! 2. **Pick**: every active page of the slow node (most recent first) is to be
//!    promoted, as many as the fast node holds; if the fast node has fewer free
//!    frames than that, the missing room is taken from the fast node's inactive list,
//!    tail first (`isolate_pages_from_lru_list`, kernel mm/memory_manage.c).
//! 3. **Move**: a hot huge page and a cold huge page are exchanged (`exchange_pages`,
//!    only for huge pages there); the rest are migrated, demotions before
//!    promotions. Pages are unmapped while they move: an access waits for the move.
//!    The moves are spread over `copy_threads` kernel threads (vm.limit_mt_num = 4 in
//!    the authors' runs), copying in parallel.
//!
//! In a VM, Nimble runs in the guest; the moves are modelled as moves of the guest's
//! pages with the same waits (see docs/policies/baselines.md for what that charges).

use super::{Policy, PolicyReport, Requirements};
use crate::machine::{MachineInfo, Observer, PageInfo, RefOutcome, ScanEvent, TierId};
use crate::mechanism::{Colour, Job, JobDone, Mechanisms, MoveHow, Op, ScanMode, Scope, ThreadId, ThreadKind};
use crate::monitor::{LruLists, Pacer, Period, Place, Which};
use crate::params;
use crate::trace::Access;
use serde_json::json;

params! {
    /// Parameters of Nimble page management.
    pub struct NimbleConfig {
        /// Seconds between management steps (the launcher's `dumpstats_period`; the
        /// authors' run scripts set 5).
        pub period_s: f64 = 5.0,
        /// If above 0, ignore `period_s` and make this many steps over the run.
        pub steps_per_run: u32 = 0,
        /// Kernel threads that copy pages in parallel (vm.limit_mt_num, 4 in the
        /// authors' runs).
        pub copy_threads: u32 = 4,
        /// Exchange a hot slow huge page with a cold fast one instead of migrating both
        /// (`--exchange_pages`; Nimble exchanges huge pages only).
        pub exchange: bool = true,
    }
}

const SCAN: u64 = 0;
const MOVE: u64 = 1;

/// A move of one step: a page and where it goes, or two pages exchanged.
#[derive(Clone, Copy, Debug)]
enum Planned {
    Migrate(u64, TierId),
    Exchange { hot: u64, cold: u64 },
}

pub struct Nimble {
    pacer: Pacer,
    threads: u32,
    exchange: bool,
    /// Per tenant, per tier (fast, slow): the node's lists, of page numbers.
    lists: Vec<[LruLists; 2]>,
    pages: Vec<Option<PageInfo>>,
    /// Per thread, the moves of its last job in order.
    moving: Vec<Vec<Planned>>,
    moved: [u64; 2],
    exchanged: u64,
    failed: u64,
}

impl Observer for Nimble {
    fn on_scan(&mut self, e: &ScanEvent) {
        let p = e.page;
        let (t, lists) = (p.tier.index().min(1), &mut self.lists[p.tenant as usize]);
        if p.page as usize >= self.pages.len() {
            self.pages.resize(p.page as usize + 1, None);
        }
        self.pages[p.page as usize] = Some(p);
        if lists[t].place(p.page) == Place::Off {
            // A page Nimble has not seen: anonymous pages start active.
            lists[1 - t].remove(p.page);
            lists[t].push_head(p.page, Which::Active);
        } else if p.accessed {
            lists[t].referenced(p.page);
        }
    }
}

impl Nimble {

    /// Steps 1 (aging) and 2 for one tenant: the moves, in units that one thread runs
    /// in order.
    fn plan(&mut self, tenant: u16, room: u64, fast_frames: u64) -> Vec<Vec<Planned>> {
        let pages = &self.pages;
        let size = |n: u64| pages[n as usize].map_or(1, |p| p.base_pages());
        let huge = |n: u64| pages[n as usize].is_some_and(|p| p.huge);
        let [fast, slow] = &mut self.lists[tenant as usize];
        for l in [&mut *fast, &mut *slow] {
            let active = l.len(Which::Active);
            l.age(active / 2);
        }
        let mut hot = Vec::new();
        let mut want = 0;
        for n in slow.iter(Which::Active) {
            if want + size(n) > fast_frames {
                break;
            }
            want += size(n);
            hot.push(n);
        }
        let mut cold = Vec::new();
        let mut short = want.saturating_sub(room);
        for n in fast.iter_from_tail(Which::Inactive) {
            if short == 0 {
                break;
            }
            short = short.saturating_sub(size(n));
            cold.push(n);
        }
        let mut plan = Vec::new();
        if self.exchange {
            // Pair hot and cold huge pages, in order.
            let (mut h, mut c) = (hot.iter().filter(|&&n| huge(n)).copied().collect::<Vec<_>>(), cold.iter().filter(|&&n| huge(n)).copied().collect::<Vec<_>>());
            let pairs = h.len().min(c.len());
            for (&hot, &cold) in h.iter().zip(&c).take(pairs) {
                plan.push(vec![Planned::Exchange { hot, cold }]);
            }
            let (h_done, c_done): (Vec<u64>, Vec<u64>) = (h.drain(..pairs).collect(), c.drain(..pairs).collect());
            hot.retain(|n| !h_done.contains(n));
            cold.retain(|n| !c_done.contains(n));
        }
        // A demotion and the promotion it makes room for go to the same thread, in
        // that order.
        for i in 0..hot.len().max(cold.len()) {
            let unit = cold.get(i).map(|&n| Planned::Migrate(n, TierId::SLOW)).into_iter().chain(hot.get(i).map(|&n| Planned::Migrate(n, TierId::FAST)));
            plan.push(unit.collect());
        }
        plan
    }

    /// Moves page `n` of `tenant` onto tier `to`'s lists.
    fn landed(&mut self, n: u64, to: TierId) {
        let Some(p) = self.pages[n as usize] else { return };
        let lists = &mut self.lists[p.tenant as usize];
        lists[1 - to.index()].remove(n);
        lists[to.index()].push_head(n, if to == TierId::FAST { Which::Active } else { Which::Inactive });
        self.moved[to.index()] += 1;
    }
}

impl Policy for Nimble {
    type Config = NimbleConfig;

    fn requirements(cfg: &NimbleConfig) -> Requirements<()> {
        Requirements { threads: vec![ThreadKind::Kernel; cfg.copy_threads.max(1) as usize], ..Requirements::default() }
    }

    fn new(cfg: NimbleConfig, m: &MachineInfo) -> anyhow::Result<Self> {
        if !m.has(TierId::SLOW) {
            anyhow::bail!("policy.nimble: needs a slow tier");
        }
        if cfg.copy_threads == 0 {
            anyhow::bail!("policy.nimble.copy_threads: must be at least 1");
        }
        let pacer = Pacer::new(Period::from_config(cfg.period_s, cfg.steps_per_run), m, "policy.nimble.period_s").map_err(anyhow::Error::msg)?;
        let lists = (0..m.tenants).map(|_| [LruLists::new(), LruLists::new()]).collect();
        let moving = vec![Vec::new(); cfg.copy_threads as usize];
        Ok(Nimble { pacer, threads: cfg.copy_threads, exchange: cfg.exchange, lists, pages: Vec::new(), moving, moved: [0; 2], exchanged: 0, failed: 0 })
    }

    fn on_reference(&mut self, _: &Access, _: &RefOutcome, mech: &mut Mechanisms) {
        let now = mech.now();
        if !self.pacer.due_in(mech) {
            return;
        }
        // The next step waits for every thread of the last one.
        if !(0..self.threads).all(|t| mech.thread(ThreadId(t as u16)).is_ok_and(|s| s.idle)) {
            self.pacer.wait(now);
            return;
        }
        self.pacer.start(now);
        let mut job = Job::new(SCAN);
        job.push(Op::Scan { scope: Scope::All, mode: ScanMode::Clear });
        let _ = mech.submit(ThreadId(0), job);
    }

    fn on_job_done(&mut self, done: &JobDone, mech: &mut Mechanisms) {
        if done.tag == MOVE {
            let moves = std::mem::take(&mut self.moving[done.thread.0 as usize]);
            for (mv, r) in moves.into_iter().zip(&done.results) {
                match (mv, r.is_ok()) {
                    (_, false) => self.failed += 1,
                    (Planned::Migrate(n, to), true) => self.landed(n, to),
                    (Planned::Exchange { hot, cold }, true) => {
                        self.landed(hot, TierId::FAST);
                        self.landed(cold, TierId::SLOW);
                        self.exchanged += 1;
                    }
                }
            }
            return;
        }
        let fast_frames = mech.capacity_frames(TierId::FAST);
        let mut jobs: Vec<Job> = (0..self.threads).map(|_| Job::new(MOVE)).collect();
        let mut i = 0;
        for tenant in 0..mech.tenants() {
            let cap = mech.fast_quota(tenant).unwrap_or(fast_frames);
            for unit in self.plan(tenant, mech.fast_room(tenant), cap) {
                let t = i % self.threads as usize;
                for mv in unit {
                    let at = |n: u64| self.pages[n as usize].expect("a scanned page").at();
                    jobs[t].push(match mv {
                        Planned::Migrate(n, to) => Op::MoveAs { page: at(n), to, how: MoveHow::Linux, colour: Colour::ANY },
                        Planned::Exchange { hot, cold } => Op::Exchange { a: at(hot), b: at(cold) },
                    });
                    self.moving[t].push(mv);
                }
                i += 1;
            }
        }
        for (t, job) in jobs.into_iter().enumerate().filter(|(_, j)| !j.is_empty()) {
            let _ = mech.submit(ThreadId(t as u16), job);
        }
    }

    fn report(&self, out: &mut PolicyReport) {
        out.insert("steps".into(), json!(self.pacer.periods()));
        out.insert("promoted_pages".into(), json!(self.moved[0]));
        out.insert("demoted_pages".into(), json!(self.moved[1]));
        out.insert("exchanges".into(), json!(self.exchanged));
        out.insert("failed_moves".into(), json!(self.failed));
        out.insert("pacing".into(), json!(self.pacer.report("the management period")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::dram_cache::table_iv_info;

    /// Base page `n` of tenant 0 in `tier`, as a scan sees it.
    fn page(n: u64, tier: TierId, accessed: bool) -> ScanEvent {
        let addr = n << 12;
        ScanEvent { job: 0, page: PageInfo { tenant: 0, addr, page: n, bytes: 4096, huge: false, pfn: n, tier, accessed, dirty: false, poisoned: false } }
    }

    fn nimble() -> Nimble {
        Nimble::new(NimbleConfig::default(), &table_iv_info(100, 100, 1 << 18)).unwrap()
    }

    fn migrations(unit: &[Planned]) -> Vec<(u64, TierId)> {
        unit.iter()
            .map(|m| match *m {
                Planned::Migrate(n, to) => (n, to),
                Planned::Exchange { .. } => panic!("base pages are migrated"),
            })
            .collect()
    }

    #[test]
    fn new_pages_start_active_and_half_of_each_active_list_is_deactivated_per_step() {
        let mut n = nimble();
        // Fast pages 0–3 and slow pages 10–13, seen in that order (each pushed at its
        // list's head, so 0 and 10 are the tails).
        for p in 0..4 {
            n.on_scan(&page(p, TierId::FAST, false));
        }
        for p in 10..14 {
            n.on_scan(&page(p, TierId::SLOW, false));
        }
        // No free fast frame: the two slow pages still active after aging (13, 12,
        // most recent first) need the two fast pages aged first (0, then 1).
        let plan = n.plan(0, 0, 100);
        let units: Vec<_> = plan.iter().map(|u| migrations(u)).collect();
        assert_eq!(units, [vec![(0, TierId::SLOW), (13, TierId::FAST)], vec![(1, TierId::SLOW), (12, TierId::FAST)]]);
        let [fast, slow] = &n.lists[0];
        assert_eq!((fast.len(Which::Active), fast.len(Which::Inactive)), (2, 2));
        assert_eq!((slow.len(Which::Active), slow.len(Which::Inactive)), (2, 2));
    }

    #[test]
    fn with_room_nothing_is_demoted_and_promotions_stop_at_the_fast_tier_size() {
        let mut n = nimble();
        for p in 10..20 {
            n.on_scan(&page(p, TierId::SLOW, false));
        }
        // Five stay active; a fast tier of three frames takes the three most recent.
        let plan = n.plan(0, 100, 3);
        let moved: Vec<_> = plan.iter().flat_map(|u| migrations(u)).collect();
        assert_eq!(moved, [(19, TierId::FAST), (18, TierId::FAST), (17, TierId::FAST)]);
    }

    #[test]
    fn an_inactive_page_accessed_in_two_scans_in_a_row_becomes_active_again() {
        let mut n = nimble();
        n.on_scan(&page(10, TierId::SLOW, false));
        n.on_scan(&page(11, TierId::SLOW, false));
        n.plan(0, 0, 100);
        // 10 was the tail: now inactive; 11 still active.
        assert_eq!(n.lists[0][1].place(10), Place::On(Which::Inactive));
        n.on_scan(&page(10, TierId::SLOW, true));
        assert_eq!(n.lists[0][1].place(10), Place::On(Which::Inactive), "one reference only marks it");
        n.on_scan(&page(10, TierId::SLOW, true));
        assert_eq!(n.lists[0][1].place(10), Place::On(Which::Active));
    }
}
