use super::classify::{plan_moves, pool_dram, Candidate, Moves};
use super::tracking::{count, round_done, spread, switch_on};
use super::*;

fn c(fast: bool, frames: u64, degree: u64) -> Candidate {
    Candidate { fast, frames, degree }
}

#[test]
fn the_hot_set_fills_dram_and_the_coldest_dram_pages_make_room() {
    let pages = [c(true, 1, 0), c(true, 1, 5), c(false, 1, 9), c(false, 1, 3), c(false, 1, 0)];
    // Degree order: 9 (slow), 5 (fast), 3 (slow), then the zeros. Two frames of
    // DRAM, none free: the hot set is {9, 5}; 9 comes up, the idle DRAM page goes.
    let m = plan_moves(&pages, 24, 2, 0, Classifier::Sort, 0);
    assert_eq!(m, Moves { hot_frames: 2, promote: vec![2], demote: vec![0] });
    // With a free DRAM frame the VM may take, nothing needs to go.
    assert_eq!(plan_moves(&pages, 24, 3, 1, Classifier::Sort, 0), Moves { hot_frames: 3, promote: vec![2, 3], demote: vec![0] });
    // Fixed threshold 8: only the 9 is hot; still exchanged with the coldest.
    assert_eq!(plan_moves(&pages, 24, 2, 0, Classifier::Fixed, 8), Moves { hot_frames: 1, promote: vec![2], demote: vec![0] });
    // A threshold nothing passes moves nothing.
    assert_eq!(plan_moves(&pages, 24, 2, 0, Classifier::Fixed, 20), Moves { hot_frames: 0, promote: vec![], demote: vec![] });
}

#[test]
fn ties_stay_where_they_are_and_an_over_full_vm_gives_back() {
    // Equal degrees: the DRAM resident is hot, nothing moves.
    let pages = [c(false, 1, 3), c(true, 1, 3)];
    assert_eq!(plan_moves(&pages, 24, 1, 0, Classifier::Sort, 0), Moves { hot_frames: 1, promote: vec![], demote: vec![] });
    // Three DRAM pages for a DRAM of two: the coldest goes, with no promotion.
    let pages = [c(true, 1, 4), c(true, 1, 1), c(true, 1, 7)];
    assert_eq!(plan_moves(&pages, 24, 2, 0, Classifier::Sort, 0), Moves { hot_frames: 2, promote: vec![], demote: vec![1] });
    // A huge page that does not fit is passed over for smaller ones after it.
    let pages = [c(false, 512, 20), c(false, 1, 10), c(true, 1, 0)];
    let m = plan_moves(&pages, 24, 2, 0, Classifier::Sort, 0);
    assert_eq!((m.hot_frames, m.promote, m.demote), (1, vec![1], vec![2]));
}

#[test]
fn pool_dram_follows_the_hot_set_within_its_bounds() {
    let s = HmmVConfig::default();
    // 80 % of the pages of degree ≥ 3, within 75–125 % of the initial 1 000.
    assert_eq!(pool_dram(1000, 1000, 0, 10_000, &s), 800);
    assert_eq!(pool_dram(2000, 1000, 0, 10_000, &s), 1250);
    assert_eq!(pool_dram(0, 1000, 0, 10_000, &s), 750);
    // The others hold 9 000 of 10 000: only 1 000 left in the pool.
    assert_eq!(pool_dram(2000, 1000, 9000, 10_000, &s), 1000);
}

#[test]
fn the_clock_switch_skips_a_round_per_quiet_round() {
    let s = HmmVConfig::default();
    let mut counter = 0;
    assert!(switch_on(&mut counter));
    // 100 MB < 256 MB: quiet; the counter climbs to at most 3.
    for _ in 0..5 {
        round_done(&mut counter, 100.0, &s);
    }
    assert_eq!(counter, 3);
    // Three switches count down, the fourth tracks.
    assert_eq!([switch_on(&mut counter), switch_on(&mut counter), switch_on(&mut counter), switch_on(&mut counter)], [false, false, false, true]);
    // A busy round leaves it alone.
    round_done(&mut counter, 300.0, &s);
    assert_eq!(counter, 0);
}

#[test]
fn counting_goes_through_the_queue_and_a_guest_huge_page_counts_everywhere() {
    let (mut q, mut reads, mut writes) = (MultiLevelQueue::new(7), Vec::new(), Vec::new());
    // Window 1: written → a write, level 1, its bits kept (not cleared).
    assert!(!count(Some(&mut q), &mut reads, &mut writes, 3, true, true));
    // Window 2: resting, counted again; the Dirty bit as it stands says write.
    assert!(count(Some(&mut q), &mut reads, &mut writes, 3, true, true), "its DND time ends: clear");
    // Window 3: only read.
    count(Some(&mut q), &mut reads, &mut writes, 3, true, false);
    assert_eq!((reads[3], writes[3]), (1, 2));
    assert_eq!(degree(reads[3] as u64, writes[3] as u64, 1, 3), 7);
    // Without the queue every seen page is cleared, an idle one is not counted.
    assert!(count(None, &mut reads, &mut writes, 5, true, false));
    assert!(!count(None, &mut reads, &mut writes, 6, false, false));
    assert_eq!((reads[5], reads.get(6).copied().unwrap_or(0)), (1, 0));
    spread(&mut reads, &mut writes, 3, 4);
    assert_eq!((&reads[3..7], &writes[3..7]), (&[1, 1, 1, 1][..], &[2, 2, 2, 2][..]));
}
