//! The integration tests of `alignment-core`, one binary with a module per
//! concern (one link instead of one per file).

mod common;
mod node1;

mod fallbacks;
mod fixtures;
mod launch_lag;
mod pipeline;
mod synth_accuracy;
