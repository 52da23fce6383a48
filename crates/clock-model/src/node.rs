//! The one type every crate names a node by.

use std::fmt;

/// A node of the run: a machine (in single-host recordings, a process),
/// numbered as the run numbers them — `node_id` in the probe offsets file
/// and in the merged trace's plane stat, the rank of a PyTorch trace.
///
/// Displayed as its bare number (`node 3` is written by the message).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The number.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The number as an index into a table of nodes numbered from 0.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl From<u32> for NodeId {
    fn from(n: u32) -> Self {
        NodeId(n)
    }
}

/// As the `int64` of the `node_id` plane stat.
impl From<NodeId> for i64 {
    fn from(n: NodeId) -> Self {
        i64::from(n.0)
    }
}

/// A node id as written on a command line or in a file name: a decimal
/// number from 0 to 4294967295.
impl std::str::FromStr for NodeId {
    type Err = std::num::ParseIntError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(NodeId)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// Node ids as messages write them: `0, 1, 3` (`NodeList(&ids)`).
#[derive(Clone, Copy, Debug)]
pub struct NodeList<'a>(pub &'a [NodeId]);

impl fmt::Display for NodeList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, node) in self.0.iter().enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            fmt::Display::fmt(node, f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_nodes_reads_as_their_numbers() {
        assert_eq!(
            NodeList(&[NodeId(0), NodeId(1), NodeId(3)]).to_string(),
            "0, 1, 3"
        );
        assert_eq!(NodeList(&[]).to_string(), "");
    }

    #[test]
    fn displays_and_orders_as_its_number() {
        assert_eq!(NodeId(12).to_string(), "12");
        assert_eq!(format!("{:>3}", NodeId(7)), "  7");
        assert!(NodeId(2) < NodeId(10));
        assert_eq!(NodeId::from(5).get(), 5);
        assert_eq!("42".parse::<NodeId>(), Ok(NodeId(42)));
        assert!("-1".parse::<NodeId>().is_err());
        assert!("4294967296".parse::<NodeId>().is_err());
    }
}
