//! The integration tests of `perfetto-export`, one binary with a module per
//! concern (one link instead of one per file).

mod common;
mod importer;

mod bad_input;
mod chrome;
mod codegen;
mod importer_rules;
mod pinned;
mod properties;
mod readback;
