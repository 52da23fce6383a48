//! The integration tests of `trace-merge`, one binary with a module per
//! concern (one link instead of one per file).

mod common;
mod resolve;

mod fixtures;
mod merge;
mod naming;
