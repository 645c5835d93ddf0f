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
use crate::machine::cache::{CacheConfig, Caches, Evicted};
use crate::machine::{Birthplace, MachineInfo, Observer, PageInfo, PlaceEvent, RefOutcome, TierId};
use crate::mechanism::{Executor, Job, JobDone, Mechanisms, Op, PageRef, Scope, ThreadId, ThreadKind};
use crate::monitor::{Pacer, Period};
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
        /// of the horizons over which moves must pay (1, 2, 4, … chunks).
        pub chunk_refs: u64 = 16384,
        /// Multiplies the estimated cost of a move (its copy over the channels, the
        /// cache flush and the shootdown); 0 prices moves at nothing, so that a swap is
        /// made whenever the incoming page weighs more.
        pub move_cost_factor: f64 = 1.0,
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

/// What a chunk records of one unit: its weight, and how many of its lines the caches
/// served (a move flushes the page from the caches, and the cores then read again
/// from memory the lines they would have found there).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    pub unit: u32,
    pub weight: u32,
    pub hits: u32,
}

/// One core's record of the future.
#[derive(Clone, Debug, Default)]
struct CoreFuture {
    /// References seen.
    refs: u64,
    /// Closed chunks: an entry for each unit referenced in it, in first-reference
    /// order. Chunk `k` holds references [k·chunk_refs, (k+1)·chunk_refs).
    chunks: Vec<Box<[Entry]>>,
    /// The open chunk while another core's references are being read.
    parked: Vec<Entry>,
    /// The lines the caches served in the open chunk: a bit per line of the units
    /// laid out one after another, and the lines set, to clear them.
    lines_hit: Vec<u64>,
    hit_list: Vec<u64>,
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
    /// The open chunk: weight and cache hits per unit, and the units it holds, of
    /// core `open`.
    scratch: Vec<(u32, u32)>,
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
                        self.scratch.push((0, 0));
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
        if self.chunked && w > 0 {
            let s = &mut self.scratch[u as usize];
            if *s == (0, 0) {
                self.touched.push(u);
            }
            s.0 = s.0.saturating_add(w);
        }
    }

    /// Counts a line of unit `u` that a cache served, the first time in the open chunk.
    #[inline]
    fn hit(&mut self, u: u32) {
        if self.chunked {
            let s = &mut self.scratch[u as usize];
            if *s == (0, 0) {
                self.touched.push(u);
            }
            s.1 = s.1.saturating_add(1);
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

    /// Entries kept over all chunks.
    pub fn entries(&self) -> usize {
        self.cores.iter().map(|c| c.chunks.iter().map(|k| k.len()).sum::<usize>()).sum()
    }

    /// Bytes the record holds, roughly: 12 per chunk entry, ~40 per unit (key, map
    /// slot, whole-run weight, scratch).
    pub fn bytes(&self) -> u64 {
        self.entries() as u64 * std::mem::size_of::<Entry>() as u64 + self.units() as u64 * 40
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
                    } else if self.chunked {
                        // Each line the caches serve counts once per chunk.
                        let (line, c) = (addr >> 6, &mut self.cores[core]);
                        let (word, bit) = ((line / 64) as usize, 1 << (line % 64));
                        if c.lines_hit.len() <= word {
                            c.lines_hit.resize(word + 1, 0);
                        }
                        if c.lines_hit[word] & bit == 0 {
                            c.lines_hit[word] |= bit;
                            c.hit_list.push(line);
                            self.hit(u);
                        }
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
        for c in &mut self.cores {
            (c.lines_hit, c.hit_list) = (Vec::new(), Vec::new());
        }
    }

    /// Moves the open chunk of the core being read aside and opens `core`'s.
    fn switch_to(&mut self, core: usize) {
        self.park();
        for e in std::mem::take(&mut self.cores[core].parked) {
            self.scratch[e.unit as usize] = (e.weight, e.hits);
            self.touched.push(e.unit);
        }
        self.open = Some(core);
    }

    fn park(&mut self) {
        if let Some(c) = self.open.take() {
            let list = self.drain();
            self.cores[c].parked = list;
        }
    }

    fn drain(&mut self) -> Vec<Entry> {
        let scratch = &mut self.scratch;
        self.touched
            .drain(..)
            .map(|unit| {
                let (weight, hits) = std::mem::take(&mut scratch[unit as usize]);
                Entry { unit, weight, hits }
            })
            .collect()
    }

    fn close_chunk(&mut self, core: usize) {
        let list = self.drain();
        let c = &mut self.cores[core];
        c.chunks.push(list.into_boxed_slice());
        for line in c.hit_list.drain(..) {
            c.lines_hit[(line / 64) as usize] = 0;
        }
    }

    /// Cores with a record.
    pub fn cores(&self) -> usize {
        self.cores.len()
    }

    /// Chunks in core `core`'s record.
    pub fn chunks(&self, core: usize) -> usize {
        self.cores.get(core).map_or(0, |c| c.chunks.len())
    }

    /// The entries of chunk `k` of core `core`; none past its end.
    pub fn chunk(&self, core: usize, k: usize) -> &[Entry] {
        self.cores.get(core).and_then(|c| c.chunks.get(k)).map_or(&[], |chunk| chunk)
    }

    /// References in chunk `k` of core `core` (the last chunk may be short).
    fn chunk_len(&self, core: usize, k: usize) -> u64 {
        let start = k as u64 * self.chunk_refs;
        (start + self.chunk_refs).min(self.refs(core)).saturating_sub(start)
    }
}

/// Every unit's weight over the coming 1, 2, 4, … chunks of every core, kept as the
/// run goes on. Horizon `level` ends `2^level` chunks after the start of each core's
/// current chunk; the last level reaches past the end of every core's record. From a
/// core's current position, the part of its current chunk already run is counted out
/// in proportion. Each level's boundary only moves forward, so over the whole run
/// every entry of the record is added once per level.
pub struct Horizons {
    levels: usize,
    /// A row per unit: its weight in each core's chunks before its boundary of each
    /// level, then in those before its current chunk, then the part of the current
    /// chunks already run (one row is read at once).
    rows: Vec<u64>,
    /// Chunks of each core summed in each level's column, and in the column before.
    added: Vec<Vec<usize>>,
    added_before: Vec<usize>,
    /// The units with some weight in the last column (to clear it).
    passed_units: Vec<u32>,
}

impl Horizons {
    /// Horizons over `future`'s record, at the start of the run.
    pub fn new(future: &Future) -> Horizons {
        let longest = (0..future.cores()).map(|c| future.chunks(c)).max().unwrap_or(0).max(1);
        let levels = longest.next_power_of_two().trailing_zeros() as usize + 1;
        let cores = future.cores();
        Horizons { levels, rows: vec![0; future.units() * (levels + 2)], added: vec![vec![0; cores]; levels], added_before: vec![0; cores], passed_units: Vec::new() }
    }

    /// Horizons: 1, 2, 4, … chunks, the last one past the end of the run.
    pub fn levels(&self) -> usize {
        self.levels
    }

    /// Moves to the position where core `c` has made `done[c]` references (never
    /// fewer than at the last call; a core missing from `done` has made none).
    pub fn advance(&mut self, future: &Future, done: &[u64]) {
        let (width, before, passed) = (self.levels + 2, self.levels, self.levels + 1);
        for u in self.passed_units.drain(..) {
            self.rows[u as usize * width + passed] = 0;
        }
        for core in 0..future.cores() {
            let at = done.get(core).copied().unwrap_or(0);
            let (k, n) = ((at / future.chunk_refs) as usize, future.chunks(core));
            add_chunks(future, core, &mut self.rows, width, before, &mut self.added_before[core], k.min(n));
            for level in 0..self.levels {
                add_chunks(future, core, &mut self.rows, width, level, &mut self.added[level][core], (k + (1 << level)).min(n));
            }
            let (size, run) = (future.chunk_len(core, k), at - k as u64 * future.chunk_refs);
            for e in future.chunk(core, k) {
                self.passed_units.push(e.unit);
                self.rows[e.unit as usize * width + passed] += e.weight as u64 * run / size;
            }
        }
    }

    /// Weight of unit `u` from the current position to the boundary of `level`.
    #[inline]
    pub fn weight(&self, u: u32, level: usize) -> u64 {
        let row = &self.rows[u as usize * (self.levels + 2)..][..self.levels + 2];
        (row[level] - row[self.levels]).saturating_sub(row[self.levels + 1])
    }

    /// Appends unit `u`'s weights over every level to `out`, times `share`.
    pub fn extend(&self, u: u32, share: (u64, u64), out: &mut Vec<u64>) {
        let row = &self.rows[u as usize * (self.levels + 2)..][..self.levels + 2];
        let (before, passed) = (row[self.levels], row[self.levels + 1]);
        let w = row[..self.levels].iter().map(|&end| (end - before).saturating_sub(passed));
        if share.0 == share.1 {
            out.extend(w);
        } else {
            out.extend(w.map(|x| x * share.0 / share.1));
        }
    }
}

/// The lines of every unit the caches served over the last `span` chunks of every
/// core, and will serve over the next `span` (each chunk's distinct lines, summed),
/// kept as sliding sums as the run goes on. A line the caches hold and will serve
/// again is one a move's flush makes the cores read from memory; the smaller of the
/// two sums bounds how many those are. `span` is how long a line stays in the caches:
/// the last level's lines over the misses per chunk.
pub struct Reuse {
    span: usize,
    before: Vec<u32>,
    after: Vec<u32>,
    /// Per core, chunks [lo, mid) are summed in `before`, [mid, hi) in `after`.
    at: Vec<(usize, usize, usize)>,
}

impl Reuse {
    /// Sliding sums over `future`'s record, at the start of the run, for caches whose
    /// last level holds `lines` lines.
    pub fn new(future: &Future, lines: u64) -> Reuse {
        let chunks = (0..future.cores()).map(|c| future.chunks(c)).max().unwrap_or(0).max(1) as u64;
        let misses = (0..future.units() as u32).map(|u| future.total(u)).sum::<u64>() / (future.weights.read as u64).max(1);
        let span = lines.saturating_mul(chunks).div_ceil(misses.max(1)).clamp(1, 32) as usize;
        Reuse { span, before: vec![0; future.units()], after: vec![0; future.units()], at: vec![(0, 0, 0); future.cores()] }
    }

    /// Moves to the position where core `c` has made `done[c]` references (never
    /// fewer than at the last call).
    pub fn advance(&mut self, future: &Future, done: &[u64]) {
        for core in 0..future.cores() {
            let k = (done.get(core).copied().unwrap_or(0) / future.chunk_refs) as usize;
            let (lo, mid, hi) = self.at[core];
            let n = future.chunks(core);
            for chunk in hi..(k + self.span).min(n).max(hi) {
                future.chunk(core, chunk).iter().for_each(|e| self.after[e.unit as usize] += e.hits);
            }
            for chunk in mid..k.max(mid) {
                for e in future.chunk(core, chunk) {
                    self.after[e.unit as usize] -= e.hits;
                    self.before[e.unit as usize] += e.hits;
                }
            }
            for chunk in lo..k.saturating_sub(self.span).max(lo) {
                future.chunk(core, chunk).iter().for_each(|e| self.before[e.unit as usize] -= e.hits);
            }
            self.at[core] = (k.saturating_sub(self.span).max(lo), k.max(mid), (k + self.span).min(n).max(hi));
        }
    }

    /// Lines of unit `u` the caches served over the last `span` chunks, and will over
    /// the next.
    pub fn hits(&self, u: u32) -> (u32, u32) {
        (self.before[u as usize], self.after[u as usize])
    }
}

/// Adds the entries of core `core`'s chunks from `*added` up to `to` into column
/// `column` of `rows` (rows of `width`, one per unit).
fn add_chunks(future: &Future, core: usize, rows: &mut [u64], width: usize, column: usize, added: &mut usize, to: usize) {
    while *added < to {
        for e in future.chunk(core, *added) {
            rows[e.unit as usize * width + column] += e.weight as u64;
        }
        *added += 1;
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

/// A page the plan may move, or a unit not touched yet (`page: None`), which first
/// touch places where the plan says, at no cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    pub page: Option<PageInfo>,
    pub unit: u32,
    /// Base frames it takes.
    pub frames: u64,
    /// Its weight over horizon `level` is `weights[row * levels + level]` in
    /// [`plan`]'s table; `now`, its weight in the coming window.
    pub row: usize,
    pub now: u64,
    /// What moving it costs now (0 when untouched) and what moving it back the other
    /// way later would cost, in the weights' unit ([`MoveCosts`]).
    pub cost: u64,
    pub back: u64,
    /// The kernel thread's time for the move now, in ns (0 when untouched).
    pub busy_ns: u64,
}

/// The moves of one decision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The horizon the moves pay over (its level: 2^level chunks), and what they gain
    /// over it net of every cost, in the weights' unit (0: nothing pays).
    pub level: usize,
    pub gain: u64,
    /// The moves in order, as indices into the candidates to promote (`true`) or to
    /// demote (`false`): each promotion right after the demotions that make its room.
    pub moves: Vec<(bool, usize)>,
}

/// Plans swaps into the fast tier. `promote` holds the pages outside it (and untouched
/// units the plan leaves out), `demote` those inside (and untouched units it puts
/// there); `weights` holds `levels` weights per candidate, over horizons of 1, 2, 4, …
/// chunks, the last reaching the end of the run; `room` base frames are free to take;
/// the moves may keep the kernel thread busy for `busy_ns` (the last may end past it).
///
/// For each horizon, the candidates to promote, best first (weight less the move's
/// cost, per frame), each take free frames or else displace the cheapest pages left to
/// put out (weight plus the move's cost, per frame; a huge page only huge ones), and
/// are promoted only if
///
///   gain = w(p) − cost(p) − Σ_d (w(d) + cost(d)) − min(back, max(0, Σ_d rest(d) − rest(p)))
///
/// is positive: `w` is the weight over the horizon, `cost` the move's now, `back` the
/// cost of moving `p` and every `d` back, `rest` the weight from the end of the
/// horizon to the end of the run. Our choice (no paper plans with costs): a swap that
/// leaves behind pages worth less, after its horizon, than those it displaced either
/// pays for swapping back, when that is worth it, or loses the difference; so a swap
/// is charged its round trip unless it pays over the whole rest of the run. And a
/// swap is made only if the pages it displaces weigh no more than `p` in the coming
/// window (`now`): one that pays over its horizon but not yet pays more made later,
/// and a plan that swapped now for a long horizon would be undone by the next plan
/// for a short one, over and over. The plan of the horizon whose moves gain most is
/// returned.
///
/// Per horizon only the best candidates to promote are looked at: four times as many
/// as the thread could move in `busy_ns` at the pace of the fastest move, at least 64
/// (our choice, for the time of a decision over thousands of pages). A page further
/// down the ranking waits for a later decision even if it would pay.
pub fn plan(promote: &[Candidate], demote: &[Candidate], weights: &[u64], levels: usize, room: u64, busy_ns: u64) -> Plan {
    let w = |c: &Candidate, level: usize| weights[c.row * levels + level];
    let last = levels.saturating_sub(1);
    let rest = |c: &Candidate, level: usize| w(c, last).saturating_sub(w(c, level)) as i128;
    // What a page is worth in the fast tier, net of its move: its weight less the
    // move's cost to bring it in, plus that cost to put it out; per base frame (in
    // frames of the largest candidate), to rank pages of both sizes on one scale.
    let most = promote.iter().chain(demote).map(|c| c.frames).max().unwrap_or(1).max(1);
    let density = |c: &Candidate, level: usize, inside: bool| {
        let worth = if inside { w(c, level) + c.cost } else { w(c, level).saturating_sub(c.cost) };
        worth.saturating_mul(most / c.frames.max(1))
    };
    let order = |c: &Candidate| (c.unit, c.page.map_or(0, |p| p.addr));
    // The thread makes at most `busy_ns / fastest` moves before the next decision (a
    // move and the demotions making its room take more); four times as many candidates
    // to promote are looked at (the best), which leaves room for those that do not pay.
    let fastest = promote.iter().chain(demote).map(|c| c.busy_ns).filter(|&b| b > 0).min().unwrap_or(1);
    let looked = (busy_ns / fastest).saturating_mul(4).max(64) as usize;
    let mut best = Plan::default();
    // The pages to put out, ranked over every horizon in one pass over the table.
    let n = demote.len();
    let mut columns = vec![0; n * levels];
    for (i, d) in demote.iter().enumerate() {
        for level in 0..levels {
            columns[level * n + i] = density(d, level, true);
        }
    }
    let (mut taken, mut all, mut huge_pages) = (vec![false; n], Vec::new(), Vec::new());
    for level in 0..levels {
        let mut ups: Vec<usize> = (0..promote.len()).filter(|&i| w(&promote[i], level) > promote[i].cost).collect();
        if ups.is_empty() {
            continue;
        }
        let best_first = |a: &usize, b: &usize| density(&promote[*b], level, false).cmp(&density(&promote[*a], level, false)).then_with(|| order(&promote[*a]).cmp(&order(&promote[*b])));
        if ups.len() > looked {
            ups.select_nth_unstable_by(looked - 1, best_first);
            ups.truncate(looked);
        }
        ups.sort_unstable_by(best_first);
        // The coldest pages per frame over this horizon, as many as the promotions
        // could displace: any page makes room for a base page, only a huge one (or a
        // unit not touched yet) for a huge page, which needs a huge frame free whole.
        let keys = &columns[level * n..][..n];
        let coldest = |a: &usize, b: &usize| keys[*a].cmp(&keys[*b]).then_with(|| order(&demote[*a]).cmp(&order(&demote[*b])));
        let coldest_of = |list: &mut Vec<usize>, keep: u64| {
            let keep = keep.min(list.len() as u64) as usize;
            if keep > 0 && keep < list.len() {
                list.select_nth_unstable_by(keep - 1, coldest);
            }
            list.truncate(keep);
            list.sort_unstable_by(coldest);
        };
        let frames: u64 = ups.iter().map(|&i| promote[i].frames).sum();
        let huge = ups.iter().filter(|&&i| promote[i].frames > 1).count() as u64;
        all.clear();
        all.extend(0..demote.len());
        huge_pages.clear();
        huge_pages.extend((0..demote.len()).filter(|&i| demote[i].frames > 1));
        coldest_of(&mut all, frames);
        coldest_of(&mut huge_pages, huge);
        let lists = [&all, &huge_pages];
        let (mut next, mut exhausted) = ([0; 2], [false; 2]);
        let (mut free, mut busy, mut gain, mut moves, mut displaced) = (room, 0, 0, Vec::new(), Vec::new());
        for &i in &ups {
            if busy >= busy_ns {
                break;
            }
            let p = &promote[i];
            let kind = (p.frames > 1) as usize;
            if exhausted[kind] {
                continue;
            }
            let (list, mut j, mut r, mut b) = (lists[kind], next[kind], free, p.busy_ns);
            let (mut g, mut back, mut after, mut now) = (w(p, level) as i128 - p.cost as i128, p.back as i128, -rest(p, level), 0);
            displaced.clear();
            while r < p.frames && j < list.len() {
                let k = list[j];
                j += 1;
                if taken[k] {
                    continue;
                }
                let d = &demote[k];
                g -= (w(d, level) + d.cost) as i128;
                back += d.back as i128;
                after += rest(d, level);
                b += d.busy_ns;
                r += d.frames;
                now += d.now;
                displaced.push(k);
            }
            if r < p.frames {
                exhausted[kind] = true;
                continue;
            }
            if now > p.now {
                continue;
            }
            if !displaced.is_empty() {
                g -= after.clamp(0, back);
            }
            if g <= 0 {
                continue;
            }
            for &k in &displaced {
                taken[k] = true;
                moves.push((false, k));
            }
            moves.push((true, i));
            next[kind] = j;
            (free, busy, gain) = (r - p.frames, busy + b, gain + g as u64);
        }
        for &(up, k) in &moves {
            if !up {
                taken[k] = false;
            }
        }
        if gain > best.gain {
            best = Plan { level, gain, moves };
        }
    }
    best
}

/// What a move costs, estimated from the machine's configured costs as the mechanism
/// layer charges a migration on a kernel thread.
///
/// The thread's time (`busy_ns`): the flush of the page's lines
/// (`clflush_cycles_per_line` each); the copy, its line reads kept
/// `cpu_copy_lines_in_flight` at a time at the source tier's row-miss latency, or at
/// the slower tier's bandwidth if that is slower; one shootdown (`shootdown_cycles`);
/// and the software work (`migrate_software_ns`). It bounds how many moves a
/// decision queues.
///
/// The price a move must repay (`priced`, in the weights' unit, quarter nanoseconds):
/// the part of that work that takes from the cores, which run beside the thread — the
/// copy's time on the channels at the slower tier's bandwidth, the flush of the page
/// from the caches and the shootdown — set against the memory latency the page's
/// accesses save (our choice; no paper prices moves for a bound). The software work
/// and the copy's waits on latency are the thread's alone. The flush also takes the
/// page's lines from the caches: those the cores would have found there they read
/// again from memory (`reread`, counted per page by the oracle from the first pass's
/// cache hits); for a hot page that is most of its lines, the dearest part of a move.
/// docs/policies/oracle.md measures what the parts weigh.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveCosts {
    /// The thread's time in ns, by direction (promotion, demotion) and page size
    /// (base, huge).
    pub busy_ns: [[u64; 2]; 2],
    /// The cores' share, in the weights' unit; the same both ways.
    pub priced: [[u64; 2]; 2],
    /// A line the flush took from the caches and the cores read again, from the
    /// tier the page went to, by direction: the tier's read latency, in the weights'
    /// unit (until the run has measured it).
    pub reread: [u64; 2],
}

impl MoveCosts {
    pub fn new(info: &MachineInfo) -> MoveCosts {
        let gbps = info.tiers[..2].iter().map(|t| t.gbps).fold(f64::INFINITY, f64::min).max(1e-3);
        let in_flight = info.cpu_copy_lines_in_flight.max(1) as f64;
        let reread = |t: TierId| (info.tier(t).read_ns * 4.0).round() as u64;
        let mut costs = MoveCosts { busy_ns: [[0; 2]; 2], priced: [[0; 2]; 2], reread: [reread(TierId::FAST), reread(TierId::SLOW)] };
        for (d, from) in [TierId::SLOW, TierId::FAST].into_iter().enumerate() {
            for (h, bytes) in [4096, info.huge_page_bytes].into_iter().enumerate() {
                let lines = (bytes / 64) as f64;
                let channels = bytes as f64 / gbps;
                let flush_and_shootdown = (lines * info.clflush_cycles_per_line as f64 + info.shootdown_cycles as f64) / info.freq_ghz;
                let copy = channels.max(lines * info.tier(from).read_ns / in_flight);
                costs.busy_ns[d][h] = (copy + flush_and_shootdown + info.migrate_software_ns).round() as u64;
                costs.priced[d][h] = ((channels + flush_and_shootdown) * 4.0).round() as u64;
            }
        }
        costs
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

    /// Every unit's weight over each horizon at core 0's references `done`.
    fn weighed(f: &Future, done: u64) -> Vec<Vec<u64>> {
        let mut h = Horizons::new(f);
        h.advance(f, &[done]);
        (0..h.levels()).map(|level| (0..f.units() as u32).map(|u| h.weight(u, level)).collect()).collect()
    }

    #[test]
    fn horizons_weigh_the_coming_chunks_from_where_each_core_is() {
        let f = stream();
        let (a, b, c, d) = (0, 1, 2, 3);
        assert_eq!([A, B, C, D].map(|x| f.unit(0, x).unwrap()), [a, b, c, d]);
        assert_eq!(f.entries(), 2 + 2 + 3);
        // Three chunks: horizons of 1, 2 and 4 chunks, the last past the end.
        // From the start: chunk 0 = A 3, B 4; chunks 0–1 add C 3, B 1; all add D 8,
        // C 1, A 1.
        assert_eq!(weighed(&f, 0), vec![vec![3, 4, 0, 0], vec![3, 5, 3, 0], vec![4, 5, 4, 8]]);
        // Two references into chunk 1, half of it is run: C 3 − 3·2/4 = 2 (integer
        // shares), B 1 − 1·2/4 = 1 − 0. Chunks 1–2 and beyond: A 1, B 1, C 3 + 1 − 1,
        // D 8.
        assert_eq!(weighed(&f, 6), vec![vec![0, 1, 2, 0], vec![1, 1, 3, 8], vec![1, 1, 3, 8]]);
        // At the end nothing is left.
        assert_eq!(weighed(&f, 12), vec![vec![0; 4]; 3]);
        // The same horizons moved forward step by step end where a fresh one starts.
        let mut h = Horizons::new(&f);
        for done in [0, 3, 5, 6] {
            h.advance(&f, &[done]);
        }
        assert_eq!((0..4).map(|u| h.weight(u, 1)).collect::<Vec<_>>(), vec![1, 1, 3, 8]);
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
    fn behind_the_caches_misses_weigh_and_hits_are_counted() {
        // Through the default hierarchy, reads weighing 3: A's first line misses
        // (3) and is read again (a hit), A's second line misses (3), then both hit:
        // two lines served by the caches; B's line misses once, then hits twice: one
        // line. Chunks of 8 references.
        let mut f = Future::new(12, Weights { read: 3, write: 5 }, 8, true).filtered(&crate::machine::cache::default_hierarchy(), 1);
        f.foresee(0, &[r(A), r(A), r(A + 64), r(A), r(A + 64), r(B), r(B), r(B)]);
        f.finish();
        assert!(f.is_filtered());
        assert_eq!(f.chunk(0, 0), &[Entry { unit: 0, weight: 6, hits: 2 }, Entry { unit: 1, weight: 3, hits: 1 }][..]);
        // A unit the caches alone served still has an entry, of no weight; lines
        // count again in each chunk.
        let mut g = Future::new(12, Weights { read: 3, write: 5 }, 2, true).filtered(&crate::machine::cache::default_hierarchy(), 1);
        g.foresee(0, &[r(A), r(B), r(A), r(A)]);
        g.finish();
        assert_eq!(g.chunk(0, 1), &[Entry { unit: 0, weight: 0, hits: 1 }][..]);
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
        let pairs = |core, k| f.chunk(core, k).iter().map(|e| (e.unit, e.weight)).collect::<Vec<_>>();
        assert_eq!((pairs(0, 0), pairs(0, 1), pairs(0, 2)), (vec![(0, 2)], vec![(1, 1), (0, 1)], vec![]));
        assert_eq!((pairs(1, 0), pairs(1, 1)), (vec![(2, 2)], vec![(2, 1)]));
        // Core 0 one reference into its chunk 0 (half of it run: unit 0 2 − 1), core 1
        // at the start of its chunk 1. One chunk each: units 0, 1, 2 weigh 1, 0, 1; two
        // chunks each: 2 + 1 − 1, 1, 1.
        let mut h = Horizons::new(&f);
        h.advance(&f, &[1, 2]);
        assert_eq!((0..2).map(|level| (0..3).map(|u| h.weight(u, level)).collect()).collect::<Vec<Vec<_>>>(), vec![vec![1, 0, 1], vec![2, 1, 1]]);
        // Whole-run weights 3, 1, 3: one huge unit of fast tier holds unit 0 (the tie
        // goes to the lower unit); one frame more rounds up to a second unit, unit 2.
        assert_eq!(OracleStatic::choose(&f, 512), vec![0]);
        assert_eq!(OracleStatic::choose(&f, 513), vec![0, 2]);
    }

    fn page(addr: u64, tier: TierId) -> PageInfo {
        PageInfo { tenant: 0, addr, page: addr >> 12, bytes: 4096, huge: false, pfn: 0, tier, accessed: false, dirty: false, poisoned: false }
    }

    /// A base page at `addr` as a candidate, unit and weights row `row`, moves costing 5
    /// each way and 100 ns of the thread.
    fn cand(addr: u64, tier: TierId, row: usize) -> Candidate {
        Candidate { page: Some(page(addr, tier)), unit: row as u32, frames: 1, row, now: 0, cost: 5, back: 5, busy_ns: 100 }
    }

    #[test]
    fn a_swap_pays_for_its_moves_over_its_best_horizon() {
        // Two horizons: the coming chunk, and the rest of the run.
        //   p1 10, 40; p2 2, 3 (never repays its own move of 5);
        //   d1 0, 1; d2 1, 30.
        let weights = [10, 40, 2, 3, 0, 1, 1, 30];
        let (p1, p2, d1, d2) = (cand(A, TierId::SLOW, 0), cand(B, TierId::SLOW, 1), cand(C, TierId::FAST, 2), cand(D, TierId::FAST, 3));
        // Coming chunk: p1 displaces the coldest, d1: 10 − 5 − (0 + 5) = 0, nothing.
        // Whole run: 40 − 5 − (1 + 5) = 29 (no rest after it to charge).
        let got = plan(&[p2, p1], &[d2, d1], &weights, 2, 0, u64::MAX);
        assert_eq!(got, Plan { level: 1, gain: 29, moves: vec![(false, 1), (true, 1)] });
        // A free frame: p1 takes it (40 − 5), and nothing is displaced.
        let got = plan(&[p2, p1], &[d2, d1], &weights, 2, 1, u64::MAX);
        assert_eq!(got, Plan { level: 1, gain: 35, moves: vec![(true, 1)] });
    }

    #[test]
    fn a_swap_that_leaves_a_worse_page_behind_pays_its_way_back() {
        // p3 weighs 20, all of it in the coming chunk; d3 nothing now, 30 after.
        let weights = [20, 20, 0, 30];
        let (mut p3, mut d3) = (cand(A, TierId::SLOW, 0), cand(C, TierId::FAST, 1));
        // Coming chunk: 20 − 5 − (0 + 5) = 10, less the round trip: after it d3 is
        // worth 30 − 0 more than p3, more than moving both back (5 + 5), so the
        // return is charged: 10 − 10 = 0. Whole run: 20 − 5 − (30 + 5) < 0.
        assert_eq!(plan(&[p3], &[d3], &weights, 2, 0, u64::MAX), Plan::default());
        // Cheaper returns (2 + 2): 10 − 4 = 6 over the coming chunk.
        (p3.back, d3.back) = (2, 2);
        assert_eq!(plan(&[p3], &[d3], &weights, 2, 0, u64::MAX), Plan { level: 0, gain: 6, moves: vec![(false, 0), (true, 0)] });
    }

    #[test]
    fn a_swap_waits_while_the_page_it_displaces_weighs_more_in_the_coming_window() {
        // Over the whole run p (50) pays for displacing d (10): 50 − 5 − (10 + 5) = 30.
        // But in the coming window d weighs 8 and p 5: the swap waits.
        let weights = [5, 50, 8, 10];
        let (mut p, mut d) = (cand(A, TierId::SLOW, 0), cand(C, TierId::FAST, 1));
        (p.now, d.now) = (5, 8);
        assert_eq!(plan(&[p], &[d], &weights, 2, 0, u64::MAX), Plan::default());
        p.now = 8;
        assert_eq!(plan(&[p], &[d], &weights, 2, 0, u64::MAX), Plan { level: 1, gain: 30, moves: vec![(false, 0), (true, 0)] });
    }

    #[test]
    fn pages_are_ranked_per_frame_and_a_huge_page_displaces_only_huge_ones() {
        // One horizon. Candidates to promote: a huge page H (512 frames, weight
        // 10 000) and a base page b (3). In the fast tier: a base page c (weight 1 for
        // its one frame) and a huge page G (100: under 0.2 per frame, colder than c).
        let huge = |addr, tier, row| Candidate { page: Some(PageInfo { bytes: 2 << 20, huge: true, ..page(addr, tier) }), frames: 512, cost: 0, back: 0, ..cand(A, tier, row) };
        let weights = [10_000, 3, 1, 100];
        let (h, g) = (huge(0x20_0000, TierId::SLOW, 0), huge(0x40_0000, TierId::FAST, 3));
        let (b, c) = (Candidate { cost: 0, back: 0, ..cand(B, TierId::SLOW, 1) }, Candidate { cost: 0, back: 0, ..cand(C, TierId::FAST, 2) });
        // H displaces G (10 000 − 100), not c, though c weighs less; b then displaces
        // c (3 − 1).
        let got = plan(&[b, h], &[c, g], &weights, 1, 0, u64::MAX);
        assert_eq!(got, Plan { level: 0, gain: 9_902, moves: vec![(false, 1), (true, 1), (false, 0), (true, 0)] });
    }

    #[test]
    fn untouched_units_cost_nothing_and_the_thread_time_is_capped() {
        // An untouched unit (4 now, 9 in all) into a free frame: born fast, gain 9
        // over the whole run.
        let u = Candidate { page: None, unit: 7, frames: 1, row: 0, now: 4, cost: 0, back: 5, busy_ns: 0 };
        assert_eq!(plan(&[u], &[], &[4, 9], 2, 1, u64::MAX), Plan { level: 1, gain: 9, moves: vec![(true, 0)] });
        // Two swaps over the whole run, 150 ns of the thread each (p 100 + d 50):
        //   p4 50 displaces d5 (0): 50 − 5 − 5 = 40; p1 40 displaces d1 (1): 29.
        let weights = [10, 40, 10, 50, 0, 1, 0, 0];
        let (p1, p4, d1) = (cand(A, TierId::SLOW, 0), cand(B, TierId::SLOW, 1), cand(C, TierId::FAST, 2));
        let d5 = Candidate { busy_ns: 50, ..cand(D, TierId::FAST, 3) };
        let both = Plan { level: 1, gain: 69, moves: vec![(false, 1), (true, 1), (false, 0), (true, 0)] };
        assert_eq!(plan(&[p1, p4], &[d1, d5], &weights, 2, 0, 151), both);
        // After 150 ns the second waits for the next decision.
        assert_eq!(plan(&[p1, p4], &[d1, d5], &weights, 2, 0, 150), Plan { level: 1, gain: 40, moves: vec![(false, 1), (true, 1)] });
    }

    #[test]
    fn only_the_best_candidates_are_looked_at() {
        // One horizon. 64 pages to promote weigh 20 each but nothing in the coming
        // window, where the one fast page d weighs 1: each would displace d (20 − 5 −
        // (0 + 5) = 10) but waits, d weighing more now. A 65th weighs 19 and 1 now: it
        // pays 19 − 5 − (0 + 5) = 9, if it is looked at.
        let mut promote: Vec<Candidate> = (0..64).map(|i| cand(A + 4096 * i as u64, TierId::SLOW, i)).collect();
        promote.push(Candidate { now: 1, ..cand(B, TierId::SLOW, 64) });
        let d = Candidate { now: 1, ..cand(C, TierId::FAST, 65) };
        let mut weights = vec![20; 64];
        weights.extend([19, 0]);
        // 100 ns of the thread, 100 ns a move: one move, max(4 · 1, 64) = 64 looked
        // at, the 64 heaviest; none is made.
        assert_eq!(plan(&promote, &[d], &weights, 1, 0, 100), Plan::default());
        // 1700 ns: 4 · 17 = 68 looked at, all 65; the last displaces d.
        assert_eq!(plan(&promote, &[d], &weights, 1, 0, 1700), Plan { level: 0, gain: 9, moves: vec![(false, 0), (true, 64)] });
    }

    #[test]
    fn a_move_costs_its_time_on_the_kernel_thread() {
        // Table IV at 3.2 GHz, 10.7 GB/s, clflush 8 cycles a line, 300-cycle
        // shootdowns, 2 µs of software, 16 lines in flight. A 4 KiB promotion: the
        // copy at the bandwidth, 4096 / 10.7 = 382.8 ns (the latency would allow
        // 64 · 19.5 / 16 = 78), the flush and shootdown (64 · 8 + 300) / 3.2 = 253.75,
        // 2000 of software: 2636.55 ns of the thread; the cores' share without the
        // software, 636.55 ns, 2546 quarters. A huge page: 195 995.5 +
        // (32768 · 8 + 300) / 3.2 = 82 013.75, + 2000 = 280 009.26 ns; 278 009.26 ns
        // priced.
        let mut info = crate::policy::dram_cache::table_iv_info(1, 1, 1);
        let costs = MoveCosts::new(&info);
        assert_eq!(costs.busy_ns, [[2637, 280009], [2637, 280009]]);
        assert_eq!(costs.priced, [[2546, 1112037], [2546, 1112037]]);
        // A line read again: from DRAM 13.5 ns after a promotion, from PCM 19.5 ns
        // after a demotion.
        assert_eq!(costs.reread, [54, 78]);
        // At 100 GB/s the line reads' latency bounds the thread's copy: from PCM 78 ns,
        // from DRAM 64 · 13.5 / 16 = 54: 2331.75 and 2307.75 ns. The channels carry it
        // in 40.96 ns: 294.71 ns priced, 1179 quarters.
        info.tiers.iter_mut().for_each(|t| t.gbps = 100.0);
        let costs = MoveCosts::new(&info);
        assert_eq!((costs.busy_ns[0][0], costs.busy_ns[1][0], costs.priced[0][0]), (2332, 2308, 1179));
    }
}
