use super::*;
use crate::machine::{Machine, MachineConfig, TenantKind};
use crate::mechanism::Runtime;
use crate::units::Capacity;

const BASE: u64 = 0x7f00_0000_0000;

/// One core, a 4 MiB fast tier (1024 frames), a 16 MiB slow tier, 4 KiB pages.
fn small_machine() -> (Machine, Runtime) {
    let mut cfg = MachineConfig { cores: 1, ..MachineConfig::default() };
    cfg.page_table.thp = false;
    cfg.tiers.fast.capacity = Capacity::Bytes(4 << 20);
    cfg.tiers.slow.capacity = Capacity::Bytes(16 << 20);
    let m = crate::mechanism::tests::build(&cfg, &[TenantKind::Process], false);
    (m, Runtime::new(&[ThreadKind::Kernel], 1))
}

/// Touches page `i` through the policy's hooks, as the engine does.
fn touch<P: Policy>(p: &mut P, m: &mut Machine, rt: &mut Runtime, i: u64) {
    let a = Access::read(BASE + (i << 12), 8, 0);
    let out = m.access(0, &a, p);
    p.on_reference(&a, &out, &mut Mechanisms::on_core(m, rt, 0));
}

/// Runs kswapd's jobs until it sleeps.
fn run_kswapd<P: Policy>(p: &mut P, m: &mut Machine, rt: &mut Runtime) {
    while rt.threads.next_busy().is_some() {
        if let Some(done) = rt.threads.step(m, &mut rt.limits, 0, p) {
            p.on_job_done(&done, &mut Mechanisms::on_thread(m, rt, KSWAPD));
        }
    }
}

fn tier(m: &mut Machine, rt: &mut Runtime, i: u64) -> TierId {
    Mechanisms::on_core(m, rt, 0).page(PageRef::new(0, BASE + (i << 12))).unwrap().tier
}

#[test]
fn tpp_demotes_the_inactive_tail_once_free_frames_fall_under_the_demotion_watermark() {
    let (mut m, mut rt) = small_machine();
    let mut p = Tpp::new(TppConfig::default(), m.info()).unwrap();
    // 1024 frames (4 MiB): min_free_kbytes = √(16 × 4096) = 256 KiB, 64 frames;
    // distance max(64 / 4, 1) = 16, high 96; WMARK_DEMOTE = max(1024 × 2 %,
    // 2 × 96) = 192 frames.
    assert_eq!(p.0.marks.target, 192);
    // Touch pages until the fast tier is under the watermark (the next tick sees
    // it and wakes kswapd).
    let mut n = 0;
    while Mechanisms::on_core(&mut m, &mut rt, 0).free_frames(TierId::FAST) >= 192 {
        touch(&mut p, &mut m, &mut rt, n);
        n += 1;
    }
    let free = Mechanisms::on_core(&mut m, &mut rt, 0).free_frames(TierId::FAST);
    Mechanisms::on_core(&mut m, &mut rt, 0).compute(p.0.tick);
    touch(&mut p, &mut m, &mut rt, n);
    assert_eq!(p.0.totals.kswapd_wakeups, 1);
    run_kswapd(&mut p, &mut m, &mut rt);
    // Every page was accessed once, at its first touch, and its translation stays
    // in the TLB: the first trip finds each young and keeps it; the second finds
    // it idle and demotes it, oldest first, until 192 frames are free. (The page
    // touched after the check took one more frame.)
    let demoted = 192 - (free - 1);
    assert_eq!(p.0.totals.demoted, demoted);
    assert_eq!(Mechanisms::on_core(&mut m, &mut rt, 0).free_frames(TierId::FAST), 192);
    for i in 0..=n {
        let want = if i < demoted { TierId::SLOW } else { TierId::FAST };
        assert_eq!(tier(&mut m, &mut rt, i), want, "page {i}");
    }
    assert!(!p.0.kswapd_running, "kswapd sleeps at the watermark");
}

#[test]
fn tpp_promotes_a_slow_page_only_from_the_active_list() {
    let (mut m, mut rt) = small_machine();
    let mut p = Tpp::new(TppConfig::default(), m.info()).unwrap();
    touch(&mut p, &mut m, &mut rt, 0);
    let page = PageRef::new(0, BASE);
    Mechanisms::on_core(&mut m, &mut rt, 0).migrate(page, TierId::SLOW).unwrap();
    p.0.moved(0, TierId::SLOW);
    // Fault 1: inactive, not marked yet → marked accessed; fault 2: marked →
    // activated; neither promotes. Fault 3: active → promoted.
    for (fault, want) in [(1, TierId::SLOW), (2, TierId::SLOW), (3, TierId::FAST)] {
        p.0.handle(0, page, &mut Mechanisms::on_core(&mut m, &mut rt, 0));
        assert_eq!(tier(&mut m, &mut rt, 0), want, "after fault {fault}");
    }
    assert_eq!((p.0.totals.inactive, p.0.totals.promoted), (2, 1));
    assert_eq!(p.0.lists[0].place(0), Place::On(Which::Active), "promoted onto the fast node's active list");
}

#[test]
fn linux_tiering_promotes_a_page_faulting_within_the_hot_threshold() {
    let (mut m, mut rt) = small_machine();
    let mut p = LinuxTiering::new(LinuxTieringConfig::default(), m.info()).unwrap();
    let ms = p.0.cycles_per_ms as u64;
    for i in 0..2 {
        touch(&mut p, &mut m, &mut rt, i);
        let page = PageRef::new(0, BASE + (i << 12));
        Mechanisms::on_core(&mut m, &mut rt, 0).migrate(page, TierId::SLOW).unwrap();
        p.0.moved(i, TierId::SLOW);
    }
    // A 4 MiB node never has plenty of room (1 GiB more than WMARK_PROMO): the
    // latency decides. Page 0 was marked 500 ms before its fault, page 1 1500 ms.
    let now = Mechanisms::on_core(&mut m, &mut rt, 0).now();
    Mechanisms::on_core(&mut m, &mut rt, 0).compute(2000 * ms);
    p.0.marked_at[0] = now + 1500 * ms;
    p.0.marked_at[1] = now + 500 * ms;
    for i in 0..2 {
        p.0.handle(i, PageRef::new(0, BASE + (i << 12)), &mut Mechanisms::on_core(&mut m, &mut rt, 0));
    }
    assert_eq!(tier(&mut m, &mut rt, 0), TierId::FAST);
    assert_eq!(tier(&mut m, &mut rt, 1), TierId::SLOW);
    assert_eq!((p.0.totals.promoted, p.0.totals.too_slow), (1, 1));
    assert_eq!(p.0.limit.candidates, 1, "only a page under the threshold is a candidate");
}
