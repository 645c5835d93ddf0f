use super::levels::Level;
use super::sets::{match_mask, SetArray, Sets, DIRTY_TAG};
use super::*;

fn two_level() -> Vec<CacheConfig> {
    // L1: 2 lines (1 set × 2 ways); L2: 4 lines (1 set × 4 ways), shared.
    vec![
        CacheConfig { name: "L1".into(), size: Size(128), ways: 2, latency_cycles: 2, shared: false },
        CacheConfig { name: "L2".into(), size: Size(256), ways: 4, latency_cycles: 10, shared: true },
    ]
}

/// The way mask by hand: tag 5 clean in way 1 and dirty in way 14 (a line is in a
/// set once; two copies here only to see both bits), tag 6 in way 3, empty ways 0.
#[test]
fn match_mask_finds_clean_and_dirty_ways() {
    let mut set = [0u32; 16];
    set[1] = 5;
    set[14] = 5 | DIRTY_TAG;
    set[3] = 6;
    assert_eq!(match_mask(&set, 5), (1 << 1) | (1 << 14));
    assert_eq!(match_mask(&set, 6), 1 << 3);
    assert_eq!(match_mask(&set, 7), 0);
    let four: [u32; 4] = [9 | DIRTY_TAG, 0, 0, 9];
    assert_eq!(match_mask(&four, 9), 0b1001);
}

/// One level of one instance, for tests of the set operations alone.
fn level(sets: usize, ways: usize) -> Level<Sets> {
    let c = CacheConfig { size: Size(sets as u64 * ways as u64 * 64), ways, ..CacheConfig::default() };
    Level::new(&c, 1, Sets::new)
}

/// The 4-, 8- and 16-way sets with their recency words, and sets of other
/// associativities in recency order, against a plain LRU list per set: the same
/// hits, the same dirty victims, the same recency order, on random lookups, fills
/// and removals over a few sets (2-way and 3-way sets take the general path).
#[test]
fn every_associativity_keeps_true_lru_order() {
    let mut rng = crate::rng::Rng::new(7);
    for ways in [2, 3, 4, 8, 16] {
        let sets = 4;
        let mut arr = level(sets, ways);
        // Per set: (line, dirty), most recent first.
        let mut model: Vec<Vec<(u64, bool)>> = vec![Vec::new(); sets];
        for _ in 0..40_000 {
            let line = rng.below(sets as u64 * (ways as u64 + 3));
            let write = rng.chance(0.3);
            let set = &mut model[(line % sets as u64) as usize];
            let (s, tag) = (arr.set_of(0, line), arr.tag_of(line));
            assert_eq!(arr.sets.peek(s, tag), set.iter().any(|&(l, _)| l == line));
            if rng.chance(0.1) {
                let removed = set.iter().position(|&(l, _)| l == line).map(|way| set.remove(way).1);
                assert_eq!(arr.sets.remove(s, tag), removed, "{ways}-way: line {line} removed");
                continue;
            }
            let hit = arr.sets.lookup(s, tag, write);
            match set.iter().position(|&(l, _)| l == line) {
                Some(way) => {
                    assert!(hit, "{ways}-way: line {line} is cached");
                    let (l, d) = set.remove(way);
                    set.insert(0, (l, d || write));
                }
                None => {
                    assert!(!hit, "{ways}-way: line {line} is not cached");
                    let victim = arr.sets.insert(s, tag | if write { DIRTY_TAG } else { 0 });
                    let victim = (victim & DIRTY_TAG != 0).then(|| arr.line_of(s, victim));
                    set.insert(0, (line, write));
                    let dropped = (set.len() > ways).then(|| set.pop().unwrap());
                    assert_eq!(victim, dropped.filter(|&(_, d)| d).map(|(l, _)| l), "{ways}-way: the dirty victim");
                }
            }
        }
        for (i, set) in model.iter().enumerate() {
            let mut tags: Vec<u32> = set.iter().map(|&(l, d)| ((l >> 2) + 1) as u32 | if d { DIRTY_TAG } else { 0 }).collect();
            tags.resize(ways, 0);
            assert_eq!(arr.sets.recency(i), tags, "{ways}-way: set {i} in recency order, empty ways last");
        }
    }
}

/// Hierarchies of every shape (the spelled-out ones and the general one), with
/// private and shared levels and three cores, against the hierarchy's rules spelled
/// out on plain LRU lists: the same level served every access, the same lines
/// reached memory in the same order, the same counts.
#[test]
fn every_shape_matches_the_rules_on_lru_lists() {
    let level = |size: u64, ways: usize, shared: bool| CacheConfig { name: "L".into(), size: Size(size), ways, latency_cycles: ways as u64, shared };
    for configs in [
        vec![level(512, 4, false), level(1024, 2, false), level(4096, 16, true)],
        vec![level(512, 4, false), level(1024, 8, false), level(4096, 16, true)],
        vec![level(512, 8, false), level(1024, 8, false), level(4096, 16, true)],
        vec![level(512, 4, false), level(2048, 16, true)],
        vec![level(256, 4, true)],
        vec![level(256, 2, false), level(512, 4, false), level(1024, 8, false), level(2048, 16, true), level(4096, 32, true)],
    ] {
        let depth = configs.len();
        let cores = 3;
        let mut m = Model {
            sets: configs.iter().map(|c| (c.size.bytes() / 64) as usize / c.ways).collect(),
            ways: configs.iter().map(|c| c.ways).collect(),
            shared: configs.iter().map(|c| c.shared).collect(),
            lines: configs
                .iter()
                .map(|c| vec![vec![Vec::new(); (c.size.bytes() / 64) as usize / c.ways]; if c.shared { 1 } else { cores }])
                .collect(),
            memory: Vec::new(),
        };
        let mut c = Caches::new(&configs, cores);
        let mut evicted = Evicted::default();
        let mut memory = Vec::new();
        let mut rng = crate::rng::Rng::new(11);
        for _ in 0..50_000 {
            let core = rng.below(cores as u64) as usize;
            let line = rng.below(200);
            let write = rng.chance(0.4);
            let (level, latency) = c.access(core, line << 6, write, &mut evicted);
            memory.extend_from_slice(evicted.lines());
            let hit = (0..depth).find(|&i| m.lookup(i, core, line, write && i == 0)).unwrap_or(depth);
            for i in (0..hit).rev() {
                m.install(i, core, line, write && i == 0);
            }
            assert_eq!((level, latency), (hit, configs[hit.min(depth - 1)].latency_cycles), "line {line} from core {core}");
        }
        assert_eq!(memory, m.memory, "the same write-backs in the same order");
        assert!(memory.len() > 1000);
        for (i, s) in c.stats().iter().enumerate() {
            assert!(s.hits > 100 && s.misses > 100, "level {i} of {depth} is exercised: {s:?}");
        }
    }
}

/// One set of the model: (line, dirty), most recent first.
type ModelSet = Vec<(u64, bool)>;

/// Per level, per instance, per set: the lines; the hierarchy's rules on them.
struct Model {
    sets: Vec<usize>,
    ways: Vec<usize>,
    shared: Vec<bool>,
    lines: Vec<Vec<Vec<ModelSet>>>,
    memory: Vec<u64>,
}

impl Model {
    fn set(&mut self, i: usize, core: usize, line: u64) -> &mut ModelSet {
        let inst = if self.shared[i] { 0 } else { core };
        let s = (line % self.sets[i] as u64) as usize;
        &mut self.lines[i][inst][s]
    }

    /// Looks up; on a hit makes the line most recent, dirty if `write`.
    fn lookup(&mut self, i: usize, core: usize, line: u64, write: bool) -> bool {
        let set = self.set(i, core, line);
        let Some(way) = set.iter().position(|&(l, _)| l == line) else { return false };
        let (l, d) = set.remove(way);
        set.insert(0, (l, d || write));
        true
    }

    fn install(&mut self, i: usize, core: usize, line: u64, dirty: bool) {
        let ways = self.ways[i];
        let set = self.set(i, core, line);
        set.insert(0, (line, dirty));
        if set.len() > ways {
            if let Some((victim, true)) = set.pop() {
                self.write_back(i + 1, core, victim);
            }
        }
    }

    fn write_back(&mut self, i: usize, core: usize, line: u64) {
        if i == self.sets.len() {
            self.memory.push(line);
        } else if !self.lookup(i, core, line, true) {
            self.install(i, core, line, true);
        }
    }
}

/// Runs `access` and collects the write-backs.
fn access(c: &mut Caches, core: usize, paddr: u64, write: bool, mem: &mut Vec<u64>) -> (usize, u64) {
    let mut evicted = Evicted::default();
    let out = c.access(core, paddr, write, &mut evicted);
    mem.extend_from_slice(evicted.lines());
    out
}

#[test]
fn hits_and_misses_of_a_short_sequence() {
    let mut c = Caches::new(&two_level(), 1);
    let mut mem = Vec::new();
    let w = &mut mem;
    // Lines A=0, B=1, C=2 (addresses 0, 64, 128).
    assert_eq!(access(&mut c, 0, 0, false, w), (2, 10)); // A: miss both → memory
    assert_eq!(access(&mut c, 0, 64, false, w), (2, 10)); // B: miss both
    assert_eq!(access(&mut c, 0, 0, false, w), (0, 2)); // A: L1 hit
    assert_eq!(access(&mut c, 0, 128, false, w), (2, 10)); // C: evicts B from L1 (LRU)
    assert_eq!(access(&mut c, 0, 64, false, w), (1, 10)); // B: L1 miss, L2 hit
    let s = c.stats();
    assert_eq!((s[0].hits, s[0].misses), (1, 4));
    assert_eq!((s[1].hits, s[1].misses), (1, 3));
    assert!(mem.is_empty(), "nothing was dirty");
}

#[test]
fn dirty_lines_write_back_level_by_level() {
    let mut c = Caches::new(&two_level(), 1);
    let mut mem = Vec::new();
    access(&mut c, 0, 0, true, &mut mem); // A dirty in L1
    access(&mut c, 0, 64, false, &mut mem); // B
    access(&mut c, 0, 128, false, &mut mem); // C evicts dirty A from L1 → written into L2
    assert!(mem.is_empty(), "A went to L2, not memory");
    // Five more distinct lines push A out of the 4-way L2 → one memory write of line 0.
    for line in 3..8 {
        access(&mut c, 0, line * 64, false, &mut mem);
    }
    assert_eq!(mem, vec![0]);
}

#[test]
fn flush_writes_back_dirty_lines_once_and_removes_all_copies() {
    let mut c = Caches::new(&two_level(), 2);
    let mut mem = Vec::new();
    access(&mut c, 0, 4096, true, &mut mem); // dirty in core 0's L1, clean copy in L2
    access(&mut c, 1, 4096 + 64, false, &mut mem);
    assert_eq!(c.flush_range(4096, 4096, &mut |l| mem.push(l)), (64, 1));
    assert_eq!(mem, vec![4096 / 64]);
    assert!(!c.holds_any(4096, 4096));
}

#[test]
fn private_levels_are_per_core() {
    let mut c = Caches::new(&two_level(), 2);
    let mut mem = Vec::new();
    access(&mut c, 0, 0, false, &mut mem);
    // Core 1 misses its own L1 but hits the shared L2.
    assert_eq!(access(&mut c, 1, 0, false, &mut mem), (1, 10));
}

/// Epochs mode's stand-ins touch the shared last level without counting. By hand, on
/// the two-level hierarchy (L2: one set of 4 ways, shared): core 0 writes lines 0–3
/// (each misses both levels and is filled; line 3's store leaves it dirty in L1
/// only), then its L1 evicts dirty line 3 into L2 when line 4 comes, and line 4 pushes
/// line 0 out of L2 (clean). Touches: line 4 hits (now most recent); line 9 misses,
/// fills and evicts the least recent, line 1 (clean); line 10 evicts line 2 (clean);
/// line 11 evicts line 3, dirty since the L1's write-back. The counters are those of
/// the five accesses alone.
#[test]
fn touching_the_shared_last_level_counts_nothing_and_returns_dirty_victims() {
    let mut c = Caches::new(&two_level(), 2);
    let mut ev = Evicted::default();
    assert!(c.last_shared());
    for line in 0..4u64 {
        c.access(0, line * 64, line == 3, &mut ev);
    }
    c.access(0, 4 * 64, false, &mut ev);
    c.access(0, 5 * 64, false, &mut ev);
    let before = c.counts();
    assert_eq!(c.touch_last(4), (true, None));
    assert_eq!(c.touch_last(9), (false, None));
    assert_eq!(c.touch_last(10), (false, None));
    assert_eq!(c.touch_last(11), (false, Some(3)));
    assert_eq!(c.counts(), before, "touches count nothing");
    // A private last level is not shared.
    let private: Vec<CacheConfig> = two_level().into_iter().map(|l| CacheConfig { shared: false, ..l }).collect();
    assert!(!Caches::new(&private, 2).last_shared());
}

/// A recording keeps the lines noted for its core, in order, from its start to its
/// stop, and nothing for a core that is not recording.
#[test]
fn a_recording_keeps_its_cores_lines_in_order() {
    let mut c = Caches::new(&two_level(), 2);
    c.record(0, 64);
    c.start_recording(1);
    c.record(0, 128);
    c.record(1, 192);
    c.record(1, 64 * 7 + 5);
    assert_eq!(c.stop_recording(0), Vec::<u64>::new());
    assert_eq!(c.stop_recording(1), vec![3, 7]);
    c.record(1, 256);
    assert_eq!(c.stop_recording(1), Vec::<u64>::new(), "stopped");
}
