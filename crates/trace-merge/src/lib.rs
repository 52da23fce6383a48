//! trace-merge (under construction)
