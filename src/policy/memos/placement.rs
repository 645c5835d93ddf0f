//! Placement (memos §5.3, §5.4, §7.2): a round's promotions and the demotions that
//! make their room, the colour (bank and LLC slab) of each destination frame from
//! the Bank_Freq_Table and Cache_Freq_Table, bandwidth balancing's steps, and the
//! moves between banks of one channel.

use super::classify::{rank_hotness, rank_victims, Forecast, Reuse};
use super::{Candidate, Memos, BALANCE, DEMOTE, ENGINE, MIGRATOR, PROMOTE, REBALANCE};
use crate::machine::hypervisor::MoveHow;
use crate::machine::{PageRef, TierId};
use crate::mechanism::{Job, Mechanisms, Op};

impl Memos {
    /// The slabs a page of class `reuse` may use (§5.3 (1)).
    fn slabs_for(&self, reuse: Reuse) -> Vec<usize> {
        let (t, r) = (self.cfg.thrash_slab as usize, self.cfg.rare_slab as usize);
        match reuse {
            Reuse::Thrashing => vec![t],
            Reuse::Rare => vec![r],
            Reuse::Frequent => (0..self.hierarchy.slabs()).filter(|&s| s != t && s != r).collect(),
        }
    }

    /// Algorithm 2 for one page: the colour of its destination frame in `tier`, and a
    /// frame number of that colour (for the tables), or `None` if `tier` is full.
    fn destination(&mut self, mech: &Mechanisms, tier: TierId, reuse: Reuse, bank: Option<usize>) -> Option<(crate::machine::Colour, u64)> {
        let h = &self.hierarchy;
        let slabs = h.slabs();
        let planned = &self.planned[tier.index()];
        // Frames of the colour free now, less those this round already took, plus
        // those its demotions will free.
        let free = |b: usize, s: usize| h.colour(tier, Some(b), Some(s)).is_some_and(|c| mech.free_frames_coloured(tier, c) as i64 > planned[b * slabs + s]);
        let allowed = self.slabs_for(reuse);
        let pick = match bank {
            None => h.choose(tier, &allowed, free).or_else(|| h.choose(tier, &(0..slabs).collect::<Vec<_>>(), free)),
            Some(b) => allowed.iter().copied().filter(|&s| free(b, s)).min_by_key(|&s| (h.slab_freq()[s], s)).map(|s| (b, s)),
        }?;
        self.planned[tier.index()][pick.0 * slabs + pick.1] += 1;
        let colour = self.hierarchy.colour(tier, Some(pick.0), Some(pick.1)).expect("a pair with a free frame exists");
        Some((colour, colour.value))
    }

    /// The tier-local frame number of frame `pfn` of `tier`.
    pub(super) fn local(&self, tier: TierId, pfn: u64) -> u64 {
        pfn - self.bases[tier.index()]
    }

    /// A page leaving tier-local frame `frame` of `tier` this round: its colour will
    /// have one more free frame.
    fn leaving(&mut self, tier: TierId, frame: u64) {
        let i = self.hierarchy.bank_of(tier, frame) * self.hierarchy.slabs() + self.hierarchy.slab_of(frame);
        self.planned[tier.index()][i] -= 1;
    }

    /// One bandwidth-balancing step: the hottest read-domain DRAM pages, then
    /// write-domain ones, to NVM.
    pub(super) fn balance(&mut self, mech: &mut Mechanisms) {
        let mut pages: Vec<Candidate> = self.in_fast.iter().filter(|c| c.hot).copied().collect();
        pages.sort_by_key(|c| (c.wd_now, std::cmp::Reverse(c.heat)));
        pages.truncate(self.cfg.balance_step_pages as usize);
        let moves = self.plan_moves(mech, &pages, TierId::SLOW);
        if moves.is_empty() {
            return;
        }
        self.stats.balance_steps += 1;
        self.stats.balanced_pages += moves.len() as u64;
        self.submit_demotions(mech, moves, BALANCE);
    }

    /// Destinations in `to` for `pages`, in order, as long as `to` has room.
    fn plan_moves(&mut self, mech: &Mechanisms, pages: &[Candidate], to: TierId) -> Vec<(PageRef, TierId, crate::machine::Colour)> {
        let mut out = Vec::with_capacity(pages.len());
        let mut room = mech.free_frames(to);
        for c in pages {
            if room == 0 {
                break;
            }
            let Some((colour, frame)) = self.destination(mech, to, c.reuse, None) else { break };
            let from_local = self.local(c.tier, c.pfn);
            self.leaving(c.tier, from_local);
            self.hierarchy.moved((c.tier, from_local), (to, frame), c.heat as u64, c.hot);
            out.push((c.page, to, colour));
            room -= 1;
        }
        out
    }

    fn submit_demotions(&mut self, mech: &mut Mechanisms, moves: Vec<(PageRef, TierId, crate::machine::Colour)>, tag: u64) {
        let pages = moves.iter().map(|m| m.0).collect();
        let mut job = Job::new(tag);
        let thread = if self.cfg.dma_demotions {
            let batch = mech.plan_dma_batch(moves);
            job.push(Op::MoveBatch { batch });
            ENGINE
        } else {
            for (page, to, colour) in moves {
                job.push(Op::MoveAs { page, to, how: MoveHow::Linux, colour });
            }
            MIGRATOR
        };
        if let Ok(id) = mech.submit(thread, job) {
            self.demoting.push((id, pages));
        }
    }

    /// A placement round (Fig. 10 steps 3–4).
    pub(super) fn round(&mut self, mech: &mut Mechanisms) {
        // Lazy (§6.3): a round whose predecessor's moves are still running waits for
        // the next one, so that no page is planned twice.
        let busy = |t| !mech.thread(t).is_ok_and(|s| s.idle);
        if busy(MIGRATOR) || busy(ENGINE) || !self.pending_promotions.is_empty() {
            self.stats.rounds_skipped += 1;
            return;
        }
        self.stats.rounds += 1;
        // The hotness list: WD_Freq_H, then WD_Freq_L, then hot read-domain pages
        // (not while DRAM is at its bandwidth bound); hotter first.
        let mut hl: Vec<Candidate> = std::mem::take(&mut self.want_fast);
        if self.dram_at_bound {
            hl.retain(|c| c.forecast != Forecast::UnWd);
        }
        rank_hotness(&mut hl);
        // Room: free DRAM frames, then cold DRAM pages (`rank_victims`).
        let free = mech.free_frames(TierId::FAST) as usize;
        let need = hl.len().saturating_sub(free);
        let mut victims: Vec<Candidate> = self.in_fast.iter().filter(|c| !c.hot && c.forecast != Forecast::WdFreqH).copied().collect();
        rank_victims(&mut victims);
        victims.truncate(need);
        let demotions = self.plan_moves(mech, &victims, TierId::SLOW);
        // Promotions are coloured now, against the tables as the demotions leave them;
        // they run once the demotions have made room.
        let mut promotions = Vec::with_capacity(hl.len());
        for c in hl.iter().take(free + demotions.len()) {
            let Some((colour, frame)) = self.destination(mech, TierId::FAST, c.reuse, None) else { break };
            let from_local = self.local(c.tier, c.pfn);
            self.leaving(c.tier, from_local);
            self.hierarchy.moved((c.tier, from_local), (TierId::FAST, frame), c.heat as u64, c.hot);
            promotions.push((c.page, colour));
        }
        // The hot NVM pages that stay, and the hot DRAM pages (victims are cold), may
        // move between banks of their channel.
        let staying = [hl.split_off(promotions.len()), self.in_fast.iter().filter(|c| c.hot).copied().collect()];
        self.pending_promotions = promotions;
        if demotions.is_empty() {
            self.submit_promotions(mech);
        } else {
            self.submit_demotions(mech, demotions, DEMOTE);
        }
        if self.cfg.rebalance_banks {
            self.plan_rebalance(mech, staying);
        }
    }

    pub(super) fn submit_promotions(&mut self, mech: &mut Mechanisms) {
        let promotions = std::mem::take(&mut self.pending_promotions);
        if promotions.is_empty() {
            return;
        }
        let mut job = Job::new(PROMOTE);
        for (page, colour) in promotions {
            job.push(Op::MoveAs { page, to: TierId::FAST, how: MoveHow::Linux, colour });
        }
        let _ = mech.submit(MIGRATOR, job);
    }

    /// §7.2: in each channel, hot pages of banks holding more than their share of
    /// active pages go to the least active banks.
    fn plan_rebalance(&mut self, mech: &mut Mechanisms, staying: [Vec<Candidate>; 2]) {
        for mut hot in staying {
            let Some(tier) = hot.first().map(|c| c.tier) else { continue };
            hot.retain(|c| c.hot && c.tier == tier);
            let mut count = self.hierarchy.bank_active(tier).to_vec();
            let mean = count.iter().sum::<u64>() as f64 / count.len() as f64;
            let over = mean * (1.0 + self.cfg.rebalance_slack);
            hot.sort_by_key(|c| (std::cmp::Reverse(c.heat), c.page.tenant, c.page.addr));
            let mut moved = 0;
            for c in hot {
                if moved >= self.cfg.rebalance_max_pages {
                    break;
                }
                let local = self.local(tier, c.pfn);
                let from = self.hierarchy.bank_of(tier, local);
                if (count[from] as f64) <= over {
                    continue;
                }
                let Some(to) = (0..count.len()).min_by_key(|&b| (count[b], b)) else { break };
                if count[to] as f64 + 1.0 > mean {
                    break;
                }
                let Some((colour, frame)) = self.destination(mech, tier, c.reuse, Some(to)) else { continue };
                self.leaving(tier, local);
                self.hierarchy.moved((tier, local), (tier, frame), c.heat as u64, true);
                count[from] -= 1;
                count[to] += 1;
                self.rebalance_queue.push((c.page, tier, colour));
                moved += 1;
            }
        }
        if !self.rebalance_queue.is_empty() {
            let mut job = Job::new(REBALANCE);
            job.push(Op::Run);
            let _ = mech.submit(MIGRATOR, job);
        }
    }
}
