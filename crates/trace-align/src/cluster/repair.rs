//! The repair of the collectives (`--repair`) from the summaries: every
//! node's collectives on the global clock, as
//! [`Plan::plan_repair`](crate::Plan) reads them through each trace's
//! final correction, computed from the host-clock collectives a summary
//! holds.
//!
//! Two things make that exact. The plan reads the collectives without
//! point-to-point (`send`/`recv`), which a summary holds for the estimate:
//! they are left out. And a time on a line of the node's tracer clock
//! lands on its host clock through the snapshot map after the tracer
//! start's shift `S_w − S_g`, which the final clocks take from the probe
//! offsets header while a summary was read with the shift the trace gives
//! (`S_g` from the snapshot map, rounded down to the ns), a nanosecond
//! apart on every device collective: a summary whose node's header gives
//! another tracer start also keeps its times as read with that start
//! ([`ProbeStart`](super::ProbeStart)), and a node on its probe offsets is
//! mapped from those. Every time is mapped in ps, as the aligner maps it.

use std::collections::BTreeMap;

use alignment_core::NodeClocks;
use clock_model::{Extrapolation, Global, GlobalTime, HostTime, NodeId, PiecewiseLinear};
use collective_check::{Extraction, Occurrence, TimePs};
use collective_clock::{Repair, RepairBound};
use serde::{Deserialize, Serialize};

use super::summary::NodeSummary;
use crate::clocks::Correction;
use crate::error::{Result, RunError};
use crate::plan::Plan;

/// A repair map `R_i : G → G` as a clocks file keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredRepair {
    /// Beyond the first and last anchor.
    pub extrapolation: Extrapolation,
    /// The anchors `[global ps, repaired global ps]`, by increasing time.
    pub anchors: Vec<[i128; 2]>,
}

impl StoredRepair {
    /// `map` as stored.
    pub(crate) fn of(map: &PiecewiseLinear<Global, Global>) -> StoredRepair {
        StoredRepair {
            extrapolation: map.extrapolation(),
            anchors: map.anchors().map(|(a, b)| [a.as_ps(), b.as_ps()]).collect(),
        }
    }

    /// The map, checked as any map is built (`path` names the clocks file
    /// in errors).
    pub(crate) fn to_map(
        &self,
        path: &std::path::Path,
        node: NodeId,
    ) -> Result<PiecewiseLinear<Global, Global>> {
        let anchors: Vec<(GlobalTime, GlobalTime)> = self
            .anchors
            .iter()
            .map(|&[a, b]| (GlobalTime::from_ps(a), GlobalTime::from_ps(b)))
            .collect();
        PiecewiseLinear::new(&anchors, self.extrapolation).map_err(|source| RunError::Align {
            node,
            source: alignment_core::AlignError::Clock {
                path: path.to_path_buf(),
                node,
                what: "repair map",
                source: Box::new(source),
            },
        })
    }
}

/// One node's host clock onto the global clock, as its final clocks map it.
enum Onto<'p> {
    /// Probe offsets: `O_i`, then `O_r⁻¹` when the reference is not node 0.
    Probes(Box<NodeClocks>),
    /// Estimated from the collectives.
    Estimated(&'p clock_model::OffsetMap),
    /// The node's clock is the timeline.
    Identity,
}

impl Onto<'_> {
    fn map(&self, host_ps: i128) -> i128 {
        let h = HostTime::from_ps(host_ps);
        match self {
            Onto::Probes(clocks) => clocks.host_to_global(h).time.as_ps(),
            Onto::Estimated(map) => map.map(h).time.as_ps(),
            Onto::Identity => host_ps,
        }
    }
}

/// The repair with `bound` of the collectives of `nodes` (by node id, the
/// plan's nodes) read through the corrections of `plan`.
pub(crate) fn repair_from_summaries(
    plan: &Plan,
    nodes: &BTreeMap<NodeId, NodeSummary>,
    bound: RepairBound,
) -> Result<Repair> {
    let mut all = Extraction::new();
    for s in nodes.values() {
        all.append(on_global(plan, s)?);
    }
    crate::repair::repair_of(&all, bound)
}

/// The collectives of summary `s` (point-to-point left out) on the global
/// clock of `plan`, as the plan's repair reads them from the trace.
fn on_global(plan: &Plan, s: &NodeSummary) -> Result<Extraction> {
    let options = &plan.options;
    // A node on its probe offsets reads its tracer lines with their
    // header's tracer start.
    let mut shifted = None;
    let onto = match plan.clocks.correction(s.node)? {
        Correction::Probes(offsets) => {
            shifted = s.probe_start.as_ref();
            let clocks = NodeClocks::build(s.node, offsets, None, None, None, options)
                .map_err(RunError::align(s.node))?;
            Onto::Probes(Box::new(clocks))
        }
        Correction::Estimated { map, .. } => Onto::Estimated(map),
        Correction::Identity => Onto::Identity,
    };
    let from = &s.collectives;
    let mut out = Extraction::new();
    for (i, o) in from.occurrences().iter().enumerate() {
        if o.kind.is_point_to_point() {
            continue;
        }
        let [db, de] = shifted
            .and_then(|p| p.deltas.get(i))
            .copied()
            .unwrap_or([0, 0]);
        let mapped = Occurrence {
            op: out.intern(from.name(o.op)),
            module: o.module.map(|m| out.intern(from.name(m))),
            begin: TimePs(onto.map(o.begin.0 + db)),
            end: TimePs(onto.map(o.end.0 + de)),
            ..*o
        };
        out.push(mapped);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{SummaryFile, fit};
    use crate::{ClockPolicy, ClockSource, RunFiles};
    use alignment_core::AlignOptions;

    /// The regression: a node on probe offsets whose device collectives
    /// the repair moves.
    #[test]
    fn a_repair_from_the_summaries_is_the_repair_of_the_traces() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        let config = trace_synth::SynthConfig {
            nodes: 4,
            steps: 150,
            seed: 3,
            probe_errors: vec![trace_synth::ProbeError {
                node: 2,
                negate: false,
                add_ns: 5_000_000,
            }],
            ..Default::default()
        };
        trace_synth::synthesize(&config, &run).unwrap();
        let run = RunFiles::discover(&run).unwrap();
        let options = AlignOptions::default();
        let policy = ClockPolicy {
            source: ClockSource::Probes,
            repair: Some(RepairBound::default()),
            ..ClockPolicy::default()
        };
        let plan = run.plan_clocks(&options, &policy).unwrap();
        let summaries: Vec<SummaryFile> = run
            .nodes
            .keys()
            .map(|&n| {
                let path = dir.path().join(format!("{n}.summary"));
                run.summarize(n, &options).unwrap().write(&path).unwrap();
                SummaryFile::read(&path).unwrap()
            })
            .collect();
        let clocks = fit(&summaries, &options, &policy).unwrap();
        let expected = plan.repair.as_ref().unwrap();
        assert!(!expected.maps.is_empty(), "the run needs a repair");
        for entry in &clocks.nodes {
            let want = expected.maps.get(&entry.node).map(StoredRepair::of);
            assert_eq!(entry.repair, want, "node {}", entry.node);
        }
    }
}
