//! The policies of one alignment run.

use clock_model::NodeId;
use serde::{Deserialize, Serialize};

pub use clock_model::{Extrapolation, OffsetModel, SnapshotModel};

/// Where aligned device-plane events are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceTimeline {
    /// On the global clock, like every other event (default).
    #[default]
    Global,
    /// The "corrected tracer timeline" (seed §4.5.3): the global time mapped
    /// back through `P⁻¹` with a fresh segment search, placed on the wall
    /// axis as the tracer collector does (`S_w + R' − S_g`).
    CorrectedTracer,
}

/// Which host-plane lines are on the tracer clock (GPU runtime callbacks).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TracerLines {
    /// A line whose absolute start `T_sess + timestamp_ns` equals `S_w`
    /// exactly: the collector stamps its lines with `S_w` (default).
    #[default]
    Auto,
    /// Lines whose name matches one of these patterns (`*` matches any run
    /// of characters); all other host lines are on the wall clock.
    Patterns(Vec<String>),
}

impl TracerLines {
    /// Whether a host line runs on the tracer clock.
    pub fn is_tracer_line(
        &self,
        name: &str,
        line_start_ns: i128,
        start_walltime_ns: Option<u64>,
    ) -> bool {
        match self {
            TracerLines::Auto => start_walltime_ns.is_some_and(|sw| line_start_ns == sw as i128),
            TracerLines::Patterns(patterns) => patterns.iter().any(|p| glob_match(p, name)),
        }
    }
}

/// `CamelCase` → `snake_case`.
pub(crate) fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// `*`-only glob matching.
fn glob_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// The policies of an alignment run. `Default` gives the documented defaults.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlignOptions {
    /// The node whose host clock is the global timeline (default 0).
    pub reference_node: NodeId,
    /// Outside the snapshot pairs: extrapolate the end segment or hold the end offset.
    pub snapshot_extrapolation: Extrapolation,
    /// How the snapshot map is built: chosen per node from the pairs
    /// (`auto`, default: through every pair when they are exact, a
    /// least-squares fit when their read gap makes them noisy), or forced.
    pub snapshot_model: SnapshotModel,
    /// Outside the offset anchors: extrapolate the end segment or hold the end offset.
    pub offset_extrapolation: Extrapolation,
    /// How offsets are modelled: chosen per node from the anchors (`auto`,
    /// default), a least-squares fit, interpolation, or each row's drift.
    pub offset_model: OffsetModel,
    /// Which host lines are on the tracer clock.
    pub tracer_lines: TracerLines,
    /// Where device-plane events go.
    pub device_timeline: DeviceTimeline,
    /// A node without offset rows is copied through unaligned (said loudly
    /// in the diagnostics) instead of failing.
    pub pass_through_without_offsets: bool,
    /// Add the stat [`xplane_proto::CORRECTION_STAT`] (ns applied to the
    /// start) to every event.
    pub correction_stat: bool,
    /// Accept a trace with no events (other than clock snapshot pairs):
    /// by default it is an error, as a node contributing nothing is far
    /// more often a broken recording than an idle one.
    pub allow_empty: bool,
}

impl Default for AlignOptions {
    fn default() -> Self {
        AlignOptions {
            reference_node: NodeId(0),
            snapshot_extrapolation: Extrapolation::Extrapolate,
            snapshot_model: SnapshotModel::Auto,
            offset_extrapolation: Extrapolation::Extrapolate,
            offset_model: OffsetModel::Auto,
            tracer_lines: TracerLines::Auto,
            device_timeline: DeviceTimeline::Global,
            pass_through_without_offsets: false,
            correction_stat: false,
            allow_empty: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match("hip*", "hipLaunchKernel"));
        assert!(glob_match("*Launch*", "hipLaunchKernel"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exact2"));
        assert!(glob_match("a*b*c", "a--b--c"));
        assert!(!glob_match("a*b*c", "a--c--b"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("ab*ba", "aba"));
    }
}
