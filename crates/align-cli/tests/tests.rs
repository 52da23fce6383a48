//! The integration tests of `align-cli`, one binary with a module per
//! concern (one link instead of one per file).

mod common;
#[path = "../../collective-check/tests/nccl_json/mod.rs"]
mod nccl_json;
#[path = "../../perfetto-export/tests/common/mod.rs"]
mod readback;

mod align_outputs;
mod bounded_input;
mod closed_stdout;
mod cluster;
mod collectives;
mod commands;
mod counts_agree;
mod empty;
mod export;
mod export_kineto;
mod inspect;
mod layouts;
mod nothing_lost;
mod one_node;
mod one_verdict;
mod output_guard;
mod outputs_together;
mod outside_traces;
mod perfetto_archive;
mod pipeline;
mod repair;
mod report;
mod signals;
mod snapshot_sampler;
mod stderr_write_error;
mod stdout_write_error;
mod strict_input;
mod synth_score;
mod validate;
mod validate_kineto;
mod wrong_clock;
