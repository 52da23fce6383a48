//! trace-synth (under construction)
