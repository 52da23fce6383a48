//! Plan and merge in one, the check of the probe offsets against the
//! collectives taken from the merge's own walk: every node is merged on
//! its probe correction while its collectives are captured on its host
//! clock, the check runs once the walk is done, and the nodes are merged
//! again only when the check overrides a node's probes (rare: a probe
//! graph with a sign or loop-closure error).

use std::collections::BTreeSet;

use alignment_core::AlignOptions;
use clock_model::NodeId;

use crate::clocks::{ClockEvidence, host_check_options, host_evidence, matched};
use crate::discover::RunFiles;
use crate::error::Result;
use crate::merge::{MergeSettings, Unpublished};
use crate::node_clock::ClockPolicy;
use crate::outcome::MergeOutcome;
use crate::plan::{Plan, PlanStep};
use crate::write::Output;

impl RunFiles {
    /// Plan the alignment with `policy` and merge every node into
    /// `output`: the same trace, summary and outcome as
    /// [`RunFiles::plan_clocks`] followed by [`Plan::merge_into`], and the
    /// plan they were made with.
    ///
    /// When `auto` checks probe offsets against the collectives
    /// ([`CrossCheck`](crate::CrossCheck) `report` or `override`) and every
    /// node has usable probe rows, the collectives are not read before the
    /// merge: each node is merged on its probe correction, its collectives
    /// are captured on its own host clock from the aligning walk, and the
    /// check runs after the walk, before anything is put in place. Only
    /// when the check takes a node off its probes (`override`) is the
    /// merge dropped and made again under that plan; `progress` then sees
    /// every node a second time.
    ///
    /// A repair ([`ClockPolicy::repair`]) is computed from the collectives
    /// the merge (without a repair) captured as it aligned them: when it
    /// moves no node (no violation left, the usual case) that merge is
    /// the repaired one and is kept; otherwise it is dropped and the run
    /// is planned with the repair and merged again (`progress` sees every
    /// node once more). Without validation (`settings.validate` false)
    /// nothing is captured, and the plan with its repair is made first.
    pub fn merge_checked(
        &self,
        options: &AlignOptions,
        policy: &ClockPolicy,
        output: &Output,
        settings: &MergeSettings,
        mut progress: impl FnMut(NodeId),
    ) -> Result<(Plan, MergeOutcome)> {
        let kept = match policy.repair {
            None => Some(self.write_checked(options, policy, output, settings, &mut progress)?),
            Some(bound) if settings.validate => {
                let unrepaired = ClockPolicy {
                    repair: None,
                    ..*policy
                };
                let (plan, written) =
                    self.write_checked(options, &unrepaired, output, settings, &mut progress)?;
                let aligned = written
                    .aligned_collectives()
                    .expect("a validating merge captures its collectives");
                let repair = crate::repair::repair_of(aligned, bound)?;
                // A repair that moves a node drops this merge: nothing of
                // it appears.
                repair.maps.is_empty().then(|| {
                    let plan = Plan {
                        repair: Some(Box::new(repair)),
                        ..plan
                    };
                    (plan, written)
                })
            }
            Some(_) => None,
        };
        let (plan, written) = match kept {
            Some(kept) => kept,
            None => {
                let plan = self.plan_clocks(options, policy)?;
                let written = plan.write_merge(output, settings, &mut progress, None)?;
                (plan, written)
            }
        };
        let outcome = plan.publish(written, settings)?;
        Ok((plan, outcome))
    }

    /// [`RunFiles::merge_checked`] without a repair, up to the merge
    /// written but not yet put in place.
    fn write_checked(
        &self,
        options: &AlignOptions,
        policy: &ClockPolicy,
        output: &Output,
        settings: &MergeSettings,
        progress: &mut impl FnMut(NodeId),
    ) -> Result<(Plan, Unpublished)> {
        let written = |plan: Plan, progress: &mut _| {
            let written = plan.write_merge(output, settings, progress, None)?;
            Ok((plan, written))
        };
        let (nodes, pending) = match self.plan_step(options, policy)? {
            PlanStep::Planned(plan) => return written(plan, progress),
            PlanStep::Pending(nodes, pending) => (nodes, pending),
        };
        let Some(on_probes) = pending.unless_conflict(&nodes, options) else {
            // A node without usable probe rows is fitted from the
            // collectives before anything can be aligned.
            let evidence = host_evidence(&pending.read, options)?;
            let chosen = pending.decide(&nodes, &evidence, options)?;
            return written(Plan::chosen(nodes, chosen, options), progress);
        };
        let plan = Plan::chosen(nodes.clone(), on_probes, options);
        let read: BTreeSet<NodeId> = pending.read.iter().map(|n| n.node_id).collect();
        let check = host_check_options();
        let mut first =
            plan.write_merge(output, settings, &mut *progress, Some((&read, &check)))?;
        let evidence = matched(
            pending
                .read
                .iter()
                .map(|n| first.walked.on_host.remove(&n.node_id).unwrap_or_default()),
        );
        let chosen = pending.decide(&nodes, &evidence, options)?;
        if matches!(chosen.clocks, ClockEvidence::Probes(_)) {
            // Every node keeps its probes: the merge written is the plan's.
            let plan = Plan {
                node_clocks: chosen.node_clocks,
                clock_warnings: chosen.warnings,
                ..plan
            };
            return Ok((plan, first));
        }
        // Nothing of the first merge appears.
        drop(first);
        written(Plan::chosen(nodes, chosen, options), progress)
    }
}
