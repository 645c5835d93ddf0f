//! What a policy may ask of the machine, each request charged its cost on the clock
//! of the executor that runs it.
//!
//! A policy never edits a page table, a TLB or a frame list: it calls a method of
//! [`Mechanisms`], which changes the machine and charges what the modelled system
//! would pay — cache flushes (clflush per line plus write-back of dirty lines), the
//! copy over both tiers' channels (so bandwidth and queueing are shared with demand
//! traffic), page-table reads and writes through the caches, TLB shootdowns on every
//! core, and fixed software costs from `machine.costs`.
//!
//! # Executors and time
//! Every `Mechanisms` is bound to one executor ([`Executor`]): an application core
//! (in `on_reference` and `on_epoch`, the core that triggered the hook) or a
//! background thread (in `on_job_done`). Its methods run *now*, on that executor's
//! clock, and return their result: each memory access starts when the previous one
//! has completed (a copy keeps a bounded number of lines in flight), so a scan is a
//! stream and a batch of moves costs the sum of its moves. On a core, the time stalls
//! the core; on a thread, it is the thread's busy time.
//!
//! Work that should run beside the application goes to a background thread as a
//! [`Job`] ([`Mechanisms::submit`]): the engine runs it step by step over simulated
//! time, interleaved with the cores, and hands back each operation's result in
//! `Policy::on_job_done`; pages a background scan visits arrive in
//! `Observer::on_scan`. A batch handed to a thread is paced by the thread's time;
//! the same batch run in `on_job_done` directly would happen at once on its clock,
//! so large batches belong in jobs.
//!
//! Pages are named by [`PageRef`] (tenant and any address inside the page of its
//! managed space: virtual for a process, guest-physical for a VM); tiers by
//! [`TierId`]. Reading the machine ([`Mechanisms::page`], [`Mechanisms::pages`],
//! [`Mechanisms::owner`]) is free: use it only for what the modelled system knows
//! without scanning (its own lists, counters' addresses); what an OS learns by
//! scanning page tables it learns with [`Mechanisms::scan`], which is charged.

mod background;
mod limits;

pub use crate::machine::{Colour, Direction, MechError, Owner, PageInfo, PageRef, TierId};
pub use background::{Job, JobDone, JobId, Op, ScanMode, Scope, ThreadId, ThreadKind, ThreadStats, ThreadStatus, Threads};
pub use limits::{Limits, RateLimit};
pub use crate::machine::hypervisor::{GptEntry, GptNode, MoveHow};
use crate::machine::hypervisor::BatchKind;

use crate::machine::cache::LINE_BYTES;
use crate::machine::copies::Copies;
use crate::machine::remap::{Dest, Moved, Remap};
use crate::machine::ops::Exec;
use crate::machine::{Machine, MachineInfo, NoRedirect, Redirect};
use std::ops::ControlFlow;

/// Leaf entries a foreground scan collects at a time (it runs to the end at once).
const FOREGROUND_SCAN_CHUNK: u64 = 4096;

/// The mechanism layer's state between calls: background threads and the limits in
/// force. The engine owns it beside the machine.
#[derive(Debug)]
pub struct Runtime {
    pub threads: Threads,
    pub limits: Limits,
}

impl Runtime {
    /// Background threads of the given kinds on a machine of `cores` cores.
    pub fn new(threads: &[ThreadKind], cores: usize) -> Runtime {
        Runtime { threads: Threads::new(threads, cores), limits: Limits::default() }
    }
}

/// Who runs a mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Executor {
    /// An application core, in the foreground: the core stalls.
    Core(usize),
    /// A background thread.
    Thread(ThreadId),
}

/// What a scan found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanSummary {
    /// Leaf entries visited.
    pub entries: u64,
    /// Of them, found Accessed (or Dirty).
    pub accessed: u64,
    /// Of them, cleared ([`ScanMode::Clear`]).
    pub cleared: u64,
}

/// What one window of NUMA hinting marks did ([`Mechanisms::mark_hinting`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HintWindow {
    /// Where the next window starts; `None` when this one reached the end of the
    /// address space (the next pass starts again from its beginning).
    pub next: Option<u64>,
    /// Pages marked.
    pub marked: u64,
    /// Leaf entries visited.
    pub leaves: u64,
}

/// Checks the limits for moving `page` to `to`; returns the direction and bytes to
/// count once the move is done.
fn limit_move<R: Redirect>(m: &Machine<R>, limits: &mut Limits, at: u64, page: PageRef, to: TierId) -> Result<(Direction, u64), MechError> {
    let info = m.space().page_info(page)?;
    let d = Direction::between(info.tier, to);
    limits.check(d, at)?;
    Ok((d, info.bytes))
}

/// Runs one operation other than a scan on executor `x`, within the limits.
pub(crate) fn run_op<R: Redirect>(m: &mut Machine<R>, limits: &mut Limits, x: &mut Exec, op: Op) -> Result<(), MechError> {
    match op {
        Op::Migrate { page, to } => {
            let (d, bytes) = limit_move(m, limits, x.at, page, to)?;
            m.migrate(x, page, to, Colour::ANY)?;
            limits.count(d, x.at, bytes);
            Ok(())
        }
        Op::Swap { a, b } | Op::Exchange { a, b } => {
            let tb = m.space().page_info(b)?.tier;
            let ta = m.space().page_info(a)?.tier;
            let (da, bytes) = limit_move(m, limits, x.at, a, tb)?;
            let (db, _) = limit_move(m, limits, x.at, b, ta)?;
            if matches!(op, Op::Exchange { .. }) {
                m.exchange_unmapped(x, a, b)?;
            } else {
                m.swap(x, a, b)?;
            }
            limits.count(da, x.at, bytes);
            limits.count(db, x.at, bytes);
            Ok(())
        }
        Op::Split { page } => m.split(x, page),
        Op::Merge { page, to } => {
            // A merge that copies moves the base pages not yet in `to`.
            let from = m.space().page_info(page)?.tier;
            let d = Direction::between(from, to);
            if from != to {
                limits.check(d, x.at)?;
            }
            m.merge(x, page, to)?;
            if from != to {
                limits.count(d, x.at, m.info().huge_page_bytes);
            }
            Ok(())
        }
        Op::Poison { page } => m.set_poison(x, page, true),
        Op::Unpoison { page } => m.set_poison(x, page, false),
        Op::MoveAs { page, to, how, colour } => {
            let (d, bytes) = limit_move(m, limits, x.at, page, to)?;
            m.move_as(x, page, to, how, colour)?;
            limits.count(d, x.at, bytes);
            Ok(())
        }
        Op::MoveBatch { batch } => loop {
            if let Some(r) = m.batch_step(x, batch, limits) {
                break r;
            }
        },
        Op::Run => Ok(()),
        Op::Scan { .. } | Op::Sleep { .. } => unreachable!("scans and sleeps run in steps"),
    }
}

/// The mechanism layer, handed to a policy for one decision, bound to one executor.
pub struct Mechanisms<'a, R: Redirect = NoRedirect> {
    m: &'a mut Machine<R>,
    rt: &'a mut Runtime,
    on: Executor,
    /// References the hook these mechanisms were handed to stands for (see
    /// [`Mechanisms::references`]).
    references: u64,
}

impl<'a, R: Redirect> Mechanisms<'a, R> {
    /// Mechanisms run by application core `core`, whose clock they advance.
    pub fn on_core(m: &'a mut Machine<R>, rt: &'a mut Runtime, core: usize) -> Mechanisms<'a, R> {
        Mechanisms { m, rt, on: Executor::Core(core), references: 1 }
    }

    /// Mechanisms of core `core` handed to `Policy::on_reference` for `references`
    /// references at once: epochs mode runs a stretch of references without
    /// simulating them one by one and calls the hook once for them.
    pub fn on_core_for(m: &'a mut Machine<R>, rt: &'a mut Runtime, core: usize, references: u64) -> Mechanisms<'a, R> {
        Mechanisms { m, rt, on: Executor::Core(core), references }
    }

    /// Mechanisms run by background thread `t`.
    pub fn on_thread(m: &'a mut Machine<R>, rt: &'a mut Runtime, t: ThreadId) -> Mechanisms<'a, R> {
        Mechanisms { m, rt, on: Executor::Thread(t), references: 0 }
    }

    /// In epochs mode's `Policy::on_reference` for a chunk of references: the
    /// chunk's events that PEBS-like counters count — loads served by the fast tier,
    /// loads served by a slower tier, stores — from the cost model. `None` for a
    /// reference simulated one by one, whose `RefOutcome` says what it did.
    pub fn chunk_events(&self) -> Option<[u64; crate::machine::epochs::SAMPLED_EVENTS]> {
        let Executor::Core(c) = self.on else { return None };
        self.m.epochs().and_then(|e| e.chunk_events[c])
    }

    /// In epochs mode, with [`Mechanisms::chunk_events`]: the physical address a PEBS
    /// record of an event of kind `kind` (0: fast-tier load, 1: slower-tier load, 2:
    /// store) of the chunk would carry, drawn from the pages' events of that kind.
    pub fn sample_event(&mut self, kind: usize) -> Option<u64> {
        let Executor::Core(c) = self.on else { return None };
        self.m.epochs_sample(c, kind)
    }

    /// In `Policy::on_reference`, the references the call stands for: 1 in detailed
    /// and sampled mode, the references of the stretch just run in epochs mode (which
    /// is what a policy counting references by its calls must add; the pacer of the
    /// monitor layer does). 1 on a core elsewhere, 0 on a background thread.
    pub fn references(&self) -> u64 {
        self.references
    }

    /// The executor these mechanisms run on.
    pub fn executor(&self) -> Executor {
        self.on
    }

    fn exec(&self) -> Exec {
        match self.on {
            Executor::Core(c) => Exec { core: c, at: self.m.cores[c].clock, in_flight: self.m.cfg().costs.cpu_copy_lines_in_flight, foreground: Some(c) },
            Executor::Thread(t) => self.rt.threads.exec(t.0 as usize, self.m),
        }
    }

    /// Charges the executor for the time from its clock to where `x` ended.
    fn finish(&mut self, x: &Exec) {
        match self.on {
            Executor::Core(c) => {
                let spent = x.at - self.m.cores[c].clock;
                self.m.cores[c].stall(spent);
                self.m.stats.cycles += spent;
            }
            Executor::Thread(t) => self.rt.threads.advance(t.0 as usize, x, self.m),
        }
    }

    /// Runs `f` on the executor's clock and charges the time it took.
    fn run<T>(&mut self, f: impl FnOnce(&mut Machine<R>, &mut Limits, &mut Exec) -> T) -> T {
        let mut x = self.exec();
        let out = f(self.m, &mut self.rt.limits, &mut x);
        self.finish(&x);
        out
    }

    /// The executor's clock. (Inlined: policies read it on every reference.)
    #[inline(always)]
    pub fn now(&self) -> u64 {
        match self.on {
            Executor::Core(c) => self.m.cores[c].clock,
            Executor::Thread(_) => self.exec().at,
        }
    }

    /// Static facts about the machine.
    pub fn info(&self) -> &MachineInfo {
        self.m.info()
    }

    /// Whether `tenant` is a VM (has a guest page table and an EPT).
    pub fn is_vm(&self, tenant: u16) -> bool {
        self.m.is_vm(tenant)
    }

    /// Tenants of the run (numbered from 0).
    pub fn tenants(&self) -> u16 {
        self.m.space().tenants().len() as u16
    }

    pub fn free_frames(&self, tier: TierId) -> u64 {
        self.m.space().allocator().free_frames(tier)
    }

    /// The traffic counters of `tier` since the run began (what a memory controller's
    /// performance counters give, as memos reads per-channel bandwidth from the PMU,
    /// §4.2): demand and mechanism 64-byte reads and writes. A policy that wants a
    /// bandwidth takes the difference between two readings over the time between.
    pub fn tier_stats(&self, tier: TierId) -> crate::machine::TierStats {
        self.m.memory().tiers().all()[tier.index()].stats()
    }

    /// Free frames of `colour` in `tier` (see [`Mechanisms::colour`]), at no cost: the
    /// allocator's own counts (memos §6.2's colour sub-buddy) when the colour is over
    /// `machine.colour_bits`, else counted from its bitmap.
    pub fn free_frames_coloured(&self, tier: TierId, colour: Colour) -> u64 {
        self.m.space().allocator().free_coloured(tier, colour)
    }

    pub fn capacity_frames(&self, tier: TierId) -> u64 {
        self.m.space().allocator().frames(tier)
    }

    /// Data frames `tenant` holds in `tier`.
    pub fn tenant_frames(&self, tenant: u16, tier: TierId) -> u64 {
        self.m.space().tenants()[tenant as usize].frames_per_tier()[tier.index()]
    }

    /// Frames `tenant` may still take in the fast tier: the free ones, within its
    /// quota if it has one.
    pub fn fast_room(&self, tenant: u16) -> u64 {
        let free = self.free_frames(TierId::FAST);
        match self.fast_quota(tenant) {
            Some(q) => q.saturating_sub(self.tenant_frames(tenant, TierId::FAST)).min(free),
            None => free,
        }
    }

    /// The tenant's fast-tier quota in frames (`None` = unlimited).
    pub fn fast_quota(&self, tenant: u16) -> Option<u64> {
        self.m.space().tenants()[tenant as usize].fast_quota()
    }

    /// Sets the tenant's fast-tier quota (HMM-V's pool mode moves DRAM between VMs at
    /// run time). Lowering it below what the tenant holds moves nothing: the policy
    /// migrates pages out; until then only moves into the fast tier are refused.
    pub fn set_fast_quota(&mut self, tenant: u16, frames: Option<u64>) {
        self.m.set_fast_quota(tenant, frames);
    }

    /// Turns page-modification logging on or off for VM `tenant` (HMM-V §3.2): while
    /// on, every EPT dirty bit the MMU sets is logged in the vCPU's buffer, guest
    /// page-table accesses included (machine module `vmx`). Ignored for a process.
    pub fn set_pml(&mut self, tenant: u16, on: bool) {
        if self.m.is_vm(tenant) {
            self.m.vmx.set_pml(tenant, on);
        }
    }

    /// The guest-physical pages (4 KiB page numbers) PML logged for `tenant` since the
    /// last call, in log order with repeats. Entries still in a vCPU's buffer are
    /// collected by kicking that vCPU: one VM exit on its core, paid there.
    pub fn take_pml_log(&mut self, tenant: u16) -> Vec<u64> {
        // (Epochs mode first draws the Dirty bits set since the last look.)
        let at = self.now();
        self.m.epochs_settle_tenant(tenant, at);
        self.m.epochs_log_guest_tables(tenant, at);
        for core in self.m.vmx.cores_holding(tenant) {
            self.m.vm_exit(core, crate::machine::vmx::ExitCause::Kick);
        }
        self.m.vmx.take_log(tenant)
    }

    /// A VM exit of application core `core` for `cause` (a hypercall, or a fault a
    /// policy's mechanism raises): the vCPU stops for its cost. Returns the cycles.
    pub fn vm_exit(&mut self, core: usize, cause: crate::machine::vmx::ExitCause) -> u64 {
        self.m.vm_exit(core, cause)
    }

    /// The policy's own CPU work of `cycles` (sorting, bookkeeping), charged to this
    /// executor.
    pub fn compute(&mut self, cycles: u64) {
        self.run(|m, _, x| m.cpu(x, cycles));
    }

    /// Flushes every translation of VM `tenant` on every core (INVEPT): each other
    /// core holding one takes a `TlbFlush` exit, the executor pays one shootdown.
    pub fn flush_vm(&mut self, tenant: u16) -> Result<(), MechError> {
        if self.m.space().tenants().get(tenant as usize).ok_or(MechError::NoSuchTenant { tenant })?.guest.is_none() {
            return Err(MechError::NotVm { tenant });
        }
        self.run(|m, _, x| m.vm_flush(x, tenant));
        Ok(())
    }

    /// The last-level guest page-table pages of VM `tenant`, collected by a guest
    /// module on its vCPU `vcpu` and handed over with a hypercall (HMM-V §4.1.1):
    /// charged one line read and `scan_pte_cycles` per page (the upper-level entries
    /// that point to them) on this executor, and a hypercall exit on `vcpu`.
    pub fn collect_gpt(&mut self, tenant: u16, vcpu: usize) -> Result<Vec<GptNode>, MechError> {
        let nodes = self.m.guest_leaf_nodes(tenant)?;
        let per = self.m.cfg().costs.scan_pte_cycles;
        self.run(|m, _, x| {
            for n in &nodes {
                if let Some(host) = m.host_addr(tenant, n.gpfn << 12) {
                    m.exec_access(x, host, false);
                }
                m.cpu(x, per);
            }
        });
        self.m.vm_exit(vcpu, crate::machine::vmx::ExitCause::Hypercall);
        Ok(nodes)
    }

    /// Reads guest page-table pages `nodes` of VM `tenant` from the host, on this
    /// executor's clock: one line read per 8 entries, `scan_pte_cycles` per leaf;
    /// `f` sees each leaf entry and returns whether to clear its A/D bits (a write).
    /// Returns the leaf entries read. Flush the VM's translations after clearing
    /// ([`Mechanisms::flush_vm`]).
    pub fn scan_gpt(&mut self, tenant: u16, nodes: &[GptNode], mut f: impl FnMut(GptEntry) -> bool) -> u64 {
        self.run(|m, _, x| nodes.iter().map(|&n| m.scan_gpt_node(x, tenant, n, &mut f)).sum())
    }

    /// Clears the EPT dirty bit of the page of VM `tenant` holding guest-physical
    /// address `gpa` (one entry write), so that PML logs its next write; returns
    /// whether it was set. Flush the VM's translations afterwards.
    pub fn clear_ept_dirty(&mut self, tenant: u16, gpa: u64) -> Result<bool, MechError> {
        self.run(|m, _, x| m.clear_ept_dirty(x, tenant, gpa))
    }

    /// Plans a batched PML move of `pages` (each to its tier), to hand to a thread
    /// as [`Op::MoveBatch`] (HMM-V §4.3; `machine::hypervisor`). Nothing is charged
    /// until it runs.
    pub fn plan_pml_batch(&mut self, pages: Vec<(PageRef, TierId)>) -> u32 {
        self.m.hyper.plan_batch(BatchKind::Pml, pages.into_iter().map(|(p, t)| (p, t, Colour::ANY)).collect())
    }

    /// Plans an unlocked DMA move of `pages` (each to its tier, into a frame of its
    /// colour; processes and VMs alike), to hand to a thread — normally a
    /// [`ThreadKind::CopyEngine`] — as [`Op::MoveBatch`] (memos §6.3;
    /// `machine::hypervisor`): the pages stay mapped and writable while the engine
    /// copies them one step at a time, and a page written during its copy is
    /// discarded at the end ([`MechError::DirtiedDuringCopy`]) and stays where it
    /// was. Nothing is charged until it runs.
    pub fn plan_dma_batch(&mut self, pages: Vec<(PageRef, TierId, Colour)>) -> u32 {
        self.m.hyper.plan_batch(BatchKind::Dma, pages)
    }

    /// Moves `page` to tier `to` the given way now, on this executor's clock (a
    /// `pml` move as a batch of one, all its steps at once).
    pub fn move_as(&mut self, page: PageRef, to: TierId, how: MoveHow) -> Result<(), MechError> {
        self.move_as_coloured(page, to, how, Colour::ANY)
    }

    /// [`Mechanisms::move_as`] into a frame of `colour` (see [`Mechanisms::colour`]);
    /// base pages only, as a huge frame spans every colour. `MoveHow::Linux` on a
    /// process is memos' locked CPU copy (`migrate_cpu`, §6.3).
    pub fn move_as_coloured(&mut self, page: PageRef, to: TierId, how: MoveHow, colour: Colour) -> Result<(), MechError> {
        if how == MoveHow::Pml {
            let batch = self.m.hyper.plan_batch(BatchKind::Pml, vec![(page, to, colour)]);
            return self.run(|m, limits, x| run_op(m, limits, x, Op::MoveBatch { batch }));
        }
        self.run(|m, limits, x| run_op(m, limits, x, Op::MoveAs { page, to, how, colour }))
    }

    /// Limits moves toward faster (`Promote`) or slower (`Demote`) tiers to `mb_per_s`
    /// megabytes per simulated second, for every executor (`None` lifts it). A move
    /// over the limit is refused with [`MechError::RateLimited`].
    pub fn set_rate_limit(&mut self, d: Direction, mb_per_s: Option<f64>) {
        let ghz = self.m.info().freq_ghz;
        self.rt.limits.set(d, mb_per_s.map(|v| RateLimit::new(v, ghz)));
    }

    /// The owner of a physical frame (what a memory-controller counter's address maps
    /// back to through the OS reverse map).
    pub fn owner(&self, pfn: u64) -> Owner {
        self.m.space().owner(pfn)
    }

    /// The page holding `page.addr`.
    pub fn page(&self, page: PageRef) -> Result<PageInfo, MechError> {
        self.m.space().page_info(page)
    }

    /// Calls `f` for every mapped page in `scope`, in tenant and address order, at no
    /// cost (see the module documentation).
    pub fn pages(&self, scope: Scope, mut f: impl FnMut(PageInfo)) {
        let space = self.m.space();
        let (first, last, start, end) = match scope {
            Scope::All => (0, space.tenants().len() as u16, 0, u64::MAX),
            Scope::Tenant(t) => (t, t + 1, 0, u64::MAX),
            Scope::Range { tenant, start, end } => (tenant, tenant + 1, start, end),
        };
        for t in first..last.min(space.tenants().len() as u16) {
            space.visit(t, start, end, &mut |p| {
                f(p);
                ControlFlow::Continue(())
            });
        }
    }

    /// The colour of the frames of `tier` whose channel, bank (within the channel) and
    /// last-level-cache set colour have the given values (`None` = any). Only address
    /// bits at or above the 4 KiB page offset can colour a frame: a field selected by
    /// lower bits (cache-line channel interleaving, say) is refused, naming the bit.
    /// The LLC colour is the LLC set-index bits above the page offset.
    pub fn colour(&self, tier: TierId, channel: Option<u64>, bank: Option<u64>, llc: Option<u64>) -> Result<Colour, String> {
        let t = self.m.memory().tiers().all().get(tier.index()).ok_or_else(|| format!("the machine has no {tier}"))?;
        let llc_bits: Vec<u8> = {
            let c = self.m.cfg().caches.last().expect("at least one cache level");
            let sets = c.size.bytes() / LINE_BYTES / c.ways as u64;
            (12..6 + sets.trailing_zeros() as u8).collect()
        };
        let mut colour = Colour::ANY;
        for (what, bits, value) in [("channel", t.channel_bits(), channel), ("bank", t.bank_bits(), bank), ("LLC colour", llc_bits, llc)] {
            let Some(value) = value else { continue };
            if value >> bits.len() != 0 {
                return Err(format!("{what} {value} does not exist ({} bits select it)", bits.len()));
            }
            if let Some(b) = bits.iter().find(|&&b| b < 12) {
                return Err(format!("the {what} is selected by address bit {b}, inside a 4 KiB page: frames cannot be coloured by it"));
            }
            // Channel, bank and LLC bits may overlap (a bank bit inside the set index).
            colour = Colour::from_bits(&bits, value)?.and(colour).ok_or_else(|| format!("no frame has that {what} and the fields before it"))?;
        }
        Ok(colour)
    }

    /// Moves `page` to tier `to` (one-way): allocate a frame there, flush the page from
    /// the caches, copy it, update the PTE, shoot down the TLBs, free the old frame.
    pub fn migrate(&mut self, page: PageRef, to: TierId) -> Result<PageInfo, MechError> {
        self.migrate_coloured(page, to, Colour::ANY)
    }

    /// [`Mechanisms::migrate`] into a frame of `colour` (see [`Mechanisms::colour`]);
    /// base pages only, as a huge frame spans every colour.
    pub fn migrate_coloured(&mut self, page: PageRef, to: TierId, colour: Colour) -> Result<PageInfo, MechError> {
        self.run(|m, limits, x| {
            let (d, bytes) = limit_move(m, limits, x.at, page, to)?;
            let info = m.migrate(x, page, to, colour)?;
            limits.count(d, x.at, bytes);
            Ok(info)
        })
    }

    /// Exchanges the frames of two pages of the same size in different tiers (e.g. a
    /// hot slow page and a cold fast victim): both are flushed, copied both ways
    /// through a buffer, both PTEs rewritten and both translations shot down.
    pub fn swap(&mut self, a: PageRef, b: PageRef) -> Result<(), MechError> {
        self.run(|m, limits, x| run_op(m, limits, x, Op::Swap { a, b }))
    }

    /// Exchanges two pages as [`Mechanisms::swap`] does, with both unmapped while
    /// their data moves (Nimble's `exchange_pages`): an access to either before the
    /// exchange ends waits for it (a fault in a process; an EPT-violation exit in a
    /// VM, whose first access afterwards fills the entry with another).
    pub fn exchange(&mut self, a: PageRef, b: PageRef) -> Result<(), MechError> {
        self.run(|m, limits, x| run_op(m, limits, x, Op::Exchange { a, b }))
    }

    /// Splits the huge page holding `page` into base pages mapping the same frames:
    /// a new page-table node is written (its lines go through the caches) and the huge
    /// translation is shot down.
    pub fn split(&mut self, page: PageRef) -> Result<(), MechError> {
        self.run(|m, limits, x| run_op(m, limits, x, Op::Split { page }))
    }

    /// Collapses the base pages of the huge-page-sized region holding `page` into one
    /// huge page in tier `to`. If the pages already fill an aligned huge frame there,
    /// only the page table changes; otherwise a huge frame is allocated and every base
    /// page copied into it. Accessed/dirty bits are OR-ed; poison is cleared.
    pub fn merge(&mut self, page: PageRef, to: TierId) -> Result<(), MechError> {
        self.run(|m, limits, x| run_op(m, limits, x, Op::Merge { page, to }))
    }

    /// Poisons `page`'s PTE and shoots down its translation, so the next TLB miss to
    /// it takes a fault of `machine.costs.poison_fault_ns` (Thermostat §3.3).
    pub fn poison(&mut self, page: PageRef) -> Result<(), MechError> {
        self.run(|m, limits, x| run_op(m, limits, x, Op::Poison { page }))
    }

    /// Clears the poison bit of `page`'s PTE.
    pub fn unpoison(&mut self, page: PageRef) -> Result<(), MechError> {
        self.run(|m, limits, x| run_op(m, limits, x, Op::Unpoison { page }))
    }

    /// Marks one window of `tenant`'s pages from managed address `from` inaccessible
    /// for NUMA hinting faults, now, on this executor's clock (Linux's
    /// `task_numa_work`, which the task runs itself): pages not marked yet and not in
    /// tier `skip` are marked until `bytes` of them are, or the leaves met span
    /// 8 × `bytes`; one TLB-flush round ends the window. A marked page's next TLB miss
    /// takes a fault of `machine.costs.poison_fault_ns` ([`FaultKind::Poison`]); the
    /// fault handler clears the mark with [`Mechanisms::unpoison`]. `f` is called with
    /// each page marked (Linux 6.x's tiering mode records the time there).
    ///
    /// [`FaultKind::Poison`]: crate::machine::FaultKind::Poison
    pub fn mark_hinting(&mut self, tenant: u16, from: u64, bytes: u64, skip: Option<TierId>, mut f: impl FnMut(PageInfo)) -> Result<HintWindow, MechError> {
        if tenant >= self.tenants() {
            return Err(MechError::NoSuchTenant { tenant });
        }
        Ok(self.run(|m, _, x| {
            let (next, marked, leaves) = m.mark_hinting(x, tenant, from, bytes, skip, &mut f);
            HintWindow { next, marked, leaves }
        }))
    }

    /// Whether `page` was accessed since its Accessed bit was last cleared, as a
    /// reverse-map walk from one of its frames reads it now, on this executor's clock
    /// (find the page of a frame with [`Mechanisms::owner`]); with `clear`, the bit is
    /// cleared if set, without a TLB flush (x86's `ptep_test_and_clear_young`), so a
    /// translation still cached in a TLB sets it again only after its eviction
    /// (unless `machine.costs.flush_on_clear_young`). Reclaim's `folio_referenced`
    /// and DAMON's sampling both use it. Costs
    /// `machine.costs.rmap_walk_ns`, the entry's reference through the caches,
    /// `scan_pte_cycles`, and the entry's write if cleared (DAMON's physical-address
    /// sampling, mm/damon/paddr.c `damon_pa_mkold` and `damon_pa_young`).
    pub fn young(&mut self, page: PageRef, clear: bool) -> Result<bool, MechError> {
        if page.tenant >= self.tenants() {
            return Err(MechError::NoSuchTenant { tenant: page.tenant });
        }
        self.run(|m, _, x| m.young(x, page, clear))
    }

    /// Scans the leaf PTEs in `scope` now, on this executor's clock: calls `f` with
    /// each page (Accessed and Dirty as found) and, with [`ScanMode::Clear`], clears
    /// those set and flushes their translations. Each entry costs its reference
    /// through the caches plus `machine.costs.scan_pte_cycles`; clearing costs one
    /// shootdown round per tenant scanned. (A scan handed to a thread in a [`Job`]
    /// costs the same, paced over the thread's time.)
    pub fn scan(&mut self, scope: Scope, mode: ScanMode, mut f: impl FnMut(PageInfo)) -> ScanSummary {
        let tenants = self.tenants();
        let (first, last, start, end) = match scope {
            Scope::All => (0, tenants, 0, u64::MAX),
            Scope::Tenant(t) => (t, t + 1, 0, u64::MAX),
            Scope::Range { tenant, start, end } => (tenant, tenant + 1, start, end),
        };
        let mut sum = ScanSummary::default();
        self.run(|m, _, x| {
            for t in first..last.min(tenants) {
                let (mut from, mut cleared) = (Some(start), 0);
                while let Some(resume) = from {
                    let (next, c) = m.scan(x, t, resume..end, mode == ScanMode::Clear, FOREGROUND_SCAN_CHUNK, &mut |p| {
                        sum.entries += 1;
                        sum.accessed += (p.accessed || p.dirty) as u64;
                        f(p)
                    });
                    from = next;
                    cleared += c;
                }
                m.scan_done(x, t, cleared);
                sum.cleared += cleared;
            }
        });
        sum
    }

    /// Queues `job` on background thread `thread`, from this executor's clock; the
    /// engine runs it over simulated time and calls `Policy::on_job_done` when it is
    /// done. A job of no operations is done at once.
    pub fn submit(&mut self, thread: ThreadId, job: Job) -> Result<JobId, MechError> {
        self.rt.threads.check(thread)?;
        let now = self.now();
        Ok(self.rt.threads.submit(thread, job, now))
    }

    /// How background thread `thread` stands: idle or how much is queued, and how
    /// far behind it is.
    pub fn thread(&self, thread: ThreadId) -> Result<ThreadStatus, MechError> {
        self.rt.threads.check(thread)?;
        Ok(self.rt.threads.status(thread, self.now()))
    }
}

impl Mechanisms<'_, Copies> {
    /// The copy table (free to read: the DRAM manager's own records).
    pub fn copies(&self) -> &Copies {
        self.m.redirect()
    }

    /// Copies the slow page holding `page` into the fast tier, keeping the slow
    /// original (see `machine::copies`); returns the copy's first frame.
    pub fn cache_in(&mut self, page: PageRef) -> Result<u64, MechError> {
        self.run(|m, limits, x| {
            limits.check(Direction::Promote, x.at)?;
            let (frame, bytes) = m.cache_in(x, page)?;
            limits.count(Direction::Promote, x.at, bytes);
            Ok(frame)
        })
    }

    /// Drops the copy of the page holding `page`, writing it back if it was written
    /// since it was made; returns whether it was dirty.
    pub fn cache_out(&mut self, page: PageRef) -> Result<bool, MechError> {
        self.run(|m, _, x| m.cache_out(x, page))
    }
}

impl Mechanisms<'_, Remap> {
    /// The ReMap table and MigC (free to read: the controller's own state).
    pub fn remap(&self) -> &Remap {
        self.m.redirect()
    }

    /// Hands MigC an on-the-fly migration of the unit holding OS-visible slow frame
    /// `hot` (see `machine::remap`): into its entry's target if it has one, else to
    /// `dest`. MigC runs it on its own clock from now; the executor is not stalled
    /// (its requests for the unit wait in MigC's wait queue). Promotions count
    /// against the promotion rate limit.
    pub fn otf_migrate(&mut self, hot: u64, dest: Dest) -> Result<Moved, MechError> {
        let now = self.now();
        self.rt.limits.check(Direction::Promote, now)?;
        let moved = self.m.otf_migrate(now, hot, dest)?;
        let bytes = self.m.redirect().unit_frames() << 12;
        self.rt.limits.count(Direction::Promote, now, bytes);
        Ok(moved)
    }

    /// Hands MigC the move back of the entry covering `pfn` (SpRM's reverse
    /// migration); the entry goes once the copy is done. Returns that cycle. The
    /// executor is not stalled.
    pub fn reverse_migrate(&mut self, pfn: u64) -> Result<u64, MechError> {
        let now = self.now();
        self.m.reverse_migrate(now, pfn)
    }

    /// Address reconciliation of the entry covering `pfn` and its pair, run by this
    /// executor (the OS on a core stalls it): MigC completes the page, then flush,
    /// PTE rewrite, shootdowns and reverse mapping (SpAR Appendix A.2, Table 2).
    pub fn reconcile(&mut self, pfn: u64) -> Result<(), MechError> {
        self.run(|m, _, x| m.reconcile(x, pfn))
    }
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod copy_tests;

#[cfg(test)]
mod remap_tests;

#[cfg(test)]
mod timing_tests;
