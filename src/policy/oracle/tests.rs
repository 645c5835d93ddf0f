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
