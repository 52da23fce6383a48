//! Aligning one node: the aligner of its trace ([`NodeAligner`]: clocks,
//! session start, the accessors); its submodules add the steps.
//!
//! - `input`: [`NodeInput`] and [`AlignNode`], a file in and a file (or an
//!   `XSpace` in memory) out;
//! - `line_clocks`: which clock each line's stored times are on, the
//!   defaults a line is read under, and the check that the tracer path's
//!   inputs are there;
//! - `plan`: every plane planned for writing, and one line aligned;
//! - `write`: the lines aligned on all cores and written in order;
//! - `task_env`: the output's `Task Environment`.

mod input;
mod line_clocks;
mod plan;
mod task_env;
mod write;

pub use input::{AlignNode, NodeInput};

use std::path::{Path, PathBuf};

use xplane_proto::{
    BufferPool, LineView, PROFILE_START_TIME, PROFILE_STOP_TIME, PlaneView, SpaceView,
};

use crate::clocks::NodeClocks;
use crate::diagnostics::{
    AnchorReport, NodeDiagnostics, SkippedReport, SnapshotReport, ps_to_nearest_ns,
};
use crate::error::{AlignError, Result};
use crate::line::LineRetimer;
use crate::offsets::OffsetsFile;
use crate::options::AlignOptions;

/// One node, ready to write: its clocks, its session start, and the plan
/// for every line. Use [`AlignNode`] for files; this type lets a caller
/// stream the aligned planes into its own [`XSpaceWriter`](xplane_proto::XSpaceWriter).
pub struct NodeAligner<'a> {
    path: PathBuf,
    view: SpaceView<'a>,
    clocks: NodeClocks,
    options: AlignOptions,
    session_start_ns: i128,
    output_base_ns: i128,
    /// `T_sess = 0` because the trace has no session start.
    no_session_start: bool,
    diagnostics: NodeDiagnostics,
    /// Where encoded lines are built, and given back once written.
    buffers: BufferPool,
}

impl<'a> NodeAligner<'a> {
    /// Read the node's snapshots and offsets and build its clock maps.
    pub fn new(
        input: &NodeInput,
        view: SpaceView<'a>,
        offsets: &OffsetsFile,
        options: &AlignOptions,
        output_session_start_ns: Option<i128>,
    ) -> Result<Self> {
        check_top_level(&input.trace, &view)?;
        let (clocks, session_start_ns) = NodeClocks::for_trace(input, &view, offsets, options)?;
        Self::with_clocks(
            &input.trace,
            view,
            clocks,
            session_start_ns,
            options,
            output_session_start_ns,
        )
    }

    /// A node whose clock maps are already built (from probe offsets, from
    /// the collectives, or by hand). `path` names the trace in errors;
    /// `session_start_ns` is its `T_sess`; the output's session start is
    /// `output_session_start_ns` (the reference node's), or when `None` the
    /// node's own mapped onto the global clock.
    pub fn with_clocks(
        path: &Path,
        view: SpaceView<'a>,
        clocks: NodeClocks,
        session_start_ns: i128,
        options: &AlignOptions,
        output_session_start_ns: Option<i128>,
    ) -> Result<Self> {
        check_top_level(path, &view)?;
        let output_base_ns = match output_session_start_ns {
            Some(t) => t,
            None if session_start_ns == 0 => 0,
            None => clocks.host_ns_to_global_ns(session_start_ns),
        };
        let diagnostics =
            initial_diagnostics(path, &clocks, options, session_start_ns, output_base_ns);
        let no_session_start = session_start_ns == 0
            && xplane_proto::task_env_time_ns_view(&view, PROFILE_START_TIME)
                .map_err(|e| AlignError::wire(path, &view, e))?
                .is_none();
        let aligner = NodeAligner {
            path: path.to_path_buf(),
            view,
            clocks,
            options: options.clone(),
            session_start_ns,
            output_base_ns,
            no_session_start,
            diagnostics,
            buffers: BufferPool::new(),
        };
        aligner.check_tracer_inputs()?;
        Ok(aligner)
    }

    /// Build the encoded lines in `buffers`' buffers, shared with other
    /// aligners (of the other nodes of a merge): the pages of a buffer
    /// already written are reused instead of faulted in anew.
    pub fn share_buffers(&mut self, buffers: &BufferPool) {
        self.buffers = buffers.clone();
    }

    /// The node's session start and the output's, epoch ns.
    pub fn session_starts_ns(&self) -> (i128, i128) {
        (self.session_start_ns, self.output_base_ns)
    }

    /// The clock maps.
    pub fn clocks(&self) -> &NodeClocks {
        &self.clocks
    }

    /// The input's `hostnames`, `errors` and `warnings`.
    pub fn space_strings(&self) -> Result<(Vec<String>, Vec<String>, Vec<String>)> {
        let collect = |it: xplane_proto::Strings<'_>| {
            it.map(|s| s.map(str::to_owned))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| AlignError::wire(&self.path, &self.view, e))
        };
        Ok((
            collect(self.view.hostnames())?,
            collect(self.view.errors())?,
            collect(self.view.warnings())?,
        ))
    }

    /// The node's stop time (`profile_stop_time`) on the global clock,
    /// epoch ns, when its trace records one.
    pub fn output_stop_ns(&self) -> Result<Option<i128>> {
        let stop = xplane_proto::task_env_time_ns_view(&self.view, PROFILE_STOP_TIME)
            .map_err(|e| AlignError::wire(&self.path, &self.view, e))?;
        Ok(stop.map(|stop| self.stop_on_global(stop)))
    }

    fn stop_on_global(&self, stop_ns: i128) -> i128 {
        self.clocks.host_ns_to_global_ns(stop_ns)
    }

    /// Where an absolute stored time (ps) of an event on `line` of `plane`
    /// lands in the output, absolute ps: the same maps as the event path,
    /// evaluated by binary search (for the few events looked up one by
    /// one, such as collectives).
    pub fn retime(&self, plane: &PlaneView<'_>, line: &LineView<'_>, abs_ps: i128) -> i128 {
        let clock = self.line_clock(plane, line);
        let ctx = self.line_context(plane, None);
        crate::line::map_one(&ctx, clock, abs_ps)
    }

    /// Maps the stored times of the events of `line` of `plane` one after
    /// another, exactly as [`NodeAligner::retime`] maps each, for a walk
    /// over a line's events: a time in order costs O(1), not a search.
    pub fn line_retimer(&self, plane: &PlaneView<'_>, line: &LineView<'_>) -> LineRetimer<'_> {
        let clock = self.line_clock(plane, line);
        let line_ps = (self.session_start_ns + i128::from(line.timestamp_ns)) * 1000;
        LineRetimer::new(&self.line_context(plane, None), clock, line_ps)
    }

    /// The diagnostics (complete after [`NodeAligner::write`]).
    pub fn diagnostics(&self) -> &NodeDiagnostics {
        &self.diagnostics
    }

    /// The diagnostics, consuming the aligner.
    pub fn into_diagnostics(self) -> NodeDiagnostics {
        self.diagnostics
    }
}

/// Refuse bytes that are not an XSpace at the top level (fields a view
/// would skip as unknown), as every reader does; nested messages are
/// checked as they are copied.
fn check_top_level(path: &Path, view: &SpaceView<'_>) -> Result<()> {
    view.check_top_level()
        .map_err(|e| AlignError::wire(path, view, e))
}

fn initial_diagnostics(
    trace: &Path,
    clocks: &NodeClocks,
    options: &AlignOptions,
    session_start_ns: i128,
    output_base_ns: i128,
) -> NodeDiagnostics {
    let (anchors_used, anchors_skipped, warnings) = match &clocks.anchors {
        Some(a) => (
            a.anchors
                .iter()
                .map(|a| AnchorReport {
                    round_id: a.round_id,
                    host_ns: a.host.as_ns_floor() as i64,
                    offset_ns: ps_to_nearest_ns(a.offset.as_ps()),
                    source: a.source,
                })
                .collect(),
            a.skipped
                .iter()
                .map(|s| SkippedReport {
                    round_id: s.round_id,
                    reason: s.reason,
                })
                .collect(),
            a.warnings.clone(),
        ),
        None => (Vec::new(), Vec::new(), Vec::new()),
    };
    NodeDiagnostics {
        node_id: clocks.node_id,
        trace: trace.to_path_buf(),
        session_start_ns,
        output_session_start_ns: output_base_ns,
        start_walltime_ns: clocks.start_walltime_ns,
        start_gpu_ns: clocks.start_gpu_ns,
        passed_through: clocks.passed_through,
        snapshots: clocks.snapshots.as_ref().map(|s| SnapshotReport {
            source: s.source().display().to_string(),
            count: s.pairs().len(),
            sys_range_ns: s
                .pairs()
                .first()
                .zip(s.pairs().last())
                .map(|(a, b)| (a.sys_ns(), b.sys_ns())),
        }),
        snapshot_model: clocks.snapshot_choice.as_ref().map(Into::into),
        anchors_used,
        anchors_skipped,
        warnings,
        fallbacks: Vec::new(),
        offset_model: clocks.offset_choice.as_ref().map(Into::into),
        events_corrected: 0,
        events_clamped: 0,
        extrapolated: Default::default(),
        correction: None,
        repaired: clocks.repair.as_ref().map(|_| Default::default()),
        launch_lag: None,
        policies: options.clone(),
        lines: Vec::new(),
    }
}
