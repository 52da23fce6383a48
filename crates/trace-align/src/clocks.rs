//! Where a run's clock corrections come from: the network-probed offsets
//! file, or the collectives in the traces themselves.

use std::collections::BTreeSet;

use alignment_core::{AlignOptions, NodeAligner, NodeClocks, NodeInput, OffsetsFile};
use clock_model::OffsetMap;
use collective_check::{Extraction, NodeId, NodeSource, PlaneChoice};
use collective_clock::{Estimate, Estimator, Evidence};
use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Result, RunError};
use crate::node::{AlignedTimes, open};

/// Which evidence to align a run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockSource {
    /// The probe offsets when the run has them, else the collectives.
    #[default]
    Auto,
    /// The probe offsets file (an error when the run has none).
    Probes,
    /// The collectives: no participant finishes a collective before every
    /// participant has begun it.
    Collectives,
    /// What `Auto` ends with when the nodes differ: probe offsets for
    /// some, the collectives for the others (per node in
    /// [`Plan::node_clocks`](crate::Plan::node_clocks)). Asked for, it is
    /// `Auto`.
    Both,
    /// What a run of one node ends with, whatever was asked but probes:
    /// its own clock is the timeline, no correction (the identity).
    Identity,
    /// The clocks as written, no correction for any node: for runs on one
    /// host, or on hosts whose clocks are already synchronised (PTP).
    Recorded,
}

impl std::fmt::Display for ClockSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ClockSource::Auto => "auto",
            ClockSource::Probes => "probes",
            ClockSource::Collectives => "collectives",
            ClockSource::Both => "probes and collectives",
            ClockSource::Identity => "identity",
            ClockSource::Recorded => "recorded",
        })
    }
}

/// Why a plan aligns with the evidence it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum ClockReason {
    /// The evidence asked for.
    Asked,
    /// `auto`: the run has a probe offsets file with rows for every node.
    ProbeOffsets,
    /// `auto`: the run has no probe offsets file.
    NoOffsetsFile,
    /// `auto`: the offsets file gives this node, the reference, no usable
    /// row (no completed probe round, every row unreachable), so the
    /// collectives are used for every node.
    NoUsableProbeRows {
        /// The node.
        node: NodeId,
    },
    /// `auto`: probe offsets for some nodes, the collectives for the others
    /// (nodes without usable probe rows, or whose probes contradict their
    /// collectives); why, per node, is in
    /// [`Plan::node_clocks`](crate::Plan::node_clocks).
    PerNode,
    /// The run has one node: its clock is the timeline, nothing to align.
    OneNode,
}

impl std::fmt::Display for ClockReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClockReason::Asked => f.write_str("as asked"),
            ClockReason::ProbeOffsets => f.write_str("the run has probe offsets"),
            ClockReason::NoOffsetsFile => f.write_str("the run has no probe offsets file"),
            ClockReason::NoUsableProbeRows { node } => write!(
                f,
                "the probe offsets give node {node} no usable row (no completed round)"
            ),
            ClockReason::PerNode => f.write_str(
                "probe offsets where usable and consistent, the collectives for the other nodes",
            ),
            ClockReason::OneNode => {
                f.write_str("a one-node run: its own clock is the timeline, no correction")
            }
        }
    }
}

/// The evidence a plan aligns with.
#[derive(Debug, Clone)]
pub enum ClockEvidence {
    /// Network-probed offsets.
    Probes(OffsetsFile),
    /// Corrections estimated from the collectives, per node (`Host → Global`).
    Collectives(Box<Estimate>),
    /// Probe offsets for most nodes; the nodes in `from_collectives` get
    /// their correction from `estimate`, fitted onto the others' probe
    /// corrections.
    Both {
        /// The probe offsets.
        offsets: OffsetsFile,
        /// The fit of the nodes in `from_collectives` (the others held).
        estimate: Box<Estimate>,
        /// The nodes aligned from the collectives.
        from_collectives: BTreeSet<NodeId>,
    },
    /// No correction: the one node of a run keeps its clock.
    Identity,
    /// No correction for any node: the clocks as recorded, as asked.
    Recorded,
}

impl ClockEvidence {
    /// Which source this is.
    pub fn source(&self) -> ClockSource {
        match self {
            ClockEvidence::Probes(_) => ClockSource::Probes,
            ClockEvidence::Collectives(_) => ClockSource::Collectives,
            ClockEvidence::Both { .. } => ClockSource::Both,
            ClockEvidence::Identity => ClockSource::Identity,
            ClockEvidence::Recorded => ClockSource::Recorded,
        }
    }

    /// The report of the estimate from the collectives, when that is the
    /// evidence.
    pub fn estimate_report(&self) -> Option<collective_clock::EstimateReport> {
        match self {
            ClockEvidence::Probes(_) | ClockEvidence::Identity | ClockEvidence::Recorded => None,
            ClockEvidence::Collectives(e) | ClockEvidence::Both { estimate: e, .. } => {
                Some(e.report.clone())
            }
        }
    }

    /// The probe offsets file, when there is one in use.
    pub fn offsets(&self) -> Option<&OffsetsFile> {
        match self {
            ClockEvidence::Probes(o) | ClockEvidence::Both { offsets: o, .. } => Some(o),
            ClockEvidence::Collectives(_) | ClockEvidence::Identity | ClockEvidence::Recorded => {
                None
            }
        }
    }

    /// Build one node's clocks from its trace `view` and this evidence, as
    /// the merge does; returns them and the trace's session start.
    pub fn node_clocks(
        &self,
        input: &NodeInput,
        view: &xplane_proto::SpaceView<'_>,
        options: &AlignOptions,
    ) -> Result<(NodeClocks, i128)> {
        self.correction(input.node_id)?.clocks(input, view, options)
    }

    /// Node `node`'s correction in this evidence.
    pub(crate) fn correction(&self, node: NodeId) -> Result<Correction<'_>> {
        Ok(match self {
            ClockEvidence::Probes(offsets) => Correction::Probes(offsets),
            ClockEvidence::Collectives(estimate) => Correction::Estimated {
                map: estimated(estimate, node)?,
                identity: None,
            },
            ClockEvidence::Both {
                offsets,
                estimate,
                from_collectives,
            } if from_collectives.contains(&node) => Correction::Estimated {
                map: estimated(estimate, node)?,
                identity: Some(offsets),
            },
            ClockEvidence::Both { offsets, .. } => Correction::Probes(offsets),
            ClockEvidence::Identity | ClockEvidence::Recorded => Correction::Identity,
        })
    }
}

/// One node's correction onto the global clock, as a plan's evidence (or
/// a clocks file) gives it.
#[derive(Clone, Copy)]
pub(crate) enum Correction<'e> {
    /// From its probe offsets.
    Probes(&'e OffsetsFile),
    /// Estimated from the collectives; with `identity`, the trace is still
    /// checked to be the node's by those probe offsets.
    Estimated {
        /// `O_i : H_i → G`.
        map: &'e OffsetMap,
        /// The probe offsets the trace's identity is checked against.
        identity: Option<&'e OffsetsFile>,
    },
    /// None: the one node of a run keeps its clock.
    Identity,
}

impl Correction<'_> {
    /// The node's clocks from its trace `view` under this correction, and
    /// the trace's session start.
    pub(crate) fn clocks(
        &self,
        input: &NodeInput,
        view: &xplane_proto::SpaceView<'_>,
        options: &AlignOptions,
    ) -> Result<(NodeClocks, i128)> {
        let clocks = match *self {
            Correction::Probes(offsets) => NodeClocks::for_trace(input, view, offsets, options),
            Correction::Estimated { map, identity } => {
                // A node aligned from its collectives (its probes
                // contradicted them) is still checked to be itself.
                let checked = match identity {
                    Some(offsets) => NodeClocks::check_identity(input, view, offsets),
                    None => Ok(()),
                };
                checked.and_then(|()| NodeClocks::with_offset(input, view, map.clone(), options))
            }
            Correction::Identity => {
                NodeClocks::with_offset(input, view, OffsetMap::Identity, options)
            }
        };
        clocks.map_err(RunError::align(input.node_id))
    }

    /// Host time `host_ns` (epoch ns) of node `node` on the global clock
    /// (epoch ns, rounded down), as its clocks map it: what a run's output
    /// session start is computed from.
    pub(crate) fn host_ns_to_global_ns(
        &self,
        node: NodeId,
        host_ns: i128,
        options: &AlignOptions,
    ) -> Result<i128> {
        match *self {
            Correction::Probes(offsets) => {
                let clocks = NodeClocks::build(node, offsets, None, None, None, options)
                    .map_err(RunError::align(node))?;
                Ok(clocks.host_ns_to_global_ns(host_ns))
            }
            Correction::Estimated { map, .. } => Ok(map
                .map(clock_model::HostTime::from_ps(host_ns * 1000))
                .time
                .as_ns_floor()),
            Correction::Identity => Ok(host_ns),
        }
    }
}

/// `node`'s map in `estimate`.
fn estimated(estimate: &Estimate, node: NodeId) -> Result<&OffsetMap> {
    estimate
        .maps
        .get(&node)
        .ok_or(RunError::NotEstimated { node })
}

/// Estimate every node's correction from the collectives of its trace:
/// each node's collectives are read on its own host clock (device times
/// through its snapshot map) from `host`, matched across nodes, and
/// fitted; a fit beyond the plausibility bound is an error
/// ([`RunError::ImplausibleCorrection`]).
pub(crate) fn from_collectives(
    nodes: &[NodeInput],
    options: &AlignOptions,
    estimator: Estimator,
    host: HostCollectives<'_>,
) -> Result<Estimate> {
    let evidence = host.evidence(nodes, options)?;
    crate::plausible::estimate_plausible(&evidence, options.reference_node, estimator)
}

/// Where a plan reads every node's collectives on its own host clock: the
/// traces, or the nodes' summaries (which hold what the same read gave
/// where each trace lives).
#[derive(Clone, Copy)]
pub(crate) enum HostCollectives<'s> {
    /// Read from the traces now ([`host_read`]).
    Traces,
    /// Taken from the summaries, by node id.
    Summaries(&'s std::collections::BTreeMap<NodeId, crate::cluster::NodeSummary>),
}

impl HostCollectives<'_> {
    /// The collectives of `nodes`, each on its own host clock, matched.
    pub(crate) fn evidence(&self, nodes: &[NodeInput], options: &AlignOptions) -> Result<Evidence> {
        Ok(Evidence::from_extraction(
            &self.extraction(nodes, options)?,
            PlaneChoice::Auto,
        ))
    }

    /// The collectives of `nodes`, each on its own host clock, in node
    /// order.
    pub(crate) fn extraction(
        &self,
        nodes: &[NodeInput],
        options: &AlignOptions,
    ) -> Result<Extraction> {
        match self {
            HostCollectives::Traces => host_extraction(nodes, options),
            HostCollectives::Summaries(summaries) => Ok(joined(nodes.iter().map(|n| {
                summaries
                    .get(&n.node_id)
                    .map(|s| s.collectives.clone())
                    .unwrap_or_default()
            }))),
        }
    }
}

/// The collectives of `nodes`, each on its own host clock, matched.
pub(crate) fn host_evidence(nodes: &[NodeInput], options: &AlignOptions) -> Result<Evidence> {
    HostCollectives::Traces.evidence(nodes, options)
}

/// The collectives of `nodes`, each on its own host clock, in node order
/// (read with [`host_check_options`]).
pub(crate) fn host_extraction(nodes: &[NodeInput], options: &AlignOptions) -> Result<Extraction> {
    let per_node = nodes
        .par_iter()
        .with_max_len(1) // one task per node
        .map(|input| host_read(input, options).map(|read| read.collectives))
        // In node order, so that the error of a run with several is the
        // first node's, whichever task ends first.
        .collect::<Vec<_>>()
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    Ok(joined(per_node))
}

/// How the collectives are read for the evidence on the nodes' host
/// clocks: point-to-point included, and only the occurrences (planes that
/// cannot hold a collective are not walked; the merge reads and checks
/// every event).
pub(crate) fn host_check_options() -> collective_check::Options {
    let mut check = collective_check::Options::default();
    check.include_point_to_point = true;
    check.collectives_only = true;
    check
}

/// The evidence of every node's collectives on its host clock, given in
/// node order.
pub(crate) fn matched(per_node: impl IntoIterator<Item = Extraction>) -> Evidence {
    Evidence::from_extraction(&joined(per_node), PlaneChoice::Auto)
}

/// The collectives of every node in one extraction, given in node order.
fn joined(per_node: impl IntoIterator<Item = Extraction>) -> Extraction {
    let mut all = Extraction::new();
    for e in per_node {
        all.append(e);
    }
    all
}

/// What one read of a node's trace gives its summary: its collectives on
/// its own host clock, and the snapshot pairs its clock map is built from.
pub(crate) struct HostRead {
    /// The collectives, read with [`host_check_options`].
    pub collectives: Extraction,
    /// The snapshot pairs (the given file's, or the trace's own plane).
    pub snapshots: Option<alignment_core::Snapshots>,
    /// The tracer start `(S_w, S_g)` the read took from the trace (or the
    /// input): the shift of its tracer lines.
    pub tracer_start: (Option<u64>, Option<u64>),
}

/// One node's collectives on its host clock (the evidence of the clock
/// estimate, and what its summary stores), with its snapshot pairs.
pub(crate) fn host_read(input: &NodeInput, options: &AlignOptions) -> Result<HostRead> {
    let bytes = open(&input.trace)?;
    let (clocks, session_start_ns) =
        NodeClocks::with_offset(input, &bytes.view(), OffsetMap::Identity, options)
            .map_err(RunError::align(input.node_id))?;
    let snapshots = clocks.snapshots.clone();
    let tracer_start = (clocks.start_walltime_ns, clocks.start_gpu_ns);
    let check = host_check_options();
    let collectives =
        retimed_collectives(input, &bytes, clocks, session_start_ns, options, &check)?;
    Ok(HostRead {
        collectives,
        snapshots,
        tracer_start,
    })
}

/// One node's collectives, each time mapped as the aligner with `clocks`
/// maps it.
pub(crate) fn retimed_collectives(
    input: &NodeInput,
    bytes: &xplane_proto::FileBytes,
    clocks: NodeClocks,
    session_start_ns: i128,
    options: &AlignOptions,
    check: &collective_check::Options,
) -> Result<Extraction> {
    let node = input.node_id;
    let aligner = NodeAligner::with_clocks(
        &input.trace,
        bytes.view(),
        clocks,
        session_start_ns,
        options,
        Some(session_start_ns),
    )
    .map_err(RunError::align(node))?;
    let (mut recorded, mut retimed) = (Extraction::new(), Extraction::new());
    collective_check::extract_bytes_retimed(
        bytes,
        &input.trace,
        NodeSource::Given(node),
        check,
        &AlignedTimes(&aligner),
        &mut recorded,
        &mut retimed,
    )
    .map_err(|source| RunError::Collectives { node, source })?;
    Ok(retimed)
}
