//! The integration tests of `xplane-proto`, one binary with a module per
//! concern (one link instead of one per file).

mod common;

mod bad_input;
mod codegen;
mod fixtures;
mod properties;
mod retime;
