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

use super::{PageSize, Policy, PolicyReport, Requirements};
use crate::machine::placement::Placement;
use crate::machine::{MachineInfo, Observer, PageInfo, PageRef, RefOutcome, TierId};
use crate::mechanism::{Colour, Executor, GptNode, Job, JobDone, Mechanisms, MoveHow, Op, ScanMode, Scope, ThreadId, ThreadKind};
use crate::monitor::{degree, sort_by_degree, Filtered, MultiLevelQueue, Pacer, Period};
use crate::params;
use crate::policy::params::Params;
use crate::trace::Access;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::marker::PhantomData;

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

/// Counts one window's view of base page `page` (accessed / dirty as read) through
/// the queue's filter; returns whether to clear its bits.
fn count(queue: Option<&mut MultiLevelQueue>, reads: &mut Vec<u8>, writes: &mut Vec<u8>, page: u64, accessed: bool, dirty: bool) -> bool {
    let seen = accessed || dirty;
    let f = match queue {
        Some(q) => q.window(page, seen),
        None => Filtered { clear: true, counted: seen },
    };
    if f.counted {
        let i = page as usize;
        if i >= reads.len() {
            reads.resize(i + 1, 0);
            writes.resize(i + 1, 0);
        }
        // A written page counts as a write; one only read, as a read.
        if dirty {
            writes[i] = writes[i].saturating_add(1);
        } else {
            reads[i] = reads[i].saturating_add(1);
        }
    }
    f.clear && seen
}

/// Clears the EPT dirty bits of guest page-table pages `nodes` of VM `t` (each EPT
/// page once: nodes may share a huge one).
fn clear_ept_dirty(t: u16, nodes: &[GptNode], mech: &mut Mechanisms) {
    let mut done: Vec<u64> = Vec::new();
    for n in nodes {
        let Ok(p) = mech.page(PageRef::new(t, n.gpfn << 12)) else { continue };
        if p.huge {
            if done.contains(&p.addr) {
                continue;
            }
            done.push(p.addr);
        }
        let _ = mech.clear_ept_dirty(t, p.addr);
    }
}

/// A VM page as classification sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// In DRAM now.
    pub fast: bool,
    /// Base pages it covers.
    pub frames: u64,
    pub degree: u64,
}

/// What a round moves: indexes into the candidates, hottest promotion first and
/// coldest demotion first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Moves {
    /// Base pages in the hot set.
    pub hot_frames: u64,
    pub promote: Vec<usize>,
    pub demote: Vec<usize>,
}

/// Chooses the hot set of a VM holding `dram` base pages of DRAM (§4.2.2) and the
/// moves that bring it there. `Sort`: the hottest pages (degree above 0) that fit in
/// `dram`, bucket-sorted, DRAM residents first among equal degrees (so ties do not
/// move); `Fixed`: pages of degree above `threshold`, as many as fit. Hot NVM pages
/// are promoted; the coldest DRAM pages outside the hot set are demoted, as many as
/// the promotions need beyond the DRAM the VM may still take (`dram` minus what it
/// holds, at most `free_fast`), plus whatever it holds beyond `dram`.
pub fn plan_moves(pages: &[Candidate], max_degree: u64, dram: u64, free_fast: u64, classifier: Classifier, threshold: u64) -> Moves {
    let mut items: Vec<(usize, u64)> = pages.iter().enumerate().filter(|(_, c)| c.fast).map(|(k, c)| (k, c.degree)).collect();
    items.extend(pages.iter().enumerate().filter(|(_, c)| !c.fast).map(|(k, c)| (k, c.degree)));
    let order = sort_by_degree(&items, max_degree);
    let mut hot = vec![false; pages.len()];
    let mut hot_frames = 0;
    for &k in &order {
        let c = pages[k];
        let qualifies = match classifier {
            Classifier::Sort => c.degree > 0,
            Classifier::Fixed => c.degree > threshold,
        };
        if !qualifies {
            break;
        }
        if hot_frames + c.frames <= dram {
            hot[k] = true;
            hot_frames += c.frames;
        }
    }
    let held: u64 = pages.iter().filter(|c| c.fast).map(|c| c.frames).sum();
    let promote: Vec<usize> = order.iter().copied().filter(|&k| hot[k] && !pages[k].fast).collect();
    let promote_frames: u64 = promote.iter().map(|&k| pages[k].frames).sum();
    let room = dram.saturating_sub(held).min(free_fast);
    let mut need = promote_frames.saturating_sub(room) + held.saturating_sub(dram);
    let mut demote = Vec::new();
    for &k in order.iter().rev() {
        if need == 0 {
            break;
        }
        if pages[k].fast && !hot[k] {
            demote.push(k);
            need = need.saturating_sub(pages[k].frames);
        }
    }
    Moves { hot_frames, promote, demote }
}

/// Pool mode (§4.4): the DRAM a VM holds next, in base pages: `pool_hot_fraction` of
/// its `counted` pages (degree at least `pool_min_degree`), kept within
/// `pool_min_share`..`pool_max_share` of its `initial` DRAM, and no more than the
/// fast tier's `fast_frames` minus what the `others` hold.
pub fn pool_dram(counted: u64, initial: u64, others: u64, fast_frames: u64, s: &HmmVConfig) -> u64 {
    let want = (counted as f64 * s.pool_hot_fraction).ceil() as u64;
    let lo = (initial as f64 * s.pool_min_share) as u64;
    let hi = ((initial as f64 * s.pool_max_share) as u64).max(lo);
    want.clamp(lo, hi).min(fast_frames.saturating_sub(others))
}

/// A clock switch for a VM with this counter (§4.1.3): tracking runs if it is 0;
/// otherwise it falls by one.
pub fn switch_on(counter: &mut u32) -> bool {
    if *counter == 0 {
        return true;
    }
    *counter -= 1;
    false
}

/// A round that migrated `migrated_mb` ended: under `quiet_round_mb`, the counter
/// rises, to at most `counter_max` (§4.1.3).
pub fn round_done(counter: &mut u32, migrated_mb: f64, s: &HmmVConfig) {
    if migrated_mb < s.quiet_round_mb {
        *counter = (*counter + 1).min(s.counter_max);
    }
}

/// Copies the counts of base page `first` to the `n − 1` base pages after it.
fn spread(reads: &mut Vec<u8>, writes: &mut Vec<u8>, first: u64, n: u64) {
    let (f, end) = (first as usize, (first + n) as usize);
    if end > reads.len() {
        reads.resize(end, 0);
        writes.resize(end, 0);
    }
    let (r, w) = (reads[f], writes[f]);
    reads[f..end].fill(r);
    writes[f..end].fill(w);
}

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

    /// Starts a round: counts from zero; the GPT tracker collects the guest's
    /// last-level page-table pages, clears their entries' A/D bits and their EPT dirty
    /// bits, flushes and turns PML on; the EPT tracker clears the whole EPT's bits.
    fn begin_round(&mut self, i: usize, mech: &mut Mechanisms) {
        let t = self.vms[i].tenant;
        // Forget the last round's counts of this VM's pages.
        let mut mine = Vec::new();
        mech.pages(Scope::Tenant(t), |p| mine.push((p.page, p.base_pages())));
        for (first, n) in mine {
            for b in first..(first + n).min(self.reads.len() as u64) {
                self.reads[b as usize] = 0;
                self.writes[b as usize] = 0;
            }
        }
        match self.s.tracker {
            Tracker::Ept => {
                mech.scan(Scope::Tenant(t), ScanMode::Clear, |_| {});
            }
            Tracker::Gpt => {
                let Ok(nodes) = mech.collect_gpt(t, self.vms[i].vcpu) else { return };
                let huge: Vec<bool> = nodes.iter().map(|n| mech.page(PageRef::new(t, n.gpfn << 12)).is_ok_and(|p| p.huge)).collect();
                let shift = self.huge_frames.trailing_zeros();
                let v = &mut self.vms[i];
                v.node_of.clear();
                v.huge_regions.clear();
                for (k, n) in nodes.iter().enumerate() {
                    let g = n.gpfn as usize;
                    if g >= v.node_of.len() {
                        v.node_of.resize(g + 1, 0);
                    }
                    v.node_of[g] = k as u32 + 1;
                    if huge[k] {
                        v.huge_regions.entry(n.gpfn >> shift).or_default().push(k as u32);
                    }
                }
                v.node_seen = vec![u32::MAX; nodes.len()];
                v.nodes = nodes.clone();
                mech.scan_gpt(t, &nodes, |e| e.accessed || e.dirty);
                clear_ept_dirty(t, &nodes, mech);
                let _ = mech.take_pml_log(t);
                let _ = mech.flush_vm(t);
                mech.set_pml(t, true);
            }
        }
    }

    /// The GPT tracker's window: the guest page-table pages PML logged, scanned
    /// through the queue's filter, their EPT dirty bits cleared again, one flush.
    /// Returns (pages scanned, entries read, bytes those entries map).
    fn scan_logged(&mut self, i: usize, mech: &mut Mechanisms) -> (u64, u64, u64) {
        let t = self.vms[i].tenant;
        self.windows_done = self.windows_done.wrapping_add(1);
        let stamp = self.windows_done;
        let log = mech.take_pml_log(t);
        let shift = self.huge_frames.trailing_zeros();
        let v = &mut self.vms[i];
        let mut nodes = Vec::new();
        let mut take = |k: usize, v: &mut Vm| {
            if v.node_seen[k] != stamp {
                v.node_seen[k] = stamp;
                nodes.push(v.nodes[k]);
            }
        };
        for g in log {
            if let Some(&k) = v.node_of.get(g as usize).filter(|&&k| k > 0) {
                take(k as usize - 1, v);
            }
            if let Some(ks) = v.huge_regions.get(&(g >> shift)).cloned() {
                for k in ks {
                    take(k as usize, v);
                }
            }
        }
        let (queue, reads, writes) = (&mut self.queue, &mut self.reads, &mut self.writes);
        let mlq = self.s.multi_level_queue;
        let huge_bytes = self.huge_frames << 12;
        let mut bytes = 0;
        let huge_frames = self.huge_frames;
        let entries = mech.scan_gpt(t, &nodes, |e| {
            let Some(p) = e.page else { return false };
            bytes += if e.huge { huge_bytes } else { 4096 };
            // The queue keeps one record per guest page (its first base page); what a
            // guest huge page's bits say is counted on every base page it covers.
            let clear = count(mlq.then_some(&mut *queue), reads, writes, p, e.accessed, e.dirty);
            if e.huge {
                spread(reads, writes, p, huge_frames);
            }
            clear
        });
        clear_ept_dirty(t, &nodes, mech);
        if !nodes.is_empty() {
            let _ = mech.flush_vm(t);
        }
        (nodes.len() as u64, entries, bytes)
    }

    /// The EPT tracker's window: every EPT entry of the VM read and cleared.
    fn scan_ept(&mut self, t: u16, mech: &mut Mechanisms) -> (u64, u64, u64) {
        let (reads, writes) = (&mut self.reads, &mut self.writes);
        let mut bytes = 0;
        let sum = mech.scan(Scope::Tenant(t), ScanMode::Clear, |p| {
            bytes += p.bytes;
            for b in p.page..p.page + p.base_pages() {
                count(None, reads, writes, b, p.accessed, p.dirty);
            }
        });
        (0, sum.entries, bytes)
    }

    /// Chooses the hot set of VM `i` and hands its moves to the migration threads.
    fn classify_and_move(&mut self, i: usize, mech: &mut Mechanisms) {
        let t = self.vms[i].tenant;
        let mut pages: Vec<(PageInfo, u64)> = Vec::new();
        mech.pages(Scope::Tenant(t), |p| pages.push((p, 0)));
        for (p, d) in &mut pages {
            *d = self.degree(p);
        }
        mech.compute(self.s.sort_cycles_per_page * pages.len() as u64);
        let cands: Vec<Candidate> = pages.iter().map(|(p, d)| Candidate { fast: p.tier == TierId::FAST, frames: p.base_pages(), degree: *d }).collect();
        let held: u64 = cands.iter().filter(|c| c.fast).map(|c| c.frames).sum();
        let tracked: u64 = cands.iter().filter(|c| c.degree > 0).map(|c| c.frames).sum();
        // The DRAM this VM may hold this round.
        let mut dram = self.vms[i].dram;
        if self.s.mode == Mode::Pool {
            let counted: u64 = cands.iter().filter(|c| c.degree >= self.s.pool_min_degree).map(|c| c.frames).sum();
            let others: u64 = self.vms.iter().filter(|v| v.tenant != t).map(|v| v.dram).sum();
            dram = pool_dram(counted, self.vms[i].initial_dram, others, self.fast_frames, &self.s);
            self.vms[i].dram = dram;
            mech.set_fast_quota(t, Some(dram));
        }
        let free = mech.free_frames(TierId::FAST);
        let Moves { hot_frames, promote, demote } = plan_moves(&cands, self.max_degree(), dram, free, self.s.classifier, self.s.fixed_threshold);
        let r = &mut self.vms[i].round;
        r.tracked_frames = tracked;
        r.hot_frames = hot_frames;
        r.dram_frames_before = held;
        r.dram_frames_allowed = dram;
        r.promoted_pages = promote.len() as u64;
        r.demoted_pages = demote.len() as u64;
        let moved: u64 = promote.iter().chain(&demote).map(|&k| pages[k].0.bytes).sum();
        r.migrated_mb = moved as f64 / 1e6;
        let migrated_mb = r.migrated_mb;
        let v = &mut self.vms[i];
        round_done(&mut v.counter, migrated_mb, &self.s);
        v.round.counter_after = v.counter;
        let downs: Vec<(PageRef, u64)> = demote.iter().map(|&k| (pages[k].0.at(), pages[k].0.base_pages())).collect();
        let ups: Vec<(PageRef, u64)> = promote.iter().map(|&k| (pages[k].0.at(), pages[k].0.base_pages())).collect();
        let jobs = if self.s.migrate { self.dispatch(t, &downs, &ups, mech) } else { 0 };
        let end_s = self.secs(mech.now());
        let v = &mut self.vms[i];
        if jobs == 0 {
            v.round.end_s = end_s;
            self.rounds.push(v.round.clone());
            v.state = State::Idle;
        } else {
            v.state = State::Migrating { jobs };
        }
    }

    /// Hands the moves to the migration threads, demotions of a share before its
    /// promotions; returns the jobs submitted.
    fn dispatch(&self, t: u16, downs: &[(PageRef, u64)], ups: &[(PageRef, u64)], mech: &mut Mechanisms) -> u32 {
        let threads = if self.s.migration == MoveHow::Linux { 1 } else { self.s.migration_threads.max(1) as usize };
        let mut jobs: Vec<Job> = (0..threads).map(|_| Job::new(MIGRATE | t as u64)).collect();
        match self.s.migration {
            MoveHow::Pml => {
                // Batches of at most `pages_in_flight` base pages' worth (a huge page
                // counts its base pages; a batch holds at least one page).
                let limit = self.s.pages_in_flight.max(1) as u64;
                let batches = |list: &[(PageRef, u64)]| {
                    let mut out: Vec<Vec<PageRef>> = Vec::new();
                    let mut frames = limit;
                    for &(p, n) in list {
                        if frames + n > limit {
                            out.push(Vec::new());
                            frames = 0;
                        }
                        out.last_mut().expect("pushed").push(p);
                        frames += n;
                    }
                    out
                };
                let (db, ub) = (batches(downs), batches(ups));
                for c in 0..db.len().max(ub.len()) {
                    let job = &mut jobs[c % threads];
                    for (list, to) in [(db.get(c), TierId::SLOW), (ub.get(c), TierId::FAST)] {
                        if let Some(list) = list {
                            let batch = mech.plan_pml_batch(list.iter().map(|&p| (p, to)).collect());
                            job.push(Op::MoveBatch { batch });
                        }
                    }
                }
            }
            how => {
                for k in 0..downs.len().max(ups.len()) {
                    let job = &mut jobs[k % threads];
                    if let Some(&(p, _)) = downs.get(k) {
                        job.push(Op::MoveAs { page: p, to: TierId::SLOW, how, colour: Colour::ANY });
                    }
                    if let Some(&(p, _)) = ups.get(k) {
                        job.push(Op::MoveAs { page: p, to: TierId::FAST, how, colour: Colour::ANY });
                    }
                }
            }
        }
        let mut submitted = 0;
        for (k, job) in jobs.into_iter().enumerate() {
            if !job.is_empty() && mech.submit(ThreadId(1 + k as u16), job).is_ok() {
                submitted += 1;
            }
        }
        submitted
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

#[cfg(test)]
mod tests {
    use super::*;

    fn c(fast: bool, frames: u64, degree: u64) -> Candidate {
        Candidate { fast, frames, degree }
    }

    #[test]
    fn the_hot_set_fills_dram_and_the_coldest_dram_pages_make_room() {
        let pages = [c(true, 1, 0), c(true, 1, 5), c(false, 1, 9), c(false, 1, 3), c(false, 1, 0)];
        // Degree order: 9 (slow), 5 (fast), 3 (slow), then the zeros. Two frames of
        // DRAM, none free: the hot set is {9, 5}; 9 comes up, the idle DRAM page goes.
        let m = plan_moves(&pages, 24, 2, 0, Classifier::Sort, 0);
        assert_eq!(m, Moves { hot_frames: 2, promote: vec![2], demote: vec![0] });
        // With a free DRAM frame the VM may take, nothing needs to go.
        assert_eq!(plan_moves(&pages, 24, 3, 1, Classifier::Sort, 0), Moves { hot_frames: 3, promote: vec![2, 3], demote: vec![0] });
        // Fixed threshold 8: only the 9 is hot; still exchanged with the coldest.
        assert_eq!(plan_moves(&pages, 24, 2, 0, Classifier::Fixed, 8), Moves { hot_frames: 1, promote: vec![2], demote: vec![0] });
        // A threshold nothing passes moves nothing.
        assert_eq!(plan_moves(&pages, 24, 2, 0, Classifier::Fixed, 20), Moves { hot_frames: 0, promote: vec![], demote: vec![] });
    }

    #[test]
    fn ties_stay_where_they_are_and_an_over_full_vm_gives_back() {
        // Equal degrees: the DRAM resident is hot, nothing moves.
        let pages = [c(false, 1, 3), c(true, 1, 3)];
        assert_eq!(plan_moves(&pages, 24, 1, 0, Classifier::Sort, 0), Moves { hot_frames: 1, promote: vec![], demote: vec![] });
        // Three DRAM pages for a DRAM of two: the coldest goes, with no promotion.
        let pages = [c(true, 1, 4), c(true, 1, 1), c(true, 1, 7)];
        assert_eq!(plan_moves(&pages, 24, 2, 0, Classifier::Sort, 0), Moves { hot_frames: 2, promote: vec![], demote: vec![1] });
        // A huge page that does not fit is passed over for smaller ones after it.
        let pages = [c(false, 512, 20), c(false, 1, 10), c(true, 1, 0)];
        let m = plan_moves(&pages, 24, 2, 0, Classifier::Sort, 0);
        assert_eq!((m.hot_frames, m.promote, m.demote), (1, vec![1], vec![2]));
    }

    #[test]
    fn pool_dram_follows_the_hot_set_within_its_bounds() {
        let s = HmmVConfig::default();
        // 80 % of the pages of degree ≥ 3, within 75–125 % of the initial 1 000.
        assert_eq!(pool_dram(1000, 1000, 0, 10_000, &s), 800);
        assert_eq!(pool_dram(2000, 1000, 0, 10_000, &s), 1250);
        assert_eq!(pool_dram(0, 1000, 0, 10_000, &s), 750);
        // The others hold 9 000 of 10 000: only 1 000 left in the pool.
        assert_eq!(pool_dram(2000, 1000, 9000, 10_000, &s), 1000);
    }

    #[test]
    fn the_clock_switch_skips_a_round_per_quiet_round() {
        let s = HmmVConfig::default();
        let mut counter = 0;
        assert!(switch_on(&mut counter));
        // 100 MB < 256 MB: quiet; the counter climbs to at most 3.
        for _ in 0..5 {
            round_done(&mut counter, 100.0, &s);
        }
        assert_eq!(counter, 3);
        // Three switches count down, the fourth tracks.
        assert_eq!([switch_on(&mut counter), switch_on(&mut counter), switch_on(&mut counter), switch_on(&mut counter)], [false, false, false, true]);
        // A busy round leaves it alone.
        round_done(&mut counter, 300.0, &s);
        assert_eq!(counter, 0);
    }

    #[test]
    fn counting_goes_through_the_queue_and_a_guest_huge_page_counts_everywhere() {
        let (mut q, mut reads, mut writes) = (MultiLevelQueue::new(7), Vec::new(), Vec::new());
        // Window 1: written → a write, level 1, its bits kept (not cleared).
        assert!(!count(Some(&mut q), &mut reads, &mut writes, 3, true, true));
        // Window 2: resting, counted again; the Dirty bit as it stands says write.
        assert!(count(Some(&mut q), &mut reads, &mut writes, 3, true, true), "its DND time ends: clear");
        // Window 3: only read.
        count(Some(&mut q), &mut reads, &mut writes, 3, true, false);
        assert_eq!((reads[3], writes[3]), (1, 2));
        assert_eq!(degree(reads[3] as u64, writes[3] as u64, 1, 3), 7);
        // Without the queue every seen page is cleared, an idle one is not counted.
        assert!(count(None, &mut reads, &mut writes, 5, true, false));
        assert!(!count(None, &mut reads, &mut writes, 6, false, false));
        assert_eq!((reads[5], reads.get(6).copied().unwrap_or(0)), (1, 0));
        spread(&mut reads, &mut writes, 3, 4);
        assert_eq!((&reads[3..7], &writes[3..7]), (&[1, 1, 1, 1][..], &[2, 2, 2, 2][..]));
    }
}
