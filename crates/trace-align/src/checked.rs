//! Plan and merge in one, the check of the probe offsets against the
//! collectives taken from the merge's own walk: every node is merged on
//! its probe correction while its collectives are captured on its host
//! clock, the check runs once the walk is done, and the nodes are merged
//! again only when the check overrides a node's probes (rare: a probe
//! graph with a sign or loop-closure error).

use std::collections::BTreeSet;
use std::path::Path;

use alignment_core::AlignOptions;
use clock_model::NodeId;

use crate::clocks::{ClockEvidence, host_check_options, host_evidence, matched};
use crate::discover::RunFiles;
use crate::error::Result;
use crate::merge::{MergeOutcome, MergeSettings};
use crate::node_clock::ClockPolicy;
use crate::plan::{Plan, PlanStep};

impl RunFiles {
    /// Plan the alignment with `policy` and merge every node into
    /// `output`: the same trace, summary and outcome as
    /// [`RunFiles::plan_clocks`] followed by [`Plan::merge_with_progress`],
    /// and the plan they were made with.
    ///
    /// When `auto` checks probe offsets against the collectives
    /// ([`CrossCheck`](crate::CrossCheck) `report` or `override`) and every
    /// node has usable probe rows, the collectives are not read before the
    /// merge: each node is merged on its probe correction, its collectives
    /// are captured on its own host clock from the aligning walk, and the
    /// check runs after the walk, before anything is put in place. Only
    /// when the check takes a node off its probes (`override`) is the
    /// merge dropped and made again under that plan; `progress` then sees
    /// every node a second time. A repair ([`ClockPolicy::repair`]) needs
    /// every correction first, so with one the plan is made before the
    /// merge.
    pub fn merge_checked(
        &self,
        options: &AlignOptions,
        policy: &ClockPolicy,
        output: impl AsRef<Path>,
        settings: &MergeSettings,
        mut progress: impl FnMut(NodeId),
    ) -> Result<(Plan, MergeOutcome)> {
        let output = output.as_ref();
        let merged = |plan: Plan, progress| {
            let outcome = plan.merge_with_progress(output, settings, progress)?;
            Ok((plan, outcome))
        };
        if policy.repair.is_some() {
            return merged(self.plan_clocks(options, policy)?, &mut progress);
        }
        let (nodes, pending) = match self.plan_step(options, policy)? {
            PlanStep::Planned(plan) => return merged(plan, &mut progress),
            PlanStep::Pending(nodes, pending) => (nodes, pending),
        };
        let Some(on_probes) = pending.unless_conflict(&nodes, options) else {
            // A node without usable probe rows is fitted from the
            // collectives before anything can be aligned.
            let evidence = host_evidence(&pending.read, options)?;
            let chosen = pending.decide(&nodes, &evidence, options)?;
            return merged(Plan::chosen(nodes, chosen, options), &mut progress);
        };
        let plan = Plan::chosen(nodes.clone(), on_probes, options);
        let read: BTreeSet<NodeId> = pending.read.iter().map(|n| n.node_id).collect();
        let check = host_check_options();
        let mut written =
            plan.write_merge(output, settings, &mut progress, Some((&read, &check)))?;
        let evidence = matched(
            pending
                .read
                .iter()
                .map(|n| written.on_host.remove(&n.node_id).unwrap_or_default()),
        );
        let chosen = pending.decide(&nodes, &evidence, options)?;
        if matches!(chosen.clocks, ClockEvidence::Probes(_)) {
            // Every node keeps its probes: the merge written is the plan's.
            let plan = Plan {
                node_clocks: chosen.node_clocks,
                clock_warnings: chosen.warnings,
                ..plan
            };
            let outcome = plan.publish(written, settings)?;
            return Ok((plan, outcome));
        }
        // Nothing of the first merge appears.
        drop(written);
        merged(Plan::chosen(nodes, chosen, options), &mut progress)
    }
}
