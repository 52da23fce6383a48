//! What writing a run did: one outcome for every input format and output.

use std::collections::BTreeMap;
use std::path::PathBuf;

use alignment_core::NodeDiagnostics;
use collective_check::{NodeId, Report};
use collective_clock::EstimateReport;
use serde::Serialize;
use trace_merge::MergeReport;

use crate::clocks::{ClockReason, ClockSource};
use crate::node_clock::{ClockWarning, NodeClock};

/// What a merge did, whatever the run's format and the output's.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct MergeOutcome {
    /// The file written.
    pub output: PathBuf,
    /// The summary written beside it (XSpace runs: the merge report and
    /// every node's alignment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<PathBuf>,
    /// Where the clock corrections came from.
    pub clock_source: ClockSource,
    /// Why that source.
    pub clock_reason: ClockReason,
    /// Per node: where its correction came from, why, and the check of its
    /// probe offsets against its collectives (XSpace runs).
    pub node_clocks: Vec<NodeClock>,
    /// What the clock planning warned about.
    pub clock_warnings: Vec<ClockWarning>,
    /// The corrections estimated from the collectives, per node and
    /// segment (offset, drift, uncertainty, constraints), when they were.
    pub collective_clocks: Option<EstimateReport>,
    /// Per node, what alignment did, by node id (XSpace runs).
    pub nodes: Vec<NodeDiagnostics>,
    /// Per node, the file written for it, when each node's trace is
    /// written on its own (`OutputKind::EachNode`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<NodeId, PathBuf>,
    /// Where every plane went (XSpace runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge: Option<MergeReport>,
    /// What the repair of the collectives moved, when the plan repairs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair: Option<crate::repair::RepairOutcome>,
    /// The collectives as recorded (when validated).
    pub before: Option<Report>,
    /// The collectives as merged (when validated).
    pub after: Option<Report>,
    /// What the export wrote, when the output is a Perfetto trace or
    /// Chrome trace JSON exported from XSpace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub export: Option<perfetto_export::Summary>,
    /// What the merge of PyTorch (Kineto) ranks did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kineto: Option<KinetoMerge>,
    /// The run read: every node's trace, its rank or host and how its
    /// node was told, and the files left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<crate::RunFiles>,
    /// The members of a Perfetto archive (`OutputKind::PerfettoArchive`),
    /// one per node.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub archive: Vec<crate::ArchiveMember>,
}

/// What the merge of a PyTorch (Kineto) run did besides the clocks.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct KinetoMerge {
    /// Each rank's launch → kernel lags.
    pub launch_lags: Vec<crate::RankLaunchLag>,
    /// Written rank by rank with only its times moved: what moved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<crate::AlignedRank>,
    /// Merged into one Chrome-trace JSON from the ranks' own: the
    /// processes, events and flows written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json: Option<kineto_trace::MergeStats>,
    /// Converted to XSpace (written as it, or exported): what each rank's
    /// conversion carried and left out, by rank.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub converted: Vec<(NodeId, kineto_trace::XSpaceStats)>,
    /// Converted: matched instances without a flow (their sides differ in
    /// name, e.g. send/recv).
    #[serde(skip_serializing_if = "is_zero")]
    pub unflowed: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl MergeOutcome {
    /// The outcome of a merge with these clocks, nothing else known yet.
    pub(crate) fn new(
        output: PathBuf,
        clock_source: ClockSource,
        clock_reason: ClockReason,
        collective_clocks: Option<EstimateReport>,
    ) -> MergeOutcome {
        MergeOutcome {
            output,
            summary: None,
            clock_source,
            clock_reason,
            node_clocks: Vec::new(),
            clock_warnings: Vec::new(),
            collective_clocks,
            nodes: Vec::new(),
            outputs: BTreeMap::new(),
            merge: None,
            repair: None,
            before: None,
            after: None,
            export: None,
            kineto: None,
            run: None,
            archive: Vec::new(),
        }
    }
}
