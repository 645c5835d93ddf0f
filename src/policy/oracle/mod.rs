//! Future-knowledge bounds: `oracle` and `oracle-static` read the whole reference
//! stream before the run (`Requirements::foresight`) and place pages by what is to
//! come, which no real system can. They bound what placement alone can win on a
//! workload (docs/policies/oracle.md).
//!
//! **The record of the future.** The first pass sees every reference of every core
//! in order. A reference to a page weighs the latency the fast tier saves on it: a
//! read the slow tier's read latency minus the fast tier's, a write the same for
//! writes (`MachineInfo::tiers`, row-miss latencies, in quarter nanoseconds). Pages
//! are the unit the run maps: with transparent huge pages a huge page's whole region
//! is one unit. Per core, the references are cut into chunks of `chunk_refs`, and
//! each chunk keeps a sparse list of (unit, summed weight); the static bound keeps
//! only each unit's weight over the whole run.
//!
//! **Time.** The pass knows references, not cycles, so the future is counted in each
//! core's references, in its chunks. [`Horizons`] keeps, as the run goes on, every
//! unit's weight over the coming 1, 2, 4, … chunks of every core, up to the end of
//! the run (the part of the current chunk already run counted out in proportion).
//!
//! **`oracle`.** It starts from the static bound's placement, and leaves it only where
//! leaving pays. Every `interval_s` (on a kernel thread, idle from its last moves) it
//! plans swaps ([`plan`]): a slow page of the coming chunks (or a unit not touched
//! yet) takes the place of the coldest fast ones only if, over one horizon, its
//! weight exceeds theirs by more than the moves cost — each move's time on the
//! kernel thread, from the machine's configured costs ([`MoveCosts`]) — plus what the
//! swap leaves behind after the horizon: the weight the displaced pages would have
//! had over the pages that took their place for the rest of the run, at most the cost
//! of swapping back. The horizon is the one of 1, 2, 4, … chunks whose swaps gain
//! most, and a decision queues no more moves than the thread can make before the
//! next one. Each move is an `Op::Migrate` job charged as any policy's. Pages are
//! born where the plan says (`Placement::Chosen`): the units it puts in the fast tier
//! there, others there only while it has room beyond what those units still need.
//!
//! **`oracle-static`.** The units of greatest whole-run weight that fit the fast tier
//! are born there, every other page in the slow tier, and nothing moves. The last
//! unit may fit only in part: first touch then maps its region with base pages, in
//! the fast tier while it has room.

use super::baselines::NoConfig;
use super::{Policy, PolicyReport, Requirements};
use crate::machine::placement::Placement;
use crate::machine::{Birthplace, MachineInfo, Observer, PageInfo, PlaceEvent, RefOutcome, TierId};
use crate::mechanism::{Executor, Job, JobDone, Mechanisms, Op, PageRef, Scope, ThreadId, ThreadKind};
use crate::monitor::{Pacer, Period};
use crate::params;
use crate::trace::Access;
use serde_json::json;

mod future;
mod plan;
#[cfg(test)]
mod tests;

pub use future::*;
pub use plan::*;

params! {
    /// Parameters of the dynamic oracle.
    pub struct OracleConfig {
        /// Seconds of simulated time between decisions (our choice: 1 ms, short enough
        /// to follow phases in runs of a few million references).
        pub interval_s: f64 = 0.001,
        /// If above 0, ignore `interval_s` and decide this many times over the run.
        pub intervals_per_run: u32 = 0,
        /// References per chunk of each core's record of the future: the resolution
        /// of the horizons over which moves must pay (1, 2, 4, … chunks).
        pub chunk_refs: u64 = 16384,
        /// Multiplies the estimated cost of a move (its copy over the channels, the
        /// cache flush and the shootdown); 0 prices moves at nothing, so that a swap is
        /// made whenever the incoming page weighs more.
        pub move_cost_factor: f64 = 1.0,
    }
}

/// Page-table frames a run will need, estimated generously (first touch puts them in
/// the fastest tier with a free frame, so the static set leaves them room there).
fn table_frames(info: &MachineInfo) -> u64 {
    let leaf_reach = if info.thp { 1 << 30 } else { 2 << 20 };
    info.footprint_bytes.div_ceil(leaf_reach) + info.footprint_bytes.div_ceil(1 << 30) + 4 * info.tenants as u64
}

/// What both bounds check of the machine; the size of their unit.
fn check(info: &MachineInfo, name: &str) -> anyhow::Result<u32> {
    if !info.has(TierId::SLOW) {
        anyhow::bail!("policy {name}: needs a slow tier");
    }
    if info.vm_tenants > 0 {
        anyhow::bail!(
            "policy {name}: VM tenants are not supported: the first pass sees guest-virtual addresses, while the pages the host places are guest-physical, laid out by the guest during the run; run the workloads as processes"
        );
    }
    Ok(if info.thp { info.huge_page_bytes.trailing_zeros() } else { 12 })
}

/// Shares served from the fast tier during the run: of all references, and of the
/// weight as the record counts it (memory reads of lines with the cache filter,
/// which the run sees as references served by memory; its write-backs are not seen
/// here, so the achieved share can differ from the predicted one by their part).
#[derive(Clone, Debug, Default)]
struct Achieved {
    /// Cache levels: a reference whose outcome's level is this many went to memory.
    levels: usize,
    fast_first: u64,
    fast_frames: u64,
    refs: u64,
    fast_refs: u64,
    weight: u64,
    fast_weight: u64,
    /// Cycles and count of the demand accesses memory served, fast tier and others,
    /// since last taken.
    latency: [(u64, u64); 2],
}

impl Achieved {
    fn new(info: &MachineInfo) -> Achieved {
        let t = info.tier(TierId::FAST);
        Achieved { levels: info.cache_levels(), fast_first: t.base_pfn, fast_frames: t.frames, ..Achieved::default() }
    }

    /// Counts reference `a`: every reference for the reference share; for the
    /// weight share what the record weighs — a read of the line when memory served it
    /// (with the cache filter), else the reference's own weight.
    #[inline]
    fn count(&mut self, future: &Future, a: &Access, out: &RefOutcome) {
        let fast = (out.paddr >> 12).wrapping_sub(self.fast_first) < self.fast_frames;
        let w = if !future.is_filtered() {
            future.weights.of_access(a)
        } else if out.level >= self.levels {
            future.weights.read
        } else {
            0
        };
        self.refs += 1;
        self.weight += w as u64;
        if fast {
            self.fast_refs += 1;
            self.fast_weight += w as u64;
        }
        if out.level >= self.levels {
            let l = &mut self.latency[!fast as usize];
            (l.0, l.1) = (l.0 + out.data_cycles, l.1 + 1);
        }
    }

    /// The (cycles, count) of the demand accesses memory served in the fast tier and
    /// in the others since the last call.
    fn take_latency(&mut self) -> [(u64, u64); 2] {
        std::mem::take(&mut self.latency)
    }

    fn report(&self, out: &mut PolicyReport) {
        out.insert("achieved_fast_weight_share".into(), json!(ratio(self.fast_weight, self.weight)));
        out.insert("achieved_fast_reference_share".into(), json!(ratio(self.fast_refs, self.refs)));
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn report_future(f: &Future, out: &mut PolicyReport) {
    out.insert("unit_bytes".into(), json!(1u64 << f.shift));
    out.insert("weights_quarter_ns".into(), json!({ "read": f.weights.read, "write": f.weights.write }));
    out.insert("units".into(), json!(f.units()));
    out.insert("chunk_entries".into(), json!(f.entries()));
    out.insert("future_bytes".into(), json!(f.bytes()));
    out.insert("foreseen_references".into(), json!(f.cores.iter().map(|c| c.refs).sum::<u64>()));
}

const THREAD: ThreadId = ThreadId(0);
const MOVE: u64 = 0;

/// Per unit during a decision (`Oracle::mark`): not among the coming chunks' units,
/// among them and in (or planned for) the fast tier, among them and outside it.
const AWAY: u8 = 0;
const IN: u8 = 1;
const OUT: u8 = 2;

/// The dynamic bound: see the module documentation.
pub struct Oracle {
    future: Future,
    /// Built once the record is complete (`foreseen`).
    horizons: Option<Horizons>,
    reuse: Option<Reuse>,
    /// Lines the last cache level holds.
    llc_lines: u64,
    pacer: Pacer,
    fast_frames: u64,
    /// Page-table frames the first placement leaves room for, and those of them not
    /// yet taken (as of the last decision): pages are not born into that room.
    table_frames: u64,
    tables_left: u64,
    costs: MoveCosts,
    freq_mhz: u64,
    /// The mean latency of a demand access to the fast and to the slow tier as the run
    /// measures it (from the tiers' nominal latencies until it has), in the weights'
    /// unit; `move_cost_factor` and the price scale the two give
    /// ([`Oracle::measured`]), 2^16 = 1.
    latency_q: [u64; 2],
    cost_factor: u64,
    gap_scale: u64,
    /// References each core has made, and had made at the last decision.
    done: Vec<u64>,
    prev: Vec<u64>,
    /// The cycle of the last decision.
    last_decision: u64,
    /// Units not touched yet that the plan puts in the fast tier: a flag per unit, and
    /// a list of them (which may still hold units since born or left out).
    planned: Vec<bool>,
    planned_list: Vec<u32>,
    /// Frames the planned units will take, and those of the promotions queued.
    pending: u64,
    promoting: u64,
    /// Unit of each page number met, or `u32::MAX`.
    unit_of_page: Vec<u32>,
    /// The units of the coming window at a decision; per unit, a state (`AWAY`, `IN`,
    /// `OUT`) and the weight in the window.
    near: Vec<u32>,
    mark: Vec<u8>,
    window: Vec<u64>,
    /// The moves of the job under way.
    moving: Vec<TierId>,
    /// A decision's weights table, candidates and fast pages, kept between decisions
    /// for their room.
    buffers: (Vec<u64>, Vec<Candidate>, Vec<Candidate>, Vec<PageInfo>),
    achieved: Achieved,
    moved: [u64; 2],
    refused: u64,
    unprofitable: u64,
    decisions: u64,
    /// Decisions that moved or planned something, by the level of their horizon.
    chosen: Vec<u64>,
    /// Predicted: weight of the units in the fast tier after each decision and of all
    /// units, over the coming window.
    predicted: (u64, u64),
}

impl Observer for Oracle {
    fn place(&mut self, e: &PlaceEvent) -> Birthplace {
        let frames = if e.huge { self.unit_frames() } else { 1 };
        if let Some(u) = self.future.unit(e.tenant, e.addr) {
            if std::mem::take(&mut self.planned[u as usize]) {
                self.pending = self.pending.saturating_sub(self.unit_frames());
                return TierId::FAST.into();
            }
        }
        // Another page: the fast tier only if the planned units, the queued promotions
        // and the page tables still to come keep their room.
        if e.fast_free >= self.pending + self.promoting + self.tables_left + frames {
            TierId::FAST.into()
        } else {
            TierId::SLOW.into()
        }
    }
}

/// Appends `c` to `list`, with its weights over every horizon in the table: its
/// unit's, in the share of the unit its frames are.
fn push(list: &mut Vec<Candidate>, weights: &mut Vec<u64>, horizons: &Horizons, unit_frames: u64, mut c: Candidate) {
    c.row = weights.len() / horizons.levels();
    horizons.extend(c.unit, (c.frames, unit_frames), weights);
    list.push(c);
}

impl Oracle {
    fn unit_frames(&self) -> u64 {
        1 << (self.future.shift - 12)
    }

    fn unit_of(&mut self, p: &PageInfo) -> Option<u32> {
        let n = p.page as usize;
        if n >= self.unit_of_page.len() {
            self.unit_of_page.resize(n + 1, u32::MAX);
        }
        if self.unit_of_page[n] == u32::MAX {
            self.unit_of_page[n] = self.future.unit(p.tenant, p.addr)?;
        }
        Some(self.unit_of_page[n])
    }

    /// Calls `f` with each mapped page of unit `u`; false if none is mapped.
    fn unit_pages(&self, mech: &Mechanisms, u: u32, mut f: impl FnMut(PageInfo)) -> bool {
        let (tenant, start) = self.future.unit_start(u);
        let bytes = 1u64 << self.future.shift;
        match mech.page(PageRef::new(tenant, start)) {
            Ok(p) if p.bytes >= bytes => {
                f(p);
                true
            }
            Err(_) if bytes == 4096 => false,
            // A huge unit mapped with base pages.
            _ => {
                let mut any = false;
                mech.pages(Scope::Range { tenant, start, end: start + bytes }, |p| {
                    any = true;
                    f(p);
                });
                any
            }
        }
    }

    /// A price in the weights' unit, as the gap the run measures between the tiers
    /// makes it (the weights count the nominal gap, so a move pays back faster when
    /// queues make the slow tier slower still), times `move_cost_factor`.
    fn measured(&self, price: u64) -> u64 {
        ((price as u128 * self.gap_scale as u128) >> 16) as u64
    }

    /// A mapped page as a candidate: to promote (`up`) or to demote. Its move costs
    /// the price of its size and direction, and the lines its flush takes from the
    /// caches that the cores will read again from the tier it goes to: at most as
    /// many as the page has, and as the caches served lately and will serve soon
    /// ([`Reuse`]; the unit's, in the share of the unit the page is).
    fn page_candidate(&self, u: u32, p: PageInfo, up: bool) -> Candidate {
        let (d, h) = (!up as usize, p.huge as usize);
        let (before, after) = self.reuse.as_ref().map_or((0, 0), |r| r.hits(u));
        let share = |n: u64| n * p.base_pages() / self.unit_frames();
        let reread = (p.bytes / 64).min(share(before as u64)).min(share(after as u64));
        let cost = self.measured(self.costs.priced[d][h] + reread * self.latency_q[d]);
        let (back, now) = (self.measured(self.costs.priced[1 - d][h]), share(self.window[u as usize]));
        Candidate { page: Some(p), unit: u, frames: p.base_pages(), row: 0, now, cost, back, busy_ns: self.costs.busy_ns[d][h] }
    }

    /// An untouched unit as a candidate: to plan in the fast tier (`up`) or out of it.
    fn untouched(&self, u: u32, up: bool) -> Candidate {
        let (d, h) = (!up as usize, (self.future.shift > 12) as usize);
        let back = self.measured(self.costs.priced[1 - d][h]);
        Candidate { page: None, unit: u, frames: self.unit_frames(), row: 0, now: self.window[u as usize], cost: 0, back, busy_ns: 0 }
    }

    /// Takes the latencies the run measured since the last decision: each tier's mean
    /// over its demand accesses, if it had enough to say, and the scale of prices
    /// that follows.
    fn measure(&mut self) {
        for (t, (cycles, n)) in self.achieved.take_latency().into_iter().enumerate() {
            if n >= 64 {
                self.latency_q[t] = cycles * 4000 / (n * self.freq_mhz);
            }
        }
        let nominal = (self.future.weights.read as u64).max(1);
        let gap = self.latency_q[1].saturating_sub(self.latency_q[0]).max(nominal / 4).max(1);
        self.gap_scale = self.cost_factor * nominal / gap;
    }

    /// The units of the coming window, each once, marked `IN`, and their weight in it.
    /// The window is, per core, the chunks from the current one to the end of the next
    /// period at the pace of the last (two chunks at least).
    fn gather_near(&mut self) {
        self.near.clear();
        for core in 0..self.future.cores() {
            let done = self.done.get(core).copied().unwrap_or(0);
            let pace = done - self.prev.get(core).copied().unwrap_or(0);
            let (k, end) = ((done / self.future.chunk_refs) as usize, ((done + pace) / self.future.chunk_refs) as usize);
            for chunk in k..=end.max(k + 1) {
                for e in self.future.chunk(core, chunk) {
                    let u = e.unit as usize;
                    if self.mark[u] == AWAY {
                        self.mark[u] = IN;
                        self.near.push(e.unit);
                    }
                    self.window[u] += e.weight as u64;
                }
            }
        }
    }

    /// Adds the coming window's weight of the units in the fast tier and of all to
    /// the prediction, and clears the marks.
    fn predict(&mut self) {
        for &u in &self.near {
            let w = std::mem::take(&mut self.window[u as usize]);
            self.predicted.1 += w;
            if std::mem::replace(&mut self.mark[u as usize], AWAY) == IN {
                self.predicted.0 += w;
            }
        }
    }

    /// Plans the swaps that pay from here and submits the moves.
    fn decide(&mut self, mech: &mut Mechanisms) {
        let Some(mut horizons) = self.horizons.take() else { return };
        self.decisions += 1;
        let now = mech.now();
        // The thread may be kept busy until about the next decision.
        let busy_ns = now.saturating_sub(self.last_decision) * 1000 / self.freq_mhz;
        self.last_decision = now;
        horizons.advance(&self.future, &self.done);
        if let Some(reuse) = self.reuse.as_mut() {
            reuse.advance(&self.future, &self.done);
        }
        self.gather_near();
        self.prev.clone_from(&self.done);
        self.measure();
        let free = mech.free_frames(TierId::FAST);
        let data: u64 = (0..mech.tenants()).map(|t| mech.tenant_frames(t, TierId::FAST)).sum();
        self.tables_left = self.table_frames.saturating_sub(self.fast_frames.saturating_sub(free + data));
        let (levels, unit_frames) = (horizons.levels(), self.unit_frames());
        // Outside the fast tier: the coming chunks' pages there, and their untouched
        // units the plan leaves out; only those that could repay their own move.
        let (mut weights, mut promote, mut demote, mut fast) = std::mem::take(&mut self.buffers);
        weights.clear();
        promote.clear();
        demote.clear();
        fast.clear();
        let mut outside = Vec::new();
        for n in 0..self.near.len() {
            let u = self.near[n];
            let mapped = self.unit_pages(mech, u, |p| {
                if p.tier != TierId::FAST {
                    outside.push(p);
                }
            });
            let untouched = (!mapped && !self.planned[u as usize] && unit_frames == 1).then(|| self.untouched(u, true));
            if !outside.is_empty() || untouched.is_some() {
                self.mark[u as usize] = OUT;
            }
            let whole = horizons.weight(u, levels - 1);
            for c in outside.drain(..).map(|p| self.page_candidate(u, p, true)).chain(untouched) {
                if whole * c.frames / unit_frames > c.cost {
                    push(&mut promote, &mut weights, &horizons, unit_frames, c);
                }
            }
        }
        if promote.is_empty() {
            self.predict();
            self.horizons = Some(horizons);
            self.buffers = (weights, promote, demote, fast);
            return;
        }
        // Inside: every fast page, and the untouched units the plan puts there; those
        // that weigh more in the coming window than any page to promote cannot be
        // displaced ([`plan`]).
        let most = promote.iter().map(|c| c.now).max().unwrap_or(0);
        mech.pages(Scope::All, |p| {
            if p.tier == TierId::FAST {
                fast.push(p);
            }
        });
        // In unit order, so that the per-unit tables are read as streams.
        let mut units: Vec<(u32, usize)> = (0..fast.len()).filter_map(|i| Some((self.unit_of(&fast[i])?, i))).collect();
        units.sort_unstable();
        let mut inside = Vec::new();
        for (u, i) in units {
            let p = fast[i];
            if self.window[u as usize] * p.base_pages() / unit_frames <= most {
                inside.push(self.page_candidate(u, p, false));
            }
        }
        let planned = &self.planned;
        self.planned_list.retain(|&u| planned[u as usize]);
        // Untouched base pages are born where the plan says. Not huge ones: one planned
        // in may find no huge frame free whole and be born in base pages, and the huge
        // page it displaced could then never come back (no huge frame to take).
        for i in 0..self.planned_list.len() * (unit_frames == 1) as usize {
            let u = self.planned_list[i];
            if self.window[u as usize] <= most {
                inside.push(self.untouched(u, false));
            }
        }
        for c in inside {
            push(&mut demote, &mut weights, &horizons, unit_frames, c);
        }
        self.pending = self.planned_list.len() as u64 * unit_frames;
        let room = free.saturating_sub(self.pending + self.tables_left);
        let plan = plan(&promote, &demote, &weights, levels, room, busy_ns.max(1));
        self.moving.clear();
        let mut job = Job::new(MOVE);
        let mut promoted = 0;
        for &(up, i) in &plan.moves {
            let (c, to) = if up { (&promote[i], TierId::FAST) } else { (&demote[i], TierId::SLOW) };
            match c.page {
                Some(p) => {
                    job.push(Op::Migrate { page: p.at(), to });
                    self.moving.push(to);
                    self.promoting += if up { c.frames } else { 0 };
                }
                None => {
                    self.planned[c.unit as usize] = up;
                    if up {
                        self.planned_list.push(c.unit);
                    }
                }
            }
            let m = &mut self.mark[c.unit as usize];
            if *m != AWAY {
                *m = if up { IN } else { OUT };
            }
            promoted += up as u64;
        }
        self.pending = self.planned_list.iter().filter(|&&u| self.planned[u as usize]).count() as u64 * unit_frames;
        self.unprofitable += promote.len() as u64 - promoted;
        if !plan.moves.is_empty() {
            self.chosen[plan.level] += 1;
        }
        if !job.is_empty() {
            let _ = mech.submit(THREAD, job);
        }
        self.predict();
        self.horizons = Some(horizons);
        self.buffers = (weights, promote, demote, fast);
    }
}

impl Policy for Oracle {
    type Config = OracleConfig;

    fn requirements(_: &OracleConfig) -> Requirements<()> {
        // No reserve of free fast frames: as the static bound, it may fill the fast
        // tier (a promotion's room is made by the demotions queued before it).
        Requirements { placement: Placement::Chosen, threads: vec![ThreadKind::Kernel], foresight: true, ..Requirements::default() }
    }

    fn new(cfg: OracleConfig, info: &MachineInfo) -> anyhow::Result<Self> {
        let shift = check(info, "oracle")?;
        if cfg.chunk_refs == 0 {
            anyhow::bail!("policy.oracle.chunk_refs: must be positive");
        }
        if !(cfg.move_cost_factor.is_finite() && cfg.move_cost_factor >= 0.0) {
            anyhow::bail!("policy.oracle.move_cost_factor: must be a number ≥ 0, got {}", cfg.move_cost_factor);
        }
        let period = Period::from_config(cfg.interval_s, cfg.intervals_per_run);
        let pacer = Pacer::new(period, info, "policy.oracle.interval_s").map_err(anyhow::Error::msg)?;
        let future = Future::new(shift, Weights::of(info), cfg.chunk_refs, true).filtered(&info.caches, info.cores);
        Ok(Oracle {
            costs: MoveCosts::new(info),
            future,
            horizons: None,
            reuse: None,
            llc_lines: info.caches.last().map_or(0, |c| c.size.bytes() / 64 * if c.shared { 1 } else { info.cores as u64 }),
            pacer,
            fast_frames: info.tier(TierId::FAST).frames,
            table_frames: table_frames(info),
            tables_left: table_frames(info),
            freq_mhz: ((info.freq_ghz * 1000.0).round() as u64).max(1),
            latency_q: MoveCosts::new(info).reread,
            cost_factor: (cfg.move_cost_factor * 65536.0).round() as u64,
            gap_scale: (cfg.move_cost_factor * 65536.0).round() as u64,
            done: vec![0; info.cores],
            prev: vec![0; info.cores],
            last_decision: 0,
            planned: Vec::new(),
            planned_list: Vec::new(),
            pending: 0,
            promoting: 0,
            unit_of_page: Vec::new(),
            near: Vec::new(),
            mark: Vec::new(),
            window: Vec::new(),
            moving: Vec::new(),
            buffers: Default::default(),
            achieved: Achieved::new(info),
            moved: [0; 2],
            refused: 0,
            unprofitable: 0,
            decisions: 0,
            chosen: Vec::new(),
            predicted: (0, 0),
        })
    }

    fn foresee(&mut self, core: usize, batch: &[Access]) {
        self.future.foresee(core, batch);
    }

    fn foreseen(&mut self) -> anyhow::Result<()> {
        self.future.finish();
        let units = self.future.units();
        self.planned = vec![false; units];
        self.mark = vec![AWAY; units];
        self.window = vec![0; units];
        let mut horizons = Horizons::new(&self.future);
        horizons.advance(&self.future, &self.done);
        let mut reuse = Reuse::new(&self.future, self.llc_lines);
        reuse.advance(&self.future, &self.done);
        self.reuse = Some(reuse);
        self.chosen = vec![0; horizons.levels()];
        // The static bound's placement: the first decision, a period in, leaves it
        // where that pays, its untouched units at no cost. (Planning births against a
        // return that the machine may not be able to make — a huge page into a fast
        // tier whose huge frames the page tables broke — lost to the static bound.)
        self.planned_list = OracleStatic::choose(&self.future, self.fast_frames.saturating_sub(self.table_frames));
        for &u in &self.planned_list {
            self.planned[u as usize] = true;
        }
        self.pending = self.planned_list.len() as u64 * self.unit_frames();
        self.horizons = Some(horizons);
        Ok(())
    }

    #[inline]
    fn on_reference(&mut self, a: &Access, out: &RefOutcome, mech: &mut Mechanisms) {
        if let Executor::Core(c) = mech.executor() {
            self.done[c] += 1;
        }
        self.achieved.count(&self.future, a, out);
        let now = mech.now();
        if self.pacer.due_in(mech) {
            if mech.thread(THREAD).is_ok_and(|t| t.idle) {
                self.pacer.start(now);
                self.decide(mech);
            } else {
                self.pacer.wait(now);
            }
        }
    }

    fn on_job_done(&mut self, done: &JobDone, _: &mut Mechanisms) {
        for (to, r) in self.moving.iter().zip(&done.results) {
            match r {
                Ok(()) => self.moved[to.index()] += 1,
                Err(_) => self.refused += 1,
            }
        }
        self.promoting = 0;
    }

    fn report(&self, out: &mut PolicyReport) {
        report_future(&self.future, out);
        out.insert("decisions".into(), json!(self.decisions));
        out.insert("promoted_pages".into(), json!(self.moved[0]));
        out.insert("demoted_pages".into(), json!(self.moved[1]));
        out.insert("refused_moves".into(), json!(self.refused));
        out.insert("unprofitable_promotions".into(), json!(self.unprofitable));
        let chosen: serde_json::Map<String, serde_json::Value> =
            self.chosen.iter().enumerate().filter(|(_, &n)| n > 0).map(|(level, &n)| ((1u64 << level).to_string(), json!(n))).collect();
        out.insert("horizon_chunks_chosen".into(), json!(chosen));
        out.insert("move_costs_ns".into(), json!({ "promote": self.costs.busy_ns[0], "demote": self.costs.busy_ns[1] }));
        out.insert("predicted_fast_weight_share".into(), json!(ratio(self.predicted.0, self.predicted.1)));
        self.achieved.report(out);
        out.insert("pacing".into(), json!(self.pacer.report("the decision interval")));
    }
}

/// The static bound: see the module documentation.
pub struct OracleStatic {
    future: Future,
    fast_frames: u64,
    table_frames: u64,
    /// Membership of the fast set, by unit.
    in_set: Vec<bool>,
    set_units: usize,
    /// Predicted: weight of the set and of all units over the run.
    predicted: (u64, u64),
    achieved: Achieved,
}

impl Observer for OracleStatic {
    fn place(&mut self, e: &PlaceEvent) -> Birthplace {
        match self.future.unit(e.tenant, e.addr) {
            Some(u) if self.in_set[u as usize] => TierId::FAST.into(),
            _ => TierId::SLOW.into(),
        }
    }
}

impl OracleStatic {
    /// The units of greatest whole-run weight that fill `frames` fast frames; the
    /// last may fit only in part (first touch then maps its region with base pages,
    /// fast while there is room).
    pub fn choose(future: &Future, frames: u64) -> Vec<u32> {
        let weighed = (0..future.units() as u32).map(|u| (u, future.total(u))).collect();
        heaviest(weighed, frames.div_ceil(1 << (future.shift - 12)) as usize)
    }
}

impl Policy for OracleStatic {
    type Config = NoConfig;

    fn requirements(_: &NoConfig) -> Requirements<()> {
        Requirements { placement: Placement::Chosen, foresight: true, ..Requirements::default() }
    }

    fn new(_: NoConfig, info: &MachineInfo) -> anyhow::Result<Self> {
        let shift = check(info, "oracle-static")?;
        Ok(OracleStatic {
            future: Future::new(shift, Weights::of(info), 1, false).filtered(&info.caches, info.cores),
            fast_frames: info.tier(TierId::FAST).frames,
            table_frames: table_frames(info),
            in_set: Vec::new(),
            set_units: 0,
            predicted: (0, 0),
            achieved: Achieved::new(info),
        })
    }

    fn foresee(&mut self, core: usize, batch: &[Access]) {
        self.future.foresee(core, batch);
    }

    fn foreseen(&mut self) -> anyhow::Result<()> {
        self.future.finish();
        let set = OracleStatic::choose(&self.future, self.fast_frames.saturating_sub(self.table_frames));
        self.in_set = vec![false; self.future.units()];
        for &u in &set {
            self.in_set[u as usize] = true;
        }
        self.set_units = set.len();
        self.predicted = (set.iter().map(|&u| self.future.total(u)).sum(), self.future.total.iter().sum());
        Ok(())
    }

    #[inline]
    fn on_reference(&mut self, a: &Access, out: &RefOutcome, _: &mut Mechanisms) {
        self.achieved.count(&self.future, a, out);
    }

    fn report(&self, out: &mut PolicyReport) {
        report_future(&self.future, out);
        out.insert("fast_units".into(), json!(self.set_units));
        out.insert("predicted_fast_weight_share".into(), json!(ratio(self.predicted.0, self.predicted.1)));
        self.achieved.report(out);
    }
}
