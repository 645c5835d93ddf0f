//! Access records and the sources that produce them.

pub mod access;

pub use access::{Access, Source, DEPENDENT, WRITE};
