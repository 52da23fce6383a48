//! `round_offsets.jsonl`: the network-probed offsets of every node against
//! the reference node, one row per (round, node), after a meta header.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use clock_model::NodeId;
use serde::Deserialize;

use crate::error::{AlignError, Result};

/// One node as listed in the meta header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct NodeStart {
    /// The node id.
    pub node_id: NodeId,
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
    pub nodes: BTreeMap<NodeId, NodeStart>,
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
    node_id: NodeId,
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
        let file = xplane_proto::source::open_input(path).map_err(AlignError::io(path))?;
        Self::parse(std::io::BufReader::new(file), path)
    }

    /// Parse offsets from any reader; `path` names it in errors.
    pub fn parse(reader: impl BufRead, path: &Path) -> Result<Self> {
        let path_buf = || path.to_path_buf();
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
                let header: Header =
                    serde_json::from_str(&text).map_err(|source| AlignError::Json {
                        path: path_buf(),
                        line: line_no,
                        expected: "the meta header {\"meta\":true,\"nodes\":[...]}",
                        source,
                    })?;
                if !header.meta {
                    return Err(AlignError::NoMetaHeader {
                        path: path_buf(),
                        line: line_no,
                    });
                }
                let mut by_id = BTreeMap::new();
                for node in header.nodes {
                    if by_id.insert(node.node_id, node).is_some() {
                        return Err(AlignError::NodeListedTwice {
                            path: path_buf(),
                            line: line_no,
                            node: node.node_id,
                        });
                    }
                }
                nodes = Some(by_id);
                continue;
            };
            rows.push((
                line_no,
                parse_row(path, line_no, &text, known, &mut last_round)?,
            ));
        }
        let nodes = nodes.ok_or_else(|| AlignError::NoMetaHeader {
            path: path_buf(),
            line: 1,
        })?;
        Ok(OffsetsFile {
            path: path.to_path_buf(),
            nodes,
            rows,
        })
    }

    /// The offsets of a file at `path` given in parts: the header's nodes,
    /// and some of its rows as `(line number, text)` in file order, each
    /// checked as [`OffsetsFile::parse`] checks it (the rows one node's
    /// summary of a run carries, joined again).
    pub fn from_lines<'t>(
        path: &Path,
        nodes: BTreeMap<NodeId, NodeStart>,
        rows: impl IntoIterator<Item = (usize, &'t str)>,
    ) -> Result<Self> {
        let mut last_round = None;
        let rows = rows
            .into_iter()
            .map(|(line_no, text)| {
                let row = parse_row(path, line_no, text, &nodes, &mut last_round)?;
                Ok((line_no, row))
            })
            .collect::<Result<_>>()?;
        Ok(OffsetsFile {
            path: path.to_path_buf(),
            nodes,
            rows,
        })
    }

    /// The rows of one node, in file order.
    pub fn rows_of(&self, node: NodeId) -> impl Iterator<Item = &clock_model::OffsetRow> {
        self.rows
            .iter()
            .map(|(_, r)| r)
            .filter(move |r| r.node_id == node)
    }
}

/// One row of an offsets file, line `line_no`, checked: its node is one of
/// `known`, its offset and drift are finite, its round is not before
/// `last_round` (updated), its window is well formed.
fn parse_row(
    path: &Path,
    line_no: usize,
    text: &str,
    known: &BTreeMap<NodeId, NodeStart>,
    last_round: &mut Option<u64>,
) -> Result<clock_model::OffsetRow> {
    let row: Row = serde_json::from_str(text).map_err(|source| AlignError::Json {
        path: path.to_path_buf(),
        line: line_no,
        expected: "an offsets row",
        source,
    })?;
    if !known.contains_key(&row.node_id) {
        return Err(AlignError::RowForUnlistedNode {
            path: path.to_path_buf(),
            line: line_no,
            node: row.node_id,
        });
    }
    if !row.offset_ns.is_finite() || !row.drift_ppm.is_finite() {
        return Err(AlignError::NonFiniteOffset {
            path: path.to_path_buf(),
            line: line_no,
            node: row.node_id,
        });
    }
    if let Some(previous) = last_round.filter(|&last| row.round_id < last) {
        return Err(AlignError::RoundsOutOfOrder {
            path: path.to_path_buf(),
            line: line_no,
            round: row.round_id,
            previous,
        });
    }
    *last_round = Some(row.round_id);
    let window = match (row.window_start_ns, row.window_end_ns, row.midpoint_sys_ns) {
        (Some(start), Some(end), _) => {
            if end < start {
                return Err(AlignError::WindowBackwards {
                    path: path.to_path_buf(),
                    line: line_no,
                    start_ns: start,
                    end_ns: end,
                });
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
            return Err(AlignError::RowWithoutWindow {
                path: path.to_path_buf(),
                line: line_no,
            });
        }
    };
    Ok(clock_model::OffsetRow {
        round_id: row.round_id,
        node_id: row.node_id,
        window,
        offset_ns: row.offset_ns,
        drift_ppm: row.drift_ppm,
        reachable: row.reachable,
        converged: row.converged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"meta":true,"nodes":[{"node_id":0,"start_walltime_ns":10},{"node_id":1,"start_walltime_ns":20,"start_gpu_ns":30}]}"#;

    fn parse(rows: &[&str]) -> Result<OffsetsFile> {
        let text = std::iter::once(HEADER)
            .chain(rows.iter().copied())
            .collect::<Vec<_>>()
            .join("\n");
        OffsetsFile::parse(text.as_bytes(), Path::new("round_offsets.jsonl"))
    }

    #[test]
    fn rows_and_header_are_read() {
        let f = parse(&[
            r#"{"round_id":1,"window_start_ns":100,"window_end_ns":200,"node_id":1,"offset_ns":-750.8,"drift_ppm":0.4,"reachable":true,"converged":false,"extra":"ignored"}"#,
            r#"{"round_id":2,"midpoint_sys_ns":300,"node_id":1,"offset_ns":1.23457e+06}"#,
        ])
        .unwrap();
        assert_eq!(f.nodes[&NodeId(1)].start_gpu_ns, 30);
        assert_eq!(f.nodes[&NodeId(0)].start_gpu_ns, 0);
        let rows: Vec<_> = f.rows_of(NodeId(1)).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0].window,
            clock_model::RowWindow::Window {
                start_ns: 100,
                end_ns: 200
            }
        );
        assert!(!rows[0].converged);
        assert_eq!(
            rows[1].window,
            clock_model::RowWindow::LegacyMidpoint {
                midpoint_sys_ns: 300
            }
        );
        assert_eq!(rows[1].offset_ns, 1.23457e6);
        assert!(rows[1].reachable && rows[1].converged, "defaults");
        assert_eq!(f.rows[1].0, 3, "line numbers are kept");
    }

    #[test]
    fn rows_given_by_line_parse_as_in_the_file() {
        let rows = [
            r#"{"round_id":1,"window_start_ns":100,"window_end_ns":200,"node_id":1,"offset_ns":1234567.891,"drift_ppm":0.5}"#,
            r#"{"round_id":2,"window_start_ns":300,"window_end_ns":400,"node_id":1,"offset_ns":-7.25}"#,
        ];
        let whole = parse(&rows).unwrap();
        let parts = OffsetsFile::from_lines(
            Path::new("round_offsets.jsonl"),
            whole.nodes.clone(),
            [(2, rows[0]), (3, rows[1])],
        )
        .unwrap();
        assert_eq!(parts.rows, whole.rows);
        let err = OffsetsFile::from_lines(
            Path::new("round_offsets.jsonl"),
            whole.nodes.clone(),
            [(3, rows[1]), (2, rows[0])],
        )
        .unwrap_err();
        assert!(err.to_string().contains("round_offsets.jsonl:2"), "{err}");
    }

    #[test]
    fn every_malformed_input_names_its_line() {
        let cases: [(&[&str], &str); 5] = [
            (
                &[
                    r#"{"round_id":2,"window_start_ns":1,"window_end_ns":2,"node_id":1,"offset_ns":0}"#,
                    r#"{"round_id":1,"window_start_ns":1,"window_end_ns":2,"node_id":1,"offset_ns":0}"#,
                ],
                "round_offsets.jsonl:3: round_id 1 after round 2",
            ),
            (
                &[r#"{"round_id":1,"node_id":1,"offset_ns":0}"#],
                "round_offsets.jsonl:2: a row needs window_start_ns",
            ),
            (
                &[
                    r#"{"round_id":1,"window_start_ns":5,"window_end_ns":2,"node_id":1,"offset_ns":0}"#,
                ],
                "round_offsets.jsonl:2: window ends",
            ),
            (
                &[
                    r#"{"round_id":1,"window_start_ns":1,"window_end_ns":2,"node_id":7,"offset_ns":0}"#,
                ],
                "round_offsets.jsonl:2: row for node 7",
            ),
            (
                &["not json"],
                "round_offsets.jsonl:2: malformed JSON, expected an offsets row",
            ),
        ];
        for (rows, want) in cases {
            let err = parse(rows).unwrap_err().to_string();
            assert!(err.contains(want), "{err:?} should contain {want:?}");
        }
        let err = OffsetsFile::parse(&b""[..], Path::new("o.jsonl")).unwrap_err();
        assert!(
            matches!(err, AlignError::NoMetaHeader { line: 1, .. }),
            "{err}"
        );
        let err = OffsetsFile::parse(&b"{\"round_id\":1}"[..], Path::new("o.jsonl")).unwrap_err();
        assert!(
            matches!(
                err,
                AlignError::Json {
                    line: 1,
                    expected,
                    ..
                } if expected.starts_with("the meta header")
            ),
            "{err}"
        );
    }
}
