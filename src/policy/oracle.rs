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
//! **Time.** The pass knows references, not cycles. At a decision, each core has made
//! `done` references, `last` of them since the previous decision; the coming window
//! is, per core, its next `last` references — the next period at the pace of the last
//! one. A chunk partly inside a window counts in proportion to its overlap.
//!
//! **`oracle`.** Every `interval_s` (on a kernel thread, idle from its last moves),
//! the units of greatest weight in the coming window that fit the fast tier above its
//! low watermark form the target set. Fast pages outside it are demoted, coldest
//! first, as far as the set's slow pages need room, and those are promoted, hottest
//! first, each demotion just before the promotion it makes room for, in one job of
//! `Op::Migrate` charged as any policy's. A promotion is made only when its weight
//! over `horizon_windows` windows exceeds that of the pages it displaces plus the
//! estimated cost of the moves. Pages are born where the target set says
//! (`Placement::Chosen`): members in the fast tier, others there only while it has
//! room beyond what members still to be touched need.
//!
//! **`oracle-static`.** The units of greatest whole-run weight that fit the fast tier
//! are born there, every other page in the slow tier, and nothing moves.

use super::baselines::NoConfig;
use super::{FastReserve, Policy, PolicyReport, Requirements};
use crate::machine::placement::Placement;
use crate::machine::cache::{CacheConfig, Caches, Evicted};
use crate::machine::{Birthplace, MachineInfo, Observer, PageInfo, PlaceEvent, RefOutcome, TierId};
use crate::mechanism::{Executor, Job, JobDone, Mechanisms, Op, Scope, ThreadId, ThreadKind};
use crate::monitor::{Pacer, Period, Watermarks};
use crate::params;
use crate::trace::footprint::IntMap;
use crate::trace::Access;
use serde_json::json;

params! {
    /// Parameters of the dynamic oracle.
    pub struct OracleConfig {
        /// Seconds of simulated time between decisions (our choice: 1 ms, short enough
        /// to follow phases in runs of a few million references).
        pub interval_s: f64 = 0.001,
        /// If above 0, ignore `interval_s` and decide this many times over the run.
        pub intervals_per_run: u32 = 0,
        /// References per chunk of each core's record of the future: the resolution
        /// at which a window's weights are known (partial chunks count in proportion).
        pub chunk_refs: u64 = 16384,
        /// Windows ahead over which a promotion must pay for itself: its weight there
        /// against the weight of the pages it displaces and the cost of the moves
        /// (16: a page promoted usually stays; shorter horizons refuse most 4 KiB
        /// moves of a phase change, see docs/policies/oracle.md).
        pub horizon_windows: u32 = 16,
        /// Multiplies the estimated cost of a move (its copy over the slower tier's
        /// bandwidth, the cache flush and a shootdown); 0 makes every move the target
        /// set asks for.
        pub move_cost_factor: f64 = 1.0,
        /// Linux's vm.watermark_scale_factor: the fast tier's free frames above its
        /// low watermark are what the target set may fill (as `lru` keeps them).
        pub watermark_scale_factor: u64 = 10,
    }
}

/// The latency, in quarter nanoseconds, that the fast tier saves on one read and on
/// one write (slow row-miss latency minus fast, at least 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Weights {
    pub read: u32,
    pub write: u32,
}

impl Weights {
    /// From the machine's fast and slow tiers. Tiers of equal latencies would weigh
    /// nothing; references are then counted instead (one each).
    pub fn of(info: &MachineInfo) -> Weights {
        let (f, s) = (info.tier(TierId::FAST), info.tier(TierId::SLOW));
        let q = |gap: f64| (gap * 4.0).round().clamp(0.0, u32::MAX as f64) as u32;
        let w = Weights { read: q(s.read_ns - f.read_ns), write: q(s.write_ns - f.write_ns) };
        if w.read == 0 && w.write == 0 {
            Weights { read: 1, write: 1 }
        } else {
            w
        }
    }

    #[inline]
    pub fn of_access(&self, a: &Access) -> u32 {
        if a.is_write() {
            self.write
        } else {
            self.read
        }
    }
}

/// One core's record of the future.
#[derive(Clone, Debug, Default)]
struct CoreFuture {
    /// References seen.
    refs: u64,
    /// Closed chunks: (unit, weight) of each unit referenced in it, in first-reference
    /// order. Chunk `k` holds references [k·chunk_refs, (k+1)·chunk_refs).
    chunks: Vec<Box<[(u32, u32)]>>,
    /// The open chunk while another core's references are being read.
    parked: Vec<(u32, u32)>,
}

/// What the first pass learnt: every unit (page as the run maps it) the stream
/// touches, its weight over the whole run, and per core the weights in chunks.
pub struct Future {
    /// log2 of a unit's bytes.
    shift: u32,
    weights: Weights,
    chunk_refs: u64,
    /// Keep the chunks (the dynamic oracle), or only whole-run weights (the static).
    chunked: bool,
    /// Unit by key ([`Future::key`]), and key by unit.
    ids: IntMap<u64, u32>,
    keys: Vec<u64>,
    /// Whole-run weight per unit.
    total: Vec<u64>,
    cores: Vec<CoreFuture>,
    /// The open chunk: weight per unit, and the units it holds, of core `open`.
    scratch: Vec<u32>,
    touched: Vec<u32>,
    open: Option<usize>,
    /// The last key looked up and its unit (consecutive references often share a page).
    last: Option<(u64, u32)>,
    /// A functional copy of the machine's caches ([`Future::filtered`]), and the
    /// lines the current reference wrote back to memory.
    caches: Option<Caches>,
    writebacks: Evicted,
}

impl Future {
    /// An empty record for units of `1 << shift` bytes.
    pub fn new(shift: u32, weights: Weights, chunk_refs: u64, chunked: bool) -> Future {
        Future {
            shift,
            weights,
            chunk_refs: chunk_refs.max(1),
            chunked,
            ids: IntMap::default(),
            keys: Vec::new(),
            total: Vec::new(),
            cores: Vec::new(),
            scratch: Vec::new(),
            touched: Vec::new(),
            open: None,
            last: None,
            caches: None,
            writebacks: Evicted::default(),
        }
    }

    /// Weighs memory accesses instead of references: each reference goes through a
    /// functional copy of the caches `levels` of a `cores`-core machine, addressed as
    /// if the units were laid out one after another in the order first touched (the
    /// run's physical layout differs, so do the sets of conflicts; capacity and reuse
    /// do not); a reference missing every level weighs a read of its line from memory
    /// (a write allocates, reading it first), and a dirty line leaving the last level
    /// weighs a write to its unit.
    pub fn filtered(mut self, levels: &[CacheConfig], cores: usize) -> Future {
        if !levels.is_empty() {
            self.caches = Some(Caches::new(levels, cores));
        }
        self
    }

    /// Whether memory accesses are weighed (see [`Future::filtered`]).
    pub fn is_filtered(&self) -> bool {
        self.caches.is_some()
    }

    /// The unit of `key`, numbered on first sight.
    #[inline]
    fn unit_of_key(&mut self, key: u64) -> u32 {
        match self.last {
            Some((k, u)) if k == key => u,
            _ => {
                let next = self.keys.len() as u32;
                let u = *self.ids.entry(key).or_insert(next);
                if u == next {
                    self.keys.push(key);
                    self.total.push(0);
                    if self.chunked {
                        self.scratch.push(0);
                    }
                }
                self.last = Some((key, u));
                u
            }
        }
    }

    /// Adds weight `w` to unit `u`, in the open chunk.
    #[inline]
    fn add(&mut self, u: u32, w: u32) {
        self.total[u as usize] += w as u64;
        if self.chunked {
            let s = &mut self.scratch[u as usize];
            if *s == 0 && w > 0 {
                self.touched.push(u);
            }
            *s = s.saturating_add(w);
        }
    }

    /// The key of the unit holding `addr` of `tenant` (addresses are below 2^57).
    #[inline]
    fn key(&self, tenant: u16, addr: u64) -> u64 {
        (tenant as u64) << 48 | addr >> self.shift
    }

    /// The unit holding `addr` of `tenant`, if the stream touches it.
    pub fn unit(&self, tenant: u16, addr: u64) -> Option<u32> {
        self.ids.get(&self.key(tenant, addr)).copied()
    }

    /// The tenant and first address of unit `u`.
    pub fn unit_start(&self, u: u32) -> (u16, u64) {
        let k = self.keys[u as usize];
        ((k >> 48) as u16, (k & ((1 << 48) - 1)) << self.shift)
    }

    pub fn units(&self) -> usize {
        self.keys.len()
    }

    /// Whole-run weight of unit `u`.
    pub fn total(&self, u: u32) -> u64 {
        self.total[u as usize]
    }

    /// References core `core` makes.
    pub fn refs(&self, core: usize) -> u64 {
        self.cores.get(core).map_or(0, |c| c.refs)
    }

    /// (unit, weight) pairs kept over all chunks.
    pub fn entries(&self) -> usize {
        self.cores.iter().map(|c| c.chunks.iter().map(|k| k.len()).sum::<usize>()).sum()
    }

    /// Bytes the record holds, roughly: 8 per chunk entry, ~40 per unit (key, map
    /// slot, whole-run weight, scratch).
    pub fn bytes(&self) -> u64 {
        self.entries() as u64 * 8 + self.units() as u64 * 40
    }

    /// Records core `core`'s next references.
    pub fn foresee(&mut self, core: usize, batch: &[Access]) {
        if self.cores.len() <= core {
            self.cores.resize_with(core + 1, CoreFuture::default);
        }
        if self.chunked && self.open != Some(core) {
            self.switch_to(core);
        }
        for a in batch {
            let u = self.unit_of_key(self.key(a.tenant, a.vaddr));
            match &mut self.caches {
                None => self.add(u, self.weights.of_access(a)),
                Some(caches) => {
                    // Units laid out one after another, as frames are.
                    let addr = (u as u64) << self.shift | (a.vaddr & ((1 << self.shift) - 1));
                    let (level, _) = caches.access(core, addr, a.is_write(), &mut self.writebacks);
                    if level == caches.depth() {
                        self.add(u, self.weights.read);
                    }
                    for i in 0..self.writebacks.lines().len() {
                        let victim = ((self.writebacks.lines()[i] << 6) >> self.shift) as u32;
                        self.add(victim, self.weights.write);
                    }
                }
            }
            let c = &mut self.cores[core];
            c.refs += 1;
            if self.chunked && c.refs.is_multiple_of(self.chunk_refs) {
                self.close_chunk(core);
            }
        }
    }

    /// Ends the pass: closes every core's last, partial chunk.
    pub fn finish(&mut self) {
        if !self.chunked {
            return;
        }
        for core in 0..self.cores.len() {
            self.switch_to(core);
            if !self.cores[core].refs.is_multiple_of(self.chunk_refs) {
                self.close_chunk(core);
            }
        }
        self.park();
        self.scratch = Vec::new();
    }

    /// Moves the open chunk of the core being read aside and opens `core`'s.
    fn switch_to(&mut self, core: usize) {
        self.park();
        for (u, w) in std::mem::take(&mut self.cores[core].parked) {
            self.scratch[u as usize] = w;
            self.touched.push(u);
        }
        self.open = Some(core);
    }

    fn park(&mut self) {
        if let Some(c) = self.open.take() {
            let list = self.drain();
            self.cores[c].parked = list;
        }
    }

    fn drain(&mut self) -> Vec<(u32, u32)> {
        let scratch = &mut self.scratch;
        self.touched.drain(..).map(|u| (u, std::mem::take(&mut scratch[u as usize]))).collect()
    }

    fn close_chunk(&mut self, core: usize) {
        let list = self.drain();
        self.cores[core].chunks.push(list.into_boxed_slice());
    }

    /// Calls `f(unit, window weight, horizon weight)` for each (core, chunk entry)
    /// that falls in core `core`'s references [from, from + len·horizon): the window
    /// is the first `len` of them. A chunk partly inside either counts in proportion.
    pub fn window(&self, core: usize, from: u64, len: u64, horizon: u64, mut f: impl FnMut(u32, u64, u64)) {
        let Some(c) = self.cores.get(core) else { return };
        let (win_end, hor_end) = (from + len, from + len * horizon.max(1));
        let first = (from / self.chunk_refs) as usize;
        for (k, chunk) in c.chunks.iter().enumerate().skip(first) {
            let start = k as u64 * self.chunk_refs;
            if start >= hor_end {
                break;
            }
            let end = (start + self.chunk_refs).min(c.refs);
            let size = end - start;
            let overlap = |to: u64| to.min(end).saturating_sub(from.max(start));
            let (in_win, in_hor) = (overlap(win_end), overlap(hor_end));
            for &(u, w) in chunk.iter() {
                f(u, w as u64 * in_win / size, w as u64 * in_hor / size);
            }
        }
    }
}

/// The `budget` units of greatest weight among `(unit, weight)` pairs of positive
/// weight, heaviest first (ties to the lower unit).
pub fn heaviest(mut weighed: Vec<(u32, u64)>, budget: usize) -> Vec<u32> {
    weighed.retain(|&(_, w)| w > 0);
    weighed.sort_unstable_by_key(|&(u, w)| (std::cmp::Reverse(w), u));
    weighed.truncate(budget);
    weighed.into_iter().map(|(u, _)| u).collect()
}

/// A page the plan may move, or a member of the target set still to be touched
/// (`page: None`: first touch places it, at no cost).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    pub page: Option<PageInfo>,
    /// Base frames it takes.
    pub frames: u64,
    /// Weight in the coming window, and over the horizon.
    pub window: u64,
    pub horizon: u64,
    /// Estimated cost of moving it, in the weights' unit.
    pub cost: u64,
}

/// The moves that bring the target set into the fast tier: `promote` (slow members
/// and untouched ones), `demote` (fast pages outside the set), `room` free frames
/// above the reserve. Promotions go hottest first; each takes room, demoting the
/// coldest pages left when it needs more; with `priced`, only when its horizon
/// weight exceeds the displaced pages' plus every move's cost. Returns the moves in
/// order (each promotion after the demotions that make its room) and the frames
/// given to untouched members.
pub fn plan(mut promote: Vec<Candidate>, mut demote: Vec<Candidate>, mut room: u64, priced: bool) -> (Vec<(Candidate, TierId)>, u64, u64) {
    promote.sort_by_key(|c| (std::cmp::Reverse(c.window), std::cmp::Reverse(c.horizon), c.page.map(|p| (p.tenant, p.addr))));
    demote.sort_by_key(|c| (c.window, c.horizon, c.page.map(|p| (p.tenant, p.addr))));
    let (mut moves, mut next, mut pending, mut unprofitable) = (Vec::new(), 0, 0, 0);
    for p in promote {
        let (mut r, mut j) = (room, next);
        let mut gain = p.horizon as i128 - if p.page.is_some() { p.cost as i128 } else { 0 };
        while r < p.frames && j < demote.len() {
            gain -= (demote[j].horizon + demote[j].cost) as i128;
            r += demote[j].frames;
            j += 1;
        }
        if r < p.frames {
            break;
        }
        if priced && gain <= 0 {
            unprofitable += 1;
            continue;
        }
        moves.extend(demote[next..j].iter().map(|&d| (d, TierId::SLOW)));
        (room, next) = (r - p.frames, j);
        match p.page {
            Some(_) => moves.push((p, TierId::FAST)),
            None => pending += p.frames,
        }
    }
    (moves, pending, unprofitable)
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

/// The dynamic bound: see the module documentation.
pub struct Oracle {
    cfg: OracleConfig,
    future: Future,
    pacer: Pacer,
    /// Free fast frames the target set leaves (the low watermark).
    reserve: u64,
    fast_frames: u64,
    /// Page-table frames the first placement leaves room for.
    table_frames: u64,
    /// Estimated cost of moving a base page and a huge page, in weight units.
    cost: [u64; 2],
    /// References each core has made, and had made at the last decision.
    done: Vec<u64>,
    prev: Vec<u64>,
    /// Membership of the target set, by unit; the members, to clear it.
    in_set: Vec<bool>,
    members: Vec<u32>,
    /// Frames the set's untouched members still need in the fast tier, and those of
    /// promotions queued.
    pending: u64,
    promoting: u64,
    /// Unit of each page number met, or `u32::MAX`.
    unit_of_page: Vec<u32>,
    /// Per unit, during a decision: some page of it is mapped.
    mapped: Vec<bool>,
    /// Per unit: weight in the window and over the horizon; units with some.
    acc: Vec<(u64, u64)>,
    seen: Vec<u32>,
    /// The moves of the job under way.
    moving: Vec<TierId>,
    achieved: Achieved,
    moved: [u64; 2],
    refused: u64,
    unprofitable: u64,
    decisions: u64,
    /// Predicted: weight of the set's members and of all units, over the windows.
    predicted: (u64, u64),
}

impl Observer for Oracle {
    fn place(&mut self, e: &PlaceEvent) -> Birthplace {
        let frames = if e.huge { 1 << (self.future.shift - 12) } else { 1 };
        if self.future.unit(e.tenant, e.addr).is_some_and(|u| self.in_set[u as usize]) {
            self.pending = self.pending.saturating_sub(frames);
            return TierId::FAST.into();
        }
        // Another page: the fast tier only if members to come and queued promotions
        // keep their room.
        if e.fast_free >= self.reserve + self.pending + self.promoting + frames {
            TierId::FAST.into()
        } else {
            TierId::SLOW.into()
        }
    }
}

impl Oracle {
    /// Makes unit list `set` the target set.
    fn set_members(&mut self, set: Vec<u32>) {
        for &u in &self.members {
            self.in_set[u as usize] = false;
        }
        for &u in &set {
            self.in_set[u as usize] = true;
        }
        self.members = set;
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

    /// Chooses the target set for the coming window and submits the moves.
    fn decide(&mut self, mech: &mut Mechanisms) {
        self.decisions += 1;
        let horizon = self.cfg.horizon_windows.max(1) as u64;
        for core in 0..self.done.len() {
            let (from, len) = (self.done[core], self.done[core] - self.prev[core]);
            let (acc, seen) = (&mut self.acc, &mut self.seen);
            self.future.window(core, from, len, horizon, |u, w, h| {
                let a = &mut acc[u as usize];
                if *a == (0, 0) {
                    seen.push(u);
                }
                a.0 += w;
                a.1 += h;
            });
            self.prev[core] = self.done[core];
        }
        // The set: the heaviest units of the window that fit the fast tier's data
        // frames and free frames above the reserve.
        let held: u64 = (0..mech.tenants()).map(|t| mech.tenant_frames(t, TierId::FAST)).sum();
        let budget = (held + mech.free_frames(TierId::FAST)).saturating_sub(self.reserve) >> (self.future.shift - 12);
        let weighed: Vec<(u32, u64)> = self.seen.iter().map(|&u| (u, self.acc[u as usize].0)).collect();
        let set = heaviest(weighed, budget as usize);
        self.predicted.0 += set.iter().map(|&u| self.acc[u as usize].0).sum::<u64>();
        self.predicted.1 += self.seen.iter().map(|&u| self.acc[u as usize].0).sum::<u64>();
        self.set_members(set);
        // Where the pages are: slow members to promote, fast others to demote.
        let mut pages = Vec::new();
        mech.pages(Scope::All, |p| pages.push(p));
        let (mut promote, mut demote) = (Vec::new(), Vec::new());
        for p in pages {
            let Some(u) = self.unit_of(&p) else { continue };
            let (window, horizon) = self.acc[u as usize];
            let c = Candidate { page: Some(p), frames: p.base_pages(), window, horizon, cost: self.cost[p.huge as usize] };
            let member = self.in_set[u as usize];
            self.mapped[u as usize] |= member;
            match (member, p.tier == TierId::FAST) {
                (true, false) => promote.push(c),
                (false, true) => demote.push(c),
                _ => {}
            }
        }
        let unit_frames = 1 << (self.future.shift - 12);
        for &u in &self.members {
            if !std::mem::take(&mut self.mapped[u as usize]) {
                let (window, horizon) = self.acc[u as usize];
                promote.push(Candidate { page: None, frames: unit_frames, window, horizon, cost: 0 });
            }
        }
        for u in self.seen.drain(..) {
            self.acc[u as usize] = (0, 0);
        }
        let room = mech.free_frames(TierId::FAST).saturating_sub(self.reserve);
        let (moves, pending, unprofitable) = plan(promote, demote, room, self.cfg.move_cost_factor > 0.0);
        self.pending = pending;
        self.unprofitable += unprofitable;
        self.promoting = moves.iter().filter(|(_, to)| *to == TierId::FAST).map(|(c, _)| c.frames).sum();
        self.moving.clear();
        let mut job = Job::new(MOVE);
        for (c, to) in moves {
            job.push(Op::Migrate { page: c.page.expect("a mapped page").at(), to });
            self.moving.push(to);
        }
        if !job.is_empty() {
            let _ = mech.submit(THREAD, job);
        }
    }
}

impl Policy for Oracle {
    type Config = OracleConfig;

    fn requirements(cfg: &OracleConfig) -> Requirements<()> {
        let fast_reserve = FastReserve::LinuxLow { scale_factor: cfg.watermark_scale_factor };
        Requirements { placement: Placement::Chosen, fast_reserve, threads: vec![ThreadKind::Kernel], foresight: true, ..Requirements::default() }
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
        let fast_frames = info.tier(TierId::FAST).frames;
        let reserve = Watermarks::linux(fast_frames, Watermarks::linux_min(fast_frames), cfg.watermark_scale_factor).low.min(fast_frames);
        let weights = Weights::of(info);
        // A move copies over the slower channel, flushes the page's lines and shoots
        // its translation down; in quarter nanoseconds, as the weights.
        let gbps = info.tiers[..2].iter().map(|t| t.gbps).fold(f64::INFINITY, f64::min).max(1e-3);
        let cost = |bytes: u64| {
            let ns = bytes as f64 / gbps + ((bytes / 64 * info.clflush_cycles_per_line + info.shootdown_cycles) as f64) / info.freq_ghz;
            (ns * 4.0 * cfg.move_cost_factor).round() as u64
        };
        let cost = [cost(4096), cost(info.huge_page_bytes)];
        let future = Future::new(shift, weights, cfg.chunk_refs, true).filtered(&info.caches, info.cores);
        let cores = info.cores;
        Ok(Oracle {
            cfg,
            future,
            pacer,
            reserve,
            fast_frames,
            table_frames: table_frames(info),
            cost,
            done: vec![0; cores],
            prev: vec![0; cores],
            in_set: Vec::new(),
            members: Vec::new(),
            pending: 0,
            promoting: 0,
            unit_of_page: Vec::new(),
            mapped: Vec::new(),
            acc: Vec::new(),
            seen: Vec::new(),
            moving: Vec::new(),
            achieved: Achieved::new(info),
            moved: [0; 2],
            refused: 0,
            unprofitable: 0,
            decisions: 0,
            predicted: (0, 0),
        })
    }

    fn foresee(&mut self, core: usize, batch: &[Access]) {
        self.future.foresee(core, batch);
    }

    fn foreseen(&mut self) -> anyhow::Result<()> {
        self.future.finish();
        let units = self.future.units();
        self.in_set = vec![false; units];
        self.acc = vec![(0, 0); units];
        self.mapped = vec![false; units];
        // Before the first decision the window is one chunk of every core: the
        // pages it weighs are born in the fast tier.
        let horizon = self.cfg.horizon_windows.max(1) as u64;
        let mut weighed = IntMap::<u32, u64>::default();
        for core in 0..self.done.len() {
            self.future.window(core, 0, self.cfg.chunk_refs, horizon, |u, w, _| *weighed.entry(u).or_insert(0) += w);
        }
        let mut weighed: Vec<(u32, u64)> = weighed.into_iter().collect();
        weighed.sort_unstable();
        let budget = self.fast_frames.saturating_sub(self.reserve + self.table_frames) >> (self.future.shift - 12);
        let set = heaviest(weighed, budget as usize);
        self.pending = set.len() as u64 * (1 << (self.future.shift - 12));
        self.set_members(set);
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
    /// The units of greatest whole-run weight that fit `frames` fast frames.
    pub fn choose(future: &Future, frames: u64) -> Vec<u32> {
        let weighed = (0..future.units() as u32).map(|u| (u, future.total(u))).collect();
        heaviest(weighed, (frames >> (future.shift - 12)) as usize)
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

#[cfg(test)]
mod tests {
    use super::*;

    const A: u64 = 0x1000;
    const B: u64 = 0x2000;
    const C: u64 = 0x3000;
    const D: u64 = 0x4000;

    fn r(addr: u64) -> Access {
        Access::read(addr, 8, 0)
    }

    fn w(addr: u64) -> Access {
        Access::write(addr, 8, 0)
    }

    /// Reads weigh 1, writes 4; chunks of 4 references. Twelve references of core 0:
    ///   chunk 0 (refs 0–3):  A r, A r, B w, A r  → A 3, B 4
    ///   chunk 1 (refs 4–7):  C r, C r, C r, B r  → C 3, B 1
    ///   chunk 2 (refs 8–11): D w, D w, C r, A r  → D 8, C 1, A 1
    /// Units are numbered as first met: A 0, B 1, C 2, D 3.
    fn stream() -> Future {
        let mut f = Future::new(12, Weights { read: 1, write: 4 }, 4, true);
        let refs = [r(A), r(A), w(B), r(A), r(C), r(C), r(C), r(B), w(D), w(D), r(C), r(A)];
        // In two batches, split inside a chunk.
        f.foresee(0, &refs[..6]);
        f.foresee(0, &refs[6..]);
        f.finish();
        f
    }

    /// The target set of `budget` units for core 0's references [from, from + len).
    fn chosen(f: &Future, from: u64, len: u64, budget: usize) -> Vec<u32> {
        let mut acc = vec![0u64; f.units()];
        f.window(0, from, len, 1, |u, w, _| acc[u as usize] += w);
        heaviest(acc.into_iter().enumerate().map(|(u, w)| (u as u32, w)).collect(), budget)
    }

    #[test]
    fn the_oracle_keeps_the_heaviest_pages_of_each_coming_window() {
        let f = stream();
        let (a, b, c, d) = (0, 1, 2, 3);
        assert_eq!([A, B, C, D].map(|x| f.unit(0, x).unwrap()), [a, b, c, d]);
        assert_eq!(f.entries(), 2 + 2 + 3);
        // Window [0, 4): B's one write (4) outweighs A's three reads (3).
        assert_eq!(chosen(&f, 0, 4, 1), vec![b]);
        assert_eq!(chosen(&f, 0, 4, 2), vec![b, a]);
        // [4, 8): C 3, B 1. [8, 12): D 8, then A and C 1 each (tie: lower unit).
        assert_eq!(chosen(&f, 4, 4, 1), vec![c]);
        assert_eq!(chosen(&f, 8, 4, 2), vec![d, a]);
        // [2, 6) covers half of chunks 0 and 1: A 3·2/4 = 1, B 4·2/4 + 1·2/4 = 2 + 0,
        // C 3·2/4 = 1 (integer shares) → B.
        assert_eq!(chosen(&f, 2, 4, 1), vec![b]);
        // A window past the end weighs nothing: no set.
        assert!(chosen(&f, 12, 4, 4).is_empty());
    }

    #[test]
    fn the_horizon_spans_several_windows() {
        // Window [4, 8), horizon 2 windows = [4, 12): window C 3, B 1; horizon C 3 + 1,
        // B 1, D 8, A 1.
        let f = stream();
        let mut got = vec![(0, 0); f.units()];
        f.window(0, 4, 4, 2, |u, w, h| {
            got[u as usize].0 += w;
            got[u as usize].1 += h;
        });
        assert_eq!(got, vec![(0, 1), (1, 1), (3, 4), (0, 8)]);
    }

    #[test]
    fn the_static_choice_is_the_heaviest_over_the_whole_run() {
        // Whole run: A 3 + 1 = 4, B 4 + 1 = 5, C 3 + 1 = 4, D 8.
        let f = stream();
        assert_eq!((0..4).map(|u| f.total(u)).collect::<Vec<_>>(), vec![4, 5, 4, 8]);
        // One frame: D; two: D, B; three: D, B and A (A and C tie at 4: lower unit).
        assert_eq!(OracleStatic::choose(&f, 1), vec![3]);
        assert_eq!(OracleStatic::choose(&f, 2), vec![3, 1]);
        assert_eq!(OracleStatic::choose(&f, 3), vec![3, 1, 0]);
        // Without chunks (the static bound's record), the same totals.
        let mut s = Future::new(12, Weights { read: 1, write: 4 }, 1, false);
        s.foresee(0, &[r(A), r(A), w(B), r(A), r(C), r(C), r(C), r(B), w(D), w(D), r(C), r(A)]);
        s.finish();
        assert_eq!(s.entries(), 0);
        assert_eq!(OracleStatic::choose(&s, 2), vec![3, 1]);
    }

    #[test]
    fn writes_weigh_the_write_latency_gap() {
        // Rainbow's Table IV: DRAM 13.5 / 28.5 ns, PCM 19.5 / 171 ns → reads 6 ns = 24
        // quarters, writes 142.5 ns = 570.
        let wts = Weights::of(&crate::policy::dram_cache::table_iv_info(1, 1, 1));
        assert_eq!(wts, Weights { read: 24, write: 570 });
        // 23 reads of A (552) lose to one write of B (570).
        let mut f = Future::new(12, wts, 1 << 16, false);
        let mut refs = vec![r(A); 23];
        refs.push(w(B));
        f.foresee(0, &refs);
        f.finish();
        assert_eq!((f.total(0), f.total(1)), (552, 570));
        assert_eq!(OracleStatic::choose(&f, 1), vec![1]);
    }

    #[test]
    fn units_are_pages_of_each_tenant_as_mapped() {
        // Huge units: 0x1000 and 0x1ff000 share a 2 MiB region, 0x200000 does not;
        // tenant 1's region at the same address is another unit.
        let mut f = Future::new(21, Weights { read: 1, write: 1 }, 2, true);
        let t1 = |a: Access| Access { tenant: 1, ..a };
        // Two cores read in turns, batch by batch, as a first pass may hand them.
        f.foresee(0, &[r(0x1000), r(0x1f_f000), r(0x20_0000)]);
        f.foresee(1, &[t1(r(0x1000))]);
        f.foresee(0, &[r(0x1000)]);
        f.foresee(1, &[t1(r(0x1000)), t1(r(0x1000))]);
        f.finish();
        assert_eq!(f.units(), 3);
        assert_eq!(f.unit(0, 0x1f_f000), Some(0));
        assert_ne!(f.unit(1, 0x1000), f.unit(0, 0x1000));
        assert_eq!(f.unit_start(2), (1, 0));
        assert_eq!((f.refs(0), f.refs(1)), (4, 3));
        // Core 0's chunks: {0: 2}, {1: 1, 0: 1}; core 1's: {2: 2}, {2: 1}.
        let seen = |core, from, len| {
            let mut v = Vec::new();
            f.window(core, from, len, 1, |u, w, _| v.push((u, w)));
            v
        };
        assert_eq!(seen(0, 0, 4), vec![(0, 2), (1, 1), (0, 1)]);
        assert_eq!(seen(1, 0, 3), vec![(2, 2), (2, 1)]);
    }

    fn page(addr: u64, tier: TierId) -> PageInfo {
        PageInfo { tenant: 0, addr, page: addr >> 12, bytes: 4096, huge: false, pfn: 0, tier, accessed: false, dirty: false, poisoned: false }
    }

    #[test]
    fn moves_pay_for_themselves_and_demotions_come_first() {
        let cand = |addr, tier, window, horizon| Candidate { page: Some(page(addr, tier)), frames: 1, window, horizon, cost: 5 };
        let p1 = cand(A, TierId::SLOW, 10, 40);
        let p2 = cand(B, TierId::SLOW, 2, 3);
        let d1 = cand(C, TierId::FAST, 0, 1);
        let d2 = cand(D, TierId::FAST, 1, 2);
        // No free room. p1: 40 − 5 − (1 + 5) = 29 > 0, after demoting the coldest, d1.
        // p2: 3 − 5 − (2 + 5) < 0: not worth it.
        let (moves, pending, unprofitable) = plan(vec![p2, p1], vec![d2, d1], 0, true);
        assert_eq!(moves, vec![(d1, TierId::SLOW), (p1, TierId::FAST)]);
        assert_eq!((pending, unprofitable), (0, 1));
        // Unpriced: every move the set asks for.
        let (moves, _, _) = plan(vec![p2, p1], vec![d2, d1], 0, false);
        assert_eq!(moves, vec![(d1, TierId::SLOW), (p1, TierId::FAST), (d2, TierId::SLOW), (p2, TierId::FAST)]);
        // One free frame: p1 takes it; a member still untouched (no page, hotter)
        // comes first and takes it instead, at no cost; p1 then displaces d1.
        let untouched = Candidate { page: None, frames: 1, window: 20, horizon: 20, cost: 0 };
        let (moves, pending, _) = plan(vec![p1], vec![d1], 1, true);
        assert_eq!((moves, pending), (vec![(p1, TierId::FAST)], 0));
        let (moves, pending, _) = plan(vec![p1, untouched], vec![d1], 1, true);
        assert_eq!((moves, pending), (vec![(d1, TierId::SLOW), (p1, TierId::FAST)], 1));
    }
}
