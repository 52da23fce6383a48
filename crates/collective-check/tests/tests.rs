//! The integration tests of `collective-check`, one binary with a module per
//! concern (one link instead of one per file).

mod common;
mod gloo_fixture;
mod nccl_json;

mod fixtures;
mod kineto;
mod kineto_groups;
mod kineto_nccl;
mod mesh;
mod permute;
mod rules;
mod strict;
