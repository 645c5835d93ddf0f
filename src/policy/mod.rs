//! Page-management policies: decisions only.
//!
//! A policy is one file in this folder implementing [`Policy`], plus one line in
//! [`registry`]. It must write `new` (and usually `on_epoch`); every event hook has a
//! no-op default that the compiler removes, because the engine is generic over the
//! policy type: the name → type dispatch happens once per run, never per reference.
//!
//! Hooks that observe the machine mid-reference (`on_tlb_miss`, `on_memory_access`,
//! `on_fault`, from [`Observer`]) may only record; a policy that acts on the fly does
//! so in `on_reference`, which runs after the reference completed and gets the
//! mechanisms, or at epochs.

pub mod baselines;
pub mod dram_cache;
pub mod hscc;
pub mod kstaled;
pub mod params;
pub mod rainbow;
pub mod registry;
pub mod thermostat;

use crate::machine::copies::CopySpec;
use crate::machine::placement::Placement;
use crate::machine::{MachineInfo, Observer, RefOutcome};
use crate::mechanism::Mechanisms;
use crate::trace::Access;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;

/// Policy-specific figures for the report, by name.
pub type PolicyReport = BTreeMap<String, serde_json::Value>;

/// A page-management policy.
pub trait Policy: Observer + Sized {
    /// The policy's parameters: `Default` gives its paper's values, every field has a
    /// `///` doc; read from `[policy.<name>]`.
    type Config: Default + Serialize + DeserializeOwned + Clone + params::Params;

    /// Creates the policy for a machine.
    fn new(config: Self::Config, machine: &MachineInfo) -> anyhow::Result<Self>;

    /// Where pages go on first touch.
    fn placement(&self) -> Placement {
        Placement::FastFirst
    }

    /// The page size the policy is defined for: `Some(true)` maps huge pages on first
    /// touch, `Some(false)` base pages only, `None` follows `machine.page_table.thp`.
    fn thp(&self) -> Option<bool> {
        None
    }

    /// Fast-tier copies of slow pages the machine must keep for the policy (Rainbow,
    /// HSCC); see [`crate::machine::copies`].
    fn copies(&self) -> Option<CopySpec> {
        None
    }

    /// Whether the fast tier should be grown to hold the whole footprint (the
    /// all-fast upper bound only).
    fn fast_tier_unlimited(&self) -> bool {
        false
    }

    /// Called after every reference, with what it cost and the mechanisms (charged to
    /// the reference's core).
    #[inline]
    fn on_reference(&mut self, _access: &Access, _outcome: &RefOutcome, _mech: &mut Mechanisms) {}

    /// Called at every epoch boundary (`engine.epoch_cycles`), with the mechanisms.
    fn on_epoch(&mut self, _now: u64, _mech: &mut Mechanisms) {}

    /// Adds policy-specific figures to the report.
    fn report(&self, _out: &mut PolicyReport) {}
}
