//! Alignment policy flags shared by `align`, `merge` and `demo`.

use alignment_core::{
    AlignOptions, DeviceTimeline, Extrapolation, OffsetModel, SnapshotModel, TracerLines,
};
use clap::ValueEnum;
use collective_check::NodeId;

/// Outside the anchored range.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExtrapolationArg {
    /// Continue the first / last segment.
    Extrapolate,
    /// Hold the end offset.
    Hold,
}

impl From<ExtrapolationArg> for Extrapolation {
    fn from(a: ExtrapolationArg) -> Self {
        match a {
            ExtrapolationArg::Extrapolate => Extrapolation::Extrapolate,
            ExtrapolationArg::Hold => Extrapolation::Hold,
        }
    }
}

/// Between offset anchors.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OffsetModelArg {
    /// Per node from the anchors: fit when plentiful, drift when sparse.
    Auto,
    /// Least-squares piecewise-linear fit, knots where the residuals demand.
    Fit,
    /// Piecewise-linear through the anchors.
    Interpolate,
    /// Each row's drift_ppm around its window midpoint.
    Drift,
}

/// How the snapshot map is built from the pairs.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SnapshotModelArg {
    /// Per node from the pairs: through every pair when they are exact, a
    /// least-squares fit when their read gap makes them noisy.
    Auto,
    /// Piecewise-linear through every pair.
    Exact,
    /// Least-squares piecewise-linear fit, knots where the residuals demand.
    Fit,
}

/// Where device events go.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DeviceTimelineArg {
    /// The global clock.
    Global,
    /// The corrected tracer timeline (per-node output).
    CorrectedTracer,
}

/// The alignment policies.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Clocks")]
pub struct PolicyArgs {
    /// The node whose host clock is the global timeline (default: the
    /// run's lowest node id, node 0 of a run that has one).
    #[arg(long)]
    pub reference: Option<NodeId>,
    /// Outside the snapshot pairs.
    #[arg(long, value_enum, default_value = "extrapolate")]
    pub snapshot_extrapolation: ExtrapolationArg,
    /// How the snapshot map is built: per node from the pairs (auto), or forced.
    #[arg(long, value_enum, default_value = "auto")]
    pub snapshot_model: SnapshotModelArg,
    /// Outside the offset anchors.
    #[arg(long, value_enum, default_value = "extrapolate")]
    pub offset_extrapolation: ExtrapolationArg,
    /// How offsets are modelled: per node from the anchors (auto), or forced.
    #[arg(long, value_enum, default_value = "auto")]
    pub offset_model: OffsetModelArg,
    /// Host lines on the tracer clock, by name pattern (`*` wildcard;
    /// repeatable). Default: detected by their line base S_w.
    #[arg(long = "tracer-line", value_name = "PATTERN")]
    pub tracer_lines: Vec<String>,
    /// Where device-plane events are written.
    #[arg(long, value_enum, default_value = "global", help_heading = "Output")]
    pub device_timeline: DeviceTimelineArg,
    /// Copy a node without usable offsets through unaligned instead of failing.
    #[arg(long, help_heading = "Checks")]
    pub pass_through: bool,
    /// Add the stat `timestamp_correction_ns` to every event.
    #[arg(long, help_heading = "Output")]
    pub correction_stat: bool,
    /// Accept a trace with no events (by default an error naming the file).
    #[arg(long, help_heading = "Checks")]
    pub allow_empty: bool,
}

impl PolicyArgs {
    /// The library options for the run `run`: the reference, unless
    /// given, is its lowest node id.
    pub fn options_for(&self, run: &trace_align::RunFiles) -> AlignOptions {
        let mut options = self.options();
        if self.reference.is_none()
            && let Some(&first) = run.nodes.keys().next()
        {
            options.reference_node = first;
        }
        options
    }

    /// The library options (reference: node 0 unless given).
    pub fn options(&self) -> AlignOptions {
        AlignOptions {
            reference_node: self.reference.unwrap_or(NodeId(0)),
            snapshot_extrapolation: self.snapshot_extrapolation.into(),
            snapshot_model: match self.snapshot_model {
                SnapshotModelArg::Auto => SnapshotModel::Auto,
                SnapshotModelArg::Exact => SnapshotModel::Exact,
                SnapshotModelArg::Fit => SnapshotModel::Fit,
            },
            offset_extrapolation: self.offset_extrapolation.into(),
            offset_model: match self.offset_model {
                OffsetModelArg::Auto => OffsetModel::Auto,
                OffsetModelArg::Fit => OffsetModel::Fit,
                OffsetModelArg::Interpolate => OffsetModel::Interpolate,
                OffsetModelArg::Drift => OffsetModel::Drift,
            },
            tracer_lines: if self.tracer_lines.is_empty() {
                TracerLines::Auto
            } else {
                TracerLines::Patterns(self.tracer_lines.clone())
            },
            device_timeline: match self.device_timeline {
                DeviceTimelineArg::Global => DeviceTimeline::Global,
                DeviceTimelineArg::CorrectedTracer => DeviceTimeline::CorrectedTracer,
            },
            pass_through_without_offsets: self.pass_through,
            correction_stat: self.correction_stat,
            allow_empty: self.allow_empty,
        }
    }
}
