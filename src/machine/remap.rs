//! A hardware migration controller (MigC) with its ReMap table, beside the memory
//! controllers: the machine of subpage migration (Adavally et al., "Subpage
//! Migration in Heterogeneous Memory Systems", §2.2, §3, §4.1 and Appendix A; MigC
//! itself from Islam et al., JETC 2020).
//!
//! # ReMap table
//! A small fully associative table (1 024 entries, 10 cycles, §4.1 and Table 2),
//! looked up on every LLC miss and write-back with the physical address the OS and
//! the caches know (the *old* address). An entry names a unit of physical memory —
//! a huge page for SpAR and huge-page migration, a 64 KiB subpage for SpRM — its
//! *new* location, a bit vector of the subpages already moved there, and a Pair
//! flag (here: the index of the paired entry) when the move was a swap with a cold
//! fast page, whose entry then maps the cold page's old address to the hot page's
//! old frame (Appendix A.1). A reference to a moved subpage is served from the new
//! frame; the caches never see the new address, so nothing in them changes when a
//! subpage moves.
//!
//! # On-the-fly migration (Appendix A.1)
//! MigC moves data through its hot and cold buffers: it reads the subpages (the hot
//! one from the slow tier and, for a swap, the cold one from the fast tier) into
//! its buffers, then writes each to its new frame. Its reads and writes are
//! background traffic on the tiers' channels, issued one after another on MigC's own
//! clock with `mig_queue_entries` lines in flight per channel (Table 1: 32-entry
//! migration queues per controller). MigC runs one migration at a time: a migration
//! triggered while it is busy starts when it is free. Requests for a subpage being
//! moved wait in MigC's wait queue until its data is in the buffers and are served
//! from them (§2.2); the core that triggered the move is not stalled beyond what its
//! own requests wait.
//!
//! The table is updated when the migration is decided, and the move's window (MigC
//! starts, buffers full, writes done) is kept with the entry: a request for a moving
//! subpage that arrives before MigC starts on it is served from where the data was;
//! one that arrives before the writes are done is served from the buffers, waiting
//! in the wait queue until they are full. (`--verify`'s shadow memory follows the
//! data to its final frame when the move is decided: a store served from the old
//! place before MigC starts is one MigC's reads then carry along.)
//!
//! # Address reconciliation (Appendix A.2)
//! [`Machine::reconcile`] makes a move visible to the OS, on the core that runs it:
//! MigC moves any subpages still in the old place (the page is reconciled whole),
//! the pages' lines are invalidated in every cache, one per cycle as MigC sends them
//! (dirty ones written back through the table),
//! their PTEs rewritten (a page walk of `walk_cycles` plus the PTE write), their
//! translations shot down on every core, the OS's reverse mapping paid
//! (`reverse_map_cycles`); a paired entry is reconciled with its pair.
//!
//! # Reverse migration (SpRM, §3)
//! [`Machine::reverse_migrate`] moves a subpage back to its old frame and drops its
//! entry once the copy is done: no OS involvement. SpRM's subpages live in a swap
//! area of fast huge frames reserved when the machine is built.

use super::core::Core;
use super::events::{MemEvent, MemKind, Observer};
use super::memory::{Tiers, MAX_IN_FLIGHT};
use super::ops::{Exec, Move, MoveCount, MoveKind, Plan, Shootdown, Source};
use super::redirect::{Layout, Redirect};
use super::rmap::Owner;
use super::space::Space;
use super::tlb::TlbConfig;
use super::{Colour, Machine, MechError, PageRef, TierId};
use serde::Serialize;

/// No entry.
const NONE: u32 = u32::MAX;

/// What a policy asks of the migration controller.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct RemapSpec {
    /// Entries of the ReMap table (§4.1: 1 024, fully associative).
    pub entries: usize,
    /// Cycles of a lookup, added to every LLC miss (Table 2: 10 cycles after the LLC).
    pub lookup_cycles: u64,
    /// Base frames one entry covers: 0 = a huge page (SpAR, huge-page migration);
    /// SpRM's entries are subpages (16 frames of 64 KiB).
    pub entry_frames: u64,
    /// Base frames one migration moves (one bit of the entry's vector): 16 = a 64 KiB
    /// subpage (§4.1); 0 = the whole entry.
    pub unit_frames: u64,
    /// Migration-queue entries per memory controller (Table 1: 32): the lines MigC
    /// keeps in flight on each channel of a tier.
    pub mig_queue_entries: u32,
    /// Share of the fast tier reserved as SpRM's swap area, rounded up to whole
    /// huge pages (0 = none).
    pub swap_area_share: f64,
    /// Cycles of the page walk that finds a PTE to rewrite at reconciliation (Table 2: 150).
    pub walk_cycles: u64,
    /// Cycles of the OS's reverse mapping per page reconciled (Table 2: 4 480,
    /// measured with ftrace at 3.2 GHz).
    pub reverse_map_cycles: u64,
    /// Cycles per cache line invalidated at reconciliation: MigC sends the LLC one
    /// invalidation per cycle (the authors' Ramulator model, `send_invalidate` once
    /// per MigC cycle); dirty lines are written back.
    pub invalidate_cycles_per_line: u64,
}

impl Default for RemapSpec {
    fn default() -> Self {
        RemapSpec {
            entries: 1024,
            lookup_cycles: 10,
            entry_frames: 0,
            unit_frames: 16,
            mig_queue_entries: 32,
            swap_area_share: 0.0,
            walk_cycles: 150,
            reverse_map_cycles: 4480,
            invalidate_cycles_per_line: 1,
        }
    }
}

/// The last move of an entry's subpages: which, when MigC's buffers held them and
/// when their writes were done.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Window {
    pub mask: u64,
    pub started: u64,
    pub buffered: u64,
    pub done: u64,
}

/// One ReMap-table entry.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Entry {
    /// First frame of the unit, as the OS knows it.
    pub old: u64,
    /// First frame of where its moved subpages live.
    pub new: u64,
    /// Bit i: subpage i lives at `new`.
    pub migrated: u64,
    /// The paired entry of a swap (`None` for a one-way move).
    pub pair: Option<u32>,
    /// Being moved back (SpRM): dropped once `window.done` has passed.
    pub returning: bool,
    /// Cycle the entry was made.
    pub created: u64,
    pub window: Window,
    valid: bool,
}

/// Where an on-the-fly migration puts a unit that has no entry yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dest {
    /// A free fast frame of the entry's size (one-way).
    Free,
    /// Swapped with the cold fast page holding this frame (two-way, Pair set).
    Swap(u64),
    /// A slot of SpRM's swap area.
    SwapArea,
}

/// What an on-the-fly migration did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved {
    /// Entries it made (0, 1, or 2 for a new pair).
    pub new_entries: u32,
    /// MigC's clock when it started, and when its writes were done.
    pub started: u64,
    pub done: u64,
    /// It was a swap with a cold page.
    pub swapped: bool,
}

/// Counters of the migration controller.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RemapStats {
    /// Bytes one migration moves (the granularity).
    pub unit_bytes: u64,
    /// Table lookups (LLC misses and write-backs), and those sent to a new frame.
    pub lookups: u64,
    pub redirected: u64,
    /// Requests served from MigC's buffers, those of them that waited in the wait
    /// queue, and the cycles they waited.
    pub buffer_served: u64,
    pub wait_queue_stalls: u64,
    pub wait_queue_cycles: u64,
    /// Units moved slow → fast on the fly, and fast → slow as the cold half of a swap.
    pub promoted: MoveCount,
    pub demoted: MoveCount,
    /// Units moved at reconciliation to complete a page (SpAR).
    pub completed: MoveCount,
    /// Units moved back to their old frames (SpRM), counted both ways for pairs.
    pub reversed: MoveCount,
    /// Reconciliations (a pair counts once), pages reconciled, and the cycles the
    /// cores running them spent.
    pub reconciliations: u64,
    pub reconciled_pages: u64,
    pub reconcile_cycles: u64,
    /// Cycles MigC was busy, and the longest a move waited for MigC to be free.
    pub migc_busy_cycles: u64,
    pub migc_max_wait_cycles: u64,
    /// Most entries in use at once.
    pub peak_entries: u64,
}

/// The ReMap table and MigC's clock; see the module documentation.
pub struct Remap {
    pub spec: RemapSpec,
    entry_shift: u32,
    unit_shift: u32,
    /// Bits of an entry's vector: one per unit.
    full_mask: u64,
    /// Per entry-sized unit of physical memory: its entry, or `NONE`.
    index: Vec<u32>,
    table: Vec<Entry>,
    free: Vec<u32>,
    used: usize,
    /// Free slots of the swap area (first frames), lowest last.
    swap_free: Vec<u64>,
    swap_slots: u64,
    /// MigC's clock: when it is free.
    pub clock: u64,
    pub stats: RemapStats,
}

impl Remap {
    /// Base frames one entry covers.
    pub fn entry_frames(&self) -> u64 {
        1 << self.entry_shift
    }

    /// Base frames one migration moves.
    pub fn unit_frames(&self) -> u64 {
        1 << self.unit_shift
    }

    /// Entries in use, and the table's size.
    pub fn occupancy(&self) -> usize {
        self.used
    }

    pub fn capacity(&self) -> usize {
        self.spec.entries
    }

    /// Slots of the swap area, and those free.
    pub fn swap_slots(&self) -> (u64, u64) {
        (self.swap_slots, self.swap_free.len() as u64)
    }

    /// The entry covering frame `pfn` (an OS-visible frame), by index.
    #[inline]
    pub fn entry_of(&self, pfn: u64) -> Option<u32> {
        match self.index.get((pfn >> self.entry_shift) as usize) {
            Some(&s) if s != NONE => Some(s),
            _ => None,
        }
    }

    pub fn entry(&self, slot: u32) -> &Entry {
        &self.table[slot as usize]
    }

    /// Every entry in use, with its index.
    pub fn entries(&self) -> impl Iterator<Item = (u32, &Entry)> + '_ {
        self.table.iter().enumerate().filter(|(_, e)| e.valid).map(|(i, e)| (i as u32, e))
    }

    /// The bit of frame `pfn` in the vector of the entry starting at `old`.
    #[inline]
    fn bit(&self, pfn: u64, old: u64) -> u64 {
        1 << ((pfn - old) >> self.unit_shift)
    }

    /// Bits of the units of `mask`'s entry, as (offset in frames, bit).
    fn units(&self, mask: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let n = self.entry_frames() >> self.unit_shift;
        (0..n).map(move |i| (i << self.unit_shift, 1u64 << i)).filter(move |&(_, b)| mask & b != 0)
    }

    /// MigC's copies (from, to, frames) for the units of `e` in `mask`: old → new
    /// (new → old when `back`), and the other way too for a pair's swapped unit.
    fn unit_moves(&self, e: &Entry, mask: u64, back: bool) -> Vec<(u64, u64, u64)> {
        let n = self.unit_frames();
        let (src, dst) = if back { (e.new, e.old) } else { (e.old, e.new) };
        let mut moves = Vec::new();
        for (off, _) in self.units(mask) {
            moves.push((src + off, dst + off, n));
            if e.pair.is_some() {
                moves.push((dst + off, src + off, n));
            }
        }
        moves
    }

    fn insert(&mut self, old: u64, new: u64, now: u64) -> u32 {
        let slot = self.free.pop().expect("caller checked room");
        self.table[slot as usize] = Entry { old, new, migrated: 0, pair: None, returning: false, created: now, window: Window::default(), valid: true };
        self.index[(old >> self.entry_shift) as usize] = slot;
        self.used += 1;
        self.stats.peak_entries = self.stats.peak_entries.max(self.used as u64);
        slot
    }

    fn remove(&mut self, slot: u32) {
        let e = &mut self.table[slot as usize];
        debug_assert!(e.valid);
        e.valid = false;
        self.index[(e.old >> self.entry_shift) as usize] = NONE;
        self.free.push(slot);
        self.used -= 1;
    }

    /// The frame serving a request for `paddr` (an OS-visible address), once moves in
    /// flight are done.
    #[inline]
    fn real(&self, slot: u32, paddr: u64) -> u64 {
        let e = &self.table[slot as usize];
        if e.migrated & self.bit(paddr >> 12, e.old) != 0 {
            (e.new << 12) + (paddr - (e.old << 12))
        } else {
            paddr
        }
    }

    /// A request for a unit that has an entry: from MigC's buffers while a move of its
    /// subpage is under way, else from wherever it lives.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn redirected<O: Observer>(&mut self, tiers: &mut Tiers, core: usize, slot: u32, paddr: u64, write: bool, kind: MemKind, at: u64, obs: &mut O) -> u64 {
        let e = self.table[slot as usize];
        let mut real = self.real(slot, paddr);
        let moving = e.window.mask & self.bit(paddr >> 12, e.old) != 0;
        if moving && at < e.window.started {
            // MigC has not started on it (it is busy with earlier moves): the data is
            // still where it was.
            real = if real == paddr { (e.new << 12) + (paddr - (e.old << 12)) } else { paddr };
        } else if moving && at < e.window.done {
            let wait = e.window.buffered.saturating_sub(at);
            self.stats.buffer_served += 1;
            if wait > 0 {
                self.stats.wait_queue_stalls += 1;
                self.stats.wait_queue_cycles += wait;
            }
            obs.on_memory_access(&MemEvent { core, paddr, tier: tiers.tier_of(real >> 12), write, kind, latency: wait });
            return wait;
        }
        self.stats.redirected += (real != paddr) as u64;
        tiers.access_as(core, paddr, real, write, kind, at, obs)
    }
}

impl Redirect for Remap {
    type Spec = RemapSpec;

    fn reserved_fast_huge_frames(spec: &RemapSpec, fast_bytes: u64, huge_bytes: u64) -> u64 {
        ((spec.swap_area_share * fast_bytes as f64) as u64).div_ceil(huge_bytes)
    }

    fn build(spec: &RemapSpec, layout: &Layout, _reserved: Vec<u64>, swap: Vec<u64>) -> anyhow::Result<Remap> {
        if layout.tiers.len() < 2 {
            anyhow::bail!("machine.tiers: a migration controller needs a fast and a slow tier");
        }
        let huge_frames = 1u64 << (layout.huge_shift - 12);
        let entry = if spec.entry_frames == 0 { huge_frames } else { spec.entry_frames };
        let unit = if spec.unit_frames == 0 { entry } else { spec.unit_frames };
        if !entry.is_power_of_two() || entry > huge_frames {
            anyhow::bail!("ReMap table: an entry must cover a power of two of frames up to a huge page ({huge_frames}), not {entry}");
        }
        if !unit.is_power_of_two() || unit > entry || entry / unit > 64 {
            anyhow::bail!("ReMap table: a migration unit of {unit} frames must be a power of two dividing the entry's {entry} frames into at most 64");
        }
        if spec.entries == 0 || spec.entries >= NONE as usize {
            anyhow::bail!("ReMap table: entries must be between 1 and {}", NONE - 1);
        }
        if spec.mig_queue_entries == 0 {
            anyhow::bail!("MigC: mig_queue_entries must be positive");
        }
        if !swap.is_empty() && entry != unit {
            anyhow::bail!("ReMap table: a swap area holds single units: an entry must be one unit ({entry} frames per entry, {unit} per unit)");
        }
        let end = layout.tiers.iter().map(|&(b, n)| b + n).max().unwrap_or(0);
        let entry_shift = entry.trailing_zeros();
        let mut swap_free: Vec<u64> = swap.iter().flat_map(|&h| (0..huge_frames / entry).map(move |i| h + i * entry)).collect();
        swap_free.sort_unstable_by(|a, b| b.cmp(a));
        let n = entry / unit;
        Ok(Remap {
            spec: *spec,
            entry_shift,
            unit_shift: unit.trailing_zeros(),
            full_mask: if n == 64 { u64::MAX } else { (1 << n) - 1 },
            index: vec![NONE; (end >> entry_shift) as usize + 1],
            table: vec![Entry { old: 0, new: 0, migrated: 0, pair: None, returning: false, created: 0, window: Window::default(), valid: false }; spec.entries],
            free: (0..spec.entries as u32).rev().collect(),
            used: 0,
            swap_slots: swap_free.len() as u64,
            swap_free,
            clock: 0,
            stats: RemapStats { unit_bytes: unit << 12, ..RemapStats::default() },
        })
    }

    #[inline]
    fn memory<O: Observer>(&mut self, tiers: &mut Tiers, core: usize, paddr: u64, write: bool, kind: MemKind, at: u64, background: bool, obs: &mut O) -> u64 {
        let slot = match self.index.get((paddr >> 12 >> self.entry_shift) as usize) {
            Some(&s) => s,
            None => NONE,
        };
        if background {
            // A mechanism's line (a flushed line written back): MigC sends it to
            // where the data lives; no request of a core waits for the lookup.
            let real = if slot == NONE { paddr } else { self.real(slot, paddr) };
            return tiers.background(real, write, at);
        }
        self.stats.lookups += 1;
        let look = self.spec.lookup_cycles;
        look + if slot == NONE {
            tiers.access(core, paddr, write, kind, at + look, obs)
        } else {
            self.redirected(tiers, core, slot, paddr, write, kind, at + look, obs)
        }
    }

    fn served(&self, pfn: u64) -> u64 {
        match self.entry_of(pfn) {
            Some(s) => self.real(s, pfn << 12) >> 12,
            None => pfn,
        }
    }

    fn check(&self, space: &Space) -> Result<(), String> {
        let mut targets = std::collections::BTreeSet::new();
        for (slot, e) in self.entries() {
            if self.entry_of(e.old) != Some(slot) {
                return Err(format!("ReMap entry {slot} (old frame {:#x}) is not indexed", e.old));
            }
            if e.migrated & !self.full_mask != 0 {
                return Err(format!("ReMap entry {slot}: subpage bits {:#x} beyond the entry", e.migrated));
            }
            if !targets.insert(e.new) {
                return Err(format!("ReMap entry {slot}: new frame {:#x} is the target of two entries", e.new));
            }
            match e.pair {
                Some(p) => {
                    let q = self.entry(p);
                    if !q.valid || q.pair != Some(slot) || q.old != e.new || q.new != e.old || q.migrated != e.migrated {
                        return Err(format!("ReMap entries {slot} and {p}: pair does not mirror ({e:?} / {q:?})"));
                    }
                }
                None => {
                    if space.tier_of(e.new) != TierId::FAST {
                        return Err(format!("ReMap entry {slot}: one-way target {:#x} is not in the fast tier", e.new));
                    }
                    for i in 0..self.entry_frames() {
                        let want = match space.owner(e.old + i) {
                            Owner::Data { tenant, addr } => Owner::Copy { tenant, addr },
                            other => other,
                        };
                        let got = space.owner(e.new + i);
                        if got != want && got != Owner::Metadata {
                            return Err(format!("ReMap entry {slot}: frame {:#x} owned by {got:?}, expected {want:?}", e.new + i));
                        }
                    }
                }
            }
        }
        for (pfn, owner) in space.reverse_map().iter() {
            if matches!(owner, Owner::Copy { .. }) && !self.entries().any(|(_, e)| (e.new..e.new + self.entry_frames()).contains(&pfn)) {
                return Err(format!("frame {pfn:#x} is held for a migration but no ReMap entry names it"));
            }
        }
        Ok(())
    }

    fn report(&self, _cores: &[Core], _tlb: &TlbConfig, _core_tenants: &[u16]) -> Vec<(&'static str, serde_json::Value)> {
        let mut v = serde_json::to_value(&self.stats).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("entries".into(), self.spec.entries.into());
            o.insert("entries_at_end".into(), (self.used as u64).into());
            o.insert("lookup_cycles".into(), self.spec.lookup_cycles.into());
            o.insert("swap_area_slots".into(), self.swap_slots.into());
        }
        vec![("remap", v)]
    }
}

impl Machine<Remap> {
    /// MigC streams `frames` frames from `first` (reads into its buffers, or writes
    /// from them) starting at `at`, `mig_queue_entries` lines in flight per channel
    /// of the tier. Returns when the last line is done.
    fn migc_stream(&mut self, first: u64, frames: u64, write: bool, at: u64) -> u64 {
        let (t, local) = self.mem.tiers.local(first << 12);
        let tier = self.mem.tiers.get_mut(t);
        let channels = 1usize << tier.channel_bits().len();
        let k = (self.redirect.spec.mig_queue_entries as usize * channels).clamp(1, MAX_IN_FLIGHT);
        tier.start_stream(write);
        let mut slots = [at; MAX_IN_FLIGHT];
        let mut done = at;
        for i in 0..(frames << 6) as usize {
            let end = tier.stream_line(local + ((i as u64) << 6), write, slots[i % k]);
            slots[i % k] = end;
            done = done.max(end);
        }
        done
    }

    /// One MigC migration of `moves` (from, to, frames): every source read into the
    /// buffers, then every buffer written, from when MigC is free and `trigger` has
    /// come. Returns its window (without a mask).
    fn migc_copy(&mut self, trigger: u64, moves: &[(u64, u64, u64)]) -> Window {
        let started = trigger.max(self.redirect.clock);
        let mut buffered = started;
        for &(from, _, frames) in moves {
            buffered = buffered.max(self.migc_stream(from, frames, false, started));
        }
        let mut done = buffered;
        for &(_, to, frames) in moves {
            done = done.max(self.migc_stream(to, frames, true, buffered));
        }
        #[cfg(test)]
        let skip = self.break_migration_copy;
        #[cfg(not(test))]
        let skip = false;
        if let (Some(s), false) = (&mut self.shadow, skip) {
            s.copied(moves);
        }
        let r = &mut self.redirect;
        r.stats.migc_busy_cycles += done - started;
        r.stats.migc_max_wait_cycles = r.stats.migc_max_wait_cycles.max(started - trigger);
        r.clock = done;
        for &(from, to, frames) in moves {
            let (a, b) = (self.space.tier_of(from), self.space.tier_of(to));
            if a != b {
                self.stats.pages_between[a.index()][b.index()] += 1;
                self.stats.bytes_between += frames << 12;
            }
            self.stats.onfly.pages += 1;
            self.stats.onfly.bytes += frames << 12;
        }
        Window { mask: 0, started, buffered, done }
    }

    /// The huge page mapped at frame `old` if it is one whole huge page there.
    fn huge_page_at(&self, old: u64) -> Result<PageRef, MechError> {
        let Owner::Data { tenant, addr } = self.space.owner(old) else {
            return Err(MechError::NotRemappable { pfn: old });
        };
        let page = PageRef::new(tenant, addr);
        let m = self.mapped(page)?;
        if !m.huge || m.pfn() != old {
            return Err(MechError::NotHuge { page });
        }
        Ok(PageRef::new(tenant, m.addr))
    }

    /// Drops entries whose move back (SpRM) is done by `now`, freeing their targets.
    pub(crate) fn remap_purge(&mut self, now: u64) {
        let done: Vec<u32> = self.redirect.entries().filter(|(_, e)| e.returning && e.window.done <= now).map(|(s, _)| s).collect();
        for s in done {
            let e = *self.redirect.entry(s);
            self.redirect.remove(s);
            if e.pair.is_some() {
                continue;
            }
            self.release_target(e.new);
        }
    }

    /// Gives back the frames of a one-way entry's target: a swap-area slot, or the
    /// fast frames allocated for it.
    fn release_target(&mut self, new: u64) {
        let n = self.redirect.entry_frames();
        if self.space.owner(new) == Owner::Metadata {
            self.redirect.swap_free.push(new);
        } else {
            self.space.release(new, n);
            if let Some(s) = &mut self.shadow {
                s.freed(new, n);
            }
        }
    }

    /// Moves the unit holding OS-visible slow frame `hot` into the fast tier on the
    /// fly, at cycle `trigger`: into its entry's target if it has one, else to `dest`.
    pub(crate) fn otf_migrate(&mut self, trigger: u64, hot: u64, dest: Dest) -> Result<Moved, MechError> {
        self.remap_purge(trigger);
        if self.space.tier_of(hot) != TierId::SLOW {
            return Err(MechError::NotRemappable { pfn: hot });
        }
        let ef = self.redirect.entry_frames();
        let old = hot & !(ef - 1);
        let bit = {
            let r = &self.redirect;
            let b = r.bit(hot, old);
            if r.unit_frames() == ef {
                r.full_mask
            } else {
                b
            }
        };
        let whole_pages = ef == self.space.huge_frames();
        let mut new_entries = 0;
        let slot = match self.redirect.entry_of(old) {
            Some(s) => {
                let e = self.redirect.entry(s);
                if e.returning {
                    return Err(MechError::RemapBusy { pfn: old });
                }
                if e.migrated & bit == bit {
                    return Err(MechError::AlreadyMoved { pfn: hot });
                }
                s
            }
            None => {
                let tenant_addr = match self.space.owner(old) {
                    Owner::Data { tenant, addr } => (tenant, addr),
                    _ => return Err(MechError::NotRemappable { pfn: old }),
                };
                if whole_pages {
                    self.huge_page_at(old)?;
                }
                let r = &self.redirect;
                let room = r.spec.entries - r.used;
                match dest {
                    Dest::Free => {
                        if !whole_pages {
                            // A free frame of an entry's size is a huge frame.
                            return Err(MechError::NotRemappable { pfn: old });
                        }
                        if room < 1 {
                            return Err(MechError::RemapFull);
                        }
                        let new = self.space.alloc(TierId::FAST, whole_pages, Colour::ANY)?;
                        self.space.set_owners(new, ef, PageRef::new(tenant_addr.0, tenant_addr.1), true);
                        new_entries = 1;
                        self.redirect.insert(old, new, trigger)
                    }
                    Dest::SwapArea => {
                        if room < 1 {
                            return Err(MechError::RemapFull);
                        }
                        let Some(new) = self.redirect.swap_free.pop() else {
                            return Err(MechError::NoFreeFrame { tier: TierId::FAST, huge: false });
                        };
                        new_entries = 1;
                        self.redirect.insert(old, new, trigger)
                    }
                    Dest::Swap(victim) => {
                        if room < 2 {
                            return Err(MechError::RemapFull);
                        }
                        let cold = victim & !(ef - 1);
                        if self.space.tier_of(cold) != TierId::FAST || self.redirect.entry_of(cold).is_some() {
                            return Err(MechError::NotRemappable { pfn: cold });
                        }
                        if !matches!(self.space.owner(cold), Owner::Data { .. }) {
                            return Err(MechError::NotRemappable { pfn: cold });
                        }
                        if whole_pages {
                            self.huge_page_at(cold)?;
                        }
                        let a = self.redirect.insert(old, cold, trigger);
                        let b = self.redirect.insert(cold, old, trigger);
                        self.redirect.table[a as usize].pair = Some(b);
                        self.redirect.table[b as usize].pair = Some(a);
                        new_entries = 2;
                        a
                    }
                }
            }
        };
        let e = *self.redirect.entry(slot);
        let todo = bit & !e.migrated;
        let moves = self.redirect.unit_moves(&e, todo, false);
        let mut w = self.migc_copy(trigger, &moves);
        w.mask = todo;
        for s in std::iter::once(slot).chain(e.pair) {
            let x = &mut self.redirect.table[s as usize];
            x.migrated |= todo;
            x.window = w;
        }
        let units = todo.count_ones() as u64;
        let bytes = units * (self.redirect.unit_frames() << 12);
        let st = &mut self.redirect.stats;
        st.promoted.pages += units;
        st.promoted.bytes += bytes;
        if e.pair.is_some() {
            st.demoted.pages += units;
            st.demoted.bytes += bytes;
        }
        Ok(Moved { new_entries, started: w.started, done: w.done, swapped: e.pair.is_some() })
    }

    /// Moves the unit of the entry covering `pfn` back to its old frame (SpRM's
    /// reverse migration; a pair swaps back), at cycle `trigger`; the entry is
    /// dropped once the copy is done. Returns when that is.
    pub(crate) fn reverse_migrate(&mut self, trigger: u64, pfn: u64) -> Result<u64, MechError> {
        self.remap_purge(trigger);
        let slot = self.redirect.entry_of(pfn).ok_or(MechError::NotRemapped { pfn })?;
        let e = *self.redirect.entry(slot);
        if e.returning {
            return Err(MechError::RemapBusy { pfn });
        }
        let moves = self.redirect.unit_moves(&e, e.migrated, true);
        let mut w = self.migc_copy(trigger, &moves);
        w.mask = e.migrated;
        let units = e.migrated.count_ones() as u64 * (1 + e.pair.is_some() as u64);
        for s in std::iter::once(slot).chain(e.pair) {
            let x = &mut self.redirect.table[s as usize];
            x.migrated = 0;
            x.returning = true;
            x.window = w;
        }
        let bytes = units * (self.redirect.unit_frames() << 12);
        let st = &mut self.redirect.stats;
        st.reversed.pages += units;
        st.reversed.bytes += bytes;
        Ok(w.done)
    }

    /// Address reconciliation of the entry covering `pfn` (and its pair) on executor
    /// `x` (Appendix A.2): MigC completes the page, then the lines are flushed, the
    /// PTEs rewritten, the translations shot down and the reverse mapping paid, and
    /// the entries dropped.
    pub(crate) fn reconcile(&mut self, x: &mut Exec, pfn: u64) -> Result<(), MechError> {
        self.remap_purge(x.at);
        let begin = x.at;
        let slot = self.redirect.entry_of(pfn).ok_or(MechError::NotRemapped { pfn })?;
        let e = *self.redirect.entry(slot);
        if e.returning {
            return Err(MechError::RemapBusy { pfn });
        }
        let page = self.huge_page_at(e.old)?;
        let pair_page = match e.pair {
            Some(_) => Some(self.huge_page_at(e.new)?),
            None => None,
        };
        let missing = self.redirect.full_mask & !e.migrated;
        if missing != 0 {
            let moves = self.redirect.unit_moves(&e, missing, false);
            let w = self.migc_copy(x.at, &moves);
            let units = missing.count_ones() as u64 * (1 + e.pair.is_some() as u64);
            let bytes = units * (self.redirect.unit_frames() << 12);
            let st = &mut self.redirect.stats;
            st.completed.pages += units;
            st.completed.bytes += bytes;
            x.at = x.at.max(w.done);
            for s in std::iter::once(slot).chain(e.pair) {
                self.redirect.table[s as usize].migrated = self.redirect.full_mask;
            }
        }
        // The OS waits for moves still in flight.
        x.at = x.at.max(e.window.done);
        let ef = self.redirect.entry_frames();
        let software = self.redirect.spec.walk_cycles + self.redirect.spec.reverse_map_cycles;
        let mut moves = Vec::new();
        let mut shootdowns = Vec::new();
        for (p, from, to) in std::iter::once((page, e.old, e.new)).chain(pair_page.map(|q| (q, e.new, e.old))) {
            let slot = self.mapped(p)?.slot;
            #[cfg(test)]
            let slot = if self.break_reconcile_pte { usize::MAX } else { slot };
            let source = if e.pair.is_some() { Source::Reused } else { Source::Free };
            moves.push(Move { page: p, slot: (slot != usize::MAX).then_some(slot), from, to, frames: ef, flush: false, copy: false, to_is_copy: false, source, count: true });
            shootdowns.push(Shootdown::Page { page: p, huge: true });
        }
        let pages = moves.len() as u64;
        let plan = Plan { kind: MoveKind::Migrate, moves, merge: None, shootdowns, software: software * pages };
        // The lines are invalidated (MigC through the LLC, dirty ones written back)
        // while the entries still redirect their write-backs.
        let per_line = self.redirect.spec.invalidate_cycles_per_line;
        for m in &plan.moves {
            let (done, lines) = self.mem.flush(&mut self.redirect, m.from << 12, m.frames << 12, x.at, per_line);
            x.at = done;
            self.stats.lines_flushed += lines;
        }
        self.commit(x, plan);
        for s in std::iter::once(slot).chain(e.pair) {
            self.redirect.remove(s);
        }
        let st = &mut self.redirect.stats;
        st.reconciliations += 1;
        st.reconciled_pages += pages;
        st.reconcile_cycles += x.at - begin;
        Ok(())
    }
}

