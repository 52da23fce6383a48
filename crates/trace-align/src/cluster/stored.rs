//! Clock maps and probe offsets as a clocks file keeps them: integer
//! anchors (picoseconds) and the offsets file's own lines, from which the
//! apply builds exactly the maps the fit chose.

use std::collections::BTreeMap;
use std::path::Path;

use alignment_core::{NodeStart, OffsetsFile};
use clock_model::{Extrapolation, GlobalTime, HostTime, NodeId, OffsetMap, PiecewiseLinear};
use serde::{Deserialize, Serialize};

use super::summary::OffsetsLine;
use crate::error::{Result, RunError};

/// A host clock's correction onto the global clock, `O_i : H_i → G`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StoredMap {
    /// `g = h` (the reference).
    Identity,
    /// Through the anchors `[host ps, global ps]`, linear between them.
    Interpolate {
        /// Beyond the first and last anchor.
        extrapolation: Extrapolation,
        /// The anchors, by increasing host time.
        anchors: Vec<[i128; 2]>,
    },
    /// A fit, through its ends and knots `[host ps, global ps]`.
    Fit {
        /// Beyond the first and last anchor.
        extrapolation: Extrapolation,
        /// The anchors, by increasing host time.
        anchors: Vec<[i128; 2]>,
    },
}

impl StoredMap {
    /// `map` as stored; a drift map (never estimated from the collectives)
    /// has no stored form.
    pub(crate) fn of(map: &OffsetMap, node: NodeId) -> Result<StoredMap> {
        let anchors = |m: &PiecewiseLinear<clock_model::Host, clock_model::Global>| {
            m.anchors().map(|(h, g)| [h.as_ps(), g.as_ps()]).collect()
        };
        match map {
            OffsetMap::Identity => Ok(StoredMap::Identity),
            OffsetMap::Interpolate(m) => Ok(StoredMap::Interpolate {
                extrapolation: m.extrapolation(),
                anchors: anchors(m),
            }),
            OffsetMap::Fit(m) => Ok(StoredMap::Fit {
                extrapolation: m.extrapolation(),
                anchors: anchors(m),
            }),
            OffsetMap::Drift(_) => Err(RunError::NotEstimated { node }),
        }
    }

    /// The map, checked as any map is built (`path` names the clocks
    /// file in errors).
    pub(crate) fn to_map(&self, path: &Path, node: NodeId) -> Result<OffsetMap> {
        let build = |extrapolation: Extrapolation, anchors: &[[i128; 2]]| {
            let anchors: Vec<(HostTime, GlobalTime)> = anchors
                .iter()
                .map(|&[h, g]| (HostTime::from_ps(h), GlobalTime::from_ps(g)))
                .collect();
            PiecewiseLinear::new(&anchors, extrapolation).map_err(|source| RunError::Align {
                node,
                source: alignment_core::AlignError::Clock {
                    path: path.to_path_buf(),
                    node,
                    what: "correction map",
                    source: Box::new(source),
                },
            })
        };
        Ok(match self {
            StoredMap::Identity => OffsetMap::Identity,
            StoredMap::Interpolate {
                extrapolation,
                anchors,
            } => OffsetMap::Interpolate(build(*extrapolation, anchors)?),
            StoredMap::Fit {
                extrapolation,
                anchors,
            } => OffsetMap::Fit(build(*extrapolation, anchors)?),
        })
    }
}

/// The part of a run's probe offsets file one node's correction is built
/// from: the header entries and the rows of the node, the reference and
/// node 0, as the file has them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredOffsets {
    /// The offsets file's name.
    pub file_name: String,
    /// The header's entries of those nodes.
    pub nodes: Vec<NodeStart>,
    /// The rows.
    pub rows: Vec<OffsetsLine>,
}

impl StoredOffsets {
    /// The offsets, parsed and checked as the file is.
    pub(crate) fn to_offsets(&self) -> Result<OffsetsFile> {
        let nodes: BTreeMap<NodeId, NodeStart> =
            self.nodes.iter().map(|n| (n.node_id, *n)).collect();
        OffsetsFile::from_lines(
            Path::new(&self.file_name),
            nodes,
            self.rows.iter().map(|r| (r.line, r.text.as_str())),
        )
        .map_err(RunError::Offsets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_map_maps_as_the_map_it_was_made_from() {
        let anchors = [
            (HostTime::from_ps(1_000_000), GlobalTime::from_ps(1_250_003)),
            (HostTime::from_ps(9_000_000), GlobalTime::from_ps(9_250_011)),
        ];
        let map =
            OffsetMap::Interpolate(PiecewiseLinear::new(&anchors, Extrapolation::Hold).unwrap());
        let stored = StoredMap::of(&map, NodeId(1)).unwrap();
        let text = serde_json::to_string(&stored).unwrap();
        let back: StoredMap = serde_json::from_str(&text).unwrap();
        let rebuilt = back.to_map(Path::new("clocks.json"), NodeId(1)).unwrap();
        for h in [0, 1_000_000, 4_321_987, 9_000_000, 20_000_000] {
            let h = HostTime::from_ps(h);
            assert_eq!(rebuilt.map(h).time, map.map(h).time);
        }
    }

    #[test]
    fn anchors_out_of_order_are_refused() {
        let stored = StoredMap::Interpolate {
            extrapolation: Extrapolation::Hold,
            anchors: vec![[5, 5], [1, 1]],
        };
        let err = stored
            .to_map(Path::new("clocks.json"), NodeId(2))
            .unwrap_err();
        assert!(format!("{err}").contains("node 2"), "{err}");
    }
}
