//! Aligning one node: its trace file in, an aligned trace file out.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use clock_model::NodeId;
use rayon::prelude::*;
use xplane_proto::{
    BufferPool, BufferSink, CORRECTION_STAT, CORRELATION_ID_STAT, FileBytes, LineView,
    METADATA_PLANE, ORIGINAL_PROFILE_START_STAT, PROFILE_START_TIME, PROFILE_STOP_TIME, PlaneView,
    SNAPSHOT_PLANE, SpaceView, TASK_ENV_PLANE, Unparsed, WireError, XPlane, XPlaneExt, XSpaceFile,
    XSpaceWriter, x_stat,
};

use crate::clocks::NodeClocks;
use crate::diagnostics::{
    AnchorReport, FallbackCounts, LineCounts, LineReport, NodeDiagnostics, SkippedReport,
    SnapshotReport, ps_to_nearest_ns,
};
use crate::error::{AlignError, LineField, Result, TracerInput};
use crate::launch::{KERNEL_LEAD_TOLERANCE_NS, LaunchCollector, LaunchLag};
use crate::line::{Correlated, LineClock, LineContext, LineError, align_line};
use crate::offsets::OffsetsFile;
use crate::options::{AlignOptions, DeviceTimeline, TracerLines};
use crate::output::{PlaneOutput, PlaneSource, PlaneWritten, apply_stats};
use crate::pipeline;
use crate::tap::{EventTap, NoTap};

/// One node's inputs. `None` fields are read from the files.
#[derive(Debug, Clone, Default)]
pub struct NodeInput {
    /// The node id (as in the offsets file).
    pub node_id: NodeId,
    /// Its XSpace trace.
    pub trace: PathBuf,
    /// A `SnapshotPairs` protobuf or JSONL file; `None`: the trace's
    /// embedded `/host:snapshots` plane.
    pub snapshots: Option<PathBuf>,
    /// Override `T_sess` (epoch ns).
    pub session_start_ns: Option<i128>,
    /// Override `S_w` (epoch ns).
    pub start_walltime_ns: Option<u64>,
    /// Override `S_g` (ns).
    pub start_gpu_ns: Option<u64>,
}

/// Lines are aligned on all cores and written in order; a line starts
/// only when the lines from the first unwritten one up to it hold at most
/// this many input bytes, which bounds the memory their encoded output
/// holds while it waits for its turn (see [`pipeline::ordered`]).
const WINDOW_BYTES: usize = 64 << 20;

/// One node's alignment, set up step by step and run into a file or an
/// `XSpace` in memory:
///
/// ```no_run
/// # use alignment_core::{AlignNode, AlignOptions, NodeInput, OffsetsFile};
/// # fn f(input: &NodeInput, offsets: &OffsetsFile) -> alignment_core::Result<()> {
/// let options = AlignOptions::default();
/// let diagnostics = AlignNode::new(input, offsets)
///     .options(&options)
///     .session_start_ns(1_765_432_100_000_000_000) // the reference node's `T_sess`
///     .to_file("node1.aligned.xplane.pb".as_ref())?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug)]
#[must_use = "an alignment does nothing until run with `to_file` or `to_space`"]
pub struct AlignNode<'a> {
    input: &'a NodeInput,
    offsets: &'a OffsetsFile,
    options: Option<&'a AlignOptions>,
    output_session_start_ns: Option<i128>,
}

impl<'a> AlignNode<'a> {
    /// Align `input` with the probe `offsets`, under the default policies,
    /// onto the node's own session start mapped onto the global clock.
    pub fn new(input: &'a NodeInput, offsets: &'a OffsetsFile) -> Self {
        AlignNode {
            input,
            offsets,
            options: None,
            output_session_start_ns: None,
        }
    }

    /// Under `options`.
    pub fn options(mut self, options: &'a AlignOptions) -> Self {
        self.options = Some(options);
        self
    }

    /// With the output's session start `ns` (epoch ns): the reference
    /// node's `T_sess`, so that every node's output shares it.
    pub fn session_start_ns(mut self, ns: i128) -> Self {
        self.output_session_start_ns = Some(ns);
        self
    }

    fn aligner<'v>(&self, view: SpaceView<'v>) -> Result<NodeAligner<'v>> {
        let default = AlignOptions::default();
        NodeAligner::new(
            self.input,
            view,
            self.offsets,
            self.options.unwrap_or(&default),
            self.output_session_start_ns,
        )
    }

    /// Align the trace file `input.trace` into `out`, atomically: on any
    /// error nothing is written.
    pub fn to_file(&self, out: &Path) -> Result<NodeDiagnostics> {
        let (diagnostics, tmp) = self.to_staged(out)?;
        tmp.persist(out).map_err(|e| xplane_proto::Error::Io {
            path: out.to_path_buf(),
            source: e.into_io(),
        })?;
        Ok(diagnostics)
    }

    /// [`AlignNode::to_file`] up to the rename: the complete aligned trace
    /// in a temporary beside `out`, for the caller to put in place with
    /// the outputs that belong with it ([`safe_temp::persist_together`]);
    /// dropped, it is removed.
    pub fn to_staged(&self, out: &Path) -> Result<(NodeDiagnostics, safe_temp::TempFile)> {
        let bytes = FileBytes::open(&self.input.trace)?;
        let mut aligner = self.aligner(bytes.view())?;
        let mut file = XSpaceFile::create(out)?;
        aligner.write(file.writer())?;
        let (hostnames, errors, warnings) = aligner.space_strings()?;
        let tmp = file.finish(&hostnames, &errors, &warnings)?;
        Ok((aligner.into_diagnostics(), tmp))
    }

    /// Align `space`, held in memory; `input.trace` only names it in
    /// errors, and `input.snapshots` may still name a file.
    pub fn to_space(
        &self,
        space: &xplane_proto::XSpace,
    ) -> Result<(xplane_proto::XSpace, NodeDiagnostics)> {
        let encoded = xplane_proto::encode_xspace(space)?;
        let mut aligner = self.aligner(SpaceView::new(&encoded))?;
        let mut writer = XSpaceWriter::new(std::io::Cursor::new(Vec::new()));
        aligner.write(&mut writer)?;
        let (hostnames, errors, warnings) = aligner.space_strings()?;
        let out = writer.finish(&hostnames, &errors, &warnings)?.into_inner();
        let aligned = SpaceView::new(&out)
            .to_owned()
            .map_err(|e| AlignError::wire(&self.input.trace, &SpaceView::new(&out), e))?;
        Ok((aligned, aligner.into_diagnostics()))
    }
}

/// One node, ready to write: its clocks, its session start, and the plan
/// for every line. Use [`AlignNode`] for files; this type lets a caller
/// stream the aligned planes into its own [`XSpaceWriter`].
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

    /// The clock each line of a plane is on: [`Self::stored_clock`], except
    /// that an empty tracer-clock line on a node without the tracer path's
    /// inputs keeps its start ([`Fallback::EmptyTracerLinesUnmapped`]).
    fn line_clock(&self, plane: &PlaneView<'_>, line: &LineView<'_>) -> LineClock {
        match self.stored_clock(plane, line) {
            LineClock::Tracer if !self.clocks.has_tracer_inputs() && is_empty(line) => {
                LineClock::Unchanged
            }
            clock => clock,
        }
    }

    /// The clock a line's stored times are on.
    fn stored_clock(&self, plane: &PlaneView<'_>, line: &LineView<'_>) -> LineClock {
        let name = plane.name;
        if name == TASK_ENV_PLANE || name == SNAPSHOT_PLANE || name == METADATA_PLANE {
            LineClock::Unchanged
        } else if name.starts_with("/device:") {
            self.device_clock()
        } else if name.starts_with("/host:") {
            let start = self.session_start_ns + line.timestamp_ns as i128;
            if self.options.tracer_lines.is_tracer_line(
                line.name,
                start,
                self.clocks.start_walltime_ns,
            ) {
                LineClock::Tracer
            } else {
                LineClock::Wall
            }
        } else {
            LineClock::Unchanged
        }
    }

    /// The clock of a device plane's lines: the tracer clock when the node
    /// has a snapshot source (a `/host:snapshots` plane or a snapshots
    /// file: the ROCm fork's traces, whose pairs map it), else the host's
    /// REALTIME, on which stock XLA and CUPTI already write device events.
    fn device_clock(&self) -> LineClock {
        if self.clocks.snapshots.is_some() {
            LineClock::Tracer
        } else {
            LineClock::Wall
        }
    }

    /// Count the defaults `line` is read under.
    fn count_fallbacks(
        &self,
        plane: &PlaneView<'_>,
        line: &LineView<'_>,
        counts: &mut FallbackCounts,
    ) {
        let stored = self.stored_clock(plane, line);
        if stored == LineClock::Unchanged {
            return;
        }
        if is_empty(line) {
            if stored == LineClock::Tracer && !self.clocks.has_tracer_inputs() {
                counts.empty_tracer_lines += 1;
            }
            return;
        }
        if self.no_session_start {
            counts.no_session_start += 1;
        }
        if stored == LineClock::Wall
            && plane.name.starts_with("/host:")
            && self.options.tracer_lines == TracerLines::Auto
            && self.clocks.start_walltime_ns.is_none()
            // Without snapshot pairs the node has no tracer clock to miss.
            && self.clocks.snapshots.is_some()
        {
            counts.host_lines_without_tracer_start += 1;
        }
    }

    /// Fail before writing anything when tracer-clock events lack the
    /// snapshot pairs or the tracer start `(S_w, S_g)`.
    fn check_tracer_inputs(&self) -> Result<()> {
        let missing = if self.clocks.snapshot.is_none() {
            TracerInput::SnapshotPairs
        } else if self.clocks.start_walltime_ns.is_none() {
            TracerInput::StartWalltime
        } else if self.clocks.start_gpu_ns.is_none() {
            TracerInput::StartGpu
        } else {
            // Everything the tracer path needs is there: no need to look.
            return Ok(());
        };
        let wire = |e| AlignError::wire(&self.path, &self.view, e);
        for plane in self.view.planes() {
            let plane = plane.map_err(wire)?;
            for line in plane.lines() {
                let line = line.map_err(wire)?;
                if self.line_clock(&plane, &line) == LineClock::Tracer
                    && line.events().next().is_some()
                {
                    if let (TracerInput::SnapshotPairs, Some(s)) =
                        (missing, self.clocks.snapshots.as_ref())
                    {
                        return Err(AlignError::NoSnapshotPairs {
                            path: self.path.clone(),
                            plane: plane.name.to_owned(),
                            line: line.name.to_owned(),
                            snapshots: s.source().to_path_buf(),
                        });
                    }
                    return Err(AlignError::TracerInputMissing {
                        path: self.path.clone(),
                        plane: plane.name.to_owned(),
                        line: line.name.to_owned(),
                        missing,
                    });
                }
            }
        }
        Ok(())
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

    /// Write every aligned plane into `writer` (which must be between
    /// planes), each with its input id and name.
    pub fn write<W: BufferSink + Send>(&mut self, writer: &mut XSpaceWriter<W>) -> Result<()> {
        self.write_placed(writer, |p| PlaneOutput::same(p.id, p.name))
            .map(drop)
    }

    /// Write every aligned plane into `writer` (which must be between
    /// planes), each where `place` says: a merge streams every node's
    /// planes into one output this way, renamed and re-numbered, with no
    /// intermediate file. `place` sees every plane written, in order,
    /// including a `Task Environment` added to a trace that had none.
    /// Returns what was written of each plane, in order.
    pub fn write_placed<W: BufferSink + Send>(
        &mut self,
        writer: &mut XSpaceWriter<W>,
        place: impl FnMut(&PlaneSource<'_, 'a>) -> PlaneOutput,
    ) -> Result<Vec<PlaneWritten>> {
        self.write_tapped(writer, place, &mut NoTap)
    }

    /// [`NodeAligner::write_placed`], showing every event of every plane
    /// written (its `Task Environment` aside) to `tap` with its mapped
    /// times as it is aligned: whoever needs the events with their new
    /// times (the collective check of a merge) reads them from this walk.
    pub fn write_tapped<W: BufferSink + Send, T: EventTap<'a>>(
        &mut self,
        writer: &mut XSpaceWriter<W>,
        mut place: impl FnMut(&PlaneSource<'_, 'a>) -> PlaneOutput,
        tap: &mut T,
    ) -> Result<Vec<PlaneWritten>> {
        let wire = |e| AlignError::wire(&self.path, &self.view, e);
        let mut fallbacks = FallbackCounts::default();
        // Every plane is planned first, in order; a plane that cannot be
        // read ends the plan, its error reported once every plane before
        // it is written.
        let mut planes: Vec<PlannedPlane<'_, 'a, T::Plane>> = Vec::new();
        let mut unreadable = None;
        for plane in self.view.planes() {
            let planned = plane.map_err(wire).and_then(|plane| {
                let lines = parse_lines(&plane).map_err(wire)?;
                for line in &lines {
                    self.count_fallbacks(&plane, line, &mut fallbacks);
                }
                let output = place(&PlaneSource {
                    id: plane.id,
                    name: plane.name,
                    lines: &lines,
                });
                self.plan_plane(planes.len() as u64, plane, lines, output, tap)
            });
            match planned {
                Ok(planned) => planes.push(planned),
                Err(e) => {
                    unreadable = Some(e);
                    break;
                }
            }
        }
        // A `Task Environment` has no lines planned: it is written whole.
        let jobs: Vec<(usize, usize)> = planes
            .iter()
            .enumerate()
            .flat_map(|(k, p)| (0..p.lines.len()).map(move |j| (k, j)))
            .collect();
        let weights: Vec<usize> = jobs
            .iter()
            .map(|&(k, j)| planes[k].lines[j].0.encoded().len())
            .collect();
        let mut out = PlaneWriter {
            aligner: self,
            planes: &planes,
            writer,
            tap,
            next: 0,
            open: None,
            written: Vec::new(),
            total: LineCounts::default(),
            reports: Vec::new(),
            profile_events: 0,
            found: LaunchCollector::new(self.output_base_ns * 1000),
        };
        let mut failed = None;
        let align = |job: usize| {
            let (k, j) = jobs[job];
            self.align_planned::<T>(&planes[k], j)
        };
        pipeline::ordered(&weights, WINDOW_BYTES, align, |job, aligned| {
            let (k, j) = jobs[job];
            match out.line(k, j, aligned) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    failed = Some(e);
                    ControlFlow::Break(())
                }
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        out.planes_before(planes.len())?;
        if let Some(e) = unreadable {
            return Err(e);
        }
        let PlaneWriter {
            mut written,
            total,
            reports,
            profile_events,
            found,
            ..
        } = out;
        let has_task_env = planes.iter().any(|p| p.task_env);
        if !has_task_env && self.output_base_ns != 0 {
            let output = place(&PlaneSource {
                id: 0,
                name: TASK_ENV_PLANE,
                lines: &[],
            });
            written.push(self.write_task_environment(None, &output, writer)?);
        }
        if profile_events == 0 && !self.options.allow_empty {
            return Err(AlignError::NoEvents {
                path: self.path.clone(),
            });
        }
        let launch_lag = found.finish(|k| {
            usize::try_from(k)
                .ok()
                .and_then(|k| planes.get(k))
                .map_or_else(String::new, |p| format!("plane '{}'", p.view.name))
        });
        let early = self.kernel_before_launch(launch_lag.as_ref());
        self.diagnostics.launch_lag = launch_lag;
        if let Some(e) = early {
            return Err(e);
        }
        self.diagnostics.set_counts(&total);
        self.diagnostics.fallbacks = fallbacks.list();
        self.diagnostics.lines = reports;
        Ok(written)
    }

    /// The error of a kernel that begins before its launch by more than
    /// [`KERNEL_LEAD_TOLERANCE_NS`], naming its plane.
    fn kernel_before_launch(&self, lag: Option<&LaunchLag>) -> Option<AlignError> {
        let lag = lag.filter(|l| l.violated())?;
        Some(AlignError::KernelBeforeLaunch {
            path: self.path.clone(),
            place: lag.earliest.place.clone(),
            correlation_id: lag.earliest.correlation_id,
            lead_ns: lag.min_ns.saturating_neg(),
            tolerance_ns: KERNEL_LEAD_TOLERANCE_NS,
        })
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

    /// The `Task Environment` plane this node's output gets, if any: the
    /// input's (or a new one when the output's session start is not 0)
    /// with the output's session start, the node's own kept as
    /// [`ORIGINAL_PROFILE_START_STAT`], and the stop time on the global
    /// clock.
    pub fn aligned_task_environment(&self) -> Result<Option<XPlane>> {
        for plane in self.view.planes() {
            let plane = plane.map_err(|e| AlignError::wire(&self.path, &self.view, e))?;
            if plane.name == TASK_ENV_PLANE {
                return self.task_environment(Some(&plane)).map(Some);
            }
        }
        if self.output_base_ns == 0 {
            return Ok(None);
        }
        self.task_environment(None).map(Some)
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

    /// The diagnostics (complete after [`NodeAligner::write`]).
    pub fn diagnostics(&self) -> &NodeDiagnostics {
        &self.diagnostics
    }

    /// The diagnostics, consuming the aligner.
    pub fn into_diagnostics(self) -> NodeDiagnostics {
        self.diagnostics
    }

    /// What writing `plane` needs: its lines and their clocks, its
    /// metadata as written after them, what its lines' alignment shares,
    /// and what the tap keeps of it.
    fn plan_plane<P>(
        &self,
        place: u64,
        plane: PlaneView<'a>,
        lines: Vec<LineView<'a>>,
        output: PlaneOutput,
        tap: &mut impl EventTap<'a, Plane = P>,
    ) -> Result<PlannedPlane<'_, 'a, P>> {
        if plane.name == TASK_ENV_PLANE {
            return Ok(PlannedPlane {
                view: plane,
                lines: Vec::new(),
                output,
                task_env: true,
                owned: XPlane::default(),
                ctx: self.line_context(&plane, None),
                tapped: None,
            });
        }
        let wire = |e| AlignError::wire(&self.path, &self.view, e);
        let mut owned = XPlane {
            id: plane.id,
            name: plane.name.to_owned(),
            ..Default::default()
        };
        for entry in plane.event_metadata() {
            let entry = entry.map_err(wire)?;
            owned
                .event_metadata
                .insert(entry.key, entry.value.to_owned().map_err(wire)?);
        }
        for entry in plane.stat_metadata() {
            let entry = entry.map_err(wire)?;
            owned
                .stat_metadata
                .insert(entry.key, entry.value.to_owned());
        }
        for stat in plane.stats() {
            owned.stats.push(stat.map_err(wire)?.to_owned());
        }
        let lines: Vec<(LineView<'a>, LineClock)> = lines
            .into_iter()
            .map(|l| {
                let clock = self.line_clock(&plane, &l);
                (l, clock)
            })
            .collect();
        let aligns = lines.iter().any(|(_, c)| *c != LineClock::Unchanged);
        let correction_stat =
            (self.options.correction_stat && aligns).then(|| owned.intern_stat(CORRECTION_STAT));
        apply_stats(&mut owned, &output);
        let mut ctx = self.line_context(&plane, correction_stat);
        if aligns && !ctx.corrected_tracer {
            ctx.correlated = correlated(&plane, &owned, place);
        }
        Ok(PlannedPlane {
            view: plane,
            lines,
            ctx,
            tapped: tap.plane(&plane),
            output,
            task_env: false,
            owned,
        })
    }

    /// Align line `index` of `plane` into a buffer of the pool.
    fn align_planned<T: EventTap<'a>>(
        &self,
        plane: &PlannedPlane<'_, 'a, T::Plane>,
        index: usize,
    ) -> AlignedLine<T::Line> {
        let (line, clock) = &plane.lines[index];
        let mut out = self.buffers.take(line.encoded().len() + 64);
        let mut found = LaunchCollector::new(self.output_base_ns * 1000);
        if let Some(c) = &plane.ctx.correlated {
            // An event with a correlation id takes at least 16 bytes.
            found.reserve(c.kernel, line.encoded().len() / 16);
        }
        let display_id = plane.output.display_ids.get(&index).copied();
        let tapped = plane.tapped.as_ref();
        let mut seen = tapped.map(|p| T::line(p, line));
        let shown = |event: &_, mapped| {
            if let (Some(p), Some(l)) = (tapped, seen.as_mut()) {
                T::event(p, l, event, mapped);
            }
        };
        align_line(
            &plane.ctx, line, *clock, display_id, &mut out, &mut found, shown,
        )
        .map(|c| (out, c, seen, found))
    }

    /// The error of line `index` of `plane`, with the file and place.
    fn line_error(
        &self,
        plane: &PlaneView<'_>,
        index: usize,
        line: &LineView<'_>,
        e: LineError,
    ) -> AlignError {
        match e {
            LineError::Wire(e) => AlignError::wire(&self.path, &self.view, e),
            LineError::NegativeDuration { event, duration_ps } => {
                AlignError::NegativeDuration(crate::NegativeDuration {
                    path: self.path.clone(),
                    plane: plane.name.to_owned(),
                    line: index,
                    line_name: line.name.to_owned(),
                    event: event as u64,
                    duration_ps,
                })
            }
            LineError::Overflow { event, offset_ps } => AlignError::Overflow {
                path: self.path.clone(),
                plane: plane.name.to_owned(),
                line: line.name.to_owned(),
                line_id: line.id,
                event,
                value_ps: offset_ps,
            },
            LineError::LineField { field, value } => AlignError::LineFieldOverflow {
                path: self.path.clone(),
                plane: plane.name.to_owned(),
                line: line.name.to_owned(),
                line_id: line.id,
                field,
                value,
            },
            LineError::Correction {
                event,
                correction_ps,
            } => AlignError::CorrectionOverflow {
                path: self.path.clone(),
                plane: plane.name.to_owned(),
                line: line.name.to_owned(),
                line_id: line.id,
                event,
                correction_ps,
            },
        }
    }

    fn write_task_environment<W: BufferSink + Send>(
        &self,
        plane: Option<&PlaneView<'_>>,
        output: &PlaneOutput,
        writer: &mut XSpaceWriter<W>,
    ) -> Result<PlaneWritten> {
        let mut owned = self.task_environment(plane)?;
        owned.id = output.id;
        owned.name = output.name.clone();
        apply_stats(&mut owned, output);
        writer.plane(&owned)?;
        Ok(PlaneWritten {
            lines: owned.lines.len() as u64,
            events: owned.lines.iter().map(|l| l.events.len() as u64).sum(),
        })
    }

    fn line_context(&self, plane: &PlaneView<'_>, correction_stat: Option<i64>) -> LineContext<'_> {
        LineContext {
            clocks: &self.clocks,
            session_start_ns: self.session_start_ns,
            output_base_ns: self.output_base_ns,
            corrected_tracer: self.options.device_timeline == DeviceTimeline::CorrectedTracer
                && plane.name.starts_with("/device:"),
            correction_stat,
            correlated: None,
        }
    }

    /// The output's `Task Environment`: session start = the output base,
    /// the node's own start kept as [`ORIGINAL_PROFILE_START_STAT`], the
    /// stop time mapped onto the global clock.
    fn task_environment(&self, plane: Option<&PlaneView<'_>>) -> Result<XPlane> {
        let mut owned = match plane {
            Some(p) => p
                .to_owned()
                .map_err(|e| AlignError::wire(&self.path, &self.view, e))?,
            None => XPlane {
                name: TASK_ENV_PLANE.to_owned(),
                ..Default::default()
            },
        };
        let stop = owned.integer_stat(PROFILE_STOP_TIME);
        let time = |stat, ns| self.time_value(stat, ns);
        owned.set_stat(
            PROFILE_START_TIME,
            time(PROFILE_START_TIME, self.output_base_ns)?,
        );
        owned.set_stat(
            ORIGINAL_PROFILE_START_STAT,
            time(ORIGINAL_PROFILE_START_STAT, self.session_start_ns)?,
        );
        if let Some(stop) = stop {
            owned.set_stat(
                PROFILE_STOP_TIME,
                time(PROFILE_STOP_TIME, self.stop_on_global(stop))?,
            );
        }
        // Lines of this plane (rare) keep their absolute times.
        for line in &mut owned.lines {
            let ts = line.timestamp_ns as i128 + self.session_start_ns - self.output_base_ns;
            line.timestamp_ns = i64::try_from(ts).map_err(|_| AlignError::LineFieldOverflow {
                path: self.path.clone(),
                plane: TASK_ENV_PLANE.to_owned(),
                line: line.name.clone(),
                line_id: line.id,
                field: LineField::TimestampNs,
                value: ts,
            })?;
        }
        Ok(owned)
    }

    /// A uint64 time stat value (epoch ns); a time before the epoch or
    /// past 2^64 ns is an error naming the stat.
    fn time_value(&self, stat: &'static str, ns: i128) -> Result<x_stat::Value> {
        u64::try_from(ns)
            .map(x_stat::Value::Uint64Value)
            .map_err(|_| AlignError::SessionTimeOutOfRange {
                path: self.path.clone(),
                stat,
                value_ns: ns,
            })
    }
}

/// Refuse bytes that are not an XSpace at the top level (fields a view
/// would skip as unknown), as every reader does; nested messages are
/// checked as they are copied.
fn check_top_level(path: &Path, view: &SpaceView<'_>) -> Result<()> {
    view.check_top_level()
        .map_err(|e| AlignError::wire(path, view, e))
}

/// The lines of `plane`, parsed on all cores (parsing a line steps over
/// every event to find the fields after them); the first error in file
/// order, as a walk of [`PlaneView::lines`] meets it.
fn parse_lines<'a>(plane: &PlaneView<'a>) -> std::result::Result<Vec<LineView<'a>>, WireError> {
    let mut found = Vec::new();
    let mut unfound = None;
    for line in plane.lines().unparsed() {
        match line {
            Ok(line) => found.push(line),
            Err(e) => {
                unfound = Some(e);
                break;
            }
        }
    }
    let parsed: Vec<_> = found
        .into_par_iter()
        .with_max_len(1)
        .map(Unparsed::parse)
        .collect();
    let lines = parsed.into_iter().collect::<std::result::Result<_, _>>()?;
    match unfound {
        Some(e) => Err(e),
        None => Ok(lines),
    }
}

/// How the events with a correlation id of `plane` (its metadata as
/// `owned`, its position `place`) are gathered: kernels on a device plane,
/// launches on a host plane; `None` when it has no `correlation_id` stat.
fn correlated(plane: &PlaneView<'_>, owned: &XPlane, place: u64) -> Option<Correlated> {
    let kernel = plane.name.starts_with("/device:");
    if !kernel && !plane.name.starts_with("/host:") {
        return None;
    }
    let stat = owned
        .stat_metadata
        .iter()
        .find(|(_, m)| m.name == CORRELATION_ID_STAT)
        .map(|(&id, _)| id)?;
    Some(Correlated {
        stat,
        kernel,
        place,
    })
}

/// True when a line holds no event.
fn is_empty(line: &LineView<'_>) -> bool {
    line.events().next().is_none()
}

/// One aligned line: its encoded body, its counts, what its tap saw, its
/// events with a correlation id.
type AlignedLine<L> =
    std::result::Result<(Vec<u8>, LineCounts, Option<L>, LaunchCollector), LineError>;

/// A plane of the input, planned for writing (see [`NodeAligner::plan_plane`]).
struct PlannedPlane<'s, 'a, P> {
    view: PlaneView<'a>,
    lines: Vec<(LineView<'a>, LineClock)>,
    output: PlaneOutput,
    /// The `Task Environment`: written whole, not aligned line by line.
    task_env: bool,
    /// The plane's metadata and stats as written.
    owned: XPlane,
    ctx: LineContext<'s>,
    tapped: Option<P>,
}

/// Writes a node's planned planes as their aligned lines come, in order.
struct PlaneWriter<'w, 's, 'a, W: BufferSink + Send, T: EventTap<'a>> {
    aligner: &'s NodeAligner<'a>,
    planes: &'w [PlannedPlane<'s, 'a, T::Plane>],
    writer: &'w mut XSpaceWriter<W>,
    tap: &'w mut T,
    /// The first plane not written completely.
    next: usize,
    /// The counts of plane `next` when it is open.
    open: Option<LineCounts>,
    written: Vec<PlaneWritten>,
    total: LineCounts,
    reports: Vec<LineReport>,
    /// Events other than the clock snapshot pairs.
    profile_events: u64,
    /// The launches and kernels of the lines written, in order.
    found: LaunchCollector,
}

impl<'a, W: BufferSink + Send, T: EventTap<'a>> PlaneWriter<'_, '_, 'a, W, T> {
    /// Write every plane before plane `k` that is not written yet: those
    /// with lines are done with their last line; the others (a `Task
    /// Environment`, a plane without lines) are written whole here.
    fn planes_before(&mut self, k: usize) -> Result<()> {
        while self.next < k {
            let plane = &self.planes[self.next];
            if plane.task_env {
                let written = self.aligner.write_task_environment(
                    Some(&plane.view),
                    &plane.output,
                    self.writer,
                )?;
                self.written.push(written);
                self.next += 1;
            } else {
                self.open_plane()?;
                self.close_plane()?;
            }
        }
        Ok(())
    }

    fn open_plane(&mut self) -> Result<()> {
        if self.open.is_none() {
            let output = &self.planes[self.next].output;
            self.writer.begin_plane(output.id, &output.name)?;
            self.open = Some(LineCounts::default());
        }
        Ok(())
    }

    fn close_plane(&mut self) -> Result<()> {
        let plane = &self.planes[self.next];
        let counts = self.open.take().unwrap_or_default();
        let owned = &plane.owned;
        self.writer
            .end_plane(&owned.event_metadata, &owned.stat_metadata, &owned.stats)?;
        if plane.view.name != SNAPSHOT_PLANE {
            self.profile_events += counts.events + counts.copied;
        }
        self.written.push(PlaneWritten {
            lines: plane.lines.len() as u64,
            events: counts.events + counts.copied,
        });
        self.total.add(&counts);
        self.next += 1;
        Ok(())
    }

    /// Write line `j` of plane `k`, the next in order.
    fn line(&mut self, k: usize, j: usize, aligned: AlignedLine<T::Line>) -> Result<()> {
        self.planes_before(k)?;
        self.open_plane()?;
        let plane = &self.planes[k];
        let (line, clock) = &plane.lines[j];
        let (encoded, line_counts, seen, found) =
            aligned.map_err(|e| self.aligner.line_error(&plane.view, j, line, e))?;
        if !found.is_empty() {
            self.found.append(found);
        }
        self.writer.line_buffer(encoded, &self.aligner.buffers)?;
        if let (Some(p), Some(l)) = (plane.tapped.as_ref(), seen) {
            self.tap.line_done(p, l);
        }
        if let Some(counts) = self.open.as_mut() {
            counts.add(&line_counts);
        }
        self.reports.push(LineReport {
            plane: plane.view.name.to_owned(),
            line: line.name.to_owned(),
            line_id: line.id,
            clock: *clock,
            events: line_counts.events,
            copied: line_counts.copied,
        });
        if j + 1 == plane.lines.len() {
            self.close_plane()?;
        }
        Ok(())
    }
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
