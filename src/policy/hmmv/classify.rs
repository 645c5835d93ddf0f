//! Classifying and migrating (HMM-V §4.2–§4.4): a VM's pages by degree into the hot
//! set that fills its DRAM ([`plan_moves`]), its DRAM in pool mode ([`pool_dram`]),
//! and the moves handed to the migration threads.

use super::tracking::round_done;
use super::{Classifier, Flavor, HmmV, HmmVConfig, Mode, State, MIGRATE};
use crate::machine::{PageInfo, PageRef, TierId};
use crate::mechanism::{Colour, Job, Mechanisms, MoveHow, Op, Scope, ThreadId};
use crate::monitor::sort_by_degree;

/// A VM page as classification sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Candidate {
    /// In DRAM now.
    pub(super) fast: bool,
    /// Base pages it covers.
    pub(super) frames: u64,
    pub(super) degree: u64,
}

/// What a round moves: indexes into the candidates, hottest promotion first and
/// coldest demotion first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Moves {
    /// Base pages in the hot set.
    pub(super) hot_frames: u64,
    pub(super) promote: Vec<usize>,
    pub(super) demote: Vec<usize>,
}

/// Chooses the hot set of a VM holding `dram` base pages of DRAM (§4.2.2) and the
/// moves that bring it there. `Sort`: the hottest pages (degree above 0) that fit in
/// `dram`, bucket-sorted, DRAM residents first among equal degrees (so ties do not
/// move); `Fixed`: pages of degree above `threshold`, as many as fit. Hot NVM pages
/// are promoted; the coldest DRAM pages outside the hot set are demoted, as many as
/// the promotions need beyond the DRAM the VM may still take (`dram` minus what it
/// holds, at most `free_fast`), plus whatever it holds beyond `dram`.
pub(super) fn plan_moves(pages: &[Candidate], max_degree: u64, dram: u64, free_fast: u64, classifier: Classifier, threshold: u64) -> Moves {
    let mut items: Vec<(usize, u64)> = pages.iter().enumerate().filter(|(_, c)| c.fast).map(|(k, c)| (k, c.degree)).collect();
    items.extend(pages.iter().enumerate().filter(|(_, c)| !c.fast).map(|(k, c)| (k, c.degree)));
    let order = sort_by_degree(&items, max_degree);
    let mut hot = vec![false; pages.len()];
    let mut hot_frames = 0;
    for &k in &order {
        let c = pages[k];
        let qualifies = match classifier {
            Classifier::Sort => c.degree > 0,
            Classifier::Fixed => c.degree > threshold,
        };
        if !qualifies {
            break;
        }
        if hot_frames + c.frames <= dram {
            hot[k] = true;
            hot_frames += c.frames;
        }
    }
    let held: u64 = pages.iter().filter(|c| c.fast).map(|c| c.frames).sum();
    let promote: Vec<usize> = order.iter().copied().filter(|&k| hot[k] && !pages[k].fast).collect();
    let promote_frames: u64 = promote.iter().map(|&k| pages[k].frames).sum();
    let room = dram.saturating_sub(held).min(free_fast);
    let mut need = promote_frames.saturating_sub(room) + held.saturating_sub(dram);
    let mut demote = Vec::new();
    for &k in order.iter().rev() {
        if need == 0 {
            break;
        }
        if pages[k].fast && !hot[k] {
            demote.push(k);
            need = need.saturating_sub(pages[k].frames);
        }
    }
    Moves { hot_frames, promote, demote }
}

/// Pool mode (§4.4): the DRAM a VM holds next, in base pages: `pool_hot_fraction` of
/// its `counted` pages (degree at least `pool_min_degree`), kept within
/// `pool_min_share`..`pool_max_share` of its `initial` DRAM, and no more than the
/// fast tier's `fast_frames` minus what the `others` hold.
pub(super) fn pool_dram(counted: u64, initial: u64, others: u64, fast_frames: u64, s: &HmmVConfig) -> u64 {
    let want = (counted as f64 * s.pool_hot_fraction).ceil() as u64;
    let lo = (initial as f64 * s.pool_min_share) as u64;
    let hi = ((initial as f64 * s.pool_max_share) as u64).max(lo);
    want.clamp(lo, hi).min(fast_frames.saturating_sub(others))
}

impl<F: Flavor> HmmV<F> {
    /// Chooses the hot set of VM `i` and hands its moves to the migration threads.
    pub(super) fn classify_and_move(&mut self, i: usize, mech: &mut Mechanisms) {
        let t = self.vms[i].tenant;
        let mut pages: Vec<(PageInfo, u64)> = Vec::new();
        mech.pages(Scope::Tenant(t), |p| pages.push((p, 0)));
        for (p, d) in &mut pages {
            *d = self.degree(p);
        }
        mech.compute(self.s.sort_cycles_per_page * pages.len() as u64);
        let cands: Vec<Candidate> = pages.iter().map(|(p, d)| Candidate { fast: p.tier == TierId::FAST, frames: p.base_pages(), degree: *d }).collect();
        let held: u64 = cands.iter().filter(|c| c.fast).map(|c| c.frames).sum();
        let tracked: u64 = cands.iter().filter(|c| c.degree > 0).map(|c| c.frames).sum();
        // The DRAM this VM may hold this round.
        let mut dram = self.vms[i].dram;
        if self.s.mode == Mode::Pool {
            let counted: u64 = cands.iter().filter(|c| c.degree >= self.s.pool_min_degree).map(|c| c.frames).sum();
            let others: u64 = self.vms.iter().filter(|v| v.tenant != t).map(|v| v.dram).sum();
            dram = pool_dram(counted, self.vms[i].initial_dram, others, self.fast_frames, &self.s);
            self.vms[i].dram = dram;
            mech.set_fast_quota(t, Some(dram));
        }
        let free = mech.free_frames(TierId::FAST);
        let Moves { hot_frames, promote, demote } = plan_moves(&cands, self.max_degree(), dram, free, self.s.classifier, self.s.fixed_threshold);
        let r = &mut self.vms[i].round;
        r.tracked_frames = tracked;
        r.hot_frames = hot_frames;
        r.dram_frames_before = held;
        r.dram_frames_allowed = dram;
        r.promoted_pages = promote.len() as u64;
        r.demoted_pages = demote.len() as u64;
        let moved: u64 = promote.iter().chain(&demote).map(|&k| pages[k].0.bytes).sum();
        r.migrated_mb = moved as f64 / 1e6;
        let migrated_mb = r.migrated_mb;
        let v = &mut self.vms[i];
        round_done(&mut v.counter, migrated_mb, &self.s);
        v.round.counter_after = v.counter;
        let downs: Vec<(PageRef, u64)> = demote.iter().map(|&k| (pages[k].0.at(), pages[k].0.base_pages())).collect();
        let ups: Vec<(PageRef, u64)> = promote.iter().map(|&k| (pages[k].0.at(), pages[k].0.base_pages())).collect();
        let jobs = if self.s.migrate { self.dispatch(t, &downs, &ups, mech) } else { 0 };
        let end_s = self.secs(mech.now());
        let v = &mut self.vms[i];
        if jobs == 0 {
            v.round.end_s = end_s;
            self.rounds.push(v.round.clone());
            v.state = State::Idle;
        } else {
            v.state = State::Migrating { jobs };
        }
    }

    /// Hands the moves to the migration threads, demotions of a share before its
    /// promotions; returns the jobs submitted.
    fn dispatch(&self, t: u16, downs: &[(PageRef, u64)], ups: &[(PageRef, u64)], mech: &mut Mechanisms) -> u32 {
        let threads = if self.s.migration == MoveHow::Linux { 1 } else { self.s.migration_threads.max(1) as usize };
        let mut jobs: Vec<Job> = (0..threads).map(|_| Job::new(MIGRATE | t as u64)).collect();
        match self.s.migration {
            MoveHow::Pml => {
                // Batches of at most `pages_in_flight` base pages' worth (a huge page
                // counts its base pages; a batch holds at least one page).
                let limit = self.s.pages_in_flight.max(1) as u64;
                let batches = |list: &[(PageRef, u64)]| {
                    let mut out: Vec<Vec<PageRef>> = Vec::new();
                    let mut frames = limit;
                    for &(p, n) in list {
                        if frames + n > limit {
                            out.push(Vec::new());
                            frames = 0;
                        }
                        out.last_mut().expect("pushed").push(p);
                        frames += n;
                    }
                    out
                };
                let (db, ub) = (batches(downs), batches(ups));
                for c in 0..db.len().max(ub.len()) {
                    let job = &mut jobs[c % threads];
                    for (list, to) in [(db.get(c), TierId::SLOW), (ub.get(c), TierId::FAST)] {
                        if let Some(list) = list {
                            let batch = mech.plan_pml_batch(list.iter().map(|&p| (p, to)).collect());
                            job.push(Op::MoveBatch { batch });
                        }
                    }
                }
            }
            how => {
                for k in 0..downs.len().max(ups.len()) {
                    let job = &mut jobs[k % threads];
                    if let Some(&(p, _)) = downs.get(k) {
                        job.push(Op::MoveAs { page: p, to: TierId::SLOW, how, colour: Colour::ANY });
                    }
                    if let Some(&(p, _)) = ups.get(k) {
                        job.push(Op::MoveAs { page: p, to: TierId::FAST, how, colour: Colour::ANY });
                    }
                }
            }
        }
        let mut submitted = 0;
        for (k, job) in jobs.into_iter().enumerate() {
            if !job.is_empty() && mech.submit(ThreadId(1 + k as u16), job).is_ok() {
                submitted += 1;
            }
        }
        submitted
    }
}
