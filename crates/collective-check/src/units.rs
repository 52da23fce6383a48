//! Time units and participant identity.

use serde::{Deserialize, Serialize};

/// An absolute time in epoch picoseconds (`(T_sess + line.timestamp_ns) *
/// 1000 + offset_ps`). Epoch picoseconds (~1.8e21) do not fit an `i64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TimePs(pub i128);

/// A signed length of time in picoseconds: the one duration type of the
/// workspace, from `clock-model`.
pub use clock_model::DurationPs;

impl TimePs {
    /// `self - earlier`.
    pub fn since(self, earlier: TimePs) -> DurationPs {
        DurationPs(self.0 - earlier.0)
    }

    /// The time as exact decimal epoch nanoseconds (`"1795303341484103896.250"`),
    /// for text outputs that must not lose precision to floating point.
    pub fn to_ns_string(self) -> String {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        format!("{sign}{}.{:03}", abs / 1000, abs % 1000)
    }
}

/// A node (machine, or process in the JAX fixtures): the merge's `node_id`
/// plane stat, or the id the caller gives a per-node file.
pub use clock_model::NodeId;

/// One participant of collectives: a node and, when known, a device on it.
///
/// The device is the GPU ordinal of a `/device:GPU:<k>` plane (from the
/// merge's `original_plane_name` stat when present), or XLA's
/// `device_ordinal` event stat on host planes. Several devices of one node
/// are separate participants (pitfall 15: never one queue per node).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Participant {
    /// The node.
    pub node: NodeId,
    /// The device on the node, if known.
    pub device: Option<i64>,
}

impl std::fmt::Display for Participant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.device {
            Some(d) => write!(f, "n{}d{}", self.node.0, d),
            None => write!(f, "n{}", self.node.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ns_string_is_exact() {
        assert_eq!(
            TimePs(1_795_303_341_484_103_896_250).to_ns_string(),
            "1795303341484103896.250"
        );
        assert_eq!(TimePs(-1_500).to_ns_string(), "-1.500");
        assert_eq!(TimePs(7).to_ns_string(), "0.007");
    }

    #[test]
    fn participant_labels() {
        let p = Participant {
            node: NodeId(1),
            device: Some(2048),
        };
        assert_eq!(p.to_string(), "n1d2048");
        let p = Participant {
            node: NodeId(3),
            device: None,
        };
        assert_eq!(p.to_string(), "n3");
    }
}
