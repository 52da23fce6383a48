//! Phase 3: one node's trace aligned with its clocks from a clocks file,
//! where the trace lives: the very file `align --run-dir` writes for it.

use std::path::{Path, PathBuf};

use alignment_core::{NodeDiagnostics, NodeInput};
use clock_model::{NodeId, OffsetMap};

use super::clocks_file::{NodeEntry, RunClocks, StoredCorrection};
use super::identity::{FileIdentity, TraceIdentity};
use crate::clocks::Correction;
use crate::error::{Result, RunError};
use crate::format::TraceFormat;
use crate::node::PreparedNode;

/// What aligning one node from a clocks file did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AppliedNode {
    /// The node.
    pub node: NodeId,
    /// The aligned trace.
    pub output: PathBuf,
    /// What alignment did (XSpace traces).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<NodeDiagnostics>,
    /// The aligned rank (Kineto traces).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<crate::AlignedRank>,
}

impl std::fmt::Display for AppliedNode {
    /// What alignment did, then `node N: wrote OUT`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(d) = &self.diagnostics {
            writeln!(f, "{}", d.summary())?;
        }
        if let Some(r) = &self.rank {
            let (rank, events, moved) = (r.rank, r.events, r.ts_changed);
            writeln!(f, "rank {rank}: {events} events, {moved} times moved")?;
        }
        write!(f, "node {}: wrote {}", self.node, self.output.display())
    }
}

/// A clocks file read from `path`.
#[derive(Debug, Clone)]
pub struct ClocksFile {
    /// Where it was read.
    pub path: PathBuf,
    /// The clocks.
    pub clocks: RunClocks,
}

impl ClocksFile {
    /// Read the clocks file at `path`.
    pub fn read(path: impl AsRef<Path>) -> Result<ClocksFile> {
        let path = path.as_ref();
        Ok(ClocksFile {
            path: path.to_path_buf(),
            clocks: RunClocks::read(path)?,
        })
    }

    /// Align the trace `trace` into `output` with its clocks: the node
    /// `node` when given (refused unless the clocks were fitted from this
    /// very trace), else the node whose trace has these bytes. The output
    /// is the file `align --run-dir` writes for the node.
    pub fn apply(&self, trace: &Path, node: Option<NodeId>, output: &Path) -> Result<AppliedNode> {
        let format = TraceFormat::detect(trace)?;
        let found = TraceIdentity::of(trace, format)?;
        let entry = self.clocks.entry_for(trace, &found, node, &self.path)?;
        let mut inputs = vec![trace, self.path.as_path()];
        let snapshots = self.snapshots_beside(trace, entry)?;
        inputs.extend(snapshots.as_deref());
        // The output is written in the trace's own format: its name must say so.
        let suffixes: &[&str] = match format {
            TraceFormat::XSpace => &[".xplane.pb", ".xplane.pb.gz"],
            TraceFormat::Kineto => &[".json", ".json.gz"],
        };
        crate::check_output(output, &inputs, suffixes)?;
        match format {
            TraceFormat::XSpace => self.apply_xspace(trace, snapshots, entry, output),
            TraceFormat::Kineto => self.apply_kineto(trace, entry, output),
        }
    }

    /// The snapshots file of `entry` beside `trace`, checked to be the one
    /// the clocks were fitted with.
    fn snapshots_beside(&self, trace: &Path, entry: &NodeEntry) -> Result<Option<PathBuf>> {
        let Some(expected) = &entry.snapshots_file else {
            return Ok(None);
        };
        expected.check_plain_name(&self.path, entry.node)?;
        let path = trace
            .parent()
            .unwrap_or(Path::new("."))
            .join(&expected.file_name);
        let found = FileIdentity::of(&path)?;
        if !found.same_bytes(expected) {
            return Err(RunError::TraceMismatch {
                path,
                source_file: self.path.clone(),
                node: entry.node,
                expected: expected.to_string(),
                found: found.to_string(),
            });
        }
        Ok(Some(path))
    }

    /// An XSpace node, as [`Plan::align_each`](crate::Plan::align_each)
    /// writes it.
    fn apply_xspace(
        &self,
        trace: &Path,
        snapshots: Option<PathBuf>,
        entry: &NodeEntry,
        output: &Path,
    ) -> Result<AppliedNode> {
        let options = &self.clocks.options;
        let input = NodeInput {
            node_id: entry.node,
            trace: trace.to_path_buf(),
            snapshots,
            ..Default::default()
        };
        let (offsets, map, identity);
        let correction = match &entry.correction {
            StoredCorrection::Probes { offsets: stored } => {
                offsets = stored.to_offsets()?;
                Correction::Probes(&offsets)
            }
            StoredCorrection::Estimated {
                map: stored,
                identity: checked,
            } => {
                map = stored.to_map(&self.path, entry.node)?;
                identity = checked.as_ref().map(|o| o.to_offsets()).transpose()?;
                Correction::Estimated {
                    map: &map,
                    identity: identity.as_ref(),
                }
            }
            StoredCorrection::Identity => Correction::Identity,
        };
        let bytes = crate::node::open(trace)?;
        let (mut clocks, session_start_ns) = correction.clocks(&input, &bytes.view(), options)?;
        clocks.repair = entry
            .repair
            .as_ref()
            .map(|r| r.to_map(&self.path, entry.node))
            .transpose()?;
        drop(bytes);
        let node = PreparedNode {
            input: &input,
            clocks,
            session_start_ns,
        };
        let folders = crate::each::NewFolders::create(output.parent())?;
        let buffers = xplane_proto::BufferPool::new();
        let t_ref = self.clocks.output_session_start_ns;
        let walked = node.write_aligned(options, t_ref, output, None, &buffers)?;
        folders.keep();
        Ok(AppliedNode {
            node: entry.node,
            output: output.to_path_buf(),
            diagnostics: Some(walked.diagnostics),
            rank: None,
        })
    }

    /// A Kineto rank, as [`align_kineto`](crate::align_kineto) writes it.
    fn apply_kineto(&self, trace: &Path, entry: &NodeEntry, output: &Path) -> Result<AppliedNode> {
        let map = match &entry.correction {
            StoredCorrection::Estimated { map, .. } => map.to_map(&self.path, entry.node)?,
            StoredCorrection::Identity => OffsetMap::Identity,
            StoredCorrection::Probes { .. } => {
                return Err(RunError::NotEstimated { node: entry.node });
            }
        };
        let record = crate::kineto::Record {
            tool: "trace-align",
            clock_source: self.clocks.clock_source,
            reference_rank: self.clocks.options.reference_node,
            correction: entry.estimate.as_deref(),
        };
        let folders = crate::each::NewFolders::create(output.parent())?;
        let (rank, tmp) =
            crate::kineto::write_rank_with(entry.node, trace, output.to_path_buf(), &map, &record)?;
        crate::each::persist_all(vec![(tmp, output.to_path_buf())])?;
        folders.keep();
        Ok(AppliedNode {
            node: entry.node,
            output: output.to_path_buf(),
            diagnostics: None,
            rank: Some(rank),
        })
    }
}
