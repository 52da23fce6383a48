//! Phase 1: one node's evidence, read where its trace lives — its
//! collectives on its own host clock (exactly what the plan reads), its
//! snapshot pairs, its rows of the probe offsets file — in a small
//! versioned file that names the trace it came from.

use std::collections::BTreeSet;
use std::io::Write;
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
pub const SUMMARY_VERSION: u32 = 2;

/// One node's evidence for the clock fit (see the module docs of
/// [`crate::cluster`]). Written in a compact binary form
/// ([`NodeSummary::write`], `cluster/codec.rs`); read back checked
/// ([`NodeSummary::read`]).
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
    /// The same occurrences' times with the tracer start of the node's
    /// probe offsets header, when that differs from the trace's: what a
    /// node aligned by its probe offsets reads (the repair, `--repair`).
    pub probe_start: Option<ProbeStart>,
}

/// A node's collective times as read with the tracer start `(S_w, S_g)`
/// of its probe offsets header instead of the trace's own: a time on a
/// tracer line is shifted by `S_w − S_g` before the snapshot map, so the
/// two reads differ there (by the ns `S_g` was rounded to).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeStart {
    /// Per occurrence, in order, `[begin, end]` minus the occurrence's
    /// own, ps.
    pub deltas: Vec<[i128; 2]>,
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
        let (collectives, snapshots, offsets, probe_start) = match format {
            TraceFormat::Kineto => {
                let collectives = crate::kineto::rank_collectives(node, &input.trace)?;
                (collectives, None, None, None)
            }
            TraceFormat::XSpace => {
                let read = crate::clocks::host_read(&input, options)?;
                let snapshots = read
                    .snapshots
                    .as_ref()
                    .map(|s| summary_snapshots(s, input.snapshots.as_deref()))
                    .transpose()?;
                let offsets = match &self.offsets {
                    Some(path) => Some(summary_offsets(path, node, &input.trace)?),
                    None => None,
                };
                let probe_start = probe_start(&input, &read, offsets.as_ref(), options)?;
                (read.collectives, snapshots, offsets, probe_start)
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
            probe_start,
        })
    }
}

/// The times of `read` (node `input`'s collectives) as read with the
/// tracer start of the node's probe offsets header, when it has one that
/// differs from the trace's (as [`alignment_core::NodeClocks::build`]
/// takes it: `S_g` of 0 is unknown).
fn probe_start(
    input: &NodeInput,
    read: &crate::clocks::HostRead,
    offsets: Option<&SummaryOffsets>,
    options: &AlignOptions,
) -> Result<Option<ProbeStart>> {
    let Some(header) = offsets.and_then(|o| o.nodes.first()) else {
        return Ok(None);
    };
    let start = (
        Some(header.start_walltime_ns),
        Some(header.start_gpu_ns).filter(|&g| g != 0),
    );
    if start == read.tracer_start || start.1.is_none() {
        return Ok(None);
    }
    let on_probes = NodeInput {
        start_walltime_ns: start.0,
        start_gpu_ns: start.1,
        ..input.clone()
    };
    let again = crate::clocks::host_read(&on_probes, options)?.collectives;
    let (a, b) = (read.collectives.occurrences(), again.occurrences());
    if a.len() != b.len() {
        return Err(RunError::ProbeStartRead {
            path: input.trace.clone(),
            node: input.node_id,
            first: a.len(),
            second: b.len(),
        });
    }
    let deltas: Vec<[i128; 2]> = a
        .iter()
        .zip(b)
        .map(|(a, b)| [b.begin.0 - a.begin.0, b.end.0 - a.end.0])
        .collect();
    Ok(deltas
        .iter()
        .any(|d| *d != [0, 0])
        .then_some(ProbeStart { deltas }))
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
    let text = xplane_proto::source::read_input_text(path).map_err(RunError::io(path))?;
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
    /// Write this summary to `path` (the binary form of
    /// `cluster/codec.rs`, replaced atomically); what was written.
    pub fn write(&self, path: &Path) -> Result<SummaryWritten> {
        let mut bytes = 0;
        xplane_proto::write_atomically(path, |f| {
            let encoded = super::codec::encode(self, SUMMARY_VERSION)?;
            bytes = encoded.len() as u64;
            f.write_all(&encoded)
        })
        .map_err(RunError::write(path))?;
        Ok(SummaryWritten {
            node: self.node,
            output: path.to_path_buf(),
            bytes,
            trace: self.trace.clone(),
            collectives: self.collectives.occurrences().len(),
            snapshot_pairs: self.snapshots.as_ref().map_or(0, |s| s.pairs.len()),
            offset_rows: self.offsets.as_ref().map_or(0, |o| o.rows.len()),
        })
    }

    /// Read a summary: a file without the summary magic, truncated or
    /// corrupt (the gzip trailer's CRC, every index and range), or of
    /// another version (a version 1 file is gzip-compressed JSON) is an
    /// error naming it.
    pub fn read(path: &Path) -> Result<NodeSummary> {
        let bytes = xplane_proto::source::read_input(path).map_err(RunError::io(path))?;
        let unreadable = |source| RunError::Unreadable {
            path: path.to_path_buf(),
            what: "summary",
            source,
        };
        if bytes.starts_with(&[0x1f, 0x8b]) {
            // Version 1 was gzip-compressed JSON naming its version.
            let text = xplane_proto::source::inflate(&bytes, path, "summary")
                .map_err(|e| unreadable(Box::new(e)))?;
            let text = String::from_utf8_lossy(&text);
            check_header(path, &text, "summary", SUMMARY_FORMAT, SUMMARY_VERSION)?;
            return Err(unreadable(
                "gzip-compressed JSON naming this version".into(),
            ));
        }
        let magic = super::codec::MAGIC;
        if !bytes.starts_with(&magic[..bytes.len().min(magic.len())]) {
            let start = &bytes[..bytes.len().min(magic.len())];
            return Err(unreadable(
                format!("no summary magic: it begins {start:02x?}, not {magic:02x?}").into(),
            ));
        }
        let Some(version) = bytes.get(8..12) else {
            return Err(unreadable("it ends inside its header".into()));
        };
        let version = u32::from_le_bytes(version.try_into().expect("four bytes"));
        if version != SUMMARY_VERSION {
            return Err(RunError::FormatVersion {
                path: path.to_path_buf(),
                what: "summary",
                found: SUMMARY_FORMAT.to_owned(),
                version,
                expected: SUMMARY_FORMAT,
                expected_version: SUMMARY_VERSION,
            });
        }
        super::codec::decode(&bytes[12..], path).map_err(unreadable)
    }
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

/// A summary as written ([`NodeSummary::write`]); its `Display` is one
/// line.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryWritten {
    /// The node.
    pub node: NodeId,
    /// The file written.
    pub output: PathBuf,
    /// Its size, bytes.
    pub bytes: u64,
    /// The trace it summarises.
    pub trace: TraceIdentity,
    /// Collective occurrences.
    pub collectives: usize,
    /// Snapshot pairs.
    pub snapshot_pairs: usize,
    /// Rows of the probe offsets file.
    pub offset_rows: usize,
}

impl std::fmt::Display for SummaryWritten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let size = self.trace.file.size;
        write!(
            f,
            "node {}: {} collectives, {} snapshot pairs, {} offset rows; wrote {} ({} bytes, {:.2} % of the trace's {size})",
            self.node,
            self.collectives,
            self.snapshot_pairs,
            self.offset_rows,
            self.output.display(),
            self.bytes,
            100.0 * self.bytes as f64 / size.max(1) as f64,
        )
    }
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
