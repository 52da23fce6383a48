//! The integration tests of `clock-model`, one binary with a module per
//! concern (one link instead of one per file).

mod common;

mod fit;
mod map_laws;
mod offsets;
mod snapshot_fit;
