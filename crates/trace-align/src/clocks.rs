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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
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
}

impl ClockEvidence {
    /// Which source this is.
    pub fn source(&self) -> ClockSource {
        match self {
            ClockEvidence::Probes(_) => ClockSource::Probes,
            ClockEvidence::Collectives(_) => ClockSource::Collectives,
            ClockEvidence::Both { .. } => ClockSource::Both,
            ClockEvidence::Identity => ClockSource::Identity,
        }
    }

    /// The report of the estimate from the collectives, when that is the
    /// evidence.
    pub fn estimate_report(&self) -> Option<collective_clock::EstimateReport> {
        match self {
            ClockEvidence::Probes(_) | ClockEvidence::Identity => None,
            ClockEvidence::Collectives(e) | ClockEvidence::Both { estimate: e, .. } => {
                Some(e.report.clone())
            }
        }
    }

    /// The probe offsets file, when there is one in use.
    pub fn offsets(&self) -> Option<&OffsetsFile> {
        match self {
            ClockEvidence::Probes(o) | ClockEvidence::Both { offsets: o, .. } => Some(o),
            ClockEvidence::Collectives(_) | ClockEvidence::Identity => None,
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
        let node = input.node_id;
        let clocks = match self {
            ClockEvidence::Probes(offsets) => NodeClocks::for_trace(input, view, offsets, options),
            ClockEvidence::Collectives(estimate) => {
                let offset = estimated(estimate, node)?;
                NodeClocks::with_offset(input, view, offset, options)
            }
            ClockEvidence::Both {
                offsets,
                estimate,
                from_collectives,
            } if from_collectives.contains(&node) => {
                // A node aligned from its collectives (its probes
                // contradicted them) is still checked to be itself.
                let offset = estimated(estimate, node)?;
                NodeClocks::check_identity(input, view, offsets)
                    .and_then(|()| NodeClocks::with_offset(input, view, offset, options))
            }
            ClockEvidence::Both { offsets, .. } => {
                NodeClocks::for_trace(input, view, offsets, options)
            }
            ClockEvidence::Identity => {
                NodeClocks::with_offset(input, view, OffsetMap::Identity, options)
            }
        };
        clocks.map_err(RunError::align(node))
    }
}

/// `node`'s map in `estimate`.
fn estimated(estimate: &Estimate, node: NodeId) -> Result<OffsetMap> {
    estimate
        .maps
        .get(&node)
        .cloned()
        .ok_or(RunError::NotEstimated { node })
}

/// Estimate every node's correction from the collectives of its trace:
/// each node's collectives are read on its own host clock (device times
/// through its snapshot map), matched across nodes, and fitted; a fit
/// beyond the plausibility bound is an error
/// ([`RunError::ImplausibleCorrection`]).
pub(crate) fn from_collectives(
    nodes: &[NodeInput],
    options: &AlignOptions,
    estimator: Estimator,
) -> Result<Estimate> {
    let evidence = host_evidence(nodes, options)?;
    crate::plausible::estimate_plausible(&evidence, options.reference_node, estimator)
}

/// The collectives of `nodes`, each on its own host clock, matched.
pub(crate) fn host_evidence(nodes: &[NodeInput], options: &AlignOptions) -> Result<Evidence> {
    Ok(Evidence::from_extraction(
        &host_extraction(nodes, options)?,
        PlaneChoice::Auto,
    ))
}

/// The collectives of `nodes`, each on its own host clock, in node order
/// (read with [`host_check_options`]).
pub(crate) fn host_extraction(nodes: &[NodeInput], options: &AlignOptions) -> Result<Extraction> {
    let check = host_check_options();
    let per_node = nodes
        .par_iter()
        .with_max_len(1) // one task per node
        .map(|input| host_collectives(input, options, &check))
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

/// One node's collectives on its host clock.
fn host_collectives(
    input: &NodeInput,
    options: &AlignOptions,
    check: &collective_check::Options,
) -> Result<Extraction> {
    let bytes = open(&input.trace)?;
    let (clocks, session_start_ns) =
        NodeClocks::with_offset(input, &bytes.view(), OffsetMap::Identity, options)
            .map_err(RunError::align(input.node_id))?;
    retimed_collectives(input, &bytes, clocks, session_start_ns, options, check)
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
