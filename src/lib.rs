//! tiersim: a fast, trace-driven simulator for hybrid (tiered) main memory.
//!
//! Layers, each depending only on those below it:
//! - [`trace`] / [`workload`]: access records and the sources that produce them;
//! - [`machine`]: TLBs, page tables, caches, memory tiers, frame allocator;
//! - [`mechanism`]: what policies may ask of the machine, each with its cost, on the
//!   clock of the executor (core or background thread) that runs it;
//! - [`monitor`]: what policies share — pacing, per-page access records, queues,
//!   sorts, LRU lists, watermarks;
//! - [`policy`]: one file per policy, decisions only;
//! - [`engine`]: drives references through the machine, epochs, statistics;
//! - [`report`], [`config`], [`cli`]: output, configuration, command line;
//! - [`study`]: sweeps over grids of runs into a results store;
//! - [`units`], [`rng`], [`progress`]: sizes, random numbers, progress display.

pub mod cli;
pub mod config;
pub mod engine;
pub mod machine;
pub mod mechanism;
pub mod monitor;
pub mod policy;
pub mod progress;
pub mod report;
pub mod rng;
#[doc(hidden)]
pub mod scratch;
pub mod study;
pub mod trace;
pub mod units;
pub mod workload;
