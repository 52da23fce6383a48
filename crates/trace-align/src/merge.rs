//! Align every node of a run straight into one merged trace, reading each
//! trace once: no intermediate files, no second read of input or output.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clock_model::NodeId;

use alignment_core::{NodeAligner, NodeDiagnostics, PlaneOutput, PlaneSource};
use rayon::prelude::*;
use serde::Serialize;
use trace_merge::{
    IdScheme, MergeReport, NodeLayout, NodeReport, PlaneKind, PlaneReport, PlannedPlane,
    SnapshotSummary,
};
use xplane_proto::{FileBytes, TASK_ENV_PLANE, XPlane, XSpaceFile};

use crate::each::output_session_start;
use crate::error::{Result, RunError};
use crate::node::{NodeCollectives, PreparedNode, WalkCaptures, Walked, open};
use crate::outcome::MergeOutcome;
use crate::plan::Plan;
use crate::write::{Output, OutputKind};

/// How to merge.
#[derive(Debug, Clone)]
pub struct MergeSettings {
    /// Plane ids per node in the merged trace (GPU plane id = node ×
    /// stride + ordinal); see [`trace_merge::MergeOptions`].
    pub gpu_id_stride: u32,
    /// Check the collectives before and after alignment.
    pub validate: bool,
    /// How collectives are read and checked.
    pub collectives: collective_check::Options,
    /// Where to write the summary; `None`: `<output name>.metadata.json` beside
    /// the output.
    pub summary_path: Option<PathBuf>,
    /// Slice tracks a Perfetto or Chrome JSON export of the merge adds
    /// (the cross-node critical path, for one); any other output with
    /// tracks is [`RunError::TracksWithoutExport`].
    pub tracks: Vec<perfetto_export::NodeTrack>,
}

impl Default for MergeSettings {
    fn default() -> Self {
        MergeSettings {
            gpu_id_stride: trace_merge::DEFAULT_GPU_ID_STRIDE,
            validate: true,
            collectives: collective_check::Options::default(),
            summary_path: None,
            tracks: Vec::new(),
        }
    }
}

/// The summary file: the merge report and every node's alignment.
#[derive(Serialize)]
struct Summary<'a> {
    #[serde(flatten)]
    merge: &'a MergeReport,
    alignment: &'a [NodeDiagnostics],
}

/// A node ready to be merged: its clocks, its layout in the merged trace,
/// its stop time on the global clock.
struct MergeNode<'p> {
    node: PreparedNode<'p>,
    layout: NodeLayout,
    stop_ns: Option<i128>,
    /// The reference node's aligned `Task Environment`.
    task_env: Option<XPlane>,
    /// The trace as opened (and its pages mapped) to prepare the node,
    /// kept for the first node merged.
    opened: Option<FileBytes>,
}

impl Plan {
    /// Align every node and merge them into one trace at `output`, checking
    /// the collectives before and after; see [`Plan::merge_with_progress`].
    pub fn merge(
        &self,
        output: impl AsRef<Path>,
        settings: &MergeSettings,
    ) -> Result<MergeOutcome> {
        self.merge_with_progress(output, settings, |_| {})
    }

    /// Align every node and merge them into one trace at `output`, calling
    /// `progress` with each node id once its planes are written.
    ///
    /// Each trace is memory-mapped and read once: its planes are aligned
    /// straight into the merged writer (lines in parallel), and its
    /// collectives, as recorded and as aligned, are taken from that walk
    /// (every event passes the collective scan with its mapped times).
    /// Nodes are written one after the other; the next node's trace is
    /// mapped while one is aligned, so memory holds at most two nodes'
    /// mappings at a time. The output and its summary appear only when
    /// complete; on any error neither is written.
    pub fn merge_with_progress(
        &self,
        output: impl AsRef<Path>,
        settings: &MergeSettings,
        progress: impl FnMut(NodeId),
    ) -> Result<MergeOutcome> {
        let output = Output::xspace(output.as_ref());
        let written = self.write_merge(&output, settings, progress, None)?;
        self.publish(written, settings)
    }

    /// Align every node and merge them into `output`: one XSpace file
    /// ([`Plan::merge_with_progress`]), or a Perfetto trace or Chrome
    /// trace JSON exported as the merge is written. An export reads each
    /// trace once and writes no merged XSpace to disk: the merge is held
    /// in memory and exported from there, the collectives' flows and
    /// violation marks taken from the merge's own check and each node's
    /// applied correction added as a counter track. The output and its
    /// summary appear together, or neither.
    pub fn merge_into(
        &self,
        output: &Output,
        settings: &MergeSettings,
        progress: impl FnMut(NodeId),
    ) -> Result<MergeOutcome> {
        let written = self.write_merge(output, settings, progress, None)?;
        self.publish(written, settings)
    }

    /// Align every node into the merged trace, a temporary file until
    /// [`Plan::publish`]; with `host_clock`, the collectives of those
    /// nodes are also captured on their own host clocks, read with those
    /// options.
    pub(crate) fn write_merge(
        &self,
        output: &Output,
        settings: &MergeSettings,
        progress: impl FnMut(NodeId),
        host_clock: Option<(&BTreeSet<NodeId>, &collective_check::Options)>,
    ) -> Result<Unpublished> {
        let path = output.path();
        let summary_path = settings
            .summary_path
            .clone()
            .unwrap_or_else(|| trace_merge::summary_beside(path));
        self.check_reference()?;
        self.check_output(path)?;
        self.check_output(&summary_path)?;
        let scheme = IdScheme::new(settings.gpu_id_stride)
            .ok_or(RunError::GpuIdStride(settings.gpu_id_stride))?;
        let mut nodes: Vec<MergeNode<'_>> = self
            .merge_order()
            .into_par_iter()
            .enumerate()
            .with_max_len(1) // one task per node
            .map(|(k, input)| self.prepare_merge(input, scheme, k == 0))
            // In node order, so that the error of a run with several is the
            // first node's, whichever task ends first.
            .collect::<Vec<_>>()
            .into_iter()
            .collect::<Result<_>>()?;
        let t_ref = output_session_start(nodes.iter().map(|n| &n.node));
        let stop = nodes.iter().filter_map(|n| n.stop_ns).max();
        let mut sink = MergeSink::create(output, &nodes)?;
        let walk = MergeWalk {
            nodes: &mut nodes,
            path,
            t_ref,
            stop,
            scheme,
            settings,
            host_clock,
        };
        let walked = match &mut sink {
            MergeSink::File(file) => self.merge_nodes(walk, file.writer(), progress),
            MergeSink::Memory(writer) => self.merge_nodes(walk, writer, progress),
        }?;
        Ok(Unpublished {
            sink,
            summary: summary_path,
            walked,
        })
    }

    /// Align `walk`'s nodes one after the other into `writer`, after the
    /// merged `Task Environment`.
    fn merge_nodes<W: xplane_proto::BufferSink + Send>(
        &self,
        walk: MergeWalk<'_, '_>,
        writer: &mut xplane_proto::XSpaceWriter<W>,
        mut progress: impl FnMut(NodeId),
    ) -> Result<Written> {
        let MergeWalk {
            nodes,
            path: output,
            t_ref,
            stop,
            scheme,
            settings,
            host_clock,
        } = walk;
        let reference = self.options.reference_node;
        let mut layout = nodes[0].layout.clone();
        layout.task_env = nodes[0].task_env.clone();
        writer
            .plane(&trace_merge::merged_task_environment(&layout, t_ref, stop))
            .map_err(RunError::write(output))?;
        let mut report = MergeReport::new(output, reference, t_ref, stop, scheme);
        let mut diagnostics = Vec::with_capacity(nodes.len());
        let mut collectives = settings.validate.then(NodeCollectives::default);
        let mut on_host = BTreeMap::new();
        let buffers = xplane_proto::BufferPool::new();
        let mut opened = nodes[0].opened.take();
        for (k, n) in nodes.iter().enumerate() {
            let id = n.node.input.node_id;
            let bytes = match opened.take() {
                Some(bytes) => bytes,
                None => open(&n.node.input.trace)?,
            };
            let captures = WalkCaptures {
                validation: settings.validate.then_some(&settings.collectives),
                host_clock: host_clock
                    .filter(|(nodes, _)| nodes.contains(&id))
                    .map(|(_, options)| options),
                buffers: &buffers,
            };
            // Pages are mapped beside the alignment, not on its path: this
            // node's second half while its first half is aligned, then the
            // next node's first half. At most one and a half files are
            // mapped at once, not two.
            let (merged, next) = rayon::join(
                || self.merge_node(n, &bytes, t_ref, scheme, captures, writer),
                || {
                    bytes.prefault_range(bytes.len() / 2..bytes.len());
                    nodes
                        .get(k + 1)
                        .map(|next| opened_ahead(&next.node.input.trace))
                },
            );
            // Unmapped beside the next node's work.
            rayon::spawn(move || drop(bytes));
            let (node_report, walked) = merged?;
            opened = next.transpose()?;
            report.push_node(node_report);
            diagnostics.push(walked.diagnostics);
            if let (Some(all), Some(c)) = (collectives.as_mut(), walked.collectives) {
                all.before.append(c.before);
                all.after.append(c.after);
            }
            if let Some(e) = walked.host_clock {
                on_host.insert(id, e);
            }
            progress(id);
        }
        // The line buffers (tens of MB) are freed beside what follows.
        rayon::spawn(move || drop(buffers));
        report.finish();
        diagnostics.sort_by_key(|d| d.node_id);
        Ok(Written {
            report,
            diagnostics,
            collectives,
            on_host,
        })
    }

    /// Put a merge written under this plan in place, with its summary,
    /// and check its collectives.
    pub(crate) fn publish(
        &self,
        written: Unpublished,
        settings: &MergeSettings,
    ) -> Result<MergeOutcome> {
        let Unpublished {
            sink,
            summary,
            walked:
                Written {
                    report,
                    diagnostics,
                    collectives,
                    on_host: _,
                },
        } = written;
        let output = report.output.clone();
        let collectives = collectives.map(|mut c| {
            name_merged_nodes(&mut c.after, &report);
            c
        });
        let check =
            |c: &collective_check::Extraction| collective_check::check(c, &settings.collectives);
        let stage_summary = || {
            trace_merge::stage_summary(
                &summary,
                &Summary {
                    merge: &report,
                    alignment: &diagnostics,
                },
            )
            .map_err(RunError::Merge)
        };
        let (before, after, export) = match sink {
            // The checks run while the trace's last bytes reach the file.
            MergeSink::File(file) => {
                let (put, (before, after)) = rayon::join(
                    || {
                        let trace = file
                            .finish(&report.hostnames, &[], &report.warnings)
                            .map_err(RunError::write(&output))?;
                        // Both appear, or neither (an error, a signal).
                        trace_merge::persist_with_summary(
                            (trace, &output),
                            (stage_summary()?, &summary),
                        )
                        .map_err(RunError::Merge)
                    },
                    || match &collectives {
                        Some(c) => {
                            let (before, after) =
                                rayon::join(|| check(&c.before), || check(&c.after));
                            (Some(before), Some(after))
                        }
                        None => (None, None),
                    },
                );
                put?;
                (before, after, None)
            }
            // The export draws the flows of the merge's own check: it
            // runs first, the check of the recorded times beside it. The
            // export stays on this thread, outside the pool, so that its
            // bundles are compressed on the pool.
            MergeSink::Memory(writer) => {
                let bytes = writer
                    .finish(&report.hostnames, &[], &report.warnings)
                    .map_err(RunError::write(&output))?
                    .into_inner();
                let ((before, after), export) = match &collectives {
                    Some(c) => std::thread::scope(|scope| {
                        let before = scope.spawn(|| check(&c.before));
                        let after = check(&c.after);
                        let export =
                            self.export_merged(&bytes, &report, Some(&after), &settings.tracks);
                        let before = before
                            .join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                        ((Some(before), Some(after)), export)
                    }),
                    None => (
                        (None, None),
                        self.export_merged(&bytes, &report, None, &settings.tracks),
                    ),
                };
                drop(bytes);
                let (exported, staged) = export?;
                trace_merge::persist_with_summary((staged, &output), (stage_summary()?, &summary))
                    .map_err(RunError::Merge)?;
                (before, after, Some(exported))
            }
        };
        Ok(MergeOutcome {
            summary: Some(summary),
            node_clocks: self.node_clocks.clone(),
            clock_warnings: self.clock_warnings.clone(),
            repair: self.repair_outcome(&diagnostics),
            nodes: diagnostics,
            merge: Some(report),
            before,
            after,
            export,
            ..MergeOutcome::new(
                output,
                self.clocks.source(),
                self.clock_reason,
                self.clocks.estimate_report(),
            )
        })
    }

    /// Build a node's clocks and its layout in the merged trace.
    fn prepare_merge<'p>(
        &self,
        input: &'p alignment_core::NodeInput,
        scheme: IdScheme,
        keep_open: bool,
    ) -> Result<MergeNode<'p>> {
        let is_reference = input.node_id == self.options.reference_node;
        let bytes = open(&input.trace)?;
        let node = self.prepare_from(input, &bytes)?;
        let view = bytes.view();
        let layout = NodeLayout::survey(
            &view,
            &input.trace,
            input.node_id,
            None,
            is_reference,
            scheme,
        )
        .map_err(|source| RunError::Layout {
            node: input.node_id,
            source,
        })?;
        let stop_ns = layout
            .session_stop_ns
            .map(|stop| node.clocks.host_ns_to_global_ns(stop));
        let task_env = if is_reference {
            NodeAligner::with_clocks(
                &input.trace,
                view,
                node.clocks.clone(),
                node.session_start_ns,
                &self.options,
                Some(node.session_start_ns),
            )
            .and_then(|a| a.aligned_task_environment())
            .map_err(RunError::align(input.node_id))?
        } else {
            None
        };
        Ok(MergeNode {
            node,
            layout,
            stop_ns,
            task_env,
            opened: keep_open.then_some(bytes),
        })
    }

    /// Align one node into the merged writer.
    fn merge_node<W: xplane_proto::BufferSink + Send>(
        &self,
        n: &MergeNode<'_>,
        bytes: &FileBytes,
        t_ref: i128,
        scheme: IdScheme,
        captures: WalkCaptures<'_>,
        writer: &mut xplane_proto::XSpaceWriter<W>,
    ) -> Result<(NodeReport, Walked)> {
        let input = n.node.input;
        let mut placer = Placer::new(
            &n.layout,
            scheme,
            input.node_id == self.options.reference_node,
            n.node.session_start_ns,
        );
        let walked = n.node.align_into(
            bytes,
            &self.options,
            t_ref,
            writer,
            |source| placer.place(source),
            captures,
        )?;
        let (planes, snapshots) = placer.finish(&input.trace, &bytes.view())?;
        let planes = planes
            .into_iter()
            .zip(&walked.written)
            .map(|(plane, w)| PlaneReport {
                lines: w.lines,
                events: w.events,
                ..plane
            })
            .collect();
        let report = NodeReport {
            node_id: input.node_id,
            path: input.trace.clone(),
            hostname: n.layout.hostname.clone(),
            session_start_ns: t_ref,
            session_stop_ns: n.stop_ns,
            rebase_ns: 0,
            snapshots,
            planes,
        };
        Ok((report, walked))
    }
}

/// Open a node's trace and map the pages of its first half
/// ([`FileBytes::prefault_range`]): the second half is mapped while the
/// first is aligned.
fn opened_ahead(path: &Path) -> Result<FileBytes> {
    let bytes = open(path)?;
    bytes.prefault_range(0..bytes.len() / 2);
    Ok(bytes)
}

/// Where a merge's XSpace goes as its nodes are aligned.
pub(crate) enum MergeSink {
    /// A temporary file beside the output, put in place by [`Plan::publish`].
    File(XSpaceFile),
    /// Memory, exported by [`Plan::publish`] in the format the output's
    /// name asks for.
    Memory(xplane_proto::XSpaceWriter<std::io::Cursor<Vec<u8>>>),
}

impl MergeSink {
    /// The sink `output` asks for; in memory, room for the traces' bytes
    /// (a merge is about as large as its inputs).
    fn create(output: &Output, nodes: &[MergeNode<'_>]) -> Result<MergeSink> {
        let path = output.path();
        Ok(match output.kind() {
            OutputKind::XSpace => {
                MergeSink::File(XSpaceFile::create(path).map_err(RunError::write(path))?)
            }
            // A merge writes one file.
            OutputKind::EachNode(_) | OutputKind::PerfettoArchive => {
                return Err(RunError::OutputFormat {
                    path: path.to_path_buf(),
                    expected: Output::SUFFIXES.join(", "),
                });
            }
            OutputKind::Export(_) => {
                let inputs: u64 = nodes
                    .iter()
                    .filter_map(|n| std::fs::metadata(&n.node.input.trace).ok())
                    .map(|m| m.len())
                    .sum();
                // A little over the inputs (the merged `Task Environment`,
                // node stats, renumbered rows): growing the buffer would
                // copy it whole. Room never written costs no memory.
                let room = inputs + inputs / 16 + (1 << 20);
                let capacity = usize::try_from(room).unwrap_or(0);
                let buffer = std::io::Cursor::new(Vec::with_capacity(capacity));
                MergeSink::Memory(xplane_proto::XSpaceWriter::new(buffer))
            }
        })
    }
}

/// What [`Plan::merge_nodes`] aligns, and how.
struct MergeWalk<'n, 'p> {
    nodes: &'n mut [MergeNode<'p>],
    /// The output, as the report names it.
    path: &'n Path,
    t_ref: i128,
    stop: Option<i128>,
    scheme: IdScheme,
    settings: &'n MergeSettings,
    host_clock: Option<(&'n BTreeSet<NodeId>, &'n collective_check::Options)>,
}

/// What the aligning walk of a merge found.
pub(crate) struct Written {
    report: MergeReport,
    diagnostics: Vec<NodeDiagnostics>,
    collectives: Option<NodeCollectives>,
    /// Per node id, its collectives on its own host clock, when captured.
    pub on_host: BTreeMap<NodeId, collective_check::Extraction>,
}

/// A merge written but not in place: its trace is a temporary file or
/// memory until [`Plan::publish`] (dropped, nothing appears).
pub(crate) struct Unpublished {
    sink: MergeSink,
    summary: PathBuf,
    /// What the walk found.
    pub walked: Written,
}

impl Unpublished {
    /// The collectives as merged, when the merge validates.
    pub(crate) fn aligned_collectives(&self) -> Option<&collective_check::Extraction> {
        self.walked.collectives.as_ref().map(|c| &c.after)
    }
}

/// Places the planes of one node as the aligner writes them.
struct Placer<'l> {
    layout: &'l NodeLayout,
    scheme: IdScheme,
    is_reference: bool,
    session_start_ns: i128,
    next: usize,
    planes: Vec<PlaneReport>,
    snapshots: Option<SnapshotSummary>,
    problem: Option<xplane_proto::WireError>,
    changed: bool,
}

impl<'l> Placer<'l> {
    fn new(
        layout: &'l NodeLayout,
        scheme: IdScheme,
        is_reference: bool,
        session_start_ns: i128,
    ) -> Self {
        Placer {
            layout,
            scheme,
            is_reference,
            session_start_ns,
            next: 0,
            planes: Vec::new(),
            snapshots: None,
            problem: None,
            changed: false,
        }
    }

    fn place(&mut self, source: &PlaneSource<'_, '_>) -> PlaneOutput {
        let planned = match self.layout.planes.get(self.next) {
            Some(p) if p.original_name == source.name => {
                self.next += 1;
                p.clone()
            }
            // The `Task Environment` the aligner adds to a trace without one.
            _ if source.name == TASK_ENV_PLANE && source.lines.is_empty() => {
                added_task_environment(self.scheme, self.layout.node_id, self.is_reference)
            }
            _ => {
                self.changed = true;
                added_task_environment(self.scheme, self.layout.node_id, self.is_reference)
            }
        };
        let display_ids = if planned.placement.drawn {
            trace_merge::renumbered_rows(source.lines)
        } else {
            Default::default()
        };
        if planned.kind == PlaneKind::Snapshots {
            for line in source.lines {
                match SnapshotSummary::of_line(line, self.session_start_ns) {
                    Ok(Some(s)) => self.snapshots = Some(s.join(self.snapshots)),
                    Ok(None) => {}
                    Err(e) => self.problem = self.problem.or(Some(e)),
                }
            }
        }
        self.planes.push(PlaneReport {
            rows_renumbered: display_ids.len() as u64,
            ..PlaneReport::placed(&planned)
        });
        PlaneOutput {
            id: planned.placement.id,
            name: planned.placement.name.clone(),
            set_stats: self.layout.added_stats(&planned.original_name),
            display_ids,
        }
    }

    fn finish(
        self,
        path: &Path,
        view: &xplane_proto::SpaceView<'_>,
    ) -> Result<(Vec<PlaneReport>, Option<SnapshotSummary>)> {
        if let Some(source) = self.problem {
            return Err(RunError::Layout {
                node: self.layout.node_id,
                source: trace_merge::MergeError::corrupt(path, view, source),
            });
        }
        if self.changed || self.next != self.layout.planes.len() {
            return Err(RunError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::other("the file changed while it was being merged"),
            });
        }
        Ok((self.planes, self.snapshots))
    }
}

/// Where a node's added `Task Environment` goes: hidden, as any other.
fn added_task_environment(scheme: IdScheme, node: NodeId, is_reference: bool) -> PlannedPlane {
    let kind = PlaneKind::TaskEnvironment;
    PlannedPlane {
        original_name: TASK_ENV_PLANE.to_owned(),
        original_id: 0,
        kind,
        placement: trace_merge::place(scheme, node, is_reference, kind, TASK_ENV_PLANE, 0)
            .expect("a Task Environment has no GPU ordinal to misplace"),
    }
}

/// The merged collectives name their nodes' hosts and the merged file, as
/// a check of the merged trace would.
fn name_merged_nodes(after: &mut collective_check::Extraction, report: &MergeReport) {
    for node in &report.nodes {
        if let Some(info) = after.nodes.get_mut(&node.node_id) {
            info.hostname.clone_from(&node.hostname);
            info.files = vec![report.output.display().to_string()];
        }
    }
}
