//! Thermostat (Agarwal & Wenisch, ASPLOS 2017): huge-page-aware placement of cold
//! pages in slow memory under a tolerable-slowdown target.
//!
//! All memory starts in the fast tier as huge pages (the `thermostat` preset turns on
//! THP). Every sampling period has three equal scans (Fig. 4):
//! 1. **split** a random `sample_fraction` of the fast tier's huge pages into base
//!    pages and clear their Accessed bits (§3.2);
//! 2. **poison** at most `max_poisoned` of the base pages found accessed in each
//!    sampled huge page; every TLB miss to a poisoned page then takes a
//!    BadgerTrap-style fault, which is counted (§3.3);
//! 3. **classify**: a sampled huge page's access rate is the mean rate of its
//!    poisoned base pages scaled by its number of accessed base pages (§3.2); pages
//!    are sorted by rate and the coldest go to slow memory while their summed rate
//!    stays within `f·x/(100·t_s)` (§3.4); the rest are merged back in place.
//!
//! Pages in slow memory stay poisoned, so their accesses are counted too; at each
//! classify scan the hottest are moved back until the slow-memory access rate is
//! under `x/(100·t_s)` (§3.5), which also follows phase changes.
//!
//! Every step goes through the mechanism layer and pays for itself: splits, A-bit
//! scans, poisoning (with shootdowns), faults (`machine.costs.poison_fault_ns`, ≈1 µs),
//! copies into and out of the slow tier, merges. Each scan's work is a job of one
//! background kernel thread (§3.1), run over simulated time beside the application:
//! the application cores pay the faults, the shootdown IPIs and the memory traffic as
//! it happens, not the thread's CPU time (reported as `threads[0].busy_cycles`). A
//! scan that comes due while the thread is still busy waits for it (the pacer reports
//! how often and how long).
//!
//! Time: the paper's period is 30 s; simulated runs are usually far shorter, so with
//! `periods_per_run > 0` (the preset uses 20) the run is cut into that many periods of
//! equal reference counts and the report says so. Rates are always per simulated
//! second. The records behind the rates (fault counts per page) live in a monitoring
//! [`Tracker`], indexed by page number.


use super::{Policy, Requirements};
use crate::machine::{FaultEvent, FaultKind, MachineInfo, Observer, PageRef, RefOutcome, ScanEvent, TierId};
use crate::mechanism::{Job, JobDone, JobId, Mechanisms, Op, ScanMode, Scope, ThreadId, ThreadKind};
use crate::monitor::{Pacer, Period, Tracker};
use crate::params;
use crate::rng::Rng;
use crate::trace::Access;
use serde::Serialize;
use serde_json::json;

params! {
    /// Parameters of Thermostat. Defaults are the paper's evaluation settings (§5).
    pub struct ThermostatConfig {
        /// Tolerable slowdown x in percent (§3.4; §5 evaluates 3, 6 and 10).
        pub tolerable_slowdown_pct: f64 = 3.0,
        /// Slowdown targets that take effect from a given period on, as [period, percent]
        /// pairs (the target can be changed at run time through cgroups, §5).
        pub target_changes: Vec<[f64; 2]> = Vec::new(),
        /// Cost t_s of one slow-memory access in ns for the budget x/(100·t_s) (§3.4).
        /// 0 = the slow tier's read-miss latency plus the poison-fault latency: here a
        /// TLB miss to a monitored slow page pays both (in the paper the fault was the
        /// emulated slow access, ≈1 µs).
        pub slow_access_ns: f64 = 0.0,
        /// Fraction of huge pages split and sampled per period (§3.2: 5 %).
        pub sample_fraction: f64 = 0.05,
        /// Most accessed base pages poisoned per sampled huge page (§3.2: 50).
        pub max_poisoned: u32 = 50,
        /// Sampling period in simulated seconds (§5: 30 s), split into three equal scans.
        pub period_s: f64 = 30.0,
        /// If above 0, ignore `period_s` and cut the run into this many periods of equal
        /// reference counts (for runs much shorter than many 30 s periods).
        pub periods_per_run: u32 = 0,
        /// Seed of the random sampling.
        pub seed: u64 = 1,
    }
}

/// The budget of slow-memory accesses per second for a slowdown of `x_pct` percent
/// when one slow access costs `t_s_ns` (§3.4: x / (100 · t_s)).
pub fn access_budget(x_pct: f64, t_s_ns: f64) -> f64 {
    x_pct / (100.0 * t_s_ns * 1e-9)
}

/// Estimated accesses per second of a sampled huge page: the mean rate of its poisoned
/// base pages (`faults` each over `seconds`) times its number of accessed base pages
/// (§3.2: the accessed pages are a random sample; the others have negligible rates).
pub fn estimate_rate(faults: &[u64], accessed: u64, seconds: f64) -> f64 {
    if faults.is_empty() || seconds <= 0.0 {
        return 0.0;
    }
    let mean = faults.iter().sum::<u64>() as f64 / faults.len() as f64 / seconds;
    mean * accessed as f64
}

/// Which pages go to slow memory: sorted by rate, the coldest are taken while their
/// summed rate stays within `budget` (§3.4). Returns one flag per page.
pub fn select_cold(rates: &[f64], budget: f64) -> Vec<bool> {
    let mut order: Vec<usize> = (0..rates.len()).collect();
    order.sort_by(|&a, &b| rates[a].total_cmp(&rates[b]).then(a.cmp(&b)));
    let mut cold = vec![false; rates.len()];
    let mut sum = 0.0;
    for i in order {
        if sum + rates[i] > budget {
            break;
        }
        sum += rates[i];
        cold[i] = true;
    }
    cold
}

/// Which slow pages go back to fast memory: the hottest, until the rest's summed rate
/// is within `target` (§3.5). Returns their indices, hottest first.
pub fn correct(rates: &[f64], target: f64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rates.len()).collect();
    order.sort_by(|&a, &b| rates[b].total_cmp(&rates[a]).then(a.cmp(&b)));
    let mut total: f64 = rates.iter().sum();
    let mut back = Vec::new();
    for i in order {
        if total <= target {
            break;
        }
        total -= rates[i];
        back.push(i);
    }
    back
}

/// A uniformly random `k` of `items` (a partial Fisher–Yates shuffle in place).
fn choose<'a, T>(rng: &mut Rng, items: &'a mut [T], k: usize) -> &'a [T] {
    for i in 0..k {
        let j = i + rng.below((items.len() - i) as u64) as usize;
        items.swap(i, j);
    }
    &items[..k]
}

/// The thread every scan's work runs on, and the tags of its jobs.
const THREAD: ThreadId = ThreadId(0);
const SPLIT: u64 = 0;
const SAMPLE_SCAN: u64 = 1;
const POISON: u64 = 2;
const CLASSIFY: u64 = 3;
const FALLBACK: u64 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scan {
    Split,
    Poison,
    Classify,
}

/// A huge page under sampling.
struct Sample {
    tenant: u16,
    region: u64,
    /// Page number of its first base page.
    page: u64,
    /// Base pages found accessed by the poison scan.
    accessed: Vec<u64>,
    /// The poisoned base pages (address, page number).
    poisoned: Vec<(u64, u64)>,
}

/// A huge page in slow memory.
struct Cold {
    tenant: u16,
    region: u64,
    page: u64,
}

/// What each group of the classify job stands for, to read its results.
enum Action {
    /// Correction: cold page `i` back to fast memory (migrate, unpoison).
    Back(usize),
    /// A sampled page's poisoned base page unpoisoned.
    Unpoison,
    /// A sample placed in slow memory (merge there, poison) or merged back in place.
    Place { sample: usize, cold: bool },
}

impl Action {
    fn ops(&self) -> usize {
        match self {
            Action::Back(_) => 2,
            Action::Unpoison => 1,
            Action::Place { cold, .. } => 1 + *cold as usize,
        }
    }
}

/// A classify scan handed to the thread, until its job is done.
struct Classifying {
    actions: Vec<Action>,
    samples: Vec<Sample>,
    /// The period it ends, and its target when it ended.
    period: u32,
    target_pct: f64,
    slow_rate: f64,
    target: f64,
    at: u64,
}

/// One period of the time series (Figs. 3 and 5–10).
#[derive(Clone, Debug, Serialize)]
struct PeriodRecord {
    period: u32,
    end_s: f64,
    target_pct: f64,
    hot_2m_bytes: u64,
    hot_4k_bytes: u64,
    cold_2m_bytes: u64,
    cold_4k_bytes: u64,
    /// Measured accesses per second to slow memory (poison faults) over the period.
    slow_rate: f64,
    /// x / (100 · t_s).
    target_rate: f64,
    sampled: usize,
    new_cold: usize,
    corrected: usize,
}

pub struct Thermostat {
    cfg: ThermostatConfig,
    rng: Rng,
    t_s_ns: f64,
    freq_hz: f64,
    huge_bytes: u64,
    huge_frames: u64,
    /// Paces the scans: three per sampling period.
    pacer: Pacer,
    /// The scan to start next.
    scan: Scan,
    /// When the running scan started, and when the running period did.
    scan_start: u64,
    period_start: u64,
    period: u32,
    /// Sampled huge pages, by (tenant, region).
    samples: Vec<Sample>,
    /// The job of the poison scan, whose visits fill `samples[].accessed`.
    sample_scan: Option<JobId>,
    classifying: Option<Classifying>,
    cold: Vec<Cold>,
    /// Poison faults per page.
    tracker: Tracker,
    history: Vec<PeriodRecord>,
    to_slow_bytes: u64,
    corrected_bytes: u64,
    splits: u64,
    poisoned_pages: u64,
    merge_failures: u64,
    /// Poison faults on sampled base pages: monitoring overhead (§3.3, §4.4).
    sample_faults: u64,
    /// Poison faults on huge pages in slow memory: the counted slow accesses (§3.5).
    slow_faults: u64,
    poison_fault_ns: f64,
    cold_fraction_sum: f64,
}

impl Observer for Thermostat {
    fn on_fault(&mut self, e: &FaultEvent) {
        if e.kind == FaultKind::Poison {
            self.tracker.record_fault(e.page);
            if e.huge {
                self.slow_faults += 1;
            } else {
                self.sample_faults += 1;
            }
        }
    }

    fn on_scan(&mut self, e: &ScanEvent) {
        if Some(JobId(e.job)) != self.sample_scan || !e.page.accessed {
            return;
        }
        let key = (e.page.tenant, e.page.addr & !(self.huge_bytes - 1));
        if let Ok(i) = self.samples.binary_search_by_key(&key, |s| (s.tenant, s.region)) {
            self.samples[i].accessed.push(e.page.addr);
        }
    }
}

impl Thermostat {
    fn target_pct(&self) -> f64 {
        let mut pct = self.cfg.tolerable_slowdown_pct;
        for &[from, x] in &self.cfg.target_changes {
            if self.period as f64 >= from {
                pct = x;
            }
        }
        pct
    }

    fn target_rate(&self) -> f64 {
        access_budget(self.target_pct(), self.t_s_ns)
    }

    fn seconds(&self, cycles: u64) -> f64 {
        cycles as f64 / self.freq_hz
    }

    /// Huge pages of every tenant, and those of them in the fast tier.
    fn huge_pages(mech: &Mechanisms) -> (u64, Vec<(PageRef, u64)>) {
        let mut all = 0;
        let mut fast = Vec::new();
        mech.pages(Scope::All, |p| {
            if p.huge {
                all += 1;
                if p.tier == TierId::FAST {
                    fast.push((p.at(), p.page));
                }
            }
        });
        (all, fast)
    }

    /// Scan 1: split a random sample of the fast tier's huge pages, clear their A bits.
    fn split_sample(&mut self, mech: &mut Mechanisms) {
        let (all_huge, mut fast_huge) = Self::huge_pages(mech);
        let k = ((all_huge as f64 * self.cfg.sample_fraction).ceil() as usize).min(fast_huge.len());
        let mut job = Job::new(SPLIT);
        self.samples.clear();
        for &(page, number) in choose(&mut self.rng, &mut fast_huge, k) {
            let range = Scope::Range { tenant: page.tenant, start: page.addr, end: page.addr + self.huge_bytes };
            job.push(Op::Split { page }).then(Op::Scan { scope: range, mode: ScanMode::Clear });
            self.samples.push(Sample { tenant: page.tenant, region: page.addr, page: number, accessed: Vec::new(), poisoned: Vec::new() });
        }
        self.samples.sort_by_key(|s| (s.tenant, s.region));
        let _ = mech.submit(THREAD, job);
    }

    /// Scan 2: find each sample's accessed base pages (then poison a random few, when
    /// the scan is done).
    fn scan_samples(&mut self, mech: &mut Mechanisms) {
        let mut job = Job::new(SAMPLE_SCAN);
        for s in &self.samples {
            job.push(Op::Scan { scope: Scope::Range { tenant: s.tenant, start: s.region, end: s.region + self.huge_bytes }, mode: ScanMode::Read });
        }
        self.sample_scan = mech.submit(THREAD, job).ok();
    }

    /// The poison scan is done: poison at most `max_poisoned` random accessed base
    /// pages of each sample.
    fn poison_samples(&mut self, mech: &mut Mechanisms) {
        self.sample_scan = None;
        let mut job = Job::new(POISON);
        for s in &mut self.samples {
            let n = s.accessed.len().min(self.cfg.max_poisoned as usize);
            for &addr in choose(&mut self.rng, &mut s.accessed, n) {
                let number = s.page + ((addr - s.region) >> 12);
                job.push(Op::Poison { page: PageRef::new(s.tenant, addr) });
                s.poisoned.push((addr, number));
            }
        }
        for s in &self.samples {
            for &(_, number) in &s.poisoned {
                self.tracker.reset_faults_in(number, 1);
            }
        }
        let _ = mech.submit(THREAD, job);
    }

    /// Scan 3: correct the slow set (§3.5), classify the sample (§3.2–3.4) and merge it
    /// back, as one job.
    fn classify(&mut self, mech: &mut Mechanisms, now: u64) {
        // Cold pages were counted since the previous classify scan (one period).
        let period_s = self.seconds(now - self.period_start).max(1e-12);
        self.period_start = now;
        let target = self.target_rate();
        let rates: Vec<f64> = self.cold.iter().map(|c| self.tracker.faults_in(c.page, self.huge_frames) as f64 / period_s).collect();
        let slow_rate = rates.iter().sum();
        for c in &self.cold {
            self.tracker.reset_faults_in(c.page, self.huge_frames);
        }
        let mut job = Job::new(CLASSIFY);
        let mut actions = Vec::new();
        for i in correct(&rates, target) {
            let page = PageRef::new(self.cold[i].tenant, self.cold[i].region);
            job.push(Op::Migrate { page, to: TierId::FAST }).then(Op::Unpoison { page });
            actions.push(Action::Back(i));
        }
        // The sample's rates over the poison-to-classify scan.
        let scan_s = self.seconds(now - self.scan_start).max(1e-12);
        let samples = std::mem::take(&mut self.samples);
        let est: Vec<f64> = samples
            .iter()
            .map(|s| {
                let f: Vec<u64> = s.poisoned.iter().map(|&(_, n)| self.tracker.faults_in(n, 1)).collect();
                estimate_rate(&f, s.accessed.len() as u64, scan_s)
            })
            .collect();
        for s in &samples {
            for &(addr, _) in &s.poisoned {
                job.push(Op::Unpoison { page: PageRef::new(s.tenant, addr) });
                actions.push(Action::Unpoison);
            }
        }
        let (all_huge, _) = Self::huge_pages(mech);
        let f = samples.len() as f64 / (all_huge + samples.len() as u64).max(1) as f64;
        for (i, (s, &cold)) in samples.iter().zip(&select_cold(&est, f * target)).enumerate() {
            let page = PageRef::new(s.tenant, s.region);
            if cold {
                job.push(Op::Merge { page, to: TierId::SLOW }).then(Op::Poison { page });
            } else {
                job.push(Op::Merge { page, to: TierId::FAST });
            }
            actions.push(Action::Place { sample: i, cold });
        }
        let (period, target_pct) = (self.period, self.target_pct());
        self.classifying = Some(Classifying { actions, samples, period, target_pct, slow_rate, target, at: now });
        let _ = mech.submit(THREAD, job);
    }

    /// The classify job is done: update the slow set from what succeeded, merge back in
    /// place the samples slow memory had no room for, and record the period.
    fn classified(&mut self, done: &JobDone, mech: &mut Mechanisms) {
        let Some(c) = self.classifying.take() else { return };
        let mut results = done.results.iter();
        let mut back = Vec::new();
        let mut fallback = Job::new(FALLBACK);
        let mut new_cold = 0;
        for a in &c.actions {
            let r: Vec<bool> = results.by_ref().take(a.ops()).map(|r| r.is_ok()).collect();
            match *a {
                Action::Back(i) if r[0] => back.push(i),
                Action::Place { sample, cold: true } => {
                    let s = &c.samples[sample];
                    if r[0] {
                        self.cold.push(Cold { tenant: s.tenant, region: s.region, page: s.page });
                        self.to_slow_bytes += self.huge_bytes;
                        new_cold += 1;
                    } else {
                        fallback.push(Op::Merge { page: PageRef::new(s.tenant, s.region), to: TierId::FAST });
                    }
                }
                // No room for a huge frame: the region stays split (counted as 4 KiB pages).
                Action::Place { cold: false, .. } if !r[0] => self.merge_failures += 1,
                _ => {}
            }
        }
        self.corrected_bytes += back.len() as u64 * self.huge_bytes;
        back.sort_unstable();
        for &i in back.iter().rev() {
            self.cold.swap_remove(i);
        }
        if !fallback.is_empty() {
            let _ = mech.submit(THREAD, fallback);
        }
        self.record(mech, &c, new_cold, back.len());
    }

    /// Records the period a classify scan ended, with the footprint in each tier now.
    fn record(&mut self, mech: &Mechanisms, c: &Classifying, new_cold: usize, corrected: usize) {
        let (mut h2, mut h4, mut c2, mut c4) = (0, 0, 0, 0);
        mech.pages(Scope::All, |p| match (p.tier == TierId::FAST, p.huge) {
            (true, true) => h2 += p.bytes,
            (true, false) => h4 += p.bytes,
            (false, true) => c2 += p.bytes,
            (false, false) => c4 += p.bytes,
        });
        let all = (h2 + h4 + c2 + c4).max(1);
        self.cold_fraction_sum += (c2 + c4) as f64 / all as f64;
        self.history.push(PeriodRecord {
            period: c.period,
            end_s: self.seconds(c.at),
            target_pct: c.target_pct,
            hot_2m_bytes: h2,
            hot_4k_bytes: h4,
            cold_2m_bytes: c2,
            cold_4k_bytes: c4,
            slow_rate: c.slow_rate,
            target_rate: c.target,
            sampled: c.samples.len(),
            new_cold,
            corrected,
        });
    }

    /// Starts the next scan when its time has come and the thread has finished the
    /// last one's work (§3.1: the scans run in a kernel thread).
    fn advance(&mut self, mech: &mut Mechanisms) {
        let now = mech.now();
        if !mech.thread(THREAD).is_ok_and(|t| t.idle) {
            self.pacer.wait(now);
            return;
        }
        self.pacer.start(now);
        match self.scan {
            Scan::Split => {
                self.split_sample(mech);
                self.scan = Scan::Poison;
            }
            Scan::Poison => {
                self.scan_samples(mech);
                self.scan = Scan::Classify;
            }
            Scan::Classify => {
                self.classify(mech, now);
                self.period += 1;
                self.scan = Scan::Split;
            }
        }
        self.scan_start = now;
    }
}

impl Policy for Thermostat {
    type Config = ThermostatConfig;

    fn requirements(_: &ThermostatConfig) -> Requirements<()> {
        Requirements { threads: vec![ThreadKind::Kernel], ..Requirements::default() }
    }

    fn new(cfg: ThermostatConfig, m: &MachineInfo) -> anyhow::Result<Self> {
        use anyhow::bail;
        let x = cfg.tolerable_slowdown_pct;
        if !(x.is_finite() && x > 0.0 && x < 100.0) {
            bail!("policy.thermostat.tolerable_slowdown_pct: must be in (0, 100), got {x}");
        }
        if cfg.target_changes.iter().any(|&[p, x]| !(p >= 0.0 && x > 0.0 && x < 100.0)) {
            bail!("policy.thermostat.target_changes: each entry is [period ≥ 0, percent in (0, 100)]");
        }
        if !(cfg.sample_fraction > 0.0 && cfg.sample_fraction <= 1.0) {
            bail!("policy.thermostat.sample_fraction: must be in (0, 1], got {}", cfg.sample_fraction);
        }
        if cfg.max_poisoned == 0 {
            bail!("policy.thermostat.max_poisoned: must be positive");
        }
        if !(cfg.slow_access_ns.is_finite() && cfg.slow_access_ns >= 0.0) {
            bail!("policy.thermostat.slow_access_ns: must be ≥ 0, got {}", cfg.slow_access_ns);
        }
        if !m.has(TierId::SLOW) {
            bail!("policy.thermostat: needs a slow tier");
        }
        if !(cfg.period_s.is_finite() && cfg.period_s > 0.0) {
            bail!("policy.thermostat.period_s: must be positive, got {}", cfg.period_s);
        }
        let t_s_ns = if cfg.slow_access_ns > 0.0 { cfg.slow_access_ns } else { m.tier(TierId::SLOW).read_ns + m.poison_fault_ns };
        // Three scans per sampling period (Fig. 4).
        let scan = Period::from_config(cfg.period_s / 3.0, cfg.periods_per_run.saturating_mul(3));
        let pacer = Pacer::new(scan, m, "policy.thermostat.periods_per_run").map_err(anyhow::Error::msg)?;
        Ok(Thermostat {
            rng: Rng::new(cfg.seed),
            t_s_ns,
            freq_hz: m.freq_ghz * 1e9,
            huge_bytes: m.huge_page_bytes,
            huge_frames: m.huge_page_bytes >> 12,
            pacer,
            scan: Scan::Split,
            scan_start: 0,
            period_start: 0,
            period: 0,
            samples: Vec::new(),
            sample_scan: None,
            classifying: None,
            cold: Vec::new(),
            tracker: Tracker::new(),
            history: Vec::new(),
            to_slow_bytes: 0,
            corrected_bytes: 0,
            splits: 0,
            poisoned_pages: 0,
            merge_failures: 0,
            sample_faults: 0,
            slow_faults: 0,
            poison_fault_ns: m.poison_fault_ns,
            cold_fraction_sum: 0.0,
            cfg,
        })
    }

    #[inline]
    fn on_reference(&mut self, _a: &Access, _o: &RefOutcome, mech: &mut Mechanisms) {
        if self.pacer.due_in(mech) {
            self.advance(mech);
        }
    }

    fn on_job_done(&mut self, done: &JobDone, mech: &mut Mechanisms) {
        match done.tag {
            SPLIT => {
                // Samples whose split was refused are not sampled.
                let ok: Vec<bool> = done.results.chunks(2).map(|r| r[0].is_ok()).collect();
                let mut it = ok.iter();
                self.samples.retain(|_| *it.next().unwrap_or(&false));
                self.splits += self.samples.len() as u64;
            }
            SAMPLE_SCAN => self.poison_samples(mech),
            POISON => self.poisoned_pages += done.results.iter().filter(|r| r.is_ok()).count() as u64,
            CLASSIFY => self.classified(done, mech),
            _ => self.merge_failures += done.results.iter().filter(|r| r.is_err()).count() as u64,
        }
    }

    fn report(&self, out: &mut super::PolicyReport) {
        let end_s = self.history.last().map_or(0.0, |h| h.end_s).max(1e-12);
        let mb = |b: u64| b as f64 / 1e6;
        let cold = if self.history.is_empty() { 0.0 } else { self.cold_fraction_sum / self.history.len() as f64 };
        let pacing = self.pacer.report(&format!("the paper's {} s period (three scans)", self.cfg.period_s));
        out.insert(
            "period".into(),
            if pacing.scaled_to_run {
                json!({
                    "scaled_to_run": true,
                    "periods_per_run": self.cfg.periods_per_run,
                    "refs_per_period": pacing.period_references.unwrap_or(0) * 3,
                    "note": pacing.note,
                })
            } else {
                json!({ "scaled_to_run": false, "period_s": self.cfg.period_s })
            },
        );
        out.insert("pacing".into(), json!(pacing));
        out.insert("slow_access_ns".into(), json!(self.t_s_ns));
        out.insert("periods".into(), json!(self.history));
        out.insert("average_cold_fraction".into(), json!(cold));
        // Table 4: memory spending relative to all-DRAM when slow memory costs r of DRAM.
        out.insert(
            "cost_savings".into(),
            json!({ "1/3": cold * (1.0 - 1.0 / 3.0), "1/4": cold * (1.0 - 0.25), "1/5": cold * (1.0 - 0.2) }),
        );
        // Table 3: migration and false-classification rates.
        out.insert("migration_mb_per_s".into(), json!(mb(self.to_slow_bytes + self.corrected_bytes) / end_s));
        out.insert("false_classification_mb_per_s".into(), json!(mb(self.corrected_bytes) / end_s));
        out.insert("splits".into(), json!(self.splits));
        out.insert("poisoned_pages".into(), json!(self.poisoned_pages));
        out.insert("merge_failures".into(), json!(self.merge_failures));
        // Monitoring overhead apart from slow-memory stalls: the faults on sampled pages
        // cost the application time it would not spend with all memory fast.
        out.insert(
            "monitoring".into(),
            json!({
                "sample_faults": self.sample_faults,
                "slow_faults": self.slow_faults,
                "sample_fault_seconds": self.sample_faults as f64 * self.poison_fault_ns * 1e-9,
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_of_three_percent_at_one_microsecond() {
        // §3.4: 3 % of a second spent in 1 µs accesses is 30 000 accesses per second.
        assert!((access_budget(3.0, 1000.0) - 30_000.0).abs() < 1e-6);
        assert!((access_budget(10.0, 500.0) - 200_000.0).abs() < 1e-6);
    }

    #[test]
    fn rate_is_the_sample_mean_scaled_by_accessed_pages() {
        // Poisoned pages took 10, 20 and 30 faults in 2 s: mean 10 per second per page;
        // 120 base pages were accessed → 1200 accesses per second for the huge page.
        assert!((estimate_rate(&[10, 20, 30], 120, 2.0) - 1200.0).abs() < 1e-9);
        assert_eq!(estimate_rate(&[], 0, 1.0), 0.0, "nothing accessed: cold");
    }

    #[test]
    fn coldest_pages_fill_the_budget() {
        // Sorted: 5 (idx 2), 10 (idx 0), 20 (idx 3), 40 (idx 1). Budget 35 → 5 + 10 + 20.
        assert_eq!(select_cold(&[10.0, 40.0, 5.0, 20.0], 35.0), vec![true, false, true, true]);
        assert_eq!(select_cold(&[10.0, 40.0], 9.0), vec![false, false]);
    }

    #[test]
    fn correction_moves_the_hottest_back_until_under_target() {
        // Total 100 > 50: remove 45 (idx 1) → 55 > 50; remove 30 (idx 3) → 25 ≤ 50.
        assert_eq!(correct(&[10.0, 45.0, 15.0, 30.0], 50.0), vec![1, 3]);
        assert!(correct(&[10.0, 20.0], 50.0).is_empty());
    }
}
