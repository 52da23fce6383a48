//! Align every node of a run into its own file: the per-node outputs that
//! tools reading one trace per rank expect.

use std::path::{Path, PathBuf};

use alignment_core::{NodeDiagnostics, PlaneOutput};
use collective_check::Report;
use rayon::prelude::*;
use serde::Serialize;
use xplane_proto::{SpaceView, XSpaceFile};

use crate::clocks::{ClockReason, ClockSource};
use crate::error::{Result, RunError};
use crate::node::{NodeCollectives, PreparedNode, WalkCaptures, open};
use crate::node_clock::{ClockWarning, NodeClock};
use crate::plan::Plan;

/// One node's aligned trace.
#[derive(Debug, Clone, Serialize)]
pub struct AlignedNode {
    /// The aligned trace.
    pub output: PathBuf,
    /// What alignment did.
    pub diagnostics: NodeDiagnostics,
}

/// What aligning every node did.
#[derive(Debug, Clone, Serialize)]
pub struct AlignEachOutcome {
    /// Where the clock corrections came from.
    pub clock_source: ClockSource,
    /// Why that source.
    pub clock_reason: ClockReason,
    /// Per node: where its correction came from, why, and the check of its
    /// probe offsets against its collectives.
    pub node_clocks: Vec<NodeClock>,
    /// What the clock planning warned about.
    pub clock_warnings: Vec<ClockWarning>,
    /// The estimate from the collectives, when the clocks rest on them.
    pub collective_clocks: Option<collective_clock::EstimateReport>,
    /// Per node, by node id.
    pub nodes: Vec<AlignedNode>,
    /// What the repair of the collectives moved, when the plan repairs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair: Option<crate::repair::RepairOutcome>,
    /// The collectives as recorded (when validated).
    pub before: Option<Report>,
    /// The collectives as aligned (when validated).
    pub after: Option<Report>,
}

impl Plan {
    /// Align every node into `out_dir`, each under its input's file name:
    /// every plane, line, event and stat of the input in the same order,
    /// only times changed, all on one session start: the earliest of the
    /// nodes' own starts on the global clock (`output_session_start`).
    /// With `collectives`, the happens-before check before and after comes
    /// from the same read. Every node's clocks are built before anything
    /// is written; each file appears only when complete.
    pub fn align_each(
        &self,
        out_dir: impl AsRef<Path>,
        collectives: Option<&collective_check::Options>,
    ) -> Result<AlignEachOutcome> {
        self.align_each_as(out_dir, &OutputLayout::SameNames, collectives)
    }

    /// [`Plan::align_each`], the outputs placed in `out_dir` by `layout`
    /// (e.g. as an xprof log folder that shows every node as a host of one
    /// run).
    pub fn align_each_as(
        &self,
        out_dir: impl AsRef<Path>,
        layout: &OutputLayout,
        collectives: Option<&collective_check::Options>,
    ) -> Result<AlignEachOutcome> {
        let out_dir = out_dir.as_ref();
        let outputs = self.outputs_in(out_dir, layout)?;
        crate::check_out_dir(out_dir)?;
        let prepared = self
            .nodes
            .par_iter()
            .with_max_len(1) // one task per node
            .map(|input| self.prepare(input))
            // In node order, so that the error of a run with several is the
            // first node's, whichever task ends first.
            .collect::<Vec<_>>()
            .into_iter()
            .collect::<Result<Vec<_>>>()?;
        if !prepared
            .iter()
            .any(|p| p.input.node_id == self.options.reference_node)
        {
            return Err(self.no_reference());
        }
        let t_ref = output_session_start(&prepared);
        let folders = NewFolders::create(outputs.iter().filter_map(|o| o.parent()))?;
        let mut nodes = Vec::with_capacity(prepared.len());
        let mut all = collectives.map(|_| NodeCollectives::default());
        let buffers = xplane_proto::BufferPool::new();
        // Every node's trace is staged, and all are put in place at the
        // end: a failure (or a signal) leaves none of them.
        let mut staged = Vec::with_capacity(prepared.len());
        for (node, output) in prepared.iter().zip(outputs) {
            let (walked, tmp) =
                node.stage_aligned(&self.options, t_ref, &output, collectives, &buffers)?;
            staged.push((tmp, output.clone()));
            if let (Some(all), Some(c)) = (all.as_mut(), walked.collectives) {
                all.before.append(c.before);
                all.after.append(c.after);
            }
            nodes.push(AlignedNode {
                output,
                diagnostics: walked.diagnostics,
            });
        }
        persist_all_recorded(staged, out_dir)?;
        folders.keep();
        let (before, after) = match (all, collectives) {
            (Some(c), Some(options)) => (
                Some(collective_check::check(&c.before, options)),
                Some(collective_check::check(&c.after, options)),
            ),
            _ => (None, None),
        };
        Ok(AlignEachOutcome {
            clock_source: self.clocks.source(),
            clock_reason: self.clock_reason,
            node_clocks: self.node_clocks.clone(),
            clock_warnings: self.clock_warnings.clone(),
            collective_clocks: self.clocks.estimate_report(),
            repair: self.repair_outcome(nodes.iter().map(|n| &n.diagnostics)),
            nodes,
            before,
            after,
        })
    }

    /// Each node's output path in `out_dir`; an output that
    /// [`crate::check_output`] refuses is an error.
    fn outputs_in(&self, out_dir: &Path, layout: &OutputLayout) -> Result<Vec<PathBuf>> {
        let inputs = self.input_paths();
        self.nodes
            .iter()
            .map(|input| {
                let output = match layout {
                    OutputLayout::SameNames => {
                        let name = input.trace.file_name().ok_or_else(|| RunError::NoNodeId {
                            path: input.trace.clone(),
                        })?;
                        out_dir.join(name)
                    }
                    // A trace of an xprof log folder keeps its host's name.
                    OutputLayout::Xprof { run }
                        if crate::captures::session_of(&input.trace).is_some() =>
                    {
                        let name = input.trace.file_name().unwrap_or_default();
                        out_dir.join("plugins/profile").join(run).join(name)
                    }
                    OutputLayout::Xprof { run } => {
                        let bytes = open(&input.trace)?;
                        let view = bytes.view();
                        let hostname = view.hostnames().next().transpose().map_err(|e| {
                            RunError::Trace(xplane_proto::malformed_error(&input.trace, &view, e))
                        })?;
                        let host = xprof_host(input.node_id, hostname);
                        out_dir
                            .join("plugins/profile")
                            .join(run)
                            .join(format!("{host}.xplane.pb"))
                    }
                };
                crate::check_output(&output, &inputs, &[])?;
                Ok(output)
            })
            .collect()
    }
}

/// Put every staged output in place, all or none
/// ([`safe_temp::persist_together`]).
pub(crate) fn persist_all(staged: Vec<(safe_temp::TempFile, PathBuf)>) -> Result<()> {
    safe_temp::persist_together(staged).map_err(|e| persist_error(e, Path::new("")))
}

/// A failed [`safe_temp::persist_together`]: the target it names, or
/// `dir`'s record of outputs.
fn persist_error(e: safe_temp::Error, dir: &Path) -> RunError {
    match e {
        safe_temp::Error::Persist { target, source } => RunError::Write {
            path: target,
            source,
        },
        e @ safe_temp::Error::Record { .. } => RunError::OutputRecord {
            path: dir.to_path_buf(),
            source: e,
        },
        e => RunError::Write {
            path: dir.to_path_buf(),
            source: e.into_io(),
        },
    }
}

/// [`persist_all`], the outputs noted in `dir`'s record of outputs
/// ([`safe_temp::persist_together_recorded`]): a later run may replace
/// them, and nothing else in `dir` ([`crate::check_out_dir`]).
pub(crate) fn persist_all_recorded(
    staged: Vec<(safe_temp::TempFile, PathBuf)>,
    dir: &Path,
) -> Result<()> {
    safe_temp::persist_together_recorded(staged, dir).map_err(|e| persist_error(e, dir))
}

/// The output folders a command created, removed again (when empty)
/// unless [`NewFolders::keep`]: a failed run leaves nothing new.
pub(crate) struct NewFolders(Vec<PathBuf>);

impl NewFolders {
    /// Create `dirs` and the folders above them that do not exist.
    pub(crate) fn create<'a>(dirs: impl IntoIterator<Item = &'a Path>) -> Result<NewFolders> {
        let mut made = NewFolders(Vec::new());
        for dir in dirs {
            let missing: Vec<&Path> = dir.ancestors().take_while(|d| !d.exists()).collect();
            for d in missing.into_iter().rev() {
                if d.as_os_str().is_empty() {
                    continue;
                }
                std::fs::create_dir(d).map_err(|source| RunError::CreateDir {
                    path: d.to_path_buf(),
                    source,
                })?;
                // Removed on a signal too, while still empty.
                safe_temp::list_new_folder(d);
                made.0.push(d.to_path_buf());
            }
        }
        Ok(made)
    }

    /// Keep the folders: the outputs are in them.
    pub(crate) fn keep(mut self) {
        for dir in self.0.drain(..) {
            safe_temp::forget_new_folder(&dir);
        }
    }
}

impl Drop for NewFolders {
    fn drop(&mut self) {
        for dir in self.0.iter().rev() {
            let _ = std::fs::remove_dir(dir);
            safe_temp::forget_new_folder(dir);
        }
    }
}

impl PreparedNode<'_> {
    /// Write this node's aligned trace to `output`: every plane, line,
    /// event and stat of its input in the same order, only times changed,
    /// counted from the session start `t_ref`; with `collectives`, its
    /// collectives before and after are captured from the same walk. The
    /// file appears only when complete.
    pub(crate) fn write_aligned(
        &self,
        options: &alignment_core::AlignOptions,
        t_ref: i128,
        output: &Path,
        collectives: Option<&collective_check::Options>,
        buffers: &xplane_proto::BufferPool,
    ) -> Result<crate::node::Walked> {
        let (walked, tmp) = self.stage_aligned(options, t_ref, output, collectives, buffers)?;
        persist_all(vec![(tmp, output.to_path_buf())])?;
        Ok(walked)
    }

    /// [`PreparedNode::write_aligned`], the trace left complete in a
    /// temporary beside `output` for the caller to put in place (with the
    /// run's other outputs).
    pub(crate) fn stage_aligned(
        &self,
        options: &alignment_core::AlignOptions,
        t_ref: i128,
        output: &Path,
        collectives: Option<&collective_check::Options>,
        buffers: &xplane_proto::BufferPool,
    ) -> Result<(crate::node::Walked, safe_temp::TempFile)> {
        let bytes = open(&self.input.trace)?;
        let mut file = XSpaceFile::create(output).map_err(RunError::write(output))?;
        let walked = self.align_into(
            &bytes,
            options,
            t_ref,
            file.writer(),
            |p| PlaneOutput::same(p.id, p.name),
            WalkCaptures {
                validation: collectives,
                host_clock: None,
                buffers,
            },
        )?;
        let (hostnames, errors, warnings) = space_strings(&bytes.view(), &self.input.trace)?;
        let tmp = file
            .finish(&hostnames, &errors, &warnings)
            .map_err(RunError::write(output))?;
        Ok((walked, tmp))
    }
}

/// Where [`Plan::align_each_as`] writes each node's aligned trace.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputLayout {
    /// `OUT/<the input's file name>`.
    SameNames,
    /// An xprof (TensorBoard profile plugin) log folder:
    /// `OUT/plugins/profile/<run>/node<N>[-<hostname>].xplane.pb`, or the
    /// input's own name when it is in an xprof log folder already. xprof
    /// takes a host's name from its file name and shows every host of a run
    /// on one timeline, each with its own planes under their own names.
    Xprof {
        /// The run's folder name (checked by [`OutputLayout::xprof`]).
        run: String,
    },
}

impl OutputLayout {
    /// The xprof layout for the run `run`: one plain folder name.
    ///
    /// ```
    /// use trace_align::OutputLayout;
    /// assert!(OutputLayout::xprof("2026_11_27_step_1000").is_ok());
    /// assert!(OutputLayout::xprof("../up").is_err());
    /// ```
    pub fn xprof(run: &str) -> Result<OutputLayout> {
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if run.is_empty() || run == "." || run == ".." || !run.chars().all(plain) {
            return Err(RunError::XprofRunName {
                name: run.to_owned(),
            });
        }
        Ok(OutputLayout::Xprof {
            run: run.to_owned(),
        })
    }
}

/// A node's host name in an xprof run: `node<N>`, then `-` and its trace's
/// hostname with anything but letters, digits, `-` and `_` as `_`.
fn xprof_host(node: clock_model::NodeId, hostname: Option<&str>) -> String {
    match hostname.filter(|h| !h.is_empty()) {
        Some(h) => {
            let clean: String = h
                .chars()
                .map(|c| match c {
                    'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' => c,
                    _ => '_',
                })
                .collect();
            format!("node{node}-{clean}")
        }
        None => format!("node{node}"),
    }
}

/// True when both paths name one existing file (after following links and
/// `..`): how every command tells that an output would replace an input.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// A trace's `hostnames`, `errors` and `warnings`, kept in its aligned copy.
fn space_strings(
    view: &SpaceView<'_>,
    path: &Path,
) -> Result<(Vec<String>, Vec<String>, Vec<String>)> {
    let collect = |it: xplane_proto::Strings<'_>| {
        it.map(|s| s.map(str::to_owned))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| RunError::Trace(xplane_proto::malformed_error(path, view, source)))
    };
    Ok((
        collect(view.hostnames())?,
        collect(view.errors())?,
        collect(view.warnings())?,
    ))
}

/// The session start (epoch ns, global clock) that every output of a run
/// counts its times from: the earliest of the nodes' own session starts
/// mapped onto the global clock, so that no node's events lie before it.
/// (xprof's trace viewers drop or wrap events placed before the session
/// start: on the reference's start, a node corrected backwards lost
/// thousands of events.) Traces without a session start (0) are left out;
/// 0 when no trace has one.
pub(crate) fn output_session_start<'a, 'p: 'a>(
    nodes: impl IntoIterator<Item = &'a PreparedNode<'p>>,
) -> i128 {
    nodes
        .into_iter()
        .filter(|n| n.session_start_ns != 0)
        .map(|n| n.clocks.host_ns_to_global_ns(n.session_start_ns))
        .min()
        .unwrap_or(0)
}
