//! Windows of long runs: which instructions of each thread a recording keeps.
//!
//! A recording may skip the first `skip` instructions of every thread, stop
//! `limit` instructions later, and in between keep `window` instructions of every
//! `period` (SimPoint-style periodic sampling: the first `window` of each period,
//! periods counted from the end of the skip). Instructions are counted as the
//! engine counts them: each access is one instruction plus its `instrs`.
//!
//! [`Windows`] applies that to a stream of accesses per core. A kept access's
//! `instrs` keeps only the instructions before it that fall in windows, so a
//! replay executes exactly the recorded windows back to back. It also counts, per
//! core, the records and instructions kept and the instructions the thread ran,
//! which the trace's metadata stores so that reports can scale to the whole run.

use super::meta::ThreadCounts;
use super::Access;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// What part of each thread's run a recording keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sampling {
    /// Instructions skipped at the start of each thread.
    pub skip: u64,
    /// Instructions after the skip at which recording stops (`None`: to the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// Instructions recorded at the start of every period (`None`: all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// Instructions from the start of one window to the start of the next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<u64>,
}

impl Sampling {
    /// A sampling from the command line's values, checked.
    pub fn new(skip: u64, limit: Option<u64>, window: Option<u64>, period: Option<u64>) -> Result<Sampling> {
        match (window, period) {
            (Some(0), _) => bail!("--window: must be at least 1 instruction"),
            (Some(w), Some(p)) if p < w => bail!("--period: {p} is shorter than --window {w}"),
            (Some(_), None) | (None, Some(_)) => bail!("--window and --period: give both (W instructions of every P)"),
            _ => {}
        }
        if limit == Some(0) {
            bail!("--limit: must be at least 1 instruction");
        }
        Ok(Sampling { skip, limit, window, period })
    }

    /// Whether every instruction is kept.
    pub fn is_whole(&self) -> bool {
        self.skip == 0 && self.limit.is_none() && self.window.is_none()
    }

    /// Whether the instruction at position `i` (0-based) of a thread is kept.
    #[inline]
    pub fn keeps(&self, i: u64) -> bool {
        self.kept_before(i + 1) > self.kept_before(i)
    }

    /// Number of kept positions in `[0, x)`.
    #[inline]
    pub fn kept_before(&self, x: u64) -> u64 {
        let x = match self.limit {
            Some(l) => x.min(self.skip.saturating_add(l)),
            None => x,
        };
        let Some(d) = x.checked_sub(self.skip) else { return 0 };
        match (self.window, self.period) {
            (Some(w), Some(p)) => (d / p) * w + (d % p).min(w),
            _ => d,
        }
    }

    /// The first position after which nothing more is kept, if any.
    pub fn end(&self) -> Option<u64> {
        self.limit.map(|l| self.skip.saturating_add(l))
    }

    /// One line for people: `W of every P instructions, from instruction S, for L
    /// instructions`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let (Some(w), Some(p)) = (self.window, self.period) {
            parts.push(format!("{w} of every {p} instructions"));
        }
        if self.skip > 0 {
            parts.push(format!("from instruction {}", self.skip));
        }
        if let Some(l) = self.limit {
            parts.push(format!("for {l} instructions"));
        }
        if parts.is_empty() {
            "the whole run".into()
        } else {
            parts.join(", ")
        }
    }
}

/// Applies a [`Sampling`] to the accesses of every core, and counts them.
pub struct Windows {
    sampling: Sampling,
    /// Per core: what it ran and kept; its position is `program_instructions`
    /// (which stops at the end of the windows).
    threads: Vec<ThreadCounts>,
    /// Per core: the position after its last kept access.
    marks: Vec<u64>,
}

impl Windows {
    pub fn new(sampling: Sampling) -> Windows {
        Windows { sampling, threads: Vec::new(), marks: Vec::new() }
    }

    /// Keeps the accesses of `batch` that fall in windows (with their instruction
    /// counts cut to the windows), in place.
    pub fn apply(&mut self, batch: &mut Vec<Access>) {
        let s = self.sampling;
        let whole = s.is_whole();
        if whole {
            self.count_whole(batch);
            return;
        }
        let end = s.end().unwrap_or(u64::MAX);
        let (threads, marks) = (&mut self.threads, &mut self.marks);
        batch.retain_mut(|a| {
            let core = a.core as usize;
            if core >= threads.len() {
                threads.extend((threads.len()..=core).map(|c| ThreadCounts { core: c as u16, ..ThreadCounts::default() }));
                marks.resize(core + 1, 0);
            }
            let t = &mut threads[core];
            let own = t.program_instructions + a.instrs as u64;
            // Past the end of the windows nothing is kept or counted: the trace
            // covers the run up to there.
            t.program_instructions = (own + 1).min(end);
            if !s.keeps(own) {
                return false;
            }
            // The kept instructions since the last kept access: the rest of its
            // window and the start of this one, replayed back to back.
            a.instrs = (s.kept_before(own) - s.kept_before(marks[core])).min(u32::MAX as u64) as u32;
            marks[core] = own + 1;
            t.records += 1;
            t.instructions += a.instrs as u64 + 1;
            true
        });
    }

    /// Counts the accesses of `batch` when every one is kept: per stretch of one
    /// core, its records and instructions at once.
    fn count_whole(&mut self, batch: &[Access]) {
        let mut rest = batch;
        while let Some(first) = rest.first() {
            let core = first.core;
            let len = rest.iter().position(|a| a.core != core).unwrap_or(rest.len());
            let (stretch, after) = rest.split_at(len);
            let instrs = stretch.iter().map(|a| a.instrs as u64).sum::<u64>() + len as u64;
            let t = self.thread(core as usize);
            t.records += len as u64;
            t.instructions += instrs;
            t.program_instructions += instrs;
            rest = after;
        }
    }

    /// The counts of core `core`, added (with those of lower cores) if new.
    #[inline]
    fn thread(&mut self, core: usize) -> &mut ThreadCounts {
        if core >= self.threads.len() {
            self.threads.extend((self.threads.len()..=core).map(|c| ThreadCounts { core: c as u16, ..ThreadCounts::default() }));
            self.marks.resize(core + 1, 0);
        }
        &mut self.threads[core]
    }

    /// Whether core `core` has run past the last instruction it could keep.
    pub fn finished(&self, core: usize) -> bool {
        match (self.sampling.end(), self.threads.get(core)) {
            (Some(end), Some(t)) => t.program_instructions >= end,
            _ => false,
        }
    }

    /// The counts of every core that ran.
    pub fn threads(&self) -> &[ThreadCounts] {
        &self.threads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_positions_by_hand() {
        // Skip 10, then 2 of every 5, for 12 positions: kept 10, 11, 15, 16, 20, 21.
        let s = Sampling::new(10, Some(12), Some(2), Some(5)).unwrap();
        let kept: Vec<u64> = (0..40).filter(|&i| s.keeps(i)).collect();
        assert_eq!(kept, [10, 11, 15, 16, 20, 21]);
        assert_eq!(s.kept_before(40), 6);
        assert_eq!(s.kept_before(16), 3);
        assert!(Sampling::new(0, None, Some(5), Some(4)).is_err());
        assert!(Sampling::new(0, None, Some(5), None).is_err());
        assert!(Sampling::new(0, Some(0), None, None).is_err());
    }

    #[test]
    fn windows_cut_instruction_counts_per_core() {
        // Core 0: accesses at positions 3 (instrs 3), 9 (instrs 5), 14 (instrs 4);
        // core 1 at position 2. Windows: skip 2, then 4 of every 10 → positions
        // 2–5 and 12–15 kept.
        let mut w = Windows::new(Sampling::new(2, None, Some(4), Some(10)).unwrap());
        let a = |core: u16, instrs: u32| Access { core, instrs, vaddr: 0x1000, size: 8, ..Access::default() };
        let mut batch = vec![a(0, 3), a(1, 2), a(0, 5), a(0, 4)];
        w.apply(&mut batch);
        // Position 3: one kept position (2) before it. Position 14: the kept 4 and 5
        // (the rest of the first window) and 12, 13 since the access at 3; the
        // access at 9 is dropped.
        assert_eq!(batch.iter().map(|a| (a.core, a.instrs)).collect::<Vec<_>>(), [(0, 1), (1, 0), (0, 4)]);
        let t = w.threads();
        // Core 0 keeps positions 2–5 and 12–14: 7 instructions in 2 records.
        assert_eq!((t[0].records, t[0].instructions, t[0].program_instructions), (2, 7, 15));
        assert_eq!((t[1].records, t[1].instructions, t[1].program_instructions), (1, 1, 3));
        assert!(!w.finished(0));
    }
}
