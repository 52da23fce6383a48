//! `round_offsets.jsonl`: the network-probed offsets of every node against
//! the reference node, one row per (round, node), after a meta header.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{AlignError, Result};

/// One node as listed in the meta header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct NodeStart {
    /// The node id.
    pub node_id: u32,
    /// `S_w`: the node's REALTIME reading at tracer start, epoch ns.
    pub start_walltime_ns: u64,
    /// `S_g`: the node's tracer clock at tracer start, ns (0 if unknown).
    #[serde(default)]
    pub start_gpu_ns: u64,
}

/// A parsed offsets file: the header's nodes and every row, in file order,
/// each with its 1-based line number.
#[derive(Debug, Clone)]
pub struct OffsetsFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// The header's nodes, by id.
    pub nodes: BTreeMap<u32, NodeStart>,
    /// The rows with their line numbers.
    pub rows: Vec<(usize, clock_model::OffsetRow)>,
}

#[derive(Deserialize)]
struct Header {
    meta: bool,
    nodes: Vec<NodeStart>,
}

#[derive(Deserialize)]
struct Row {
    round_id: u64,
    node_id: u32,
    #[serde(default)]
    window_start_ns: Option<u64>,
    #[serde(default)]
    window_end_ns: Option<u64>,
    #[serde(default)]
    midpoint_sys_ns: Option<u64>,
    offset_ns: f64,
    #[serde(default)]
    drift_ppm: f64,
    #[serde(default = "yes")]
    reachable: bool,
    #[serde(default = "yes")]
    converged: bool,
}

fn yes() -> bool {
    true
}

impl OffsetsFile {
    /// Read and check an offsets file.
    pub fn read(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(AlignError::io(path))?;
        Self::parse(std::io::BufReader::new(file), path)
    }

    /// Parse offsets from any reader; `path` names it in errors.
    pub fn parse(reader: impl BufRead, path: &Path) -> Result<Self> {
        let json_err = |line: usize, message: String| AlignError::Json {
            path: path.to_path_buf(),
            line,
            message,
        };
        let mut nodes = None;
        let mut rows = Vec::new();
        let mut last_round = None;
        for (i, text) in reader.lines().enumerate() {
            let line_no = i + 1;
            let text = text.map_err(AlignError::io(path))?;
            if text.trim().is_empty() {
                continue;
            }
            let Some(known) = &nodes else {
                let header: Header = serde_json::from_str(&text).map_err(|e| {
                    json_err(
                        line_no,
                        format!("expected the meta header {{\"meta\":true,\"nodes\":[...]}}: {e}"),
                    )
                })?;
                if !header.meta {
                    return Err(json_err(
                        line_no,
                        "the first line must have \"meta\": true".into(),
                    ));
                }
                let mut by_id = BTreeMap::new();
                for node in header.nodes {
                    if by_id.insert(node.node_id, node).is_some() {
                        return Err(json_err(
                            line_no,
                            format!("node {} is listed twice in the meta header", node.node_id),
                        ));
                    }
                }
                nodes = Some(by_id);
                continue;
            };
            let row: Row = serde_json::from_str(&text)
                .map_err(|e| json_err(line_no, format!("malformed offsets row: {e}")))?;
            if !known.contains_key(&row.node_id) {
                return Err(json_err(
                    line_no,
                    format!(
                        "row for node {} which the meta header does not list",
                        row.node_id
                    ),
                ));
            }
            if !row.offset_ns.is_finite() || !row.drift_ppm.is_finite() {
                return Err(json_err(
                    line_no,
                    "offset_ns and drift_ppm must be finite".into(),
                ));
            }
            if last_round.is_some_and(|last| row.round_id < last) {
                return Err(json_err(
                    line_no,
                    format!(
                        "round_id {} after round {}: rows must be in ascending round order",
                        row.round_id,
                        last_round.unwrap_or_default()
                    ),
                ));
            }
            last_round = Some(row.round_id);
            let window = match (row.window_start_ns, row.window_end_ns, row.midpoint_sys_ns) {
                (Some(start), Some(end), _) => {
                    if end < start {
                        return Err(json_err(
                            line_no,
                            format!("window ends ({end}) before it starts ({start})"),
                        ));
                    }
                    clock_model::RowWindow::Window {
                        start_ns: start,
                        end_ns: end,
                    }
                }
                (None, None, Some(midpoint)) => clock_model::RowWindow::LegacyMidpoint {
                    midpoint_sys_ns: midpoint,
                },
                _ => {
                    return Err(json_err(
                        line_no,
                        "a row needs window_start_ns and window_end_ns (or the legacy midpoint_sys_ns)"
                            .into(),
                    ));
                }
            };
            rows.push((
                line_no,
                clock_model::OffsetRow {
                    round_id: row.round_id,
                    node_id: row.node_id,
                    window,
                    offset_ns: row.offset_ns,
                    drift_ppm: row.drift_ppm,
                    reachable: row.reachable,
                    converged: row.converged,
                },
            ));
        }
        let nodes = nodes.ok_or_else(|| json_err(1, "empty file: no meta header".into()))?;
        Ok(OffsetsFile {
            path: path.to_path_buf(),
            nodes,
            rows,
        })
    }

    /// The rows of one node, in file order.
    pub fn rows_of(&self, node: u32) -> impl Iterator<Item = &clock_model::OffsetRow> {
        self.rows
            .iter()
            .map(|(_, r)| r)
            .filter(move |r| r.node_id == node)
    }
}
