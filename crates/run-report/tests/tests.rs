//! The integration tests of `run-report`, one binary with a module per
//! concern (one link instead of one per file).

mod critical;
mod fixtures;
mod gpu;
mod many_nodes;
mod straggler;
mod synth;
