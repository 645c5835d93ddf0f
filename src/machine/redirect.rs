//! The one extension point of the reference path: structures that redirect a
//! reference without the page tables knowing — Rainbow's migration bitmap with its
//! bitmap cache and in-page pointer (at translation), and, at the memory controller,
//! a ReMap table (SpAR) or a hardware DRAM cache of the slow tier (Optane Memory
//! Mode).
//!
//! The machine is generic over its [`Redirect`] type, chosen once per run by the
//! policy's registry line; [`NoRedirect`] is what every other run uses. Its hooks
//! are the trait's defaults, which the compiler inlines away (`TRANSLATES` is a
//! constant, so the translation hook is not even a branch): a run without
//! redirection pays nothing for the extension point.

use super::core::{Core, CoreStats};
use super::events::{MemKind, Observer};
use super::memory::{Memory, Tiers};
use super::space::{Space, TenantKind};
use super::tlb::{Tlb, TlbConfig, TlbEntry};
use super::TierId;

/// What a redirection structure may use on the translation path of one reference.
pub struct PathCtx<'a> {
    pub core: usize,
    /// The core's clock when the reference translates.
    pub clock: u64,
    pub tlb: &'a mut Tlb,
    pub stats: &'a mut CoreStats,
    pub mem: &'a mut Memory,
    /// Latency of an L2 TLB hit.
    pub l2_tlb_cycles: u64,
    /// The walker's reads go straight to memory (`machine.page_table.walk_reads`), and
    /// so do reads a structure makes as the walker does (Rainbow's pointer).
    pub walk_uncached: bool,
}

impl PathCtx<'_> {
    pub(crate) fn of<'a>(core: usize, c: &'a mut Core, mem: &'a mut Memory, l2_tlb_cycles: u64, walk_uncached: bool) -> PathCtx<'a> {
        PathCtx { core, clock: c.clock, tlb: &mut c.tlb, stats: &mut c.stats, mem, l2_tlb_cycles, walk_uncached }
    }
}

/// Where a translated reference goes after redirection.
#[derive(Clone, Copy, Debug)]
pub struct Redirected {
    /// The frame that serves it.
    pub pfn: u64,
    /// Cycles added to its translation.
    pub translation_cycles: u64,
    /// Cycles added only if the reference reaches memory (a check in the memory
    /// controller); see [`Redirect::memory_charge_taken`].
    pub memory_cycles: u64,
    /// A 4 KiB entry of the second TLB level served the translation (it counts as
    /// an L2 hit, not as the hit of the superpage entry that led there).
    pub small_l2_hit: bool,
}

/// Where the machine's frames are, for building a redirection structure.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Per tier: first frame and number of frames.
    pub tiers: Vec<(u64, u64)>,
    pub huge_shift: u32,
    pub tenants: Vec<TenantKind>,
}

impl Layout {
    pub fn tier(&self, t: TierId) -> (u64, u64) {
        self.tiers[t.index()]
    }
}

/// A structure on the translation or memory path; see the module documentation.
pub trait Redirect: Sized {
    /// What a policy asks for (the `redirect` field of its requirements).
    type Spec: Clone + Default + std::fmt::Debug;

    /// Whether [`Redirect::after_translation`] does anything.
    const TRANSLATES: bool = false;
    /// Whether the structure is no structure at all ([`NoRedirect`]): only then can a
    /// run fast-forward (sampled mode), since every other structure needs each
    /// reference to reach it as the full model would send it.
    const PLAIN: bool = false;

    /// Frames of the slow tier the structure keeps its metadata in, for a slow tier
    /// of `slow_frames` base frames. The machine adds them to a slow tier sized as a
    /// share of the footprint, and reserves them before the run.
    fn reserved_frames(_spec: &Self::Spec, _slow_frames: u64, _huge_frames: u64) -> u64 {
        0
    }

    /// Huge frames of the fast tier the structure keeps for itself (SpRM's swap
    /// area): reserved before the run, so first touch never sees them.
    fn reserved_fast_huge_frames(_spec: &Self::Spec, _fast_bytes: u64, _huge_bytes: u64) -> u64 {
        0
    }

    /// Whether the whole fast tier is the structure's (a hardware cache of the slow
    /// tier, Optane Memory Mode): then the OS sees only the slower tiers, and no page
    /// or page table is ever given a fast frame.
    fn hides_fast_tier(_spec: &Self::Spec) -> bool {
        false
    }

    /// Builds the structure; `reserved` are the frames of [`Redirect::reserved_frames`],
    /// `fast` the first frames of the huge frames of
    /// [`Redirect::reserved_fast_huge_frames`].
    fn build(spec: &Self::Spec, layout: &Layout, reserved: Vec<u64>, fast: Vec<u64>) -> anyhow::Result<Self>;

    /// Called after every translation (TLB hit or walk) of a reference to frame `pfn`
    /// through `entry`, when `TRANSLATES` is true.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn after_translation<O: Observer>(
        &mut self,
        _path: &mut PathCtx,
        _tenant: u16,
        _vaddr: u64,
        _entry: &TlbEntry,
        pfn: u64,
        _write: bool,
        _obs: &mut O,
    ) -> Redirected {
        Redirected { pfn, translation_cycles: 0, memory_cycles: 0, small_l2_hit: false }
    }

    /// The reference did reach memory and was charged `cycles` of
    /// [`Redirected::memory_cycles`].
    #[inline]
    fn memory_charge_taken(&mut self, _cycles: u64) {}

    /// Serves a 64-byte access that reached the memory controller (an LLC miss, a
    /// write-back, a flush or metadata access) at physical address `paddr`: by default
    /// the tier holding it, as demand traffic or, for a mechanism (`background`), as
    /// background traffic. Returns the latency. (Inlined, so that the tier's model
    /// is part of the caller's path to memory rather than a call of its own.)
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn memory<O: Observer>(&mut self, tiers: &mut Tiers, core: usize, paddr: u64, write: bool, kind: MemKind, at: u64, background: bool, obs: &mut O) -> u64 {
        if background {
            tiers.background(paddr, write, at)
        } else {
            tiers.access(core, paddr, write, kind, at, obs)
        }
    }

    /// The frame a base-page TLB entry may hold in place of frame `pfn` of a huge
    /// mapping, because the structure redirects it there (for invariant checks).
    fn alias(&self, _pfn: u64) -> Option<u64> {
        None
    }

    /// The frame that holds the data of frame `pfn` as the OS sees it, once every
    /// move in flight has completed (for `--verify`'s shadow memory).
    #[inline]
    fn served(&self, pfn: u64) -> u64 {
        pfn
    }

    /// Checks the structure's invariants against the address spaces.
    fn check(&self, _space: &Space) -> Result<(), String> {
        Ok(())
    }

    /// Sections the structure adds to the report, by key; `core_tenants` has the
    /// tenant each core ran.
    fn report(&self, _cores: &[Core], _tlb: &TlbConfig, _core_tenants: &[u16]) -> Vec<(&'static str, serde_json::Value)> {
        Vec::new()
    }
}

/// No redirection: the machine every policy gets unless it asks for a structure.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoRedirect;

impl Redirect for NoRedirect {
    type Spec = ();
    const PLAIN: bool = true;
    fn build(_: &(), _: &Layout, _: Vec<u64>, _: Vec<u64>) -> anyhow::Result<NoRedirect> {
        Ok(NoRedirect)
    }
}
