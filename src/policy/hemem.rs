//! HeMem (Raybuck et al., SOSP'21), as HMM-V describes and compares it (§2, Table 1):
//! access sampling with PEBS, fixed hot thresholds, and migration with the pages
//! write-protected. Defaults from HeMem's released code (github.com/cuhk-mass/hemem,
//! src/pebs.h and src/pebs.c, upstream commit 2bad215); the values of its SOSP
//! submission branch are given with each parameter.
//!
//! - **Sampling**: PEBS samples every `sample_period`-th event of three counters on
//!   each core — loads that missed the LLC and were served by the fast tier
//!   (MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM), loads served by the slow tier
//!   (MEM_LOAD_RETIRED.LOCAL_PMM), and every store (MEM_INST_RETIRED.ALL_STORES).
//!   Each sample costs its core a PEBS assist (`pebs_sample_ns`, an assumption); the
//!   thread that drains the samples runs on a core of its own (HeMem pins it).
//! - **Counting and cooling**: a sample adds a read or a write to its page's counts.
//!   A page is hot when its writes reach `hot_write_threshold` or its reads
//!   `hot_read_threshold`. When a count passes `cooling_threshold`, a global cooling
//!   clock ticks; every page's counts are halved once per tick, when the page is next
//!   looked at (the released code's lazy cooling).
//! - **Migration**: every `policy_period_ms`, the policy thread takes the slow pages
//!   that became hot, in order, up to `migrate_bytes_per_period`: each moves to a free
//!   fast frame, or, with none free, a cold fast page (oldest first) moves to the slow
//!   tier to make room; with no cold fast page left, the round ends. New pages are
//!   cold, in the fast tier while it has room. Moves copy with the page
//!   write-protected (`userfaultfd` write protection): reads go on, a write waits for
//!   the copy's end — in a VM with a write-protection exit (HMM-V: "heavy VMTraps").
//!   HeMem copies with DMA (I/OAT): the moves run on a copy engine.

use super::{Policy, PolicyReport, Requirements};
use crate::machine::{FaultEvent, FaultKind, MachineInfo, Observer, Owner, PageRef, RefOutcome, TierId};
use crate::mechanism::{Colour, Job, JobDone, Mechanisms, MoveHow, Op, ThreadId, ThreadKind};
use crate::monitor::{Pacer, Period};
use crate::params;
use crate::trace::Access;
use serde_json::json;
use std::collections::VecDeque;

params! {
    /// Parameters of HeMem (released code's defaults; SOSP submission's in brackets).
    pub struct HeMemConfig {
        /// Events between two PEBS samples, per counter and core (SAMPLE_PERIOD: 19997
        /// [5003]).
        pub sample_period: u64 = 19997,
        /// Sampled reads that make a page hot (HOT_READ_THRESHOLD: 4 [8]).
        pub hot_read_threshold: u32 = 4,
        /// Sampled writes that make a page hot (HOT_WRITE_THRESHOLD: 4 [8]).
        pub hot_write_threshold: u32 = 4,
        /// A count above this ticks the cooling clock (PEBS_COOLING_THRESHOLD: 10 [18]).
        pub cooling_threshold: u32 = 10,
        /// Milliseconds between rounds of the policy thread (PEBS_KSWAPD_INTERVAL, 10 ms;
        /// the released loop runs back to back, the SOSP branch sleeps 1 s).
        pub policy_period_ms: f64 = 10.0,
        /// Bytes promoted per round at most (PEBS_KSWAPD_MIGRATE_RATE, 10 GB).
        pub migrate_bytes_per_period: u64 = 10 << 30,
        /// Core time of one PEBS sample (the microcode assist that writes the record),
        /// in ns: an assumption.
        pub pebs_sample_ns: f64 = 200.0,
    }
}

const THREAD: ThreadId = ThreadId(0);

/// Which counter a sample came from (HeMem's DRAMREAD, NVMREAD, WRITE buffers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    FastRead = 0,
    SlowRead = 1,
    Write = 2,
}

/// One page's sampled counts, cooled lazily against the global clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub reads: u32,
    pub writes: u32,
    /// The cooling clock the counts were last brought up to.
    pub clock: u32,
}

/// HeMem's hot test and cooling, apart from the machine (unit-tested on plain inputs).
#[derive(Clone, Copy, Debug)]
pub struct Classifier {
    pub hot_reads: u32,
    pub hot_writes: u32,
    pub cooling: u32,
}

impl Classifier {
    /// Halves `c` once per tick of the clock since it was last looked at.
    pub fn cool(&self, c: &mut Counts, clock: u32) {
        let ticks = clock.saturating_sub(c.clock).min(31);
        c.reads >>= ticks;
        c.writes >>= ticks;
        c.clock = clock;
    }

    pub fn is_hot(&self, c: &Counts) -> bool {
        c.writes >= self.hot_writes || c.reads >= self.hot_reads
    }

    /// Adds a sample of `e` to `c` (cooled first); returns whether the count it added
    /// to passed the cooling threshold (the clock must then tick).
    pub fn record(&self, c: &mut Counts, e: Event, clock: u32) -> bool {
        self.cool(c, clock);
        let n = match e {
            Event::Write => &mut c.writes,
            _ => &mut c.reads,
        };
        *n += 1;
        *n > self.cooling
    }
}

/// What HeMem knows of a page, by page number.
#[derive(Clone, Copy, Debug, Default)]
struct Page {
    tenant: u16,
    addr: u64,
    frames: u64,
    fast: bool,
    hot: bool,
    /// The queue it is on (an entry elsewhere is stale and dropped when taken).
    queue: Option<Queue>,
    counts: Counts,
}

/// HeMem's lists that the policy thread takes pages from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Queue {
    SlowHot,
    FastCold,
}

pub struct HeMem {
    cfg: HeMemConfig,
    class: Classifier,
    clock: u32,
    pacer: Pacer,
    /// Per core, events since the last sample of each counter.
    events: Vec<[u64; 3]>,
    cache_levels: usize,
    /// First frame of the slow tier (a served address below it is the fast tier's).
    slow_base_pfn: u64,
    sample_cycles: u64,
    pages: Vec<Page>,
    /// Slow pages that became hot, and per tenant the fast pages that are cold,
    /// oldest first (entries re-checked when taken).
    slow_hot: VecDeque<u64>,
    fast_cold: Vec<VecDeque<u64>>,
    /// Faults not yet looked up, and the moves of the running job.
    new_pages: Vec<PageRef>,
    moving: Vec<(u64, bool)>,
    samples: u64,
    moved: [u64; 2],
    failed: u64,
}

impl Observer for HeMem {
    fn on_fault(&mut self, e: &FaultEvent) {
        if e.kind == FaultKind::FirstTouch {
            self.new_pages.push(PageRef::new(e.tenant, e.addr));
        }
    }
}

impl HeMem {
    fn page_mut(&mut self, n: u64) -> &mut Page {
        if n as usize >= self.pages.len() {
            self.pages.resize(n as usize + 1, Page::default());
        }
        &mut self.pages[n as usize]
    }

    /// Queues page `n` where its place and temperature say, unless it is there.
    fn requeue(&mut self, n: u64) {
        let p = &mut self.pages[n as usize];
        let want = match (p.fast, p.hot) {
            (false, true) => Some(Queue::SlowHot),
            (true, false) => Some(Queue::FastCold),
            _ => None,
        };
        if p.queue == want {
            return;
        }
        p.queue = want;
        match want {
            Some(Queue::SlowHot) => self.slow_hot.push_back(n),
            Some(Queue::FastCold) => self.fast_cold[p.tenant as usize].push_back(n),
            None => {}
        }
    }

    /// One PEBS sample of the access served at `paddr`.
    fn sample(&mut self, paddr: u64, e: Event, mech: &mut Mechanisms) {
        self.samples += 1;
        mech.compute(self.sample_cycles);
        let Owner::Data { tenant, addr } = mech.owner(paddr >> 12) else { return };
        let Ok(info) = mech.page(PageRef::new(tenant, addr)) else { return };
        let n = info.page;
        let (class, clock) = (self.class, self.clock);
        let p = self.page_mut(n);
        *p = Page { tenant, addr: info.addr, frames: info.base_pages(), fast: info.tier == TierId::FAST, ..*p };
        let tick = class.record(&mut p.counts, e, clock);
        p.hot = class.is_hot(&p.counts);
        self.clock += tick as u32;
        self.requeue(n);
    }

    /// Page `n` taken from queue `q`: `false` for a stale entry. Otherwise it is off
    /// the queue, brought up to the cooling clock, and queued again if it no longer
    /// belongs on `q` (then `false` too).
    fn take(&mut self, n: u64, q: Queue) -> bool {
        let (class, clock) = (self.class, self.clock);
        let p = &mut self.pages[n as usize];
        if p.queue != Some(q) {
            return false;
        }
        p.queue = None;
        class.cool(&mut p.counts, clock);
        p.hot = class.is_hot(&p.counts);
        let keep = (p.fast, p.hot) == if q == Queue::SlowHot { (false, true) } else { (true, false) };
        if !keep {
            self.requeue(n);
        }
        keep
    }


    /// One round of the policy thread: the job of its moves.
    fn round(&mut self, mech: &Mechanisms) -> Job {
        let mut job = Job::new(0);
        self.moving.clear();
        let mut bytes = 0;
        // Fast frames each tenant has left after the moves planned so far.
        let mut room: Vec<Option<i64>> = vec![None; mech.tenants() as usize];
        while bytes < self.cfg.migrate_bytes_per_period {
            let Some(n) = self.slow_hot.pop_front() else { break };
            if !self.take(n, Queue::SlowHot) {
                continue;
            }
            let p = self.pages[n as usize];
            let left = room[p.tenant as usize].get_or_insert_with(|| mech.fast_room(p.tenant) as i64);
            while *left < p.frames as i64 {
                let Some(c) = self.fast_cold[p.tenant as usize].pop_front() else { break };
                if !self.take(c, Queue::FastCold) {
                    continue;
                }
                let cold = self.pages[c as usize];
                job.push(Op::MoveAs { page: PageRef::new(cold.tenant, cold.addr), to: TierId::SLOW, how: MoveHow::WriteProtect, colour: Colour::ANY });
                self.moving.push((c, false));
                *left += cold.frames as i64;
            }
            if *left < p.frames as i64 {
                // No cold fast page left: the round ends, the page waits at the front.
                self.pages[n as usize].queue = Some(Queue::SlowHot);
                self.slow_hot.push_front(n);
                break;
            }
            *left -= p.frames as i64;
            job.push(Op::MoveAs { page: PageRef::new(p.tenant, p.addr), to: TierId::FAST, how: MoveHow::WriteProtect, colour: Colour::ANY });
            self.moving.push((n, true));
            bytes += p.frames << 12;
        }
        job
    }
}

impl Policy for HeMem {
    type Config = HeMemConfig;

    fn requirements(_: &HeMemConfig) -> Requirements<()> {
        Requirements { threads: vec![ThreadKind::CopyEngine], ..Requirements::default() }
    }

    fn new(cfg: HeMemConfig, m: &MachineInfo) -> anyhow::Result<Self> {
        if !m.has(TierId::SLOW) {
            anyhow::bail!("policy.hemem: needs a slow tier");
        }
        if cfg.sample_period == 0 {
            anyhow::bail!("policy.hemem.sample_period: must be at least 1");
        }
        if !(cfg.pebs_sample_ns.is_finite() && cfg.pebs_sample_ns >= 0.0) {
            anyhow::bail!("policy.hemem.pebs_sample_ns: must be a non-negative number, got {}", cfg.pebs_sample_ns);
        }
        let pacer = Pacer::new(Period::from_config(cfg.policy_period_ms / 1000.0, 0), m, "policy.hemem.policy_period_ms").map_err(anyhow::Error::msg)?;
        let class = Classifier { hot_reads: cfg.hot_read_threshold, hot_writes: cfg.hot_write_threshold, cooling: cfg.cooling_threshold };
        Ok(HeMem {
            class,
            clock: 0,
            pacer,
            events: vec![[0; 3]; m.cores],
            cache_levels: m.cache_levels(),
            slow_base_pfn: m.tier(TierId::SLOW).base_pfn,
            sample_cycles: (cfg.pebs_sample_ns * m.freq_ghz).round() as u64,
            pages: Vec::new(),
            slow_hot: VecDeque::new(),
            fast_cold: vec![VecDeque::new(); m.tenants],
            new_pages: Vec::new(),
            moving: Vec::new(),
            samples: 0,
            moved: [0; 2],
            failed: 0,
            cfg,
        })
    }

    #[inline]
    fn on_reference(&mut self, a: &Access, o: &RefOutcome, mech: &mut Mechanisms) {
        if let Some(counts) = mech.chunk_events() {
            // Epochs mode: a chunk's events at once, its samples drawn from its pages.
            for e in [Event::FastRead, Event::SlowRead, Event::Write] {
                let mut n = self.events[a.core as usize][e as usize] + counts[e as usize];
                while n >= self.cfg.sample_period {
                    n -= self.cfg.sample_period;
                    if let Some(paddr) = mech.sample_event(e as usize) {
                        self.sample(paddr, e, mech);
                    }
                }
                self.events[a.core as usize][e as usize] = n;
            }
        }
        let event = if a.is_write() {
            Some(Event::Write)
        } else if o.level == self.cache_levels {
            Some(if o.paddr >> 12 < self.slow_base_pfn { Event::FastRead } else { Event::SlowRead })
        } else {
            None
        };
        if let Some(e) = event {
            let n = &mut self.events[a.core as usize][e as usize];
            *n += 1;
            if *n >= self.cfg.sample_period {
                *n = 0;
                self.sample(o.paddr, e, mech);
            }
        }
        if !self.new_pages.is_empty() {
            for page in std::mem::take(&mut self.new_pages) {
                let Ok(info) = mech.page(page) else { continue };
                let fast = info.tier == TierId::FAST;
                *self.page_mut(info.page) = Page { tenant: page.tenant, addr: info.addr, frames: info.base_pages(), fast, ..Page::default() };
                self.requeue(info.page);
            }
        }
        if self.pacer.due_in(mech) {
            if !mech.thread(THREAD).is_ok_and(|t| t.idle) {
                self.pacer.wait(mech.now());
                return;
            }
            self.pacer.start(mech.now());
            let job = self.round(mech);
            if !job.is_empty() {
                let _ = mech.submit(THREAD, job);
            }
        }
    }

    fn on_job_done(&mut self, done: &JobDone, _: &mut Mechanisms) {
        for ((n, up), r) in std::mem::take(&mut self.moving).into_iter().zip(&done.results) {
            if r.is_err() {
                self.failed += 1;
                self.requeue(n);
                continue;
            }
            self.pages[n as usize].fast = up;
            self.moved[!up as usize] += 1;
            self.requeue(n);
        }
    }

    fn report(&self, out: &mut PolicyReport) {
        out.insert("samples".into(), json!(self.samples));
        out.insert("cooling_ticks".into(), json!(self.clock));
        out.insert("hot_pages".into(), json!(self.pages.iter().filter(|p| p.hot).count()));
        out.insert("promoted_pages".into(), json!(self.moved[0]));
        out.insert("demoted_pages".into(), json!(self.moved[1]));
        out.insert("failed_moves".into(), json!(self.failed));
        out.insert("pacing".into(), json!(self.pacer.report("the policy period")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: Classifier = Classifier { hot_reads: 4, hot_writes: 4, cooling: 10 };

    #[test]
    fn a_page_is_hot_at_either_threshold() {
        let mut c = Counts::default();
        for _ in 0..3 {
            C.record(&mut c, Event::SlowRead, 0);
        }
        assert!(!C.is_hot(&c));
        // Fast and slow reads add up: the fourth read makes it hot.
        C.record(&mut c, Event::FastRead, 0);
        assert!(C.is_hot(&c));
        let mut w = Counts { reads: 3, writes: 3, clock: 0 };
        assert!(!C.is_hot(&w));
        C.record(&mut w, Event::Write, 0);
        assert!(C.is_hot(&w));
    }

    #[test]
    fn the_eleventh_sample_ticks_the_clock_and_a_tick_halves_the_counts_lazily() {
        let mut c = Counts::default();
        let ticked: Vec<bool> = (0..11).map(|_| C.record(&mut c, Event::Write, 0)).collect();
        assert_eq!(ticked.iter().position(|&t| t), Some(10), "a count above 10 ticks");
        assert_eq!(c.writes, 11);
        // Two ticks later: 11 → 5 → 2, then the new sample: 3 writes, and 7 reads → 1.
        let mut d = Counts { reads: 7, writes: 11, clock: 0 };
        C.record(&mut d, Event::Write, 2);
        assert_eq!(d, Counts { reads: 1, writes: 3, clock: 2 });
        assert!(!C.is_hot(&d));
        // Looking again at the same clock changes nothing.
        C.cool(&mut d, 2);
        assert_eq!(d, Counts { reads: 1, writes: 3, clock: 2 });
    }
}
