//! The integration tests of `safe-temp`, one binary with a module per
//! concern (one link instead of one per file).

mod temps;
