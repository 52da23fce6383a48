//! Phase 1: one node's evidence, read where its trace lives — its
//! collectives on its own host clock (exactly what the plan reads), its
//! snapshot pairs, its rows of the probe offsets file — in a small
//! versioned file that names the trace it came from.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use alignment_core::{AlignOptions, NodeInput, NodeStart};
use clock_model::NodeId;
use collective_check::Extraction;
use serde::{Deserialize, Serialize};

use super::identity::{FileIdentity, TraceIdentity};
use crate::discover::RunFiles;
use crate::error::{Result, RunError};
use crate::format::TraceFormat;

/// The `format` every summary names.
pub const SUMMARY_FORMAT: &str = "trace-align-summary";
/// The version of the summary format this build writes and reads.
pub const SUMMARY_VERSION: u32 = 1;

/// One node's evidence for the clock fit (see the module docs of
/// [`crate::cluster`]). Written gzip-compressed JSON
/// ([`NodeSummary::write`]); read back checked ([`NodeSummary::read`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSummary {
    /// [`SUMMARY_FORMAT`].
    pub format: String,
    /// [`SUMMARY_VERSION`].
    pub version: u32,
    /// The node (rank).
    pub node: NodeId,
    /// The trace it was read from.
    pub trace: TraceIdentity,
    /// The alignment policies it was read with (the snapshot model and
    /// the tracer lines decide where device times land on the host clock);
    /// the fit refuses summaries read with other policies than its own.
    pub options: AlignOptions,
    /// The snapshot pairs of the node's tracer clock, when it has any.
    pub snapshots: Option<SummarySnapshots>,
    /// The node's part of the run's probe offsets file, when the run has one.
    pub offsets: Option<SummaryOffsets>,
    /// Its collectives as the plan reads them: XSpace on the node's own
    /// host clock (device times through its snapshot map, point-to-point
    /// included), Kineto as recorded.
    pub collectives: Extraction,
}

/// A node's snapshot pairs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummarySnapshots {
    /// The snapshots file beside the trace; `None`: the trace's own
    /// `/host:snapshots` plane.
    pub file: Option<FileIdentity>,
    /// Every pair, `[tracer ps, host epoch ps]`, in recorded order.
    pub pairs: Vec<[i128; 2]>,
}

/// A node's part of the run's probe offsets file: its header entry, and
/// its own rows as the file has them (line number and text, so that the
/// fit parses exactly what `align` parses).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummaryOffsets {
    /// The offsets file.
    pub file: FileIdentity,
    /// The node's entry of its header (none when the header lacks it).
    pub nodes: Vec<NodeStart>,
    /// The node's rows.
    pub rows: Vec<OffsetsLine>,
}

/// One line of an offsets file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffsetsLine {
    /// 1-based line number.
    pub line: usize,
    /// The line.
    pub text: String,
}

/// The format and version of a file, read before the rest.
#[derive(Deserialize)]
struct Header {
    format: String,
    version: u32,
}

impl RunFiles {
    /// Node `node`'s summary: what [`RunFiles::plan`] reads of its trace,
    /// snapshots and probe offsets, read the same way with `options`.
    pub fn summarize(&self, node: NodeId, options: &AlignOptions) -> Result<NodeSummary> {
        let files = self
            .nodes
            .get(&node)
            .ok_or_else(|| RunError::NodeWithoutTrace {
                node,
                have: self.nodes.keys().copied().collect(),
            })?;
        let input = NodeInput {
            node_id: node,
            trace: files.trace.clone(),
            snapshots: files.snapshots.clone(),
            ..Default::default()
        };
        let format = TraceFormat::detect(&input.trace)?;
        let trace = TraceIdentity::of(&input.trace, format)?;
        let (collectives, snapshots, offsets) = match format {
            TraceFormat::Kineto => {
                let collectives = crate::kineto::rank_collectives(node, &input.trace)?;
                (collectives, None, None)
            }
            TraceFormat::XSpace => {
                let read = crate::clocks::host_read(&input, options)?;
                let snapshots = read
                    .snapshots
                    .map(|s| summary_snapshots(&s, input.snapshots.as_deref()))
                    .transpose()?;
                let offsets = match &self.offsets {
                    Some(path) => Some(summary_offsets(path, node, &input.trace)?),
                    None => None,
                };
                (read.collectives, snapshots, offsets)
            }
        };
        Ok(NodeSummary {
            format: SUMMARY_FORMAT.to_owned(),
            version: SUMMARY_VERSION,
            node,
            trace,
            options: options.clone(),
            snapshots,
            offsets,
            collectives,
        })
    }
}

/// The pairs of `snapshots`, read from the file `file` if not the trace's.
fn summary_snapshots(
    snapshots: &alignment_core::Snapshots,
    file: Option<&Path>,
) -> Result<SummarySnapshots> {
    Ok(SummarySnapshots {
        file: file.map(FileIdentity::of).transpose()?,
        pairs: snapshots
            .pairs()
            .iter()
            .map(|p| [p.tracer.as_ps(), p.host.as_ps()])
            .collect(),
    })
}

/// Node `node`'s part of the offsets file `path`, checked as the plan
/// checks it (the file as a whole, and the node's tracer start against
/// its trace `trace`).
fn summary_offsets(path: &Path, node: NodeId, trace: &Path) -> Result<SummaryOffsets> {
    let offsets = crate::read_offsets(path, [(node, trace)])?;
    let mine: BTreeSet<usize> = offsets
        .rows
        .iter()
        .filter(|(_, r)| r.node_id == node)
        .map(|&(line, _)| line)
        .collect();
    let text = std::fs::read_to_string(path).map_err(RunError::io(path))?;
    let rows = text
        .lines()
        .enumerate()
        .filter(|(i, _)| mine.contains(&(i + 1)))
        .map(|(i, t)| OffsetsLine {
            line: i + 1,
            text: t.to_owned(),
        })
        .collect();
    Ok(SummaryOffsets {
        file: FileIdentity::of(path)?,
        // Its own header entry: every node's summary holding the whole
        // header would grow with the square of the nodes.
        nodes: offsets
            .nodes
            .values()
            .filter(|n| n.node_id == node)
            .copied()
            .collect(),
        rows,
    })
}

impl NodeSummary {
    /// Write this summary to `path` (gzip-compressed JSON, replaced
    /// atomically).
    pub fn write(&self, path: &Path) -> Result<()> {
        write_gzip_json(path, self)
    }

    /// Read a summary: a file that is not gzip-compressed JSON, is
    /// truncated or corrupt (the gzip trailer's CRC), names another
    /// format or version, or lacks a field is an error naming it.
    pub fn read(path: &Path) -> Result<NodeSummary> {
        let text = read_gzip_text(path, "summary")?;
        check_header(path, &text, "summary", SUMMARY_FORMAT, SUMMARY_VERSION)?;
        serde_json::from_str(&text).map_err(|e| RunError::Unreadable {
            path: path.to_path_buf(),
            what: "summary",
            source: Box::new(e),
        })
    }
}

/// Write `value` as gzip-compressed JSON to `path`, atomically.
pub(crate) fn write_gzip_json(path: &Path, value: &impl Serialize) -> Result<()> {
    xplane_proto::write_atomically(path, |f| {
        let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::best());
        serde_json::to_writer(&mut gz, value)?;
        gz.finish()?.flush()
    })
    .map_err(RunError::write(path))
}

/// The text of the gzip-compressed file `path`.
fn read_gzip_text(path: &Path, what: &'static str) -> Result<String> {
    let file = std::fs::File::open(path).map_err(RunError::io(path))?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::io::BufReader::new(file))
        .read_to_string(&mut text)
        .map_err(|e| RunError::Unreadable {
            path: path.to_path_buf(),
            what,
            source: Box::new(e),
        })?;
    Ok(text)
}

/// Fail unless the JSON `text` of `path` names `format` and `version`.
pub(crate) fn check_header(
    path: &Path,
    text: &str,
    what: &'static str,
    format: &'static str,
    version: u32,
) -> Result<()> {
    let header: Header = serde_json::from_str(text).map_err(|e| RunError::Unreadable {
        path: path.to_path_buf(),
        what,
        source: Box::new(e),
    })?;
    if header.format != format || header.version != version {
        return Err(RunError::FormatVersion {
            path: path.to_path_buf(),
            what,
            found: header.format,
            version: header.version,
            expected: format,
            expected_version: version,
        });
    }
    Ok(())
}

/// A summary read from a file, with its path (for errors).
#[derive(Debug, Clone)]
pub struct SummaryFile {
    /// Where it was read.
    pub path: PathBuf,
    /// The summary.
    pub summary: NodeSummary,
}

impl SummaryFile {
    /// Read the summary at `path`.
    pub fn read(path: impl AsRef<Path>) -> Result<SummaryFile> {
        let path = path.as_ref();
        Ok(SummaryFile {
            path: path.to_path_buf(),
            summary: NodeSummary::read(path)?,
        })
    }
}
