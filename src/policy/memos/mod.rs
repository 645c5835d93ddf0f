//! memos (Liu et al., "memos: a full hierarchy hybrid memory management framework"):
//! pages placed across the whole hierarchy — LLC slabs, channels (one per medium),
//! banks — from what page-table Accessed and Dirty bits say about each page.
//!
//! How the paper's parts map onto tiersim (docs/policies/memos.md has the long form and
//! every place where the two-column text had to be pieced together):
//! - **SysMon** (§4.2) is a kernel thread that samples: every `sampling_interval_ms`
//!   it reads and clears the A/D bits of the sampled pages (`Op::Scan` with clear,
//!   charged on its clock: page-table lines, per-entry work, TLB flushes). A *pass* is
//!   `samplings_per_pass` (100) samplings. Per page and pass it counts the samplings
//!   that saw the Accessed bit (`a`) and the Dirty bit (`d`): writes = d, reads = a − d.
//!   The page is write-domain (WD) when `write_weight`·writes ≥ reads and it was
//!   written (§3.1 footnote 1: WD if 2·writes ≥ reads; a page not accessed is cold,
//!   not WD — Fig. 4 writes "0 indicates RD and cold pages"), hot when more than
//!   `hot_share` of the samplings saw it ("most of samplings", §4.2).
//! - **Reuse classes** (§3.3) come from the gaps between samplings that saw a page:
//!   *rarely touched* when seen in at most `rare_share` of the samplings, *thrashing*
//!   when its gaps are small and stable (at most `thrash_max_gap` samplings, all within
//!   one of each other), *frequently touched* otherwise.
//! - **Prediction** (§3.2, Fig. 4, Fig. 10 step 1–2): the last `window_len` (8) pass
//!   outcomes form a history; `wd_high` or more WD passes predict WD_Freq_H, `wd_low`
//!   or more WD_Freq_L, fewer Un_WD. *Reverse*: when the last `k_len` passes agree
//!   (all WD or all not), they decide against the window's majority.
//! - **Placement** every `interval_s` (20 s, lazy, §5.3): NVM pages that are hot, or
//!   predicted WD_Freq_H, are marked will-be-migrated and ranked into the hotness list
//!   (WD_Freq_H first, then WD_Freq_L, then read-domain pages; hotter first). They
//!   move to DRAM with the locked CPU copy (§6.3 `migrate_cpu`) on a kernel thread;
//!   room is made by moving cold DRAM pages (read-domain first, then WD_Freq_L; never
//!   WD_Freq_H; colder first) to NVM with the unlocked DMA copy on a copy engine
//!   (§6.3: pages dirtied during the copy are discarded and retried at a later
//!   interval). Each destination frame is coloured (§5.3, §5.4 cases 1–4): the coldest
//!   bank of the channel by the Bank_Freq_Table, and in it the least-used slab of the
//!   Cache_Freq_Table among those the page's class may use — slab `thrash_slab` (0) for
//!   thrashing pages, `rare_slab` (15) for rarely touched ones, the others for
//!   frequently touched ones; when none has room, any slab (§5.3 (4)).
//! - **Bank rebalancing** (§7.2): after the moves, hot pages of banks with more than
//!   their share of active pages move to the least active banks of the same channel:
//!   hot DRAM pages, and hot NVM pages the round did not promote.
//! - **Bandwidth balancing** (§5.3): at the end of every pass, when the DRAM channel's
//!   utilisation is at `bandwidth_bound` of its peak and the NVM channel's is not, the
//!   hottest read-domain DRAM pages (then write-domain ones) move to NVM,
//!   `balance_step_pages` per pass, until the DRAM utilisation begins to drop; while
//!   DRAM stays at its bound, read-domain pages are not promoted.
//! - **Sampling a share** (§7.4): above `full_scan_pages` tracked pages, each pass
//!   samples a rotating `large_sample_share` of every tenant's address range.
//!
//! Where things live: this file holds the parameters, SysMon's record of each page
//! and the end of its pass, the sampling job and the policy's hooks; `classify.rs`
//! the paper's rules on plain counts (write domain, forecast, reuse class, the
//! orders of the hotness list and of the victims); `placement.rs` a placement round,
//! the colour of each destination frame, bandwidth balancing and bank rebalancing;
//! `tests.rs` the unit tests.

use super::{Policy, Requirements};
use crate::machine::placement::Placement;
use crate::machine::{MachineInfo, Observer, PageRef, RefOutcome, ScanEvent, TierId};
use crate::mechanism::{Job, JobDone, JobId, Mechanisms, Op, ScanMode, Scope, ThreadId, ThreadKind};
use crate::monitor::{Hierarchy, Pacer, Period};
use crate::params;
use crate::trace::Access;
use serde_json::json;

mod classify;
mod placement;
#[cfg(test)]
mod tests;

use classify::{forecast, is_write_domain, reuse, Forecast, Reuse};

params! {
    /// Parameters of memos. Paper values where the paper gives one; the others are our
    /// choices, named as such (docs/policies/memos.md has a sensitivity row for each).
    pub struct MemosConfig {
        /// Milliseconds between two A/D-bit samplings. Our choice: the paper gives 100
        /// samplings per pass and a 20 s interval but no sampling period; 25 ms makes a
        /// pass 2.5 s, so the 8-pass history window spans exactly one interval.
        pub sampling_interval_ms: f64 = 25.0,
        /// Samplings per pass (§4.2: 100).
        pub samplings_per_pass: u32 = 100,
        /// Seconds between two placement rounds (§5.3: 20 s, lazy migration).
        pub interval_s: f64 = 20.0,
        /// If above 0, ignore `sampling_interval_ms` and make this many passes over the
        /// run, at equal reference counts (the interval keeps its passes per round).
        pub passes_per_run: u32 = 0,
        /// Passes of history a prediction reads (§3.2: Window_Len = 8).
        pub window_len: u32 = 8,
        /// Passes at the end of the window that decide against the window when they
        /// agree (§3.2's Reverse over K_Len samples; the paper gives no value: ours).
        pub k_len: u32 = 3,
        /// WD passes in the window that predict WD_Freq_H (ours: 6 of 8).
        pub wd_high: u32 = 6,
        /// WD passes in the window that predict WD_Freq_L (ours: 4 of 8, half).
        pub wd_low: u32 = 4,
        /// Weight of a write against a read (§3.1 footnote 1: 2).
        pub write_weight: u32 = 2,
        /// A page is hot in a pass when more than this share of its samplings saw its
        /// Accessed bit (§4.2: "most of samplings"; ours: more than half).
        pub hot_share: f64 = 0.5,
        /// A page seen in at most this share of the samplings is rarely touched (§3.3;
        /// ours).
        pub rare_share: f64 = 0.1,
        /// A page whose gaps between sightings are all at most this many samplings,
        /// and within one of each other, is thrashing (§3.3: "very small and stable
        /// reuse interval"; ours). 0 = no page is thrashing.
        pub thrash_max_gap: u32 = 2,
        /// Physical-address bits of the LLC slabs (§5.2, Fig. 9: bits 15–18, 16 slabs).
        pub slab_bits: Vec<u8> = vec![15, 16, 17, 18],
        /// The slab reserved for thrashing pages (§5.3: slab 0).
        pub thrash_slab: u32 = 0,
        /// The slab reserved for rarely touched pages (§5.3: slab 15).
        pub rare_slab: u32 = 15,
        /// Share of a channel's peak bandwidth at which it counts as at its bound
        /// (§5.3: "DDR3 is ~7GB per-channel"; the memos preset's channel is 7 GB/s,
        /// and a queueing channel only approaches its peak: ours 0.9).
        pub bandwidth_bound: f64 = 0.9,
        /// DRAM pages moved to NVM per pass while balancing bandwidth (ours).
        pub balance_step_pages: u32 = 256,
        /// Move hot pages from busy banks to idle ones inside a channel (§7.2).
        pub rebalance_banks: bool = true,
        /// A bank is over its share when it holds more than (1 + this) × the mean
        /// active pages per bank (ours).
        pub rebalance_slack: f64 = 0.25,
        /// At most this many rebalancing moves per interval and channel (ours).
        pub rebalance_max_pages: u32 = 512,
        /// Demote with the unlocked DMA copy (§6.3); false = the locked CPU copy.
        pub dma_demotions: bool = true,
        /// Where first touch puts pages: "slow" (§7.1: "we map applications to NVM at
        /// the beginning") or "fast-first".
        pub initial: String = "slow".into(),
        /// Above this many tracked pages a pass samples a share of them (§7.4; ours:
        /// 1 GiB of 4 KiB pages).
        pub full_scan_pages: u64 = 262_144,
        /// The share sampled per pass above `full_scan_pages` (§7.4: 5–15 %).
        pub large_sample_share: f64 = 0.10,
    }
}

const SYSMON: ThreadId = ThreadId(0);
const MIGRATOR: ThreadId = ThreadId(1);
const ENGINE: ThreadId = ThreadId(2);

const SAMPLE: u64 = 0;
const DEMOTE: u64 = 1;
const PROMOTE: u64 = 2;
const BALANCE: u64 = 3;
const REBALANCE: u64 = 4;
/// Same-channel moves done per `Op::Run` step of the migration thread.
const REBALANCE_CHUNK: usize = 16;

/// What SysMon keeps per page: 6 bytes (the paper's "page shadow array").
#[derive(Clone, Copy, Debug, Default)]
struct PageState {
    /// This pass: samplings that saw Accessed, and Dirty.
    seen: u8,
    dirty: u8,
    /// This pass: the sampling (+ 1) that last saw Accessed; the smallest and largest
    /// gap between sightings.
    last: u8,
    min_gap: u8,
    max_gap: u8,
    /// One bit per pass, latest in bit 0: write-domain.
    wd: u8,
}

impl PageState {
    /// Counts one look at the page's bits: a sighting when either is set (a set Dirty
    /// bit means the page was written, so accessed, even when Accessed reads clear),
    /// and a write when Dirty is. Both counts saturate at 255 and writes never exceed
    /// sightings, so that `seen − dirty` (the reads) cannot wrap. Returns whether the
    /// page was seen.
    fn count(&mut self, accessed: bool, dirty: bool) -> bool {
        let seen = accessed || dirty;
        if seen {
            self.seen = self.seen.saturating_add(1);
        }
        if dirty {
            self.dirty = self.dirty.saturating_add(1).min(self.seen);
        }
        seen
    }

    /// This pass's reads and writes as the samplings saw them.
    fn reads_writes(&self) -> (u32, u32) {
        debug_assert!(self.dirty <= self.seen, "memos counted {} writes in {} sightings", self.dirty, self.seen);
        ((self.seen - self.dirty.min(self.seen)) as u32, self.dirty as u32)
    }
}

/// A page considered for a move at the end of a pass.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    page: PageRef,
    pfn: u64,
    tier: TierId,
    heat: u8,
    reuse: Reuse,
    forecast: Forecast,
    wd_now: bool,
    hot: bool,
}

/// One point of the per-pass series (Fig. 13, Fig. 15).
#[derive(Clone, Copy, Debug, Default)]
struct PassPoint {
    end_s: f64,
    hot: [u64; 2],
    cold: [u64; 2],
    reads: [u64; 2],
    writes: [u64; 2],
    utilisation: [f64; 2],
    bank_sd: [f64; 2],
}

pub struct Memos {
    cfg: MemosConfig,
    freq_ghz: f64,
    pacer: Pacer,
    passes_per_round: u64,
    pages: Vec<PageState>,
    hierarchy: Hierarchy,
    /// Sampling index within the pass, and passes finished.
    sampling: u32,
    passes: u64,
    /// Whether the pass now running ends a placement round.
    round_pass: bool,
    /// Candidates gathered by the last pass: NVM pages that want DRAM, DRAM pages.
    want_fast: Vec<Candidate>,
    in_fast: Vec<Candidate>,
    /// This pass's counts, per tier.
    point: PassPoint,
    series: Vec<PassPoint>,
    /// Traffic counters (64-byte transfers) and time at the last pass end.
    last_lines: [u64; 2],
    last_pass_cycle: u64,
    /// Bandwidth balancing: the DRAM utilisation when the last step was taken.
    balancing: Option<f64>,
    dram_at_bound: bool,
    /// Promotions waiting for the demotions that make their room.
    pending_promotions: Vec<(PageRef, crate::machine::Colour)>,
    /// Same-channel moves left for the migration thread.
    rebalance_queue: Vec<(PageRef, TierId, crate::machine::Colour)>,
    /// Per tenant: the lowest and highest address sampled (for sampling a share).
    spans: Vec<(u64, u64)>,
    /// First frame of the fast and slow tiers.
    bases: [u64; 2],
    /// Per tier, per (bank, slab): frames the moves planned since the last pass took
    /// (less those they free), so that one colour is not promised twice.
    planned: [Vec<i64>; 2],
    /// Why moves were refused, by reason.
    refusals: std::collections::BTreeMap<String, u64>,
    /// The pages of each demotion job not finished yet, to count which moved.
    demoting: Vec<(JobId, Vec<PageRef>)>,
    stats: MemosStats,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
struct MemosStats {
    rounds: u64,
    /// Rounds skipped because the last one's moves were still running.
    rounds_skipped: u64,
    promoted: u64,
    promote_failed: u64,
    demoted: u64,
    demote_discarded: u64,
    demote_failed: u64,
    balance_steps: u64,
    balanced_pages: u64,
    rebalanced: u64,
    /// Sampled writes (Dirty samplings) seen in each tier over the run.
    sampled_writes: [u64; 2],
    sampled_reads: [u64; 2],
}

impl Memos {
    fn samplings(&self) -> u32 {
        self.cfg.samplings_per_pass
    }

    /// The end of one page's pass: classify, update history and tables, and consider
    /// the page for a move if the pass ends a round.
    fn finish_page(&mut self, p: &crate::machine::PageInfo) {
        let n = self.samplings();
        let st = &mut self.pages[p.page as usize];
        let seen = st.seen as u32;
        let (reads, writes) = st.reads_writes();
        let wd = is_write_domain(reads, writes, self.cfg.write_weight);
        let hot = seen as f64 > self.cfg.hot_share * n as f64;
        let class = reuse(seen, n, st.min_gap as u32, st.max_gap as u32, self.cfg.rare_share, self.cfg.thrash_max_gap);
        let wd_hist = st.wd << 1 | wd as u8;
        *st = PageState { wd: wd_hist, ..PageState::default() };
        let heat = seen as u8;
        let t = p.tier.index().min(1);
        self.hierarchy.add(p.tier, self.local(p.tier, p.pfn), seen as u64, hot);
        if hot {
            self.point.hot[t] += 1;
        } else {
            self.point.cold[t] += 1;
        }
        self.point.reads[t] += reads as u64;
        self.point.writes[t] += writes as u64;
        self.stats.sampled_reads[t] += reads as u64;
        self.stats.sampled_writes[t] += writes as u64;
        let f = forecast(wd_hist, self.cfg.window_len, self.cfg.k_len, self.cfg.wd_low, self.cfg.wd_high);
        let c = Candidate { page: p.at(), pfn: p.pfn, tier: p.tier, heat, reuse: class, forecast: f, wd_now: wd, hot };
        if p.tier == TierId::FAST {
            self.in_fast.push(c);
        } else if self.round_pass && (hot || f == Forecast::WdFreqH) {
            self.want_fast.push(c);
        }
    }

    /// The end of a pass: bandwidth, the series, balancing, and a round if due.
    fn end_pass(&mut self, mech: &mut Mechanisms) {
        let now = mech.now();
        let dt = now.saturating_sub(self.last_pass_cycle).max(1) as f64 / (self.freq_ghz * 1e9);
        for t in 0..2 {
            let s = mech.tier_stats(TierId(t as u8));
            let lines = s.reads + s.writes + s.mechanism_reads + s.mechanism_writes;
            let gbps = (lines - self.last_lines[t]) as f64 * 64.0 / dt / 1e9;
            self.point.utilisation[t] = gbps / mech.info().tier(TierId(t as u8)).gbps;
            self.last_lines[t] = lines;
            self.point.bank_sd[t] = self.hierarchy.active_pages_sd(TierId(t as u8));
        }
        self.last_pass_cycle = now;
        self.point.end_s = now as f64 / (self.freq_ghz * 1e9);
        self.series.push(self.point);
        let [dram_u, nvm_u] = self.point.utilisation;
        self.point = PassPoint::default();
        self.passes += 1;
        // §5.3: balance when DRAM is at its bound and NVM is not; stop once DRAM's
        // utilisation begins to drop.
        let bound = self.cfg.bandwidth_bound;
        self.dram_at_bound = dram_u >= bound;
        let step = match self.balancing {
            Some(prev) => dram_u >= prev && self.dram_at_bound && nvm_u < bound,
            None => self.dram_at_bound && nvm_u < bound,
        };
        self.balancing = step.then_some(dram_u);
        if step {
            self.balance(mech);
        }
        if self.round_pass {
            self.round(mech);
        }
        self.in_fast.clear();
        self.want_fast.clear();
        self.round_pass = (self.passes + 1).is_multiple_of(self.passes_per_round);
        self.hierarchy.clear();
        self.planned.iter_mut().for_each(|p| p.fill(0));
    }

    /// Counts a refused move by the kind of refusal (the error's variant).
    fn refused(&mut self, what: &str, e: &crate::machine::MechError) {
        let name = format!("{e:?}");
        let kind = format!("{what}: {}", name.split([' ', '{', '(']).next().unwrap_or_default());
        *self.refusals.entry(kind).or_default() += 1;
    }

    /// The sampling job: one clearing scan of every page, or of this pass's share of
    /// each tenant's range when the footprint is large (§7.4).
    fn sampling_job(cfg: &MemosConfig, spans: &[(u64, u64)], tracked: u64, passes: u64) -> Job {
        let mut job = Job::new(SAMPLE);
        let share = cfg.large_sample_share;
        if tracked > cfg.full_scan_pages && share < 1.0 && !spans.is_empty() {
            let slices = (1.0 / share).round().max(1.0) as u64;
            let k = passes % slices;
            for (t, &(lo, hi)) in spans.iter().enumerate() {
                if hi < lo {
                    continue;
                }
                let len = (hi - lo + 4096).div_ceil(slices);
                let start = lo + k * len;
                job.push(Op::Scan { scope: Scope::Range { tenant: t as u16, start, end: start + len }, mode: ScanMode::Clear });
            }
        } else {
            job.push(Op::Scan { scope: Scope::All, mode: ScanMode::Clear });
        }
        job
    }
}

impl Observer for Memos {
    fn on_scan(&mut self, e: &ScanEvent) {
        let p = &e.page;
        let i = p.page as usize;
        if i >= self.pages.len() {
            self.pages.resize(i + 1, PageState::default());
        }
        let t = p.tenant as usize;
        if t >= self.spans.len() {
            self.spans.resize(t + 1, (u64::MAX, 0));
        }
        let span = &mut self.spans[t];
        *span = (span.0.min(p.addr), span.1.max(p.addr));
        let j = self.sampling as u8;
        let st = &mut self.pages[i];
        if st.count(p.accessed, p.dirty) {
            if st.last > 0 {
                let gap = j + 1 - st.last;
                st.min_gap = if st.min_gap == 0 { gap } else { st.min_gap.min(gap) };
                st.max_gap = st.max_gap.max(gap);
            }
            st.last = j + 1;
        }
        if self.sampling + 1 == self.samplings() {
            self.finish_page(p);
        }
    }
}


impl Policy for Memos {
    type Config = MemosConfig;

    fn requirements(cfg: &MemosConfig) -> Requirements<()> {
        let placement = if cfg.initial == "fast-first" { Placement::FastFirst } else { Placement::SlowOnly };
        Requirements {
            page_size: super::PageSize::Base,
            placement,
            threads: vec![ThreadKind::Kernel, ThreadKind::Kernel, ThreadKind::CopyEngine],
            ..Requirements::default()
        }
    }

    fn new(cfg: MemosConfig, m: &MachineInfo) -> anyhow::Result<Self> {
        use anyhow::bail;
        if !m.has(TierId::SLOW) {
            bail!("policy.memos: needs a slow tier (the NVM channel)");
        }
        if !["slow", "fast-first"].contains(&cfg.initial.as_str()) {
            bail!("policy.memos.initial: must be \"slow\" or \"fast-first\", got {:?}", cfg.initial);
        }
        if !(1..=255).contains(&cfg.samplings_per_pass) {
            bail!("policy.memos.samplings_per_pass: must be 1 to 255, got {}", cfg.samplings_per_pass);
        }
        if !(1..=8).contains(&cfg.window_len) || cfg.k_len > cfg.window_len || cfg.wd_low > cfg.wd_high || cfg.wd_high > cfg.window_len {
            bail!(
                "policy.memos: need 1 ≤ window_len ≤ 8, k_len ≤ window_len and wd_low ≤ wd_high ≤ window_len, got window_len {}, k_len {}, wd_low {}, wd_high {}",
                cfg.window_len, cfg.k_len, cfg.wd_low, cfg.wd_high
            );
        }
        for (field, v) in [("hot_share", cfg.hot_share), ("rare_share", cfg.rare_share), ("bandwidth_bound", cfg.bandwidth_bound), ("large_sample_share", cfg.large_sample_share)] {
            if !(v.is_finite() && v > 0.0 && v <= 1.0) {
                bail!("policy.memos.{field}: must be a share in (0, 1], got {v}");
            }
        }
        if !(cfg.sampling_interval_ms.is_finite() && cfg.sampling_interval_ms > 0.0 && cfg.interval_s.is_finite() && cfg.interval_s > 0.0) {
            bail!("policy.memos: sampling_interval_ms and interval_s must be positive");
        }
        // The slab bits must be LLC set-index bits above the page offset.
        let llc = m.caches.last().ok_or_else(|| anyhow::anyhow!("policy.memos: needs a cache hierarchy"))?;
        let top = 6 + (llc.size.bytes() / 64 / llc.ways as u64).trailing_zeros() as u8;
        if let Some(b) = cfg.slab_bits.iter().find(|&&b| !(12..top).contains(&b)) {
            bail!("policy.memos.slab_bits: bit {b} is not an LLC set-index bit above the page offset (12..={} for this LLC)", top - 1);
        }
        let hierarchy = Hierarchy::for_machine(m, cfg.slab_bits.clone()).map_err(|e| anyhow::anyhow!("policy.memos.slab_bits: {e}"))?;
        for (field, s) in [("thrash_slab", cfg.thrash_slab), ("rare_slab", cfg.rare_slab)] {
            if s as usize >= hierarchy.slabs() {
                bail!("policy.memos.{field}: slab {s} does not exist ({} slabs)", hierarchy.slabs());
            }
        }
        let planned = [TierId::FAST, TierId::SLOW].map(|t| vec![0; hierarchy.banks(t) * hierarchy.slabs()]);
        let pass_s = cfg.sampling_interval_ms / 1e3 * cfg.samplings_per_pass as f64;
        let passes_per_round = (cfg.interval_s / pass_s).round().max(1.0) as u64;
        let period = Period::from_config(cfg.sampling_interval_ms / 1e3, cfg.passes_per_run * cfg.samplings_per_pass);
        let pacer = Pacer::new(period, m, "policy.memos.sampling_interval_ms").map_err(anyhow::Error::msg)?;
        Ok(Memos {
            freq_ghz: m.freq_ghz,
            pacer,
            passes_per_round,
            pages: Vec::new(),
            hierarchy,
            sampling: 0,
            passes: 0,
            round_pass: passes_per_round == 1,
            want_fast: Vec::new(),
            in_fast: Vec::new(),
            point: PassPoint::default(),
            series: Vec::new(),
            last_lines: [0; 2],
            last_pass_cycle: 0,
            balancing: None,
            dram_at_bound: false,
            pending_promotions: Vec::new(),
            rebalance_queue: Vec::new(),
            spans: Vec::new(),
            bases: [m.tier(TierId::FAST).base_pfn, m.tier(TierId::SLOW).base_pfn],
            planned,
            refusals: Default::default(),
            demoting: Vec::new(),
            stats: MemosStats::default(),
            cfg,
        })
    }

    #[inline]
    fn on_reference(&mut self, _a: &Access, _o: &RefOutcome, mech: &mut Mechanisms) {
        let (cfg, spans, tracked, passes) = (&self.cfg, &self.spans, self.pages.len() as u64, self.passes);
        self.pacer.submit_when_due(mech, SYSMON, || Memos::sampling_job(cfg, spans, tracked, passes));
    }

    fn on_job_done(&mut self, done: &JobDone, mech: &mut Mechanisms) {
        match done.tag {
            SAMPLE => {
                self.sampling += 1;
                if self.sampling == self.samplings() {
                    self.sampling = 0;
                    self.end_pass(mech);
                }
            }
            DEMOTE | BALANCE => {
                let Some(i) = self.demoting.iter().position(|d| d.0 == done.id) else { return };
                for page in self.demoting.swap_remove(i).1 {
                    match mech.page(page) {
                        Ok(p) if p.tier == TierId::SLOW => self.stats.demoted += 1,
                        Ok(_) if self.cfg.dma_demotions => self.stats.demote_discarded += 1,
                        _ => self.stats.demote_failed += 1,
                    }
                }
                if done.tag == DEMOTE {
                    self.submit_promotions(mech);
                }
            }
            PROMOTE => {
                for r in &done.results {
                    match r {
                        Ok(()) => self.stats.promoted += 1,
                        Err(e) => {
                            self.stats.promote_failed += 1;
                            self.refused("promote", e);
                        }
                    }
                }
            }
            REBALANCE => {
                let take = self.rebalance_queue.len().min(REBALANCE_CHUNK);
                for (page, tier, colour) in self.rebalance_queue.drain(..take).collect::<Vec<_>>() {
                    match mech.migrate_coloured(page, tier, colour) {
                        Ok(_) => self.stats.rebalanced += 1,
                        Err(e) => self.refused("rebalance", &e),
                    }
                }
                if !self.rebalance_queue.is_empty() {
                    let mut job = Job::new(REBALANCE);
                    job.push(Op::Run);
                    let _ = mech.submit(MIGRATOR, job);
                }
            }
            _ => {}
        }
    }

    fn report(&self, out: &mut super::PolicyReport) {
        out.insert("passes".into(), json!(self.passes));
        out.insert("passes_per_round".into(), json!(self.passes_per_round));
        out.insert("stats".into(), json!(self.stats));
        out.insert("refused".into(), json!(self.refusals));
        // Which of the report's `threads` is which, so that readers find them by role.
        out.insert("threads".into(), json!({ "sysmon": SYSMON.0, "migration": MIGRATOR.0, "dma": ENGINE.0 }));
        let w = self.stats.sampled_writes;
        out.insert("sampled_write_share_dram".into(), json!(w[0] as f64 / (w[0] + w[1]).max(1) as f64));
        let col = |f: &dyn Fn(&PassPoint) -> serde_json::Value| self.series.iter().map(f).collect::<Vec<_>>();
        out.insert(
            "series".into(),
            json!({
                "end_s": col(&|p| json!(p.end_s)),
                "hot": col(&|p| json!(p.hot)),
                "cold": col(&|p| json!(p.cold)),
                "reads": col(&|p| json!(p.reads)),
                "writes": col(&|p| json!(p.writes)),
                "utilisation": col(&|p| json!(p.utilisation)),
                "bank_sd": col(&|p| json!(p.bank_sd)),
            }),
        );
        let pacing = self.pacer.report("the sampling interval");
        if let Some(note) = &pacing.note {
            out.insert("note".into(), json!(note));
        }
        out.insert("pacing".into(), json!(pacing));
    }
}
