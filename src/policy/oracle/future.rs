//! The record of the future: the first pass's weights per unit and chunk
//! ([`Future`]), the weight of every unit over the coming 1, 2, 4, … chunks as the run
//! goes on ([`Horizons`]), and what the caches will hold ([`Reuse`]).

use crate::machine::cache::{CacheConfig, Caches, Evicted};
use crate::machine::{MachineInfo, TierId};
use crate::trace::footprint::IntMap;
use crate::trace::Access;

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
pub(super) struct CoreFuture {
    /// References seen.
    pub(super) refs: u64,
    /// Closed chunks: an entry for each unit referenced in it, in first-reference
    /// order. Chunk `k` holds references [k·chunk_refs, (k+1)·chunk_refs).
    pub(super) chunks: Vec<Box<[Entry]>>,
    /// The open chunk while another core's references are being read.
    pub(super) parked: Vec<Entry>,
    /// The lines the caches served in the open chunk: a bit per line of the units
    /// laid out one after another, and the lines set, to clear them.
    pub(super) lines_hit: Vec<u64>,
    pub(super) hit_list: Vec<u64>,
}

/// What the first pass learnt: every unit (page as the run maps it) the stream
/// touches, its weight over the whole run, and per core the weights in chunks.
pub struct Future {
    /// log2 of a unit's bytes.
    pub(super) shift: u32,
    pub(super) weights: Weights,
    pub(super) chunk_refs: u64,
    /// Keep the chunks (the dynamic oracle), or only whole-run weights (the static).
    pub(super) chunked: bool,
    /// Unit by key ([`Future::key`]), and key by unit.
    pub(super) ids: IntMap<u64, u32>,
    pub(super) keys: Vec<u64>,
    /// Whole-run weight per unit.
    pub(super) total: Vec<u64>,
    pub(super) cores: Vec<CoreFuture>,
    /// The open chunk: weight and cache hits per unit, and the units it holds, of
    /// core `open`.
    pub(super) scratch: Vec<(u32, u32)>,
    pub(super) touched: Vec<u32>,
    pub(super) open: Option<usize>,
    /// The last key looked up and its unit (consecutive references often share a page).
    pub(super) last: Option<(u64, u32)>,
    /// A functional copy of the machine's caches ([`Future::filtered`]), and the
    /// lines the current reference wrote back to memory.
    pub(super) caches: Option<Caches>,
    pub(super) writebacks: Evicted,
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
    pub(super) fn unit_of_key(&mut self, key: u64) -> u32 {
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
    pub(super) fn add(&mut self, u: u32, w: u32) {
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
    pub(super) fn hit(&mut self, u: u32) {
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
    pub(super) fn key(&self, tenant: u16, addr: u64) -> u64 {
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
    pub(super) fn switch_to(&mut self, core: usize) {
        self.park();
        for e in std::mem::take(&mut self.cores[core].parked) {
            self.scratch[e.unit as usize] = (e.weight, e.hits);
            self.touched.push(e.unit);
        }
        self.open = Some(core);
    }

    pub(super) fn park(&mut self) {
        if let Some(c) = self.open.take() {
            let list = self.drain();
            self.cores[c].parked = list;
        }
    }

    pub(super) fn drain(&mut self) -> Vec<Entry> {
        let scratch = &mut self.scratch;
        self.touched
            .drain(..)
            .map(|unit| {
                let (weight, hits) = std::mem::take(&mut scratch[unit as usize]);
                Entry { unit, weight, hits }
            })
            .collect()
    }

    pub(super) fn close_chunk(&mut self, core: usize) {
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
    pub(super) fn chunk_len(&self, core: usize, k: usize) -> u64 {
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
    pub(super) levels: usize,
    /// A row per unit: its weight in each core's chunks before its boundary of each
    /// level, then in those before its current chunk, then the part of the current
    /// chunks already run (one row is read at once).
    pub(super) rows: Vec<u64>,
    /// Chunks of each core summed in each level's column, and in the column before.
    pub(super) added: Vec<Vec<usize>>,
    pub(super) added_before: Vec<usize>,
    /// The units with some weight in the last column (to clear it).
    pub(super) passed_units: Vec<u32>,
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
    pub(super) span: usize,
    pub(super) before: Vec<u32>,
    pub(super) after: Vec<u32>,
    /// Per core, chunks [lo, mid) are summed in `before`, [mid, hi) in `after`.
    pub(super) at: Vec<(usize, usize, usize)>,
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
pub(super) fn add_chunks(future: &Future, core: usize, rows: &mut [u64], width: usize, column: usize, added: &mut usize, to: usize) {
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
