//! The scheduler's parts: the heap of core clocks that picks the core furthest
//! behind, a core's place in sampled mode's cycle of windows, and `run_slice`, the
//! per-reference loop of one core until it passes the next executor.

use super::epochs;
use super::feeds::CoreFeed;
use crate::config::SampledConfig;
use crate::machine::sampled::fast;
use crate::machine::{Machine, Redirect};
use crate::mechanism::{Mechanisms, Runtime};
use crate::policy::Policy;
use anyhow::Result;

/// The cores with references left, by clock: a binary min-heap of (clock, core) in
/// which a key may lag its core's clock, because a mechanism run by one core (a
/// shootdown, a stall) can advance another's. Clocks never go back, so a lagging key
/// is never above the truth: the first entry is checked against its core's clock and,
/// if it lags, re-keyed, until the first is current. The order is then exactly that of
/// (clock, core), as a scan of every core would give.
///
/// The core that runs stays first while it runs and is re-keyed in place afterwards
/// (one sift down per slice, where a pop and a push took two). Its slice ends at the
/// smaller key of the first's two children: a lower bound of every other core's clock,
/// which may end a slice early when a key lags, never late; the core then simply
/// comes first again.
#[derive(Default)]
pub(super) struct Clocks(Vec<(u64, usize)>);

impl Clocks {
    pub(super) fn push(&mut self, clock: u64, core: usize) {
        let h = &mut self.0;
        h.push((clock, core));
        let mut i = h.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if h[parent] <= h[i] {
                break;
            }
            h.swap(parent, i);
            i = parent;
        }
    }

    /// Restores the heap order below the first entry after its key grew.
    fn sift_first(&mut self) {
        let h = &mut self.0;
        let mut i = 0;
        loop {
            let left = 2 * i + 1;
            if left >= h.len() {
                return;
            }
            let child = if left + 1 < h.len() && h[left + 1] < h[left] { left + 1 } else { left };
            if h[i] <= h[child] {
                return;
            }
            h.swap(i, child);
            i = child;
        }
    }

    /// The core furthest behind (lowest clock, then lowest index) and its clock, with
    /// every lagging key met on the way brought up to date.
    pub(super) fn first<R: Redirect>(&mut self, m: &Machine<R>) -> Option<(u64, usize)> {
        loop {
            let &(key, core) = self.0.first()?;
            let clock = m.cores()[core].clock;
            debug_assert!(clock >= key, "core {core}'s clock went back from {key} to {clock}");
            if clock == key {
                return Some((key, core));
            }
            self.rekey_first(clock);
        }
    }

    /// A lower bound of every clock but the first core's (`u64::MAX` if it is alone).
    pub(super) fn second_bound(&self) -> u64 {
        self.0.iter().skip(1).take(2).map(|&(clock, _)| clock).min().unwrap_or(u64::MAX)
    }

    /// Gives the first core its new clock.
    pub(super) fn rekey_first(&mut self, clock: u64) {
        self.0[0].0 = clock;
        self.sift_first();
    }

    /// Takes the first core out (its source is exhausted).
    pub(super) fn remove_first(&mut self) {
        let last = self.0.pop().expect("a first core to remove");
        if let Some(first) = self.0.first_mut() {
            *first = last;
            self.sift_first();
        }
    }
}

/// A core's place in sampled mode's cycle of windows (module `machine::sampled`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Window {
    /// A detailed run (not sampled).
    Detailed,
    /// The full model re-warming the caches at the start of a detailed window.
    Warm,
    /// The full model, fitting the cost model.
    Fit,
    /// Fast-forward.
    Fast,
    /// Epochs mode, in one of its phases (module `epochs`).
    Epochs(epochs::Phase),
}

/// The window after `core`'s `kind` window with `left` references to go: the same
/// one while references are left, else the next, with the cost model told.
pub(super) fn next_window<R: Redirect>(m: &mut Machine<R>, core: usize, kind: Window, left: u64, w: &SampledConfig) -> (Window, u64) {
    if left > 0 {
        return (kind, left);
    }
    match kind {
        Window::Detailed => (Window::Detailed, u64::MAX),
        Window::Warm => {
            m.begin_fit(core);
            (Window::Fit, w.detailed_refs - w.warmup_refs)
        }
        Window::Fit => {
            m.end_fit(core);
            (Window::Fast, w.period_refs - w.detailed_refs)
        }
        Window::Fast => {
            m.end_fast_forward(core);
            (Window::Warm, w.warmup_refs)
        }
        Window::Epochs(_) => unreachable!("epochs mode's phases follow its driver"),
    }
}

/// Runs `core`'s references in mode `M` until its clock passes `limit`, a job it
/// handed over wakes a thread, `max` references have run, or its source is
/// exhausted. Returns the references run and whether the source is exhausted.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn run_slice<const M: u8, R: Redirect, P: Policy<R>>(
    feed: &mut CoreFeed,
    machine: &mut Machine<R>,
    rt: &mut Runtime,
    policy: &mut P,
    core: usize,
    limit: u64,
    max: u64,
    levels: u32,
) -> Result<(u64, bool)> {
    let mut n = 0;
    while n < max {
        if feed.pos == feed.buf.len() && !feed.refill(levels)? {
            return Ok((n, true));
        }
        let a = feed.buf[feed.pos];
        feed.pos += 1;
        // Host prefetch only (nothing simulated): the leaf PTE of the reference four
        // places ahead, so its host cache miss overlaps this reference's work.
        if let Some(far) = feed.buf.get(feed.pos + 3).filter(|_| !fast(M)) {
            machine.prefetch_far(core, far);
        }
        let out = machine.access_in::<M, _>(core, &a, policy);
        policy.on_reference(&a, &out, &mut Mechanisms::on_core(machine, rt, core));
        n += 1;
        // A job handed to a thread just now must be scheduled beside the core.
        if machine.cores()[core].clock >= limit || rt.threads.woken() {
            break;
        }
    }
    Ok((n, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The heap of clocks against a plain list: random cores run (the first one gets a
    /// later clock) or run out, and after each step the first entry is the smallest
    /// (clock, core) of the list and `second_bound` is the smallest clock of the others
    /// (no key lags here, so the bound is exact).
    #[test]
    fn clocks_keep_the_core_furthest_behind_first() {
        let mut rng = crate::rng::Rng::new(11);
        for cores in [1usize, 2, 3, 5, 16] {
            let mut heap = Clocks::default();
            let mut list: Vec<(u64, usize)> = Vec::new();
            for core in 0..cores {
                let clock = rng.below(100);
                heap.push(clock, core);
                list.push((clock, core));
            }
            while !list.is_empty() {
                let min = *list.iter().min().unwrap();
                assert_eq!(heap.0[0], min, "{cores} cores: the first entry");
                let others = list.iter().filter(|&&e| e != min).map(|&(clock, _)| clock).min().unwrap_or(u64::MAX);
                assert_eq!(heap.second_bound(), others, "{cores} cores: the bound of the others");
                let i = list.iter().position(|&e| e == min).unwrap();
                if rng.chance(0.05) {
                    heap.remove_first();
                    list.swap_remove(i);
                } else {
                    let later = min.0 + rng.below(50);
                    heap.rekey_first(later);
                    list[i].0 = later;
                }
            }
            assert!(heap.0.is_empty());
        }
    }
}
