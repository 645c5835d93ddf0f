//! Tracking (HMM-V §4.1): a round's start, each window's scan of what PML logged
//! (or of the whole EPT, RAMinate's tracker) counted through the multi-level queue,
//! and the clock switch's counter.

use super::{Flavor, HmmV, HmmVConfig, Tracker, Vm};
use crate::machine::PageRef;
use crate::mechanism::{GptNode, Mechanisms, ScanMode, Scope};
use crate::monitor::{Filtered, MultiLevelQueue};

/// Counts one window's view of base page `page` (accessed / dirty as read) through
/// the queue's filter; returns whether to clear its bits.
pub(super) fn count(queue: Option<&mut MultiLevelQueue>, reads: &mut Vec<u8>, writes: &mut Vec<u8>, page: u64, accessed: bool, dirty: bool) -> bool {
    let seen = accessed || dirty;
    let f = match queue {
        Some(q) => q.window(page, seen),
        None => Filtered { clear: true, counted: seen },
    };
    if f.counted {
        let i = page as usize;
        if i >= reads.len() {
            reads.resize(i + 1, 0);
            writes.resize(i + 1, 0);
        }
        // A written page counts as a write; one only read, as a read.
        if dirty {
            writes[i] = writes[i].saturating_add(1);
        } else {
            reads[i] = reads[i].saturating_add(1);
        }
    }
    f.clear && seen
}

/// Clears the EPT dirty bits of guest page-table pages `nodes` of VM `t` (each EPT
/// page once: nodes may share a huge one).
fn clear_ept_dirty(t: u16, nodes: &[GptNode], mech: &mut Mechanisms) {
    let mut done: Vec<u64> = Vec::new();
    for n in nodes {
        let Ok(p) = mech.page(PageRef::new(t, n.gpfn << 12)) else { continue };
        if p.huge {
            if done.contains(&p.addr) {
                continue;
            }
            done.push(p.addr);
        }
        let _ = mech.clear_ept_dirty(t, p.addr);
    }
}

/// A clock switch for a VM with this counter (§4.1.3): tracking runs if it is 0;
/// otherwise it falls by one.
pub(super) fn switch_on(counter: &mut u32) -> bool {
    if *counter == 0 {
        return true;
    }
    *counter -= 1;
    false
}

/// A round that migrated `migrated_mb` ended: under `quiet_round_mb`, the counter
/// rises, to at most `counter_max` (§4.1.3).
pub(super) fn round_done(counter: &mut u32, migrated_mb: f64, s: &HmmVConfig) {
    if migrated_mb < s.quiet_round_mb {
        *counter = (*counter + 1).min(s.counter_max);
    }
}

/// Copies the counts of base page `first` to the `n − 1` base pages after it.
pub(super) fn spread(reads: &mut Vec<u8>, writes: &mut Vec<u8>, first: u64, n: u64) {
    let (f, end) = (first as usize, (first + n) as usize);
    if end > reads.len() {
        reads.resize(end, 0);
        writes.resize(end, 0);
    }
    let (r, w) = (reads[f], writes[f]);
    reads[f..end].fill(r);
    writes[f..end].fill(w);
}

impl<F: Flavor> HmmV<F> {
    /// Starts a round: counts from zero; the GPT tracker collects the guest's
    /// last-level page-table pages, clears their entries' A/D bits and their EPT dirty
    /// bits, flushes and turns PML on; the EPT tracker clears the whole EPT's bits.
    pub(super) fn begin_round(&mut self, i: usize, mech: &mut Mechanisms) {
        let t = self.vms[i].tenant;
        // Forget the last round's counts of this VM's pages.
        let mut mine = Vec::new();
        mech.pages(Scope::Tenant(t), |p| mine.push((p.page, p.base_pages())));
        for (first, n) in mine {
            for b in first..(first + n).min(self.reads.len() as u64) {
                self.reads[b as usize] = 0;
                self.writes[b as usize] = 0;
            }
        }
        match self.s.tracker {
            Tracker::Ept => {
                mech.scan(Scope::Tenant(t), ScanMode::Clear, |_| {});
            }
            Tracker::Gpt => {
                let Ok(nodes) = mech.collect_gpt(t, self.vms[i].vcpu) else { return };
                let huge: Vec<bool> = nodes.iter().map(|n| mech.page(PageRef::new(t, n.gpfn << 12)).is_ok_and(|p| p.huge)).collect();
                let shift = self.huge_frames.trailing_zeros();
                let v = &mut self.vms[i];
                v.node_of.clear();
                v.huge_regions.clear();
                for (k, n) in nodes.iter().enumerate() {
                    let g = n.gpfn as usize;
                    if g >= v.node_of.len() {
                        v.node_of.resize(g + 1, 0);
                    }
                    v.node_of[g] = k as u32 + 1;
                    if huge[k] {
                        v.huge_regions.entry(n.gpfn >> shift).or_default().push(k as u32);
                    }
                }
                v.node_seen = vec![u32::MAX; nodes.len()];
                v.nodes = nodes.clone();
                mech.scan_gpt(t, &nodes, |e| e.accessed || e.dirty);
                clear_ept_dirty(t, &nodes, mech);
                let _ = mech.take_pml_log(t);
                let _ = mech.flush_vm(t);
                mech.set_pml(t, true);
            }
        }
    }

    /// The GPT tracker's window: the guest page-table pages PML logged, scanned
    /// through the queue's filter, their EPT dirty bits cleared again, one flush.
    /// Returns (pages scanned, entries read, bytes those entries map).
    pub(super) fn scan_logged(&mut self, i: usize, mech: &mut Mechanisms) -> (u64, u64, u64) {
        let t = self.vms[i].tenant;
        self.windows_done = self.windows_done.wrapping_add(1);
        let stamp = self.windows_done;
        let log = mech.take_pml_log(t);
        let shift = self.huge_frames.trailing_zeros();
        let v = &mut self.vms[i];
        let mut nodes = Vec::new();
        let mut take = |k: usize, v: &mut Vm| {
            if v.node_seen[k] != stamp {
                v.node_seen[k] = stamp;
                nodes.push(v.nodes[k]);
            }
        };
        for g in log {
            if let Some(&k) = v.node_of.get(g as usize).filter(|&&k| k > 0) {
                take(k as usize - 1, v);
            }
            if let Some(ks) = v.huge_regions.get(&(g >> shift)).cloned() {
                for k in ks {
                    take(k as usize, v);
                }
            }
        }
        let (queue, reads, writes) = (&mut self.queue, &mut self.reads, &mut self.writes);
        let mlq = self.s.multi_level_queue;
        let huge_bytes = self.huge_frames << 12;
        let mut bytes = 0;
        let huge_frames = self.huge_frames;
        let entries = mech.scan_gpt(t, &nodes, |e| {
            let Some(p) = e.page else { return false };
            bytes += if e.huge { huge_bytes } else { 4096 };
            // The queue keeps one record per guest page (its first base page); what a
            // guest huge page's bits say is counted on every base page it covers.
            let clear = count(mlq.then_some(&mut *queue), reads, writes, p, e.accessed, e.dirty);
            if e.huge {
                spread(reads, writes, p, huge_frames);
            }
            clear
        });
        clear_ept_dirty(t, &nodes, mech);
        if !nodes.is_empty() {
            let _ = mech.flush_vm(t);
        }
        (nodes.len() as u64, entries, bytes)
    }

    /// The EPT tracker's window: every EPT entry of the VM read and cleared.
    pub(super) fn scan_ept(&mut self, t: u16, mech: &mut Mechanisms) -> (u64, u64, u64) {
        let (reads, writes) = (&mut self.reads, &mut self.writes);
        let mut bytes = 0;
        let sum = mech.scan(Scope::Tenant(t), ScanMode::Clear, |p| {
            bytes += p.bytes;
            for b in p.page..p.page + p.base_pages() {
                count(None, reads, writes, b, p.accessed, p.dirty);
            }
        });
        (0, sum.entries, bytes)
    }
}
