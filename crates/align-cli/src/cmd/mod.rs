//! One module per subcommand, each with its `Args` and `run`.

pub mod align;
pub mod demo;
pub mod inspect;
pub mod merge;
pub mod policy;
