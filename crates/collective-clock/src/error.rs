//! The crate's one error type.

use collective_check::NodeId;

/// Why no clock correction could be estimated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No node was given to hold at its clock (no reference).
    #[error("no reference node: at least one node must keep its clock")]
    NoHeldNode,
    /// The run has one node only: there is no other clock to relate it to.
    #[error(
        "only node {node} is in the run: clocks from the collectives need the traces of two or \
         more nodes"
    )]
    OneNode {
        /// The node.
        node: NodeId,
    },
    /// The evidence holds no instance with two or more nodes.
    #[error("no collective instance shared by two nodes: nothing to estimate clocks from")]
    NoSharedInstances,
    /// The reference node takes part in no shared instance.
    #[error("the reference node {node} shares no collective instance with another node")]
    ReferenceNotShared {
        /// The reference node.
        node: NodeId,
    },
    /// A node shares no instance with any other node.
    #[error(
        "node {node} shares no collective instance with any other node: its clock cannot be corrected"
    )]
    NoSharedInstance {
        /// The node.
        node: NodeId,
    },
    /// Nodes that share instances among themselves but are not linked to
    /// the reference node, not even through other nodes.
    #[error(
        "nodes {} share collectives only among themselves, never (even through other \
         nodes) with the reference node {reference}",
        clock_model::NodeList(nodes)
    )]
    Disconnected {
        /// The nodes of the unlinked group.
        nodes: Vec<NodeId>,
        /// The reference node.
        reference: NodeId,
    },
    /// A repair bound outside `(0, 50] %`.
    #[error(
        "repair bound {percent} % is out of range: it must be at least 0.0001 % and at most 50 %"
    )]
    RepairBound {
        /// The bound asked for, %.
        percent: f64,
    },
    /// A fitted value (an offset, a drift, a time) is not finite or does
    /// not fit the integer range of clock maps and reports: the fit
    /// diverged on this node.
    #[error(
        "node {node}: the fitted {what} is {value:e}: not finite or outside the range of a clock \
         correction (the fit diverged)"
    )]
    Overflow {
        /// The node.
        node: NodeId,
        /// What overflowed, with its unit (e.g. "offset (ns) at the end of
        /// segment 2").
        what: String,
        /// The value, in the unit `what` names.
        value: f64,
    },
    /// The fitted correction of a node is not a valid clock map.
    #[error("node {node}: the fitted correction is not a valid clock map")]
    Map {
        /// The node.
        node: NodeId,
        /// What the map constructor rejected.
        source: clock_model::ClockError,
    },
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
