//! alignment-core (under construction)
