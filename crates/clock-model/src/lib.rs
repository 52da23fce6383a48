//! clock-model (under construction)
