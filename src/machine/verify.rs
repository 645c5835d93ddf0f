//! `--verify`: shadow memory, and the machine's structural invariants.
//!
//! Shadow memory keeps the newest version of every base page (indexed by page
//! number) and the version every frame holds. A store bumps its page's version and
//! stores it in the frame that served it; a load must find the newest version in the
//! frame serving it, and that frame must belong to the page. Mechanisms copy versions
//! with the data and poison freed frames, so a skipped copy, a missing shootdown (a
//! stale TLB entry) or a frame reused too early is caught at the next read.

use super::page_table::HUGE;
use super::redirect::Redirect;
use super::rmap::Owner;
use super::{Machine, TierId};
use std::ops::ControlFlow;

/// Version stored in a freed frame: no page's newest version can match it.
const FREED: u32 = u32::MAX;

pub struct Shadow {
    /// Newest version of each base page, by page number.
    newest: Vec<u32>,
    /// Version held by each frame.
    frame: Vec<u32>,
    pub(crate) checked_reads: u64,
}

impl Shadow {
    pub fn new(frames: u64) -> Shadow {
        Shadow { newest: Vec::new(), frame: vec![0; frames as usize], checked_reads: 0 }
    }

    fn newest_mut(&mut self, page: u64) -> &mut u32 {
        if page as usize >= self.newest.len() {
            self.newest.resize(page as usize + 1, 0);
        }
        &mut self.newest[page as usize]
    }

    /// Base pages `first_page..` were just mapped to frames `pfn..`, `frames` of them.
    pub fn mapped(&mut self, first_page: u64, pfn: u64, frames: u64) {
        for i in 0..frames {
            let v = *self.newest_mut(first_page + i);
            self.frame[(pfn + i) as usize] = v;
        }
    }

    /// The data of frames `src..` was copied to frames `dst..`, for each pair in turn
    /// as if through a buffer (so a swap's two copies see each other's old data).
    pub fn copied(&mut self, moves: &[(u64, u64, u64)]) {
        let held: Vec<Vec<u32>> = moves.iter().map(|&(src, _, n)| self.frame[src as usize..(src + n) as usize].to_vec()).collect();
        for (&(_, dst, _), v) in moves.iter().zip(held) {
            self.frame[dst as usize..dst as usize + v.len()].copy_from_slice(&v);
        }
    }

    /// Frames `pfn..` were freed.
    pub fn freed(&mut self, pfn: u64, frames: u64) {
        self.frame[pfn as usize..(pfn + frames) as usize].fill(FREED);
    }
}

impl<R: Redirect> Machine<R> {
    /// `--verify`: a write makes frame `pfn` hold the page's new newest version; a read
    /// must find the newest version in the frame serving it (`pfn`), and the frame the
    /// page table maps (`mapped`) must belong to the page.
    #[cold]
    pub(super) fn check_shadow(&mut self, tenant: u16, vaddr: u64, mapped: u64, pfn: u64, write: bool) {
        let Some(addr) = self.space.managed_addr(tenant, vaddr) else { return };
        let page_addr = addr & !0xfff;
        let page = self.space.page_number(tenant, page_addr);
        // The OS's frame must belong to the page; the data must be where the
        // redirection structure serves it from (the same frame without one).
        let owner = self.space.owner(mapped);
        let s = self.shadow.as_mut().expect("verify mode");
        let newest = *s.newest_mut(page) + write as u32;
        if write {
            *s.newest_mut(page) = newest;
            s.frame[pfn as usize] = newest;
        } else {
            s.checked_reads += 1;
        }
        let held = s.frame[pfn as usize];
        let belongs = owner == Owner::Data { tenant, addr: page_addr } || owner == Owner::Copy { tenant, addr: page_addr };
        if (held != newest || !belongs) && self.error.is_none() {
            self.error = Some(format!(
                "verify: stale read of tenant {tenant} page {page_addr:#x} (vaddr {vaddr:#x}) from frame {pfn:#x}: frame holds version {}, newest is {newest}{}",
                if held == FREED { "<freed>".to_string() } else { held.to_string() },
                if belongs { String::new() } else { format!("; the frame belongs to {owner:?}") },
            ));
        }
    }

    /// Checks every structural invariant; returns a description of the first broken one.
    /// Every mapped page has frames owned by it, no frame is mapped twice or both
    /// mapped and free, tiers are within capacity, the redirection structure is
    /// consistent, no TLB holds a translation that differs from the page tables, and
    /// every paging-structure-cache entry names the table its page-table entry points
    /// to (for a VM's guest table, that table's host frame).
    pub fn check_invariants(&self) -> Result<(), String> {
        let space = &self.space;
        let alloc = space.allocator();
        let rmap = space.reverse_map();
        let mut seen = vec![false; rmap.frames() as usize];
        for (ti, t) in space.tenants().iter().enumerate() {
            let mut err = None;
            let mut per_tier = vec![0u64; space.tier_count()];
            t.table.for_each_leaf(0, u64::MAX, &mut |l| {
                let e = t.table.entry(l.slot);
                let n = if e & HUGE != 0 { space.huge_frames() } else { 1 };
                if let Some(tier) = alloc.tier_of(e >> 12) {
                    per_tier[tier.index()] += n;
                }
                for i in 0..n {
                    let pfn = (e >> 12) + i;
                    let want = Owner::Data { tenant: ti as u16, addr: l.addr + (i << 12) };
                    if pfn as usize >= seen.len() || seen[pfn as usize] {
                        err.get_or_insert(format!("frame {pfn:#x} mapped twice (tenant {ti}, {:#x})", l.addr));
                        continue;
                    }
                    seen[pfn as usize] = true;
                    if space.owner(pfn) != want {
                        err.get_or_insert(format!("frame {pfn:#x}: reverse map says {:?}, page table says {want:?}", space.owner(pfn)));
                    }
                    if alloc.is_free(pfn) {
                        err.get_or_insert(format!("frame {pfn:#x} is mapped but free in the allocator"));
                    }
                }
                ControlFlow::Continue(())
            });
            if let Some(e) = err {
                return Err(e);
            }
            if per_tier != t.frames_per_tier() {
                return Err(format!("tenant {ti}: frames mapped per tier {per_tier:?}, counters say {:?}", t.frames_per_tier()));
            }
        }
        for (pfn, owner) in rmap.iter() {
            if matches!(owner, Owner::Data { .. }) && !seen[pfn as usize] {
                return Err(format!("frame {pfn:#x} is owned in the reverse map but mapped by nobody (page lost)"));
            }
        }
        self.redirect.check(space)?;
        for t in TierId::first(space.tier_count()) {
            if alloc.free_frames(t) > alloc.frames(t) {
                return Err(format!("{t}: more free frames than capacity"));
            }
        }
        for (ci, c) in self.cores.iter().enumerate() {
            for (tenant, vaddr, e) in c.tlb.entries() {
                let expect = space.translate_quiet(tenant, vaddr);
                let got = e.base_pfn;
                let slot_ok = e.slot == super::tlb::NO_SLOT
                    || space.tenants()[tenant as usize].table.walk(vaddr, None).is_some_and(|l| l.slot == e.slot as usize);
                // A 4 KiB entry inside a huge mapping may name the frame the
                // redirection structure serves that base page from.
                let aliased = match expect {
                    Some((base, true)) if !e.huge => self.redirect.alias(base + ((vaddr >> 12) & (space.huge_frames() - 1))) == Some(got),
                    _ => false,
                };
                match expect {
                    _ if aliased => {}
                    Some((pfn, huge)) if pfn == got && huge == e.huge && slot_ok => {}
                    other => {
                        return Err(format!(
                            "core {ci}: stale TLB entry for tenant {tenant} vaddr {vaddr:#x}: TLB says frame {got:#x} (huge {}), page tables say {other:?}",
                            e.huge
                        ))
                    }
                }
            }
            for e in c.tlb.psc().map(|p| p.entries()).unwrap_or_default() {
                let t = &space.tenants()[e.tenant as usize];
                let now = match (&t.guest, e.guest) {
                    (_, false) => t.table.next_table(e.vaddr, e.level),
                    (Some(g), true) => g.table.next_table(e.vaddr, e.level).and_then(|gpfn| self.host_addr(e.tenant, gpfn << 12)).map(|hpa| hpa >> 12),
                    (None, true) => None,
                };
                if now != Some(e.next_frame) {
                    return Err(format!(
                        "core {ci}: stale paging-structure-cache entry of tenant {} ({}) at level {} for {:#x}: it says table frame {:#x}, the page tables say {now:?}",
                        e.tenant,
                        if e.guest { "guest table" } else { "managed table" },
                        e.level,
                        e.vaddr,
                        e.next_frame
                    ));
                }
            }
        }
        Ok(())
    }
}
