//! collective-check (under construction)
