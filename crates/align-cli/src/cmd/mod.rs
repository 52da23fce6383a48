//! One module per subcommand, each with its `Args` and `run`.

pub mod align;
pub mod bench;
pub mod demo;
pub mod export;
pub mod inspect;
pub mod merge;
pub mod policy;
pub mod score;
pub mod synth;
pub mod validate;
