//! MigC's moves (SpAR §2.2, §3): a hot unit migrates on the fly, one way into a free
//! fast huge frame or swapped with the least recently accessed fast huge page; when
//! the ReMap table passes `reconcile_at`, SpAR and huge-page migration reconcile the
//! pages with most subpages moved (or, as the authors' MigC, the oldest), and SpRM
//! moves back the subpages of lowest Migration Benefit Quotient.

use super::{Kind, Otf, Reconcile, Variant};
use crate::machine::remap::{Dest, Remap};
use crate::machine::{MechError, TierId};
use crate::mechanism::Mechanisms;
use crate::monitor::Which;

impl<V: Variant> Otf<V> {
    /// The least recently accessed fast huge page that can be swapped out.
    fn victim(&mut self, mech: &Mechanisms<Remap>) -> Option<u64> {
        let huge_frames = 1u64 << (self.huge_shift - 12);
        let base = self.fast_base;
        let (found, stale) = pick_victim(self.lru.iter_from_tail(Which::Inactive), |h| {
            let pfn = base + h * huge_frames;
            let data = matches!(mech.owner(pfn), crate::machine::Owner::Data { .. });
            (data, data && mech.remap().entry_of(pfn).is_none())
        });
        for h in stale {
            self.lru.remove(h);
        }
        let h = found?;
        self.lru.push_head(h, Which::Inactive);
        Some(base + h * huge_frames)
    }

    pub(super) fn migrate(&mut self, unit: usize, mech: &mut Mechanisms<Remap>) {
        let pfn = self.unit_pfn(unit);
        let r = mech.remap();
        let has_entry = r.entry_of(pfn).is_some();
        let full = r.occupancy() + 2 > r.capacity();
        if full {
            self.make_room(mech);
        }
        let dest = match V::KIND {
            Kind::SpRm => Dest::SwapArea,
            _ if has_entry => Dest::Free,
            _ if mech.free_frames(TierId::FAST) >= 1 << (self.huge_shift - 12) => Dest::Free,
            _ => match self.victim(mech) {
                Some(v) => Dest::Swap(v),
                None => {
                    self.refuse(&MechError::NoFreeFrame { tier: TierId::FAST, huge: true });
                    return;
                }
            },
        };
        let mut result = mech.otf_migrate(pfn, dest);
        if V::KIND == Kind::SpRm && matches!(result, Err(MechError::NoFreeFrame { .. })) {
            // The swap area is full: move back the least beneficial subpage first.
            self.reverse(1, mech);
            result = mech.otf_migrate(pfn, dest);
        }
        match result {
            Ok(m) => {
                self.migrations += 1;
                self.migc_work.handed(m.done, 1);
                self.counts[unit] = 0;
                self.moved[unit] = true;
                self.mbq[unit] = 0;
            }
            Err(e) => {
                // Counted from zero again: the unit may try later.
                self.counts[unit] = 0;
                self.refuse(&e);
            }
        }
    }

    /// Brings the table back to `reconcile_at` of its entries, one page (or pair) at
    /// a time: SpRM moves subpages back, the others reconcile.
    pub(super) fn make_room(&mut self, mech: &mut Mechanisms<Remap>) {
        let target = (self.cfg.reconcile_at * mech.remap().capacity() as f64) as usize;
        match V::KIND {
            Kind::SpRm => {
                let n = (mech.remap().occupancy() + 1).saturating_sub(target);
                self.reverse(n, mech);
            }
            _ => self.reconcile(target, mech),
        }
    }

    /// Reconciles entries until at most `target` are left: those with the highest
    /// share of their subpages moved first (SpAR §3), the oldest first among equals
    /// (the authors' MigC takes the table in order).
    fn reconcile(&mut self, target: usize, mech: &mut Mechanisms<Remap>) {
        let r = mech.remap();
        let subpages = 1u32 << (self.huge_shift - 12 - self.unit_shift);
        let oldest = self.cfg.reconcile == Reconcile::Oldest;
        let entries: Vec<(u32, u64, u64)> = r.entries().filter(|(_, e)| e.old >= self.slow_base && !e.returning).map(|(_, e)| (e.migrated.count_ones(), e.created, e.old)).collect();
        let order = if oldest { oldest_order(entries) } else { reconcile_order(entries) };
        for (moved, old) in order {
            let r = mech.remap();
            if r.occupancy() < target.max(1) {
                break;
            }
            let full = r.occupancy() + 2 > r.capacity();
            if !oldest && (moved as f64) < self.cfg.reconcile_min_share * subpages as f64 && !full {
                break;
            }
            let e = mech.remap().entry_of(old).map(|s| *mech.remap().entry(s));
            match mech.reconcile(old) {
                Ok(()) => {
                    // MigC moved the page's remaining subpages first: its clock is when
                    // they were done.
                    let missing = subpages - moved;
                    if missing > 0 {
                        self.migc_work.handed(mech.remap().clock, missing as u64);
                    }
                    if let Some(e) = e {
                        // The hot page now lives at `new`; a swapped cold page left it.
                        if let Some(h) = self.fast_huge(e.new << 12) {
                            self.reconciled_in[h as usize] = true;
                        }
                    }
                    let first = self.slow_unit(old << 12).expect("a slow unit");
                    let n = 1usize << (self.huge_shift - 12 - self.unit_shift);
                    for u in first..first + n {
                        self.moved[u] = false;
                        self.counts[u] = 0;
                    }
                }
                Err(e) => self.refuse(&e),
            }
        }
    }

    /// Moves back the `n` moved subpages with the lowest MBQ (SpRM).
    fn reverse(&mut self, n: usize, mech: &mut Mechanisms<Remap>) {
        let r = mech.remap();
        let moved: Vec<(u32, u64)> = r
            .entries()
            .filter(|(_, e)| !e.returning)
            .filter_map(|(_, e)| self.slow_unit(e.old << 12).map(|u| (self.mbq[u], e.old)))
            .collect();
        for (q, old) in lowest_mbq(moved, n) {
            let units = mech.remap().entry_of(old).map_or(0, |s| mech.remap().entry(s).migrated.count_ones() as u64);
            match mech.reverse_migrate(old) {
                Ok(done) => {
                    self.migc_work.handed(done, units);
                    let u = self.slow_unit(old << 12).expect("a slow unit");
                    self.moved[u] = false;
                    self.counts[u] = 0;
                    self.reverse_mbq.push(q);
                }
                Err(e) => self.refuse(&e),
            }
        }
    }
}

/// MigC's cold-page choice: the first fast huge frame from the LRU tail (`order`)
/// that holds a page and can be swapped (`check` gives both). Frames on the way that
/// hold no page (free, or held for a move) are returned to be taken off the list:
/// they come back when accessed. At most 256 are looked at.
pub(super) fn pick_victim(order: impl Iterator<Item = u64>, mut check: impl FnMut(u64) -> (bool, bool)) -> (Option<u64>, Vec<u64>) {
    let mut stale = Vec::new();
    for h in order.take(256) {
        match check(h) {
            (_, true) => return (Some(h), stale),
            (false, _) => stale.push(h),
            _ => {}
        }
    }
    (None, stale)
}

/// SpAR's reconciliation order over (subpages moved, cycle made, old frame): most
/// moved first, then oldest.
pub(super) fn reconcile_order(mut entries: Vec<(u32, u64, u64)>) -> Vec<(u32, u64)> {
    entries.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    entries.into_iter().map(|e| (e.0, e.2)).collect()
}

/// The authors' reconciliation order (`onfly_ar_init`): the oldest entry first,
/// whatever its share of subpages moved.
pub(super) fn oldest_order(mut entries: Vec<(u32, u64, u64)>) -> Vec<(u32, u64)> {
    entries.sort_by(|a, b| a.1.cmp(&b.1).then(a.2.cmp(&b.2)));
    entries.into_iter().map(|e| (e.0, e.2)).collect()
}

/// SpRM's choice of subpages to move back: the `n` with the lowest Migration Benefit
/// Quotient (accesses since migration, §3), the lowest old frame first among equals.
pub(super) fn lowest_mbq(mut moved: Vec<(u32, u64)>, n: usize) -> Vec<(u32, u64)> {
    moved.sort_unstable();
    moved.truncate(n);
    moved
}
