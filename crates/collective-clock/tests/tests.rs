//! The integration tests of `collective-clock`, one binary with a module per
//! concern (one link instead of one per file).

mod bad_input;
mod fixtures;
mod holding;
mod permute;
mod properties;
mod repair;
mod wander;
