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
//! copies into and out of the slow tier, merges. The scans run in a background kernel
//! thread: the application cores pay the faults, the shootdown IPIs and the memory
//! traffic, not the thread's CPU time (reported as `mechanisms.background_cycles`).
//!
//! Time: the paper's period is 30 s; simulated runs are usually far shorter, so with
//! `periods_per_run > 0` (the preset uses 20) the run is cut into that many periods of
//! equal reference counts and the report says so. Rates are always per simulated
//! second.

use super::Policy;
use crate::machine::{FaultEvent, FaultKind, MachineInfo, Observer, RefOutcome};
use crate::mechanism::Mechanisms;
use crate::params;
use crate::rng::Rng;
use crate::trace::Access;
use serde::Serialize;
use serde_json::json;
use std::collections::HashMap;

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
    /// Base pages found accessed after the split scan.
    accessed: u64,
    /// The poisoned base pages.
    poisoned: Vec<u64>,
}

/// A huge page in slow memory.
struct Cold {
    tenant: u16,
    region: u64,
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
    /// References per scan when scaled to the run; 0 = time-based scans.
    scan_refs: u64,
    scan_cycles: u64,
    refs: u64,
    next_check: u64,
    scan: Scan,
    scan_start: u64,
    period_start: u64,
    period: u32,
    samples: Vec<Sample>,
    cold: Vec<Cold>,
    /// Poison faults per poisoned page (managed-space address of the page).
    faults: HashMap<(u16, u64), u64>,
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
            if let Some(n) = self.faults.get_mut(&(e.tenant, e.addr)) {
                *n += 1;
                if e.huge {
                    self.slow_faults += 1;
                } else {
                    self.sample_faults += 1;
                }
            }
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

    /// Scan 1: split a random sample of the fast tier's huge pages, clear their A bits.
    fn split_sample(&mut self, mech: &mut Mechanisms) {
        let mut fast_huge = Vec::new();
        let mut all_huge = 0u64;
        for t in 0..mech.tenants() as u16 {
            mech.for_each_page(t, 0, u64::MAX, |p| {
                if p.huge {
                    all_huge += 1;
                    if p.tier == 0 {
                        fast_huge.push((t, p.addr));
                    }
                }
            });
        }
        let k = ((all_huge as f64 * self.cfg.sample_fraction).ceil() as usize).min(fast_huge.len());
        for &(tenant, region) in choose(&mut self.rng, &mut fast_huge, k) {
            if mech.split(tenant, region).is_err() {
                continue;
            }
            self.splits += 1;
            mech.scan(tenant, region, region + self.huge_bytes, true, |_| {});
            self.samples.push(Sample { tenant, region, accessed: 0, poisoned: Vec::new() });
        }
    }

    /// Scan 2: find each sample's accessed base pages; poison a random few.
    fn poison_sample(&mut self, mech: &mut Mechanisms) {
        for s in &mut self.samples {
            let mut accessed = Vec::new();
            mech.scan(s.tenant, s.region, s.region + self.huge_bytes, false, |p| {
                if p.accessed {
                    accessed.push(p.addr);
                }
            });
            s.accessed = accessed.len() as u64;
            let n = accessed.len().min(self.cfg.max_poisoned as usize);
            for &addr in choose(&mut self.rng, &mut accessed, n) {
                if mech.poison(s.tenant, addr).is_ok() {
                    self.faults.insert((s.tenant, addr), 0);
                    s.poisoned.push(addr);
                    self.poisoned_pages += 1;
                }
            }
        }
    }

    /// Scan 3: correct the slow set, classify the sample, merge it back.
    fn classify(&mut self, mech: &mut Mechanisms, now: u64) {
        // Cold pages were counted since the previous classify scan (one period).
        let period_s = self.seconds(now - self.period_start).max(1e-12);
        self.period_start = now;
        let target = self.target_rate();
        // §3.5: measured rate of every cold page over the period; move the hottest back.
        let rates: Vec<f64> = self
            .cold
            .iter()
            .map(|c| self.faults.get(&(c.tenant, c.region)).copied().unwrap_or(0) as f64 / period_s)
            .collect();
        let slow_rate = rates.iter().fold(0.0, |a, r| a + r);
        let back = correct(&rates, target);
        let mut moved_back = vec![false; self.cold.len()];
        for &i in &back {
            let c = &self.cold[i];
            if mech.migrate(c.tenant, c.region, 0).is_ok() {
                let _ = mech.unpoison(c.tenant, c.region);
                self.faults.remove(&(c.tenant, c.region));
                self.corrected_bytes += self.huge_bytes;
                moved_back[i] = true;
            }
        }
        let mut keep = moved_back.iter().map(|&b| !b);
        self.cold.retain(|_| keep.next().unwrap_or(true));
        for c in &self.cold {
            self.faults.insert((c.tenant, c.region), 0);
        }

        // §3.2–3.4: estimate the sampled pages' rates, place the coldest.
        let scan_s = self.seconds(now - self.scan_start).max(1e-12);
        let samples = std::mem::take(&mut self.samples);
        let est: Vec<f64> = samples
            .iter()
            .map(|s| {
                let f: Vec<u64> = s.poisoned.iter().map(|&a| self.faults.remove(&(s.tenant, a)).unwrap_or(0)).collect();
                estimate_rate(&f, s.accessed, scan_s)
            })
            .collect();
        for s in &samples {
            for &a in &s.poisoned {
                let _ = mech.unpoison(s.tenant, a);
            }
        }
        let mut all_huge = 0u64;
        for t in 0..mech.tenants() as u16 {
            mech.for_each_page(t, 0, u64::MAX, |p| all_huge += p.huge as u64);
        }
        let f = samples.len() as f64 / (all_huge + samples.len() as u64).max(1) as f64;
        let cold = select_cold(&est, f * target);
        let mut new_cold = 0;
        for (s, &is_cold) in samples.iter().zip(&cold) {
            if is_cold && mech.merge(s.tenant, s.region, 1).is_ok() {
                let _ = mech.poison(s.tenant, s.region);
                self.faults.insert((s.tenant, s.region), 0);
                self.cold.push(Cold { tenant: s.tenant, region: s.region });
                self.to_slow_bytes += self.huge_bytes;
                new_cold += 1;
            } else if mech.merge(s.tenant, s.region, 0).is_err() {
                // No room for a huge frame: the region stays split (counted as 4 KiB pages).
                self.merge_failures += 1;
            }
        }
        self.record(mech, now, slow_rate, target, samples.len(), new_cold, back.len());
    }

    #[allow(clippy::too_many_arguments)]
    fn record(&mut self, mech: &Mechanisms, now: u64, slow_rate: f64, target: f64, sampled: usize, new_cold: usize, corrected: usize) {
        let (mut h2, mut h4, mut c2, mut c4) = (0, 0, 0, 0);
        for t in 0..mech.tenants() as u16 {
            mech.for_each_page(t, 0, u64::MAX, |p| {
                let bytes = if p.huge { self.huge_bytes } else { 4096 };
                match (p.tier == 0, p.huge) {
                    (true, true) => h2 += bytes,
                    (true, false) => h4 += bytes,
                    (false, true) => c2 += bytes,
                    (false, false) => c4 += bytes,
                }
            });
        }
        let all = (h2 + h4 + c2 + c4).max(1);
        self.cold_fraction_sum += (c2 + c4) as f64 / all as f64;
        self.history.push(PeriodRecord {
            period: self.period,
            end_s: self.seconds(now),
            target_pct: self.target_pct(),
            hot_2m_bytes: h2,
            hot_4k_bytes: h4,
            cold_2m_bytes: c2,
            cold_4k_bytes: c4,
            slow_rate,
            target_rate: target,
            sampled,
            new_cold,
            corrected,
        });
    }

    /// Moves to the next scan when its time (or reference count) has come. The scans
    /// run in a kernel thread (§3.1), off the application's cores.
    fn advance(&mut self, mech: &mut Mechanisms) {
        let now = mech.now();
        if (self.scan_refs == 0 && now < self.scan_start + self.scan_cycles) || mech.background_busy() {
            // Not yet time, or the kernel thread is still busy with the previous scan:
            // the next scan waits for it.
            self.next_check = self.refs + 1024;
            return;
        }
        let mech = &mut mech.in_background();
        match self.scan {
            Scan::Split => {
                self.split_sample(mech);
                self.scan = Scan::Poison;
            }
            Scan::Poison => {
                self.poison_sample(mech);
                self.scan = Scan::Classify;
            }
            Scan::Classify => {
                self.classify(mech, now);
                self.period += 1;
                self.scan = Scan::Split;
            }
        }
        self.scan_start = mech.now();
        self.next_check = if self.scan_refs > 0 { self.refs + self.scan_refs } else { self.refs + 1024 };
    }
}

impl Policy for Thermostat {
    type Config = ThermostatConfig;

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
        if !(cfg.period_s.is_finite() && cfg.period_s > 0.0) {
            bail!("policy.thermostat.period_s: must be positive, got {}", cfg.period_s);
        }
        if !(cfg.slow_access_ns.is_finite() && cfg.slow_access_ns >= 0.0) {
            bail!("policy.thermostat.slow_access_ns: must be ≥ 0, got {}", cfg.slow_access_ns);
        }
        if m.tier_frames.len() < 2 {
            bail!("policy.thermostat: needs a slow tier");
        }
        let t_s_ns = if cfg.slow_access_ns > 0.0 {
            cfg.slow_access_ns
        } else {
            m.tier_read_ns[1] + m.poison_fault_ns
        };
        let freq_hz = m.freq_ghz * 1e9;
        let scan_refs = if cfg.periods_per_run > 0 { (m.total_refs / (3 * cfg.periods_per_run as u64)).max(1) } else { 0 };
        let scan_cycles = (cfg.period_s / 3.0 * freq_hz) as u64;
        Ok(Thermostat {
            rng: Rng::new(cfg.seed),
            t_s_ns,
            freq_hz,
            huge_bytes: m.huge_page_bytes,
            scan_refs,
            scan_cycles,
            refs: 0,
            next_check: if scan_refs > 0 { scan_refs } else { 1024 },
            scan: Scan::Split,
            scan_start: 0,
            period_start: 0,
            period: 0,
            samples: Vec::new(),
            cold: Vec::new(),
            faults: HashMap::new(),
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
        self.refs += 1;
        if self.refs >= self.next_check {
            self.advance(mech);
        }
    }

    fn report(&self, out: &mut super::PolicyReport) {
        let end_s = self.history.last().map_or(0.0, |h| h.end_s).max(1e-12);
        let mb = |b: u64| b as f64 / 1e6;
        let cold = if self.history.is_empty() { 0.0 } else { self.cold_fraction_sum / self.history.len() as f64 };
        out.insert(
            "period".into(),
            if self.scan_refs > 0 {
                json!({
                    "scaled_to_run": true,
                    "periods_per_run": self.cfg.periods_per_run,
                    "refs_per_period": self.scan_refs * 3,
                    "note": format!("the paper's {} s period is scaled to the run: {} periods of {} references", self.cfg.period_s, self.cfg.periods_per_run, self.scan_refs * 3),
                })
            } else {
                json!({ "scaled_to_run": false, "period_s": self.cfg.period_s })
            },
        );
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
