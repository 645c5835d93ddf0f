//! Studies: grids of runs. A [`spec::Spec`] names the options every run shares and
//! the axes crossed (policies, workloads, seeds, any configuration key);
//! [`sweep::run_sweep`] runs what the [`store::Store`] (a SQLite database) does not
//! hold yet, several at a time, and writes each run in one transaction, so that a
//! sweep stopped at any moment and started again runs only what is missing.
//! `tiersim report` reads the store back into plots, and the Python package
//! (`python/`) reads and writes the same store.

pub mod reproduce;
pub mod spec;
pub mod store;
pub mod sweep;

pub use spec::{Point, Spec};
pub use store::Store;
pub use sweep::{other_builds_note, run_point, run_sweep, SweepOptions, SweepOutcome, THIS_BUILD, UNRECORDED};
