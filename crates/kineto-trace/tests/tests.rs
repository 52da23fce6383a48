//! The integration tests of `kineto-trace`, one binary with a module per
//! concern (one link instead of one per file).

mod common;

mod bad_input;
mod fixtures;
mod roundtrip;
mod xspace;
