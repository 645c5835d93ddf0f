//! Page-management policies: decisions only.
//!
//! A policy is one file in this folder implementing [`Policy`], plus one line in
//! [`registry`]. It must write `new` (and usually `on_epoch` or `on_reference`);
//! every other hook has a no-op default that the compiler removes, because the
//! engine is generic over the policy type: the name → type dispatch happens once per
//! run, never per reference. docs/policies.md walks through writing one.
//!
//! Hooks that observe the machine mid-reference (`on_tlb_miss`, `on_memory_access`,
//! `on_fault`, `on_scan`, from [`Observer`]) may only record; a policy acts in
//! `on_start` (once, before the first reference), `on_reference` (after the
//! reference completed, on its core), `on_epoch`, or `on_job_done` (on the
//! background thread that finished the job).

pub mod baselines;
pub mod damon;
pub mod dram_cache;
pub mod hemem;
pub mod hmmv;
pub mod hscc;
pub mod kstaled;
pub mod lru;
pub mod memos;
pub mod nimble;
pub mod numa;
pub mod oracle;
pub mod otf;
pub mod params;
pub mod rainbow;
pub mod registry;
pub mod thermostat;
pub mod tiering;

use crate::machine::placement::Placement;
use crate::machine::{MachineInfo, NoRedirect, Observer, Redirect, RefOutcome};
use crate::mechanism::{JobDone, Mechanisms, ThreadKind};
use crate::trace::Access;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;

/// Policy-specific figures for the report, by name.
pub type PolicyReport = BTreeMap<String, serde_json::Value>;

/// The page size a policy is defined for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PageSize {
    /// Whatever `machine.page_table.thp` says.
    #[default]
    Configured,
    /// Base (4 KiB) pages only.
    Base,
    /// Huge pages on first touch (transparent huge pages), falling back to base pages
    /// when no huge frame is free.
    Huge,
}

impl PageSize {
    /// Whether first touch maps huge pages, given the configuration's choice.
    pub fn thp(self, configured: bool) -> bool {
        match self {
            PageSize::Configured => configured,
            PageSize::Base => false,
            PageSize::Huge => true,
        }
    }
}

/// How the fast tier is sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FastTier {
    /// As `machine.tiers.fast.capacity` says.
    #[default]
    Configured,
    /// Grown to hold the whole footprint (the all-fast upper bound).
    HoldsFootprint,
}

/// Free frames of the fast tier that first touch leaves alone while a slower tier has
/// room, as Linux's allocator falls back to the next node below a watermark (so that
/// promotions find room and reclaim is not outrun by new pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FastReserve {
    #[default]
    None,
    Frames(u64),
    /// The fast tier's low watermark as Linux computes it
    /// ([`Watermarks::linux`](crate::monitor::Watermarks::linux) with its default
    /// min and this `watermark_scale_factor`).
    LinuxLow { scale_factor: u64 },
}

impl FastReserve {
    /// The reserve in frames for a fast tier of `capacity` frames.
    pub fn frames(self, capacity: u64) -> u64 {
        use crate::monitor::Watermarks;
        match self {
            FastReserve::None => 0,
            FastReserve::Frames(n) => n.min(capacity),
            FastReserve::LinuxLow { scale_factor } => Watermarks::linux(capacity, Watermarks::linux_min(capacity), scale_factor).low.min(capacity),
        }
    }
}

/// What a policy needs of the machine, declared from its configuration before the
/// machine is built; the report's configuration shows the machine as built.
#[derive(Clone, Debug)]
pub struct Requirements<S> {
    pub page_size: PageSize,
    /// Where first touch puts pages.
    pub placement: Placement,
    pub fast_tier: FastTier,
    pub fast_reserve: FastReserve,
    /// The background threads it hands jobs to, in `ThreadId` order.
    pub threads: Vec<ThreadKind>,
    /// The specification of the machine's redirection structure (`()` for none).
    pub redirect: S,
    /// The policy reads the whole reference stream before the run: the engine opens
    /// every source a second time, as the run will, and hands each batch to
    /// [`Policy::foresee`] (the future-knowledge bounds). Sources that cannot be read
    /// twice are refused.
    pub foresight: bool,
}

impl<S: Default> Default for Requirements<S> {
    fn default() -> Self {
        Requirements {
            page_size: PageSize::Configured,
            placement: Placement::FastFirst,
            fast_tier: FastTier::Configured,
            fast_reserve: FastReserve::None,
            threads: Vec::new(),
            redirect: S::default(),
            foresight: false,
        }
    }
}

/// An epoch boundary, or several a core crossed at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Epoch {
    /// The last boundary crossed, in cycles.
    pub now: u64,
    /// Boundaries this call stands for: more than one when a core was stalled (by a
    /// mechanism, say) across several; they are delivered as one call, not back to
    /// back.
    pub boundaries: u64,
    /// Number of the last boundary crossed (the first epoch ends at boundary 1).
    pub index: u64,
}

/// A page-management policy, on a machine whose redirection structure is `R`
/// ([`NoRedirect`] unless its registry line names another).
pub trait Policy<R: Redirect = NoRedirect>: Observer + Sized {
    /// The policy's parameters: `Default` gives its paper's values, every field has a
    /// `///` doc; read from `[policy.<name>]`.
    type Config: Default + Serialize + DeserializeOwned + Clone + params::Params;

    /// What the policy needs of the machine (page size, placement, tier sizing,
    /// background threads, redirection), from its configuration.
    fn requirements(_config: &Self::Config) -> Requirements<R::Spec> {
        Requirements::default()
    }

    /// Creates the policy for the machine its requirements described.
    fn new(config: Self::Config, machine: &MachineInfo) -> anyhow::Result<Self>;

    /// Called once before the first reference, with the mechanisms of core 0 at cycle
    /// 0: a policy whose background threads pace themselves on their own clocks (with
    /// `Op::Sleep`, as DAMON's kdamonds do) hands them their first job here.
    fn on_start(&mut self, _mech: &mut Mechanisms<R>) {}

    /// With `Requirements::foresight`: called before the run with every batch of
    /// references core `core` will make, in order, as the run will see them (tenants
    /// rewritten as the engine does); then [`Policy::foreseen`] once.
    fn foresee(&mut self, _core: usize, _batch: &[Access]) {}

    /// Called once after the last [`Policy::foresee`], before the machine is built.
    fn foreseen(&mut self) -> anyhow::Result<()> {
        Ok(())
    }

    /// Called after every reference, with what it cost and the mechanisms of its core.
    #[inline]
    fn on_reference(&mut self, _access: &Access, _outcome: &RefOutcome, _mech: &mut Mechanisms<R>) {}

    /// Called when the slowest core crosses an epoch boundary (`engine.epoch_cycles`),
    /// with the mechanisms of that core.
    fn on_epoch(&mut self, _epoch: &Epoch, _mech: &mut Mechanisms<R>) {}

    /// Called when a background job is done, with the mechanisms of the thread that
    /// ran it (see `crate::mechanism` on what to run there and what to submit).
    fn on_job_done(&mut self, _done: &JobDone, _mech: &mut Mechanisms<R>) {}

    /// Adds policy-specific figures to the report.
    fn report(&self, _out: &mut PolicyReport) {}
}
