//! Aligning one node: its trace file in, an aligned trace file out.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use xplane_proto::{
    CORRECTION_STAT, FileBytes, LineView, METADATA_PLANE, ORIGINAL_PROFILE_START_STAT,
    PROFILE_START_TIME, PROFILE_STOP_TIME, PlaneView, SNAPSHOT_PLANE, SpaceView, TASK_ENV_PLANE,
    XPlane, XPlaneExt, XSpaceFile, XSpaceWriter, x_stat,
};

use crate::clocks::NodeClocks;
use crate::diagnostics::{
    AnchorReport, LineCounts, LineReport, NodeDiagnostics, SkippedReport, SnapshotReport,
};
use crate::error::{AlignError, Result};
use crate::line::{LineClock, LineContext, LineError, align_line};
use crate::offsets::OffsetsFile;
use crate::options::{AlignOptions, DeviceTimeline};
use crate::snapshots::Snapshots;

/// One node's inputs. `None` fields are read from the files.
#[derive(Debug, Clone, Default)]
pub struct NodeInput {
    /// The node id (as in the offsets file).
    pub node_id: u32,
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

/// Lines are aligned in parallel in batches of about this many input bytes,
/// which bounds the memory held by encoded output lines.
const BATCH_BYTES: usize = 64 << 20;

/// Align one node's trace onto the global timeline and write it to `out`
/// (atomically: on any error nothing is written). The output's session
/// start is `output_session_start_ns` (the reference node's `T_sess`); when
/// `None` it is the node's own `T_sess` mapped onto the global clock.
pub fn align_node(
    input: &NodeInput,
    offsets: &OffsetsFile,
    options: &AlignOptions,
    output_session_start_ns: Option<i128>,
    out: &Path,
) -> Result<NodeDiagnostics> {
    let bytes = FileBytes::open(&input.trace)?;
    let mut aligner = NodeAligner::new(
        input,
        bytes.view(),
        offsets,
        options,
        output_session_start_ns,
    )?;
    let mut file = XSpaceFile::create(out)?;
    aligner.write(file.writer())?;
    let (hostnames, errors, warnings) = aligner.space_strings()?;
    file.commit(&hostnames, &errors, &warnings)?;
    Ok(aligner.into_diagnostics())
}

/// Align an XSpace held in memory (see [`align_node`]); `input.trace` only
/// names it in errors, and `input.snapshots` may still name a file.
pub fn align_space(
    input: &NodeInput,
    space: &xplane_proto::XSpace,
    offsets: &OffsetsFile,
    options: &AlignOptions,
    output_session_start_ns: Option<i128>,
) -> Result<(xplane_proto::XSpace, NodeDiagnostics)> {
    let encoded = xplane_proto::encode_xspace(space)?;
    let mut aligner = NodeAligner::new(
        input,
        SpaceView::new(&encoded),
        offsets,
        options,
        output_session_start_ns,
    )?;
    let mut writer = XSpaceWriter::new(std::io::Cursor::new(Vec::new()));
    aligner.write(&mut writer)?;
    let (hostnames, errors, warnings) = aligner.space_strings()?;
    let out = writer.finish(&hostnames, &errors, &warnings)?.into_inner();
    let aligned = SpaceView::new(&out)
        .to_owned()
        .map_err(|e| AlignError::wire(&input.trace, e))?;
    Ok((aligned, aligner.into_diagnostics()))
}

/// One node, ready to write: its clocks, its session start, and the plan
/// for every line. Use [`align_node`] for files; this type lets a caller
/// stream the aligned planes into its own [`XSpaceWriter`].
pub struct NodeAligner<'a> {
    path: PathBuf,
    view: SpaceView<'a>,
    clocks: NodeClocks,
    options: AlignOptions,
    session_start_ns: i128,
    output_base_ns: i128,
    diagnostics: NodeDiagnostics,
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
        let path = input.trace.clone();
        let wire = |e| AlignError::wire(&path, e);
        let session_start_ns = match input.session_start_ns {
            Some(t) => t,
            None => xplane_proto::session_start_ns_view(&view).map_err(wire)?,
        };
        let snapshots = match &input.snapshots {
            Some(p) => Some(Snapshots::read(p)?),
            None => Snapshots::from_trace(&path, &view, session_start_ns)?,
        };
        let clocks = NodeClocks::build(
            input.node_id,
            offsets,
            snapshots,
            input.start_walltime_ns,
            input.start_gpu_ns,
            options,
        )?;
        let output_base_ns = match output_session_start_ns {
            Some(t) => t,
            None if session_start_ns == 0 => 0,
            None => clocks
                .host_to_global(clock_model::HostTime::from_ps(session_start_ns * 1000))
                .time
                .as_ns_floor(),
        };
        let diagnostics =
            initial_diagnostics(input, &clocks, options, session_start_ns, output_base_ns);
        let aligner = NodeAligner {
            path,
            view,
            clocks,
            options: options.clone(),
            session_start_ns,
            output_base_ns,
            diagnostics,
        };
        aligner.check_tracer_inputs()?;
        Ok(aligner)
    }

    /// The clock each line of a plane is on.
    fn line_clock(&self, plane: &PlaneView<'_>, line: &LineView<'_>) -> LineClock {
        let name = plane.name;
        if name == TASK_ENV_PLANE || name == SNAPSHOT_PLANE || name == METADATA_PLANE {
            LineClock::Unchanged
        } else if name.starts_with("/device:") {
            LineClock::Tracer
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

    /// Fail before writing anything when tracer-clock events lack the
    /// snapshot pairs or the tracer start `(S_w, S_g)`.
    fn check_tracer_inputs(&self) -> Result<()> {
        let missing = if self.clocks.snapshot.is_none() {
            "the node has no clock snapshot pairs (no /host:snapshots plane with pairs, and no snapshots file)"
        } else if self.clocks.start_walltime_ns.is_none() {
            "the node has no start_walltime_ns (S_w)"
        } else if self.clocks.start_gpu_ns.is_none() {
            "start_gpu_ns (S_g) is unknown (0 in the offsets header); give it explicitly"
        } else {
            // Everything the tracer path needs is there: no need to look.
            return Ok(());
        };
        let wire = |e| AlignError::wire(&self.path, e);
        for plane in self.view.planes() {
            let plane = plane.map_err(wire)?;
            for line in plane.lines() {
                let line = line.map_err(wire)?;
                if self.line_clock(&plane, &line) == LineClock::Tracer
                    && line.events().next().is_some()
                {
                    return Err(AlignError::invalid(
                        &self.path,
                        format!("plane '{}', line '{}'", plane.name, line.name),
                        format!("events on the tracer clock, but {missing}"),
                    ));
                }
            }
        }
        Ok(())
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
                .map_err(|e| AlignError::wire(&self.path, e))
        };
        Ok((
            collect(self.view.hostnames())?,
            collect(self.view.errors())?,
            collect(self.view.warnings())?,
        ))
    }

    /// Write every aligned plane into `writer` (which must be between planes).
    pub fn write<W: std::io::Write + std::io::Seek>(
        &mut self,
        writer: &mut XSpaceWriter<W>,
    ) -> Result<()> {
        let wire = |e| AlignError::wire(&self.path, e);
        let mut total = LineCounts::default();
        let mut reports = Vec::new();
        let mut has_task_env = false;
        for plane in self.view.planes() {
            let plane = plane.map_err(wire)?;
            if plane.name == TASK_ENV_PLANE {
                has_task_env = true;
                writer.plane(&self.task_environment(Some(&plane))?)?;
                continue;
            }
            let (counts, plane_reports) = self.write_plane(&plane, writer)?;
            total.add(&counts);
            reports.extend(plane_reports);
        }
        if !has_task_env && self.output_base_ns != 0 {
            writer.plane(&self.task_environment(None)?)?;
        }
        self.diagnostics.set_counts(&total);
        self.diagnostics.lines = reports;
        Ok(())
    }

    /// The diagnostics (complete after [`NodeAligner::write`]).
    pub fn diagnostics(&self) -> &NodeDiagnostics {
        &self.diagnostics
    }

    /// The diagnostics, consuming the aligner.
    pub fn into_diagnostics(self) -> NodeDiagnostics {
        self.diagnostics
    }

    fn write_plane<W: std::io::Write + std::io::Seek>(
        &self,
        plane: &PlaneView<'_>,
        writer: &mut XSpaceWriter<W>,
    ) -> Result<(LineCounts, Vec<LineReport>)> {
        let wire = |e| AlignError::wire(&self.path, e);
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
        let lines: Vec<(LineView<'_>, LineClock)> = plane
            .lines()
            .map(|l| l.map(|l| (l, self.line_clock(plane, &l))))
            .collect::<Result<_, _>>()
            .map_err(wire)?;
        let aligns = lines.iter().any(|(_, c)| *c != LineClock::Unchanged);
        let correction_stat =
            (self.options.correction_stat && aligns).then(|| owned.intern_stat(CORRECTION_STAT));
        let ctx = LineContext {
            clocks: &self.clocks,
            session_start_ns: self.session_start_ns,
            output_base_ns: self.output_base_ns,
            corrected_tracer: self.options.device_timeline == DeviceTimeline::CorrectedTracer
                && plane.name.starts_with("/device:"),
            correction_stat,
        };
        writer.begin_plane(owned.id, &owned.name)?;
        let mut counts = LineCounts::default();
        let mut reports = Vec::with_capacity(lines.len());
        for batch in batches(&lines) {
            let results: Vec<_> = batch
                .par_iter()
                .map(|(line, clock)| {
                    let mut out = Vec::with_capacity(line.encoded().len() + 64);
                    align_line(&ctx, line, *clock, &mut out).map(|c| (out, c))
                })
                .collect();
            for ((line, clock), result) in batch.iter().zip(results) {
                let (encoded, line_counts) = result.map_err(|e| self.line_error(plane, line, e))?;
                writer.line_encoded(&encoded)?;
                counts.add(&line_counts);
                reports.push(LineReport {
                    plane: plane.name.to_owned(),
                    line: line.name.to_owned(),
                    line_id: line.id,
                    clock: *clock,
                    events: line_counts.events,
                    copied: line_counts.copied,
                });
            }
        }
        writer.end_plane(&owned.event_metadata, &owned.stat_metadata, &owned.stats)?;
        Ok((counts, reports))
    }

    fn line_error(&self, plane: &PlaneView<'_>, line: &LineView<'_>, e: LineError) -> AlignError {
        match e {
            LineError::Wire(e) => AlignError::wire(&self.path, e),
            LineError::Overflow { event, offset_ps } => AlignError::invalid(
                &self.path,
                format!(
                    "plane '{}', line '{}' (id {}), event {event}",
                    plane.name, line.name, line.id
                ),
                format!("aligned time {offset_ps} ps from the line start does not fit int64"),
            ),
        }
    }

    /// The output's `Task Environment`: session start = the output base,
    /// the node's own start kept as [`ORIGINAL_PROFILE_START_STAT`], the
    /// stop time mapped onto the global clock.
    fn task_environment(&self, plane: Option<&PlaneView<'_>>) -> Result<XPlane> {
        let mut owned = match plane {
            Some(p) => p.to_owned().map_err(|e| AlignError::wire(&self.path, e))?,
            None => XPlane {
                name: TASK_ENV_PLANE.to_owned(),
                ..Default::default()
            },
        };
        let stop = owned.integer_stat(PROFILE_STOP_TIME);
        owned.set_stat(PROFILE_START_TIME, time_value(self.output_base_ns));
        owned.set_stat(
            ORIGINAL_PROFILE_START_STAT,
            time_value(self.session_start_ns),
        );
        if let Some(stop) = stop {
            let g = self
                .clocks
                .host_to_global(clock_model::HostTime::from_ps(stop * 1000));
            owned.set_stat(PROFILE_STOP_TIME, time_value(g.time.as_ns_floor()));
        }
        // Lines of this plane (rare) keep their absolute times.
        for line in &mut owned.lines {
            line.timestamp_ns =
                (line.timestamp_ns as i128 + self.session_start_ns - self.output_base_ns) as i64;
        }
        Ok(owned)
    }
}

/// Split lines into batches of about [`BATCH_BYTES`] input bytes.
fn batches<'l, 'a>(lines: &'l [(LineView<'a>, LineClock)]) -> Vec<&'l [(LineView<'a>, LineClock)]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    for (i, (line, _)) in lines.iter().enumerate() {
        bytes += line.encoded().len();
        if bytes >= BATCH_BYTES {
            out.push(&lines[start..=i]);
            start = i + 1;
            bytes = 0;
        }
    }
    if start < lines.len() {
        out.push(&lines[start..]);
    }
    out
}

/// A uint64 time stat value (epoch ns; negative values cannot occur for
/// real session times and are clamped to 0).
fn time_value(ns: i128) -> x_stat::Value {
    x_stat::Value::Uint64Value(ns.max(0) as u64)
}

fn initial_diagnostics(
    input: &NodeInput,
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
                    host_ns: a.host.as_ps() as f64 / 1000.0,
                    offset_ns: a.offset.as_ps() as f64 / 1000.0,
                    source: format!("{:?}", a.source),
                })
                .collect(),
            a.skipped
                .iter()
                .map(|s| SkippedReport {
                    round_id: s.round_id,
                    reason: format!("{:?}", s.reason),
                })
                .collect(),
            a.warnings.iter().map(|w| format!("{w:?}")).collect(),
        ),
        None => (Vec::new(), Vec::new(), Vec::new()),
    };
    NodeDiagnostics {
        node_id: input.node_id,
        trace: input.trace.clone(),
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
                .map(|(a, b)| (a.sys_ns, b.sys_ns)),
        }),
        anchors_used,
        anchors_skipped,
        warnings,
        offset_model: clocks.offset_choice.as_ref().map(Into::into),
        events_corrected: 0,
        events_clamped: 0,
        extrapolated: Default::default(),
        correction: None,
        policies: options.clone(),
        lines: Vec::new(),
    }
}
