//! The integration tests of `trace-synth`, one binary with a module per
//! concern (one link instead of one per file).

mod score;
mod synth;
