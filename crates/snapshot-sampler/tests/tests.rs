//! The integration tests of `snapshot-sampler`, one binary with a module per
//! concern (one link instead of one per file).

mod fake_clocks;
mod real_clocks;
