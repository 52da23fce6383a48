//! Counters of a node drawn as a track of its process: the clock correction
//! applied to the node over the run, for one.

use collective_check::NodeId;

use crate::error::{Error, Result};

/// A counter of one node: values at absolute times, drawn as a counter track
/// of the node's process (Perfetto) or `C` events (Chrome JSON).
///
/// Invariant (checked by [`NodeCounter::new`]): at least one point, times in
/// `0..=i64::MAX` ns, strictly increasing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCounter {
    node: NodeId,
    name: String,
    points: Vec<(i64, i64)>,
}

impl NodeCounter {
    /// The counter `name` of `node`, with `points` of (absolute ns, value in
    /// ns). A counter holds its value until the next point.
    ///
    /// ```
    /// use perfetto_export::{NodeCounter, NodeId};
    /// let c = NodeCounter::new(NodeId(1), "clock correction", vec![(1_000, -250), (2_000, -240)])?;
    /// assert_eq!(c.points().len(), 2);
    /// assert!(NodeCounter::new(NodeId(1), "clock correction", vec![(2_000, 0), (1_000, 0)]).is_err());
    /// # Ok::<(), perfetto_export::Error>(())
    /// ```
    pub fn new(node: NodeId, name: impl Into<String>, points: Vec<(i64, i64)>) -> Result<Self> {
        let name = name.into();
        let bad = |reason: &'static str| Error::Counter {
            node,
            name: name.clone(),
            reason,
        };
        if points.is_empty() {
            return Err(bad("it has no points"));
        }
        if points.iter().any(|&(t, _)| t < 0) {
            return Err(bad("a time is before the epoch"));
        }
        if points.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(bad("its times do not increase strictly"));
        }
        Ok(NodeCounter { node, name, points })
    }

    /// The node.
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// The counter's name (its track's name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// (absolute ns, value in ns), in time order.
    pub fn points(&self) -> &[(i64, i64)] {
        &self.points
    }
}
