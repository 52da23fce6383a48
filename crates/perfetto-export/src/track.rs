//! Tracks of slices an export adds beside the inputs' lines: the
//! cross-node critical path, for one.

use collective_check::NodeId;

use crate::error::{Error, Result};
use crate::sink::FlowRef;

/// One slice of a [`NodeTrack`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrackSlice {
    /// Begin, absolute ns.
    pub begin_ns: i64,
    /// End, absolute ns.
    pub end_ns: i64,
    /// Its name.
    pub name: String,
    /// Integer arguments, by name (`step`, ...).
    pub args: Vec<(String, i64)>,
    /// Flows through it (from one track's slice to another's, across
    /// nodes too).
    pub flows: Vec<FlowRef>,
}

/// Slices of one node drawn as a track of its process, after the node's
/// other tracks (Perfetto) or as a thread of its own (Chrome JSON).
///
/// Invariant (checked by [`NodeTrack::new`]): at least one slice, times
/// in `0..=i64::MAX` ns, each slice's begin at or before its end, the
/// slices in time order without overlap (one may begin where the last
/// ended).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeTrack {
    node: NodeId,
    name: String,
    slices: Vec<TrackSlice>,
}

impl NodeTrack {
    /// The track `name` of `node` holding `slices`.
    ///
    /// ```
    /// use perfetto_export::{NodeId, NodeTrack, TrackSlice};
    /// let slice = |begin_ns, end_ns| TrackSlice {
    ///     begin_ns,
    ///     end_ns,
    ///     name: "kernel: compute".into(),
    ///     args: vec![("step".into(), 3)],
    ///     flows: Vec::new(),
    /// };
    /// let t = NodeTrack::new(NodeId(1), "critical path", vec![slice(1_000, 2_000), slice(2_000, 2_500)])?;
    /// assert_eq!(t.slices().len(), 2);
    /// assert!(NodeTrack::new(NodeId(1), "critical path", vec![slice(1_000, 2_000), slice(1_500, 2_500)]).is_err());
    /// # Ok::<(), perfetto_export::Error>(())
    /// ```
    pub fn new(node: NodeId, name: impl Into<String>, slices: Vec<TrackSlice>) -> Result<Self> {
        let name = name.into();
        let bad = |reason: &'static str| Error::Track {
            node,
            name: name.clone(),
            reason,
        };
        if slices.is_empty() {
            return Err(bad("it has no slices"));
        }
        if slices.iter().any(|s| s.begin_ns < 0) {
            return Err(bad("a slice begins before the epoch"));
        }
        if slices.iter().any(|s| s.end_ns < s.begin_ns) {
            return Err(bad("a slice ends before it begins"));
        }
        if slices.windows(2).any(|w| w[1].begin_ns < w[0].end_ns) {
            return Err(bad("its slices are not in time order without overlap"));
        }
        Ok(NodeTrack { node, name, slices })
    }

    /// The node.
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// The track's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The slices, in time order.
    pub fn slices(&self) -> &[TrackSlice] {
        &self.slices
    }
}
