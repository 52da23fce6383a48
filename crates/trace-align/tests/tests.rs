//! The integration tests of `trace-align`, one binary with a module per
//! concern (one link instead of one per file).

mod archive;
mod clocks;
mod discover;
mod jax_faketime;
mod kineto;
mod kineto_cuda;
mod kineto_space;
mod launch_lag;
mod merge;
mod repair;
mod session_start;
mod single;
mod write;
