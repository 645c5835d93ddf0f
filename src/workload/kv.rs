//! `kv`: an in-memory key-value store laid out as Redis lays out its main
//! dictionary, driven by YCSB core workloads. HMM-V runs Redis under YCSB with 4 KB
//! values and 80 % of the operations on 20 % of the keys (§5.3, §5.7, §5.9);
//! Thermostat runs Redis with 90 % of the traffic on 0.01 % of the keys and value
//! sizes "according to the distribution reported in [12]" (§4.3). Our copy of the
//! paper lost its reference list; [12] sits just before Azimi et al. [13] in the
//! alphabetical list and is cited for key-value usage patterns, which points to
//! Atikoglu et al., "Workload Analysis of a Large-Scale Key-Value Store"
//! (SIGMETRICS 2012), whose ETC value sizes are modelled here.
//!
//! # Layout (Redis's `dict` over jemalloc, after YCSB's load phase)
//! Each size class of jemalloc keeps its objects in slabs of their own, filled in
//! allocation order, so each class is one region here, in the order Redis first
//! allocates it while loading:
//! - key/entry pairs, 64 bytes per key: the key's `sds` string (YCSB keys are
//!   "user" and up to 19 digits: 27 bytes with header and terminator) and then its
//!   24-byte `dictEntry` {key, value, next}, both in jemalloc's 32-byte class and
//!   allocated one after the other;
//! - value objects, 16 bytes per key (`robj`: type, LRU clock, refcount, pointer);
//! - one slab region per value size class (jemalloc's classes, four per doubling),
//!   each value an `sds` string: a 3-, 5- or 9-byte header, the bytes, a terminator;
//! - the bucket array, `2^k ≥ keys` pointers (Redis keeps the load factor at most 1
//!   and the table a power of two), allocated last by the final rehash.
//!
//! Key `k` hashes to a bucket; a bucket's entries form a chain with the newest first,
//! as `dictAdd` links them. Keys are loaded in an order given by a keyed permutation,
//! which decides where each value lands in its class's slab.
//!
//! # Operations
//! Every operation picks a key by popularity rank — `zipfian` (rank `r` has weight
//! `1/r^θ`, YCSB's `zipfian` with θ = 0.99) or `hotspot` (a share `hot_ops` of the
//! operations uniformly on the `hot_keys` share of the keys, the rest uniformly on
//! the others, YCSB's `hotspot`) — and maps ranks to keys through a keyed permutation,
//! as YCSB's scrambled zipfian does, so hot keys spread over the whole store (HMM-V
//! §5.8: "the hot keys of redis distribute randomly in entire address space").
//! YCSB workload A reads 50 % and updates 50 %, B reads 95 %, C only reads.
//!
//! A lookup loads the bucket, then for each chain entry up to the key its `dictEntry`
//! and its key string (compared with the request's), the value object, and stores
//! the object's LRU clock (`lookupKey` does, for reads and writes); chain loads are
//! dependent. A read then loads the value's bytes (copying them into the reply), an
//! update stores them (overwriting the value in place, as a same-size `SET` does
//! when jemalloc hands back the slot just freed). Request and reply buffers, always
//! cache-hot, are not modelled.
//!
//! # Value sizes
//! `fixed`: every value is `value_bytes` long (a 4096-byte value takes a 5 KiB
//! jemalloc slot, as in Redis). `etc`: lengths follow the generalized Pareto
//! distribution fitted to Facebook's ETC pool (location 0, scale 214.476, shape
//! 0.348238; mean 329 bytes), capped at 1 MiB. To keep the footprint a function of
//! the configuration, class counts are exact — `⌊n·F(class end)⌋` keys up to each
//! class — and a key's length is uniform within its class.
//!
//! # Instructions
//! `op_instrs` before the bucket load (request parsing, dispatch, hashing the key;
//! the kernel's network path is not counted), 4 before each chain entry (compare,
//! branch, next), 3 before each key compare, 2 before the object load, 3 before
//! the LRU store, 1 before each 32-byte piece of the value copy (2 for the first).
//!
//! # Host memory
//! A `u32` chain link per key and a `u32` chain head per bucket: 8 to 12 bytes per
//! key, against 80 bytes plus the value simulated (0.2 % of the simulated bytes with
//! 4 KiB values, 2–3 % with ETC values).

use super::permute::Permutation;
use super::program::{check_host_memory, hash, largest_fitting, Heap, Program, Refs, Run, VECTOR_BYTES};
use super::zipf::RankSampler;
use super::rates::{AccessModel, Order, PageLoad, Phased, Stretch, BURST_GAP};
use super::{layout_rng, stream_rng, Emitter, WorkloadConfig, PAGE_BYTES};
use crate::rng::Rng;
use crate::trace::{Source, WRITE};
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// The YCSB core workloads the store runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ycsb {
    /// Update heavy: 50 % reads, 50 % updates.
    A,
    /// Read mostly: 95 % reads, 5 % updates.
    B,
    /// Read only.
    C,
}

impl Ycsb {
    fn read_share(self) -> f64 {
        match self {
            Ycsb::A => 0.5,
            Ycsb::B => 0.95,
            Ycsb::C => 1.0,
        }
    }
}

/// How operations pick keys.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Popularity {
    /// Key of popularity rank `r` with weight `1/r^theta`.
    Zipfian,
    /// `hot_ops` of the operations on `hot_keys` of the keys.
    Hotspot,
}

/// How long the values are.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueSizes {
    /// Every value `value_bytes` long.
    Fixed,
    /// Facebook ETC's generalized Pareto distribution (mean 329 bytes).
    Etc,
}

/// The `[workload.kv]` table.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KvConfig {
    /// YCSB core workload: "a" (50 % reads, 50 % updates), "b" (95 % reads) or "c"
    /// (reads only).
    pub ycsb: Ycsb,
    /// Key popularity: "zipfian" or "hotspot".
    pub popularity: Popularity,
    /// Zipfian constant θ (YCSB's default 0.99).
    pub theta: f64,
    /// With hotspot popularity, the share of operations on the hot keys (HMM-V: 0.8;
    /// Thermostat: 0.9).
    pub hot_ops: f64,
    /// With hotspot popularity, the share of keys that are hot, in (0, 1] (HMM-V: 0.2;
    /// Thermostat: 0.0001).
    pub hot_keys: f64,
    /// Number of keys, below 2^32 - 1; 0 loads as many as fit `workload.footprint`.
    pub keys: u64,
    /// Value lengths: "fixed" (`value_bytes`) or "etc" (Facebook's ETC distribution).
    pub value_sizes: ValueSizes,
    /// Length of every value with fixed sizes, 1 byte to 1 MiB (HMM-V: 4 KB).
    pub value_bytes: u64,
    /// Non-memory instructions per operation before its first access.
    pub op_instrs: u32,
}

impl Default for KvConfig {
    fn default() -> KvConfig {
        KvConfig {
            ycsb: Ycsb::A,
            popularity: Popularity::Zipfian,
            theta: 0.99,
            hot_ops: 0.8,
            hot_keys: 0.2,
            keys: 0,
            value_sizes: ValueSizes::Fixed,
            value_bytes: 4096,
            op_instrs: 1000,
        }
    }
}

/// Longest value: memcached's default item size limit.
const MAX_VALUE: u64 = 1 << 20;
/// Most keys: chain links are `u32`, with one value reserved for "none".
const MAX_KEYS: u64 = u32::MAX as u64 - 1;

impl KvConfig {
    /// Checks every field; errors name it.
    pub(super) fn validate(&self) -> Result<()> {
        if !(self.theta > 0.0 && self.theta.is_finite()) {
            bail!("workload.kv.theta: must be a finite number > 0, got {}", self.theta);
        }
        if !(0.0..=1.0).contains(&self.hot_ops) {
            bail!("workload.kv.hot_ops: must be in [0, 1], got {}", self.hot_ops);
        }
        if !(self.hot_keys > 0.0 && self.hot_keys <= 1.0) {
            bail!("workload.kv.hot_keys: must be in (0, 1], got {}", self.hot_keys);
        }
        if self.keys > MAX_KEYS {
            bail!("workload.kv.keys: must be below 2^32 - 1, got {}", self.keys);
        }
        if !(1..=MAX_VALUE).contains(&self.value_bytes) {
            bail!("workload.kv.value_bytes: must be from 1 to {MAX_VALUE}, got {}", self.value_bytes);
        }
        Ok(())
    }
}

/// Bytes per key of the key/entry pair region.
const PAIR_BYTES: u64 = 64;
/// Offset of the `dictEntry` in a pair, and its size.
const ENTRY_OFFSET: u64 = 32;
const ENTRY_BYTES: u64 = 24;
/// Bytes of a YCSB key's `sds` string: 3-byte header, "user" and 19 digits, terminator.
const KEY_BYTES: u64 = 27;
/// Bytes of a `robj`, and of the part holding type, encoding and LRU clock.
const OBJECT_BYTES: u64 = 16;
const LRU_BYTES: u64 = 4;
/// Bytes of a bucket pointer.
const BUCKET_BYTES: u64 = 8;
/// Redis's smallest table (`DICT_HT_INITIAL_SIZE`).
const MIN_BUCKETS: u64 = 4;
/// Generalized Pareto fit of ETC value sizes (Atikoglu et al., SIGMETRICS 2012).
const ETC_SCALE: f64 = 214.476;
const ETC_SHAPE: f64 = 0.348238;

const CHAIN_INSTRS: u32 = 4;
const COMPARE_INSTRS: u32 = 3;
const OBJECT_INSTRS: u32 = 2;
const LRU_INSTRS: u32 = 3;
const COPY_INSTRS: u32 = 1;
const FIRST_COPY_INSTRS: u32 = 2;

/// Bytes of the `sds` header of a string of `len` bytes (sdshdr8, 16 or 32).
fn sds_header(len: u64) -> u64 {
    match len {
        0..256 => 3,
        256..65536 => 5,
        _ => 9,
    }
}

/// jemalloc's size classes up to one holding the longest value: multiples of 16
/// up to 128, then four classes per doubling.
fn size_classes() -> Vec<u64> {
    let mut classes: Vec<u64> = (1..=8).map(|k| 16 * k).collect();
    let mut group = 128;
    while *classes.last().expect("classes") < MAX_VALUE + sds_header(MAX_VALUE) + 1 {
        classes.extend((1..=4).map(|k| group + k * group / 4));
        group *= 2;
    }
    classes
}

/// A value size class: the slot size and the lengths it holds.
#[derive(Clone, Copy, Debug)]
struct Class {
    /// Bytes of a slot.
    slot: u64,
    /// The class holds lengths in `(shortest_excluded, longest]`.
    shortest_excluded: u64,
    longest: u64,
    /// Share of keys with a length up to `longest`.
    cumulative: f64,
}

/// The value classes a configuration uses, in increasing size.
fn value_classes(cfg: &KvConfig) -> Vec<Class> {
    let mut classes = Vec::new();
    let mut shortest_excluded = 0;
    for slot in size_classes() {
        // The longest length whose string (header, bytes, terminator) fits the slot.
        let mut longest = slot.saturating_sub(4);
        while longest > 0 && longest + sds_header(longest) + 1 > slot {
            longest -= 1;
        }
        let longest = longest.min(MAX_VALUE);
        if longest <= shortest_excluded {
            continue;
        }
        let cumulative = match cfg.value_sizes {
            ValueSizes::Fixed => (longest >= cfg.value_bytes) as u8 as f64,
            ValueSizes::Etc if longest == MAX_VALUE => 1.0,
            ValueSizes::Etc => 1.0 - (1.0 + ETC_SHAPE * longest as f64 / ETC_SCALE).powf(-1.0 / ETC_SHAPE),
        };
        let below = classes.last().map_or(0.0, |c: &Class| c.cumulative);
        if cumulative > below {
            classes.push(Class { slot, shortest_excluded, longest, cumulative });
        }
        shortest_excluded = longest;
        if longest == MAX_VALUE {
            break;
        }
    }
    // Fixed lengths: one class, holding exactly that length.
    if cfg.value_sizes == ValueSizes::Fixed {
        classes[0].shortest_excluded = cfg.value_bytes - 1;
        classes[0].longest = cfg.value_bytes;
    }
    classes
}

/// Where the store's regions lie for a number of keys.
#[derive(Clone, Debug)]
struct Layout {
    keys: u64,
    pairs: u64,
    objects: u64,
    buckets: u64,
    bucket_count: u64,
    classes: Vec<Class>,
    /// Keys in the classes before each class and all keys at the end: `classes.len() + 1` entries.
    first_key: Vec<u64>,
    /// First slot of each class's slab.
    slabs: Vec<u64>,
    footprint: u64,
}

impl Layout {
    fn new(base: u64, keys: u64, classes: &[Class]) -> Layout {
        let mut first_key = vec![0];
        for c in classes {
            let upto = if c.cumulative >= 1.0 { keys } else { (keys as f64 * c.cumulative) as u64 };
            first_key.push(upto.max(*first_key.last().expect("first entry")));
        }
        let mut heap = Heap::new(base);
        let pairs = heap.alloc(keys * PAIR_BYTES);
        let objects = heap.alloc(keys * OBJECT_BYTES);
        let slabs = classes.iter().enumerate().map(|(i, c)| heap.alloc((first_key[i + 1] - first_key[i]) * c.slot)).collect();
        let bucket_count = keys.next_power_of_two().max(MIN_BUCKETS);
        let buckets = heap.alloc(bucket_count * BUCKET_BYTES);
        Layout { keys, pairs, objects, buckets, bucket_count, classes: classes.to_vec(), first_key, slabs, footprint: heap.footprint() }
    }

    /// The class of the value at load position `position`.
    #[inline]
    fn class_of(&self, position: u64) -> usize {
        self.first_key[1..].partition_point(|&end| end <= position)
    }
}

/// The layout of a run of `cfg`: `kv.keys` keys, or as many as fit the footprint.
fn layout(cfg: &WorkloadConfig) -> Result<Layout> {
    let classes = value_classes(&cfg.kv);
    let base = cfg.base_vaddr;
    if cfg.kv.keys > 0 {
        return Ok(Layout::new(base, cfg.kv.keys, &classes));
    }
    let target = cfg.footprint.bytes();
    match largest_fitting(1, MAX_KEYS, |n| Layout::new(base, n, &classes).footprint <= target) {
        Some(keys) => Ok(Layout::new(base, keys, &classes)),
        None => bail!(
            "workload.footprint: kv needs at least {} bytes for one key, got {}",
            Layout::new(base, 1, &classes).footprint,
            cfg.footprint
        ),
    }
}

/// Bytes of the store of a run of `cfg`; `cfg.kv` must be valid.
pub(super) fn footprint(cfg: &WorkloadConfig) -> Result<u64> {
    Ok(layout(cfg)?.footprint)
}

/// Builds the generator for one core and tenant; `cfg` must be valid.
pub(super) fn build(cfg: &WorkloadConfig, core: u16, tenant: u16) -> Result<Box<dyn Source>> {
    let layout = layout(cfg)?;
    let chains = 4 * (layout.keys + layout.bucket_count);
    check_host_memory("workload.kv.keys", &format!("a store of {} keys", layout.keys), chains)?;
    let store = Kv::new(cfg, layout, layout_rng(cfg, tenant), stream_rng(cfg, core, tenant));
    Ok(Box::new(Run::new(store, Emitter::new(cfg, core, tenant, 8))))
}

/// How operations draw popularity ranks (0 = most popular).
#[derive(Clone, Debug)]
enum Ranks {
    Zipfian(RankSampler),
    /// The first `hot` ranks get a share `ops` of the operations.
    Hotspot { hot: u64, ops: f64 },
}

/// No next entry in a chain.
const END: u32 = u32::MAX;

/// The store and the YCSB client driving it.
struct Kv {
    layout: Layout,
    cfg: KvConfig,
    rng: Rng,
    ranks: Ranks,
    /// Maps a popularity rank to a key.
    popular: Permutation,
    /// Maps a key to its load position.
    load_order: Permutation,
    /// Keys the hash of a key number to a bucket, and a value length within its class.
    bucket_key: u64,
    length_key: u64,
    /// First key of each bucket's chain.
    head: Vec<u32>,
    /// Next key in the chain of each key.
    next: Vec<u32>,
}

impl Kv {
    fn new(cfg: &WorkloadConfig, layout: Layout, mut layout_rng: Rng, rng: Rng) -> Kv {
        let keys = layout.keys;
        let bucket_key = layout_rng.next_u64();
        let mut head = vec![END; layout.bucket_count as usize];
        let mut next = vec![END; keys as usize];
        // dictAdd links each new entry at the head of its bucket's chain.
        for k in 0..keys {
            let b = (hash(bucket_key, k) & (layout.bucket_count - 1)) as usize;
            next[k as usize] = head[b];
            head[b] = k as u32;
        }
        let ranks = match cfg.kv.popularity {
            Popularity::Zipfian => Ranks::Zipfian(RankSampler::new(keys, cfg.kv.theta)),
            Popularity::Hotspot => {
                let hot = ((cfg.kv.hot_keys * keys as f64).round() as u64).clamp(1, keys);
                Ranks::Hotspot { hot, ops: cfg.kv.hot_ops }
            }
        };
        Kv {
            popular: Permutation::new(keys, layout_rng.next_u64()),
            load_order: Permutation::new(keys, layout_rng.next_u64()),
            length_key: layout_rng.next_u64(),
            bucket_key,
            layout,
            cfg: cfg.kv.clone(),
            rng,
            ranks,
            head,
            next,
        }
    }

    /// The key of the next operation.
    fn pick_key(&mut self) -> u64 {
        let keys = self.layout.keys;
        let rank = match &self.ranks {
            Ranks::Zipfian(sampler) => sampler.sample(&mut self.rng) - 1,
            Ranks::Hotspot { hot, ops } => {
                if *hot == keys || self.rng.chance(*ops) {
                    self.rng.below(*hot)
                } else {
                    hot + self.rng.below(keys - hot)
                }
            }
        };
        self.popular.apply(rank)
    }

    /// The address and length of the bytes of `key`'s value.
    fn value(&self, key: u64) -> (u64, u64) {
        let l = &self.layout;
        let position = self.load_order.apply(key);
        let c = l.class_of(position);
        let class = &l.classes[c];
        let span = class.longest - class.shortest_excluded;
        let len = class.shortest_excluded + 1 + hash(self.length_key, key) % span;
        let slot = l.slabs[c] + (position - l.first_key[c]) * class.slot;
        (slot + sds_header(len), len)
    }
}

impl Program for Kv {
    /// Each operation draws its own key: operations are independent.
    fn independent_steps(&self) -> bool {
        true
    }

    /// One operation.
    fn step(&mut self, refs: &mut Refs) {
        let read = self.rng.chance(self.cfg.ycsb.read_share());
        let key = self.pick_key();
        let l = &self.layout;
        let bucket = hash(self.bucket_key, key) & (l.bucket_count - 1);
        refs.load(l.buckets + bucket * BUCKET_BYTES, BUCKET_BYTES, self.cfg.op_instrs);
        let mut entry = self.head[bucket as usize];
        loop {
            let pair = l.pairs + entry as u64 * PAIR_BYTES;
            refs.load_dependent(pair + ENTRY_OFFSET, ENTRY_BYTES, CHAIN_INSTRS);
            refs.load_dependent(pair, KEY_BYTES, COMPARE_INSTRS);
            if entry as u64 == key {
                break;
            }
            entry = self.next[entry as usize];
        }
        let object = l.objects + key * OBJECT_BYTES;
        refs.load_dependent(object, OBJECT_BYTES, OBJECT_INSTRS);
        refs.store(object, LRU_BYTES, LRU_INSTRS);
        let (start, len) = self.value(key);
        // The first piece waits for the object's pointer; the others follow it.
        let first = (start / VECTOR_BYTES + 1) * VECTOR_BYTES - start;
        let first = first.min(len);
        if read {
            refs.load_dependent(start, first, FIRST_COPY_INSTRS);
            refs.sweep(start + first, len - first, VECTOR_BYTES, COPY_INSTRS, 0);
        } else {
            refs.store(start, first, FIRST_COPY_INSTRS);
            refs.sweep(start + first, len - first, VECTOR_BYTES, COPY_INSTRS, WRITE);
        }
    }
}

/// The statement of `kv` (module `rates`): from the store's layout, chains and
/// popularity, each key's share of the operations and the references its operation
/// makes — the bucket, each chain entry and key up to it, the object (a load and the
/// LRU store), the value's pieces (loads for a read, stores for an update) — summed
/// per page. Each page an operation touches is one burst of it; a page touched by
/// another operation within the burst gap continues the burst.
pub(super) fn model(cfg: &WorkloadConfig, tenant: u16, cores: u64) -> Result<Box<dyn AccessModel>> {
    let store = Kv::new(cfg, layout(cfg)?, layout_rng(cfg, tenant), stream_rng(cfg, 0, tenant));
    let l = &store.layout;
    let keys = l.keys;
    // Each popularity rank's share of the operations, then each key's.
    let mut share = vec![0.0f64; keys as usize];
    match &store.ranks {
        Ranks::Zipfian(_) => {
            let h: f64 = (1..=keys).rev().map(|r| (r as f64).powf(-store.cfg.theta)).sum();
            for r in 0..keys {
                share[store.popular.apply(r) as usize] = ((r + 1) as f64).powf(-store.cfg.theta) / h;
            }
        }
        Ranks::Hotspot { hot, ops } => {
            for r in 0..keys {
                let s = if *hot == keys {
                    1.0 / keys as f64
                } else if r < *hot {
                    ops / *hot as f64
                } else {
                    (1.0 - ops) / (keys - hot) as f64
                };
                share[store.popular.apply(r) as usize] = s;
            }
        }
    }
    let read = store.cfg.ycsb.read_share();
    let first = cfg.base_vaddr / PAGE_BYTES;
    let pages = l.footprint.div_ceil(PAGE_BYTES) as usize;
    // Per page, per operation: loads, stores, operations touching it, of them updates
    // storing to it.
    let mut per_op = vec![[0.0f64; 4]; pages];
    let page = |addr: u64| (addr / PAGE_BYTES - first) as usize;
    let (mut refs, mut instrs, mut dependent) = (0.0, 0.0, 0.0);
    for b in 0..l.bucket_count {
        let mut chain = Vec::new();
        let mut e = store.head[b as usize];
        while e != END {
            chain.push(e as u64);
            e = store.next[e as usize];
        }
        for (depth, &key) in chain.iter().enumerate() {
            let q = share[key as usize];
            if q == 0.0 {
                continue;
            }
            let bucket = page(l.buckets + b * BUCKET_BYTES);
            per_op[bucket][0] += q;
            per_op[bucket][2] += q;
            for &entry in &chain[..=depth] {
                let p = page(l.pairs + entry * PAIR_BYTES);
                per_op[p][0] += 2.0 * q;
                per_op[p][2] += q;
            }
            let object = page(l.objects + key * OBJECT_BYTES);
            per_op[object][0] += q;
            per_op[object][1] += q;
            per_op[object][2] += q;
            per_op[object][3] += q;
            // The value's pieces: its first up to a 32-byte boundary, then aligned
            // 32-byte pieces, so a page holds as many as the aligned chunks its part of
            // the value overlaps (pieces never cross a page).
            let (start, len) = store.value(key);
            let end = start + len;
            let mut pieces = 0.0;
            let mut at = start;
            while at < end {
                let page_end = ((at / PAGE_BYTES) + 1) * PAGE_BYTES;
                let stop = end.min(page_end);
                let n = (stop.div_ceil(VECTOR_BYTES) - at / VECTOR_BYTES) as f64;
                let p = page(at);
                per_op[p][0] += q * read * n;
                per_op[p][1] += q * (1.0 - read) * n;
                per_op[p][2] += q;
                per_op[p][3] += q * (1.0 - read);
                pieces += n;
                at = stop;
            }
            let chained = (depth + 1) as f64;
            refs += q * (1.0 + 2.0 * chained + 2.0 + pieces);
            instrs += q * (store.cfg.op_instrs as f64 + chained * (CHAIN_INSTRS + COMPARE_INSTRS) as f64 + (OBJECT_INSTRS + LRU_INSTRS + FIRST_COPY_INSTRS) as f64 + (pieces - 1.0) * COPY_INSTRS as f64);
            dependent += q * (2.0 * chained + 1.0 + read);
        }
    }
    let per_core = cfg.refs;
    let ops = per_core as f64 / refs;
    let mut stretch = Stretch { refs: per_core, instrs: (instrs * ops) as u64, dependent: (dependent * ops) as u64, order: Order::Random, pages: Vec::new() };
    stretch.pages = per_op
        .iter()
        .enumerate()
        .filter(|(_, c)| c[0] + c[1] > 0.0)
        .map(|(i, c)| {
            // A touch starts a burst unless an operation touched the page within the
            // burst gap, about BURST_GAP / (references per operation) operations.
            let lone = (1.0 - c[2].min(1.0)).powf(BURST_GAP as f64 * ops / per_core as f64);
            PageLoad {
                vpn: first + i as u64,
                reads: (c[0] * ops) as f32,
                writes: (c[1] * ops) as f32,
                bursts: (c[2] * ops * lone) as f32,
                write_bursts: (c[3] * ops * lone) as f32,
            }
        })
        .collect();
    let what = format!("stated: {} keys, {:?} popularity, YCSB {:?}, {:.1} references per operation", keys, store.cfg.popularity, store.cfg.ycsb, refs);
    Ok(Box::new(Phased::new(what, vec![first..first + pages as u64], 1, cores, move |_, out| out.clone_from(&stretch))))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_app_common, check_determinism, config, run};
    use super::*;
    use crate::trace::Access;
    use crate::units::Size;

    fn small() -> WorkloadConfig {
        let mut cfg = config("kv");
        cfg.kv.value_bytes = 200;
        cfg
    }

    fn store(cfg: &WorkloadConfig) -> Kv {
        Kv::new(cfg, layout(cfg).expect("valid"), layout_rng(cfg, 2), stream_rng(cfg, 3, 2))
    }

    /// Splits references into operations: each starts with its bucket load.
    fn operations(layout: &Layout, records: &[Access]) -> Vec<Vec<Access>> {
        let buckets = layout.buckets..layout.buckets + layout.bucket_count * BUCKET_BYTES;
        let mut ops: Vec<Vec<Access>> = Vec::new();
        for a in records {
            if buckets.contains(&a.vaddr) {
                ops.push(Vec::new());
            }
            ops.last_mut().expect("the first reference is a bucket load").push(*a);
        }
        ops
    }

    /// The key an operation touched, from its object accesses.
    fn key_of(layout: &Layout, op: &[Access]) -> u64 {
        let a = op.iter().find(|a| (layout.objects..layout.objects + layout.keys * OBJECT_BYTES).contains(&a.vaddr));
        (a.expect("every operation loads its object").vaddr - layout.objects) / OBJECT_BYTES
    }

    #[test]
    fn size_classes_follow_jemalloc() {
        let classes = size_classes();
        assert_eq!(&classes[..12], &[16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256]);
        assert!(classes.contains(&4096) && classes.contains(&5120));
        // A 4096-byte value needs 4096 + 5 + 1 bytes: the 5 KiB class.
        let fixed = value_classes(&KvConfig::default());
        assert_eq!((fixed.len(), fixed[0].slot), (1, 5120));
    }

    #[test]
    fn footprint_counts_every_region() {
        // 1000 keys of 200 bytes (slot 224): pairs 64 000 bytes (16 pages), objects 16 000
        // (4), values 224 000 (55), 1024 buckets 8 192 (2).
        let cfg = WorkloadConfig { kv: KvConfig { keys: 1000, value_bytes: 200, ..KvConfig::default() }, ..config("kv") };
        assert_eq!(footprint(&cfg).expect("valid"), (16 + 4 + 55 + 2) * 4096);
        // Sized by the footprint: the largest store that fits.
        let fitted = layout(&small()).expect("fits");
        assert!(fitted.footprint <= 4 << 20);
        let one_more = Layout::new(small().base_vaddr, fitted.keys + 1, &fitted.classes);
        assert!(one_more.footprint > 4 << 20);
    }

    #[test]
    fn etc_lengths_have_the_distribution_mean() {
        // The generalized Pareto mean is scale / (1 - shape) = 329 bytes; uniform
        // lengths within classes keep the mean within a few percent.
        let mut cfg = small();
        cfg.kv.value_sizes = ValueSizes::Etc;
        cfg.footprint = Size(64 << 20);
        let kv = store(&cfg);
        let total: u64 = (0..kv.layout.keys).map(|k| kv.value(k).1).sum();
        let mean = total as f64 / kv.layout.keys as f64;
        assert!((mean - 329.0).abs() < 0.05 * 329.0, "mean length {mean}");
        // Values stay inside their slots.
        for k in 0..kv.layout.keys {
            let (start, len) = kv.value(k);
            let c = kv.layout.class_of(kv.load_order.apply(k));
            let slot = kv.layout.slabs[c] + (kv.load_order.apply(k) - kv.layout.first_key[c]) * kv.layout.classes[c].slot;
            assert!(start + len < slot + kv.layout.classes[c].slot, "key {k}");
        }
    }

    #[test]
    fn read_only_workload_never_writes_values() {
        let mut cfg = small();
        cfg.kv.ycsb = Ycsb::C;
        let kv = store(&cfg);
        let values = kv.layout.slabs[0]..kv.layout.buckets;
        let objects = kv.layout.objects..kv.layout.objects + kv.layout.keys * OBJECT_BYTES;
        let records = run(&cfg);
        for a in records.iter().filter(|a| a.is_write()) {
            assert!(!values.contains(&a.vaddr), "store to value memory at {:#x}", a.vaddr);
            assert!(objects.contains(&a.vaddr), "the only stores update LRU clocks");
        }
        assert!(records.iter().any(|a| values.contains(&a.vaddr)), "values are read");
    }

    #[test]
    fn operations_walk_the_chain_to_their_key_and_copy_the_value() {
        let cfg = small();
        let kv = store(&cfg);
        let l = &kv.layout;
        let records = run(&cfg);
        let ops = operations(l, &records);
        let mut updates = 0;
        // The last operation may be cut short by the budget.
        for op in &ops[..ops.len() - 1] {
            let key = key_of(l, op);
            let bucket = (op[0].vaddr - l.buckets) / BUCKET_BYTES;
            assert_eq!(bucket, hash(kv.bucket_key, key) & (l.bucket_count - 1));
            // Entries visited: the chain from its head up to the key.
            let pairs = l.pairs..l.pairs + l.keys * PAIR_BYTES;
            let entries = op.iter().filter(|a| pairs.contains(&a.vaddr) && a.size as u64 == ENTRY_BYTES);
            let visited: Vec<u64> = entries.map(|a| (a.vaddr - l.pairs) / PAIR_BYTES).collect();
            let mut chain = vec![kv.head[bucket as usize] as u64];
            while *chain.last().expect("non-empty") != key {
                chain.push(kv.next[*chain.last().expect("non-empty") as usize] as u64);
            }
            assert_eq!(visited, chain);
            // The value's bytes, exactly once, all loads or all stores.
            let (start, len) = kv.value(key);
            let copy: Vec<&Access> = op.iter().filter(|a| (start..start + len).contains(&a.vaddr)).collect();
            assert_eq!(copy.iter().map(|a| a.size as u64).sum::<u64>(), len);
            let writes = copy.iter().filter(|a| a.is_write()).count();
            assert!(writes == 0 || writes == copy.len());
            updates += (writes > 0) as usize;
        }
        // Workload A: half of the operations update (σ of the share < 0.01 here).
        let share = updates as f64 / (ops.len() - 1) as f64;
        assert!(ops.len() > 1000 && (share - 0.5).abs() < 0.05, "{share} of {} operations update", ops.len());
    }

    #[test]
    fn hotspot_puts_its_share_of_operations_on_the_hot_keys() {
        let mut cfg = small();
        cfg.kv.popularity = Popularity::Hotspot;
        let kv = store(&cfg);
        let hot_count = (0.2 * kv.layout.keys as f64).round() as u64;
        let hot: std::collections::HashSet<u64> = (0..hot_count).map(|r| kv.popular.apply(r)).collect();
        let ops = operations(&kv.layout, &run(&cfg));
        let on_hot = ops.iter().filter(|op| hot.contains(&key_of(&kv.layout, op))).count();
        let share = on_hot as f64 / ops.len() as f64;
        assert!((share - 0.8).abs() < 0.03, "{share} of {} operations on hot keys", ops.len());
    }

    #[test]
    fn zipfian_favours_the_top_rank() {
        let cfg = small();
        let kv = store(&cfg);
        let top = kv.popular.apply(0);
        let ops = operations(&kv.layout, &run(&cfg));
        let on_top = ops.iter().filter(|op| key_of(&kv.layout, op) == top).count() as f64 / ops.len() as f64;
        // Rank 1 of n keys has probability 1 / H(n, 0.99).
        let n = kv.layout.keys;
        let expected = 1.0 / (1..=n).map(|k| (k as f64).powf(-0.99)).sum::<f64>();
        assert!((on_top - expected).abs() < 0.25 * expected, "{on_top} vs {expected}");
    }

    #[test]
    fn emits_exactly_refs_within_the_footprint() {
        let cfg = small();
        check_app_common(&cfg, &run(&cfg));
    }

    #[test]
    fn is_deterministic() {
        check_determinism(&small());
    }
}
