//! The monitoring layer: what OS- and hypervisor-level policies share, written once
//! (as Linux DAMON's core sits between its operations and its schemes). It sits
//! between the mechanisms and the policies and holds no machine state of its own:
//! policies keep these structures and feed them from their hooks.
//!
//! - [`pacer`]: when a periodic task is due (periods in seconds, references or per
//!   run), aware of background work still running;
//! - [`tracker`]: per-page access records (Accessed/Dirty history, fault counts,
//!   sampled reads and writes) in arrays indexed by page number, surviving splits,
//!   merges and migrations;
//! - [`queue`]: HMM-V's multi-level queue with do-not-disturb times;
//! - [`buckets`]: pages sorted by a weighted degree in O(n);
//! - [`lists`]: Linux's active/inactive LRU lists;
//! - [`watermarks`]: free-page watermarks and the reclaim they trigger;
//! - [`regions`]: DAMON's adaptive regions (sampling counts, ages, merge and split);
//! - [`damos`]: DAMON-based operation schemes: access patterns, quotas with score
//!   prioritisation, watermark activation;
//! - [`hierarchy`]: how busy each bank and LLC slab is (memos' Bank/Cache_Freq_Table)
//!   and the coldest place for a moving page.
//!
//! The limits every move is held to are enforced below, in the mechanism layer, so
//! that no policy can bypass them: promotion and demotion rate limits
//! (`Mechanisms::set_rate_limit`) and per-tenant fast-tier quotas
//! (`Mechanisms::set_fast_quota`).

pub mod buckets;
pub mod damos;
pub mod hierarchy;
pub mod lists;
pub mod pacer;
pub mod queue;
pub mod regions;
pub mod tracker;
pub mod watermarks;

pub use buckets::{degree, hottest, sort_by_degree};
pub use hierarchy::Hierarchy;
pub use damos::{AccessPattern, Metric, Prefer, Quota, Scheme, ScoreScale, Stat, Weights, Wmarks};
pub use lists::{LruLists, Place, Verdict, Which};
pub use pacer::{Pacer, PacerReport, Period};
pub use queue::{Filtered, MultiLevelQueue};
pub use regions::{Region, Regions, MIN_REGION};
pub use tracker::Tracker;
pub use watermarks::{Reclaim, Watermarks};
