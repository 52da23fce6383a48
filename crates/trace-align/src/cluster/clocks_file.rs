//! `clocks.json`: what `fit` chose for every node of a run, and all that
//! `apply` needs to align one node exactly as `align --run-dir` does.

use std::path::{Path, PathBuf};

use alignment_core::AlignOptions;
use clock_model::NodeId;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::identity::{FileIdentity, TraceIdentity};
use super::repair::StoredRepair;
use super::stored::{StoredMap, StoredOffsets};
use super::summary::check_header;
use crate::clocks::ClockSource;
use crate::error::{Result, RunError};
use crate::format::TraceFormat;

/// The `format` every clocks file names.
pub const CLOCKS_FORMAT: &str = "trace-align-clocks";
/// The version of the clocks file format this build writes and reads.
pub const CLOCKS_VERSION: u32 = 2;

/// Every node's clock correction of a run, as `fit` chose it (written as
/// pretty JSON, [`RunClocks::write`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunClocks {
    /// [`CLOCKS_FORMAT`].
    pub format: String,
    /// [`CLOCKS_VERSION`].
    pub version: u32,
    /// The traces' format.
    pub trace_format: TraceFormat,
    /// The alignment policies the fit used, which `apply` uses too
    /// (`reference_node` is the global clock).
    pub options: AlignOptions,
    /// Where the corrections come from, for the run.
    pub clock_source: ClockSource,
    /// Why (as `align --json` says it).
    pub clock_reason: serde_json::Value,
    /// What the clock choice warned about (probe offsets that contradict
    /// the collectives).
    pub clock_warnings: serde_json::Value,
    /// The session start every aligned XSpace trace counts from: the
    /// earliest of the nodes' own session starts on the global clock,
    /// epoch ns.
    pub output_session_start_ns: i128,
    /// What the repair of the collectives did (as `align --json` reports
    /// it), when the fit repairs (`--repair`).
    pub repair: Option<Box<RawValue>>,
    /// Per node, by node id.
    pub nodes: Vec<NodeEntry>,
}

/// One node's clocks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeEntry {
    /// The node.
    pub node: NodeId,
    /// The trace it was summarised from; `apply` refuses another.
    pub trace: TraceIdentity,
    /// The snapshots file beside the trace, when its pairs are not the
    /// trace's own plane; `apply` reads it there and refuses another.
    pub snapshots_file: Option<FileIdentity>,
    /// Provenance: where its correction comes from, why, and the check of
    /// its probe offsets against its collectives.
    pub clock: serde_json::Value,
    /// The correction, as the apply builds it.
    pub correction: StoredCorrection,
    /// The estimate's report of the node (per segment: offset, drift,
    /// feasible interval, uncertainty), when estimated from the
    /// collectives.
    pub estimate: Option<Box<RawValue>>,
    /// The snapshot map `P_i : tracer → host` through its pieces
    /// `[tracer ps, host ps]`, when the node has pairs.
    pub snapshot_map: Option<SnapshotPieces>,
    /// `R_i : G → G`, the repair of the collectives applied after the
    /// correction, when the fit repairs this node.
    pub repair: Option<StoredRepair>,
}

/// A node's correction, `O_i : H_i → G`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StoredCorrection {
    /// From its probe offsets (the model is chosen from them, as `align`
    /// chooses it).
    Probes {
        /// The rows it is built from.
        offsets: StoredOffsets,
    },
    /// Estimated from the collectives.
    Estimated {
        /// The map.
        map: StoredMap,
        /// The probe offsets the trace is still checked to be the node's
        /// by, when the run has them.
        identity: Option<StoredOffsets>,
    },
    /// None: the node's clock is the timeline.
    Identity,
}

/// A snapshot map's pieces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotPieces {
    /// The model used (chosen from the pairs, as `align` chooses it).
    pub model: clock_model::SnapshotModel,
    /// Pairs it was built from.
    pub pairs: usize,
    /// Beyond the first and last piece.
    pub extrapolation: clock_model::Extrapolation,
    /// The anchors, `[tracer ps, host epoch ps]`.
    pub anchors: Vec<[i128; 2]>,
}

impl RunClocks {
    /// A few lines on these clocks written to `path`: nodes, clock
    /// source and why, and what the repair did when there is one.
    pub fn summary(&self, path: &Path) -> String {
        let (n, source, reason) = (self.nodes.len(), self.clock_source, &self.clock_reason);
        let mut s = format!(
            "{n} nodes; clocks: {source:?} ({reason}); wrote {}\n",
            path.display()
        );
        let report = self.repair.as_ref().map(|r| serde_json::from_str(r.get()));
        if let Some(Ok(r)) = report {
            let r: serde_json::Value = r;
            s += &format!(
                "repair: {} of {} instances repaired; violations {} -> {}\n",
                r["instances_repaired"],
                r["instances_checked"],
                r["violations_before"],
                r["violations_after"]
            );
        }
        s
    }

    /// Write the clocks to `path` as pretty JSON (replaced atomically).
    pub fn write(&self, path: &Path) -> Result<()> {
        xplane_proto::write_atomically(path, |f| {
            let mut w = std::io::BufWriter::new(f);
            serde_json::to_writer_pretty(&mut w, self)?;
            std::io::Write::write_all(&mut w, b"\n")?;
            std::io::Write::flush(&mut w)
        })
        .map_err(RunError::write(path))
    }

    /// Read a clocks file; one that is not JSON, is truncated, names
    /// another format or version, or lacks a field is an error naming it.
    pub fn read(path: &Path) -> Result<RunClocks> {
        let text = xplane_proto::source::read_input_text(path).map_err(RunError::io(path))?;
        check_header(path, &text, "clocks file", CLOCKS_FORMAT, CLOCKS_VERSION)?;
        let clocks: RunClocks = serde_json::from_str(&text).map_err(|e| RunError::Unreadable {
            path: path.to_path_buf(),
            what: "clocks file",
            source: Box::new(e),
        })?;
        for entry in &clocks.nodes {
            entry.trace.file.check_plain_name(path, entry.node)?;
            if let Some(snapshots) = &entry.snapshots_file {
                snapshots.check_plain_name(path, entry.node)?;
            }
        }
        Ok(clocks)
    }

    /// Node `node`'s entry; a node the file lacks is an error naming
    /// `path`, the file.
    pub fn node(&self, node: NodeId, path: &Path) -> Result<&NodeEntry> {
        self.nodes
            .iter()
            .find(|e| e.node == node)
            .ok_or_else(|| RunError::NodeNotInClocks {
                path: path.to_path_buf(),
                node,
                have: self.nodes.iter().map(|e| e.node).collect(),
            })
    }

    /// The entry of the trace `trace` (identity `found`): the node's
    /// `node` when given (refused unless it was summarised from this
    /// trace), else the one node summarised from these bytes.
    pub fn entry_for(
        &self,
        trace: &Path,
        found: &TraceIdentity,
        node: Option<NodeId>,
        path: &Path,
    ) -> Result<&NodeEntry> {
        let entry = match node {
            Some(node) => self.node(node, path)?,
            None => {
                let mut same = self
                    .nodes
                    .iter()
                    .filter(|e| e.trace.file.same_bytes(&found.file));
                let first = same.next().ok_or_else(|| RunError::TraceNotInClocks {
                    path: trace.to_path_buf(),
                    clocks: path.to_path_buf(),
                    found: found.file.to_string(),
                })?;
                if let Some(second) = same.next() {
                    return Err(RunError::TraceAmbiguousInClocks {
                        path: trace.to_path_buf(),
                        clocks: path.to_path_buf(),
                        first: first.node,
                        second: second.node,
                        found: found.file.to_string(),
                    });
                }
                first
            }
        };
        if !entry.trace.file.same_bytes(&found.file) || entry.trace.format != found.format {
            return Err(RunError::TraceMismatch {
                path: trace.to_path_buf(),
                source_file: PathBuf::from(path),
                node: entry.node,
                expected: entry.trace.file.to_string(),
                found: found.file.to_string(),
            });
        }
        Ok(entry)
    }
}
