//! The repair of last resort: collectives still violated after the clock
//! correction are repaired per node by the controlled logical clock
//! (`collective_clock::repair`), as one more map composed into each node's
//! correction, so the merge applies it in its one pass.

use std::collections::BTreeMap;

use clock_model::{ShiftHistogram, ShiftStats};
use collective_check::{Extraction, NodeId, PlaneChoice};
use collective_clock::{Repair, RepairBound, RepairReport};
use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Result, RunError};
use crate::plan::Plan;

/// What the repair did in a merge: the plan's [`RepairReport`] (from the
/// collectives) and the events of the merged trace it moved.
#[derive(Debug, Clone, Serialize)]
pub struct RepairOutcome {
    /// The repair as planned: instances, violations before and after,
    /// per node, the violations left.
    #[serde(flatten)]
    pub plan: RepairReport,
    /// Every event of the merged trace whose start the repair moved, over
    /// all nodes: count, p50, p99, max.
    pub events: ShiftStats,
    /// The same per node that moves, by node id.
    pub node_events: BTreeMap<NodeId, ShiftStats>,
}

impl Plan {
    /// Read every node's collectives through its clock correction and
    /// compute the repair with `bound` (the maps the merge composes into
    /// the corrections, and the report).
    pub(crate) fn plan_repair(&self, bound: RepairBound) -> Result<Repair> {
        let mut check = collective_check::Options::default();
        // Only the occurrences are needed (see `clocks::host_evidence`).
        check.collectives_only = true;
        let per_node = self
            .nodes
            .par_iter()
            .with_max_len(1) // one task per node
            .map(|input| {
                let bytes = crate::node::open(&input.trace)?;
                let node = self.prepare_from(input, &bytes)?;
                crate::clocks::retimed_collectives(
                    input,
                    &bytes,
                    node.clocks,
                    node.session_start_ns,
                    &self.options,
                    &check,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let mut all = Extraction::new();
        for e in per_node {
            all.append(e);
        }
        repair_of(&all, bound)
    }

    /// The repair map of `node`, when the plan repairs it.
    pub(crate) fn repair_map(
        &self,
        node: NodeId,
    ) -> Option<clock_model::PiecewiseLinear<clock_model::Global, clock_model::Global>> {
        let repair = self.repair.as_ref()?;
        repair.maps.get(&node).cloned()
    }

    /// The merge's repair outcome from the nodes' diagnostics.
    pub(crate) fn repair_outcome<'d>(
        &self,
        nodes: impl IntoIterator<Item = &'d alignment_core::NodeDiagnostics>,
    ) -> Option<RepairOutcome> {
        let repair = self.repair.as_ref()?;
        let mut all = ShiftHistogram::default();
        let mut node_events = BTreeMap::new();
        for d in nodes {
            if let Some(shifts) = &d.repaired {
                all.add(shifts);
                node_events.insert(d.node_id, shifts.stats());
            }
        }
        Some(RepairOutcome {
            plan: repair.report.clone(),
            events: all.stats(),
            node_events,
        })
    }
}

/// The repair with `bound` of collectives on the global clock: those a
/// plan reads through its corrections ([`Plan::plan_repair`]), or the same
/// occurrences a merge without a repair captured as it aligned them.
pub(crate) fn repair_of(aligned: &Extraction, bound: RepairBound) -> Result<Repair> {
    collective_clock::repair(aligned, PlaneChoice::Auto, bound)
        .map_err(|e| RunError::Repair(Box::new(e)))
}
