//! HMM-V (Sha et al., "Vtism/HMM-V: heterogeneous memory management for
//! virtualization"; the paper in ../shared/papers/003): tiering in the hypervisor
//! for VM tenants, and its tracking baseline, RAMinate's EPT scanner (§2, §5.3).
//!
//! One round per VM, turned on by a clock switch (§4.1.3):
//! 1. **Tracking** (§4.1.1–4.1.2), one step per monitoring window on a scanner thread.
//!    The first window collects the VM's last-level guest page-table pages (a guest
//!    module and a hypercall), clears their entries' A/D bits and the pages' EPT
//!    dirty bits, flushes the VM's translations and turns PML on. From then on a guest
//!    walk through one of those pages dirties its EPT entry and PML logs it; each
//!    window scans only the pages logged, reads each leaf entry's A/D bits through the
//!    multi-level queue's filter (resting pages are not cleared and count as visits),
//!    clears the EPT dirty bits of the pages scanned and flushes. After `windows`
//!    windows each guest page has a read and a write count. With `tracker = "ept"`
//!    each window scans and clears the whole EPT instead (RAMinate).
//! 2. **Classifying** (§4.2): degree = read_weight · reads + write_weight · writes,
//!    bucket-sorted; the hot set is the hottest pages that fill the VM's DRAM (or,
//!    with `classifier = "fixed"`, the pages whose degree exceeds a fixed threshold,
//!    as HeMem decides, Fig. 4's "+fixed threshold").
//! 3. **Migrating** (§4.3): NVM pages of the hot set are exchanged with as many of the
//!    coldest DRAM pages, by `migration_threads` threads, `pages_in_flight` pages a
//!    batch, the `pml` way (or `linux` / `write-protect`, Tables 3–5 and Fig. 4's
//!    "+PM_Linux"); see `machine::hypervisor` for what each costs.
//!
//! Pool mode (§4.4): a VM's hot-set size is `pool_hot_fraction` of its pages of
//! degree at least `pool_min_degree`; its DRAM follows that size between
//! `pool_min_share` and `pool_max_share` of its initial DRAM, taken from or given back
//! to the DRAM no VM holds. In island mode a VM keeps its initial DRAM. A VM's initial
//! DRAM is its fast share (`--tenants vm:kv:25%`), or an equal split of the fast
//! tier among the VMs without one.
//!
//! The counter of the clock switch: a round that migrated less than `quiet_round_mb`
//! raises it (to `counter_max`); at each switch a VM whose counter is 0 starts a
//! round, the others count down by one (the paper: "the counter decreases by one";
//! tracking "only if its counter is 0" — we test before counting down, so a counter
//! of n skips n switches).
//!
//! Where things live: this file holds the parameters, the state of each VM's round
//! and the policy's hooks, which start windows and switch the clock; `tracking.rs`
//! counts reads and writes (a round's start, the windows of the GPT and EPT
//! trackers, the clock switch's counter); `classify.rs` chooses the hot set and the
//! DRAM of a VM and hands the moves to the migration threads; `tests.rs` holds the
//! unit tests.

use super::{PageSize, Policy, PolicyReport, Requirements};
use crate::machine::placement::Placement;
use crate::machine::{MachineInfo, Observer, PageInfo, RefOutcome, TierId};
use crate::mechanism::{Executor, GptNode, Job, JobDone, Mechanisms, MoveHow, Op, ThreadId, ThreadKind};
use crate::monitor::{degree, MultiLevelQueue, Pacer, Period};
use crate::params;
use crate::policy::params::Params;
use crate::trace::Access;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::marker::PhantomData;

mod classify;
mod tracking;
#[cfg(test)]
mod tests;

use tracking::switch_on;

/// Where reads and writes are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tracker {
    /// The guest page-table pages PML logged (HMM-V §4.1.1).
    Gpt,
    /// The whole EPT every window (RAMinate, §2).
    Ept,
}

/// How the hot set is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Classifier {
    /// The hottest pages by degree that fill the VM's DRAM (§4.2.2).
    Sort,
    /// Pages of degree above `fixed_threshold` (HeMem's rule, Fig. 4).
    Fixed,
}

/// How DRAM is shared between VMs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Each VM keeps its initial DRAM.
    Island,
    /// DRAM follows each VM's hot set (§4.4).
    Pool,
}

params! {
    /// Parameters of HMM-V.
    pub struct HmmVConfig {
        /// Monitoring window in seconds (§5.3.2: 600 ms, where tracking costs under 2 %).
        pub monitor_window_s: f64 = 0.6,
        /// Windows of counting per round (§4.1.1: 8), after the window that starts it.
        pub windows: u32 = 8,
        /// "gpt": scan the guest page-table pages PML logged (§4.1.1); "ept": scan the
        /// whole EPT every window (RAMinate; Fig. 4 "+EPT scanner").
        pub tracker: Tracker = Tracker::Gpt,
        /// Filter A/D clearing through the multi-level queue (§4.1.2).
        pub multi_level_queue: bool = true,
        /// Top level of the multi-level queue (§5.3.3: 7; DND time 2^(level−1) windows).
        pub max_level: u8 = 7,
        /// Turn tracking on by the clock switch (§4.1.3); false tracks all the time,
        /// rounds back to back (as §5.3's tracking-overhead runs).
        pub clock_switch: bool = true,
        /// Seconds between clock switches with base pages (§4.1.3: a minute).
        pub clock_switch_s: f64 = 60.0,
        /// Seconds between clock switches with THP (§4.1.3: two minutes).
        pub clock_switch_thp_s: f64 = 120.0,
        /// When the first switch fires, in seconds (not in the paper: one window, so
        /// that a run shorter than a minute sees a round).
        pub first_switch_s: f64 = 0.6,
        /// A round that migrated less than this (MB) raises the VM's counter (§4.1.3:
        /// 256 MB).
        pub quiet_round_mb: f64 = 256.0,
        /// Upper limit of the counter (§4.1.3: 3).
        pub counter_max: u32 = 3,
        /// Weight of a read in the page degree (§4.2.1: 1).
        pub read_weight: u64 = 1,
        /// Weight of a write (§4.2.1: 3, from Optane's read/write slowdowns).
        pub write_weight: u64 = 3,
        /// "sort": the hottest pages that fill the VM's DRAM (§4.2.2); "fixed": pages
        /// of degree above `fixed_threshold` (Fig. 4 "+fixed threshold").
        pub classifier: Classifier = Classifier::Sort,
        /// Degree above which a page is hot with `classifier = "fixed"` (chosen by
        /// profiling a uniform random-access run, as HeMem chose its thresholds: see
        /// docs/policies/hmm-v.md).
        pub fixed_threshold: u64 = 8,
        /// How pages move: "pml" (§4.3), "write-protect" (HeMem's) or "linux"
        /// (serial, Fig. 4 "+PM_Linux").
        pub migration: MoveHow = MoveHow::Pml,
        /// Migration threads (§4.3: 4); `linux` migrates serially on one.
        pub migration_threads: u32 = 4,
        /// Base pages' worth a migration thread moves in one PML batch (a huge page
        /// counts 512; a batch holds at least one page). The paper limits the pages in
        /// flight without giving the number: 512 (2 MiB) is an assumption.
        pub pages_in_flight: u32 = 512,
        /// "island" or "pool" (§4.4).
        pub mode: Mode = Mode::Island,
        /// Pool mode: the hot-set size is this share of the pages of degree at least
        /// `pool_min_degree` (§4.4: the top 80 %).
        pub pool_hot_fraction: f64 = 0.8,
        /// Pool mode: the degree a page needs to count (§4.4: 3).
        pub pool_min_degree: u64 = 3,
        /// Pool mode: a VM's DRAM stays at least this share of its initial DRAM (§4.4: 75 %).
        pub pool_min_share: f64 = 0.75,
        /// Pool mode: and at most this share (§4.4: 125 %).
        pub pool_max_share: f64 = 1.25,
        /// Move pages at the end of a round; false only tracks (the paper's tracking-
        /// overhead runs, Fig. 2b).
        pub migrate: bool = true,
        /// Place every page in the slow tier on first touch (the paper's migration
        /// runs, Tables 3–5, start with the workload in NVM); false: DRAM first.
        pub first_touch_slow: bool = false,
        /// CPU cycles of classification per VM page (the bucket sort's pass and the
        /// hot-set walk; an assumption).
        pub sort_cycles_per_page: u64 = 10,
    }
}

params! {
    /// Parameters of the EPT-scanner baseline (RAMinate's tracking, HMM-V §2 and
    /// §5.3): the whole EPT scanned and cleared every window, tracking always on;
    /// pages classified and moved as HMM-V does.
    pub struct EptScannerConfig {
        /// Monitoring window in seconds (§5.3.2: RAMinate's 1000 ms).
        pub monitor_window_s: f64 = 1.0,
        /// Windows of counting per round.
        pub windows: u32 = 8,
        /// How pages move (RAMinate copies and remaps in the hypervisor: "linux").
        pub migration: MoveHow = MoveHow::Linux,
        /// Migration threads (`linux` uses one).
        pub migration_threads: u32 = 1,
        /// Base pages' worth a migration thread moves in one batch (`pml` only).
        pub pages_in_flight: u32 = 512,
        /// Move pages at the end of a round; false only tracks (§5.3's runs).
        pub migrate: bool = true,
    }
}

/// What a policy name turns into: its parameters and HMM-V's settings from them.
pub trait Flavor: 'static {
    type Config: Default + Serialize + DeserializeOwned + Clone + Params;
    const NAME: &'static str;
    fn settings(c: &Self::Config) -> HmmVConfig;
}

/// `hmm-v`.
pub struct Full;

impl Flavor for Full {
    type Config = HmmVConfig;
    const NAME: &'static str = "hmm-v";
    fn settings(c: &HmmVConfig) -> HmmVConfig {
        c.clone()
    }
}

/// `ept-scanner`.
pub struct EptScanner;

impl Flavor for EptScanner {
    type Config = EptScannerConfig;
    const NAME: &'static str = "ept-scanner";
    fn settings(c: &EptScannerConfig) -> HmmVConfig {
        HmmVConfig {
            monitor_window_s: c.monitor_window_s,
            windows: c.windows,
            tracker: Tracker::Ept,
            multi_level_queue: false,
            clock_switch: false,
            migration: c.migration,
            migration_threads: c.migration_threads,
            pages_in_flight: c.pages_in_flight,
            migrate: c.migrate,
            ..HmmVConfig::default()
        }
    }
}

const SCANNER: ThreadId = ThreadId(0);
const WINDOW: u64 = 0;
/// Migration jobs carry `MIGRATE | tenant`.
const MIGRATE: u64 = 1 << 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    /// Window 0 starts the round; windows 1..=n count.
    Tracking { window: u32 },
    Migrating { jobs: u32 },
}

/// One VM's round state.
#[derive(Debug)]
struct Vm {
    tenant: u16,
    state: State,
    counter: u32,
    /// Its last-level guest page-table pages, and for each guest frame the index of
    /// its page there plus one (0: not one of them).
    nodes: Vec<GptNode>,
    node_of: Vec<u32>,
    /// The window in which each node was last taken from the log (to scan it once).
    node_seen: Vec<u32>,
    /// Nodes whose EPT mapping is huge, by 2 MiB region of guest-physical frames: the
    /// EPT dirty bit is the region's, so PML logs only the first access to any page
    /// of it, and a logged region means any of its nodes may have been used.
    huge_regions: std::collections::BTreeMap<u64, Vec<u32>>,
    /// Initial DRAM and the DRAM it may hold now, in frames.
    initial_dram: u64,
    dram: u64,
    /// The core last seen running it (its vCPU, for hypercalls).
    vcpu: usize,
    round: Round,
}

/// What a round did, for the report.
#[derive(Clone, Debug, Default, Serialize)]
struct Round {
    tenant: u16,
    start_s: f64,
    tracked_s: f64,
    end_s: f64,
    /// Guest page-table pages (or EPT entries, with the EPT tracker) scanned, summed
    /// over the windows, and the leaf entries read.
    pages_scanned: u64,
    entries_scanned: u64,
    /// Pages of degree above zero, and the hot set's size, in frames.
    tracked_frames: u64,
    hot_frames: u64,
    dram_frames_before: u64,
    dram_frames_allowed: u64,
    promoted_pages: u64,
    demoted_pages: u64,
    migrated_mb: f64,
    counter_after: u32,
}

/// One window of one VM, for the report (Fig. 2a).
#[derive(Clone, Debug, Serialize)]
struct WindowRecord {
    tenant: u16,
    at_s: f64,
    /// Guest page-table pages PML logged and scanned (the EPT tracker: 0).
    gpt_pages: u64,
    /// Leaf entries read (guest PTEs, or EPT entries), and the bytes of VM memory they map.
    entries: u64,
    mapped_bytes: u64,
}

pub struct HmmV<F: Flavor> {
    s: HmmVConfig,
    thp: bool,
    window: Pacer,
    switch_cycles: u64,
    next_switch: u64,
    started: bool,
    vms: Vec<Vm>,
    queue: MultiLevelQueue,
    reads: Vec<u8>,
    writes: Vec<u8>,
    windows_done: u32,
    windows: Vec<WindowRecord>,
    rounds: Vec<Round>,
    switches: u64,
    freq_ghz: f64,
    fast_frames: u64,
    huge_frames: u64,
    _flavor: PhantomData<F>,
}

impl<F: Flavor> Observer for HmmV<F> {}

impl<F: Flavor> HmmV<F> {
    fn secs(&self, cycles: u64) -> f64 {
        cycles as f64 / (self.freq_ghz * 1e9)
    }

    /// The page's degree: of its base pages, the mean rounded up (so that huge and
    /// base pages, which an EPT may mix, sort on one scale).
    fn degree(&self, p: &PageInfo) -> u64 {
        let (first, n) = (p.page as usize, p.base_pages() as usize);
        let end = (first + n).min(self.reads.len());
        let sum: u64 = (first.min(end)..end).map(|i| degree(self.reads[i] as u64, self.writes[i] as u64, self.s.read_weight, self.s.write_weight)).sum();
        sum.div_ceil(n as u64)
    }

    /// The highest degree a page can reach in a round (a write seen in every window;
    /// resting windows count, so at most one per window).
    fn max_degree(&self) -> u64 {
        self.s.read_weight.max(self.s.write_weight) * self.s.windows as u64
    }

    /// The first window tick: VMs without a fast share get an equal split of what is
    /// left of the fast tier.
    fn start(&mut self, mech: &mut Mechanisms) {
        let shared: u64 = self.vms.iter().filter_map(|v| mech.fast_quota(v.tenant)).sum();
        let without = self.vms.iter().filter(|v| mech.fast_quota(v.tenant).is_none()).count() as u64;
        let split = self.fast_frames.saturating_sub(shared).checked_div(without).unwrap_or(0);
        for v in &mut self.vms {
            let q = match mech.fast_quota(v.tenant) {
                Some(q) => q,
                None => {
                    mech.set_fast_quota(v.tenant, Some(split));
                    split
                }
            };
            v.initial_dram = q;
            v.dram = q;
        }
        self.started = true;
    }

    /// A clock switch: each idle VM with its counter at 0 starts a round.
    fn switch(&mut self, now: u64) {
        self.switches += 1;
        let start_s = self.secs(now);
        for v in &mut self.vms {
            if v.state != State::Idle {
                continue;
            }
            if switch_on(&mut v.counter) || !self.s.clock_switch {
                v.state = State::Tracking { window: 0 };
                v.round = Round { tenant: v.tenant, start_s, ..Round::default() };
            }
        }
    }

    /// One monitoring window of VM `i`, on the scanner thread.
    fn window(&mut self, i: usize, mech: &mut Mechanisms) {
        let State::Tracking { window } = self.vms[i].state else { return };
        let t = self.vms[i].tenant;
        let now_s = self.secs(mech.now());
        if window == 0 {
            self.begin_round(i, mech);
        } else {
            let (pages, entries, bytes) = match self.s.tracker {
                Tracker::Gpt => self.scan_logged(i, mech),
                Tracker::Ept => self.scan_ept(t, mech),
            };
            self.windows.push(WindowRecord { tenant: t, at_s: now_s, gpt_pages: pages, entries, mapped_bytes: bytes });
            let r = &mut self.vms[i].round;
            r.pages_scanned += if self.s.tracker == Tracker::Gpt { pages } else { entries };
            r.entries_scanned += entries;
        }
        if window >= self.s.windows {
            self.vms[i].round.tracked_s = now_s;
            self.classify_and_move(i, mech);
        } else {
            self.vms[i].state = State::Tracking { window: window + 1 };
        }
    }
}

impl<F: Flavor> Policy for HmmV<F> {
    type Config = F::Config;

    fn requirements(c: &F::Config) -> Requirements<()> {
        let s = F::settings(c);
        let movers = if s.migration == MoveHow::Linux { 1 } else { s.migration_threads.max(1) };
        let placement = if s.first_touch_slow { Placement::SlowOnly } else { Placement::FastFirst };
        Requirements { threads: vec![ThreadKind::Kernel; 1 + movers as usize], page_size: PageSize::Configured, placement, ..Requirements::default() }
    }

    fn new(c: F::Config, m: &MachineInfo) -> anyhow::Result<Self> {
        let s = F::settings(&c);
        let name = F::NAME;
        if !m.has(TierId::SLOW) {
            anyhow::bail!("policy.{name}: needs a slow tier");
        }
        if m.vm_tenants == 0 {
            anyhow::bail!("policy.{name}: manages VM tenants and this run has none (set tenant_kind = \"vm\", or --tenants vm:WORKLOAD,...)");
        }
        if s.windows == 0 {
            anyhow::bail!("policy.{name}.windows: must be at least 1");
        }
        if s.max_level == 0 || s.max_level > 8 {
            anyhow::bail!("policy.{name}.max_level: must be 1 to 8, got {}", s.max_level);
        }
        for (field, v) in [("pool_hot_fraction", s.pool_hot_fraction), ("pool_min_share", s.pool_min_share), ("pool_max_share", s.pool_max_share)] {
            if !(v.is_finite() && v > 0.0) {
                anyhow::bail!("policy.{name}.{field}: must be a positive number, got {v}");
            }
        }
        if s.pool_min_share > s.pool_max_share {
            anyhow::bail!("policy.{name}.pool_min_share: {} is above pool_max_share {}", s.pool_min_share, s.pool_max_share);
        }
        let window = Pacer::new(Period::Seconds(s.monitor_window_s), m, &format!("policy.{name}.monitor_window_s")).map_err(anyhow::Error::msg)?;
        let thp = m.thp;
        let switch_s = if thp { s.clock_switch_thp_s } else { s.clock_switch_s };
        for (field, v) in [("clock_switch_s", s.clock_switch_s), ("clock_switch_thp_s", s.clock_switch_thp_s)] {
            if !(v.is_finite() && v > 0.0) {
                anyhow::bail!("policy.{name}.{field}: must be a positive number of seconds, got {v}");
            }
        }
        if !(s.first_switch_s.is_finite() && s.first_switch_s >= 0.0) {
            anyhow::bail!("policy.{name}.first_switch_s: must be zero or more seconds, got {}", s.first_switch_s);
        }
        let fast_frames = m.tier(TierId::FAST).frames;
        Ok(HmmV {
            queue: MultiLevelQueue::new(s.max_level),
            thp,
            window,
            switch_cycles: m.cycles(switch_s),
            next_switch: m.cycles(s.first_switch_s),
            started: false,
            vms: Vec::new(),
            reads: Vec::new(),
            writes: Vec::new(),
            windows_done: 0,
            windows: Vec::new(),
            rounds: Vec::new(),
            switches: 0,
            freq_ghz: m.freq_ghz,
            fast_frames,
            huge_frames: m.huge_page_bytes >> 12,
            s,
            _flavor: PhantomData,
        })
    }

    #[inline]
    fn on_reference(&mut self, a: &Access, _o: &RefOutcome, mech: &mut Mechanisms) {
        let now = mech.now();
        if !self.window.due_in(mech) {
            return;
        }
        if !mech.thread(SCANNER).is_ok_and(|t| t.idle) {
            self.window.wait(now);
            return;
        }
        self.window.start(now);
        if self.vms.is_empty() {
            let cores = mech.info().cores.max(1);
            for t in 0..mech.tenants() {
                if mech.is_vm(t) {
                    // Until it is seen on a core, a VM's vCPU is the core `--tenants` gives it.
                    let vcpu = t as usize % cores;
                    self.vms.push(Vm { tenant: t, state: State::Idle, counter: 0, nodes: Vec::new(), node_of: Vec::new(), node_seen: Vec::new(), huge_regions: Default::default(), initial_dram: 0, dram: 0, vcpu, round: Round::default() });
                }
            }
            if self.vms.is_empty() {
                return;
            }
        }
        if let Executor::Core(c) = mech.executor() {
            if let Some(v) = self.vms.iter_mut().find(|v| v.tenant == a.tenant) {
                v.vcpu = c;
            }
        }
        if !self.started {
            self.start(mech);
        }
        if now >= self.next_switch || !self.s.clock_switch {
            self.switch(now);
            while self.next_switch <= now {
                self.next_switch += self.switch_cycles;
            }
        }
        if self.vms.iter().any(|v| matches!(v.state, State::Tracking { .. })) {
            let mut job = Job::new(WINDOW);
            job.push(Op::Run);
            let _ = mech.submit(SCANNER, job);
        }
    }

    fn on_job_done(&mut self, done: &JobDone, mech: &mut Mechanisms) {
        if done.tag == WINDOW {
            for i in 0..self.vms.len() {
                self.window(i, mech);
            }
            return;
        }
        let t = (done.tag & 0xffff) as u16;
        let end_s = self.secs(done.finished);
        if let Some(v) = self.vms.iter_mut().find(|v| v.tenant == t) {
            if let State::Migrating { jobs } = v.state {
                if jobs <= 1 {
                    v.round.end_s = end_s;
                    self.rounds.push(v.round.clone());
                    v.state = State::Idle;
                } else {
                    v.state = State::Migrating { jobs: jobs - 1 };
                }
            }
        }
    }

    fn report(&self, out: &mut PolicyReport) {
        out.insert("tracker".into(), json!(self.s.tracker));
        out.insert("migration".into(), json!(self.s.migration));
        out.insert("classifier".into(), json!(self.s.classifier));
        out.insert("mode".into(), json!(self.s.mode));
        out.insert("monitor_window_s".into(), json!(self.s.monitor_window_s));
        out.insert("windows_started".into(), json!(self.window.periods()));
        out.insert("clock_switches".into(), json!(self.switches));
        out.insert("rounds".into(), json!(self.rounds));
        out.insert("windows".into(), json!(self.windows));
        if self.s.multi_level_queue && self.s.tracker == Tracker::Gpt {
            out.insert("queue_levels".into(), json!(self.queue.histogram()));
        }
        let vms: Vec<_> = self
            .vms
            .iter()
            .map(|v| json!({ "tenant": v.tenant, "initial_dram_frames": v.initial_dram, "dram_frames": v.dram, "counter": v.counter, "gpt_pages": v.nodes.len(), "unfinished": v.state != State::Idle }))
            .collect();
        out.insert("vms".into(), json!(vms));
        // The unit of the `*_frames` figures: base frames.
        out.insert("frame_bytes".into(), json!(4096));
        let pacing = self.window.report("the monitoring window");
        out.insert("pacing".into(), json!(pacing));
        out.insert("thp".into(), json!(self.thp));
    }
}
