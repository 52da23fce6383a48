//! A node's clock maps, built once from its snapshot pairs and the offsets
//! file: `P_i : Tracer → Host` and `O_i : Host → Global`.

use clock_model::NodeId;
use clock_model::{
    Global, GlobalTime, Host, HostTime, Mapped, ModelChoice, OffsetAnchors, OffsetMap, OffsetModel,
    PiecewiseLinear, SnapshotChoice, SnapshotMap,
};

use xplane_proto::SpaceView;

use crate::error::{AlignError, Result};
use crate::node::NodeInput;
use crate::offsets::OffsetsFile;
use crate::options::AlignOptions;
use crate::snapshots::Snapshots;

/// Everything needed to map one node's events onto the global clock.
#[derive(Debug, Clone)]
pub struct NodeClocks {
    /// The node.
    pub node_id: NodeId,
    /// `P_i`, when the node has snapshot pairs.
    pub snapshot: Option<SnapshotMap>,
    /// The snapshot model `P_i` uses and why; `None` without pairs.
    pub snapshot_choice: Option<SnapshotChoice>,
    /// The pairs behind `P_i`.
    pub snapshots: Option<Snapshots>,
    /// `O_i : H_i → H_0`, onto the clock of the node the offsets are measured
    /// against ([`OFFSETS_BASE_NODE`]); the identity for node 0, for the
    /// reference node, and for a node passed through.
    pub offset: OffsetMap,
    /// `O_r⁻¹ : H_0 → H_r` when the global timeline is the clock of a
    /// reference node `r` other than node 0 (`r`'s fitted or interpolated
    /// map inverted; interpolated when the model is the drift's); `None`
    /// otherwise.
    pub to_reference: Option<PiecewiseLinear<Global, Host>>,
    /// The anchors behind `O_i`, with the rows skipped and the warnings.
    pub anchors: Option<OffsetAnchors>,
    /// The offset model `O_i` uses, why, and the correction's uncertainty;
    /// `None` for a node passed through.
    pub offset_choice: Option<ModelChoice>,
    /// True when the node had no usable offsets and is passed through unaligned.
    pub passed_through: bool,
    /// `R_i : G → G`, the repair of the collectives left violated after
    /// the clock correction (the controlled logical clock), applied last;
    /// `None`: no repair.
    pub repair: Option<PiecewiseLinear<Global, Global>>,
    /// `S_w`: REALTIME at tracer start, epoch ns.
    pub start_walltime_ns: Option<u64>,
    /// `S_g`: tracer clock at tracer start, ns.
    pub start_gpu_ns: Option<u64>,
}

impl NodeClocks {
    /// Build node `node_id`'s maps. `S_w`/`S_g` come from the offsets
    /// header unless given (`Some`) by the caller; `S_g = 0` in the header
    /// means unknown.
    pub fn build(
        node_id: NodeId,
        offsets: &OffsetsFile,
        snapshots: Option<Snapshots>,
        start_walltime_ns: Option<u64>,
        start_gpu_ns: Option<u64>,
        options: &AlignOptions,
    ) -> Result<Self> {
        let header = offsets.nodes.get(&node_id);
        if header.is_none() && !options.pass_through_without_offsets {
            return Err(AlignError::NodeNotListed {
                path: offsets.path.clone(),
                node: node_id,
                listed: offsets.nodes.keys().copied().collect(),
            });
        }
        if !offsets.nodes.contains_key(&options.reference_node) {
            return Err(AlignError::ReferenceNotListed {
                path: offsets.path.clone(),
                node: options.reference_node,
            });
        }
        let start_walltime_ns = start_walltime_ns.or(header.map(|h| h.start_walltime_ns));
        let start_gpu_ns = start_gpu_ns.or(header.map(|h| h.start_gpu_ns).filter(|&g| g != 0));

        let rows: Vec<_> = offsets.rows.iter().map(|(_, r)| *r).collect();
        let has_rows = rows.iter().any(|r| r.node_id == node_id);
        // `None`: no usable rows, and the node is passed through unaligned.
        let anchors = match OffsetAnchors::from_rows(&rows, node_id, OFFSETS_BASE_NODE) {
            Ok(a) => Some(a),
            Err(clock_model::ClockError::NoOffsetAnchors { .. })
                if options.pass_through_without_offsets =>
            {
                None
            }
            Err(clock_model::ClockError::NoOffsetAnchors { .. }) => {
                return Err(AlignError::NoUsableOffsets {
                    path: offsets.path.clone(),
                    node: node_id,
                    has_rows,
                });
            }
            Err(source) => {
                return Err(AlignError::Clock {
                    path: offsets.path.clone(),
                    node: node_id,
                    what: "offset anchors",
                    source: Box::new(source),
                });
            }
        };
        let (offset, offset_choice, passed_through) = match &anchors {
            Some(a) => {
                // The reference node's own clock is the global timeline.
                let reference = node_id == options.reference_node;
                let own;
                let a = if reference && !a.is_reference {
                    own = OffsetAnchors {
                        is_reference: true,
                        ..a.clone()
                    };
                    &own
                } else {
                    a
                };
                let estimate =
                    OffsetMap::estimate(a, options.offset_model, options.offset_extrapolation)
                        .map_err(|source| AlignError::Clock {
                            path: offsets.path.clone(),
                            node: node_id,
                            what: "offset map",
                            source: Box::new(source),
                        })?;
                (estimate.map, Some(estimate.choice), false)
            }
            None => (OffsetMap::Identity, None, true),
        };
        let to_reference =
            if options.reference_node == OFFSETS_BASE_NODE || node_id == options.reference_node {
                None
            } else {
                Some(reference_inverse(offsets, &rows, options)?)
            };
        let (snapshot, snapshot_choice) = snapshot_map(node_id, snapshots.as_ref(), options)?;
        Ok(NodeClocks {
            node_id,
            snapshot,
            snapshot_choice,
            snapshots,
            offset,
            to_reference,
            anchors,
            offset_choice,
            passed_through,
            repair: None,
            start_walltime_ns,
            start_gpu_ns,
        })
    }
}

impl NodeClocks {
    /// Build the maps of the node described by `input` whose trace is
    /// `view`: its session start `T_sess` (given, or read from the trace),
    /// its snapshot pairs (the given file, or the trace's embedded
    /// `/host:snapshots` plane) and its offsets rows. Returns the maps and
    /// `T_sess` (epoch ns).
    pub fn for_trace(
        input: &NodeInput,
        view: &SpaceView<'_>,
        offsets: &OffsetsFile,
        options: &AlignOptions,
    ) -> Result<(Self, i128)> {
        let session_start_ns = match input.session_start_ns {
            Some(t) => t,
            None => xplane_proto::session_start_ns_view(view)
                .map_err(|e| AlignError::wire(&input.trace, view, e))?,
        };
        check_trace_is_node(input, view, offsets, session_start_ns)?;
        let snapshots = match &input.snapshots {
            Some(p) => Some(Snapshots::read(p)?),
            None => Snapshots::from_trace(&input.trace, view, session_start_ns)?,
        };
        let clocks = NodeClocks::build(
            input.node_id,
            offsets,
            snapshots,
            input.start_walltime_ns,
            input.start_gpu_ns,
            options,
        )?;
        Ok((clocks, session_start_ns))
    }
}

impl NodeClocks {
    /// Fail with [`AlignError::TraceOfAnotherNode`] when the trace `view`
    /// of `input` carries the tracer start `S_w` that `offsets` lists for
    /// another node (the check [`NodeClocks::for_trace`] makes), for a node
    /// aligned otherwise than by these offsets.
    pub fn check_identity(
        input: &NodeInput,
        view: &SpaceView<'_>,
        offsets: &OffsetsFile,
    ) -> Result<()> {
        let session_start_ns = match input.session_start_ns {
            Some(t) => t,
            None => xplane_proto::session_start_ns_view(view)
                .map_err(|e| AlignError::wire(&input.trace, view, e))?,
        };
        check_trace_is_node(input, view, offsets, session_start_ns)
    }
}

/// `P_i` through a node's snapshot pairs under the snapshot model, and the
/// model's choice, when the node has pairs.
fn snapshot_map(
    node_id: NodeId,
    snapshots: Option<&Snapshots>,
    options: &AlignOptions,
) -> Result<(Option<SnapshotMap>, Option<SnapshotChoice>)> {
    let Some(s) = snapshots.filter(|s| !s.pairs().is_empty()) else {
        return Ok((None, None));
    };
    let estimate = SnapshotMap::estimate(
        s.pairs(),
        options.snapshot_model,
        options.snapshot_extrapolation,
    )
    .map_err(|source| AlignError::Clock {
        path: s.source().to_path_buf(),
        node: node_id,
        what: "snapshot map",
        source: Box::new(source),
    })?;
    Ok((Some(estimate.map), Some(estimate.choice)))
}

impl NodeClocks {
    /// The maps of a node whose host clock's correction onto the global
    /// clock is known without probe offsets (estimated from the
    /// collectives, or given): `offset` is `O_i : H_i → G`.
    ///
    /// The tracer start comes from `input` when given; otherwise `S_w` is
    /// the start of the trace's embedded `/host:snapshots` line (the
    /// collector stamps its lines with `S_w`), and `S_g` the tracer reading
    /// the snapshot map puts at `S_w`, `P_i⁻¹(S_w)` (the collector reads
    /// the two back to back). Returns the maps and `T_sess`.
    pub fn with_offset(
        input: &NodeInput,
        view: &SpaceView<'_>,
        offset: OffsetMap,
        options: &AlignOptions,
    ) -> Result<(Self, i128)> {
        let wire = |e| AlignError::wire(&input.trace, view, e);
        let session_start_ns = match input.session_start_ns {
            Some(t) => t,
            None => xplane_proto::session_start_ns_view(view).map_err(wire)?,
        };
        let snapshots = match &input.snapshots {
            Some(p) => Some(Snapshots::read(p)?),
            None => Snapshots::from_trace(&input.trace, view, session_start_ns)?,
        };
        let (snapshot, snapshot_choice) = snapshot_map(input.node_id, snapshots.as_ref(), options)?;
        let start_walltime_ns = match input.start_walltime_ns {
            Some(sw) => Some(sw),
            None => snapshot_line_start_ns(view, session_start_ns).map_err(wire)?,
        };
        let start_gpu_ns = input.start_gpu_ns.or_else(|| {
            let (map, sw) = (snapshot.as_ref()?, start_walltime_ns?);
            let r = map
                .to_tracer(HostTime::from_ns(sw as i64))
                .time
                .as_ns_floor();
            u64::try_from(r).ok()
        });
        let clocks = NodeClocks {
            node_id: input.node_id,
            snapshot,
            snapshot_choice,
            snapshots,
            offset,
            to_reference: None,
            anchors: None,
            offset_choice: None,
            passed_through: false,
            repair: None,
            start_walltime_ns,
            start_gpu_ns,
        };
        Ok((clocks, session_start_ns))
    }
}

/// Refuse to align a trace with another node's offsets: the offsets
/// header carries each node's tracer start `S_w` (no host names), which
/// the collector also stamps on the trace's `/host:snapshots` line. A
/// trace whose `S_w` is exactly another node's, and not that of the node
/// it is aligned as, is that other node's trace. Without the line, with
/// an `S_w` the header does not list, or with unreadable bytes, nothing
/// can be told.
fn check_trace_is_node(
    input: &NodeInput,
    view: &SpaceView<'_>,
    offsets: &OffsetsFile,
    session_start_ns: i128,
) -> Result<()> {
    // Malformed bytes are reported by the read that follows, with its
    // own context; here they only mean nothing can be told.
    let Ok(Some(sw)) = snapshot_line_start_ns(view, session_start_ns) else {
        return Ok(());
    };
    let is = |h: &crate::offsets::NodeStart| h.start_walltime_ns == sw;
    if offsets.nodes.get(&input.node_id).is_some_and(is) {
        return Ok(());
    }
    match offsets.nodes.iter().find(|(_, h)| is(h)) {
        Some((&other, _)) => Err(AlignError::TraceOfAnotherNode {
            path: input.trace.clone(),
            node: input.node_id,
            other,
            offsets: offsets.path.clone(),
            start_walltime_ns: sw,
        }),
        None => Ok(()),
    }
}

/// The absolute start (epoch ns) of the first line of a trace's
/// `/host:snapshots` plane, if it has one.
fn snapshot_line_start_ns(
    view: &SpaceView<'_>,
    session_start_ns: i128,
) -> std::result::Result<Option<u64>, xplane_proto::WireError> {
    for plane in view.planes() {
        let plane = plane?;
        if plane.name == xplane_proto::SNAPSHOT_PLANE
            && let Some(line) = plane.lines().next()
        {
            let start = session_start_ns + line?.timestamp_ns as i128;
            return Ok(u64::try_from(start).ok());
        }
    }
    Ok(None)
}

/// The node every `offset_ns` is measured against: `clock(node) − clock(node 0)`.
pub const OFFSETS_BASE_NODE: NodeId = NodeId(0);

impl NodeClocks {
    /// True when the tracer path has every input: snapshot pairs, `S_w`
    /// and `S_g`.
    pub(crate) fn has_tracer_inputs(&self) -> bool {
        self.snapshot.is_some() && self.start_walltime_ns.is_some() && self.start_gpu_ns.is_some()
    }

    /// A host time of this node on the global timeline (binary search; the
    /// per-event path uses cursors), repaired when there is a repair.
    /// `outside` is set when either clock stage extrapolated.
    pub fn host_to_global(&self, h: HostTime) -> Mapped<Global> {
        let g = self.offset.map(h);
        let g = onto_reference(g, |g| self.to_reference.as_ref().map(|m| m.map(g)));
        repaired(g, |g| self.repair.as_ref().map(|m| m.map(g).time))
    }

    /// A host time of this node, epoch ns, on the global timeline (epoch
    /// ns, rounded down).
    pub fn host_ns_to_global_ns(&self, host_ns: i128) -> i128 {
        self.host_to_global(HostTime::from_ps(host_ns * 1000))
            .time
            .as_ns_floor()
    }
}

/// `O_r⁻¹` for the reference node `r`: its offset map inverted, under the
/// run's offset model when that map is piecewise linear (the fit or
/// interpolation), else (the drift model, which has no exact inverse)
/// interpolated.
fn reference_inverse(
    offsets: &OffsetsFile,
    rows: &[clock_model::OffsetRow],
    options: &AlignOptions,
) -> Result<PiecewiseLinear<Global, Host>> {
    let r = options.reference_node;
    let clock_err = |what, source| AlignError::Clock {
        path: offsets.path.clone(),
        node: r,
        what,
        source: Box::new(source),
    };
    let anchors = OffsetAnchors::from_rows(rows, r, OFFSETS_BASE_NODE)
        .map_err(|e| clock_err("reference node's offset anchors", e))?;
    let build = |model| {
        OffsetMap::build(&anchors, model, options.offset_extrapolation)
            .map_err(|e| clock_err("reference node's offset map", e))
    };
    let map = match build(options.offset_model)? {
        OffsetMap::Fit(map) | OffsetMap::Interpolate(map) => map,
        _ => match build(OffsetModel::Interpolate)? {
            OffsetMap::Interpolate(map) => map,
            _ => unreachable!("a node other than the base has an interpolated map"),
        },
    };
    map.inverse()
        .map_err(|e| clock_err("inverse of the reference node's offset map", e))
}

/// Finish `O_i`'s result `g` with `O_r⁻¹` when there is one (`inverse`
/// evaluates it, by search or by cursor): the time read on the reference
/// node's clock, outside when either stage extrapolated.
#[inline]
pub(crate) fn onto_reference(
    g: Mapped<Global>,
    inverse: impl FnOnce(GlobalTime) -> Option<Mapped<Host>>,
) -> Mapped<Global> {
    match inverse(g.time) {
        None => g,
        Some(r) => Mapped {
            time: r.time.relabel(),
            outside: g.outside.or(r.outside),
        },
    }
}

/// Finish a global time `g` with the repair `R_i` when there is one
/// (`repair` evaluates it, by search or by cursor). The repair is the
/// identity outside the times it moves, and its own extrapolation is
/// not the clocks': `outside` is `g`'s.
#[inline]
pub(crate) fn repaired(
    g: Mapped<Global>,
    repair: impl FnOnce(GlobalTime) -> Option<GlobalTime>,
) -> Mapped<Global> {
    match repair(g.time) {
        None => g,
        Some(time) => Mapped { time, ..g },
    }
}
