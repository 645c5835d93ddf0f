use super::classify::{rank_hotness, rank_victims};
use super::*;

/// A Dirty bit found without Accessed still counts the page as seen, so the
/// reads `seen − dirty` never wrap: 3 looks with Dirty alone and 2 with Accessed
/// alone are 5 sightings, 3 writes, 2 reads; 300 looks with Dirty saturate both
/// counts at 255 and leave 0 reads.
#[test]
fn writes_never_exceed_sightings() {
    let mut st = PageState::default();
    for _ in 0..3 {
        assert!(st.count(false, true));
    }
    for _ in 0..2 {
        assert!(st.count(true, false));
    }
    assert!(!st.count(false, false));
    assert_eq!((st.seen, st.reads_writes()), (5, (2, 3)));
    let mut st = PageState::default();
    for _ in 0..300 {
        st.count(false, true);
    }
    assert_eq!((st.seen, st.reads_writes()), (255, (0, 255)));
}

#[test]
fn write_domain_weighs_writes_twice() {
    // §3.1 footnote 1: WD iff 2·writes ≥ reads.
    assert!(is_write_domain(10, 5, 2), "2·5 = 10 ≥ 10");
    assert!(!is_write_domain(11, 5, 2), "10 < 11: read-domain");
    assert!(is_write_domain(0, 1, 2));
    assert!(!is_write_domain(0, 0, 2), "not accessed: cold, not WD");
    assert!(!is_write_domain(3, 0, 2), "only read");
}

#[test]
fn the_four_cases_of_fig_4() {
    // Window 8, K_Len 3, WD_Freq_L from 4 WD passes, WD_Freq_H from 6; bit 0 is the
    // latest pass.
    let f = |h: u8| forecast(h, 8, 3, 4, 6);
    // Case 1: WD intensive.
    assert_eq!(f(0b1111_1111), Forecast::WdFreqH);
    assert_eq!(f(0b1101_1011), Forecast::WdFreqH, "6 of 8, latest three 011: no Reverse");
    // Case 2: no WD (read-domain or cold).
    assert_eq!(f(0), Forecast::UnWd);
    assert_eq!(f(0b0100_0010), Forecast::UnWd, "2 of 8");
    // Case 3: WD, less intensive.
    assert_eq!(f(0b0101_0101), Forecast::WdFreqL, "4 of 8, latest three 101");
    // Case 4, Reverse: the latest three all WD turn an Un_WD window into WD ...
    assert_eq!(f(0b0000_0111), Forecast::WdFreqL);
    // ... and the latest three all not WD turn a WD window into Un_WD.
    assert_eq!(f(0b1111_1000), Forecast::UnWd);
    // History older than the window is ignored.
    assert_eq!(forecast(0b1111_0000, 4, 3, 2, 3), Forecast::UnWd);
    // K_Len 0: no Reverse.
    assert_eq!(forecast(0b1111_1000, 8, 0, 4, 6), Forecast::WdFreqL);
}

#[test]
fn reuse_classes() {
    // 100 samplings; rarely touched up to 10 sightings; thrashing if gaps ≤ 2 and stable.
    let r = |seen, min, max| reuse(seen, 100, min, max, 0.1, 2);
    assert_eq!(r(10, 3, 20), Reuse::Rare);
    assert_eq!(r(100, 1, 1), Reuse::Thrashing, "seen at every sampling");
    assert_eq!(r(50, 2, 2), Reuse::Thrashing, "every other sampling");
    assert_eq!(r(50, 1, 5), Reuse::Frequent, "unstable");
    assert_eq!(r(34, 3, 3), Reuse::Frequent, "stable but larger than 2");
    assert_eq!(reuse(100, 100, 1, 1, 0.1, 0), Reuse::Frequent, "thrash_max_gap 0: none");
}

#[test]
fn the_hotness_list_puts_wd_freq_h_first_then_hotter_and_cold_read_pages_leave_first() {
    let c = |addr, forecast, heat| Candidate {
        page: PageRef::new(0, addr),
        pfn: 0,
        tier: TierId::SLOW,
        heat,
        reuse: Reuse::Frequent,
        forecast,
        wd_now: false,
        hot: true,
    };
    let mut hl = vec![c(0, Forecast::UnWd, 99), c(1, Forecast::WdFreqL, 80), c(2, Forecast::WdFreqH, 10), c(3, Forecast::WdFreqL, 90), c(4, Forecast::WdFreqH, 60)];
    rank_hotness(&mut hl);
    assert_eq!(hl.iter().map(|c| c.page.addr).collect::<Vec<_>>(), [4, 2, 3, 1, 0]);
    // Room is made by read-domain pages first, then WD_Freq_L ones, colder first.
    let mut victims = vec![c(0, Forecast::WdFreqL, 1), c(1, Forecast::UnWd, 9), c(2, Forecast::UnWd, 3), c(3, Forecast::WdFreqL, 0)];
    rank_victims(&mut victims);
    assert_eq!(victims.iter().map(|c| c.page.addr).collect::<Vec<_>>(), [2, 1, 3, 0]);
}
