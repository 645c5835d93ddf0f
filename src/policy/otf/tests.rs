use super::adaptive::adapted;
use super::migc::{lowest_mbq, oldest_order, pick_victim, reconcile_order};
use super::*;

#[test]
fn a_partial_table_keeps_the_policys_own_defaults() {
    let c: SpRmConfig = toml::from_str("threshold = 8").unwrap();
    assert_eq!((c.0.threshold, c.0.swap_area, c.0.adaptive), (8, 0.125, false));
    let h: HugePageConfig = toml::from_str("remap_entries = 64").unwrap();
    assert_eq!((h.0.threshold, h.0.subpage.bytes(), h.0.remap_entries), (16384, 0, 64));
    assert!(toml::from_str::<SpArConfig>("thresold = 8").unwrap_err().to_string().contains("thresold"));
}

#[test]
fn the_victim_is_the_least_recent_swappable_page() {
    // LRU tail first: 7 is free (no page), 3 is a page already in the table,
    // 5 is a page with no entry → 5; 7 leaves the list, 3 stays.
    let (v, stale) = pick_victim([7, 3, 5, 1].into_iter(), |h| match h {
        7 => (false, false),
        3 => (true, false),
        _ => (true, true),
    });
    assert_eq!((v, stale), (Some(5), vec![7]));
    assert_eq!(pick_victim([2, 4].into_iter(), |_| (true, false)), (None, vec![]));
}

#[test]
fn reverse_migration_takes_the_lowest_mbq_first() {
    // (MBQ, old frame): the two least beneficial are 0@900 and 3@100; ties go to the
    // lower frame.
    let moved = vec![(12, 400), (3, 100), (0, 900), (3, 300), (50, 200)];
    assert_eq!(lowest_mbq(moved.clone(), 2), vec![(0, 900), (3, 100)]);
    assert_eq!(lowest_mbq(moved, 3)[2], (3, 300));
}

#[test]
fn reconciliation_takes_the_most_moved_pages_first_then_the_oldest() {
    // (subpages moved, cycle made, old frame)
    let order = reconcile_order(vec![(2, 50, 10), (8, 90, 20), (2, 10, 30), (5, 70, 40)]);
    assert_eq!(order, vec![(8, 20), (5, 40), (2, 30), (2, 10)]);
}

#[test]
fn the_authors_reconciliation_takes_the_oldest_whatever_its_share() {
    // (subpages moved, cycle made, old frame): made at 10, 50, 70, 90 → 30 (2 moved)
    // goes first although 20 has 8 moved; a tie in age goes to the lower frame.
    let order = oldest_order(vec![(2, 50, 10), (8, 90, 20), (2, 10, 30), (5, 70, 40), (1, 10, 5)]);
    assert_eq!(order, vec![(1, 5), (2, 30), (2, 10), (5, 40), (8, 20)]);
}

#[test]
fn a_bad_reconcile_value_names_the_key() {
    let e = toml::from_str::<SpArConfig>("reconcile = \"newest\"").unwrap_err().to_string();
    assert!(e.contains("reconcile") && e.contains("newest"), "{e}");
    let c: SpArConfig = toml::from_str("reconcile = \"oldest\"").unwrap();
    assert_eq!((c.0.reconcile, SpArConfig::default().0.reconcile), (Reconcile::Oldest, Reconcile::Share));
}

#[test]
fn a_unit_counted_past_a_lowered_threshold_is_queued() {
    let mut hot = Vec::new();
    let mut c = 1500;
    // Threshold 2048: not yet.
    count_access(&mut c, 7, 2048, &mut hot);
    assert!(hot.is_empty());
    // Halved to 1024 by the adaptive rule: the next access queues it.
    count_access(&mut c, 7, 1024, &mut hot);
    assert_eq!((c, hot), (1502, vec![7]));
}

/// The authors' own setting: 4 KiB pages, their MBQ limits and bounds.
fn authors_4k() -> OtfConfig {
    OtfConfig { subpage: Size(4 << 10), threshold: 128, mbq_raise: 100, mbq_lower: 70, threshold_min: 32, threshold_max: 256, ..OtfConfig::default() }
}

#[test]
fn the_threshold_adapts_as_the_authors_rule_says() {
    // 4 KiB units (1 page each): the authors' counts as they are, 240 and 160.
    let c = authors_4k();
    // 300 migrations in the interval (> 240), MBQ 50 (< 100): doubles.
    assert_eq!(adapted(&c, 128, 1, 300, 50 * 40, 40), 256);
    // 241 doubles, 240 does not (strictly more).
    assert_eq!(adapted(&c, 64, 1, 241, 50 * 40, 40), 128);
    assert_eq!(adapted(&c, 64, 1, 240, 50 * 40, 40), 64);
    // At its maximum it stays.
    assert_eq!(adapted(&c, 256, 1, 300, 50 * 40, 40), 256);
    // 300 migrations but MBQ 100 (not < 100): they pay, keep.
    assert_eq!(adapted(&c, 128, 1, 300, 100 * 40, 40), 128);
    // 159 migrations (< 160), MBQ 60 (< 70): halves, not below 32; 160 keeps.
    assert_eq!(adapted(&c, 128, 1, 159, 60 * 40, 40), 64);
    assert_eq!(adapted(&c, 32, 1, 159, 60 * 40, 40), 32);
    assert_eq!(adapted(&c, 128, 1, 160, 60 * 40, 40), 128);
    // 100 migrations, MBQ 80 (not < 70): keep; no migration yet: keep.
    assert_eq!(adapted(&c, 128, 1, 100, 80 * 40, 40), 128);
    assert_eq!(adapted(&c, 128, 1, 0, 0, 0), 128);
}

#[test]
fn the_migration_counts_scale_with_the_unit() {
    // spar's 64 KiB subpages are 16 pages of 4 KiB: 240 / 16 = 15 and 160 / 16 = 10
    // units per interval. MBQ 1000 is under both 1600 and 1120.
    let c = SpArConfig::default().0;
    assert_eq!((c.raise_above_migrations, c.lower_below_migrations, c.subpage.bytes() >> 12), (240, 160, 16));
    // 16 units = 256 pages > 240: doubles; 15 = 240: keeps.
    assert_eq!(adapted(&c, 2048, 16, 16, 1000 * 50, 50), 4096);
    assert_eq!(adapted(&c, 2048, 16, 15, 1000 * 50, 50), 2048);
    // 10 units = 160 pages (not < 160): keeps; 9 = 144: halves.
    assert_eq!(adapted(&c, 2048, 16, 10, 1000 * 50, 50), 2048);
    assert_eq!(adapted(&c, 2048, 16, 9, 1000 * 50, 50), 1024);
    // Before the scaling, 100 units (< 160 as counted then) halved the threshold;
    // now they are 1 600 pages > 240: doubled.
    assert_eq!(adapted(&c, 2048, 16, 100, 1000 * 50, 50), 4096);
    // A 512 KiB page is 128 pages (hugepage-otf, were it adaptive: its MBQ limits
    // are 12 800 and 8 960): 2 pages = 256 > 240 doubles, 1 = 128 < 160 halves.
    let h = HugePageConfig::default().0;
    assert_eq!(adapted(&h, 16384, 128, 2, 5000 * 50, 50), 32768);
    assert_eq!(adapted(&h, 16384, 128, 1, 5000 * 50, 50), 8192);
}

#[test]
fn an_idle_migc_counts_the_units_moved_in_the_interval() {
    // Three moves handed and done within the interval [0, 4 M): 3, as the authors
    // count; the next interval has none: 0.
    let mut w = MigcWork::default();
    for done in [100_000, 1_500_000, 3_900_000] {
        w.handed(done, 1);
    }
    assert_eq!(w.take(4_000_000), 3);
    assert_eq!(w.take(8_000_000), 0);
}

#[test]
fn a_saturated_migc_does_not_read_as_few_migrations() {
    // Interval [0, 4 M), all handed in it: MigC moved 1 + 1 units on the fly (done
    // at 1.0 M and 2.5 M) and completed 13 subpages of a page at reconciliation
    // (done at 3.9 M); still waiting at 4 M: 1 on the fly (done at 4.3 M), 14 to
    // complete a page (5.0 M) and 1 on the fly (5.04 M). Moved 15, waiting 16: the
    // rule counts 31.
    let mut w = MigcWork::default();
    for (done, units) in [(1_000_000, 1), (2_500_000, 1), (3_900_000, 13), (4_300_000, 1), (5_000_000, 14), (5_040_000, 1)] {
        w.handed(done, units);
    }
    assert_eq!(w.take(4_000_000), 31);
    // 31 subpages of 64 KiB = 496 pages > 240: with MBQ 1000 (< 1600) the threshold
    // doubles from the floor; with MBQ 2000 it stays. Either way it is not lowered,
    // as it was when the rule counted only the 4 units handed on the fly (4 < 160
    // before the scaling, and 4 × 16 = 64 < 160 with the scaling alone).
    let c = SpArConfig::default().0;
    assert_eq!(adapted(&c, 512, 16, 31, 1000 * 50, 50), 1024);
    assert_eq!(adapted(&c, 1024, 16, 31, 2000 * 50, 50), 1024);
    assert_eq!(adapted(&c, 1024, 16, 4, 1000 * 50, 50), 512);
    // The next interval [4 M, 8 M): the 16 waiting units were moved in it.
    assert_eq!(w.take(8_000_000), 16);
    assert_eq!(w.take(12_000_000), 0);
}
