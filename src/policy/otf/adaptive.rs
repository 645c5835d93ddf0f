//! The adaptive threshold (Adavally et al., JETC 2021; docs/policies/spar.md): every
//! `adapt_cycles` the threshold doubles, halves or stays by the migrations MigC was
//! handed in the interval ([`MigcWork`]) and what each earned ([`adapted`]).

use super::{Otf, OtfConfig, Variant};

impl<V: Variant> Otf<V> {
    /// The adaptive rule, run every `adapt_cycles`, at cycle `now`.
    pub(super) fn adapt(&mut self, now: u64) {
        let units = self.migc_work.take(now);
        let t = adapted(&self.cfg, self.threshold, 1 << self.unit_shift, units, self.benefit, self.migrations);
        let i = match t.cmp(&self.threshold) {
            std::cmp::Ordering::Less => 0,
            std::cmp::Ordering::Equal => 1,
            std::cmp::Ordering::Greater => 2,
        };
        self.adapt_decisions[i] += 1;
        self.threshold = t;
    }
}

/// The units handed to MigC (moved on the fly, completed at reconciliation, moved
/// back), each with the cycle its move is done, for the adaptive rule's count of
/// migrations. MigC runs one move at a time in the order it gets them, so the cycles
/// only grow and the queue is a FIFO.
///
/// The rule counts the units MigC moved in the interval *plus those still waiting for
/// it* at the interval's end (its backlog). That is our rule, not the authors': their
/// model picks a hot page and checks the rule only while MigC is idle, so it never has
/// a backlog and "migrations in the interval" is the demand on MigC. Ours hands MigC
/// every unit the moment it is hot, and a reconciliation hands it the rest of the
/// page; counted as moved, a saturated MigC would move few units per interval and
/// read as "few migrations", and the rule would lower the threshold, adding work to a
/// queue that is already behind (docs/policies/spar.md, "Why the adaptive rule…").
/// Counting the backlog makes a busy MigC read as busy for as long as it is behind;
/// with an idle MigC the count is the units moved in the interval, as the authors'.
/// Units completed at reconciliation and moved back count: they take MigC's time as
/// on-the-fly moves do, and each comes of subpages the threshold let in.
#[derive(Debug, Default)]
pub(super) struct MigcWork {
    /// (cycle the move is done, units), oldest first.
    queue: std::collections::VecDeque<(u64, u64)>,
}

impl MigcWork {
    /// MigC was handed `units` units, whose move is done at cycle `done`.
    pub(super) fn handed(&mut self, done: u64, units: u64) {
        self.queue.push_back((done, units));
    }

    /// The units moved since the last call (done by `now`), which leave the queue,
    /// plus those still waiting at `now`.
    pub(super) fn take(&mut self, now: u64) -> u64 {
        let mut moved = 0;
        while let Some(&(done, units)) = self.queue.front() {
            if done > now {
                break;
            }
            moved += units;
            self.queue.pop_front();
        }
        moved + self.queue.iter().map(|q| q.1).sum::<u64>()
    }
}

/// The authors' adaptive threshold (their Ramulator MigC, `Processor.cpp`, where it
/// sits commented out in the public version; the JETC 2021 paper describes it): more
/// migrations than `raise_above_migrations` in an interval while each earned under
/// `mbq_raise` accesses → double the threshold (up to its maximum); fewer than
/// `lower_below_migrations` while each earned under `mbq_lower` → halve it (down to
/// its minimum); else keep it. The counts are in 4 KiB pages: `units` migrations of
/// `unit_pages` 4 KiB pages each count `units × unit_pages` (our scaling, see
/// `raise_above_migrations`), compared exactly, without rounding the limits.
/// `benefit` and `migrations` are over the whole run.
pub(super) fn adapted(cfg: &OtfConfig, threshold: u32, unit_pages: u64, units: u64, benefit: u64, migrations: u64) -> u32 {
    if migrations == 0 {
        return threshold;
    }
    let mbq = benefit / migrations;
    let pages = units.saturating_mul(unit_pages);
    if pages > cfg.raise_above_migrations && mbq < cfg.mbq_raise && threshold < cfg.threshold_max {
        (threshold * 2).min(cfg.threshold_max)
    } else if pages < cfg.lower_below_migrations && mbq < cfg.mbq_lower && threshold > cfg.threshold_min {
        (threshold / 2).max(cfg.threshold_min)
    } else {
        threshold
    }
}
