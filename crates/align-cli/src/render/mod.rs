//! The text the commands print about what the library did: one place per
//! outcome, shared by every command that prints it.

pub mod align;
pub mod clock;
pub mod inspect;
pub mod merge;
