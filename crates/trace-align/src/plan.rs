//! From a run's files to what will be done: every node's inputs, the
//! reference node, the clock evidence, the policies.

use std::path::{Path, PathBuf};

use alignment_core::{AlignOptions, NodeInput};

use crate::auto::{Chosen, Pending, Step};
use crate::clocks::{ClockEvidence, ClockReason, ClockSource, HostCollectives};
use crate::discover::{OFFSETS_FILE_NAME, RunFiles};
use crate::error::{Result, RunError};
use crate::node_clock::{ClockPolicy, ClockWarning, NodeClock, NodeClockReason};
use clock_model::NodeId;

/// An alignment of a whole run, checked and ready to execute: every input
/// read that can be read before the traces (the offsets file), every node
/// id cross-checked.
#[derive(Debug, Clone)]
pub struct Plan {
    /// One input per node, by node id.
    pub nodes: Vec<NodeInput>,
    /// The clock evidence: probe offsets, or corrections estimated from
    /// the collectives.
    pub clocks: ClockEvidence,
    /// Why that evidence.
    pub clock_reason: ClockReason,
    /// Per node, by node id: where its correction comes from, why, and the
    /// check of its probe offsets against its collectives.
    pub node_clocks: Vec<NodeClock>,
    /// What the clock planning warns about (probe offsets that contradict
    /// the collectives).
    pub clock_warnings: Vec<ClockWarning>,
    /// The policies; `options.reference_node` is the global clock.
    pub options: AlignOptions,
    /// The repair of the collectives left violated by the clock
    /// correction, when asked for ([`ClockPolicy::repair`]): per node a
    /// map composed after its correction, and the report.
    pub repair: Option<Box<collective_clock::Repair>>,
}

impl RunFiles {
    /// Plan the alignment of this run with `options`: reads the offsets
    /// file and checks it against the traces (every listed node has a
    /// trace; every trace's node is listed, unless passed through), and
    /// that the reference node has a trace.
    pub fn plan(&self, options: &AlignOptions) -> Result<Plan> {
        self.plan_with(options, ClockSource::Auto)
    }

    /// Plan the alignment with the clock evidence `source` and the default
    /// [`CrossCheck`](crate::CrossCheck); see [`RunFiles::plan_clocks`].
    pub fn plan_with(&self, options: &AlignOptions, source: ClockSource) -> Result<Plan> {
        self.plan_clocks(
            options,
            &ClockPolicy {
                source,
                ..ClockPolicy::default()
            },
        )
    }

    /// Plan the alignment with the clock evidence of `policy`: the probe
    /// offsets (checked against the traces), or corrections estimated from
    /// the collectives (which reads every trace's collectives now).
    ///
    /// A run of one node is aligned with the identity
    /// ([`ClockEvidence::Identity`]) unless the probes are asked for.
    ///
    /// `Auto` without an offsets file takes the collectives. With one, it
    /// chooses per node: a node with usable probe rows keeps its probe
    /// correction, a node without gets its correction from the collectives,
    /// fitted onto the probe-aligned nodes. Unless `policy.cross_check` is
    /// `Off`, every probe correction is checked against the collectives;
    /// one outside their feasible interval by more than its tolerance is a
    /// [`ClockWarning::ProbeConflict`], and with `Override` that node is
    /// aligned from the collectives too. The choices are in
    /// [`Plan::node_clocks`].
    ///
    /// With `policy.repair`, every node's collectives are then read through
    /// its correction and the violations left are repaired
    /// ([`Plan::repair`]).
    pub fn plan_clocks(&self, options: &AlignOptions, policy: &ClockPolicy) -> Result<Plan> {
        let mut plan = self.plan_fitted(options, policy)?;
        if let Some(bound) = policy.repair {
            plan.repair = Some(Box::new(plan.plan_repair(bound)?));
        }
        Ok(plan)
    }

    /// The plan with the clock correction of `policy`, before any repair.
    fn plan_fitted(&self, options: &AlignOptions, policy: &ClockPolicy) -> Result<Plan> {
        match self.plan_step(options, policy)? {
            PlanStep::Planned(plan) => Ok(plan),
            PlanStep::Pending(nodes, pending) => {
                let evidence = crate::clocks::host_evidence(&pending.read, options)?;
                let chosen = pending.decide(&nodes, &evidence, options)?;
                Ok(Plan::chosen(nodes, chosen, options))
            }
        }
    }

    /// The plan with the clock correction of `policy`, up to the
    /// collectives `auto` needs on the nodes' host clocks.
    pub(crate) fn plan_step(
        &self,
        options: &AlignOptions,
        policy: &ClockPolicy,
    ) -> Result<PlanStep> {
        let source = policy.source;
        if self.nodes.is_empty() {
            return Err(RunError::NoTraces);
        }
        self.check_formats()?;
        let have = || self.nodes.keys().copied().collect::<Vec<_>>();
        if !self.nodes.contains_key(&options.reference_node) {
            return Err(RunError::ReferenceWithoutTrace {
                node: options.reference_node,
                have: have(),
            });
        }
        let nodes = self.node_inputs();
        if source == ClockSource::Recorded {
            return Ok(PlanStep::Planned(Plan::recorded(nodes, options)));
        }
        if nodes.len() == 1 && source != ClockSource::Probes {
            return Ok(PlanStep::Planned(Plan::one_node(nodes, options)));
        }
        let offsets = OffsetsSource {
            path: self.offsets.clone(),
            missing: self.offsets_folder().join(OFFSETS_FILE_NAME),
            read: &|path| self.read_offsets(path),
        };
        plan_nodes(nodes, &offsets, options, policy, HostCollectives::Traces)
    }

    /// One input per node, by node id.
    pub(crate) fn node_inputs(&self) -> Vec<NodeInput> {
        self.nodes
            .iter()
            .map(|(&node_id, files)| NodeInput {
                node_id,
                trace: files.trace.clone(),
                snapshots: files.snapshots.clone(),
                ..Default::default()
            })
            .collect()
    }

    /// The folder the traces are in (for naming a missing offsets file).
    fn offsets_folder(&self) -> PathBuf {
        self.nodes
            .values()
            .next()
            .and_then(|f| f.trace.parent())
            .map(PathBuf::from)
            .unwrap_or_default()
    }
}

/// Where a plan's probe offsets come from: the file (when the run has one)
/// and how it is read and checked.
pub(crate) struct OffsetsSource<'a> {
    /// The offsets file, when the run has one.
    pub path: Option<PathBuf>,
    /// Where it was looked for, for the error when it is needed.
    pub missing: PathBuf,
    /// Read and check it.
    pub read: &'a dyn Fn(&Path) -> Result<alignment_core::OffsetsFile>,
}

/// The clock plan of `nodes` under `policy`, given their probe offsets and
/// where their collectives on their host clocks come from: the one choice
/// of `align`, `merge` and `fit`.
pub(crate) fn plan_nodes(
    nodes: Vec<NodeInput>,
    offsets: &OffsetsSource<'_>,
    options: &AlignOptions,
    policy: &ClockPolicy,
    host: HostCollectives<'_>,
) -> Result<PlanStep> {
    let source = policy.source;
    if source == ClockSource::Recorded {
        return Ok(PlanStep::Planned(Plan::recorded(nodes, options)));
    }
    if nodes.len() == 1 && source != ClockSource::Probes {
        return Ok(PlanStep::Planned(Plan::one_node(nodes, options)));
    }
    let auto = matches!(source, ClockSource::Auto | ClockSource::Both);
    let from_collectives = match (source, &offsets.path) {
        (ClockSource::Collectives, _) => Some((ClockReason::Asked, NodeClockReason::Asked)),
        (_, None) if auto => Some((ClockReason::NoOffsetsFile, NodeClockReason::NoOffsetsFile)),
        _ => None,
    };
    if let Some(reasons) = from_collectives {
        return collectives_plan(nodes, options, policy, host, reasons).map(PlanStep::Planned);
    }
    let offsets = checked_offsets(&nodes, offsets, options)?;
    if auto {
        return Ok(
            match crate::auto::start(&nodes, offsets, options, policy, host)? {
                Step::Chosen(chosen) => PlanStep::Planned(Plan::chosen(nodes, chosen, options)),
                Step::Pending(pending) => PlanStep::Pending(nodes, pending),
            },
        );
    }
    let node_clocks = node_clocks(&nodes, ClockSource::Probes, NodeClockReason::Asked, options);
    Ok(PlanStep::Planned(Plan {
        nodes,
        clocks: ClockEvidence::Probes(offsets),
        clock_reason: ClockReason::Asked,
        node_clocks,
        clock_warnings: Vec::new(),
        options: options.clone(),
        repair: None,
    }))
}

/// The plan of `nodes` with every correction estimated from their
/// collectives, for `reasons` (the run's and each node's but the
/// reference's).
fn collectives_plan(
    nodes: Vec<NodeInput>,
    options: &AlignOptions,
    policy: &ClockPolicy,
    host: HostCollectives<'_>,
    (clock_reason, reason): (ClockReason, NodeClockReason),
) -> Result<Plan> {
    let estimate = crate::clocks::from_collectives(&nodes, options, policy.estimator, host)?;
    let node_clocks = node_clocks(&nodes, ClockSource::Collectives, reason, options);
    Ok(Plan {
        nodes,
        clocks: ClockEvidence::Collectives(Box::new(estimate)),
        clock_reason,
        node_clocks,
        clock_warnings: Vec::new(),
        options: options.clone(),
        repair: None,
    })
}

/// Each node's clock from `source`: the reference node's as the
/// reference, every other one's for `reason`.
fn node_clocks(
    nodes: &[NodeInput],
    source: ClockSource,
    reason: NodeClockReason,
    options: &AlignOptions,
) -> Vec<NodeClock> {
    nodes
        .iter()
        .map(|n| NodeClock {
            node: n.node_id,
            source,
            reason: match n.node_id == options.reference_node {
                true => NodeClockReason::Reference,
                false => reason,
            },
            probe_check: None,
        })
        .collect()
}

/// The probe offsets of `source`, read and checked against `nodes`:
/// every node they list has a trace, and every node is listed unless
/// passed through.
fn checked_offsets(
    nodes: &[NodeInput],
    source: &OffsetsSource<'_>,
    options: &AlignOptions,
) -> Result<alignment_core::OffsetsFile> {
    let have = || nodes.iter().map(|n| n.node_id).collect::<Vec<_>>();
    let path = source.path.clone().ok_or_else(|| RunError::NoOffsets {
        path: source.missing.clone(),
    })?;
    let offsets = (source.read)(&path)?;
    let listed = |n: &NodeId| nodes.iter().any(|i| i.node_id == *n);
    if let Some(&node) = offsets.nodes.keys().find(|n| !listed(n)) {
        return Err(RunError::OffsetsNodeWithoutTrace {
            path,
            node,
            have: have(),
        });
    }
    if !options.pass_through_without_offsets
        && let Some(node) = nodes
            .iter()
            .map(|n| n.node_id)
            .find(|n| !offsets.nodes.contains_key(n))
    {
        return Err(RunError::NodeNotInOffsets { path, node });
    }
    Ok(offsets)
}

/// A plan, or `auto`'s plan up to the collectives it needs.
pub(crate) enum PlanStep {
    /// Planned.
    Planned(Plan),
    /// Every node's input, and the choice waiting for the collectives.
    Pending(Vec<NodeInput>, Pending),
}

impl Plan {
    /// The plan of `nodes` with `auto`'s choice.
    pub(crate) fn chosen(nodes: Vec<NodeInput>, chosen: Chosen, options: &AlignOptions) -> Plan {
        Plan {
            nodes,
            clocks: chosen.clocks,
            clock_reason: chosen.reason,
            node_clocks: chosen.node_clocks,
            clock_warnings: chosen.warnings,
            options: options.clone(),
            repair: None,
        }
    }

    /// The plan of a run of one node (the reference): its own clock is the
    /// timeline, whatever the run's probe offsets or collectives say
    /// (there is no other clock to relate it to).
    pub(crate) fn one_node(nodes: Vec<NodeInput>, options: &AlignOptions) -> Plan {
        let node_clocks = nodes
            .iter()
            .map(|n| NodeClock {
                node: n.node_id,
                source: ClockSource::Identity,
                reason: NodeClockReason::Reference,
                probe_check: None,
            })
            .collect();
        Plan {
            nodes,
            clocks: ClockEvidence::Identity,
            clock_reason: ClockReason::OneNode,
            node_clocks,
            clock_warnings: Vec::new(),
            options: options.clone(),
            repair: None,
        }
    }

    /// The plan of a run merged on its clocks as recorded
    /// ([`ClockSource::Recorded`]): no node's clock is corrected.
    pub(crate) fn recorded(nodes: Vec<NodeInput>, options: &AlignOptions) -> Plan {
        let node_clocks = nodes
            .iter()
            .map(|n| NodeClock {
                node: n.node_id,
                source: ClockSource::Recorded,
                reason: if n.node_id == options.reference_node {
                    NodeClockReason::Reference
                } else {
                    NodeClockReason::Asked
                },
                probe_check: None,
            })
            .collect();
        Plan {
            nodes,
            clocks: ClockEvidence::Recorded,
            clock_reason: ClockReason::Asked,
            node_clocks,
            clock_warnings: Vec::new(),
            options: options.clone(),
            repair: None,
        }
    }

    /// Fail unless [`crate::check_output`] passes `output` for this run's
    /// inputs (the traces, snapshots files and the offsets file): no command
    /// writes over the data it reads, a run-folder file or a device.
    pub fn check_output(&self, output: &Path) -> Result<()> {
        crate::check_output(output, &self.input_paths(), &[])
    }

    /// Every file the run reads: traces, snapshots files, the offsets file.
    pub(crate) fn input_paths(&self) -> Vec<&Path> {
        let offsets = self.clocks.offsets().map(|o| o.path.as_path());
        self.nodes
            .iter()
            .flat_map(|n| std::iter::once(n.trace.as_path()).chain(n.snapshots.as_deref()))
            .chain(offsets)
            .collect()
    }

    /// Fail with [`RunError::ReferenceWithoutTrace`] unless the reference
    /// node has an input (a plan built by hand may lack it).
    pub(crate) fn check_reference(&self) -> Result<()> {
        let reference = self.options.reference_node;
        match self.nodes.iter().any(|n| n.node_id == reference) {
            true => Ok(()),
            false => Err(self.no_reference()),
        }
    }

    /// The error of a plan whose reference node has no input.
    pub(crate) fn no_reference(&self) -> RunError {
        RunError::ReferenceWithoutTrace {
            node: self.options.reference_node,
            have: self.nodes.iter().map(|n| n.node_id).collect(),
        }
    }

    /// The nodes in merge order: the reference first, then by node id.
    pub fn merge_order(&self) -> Vec<&NodeInput> {
        let mut order: Vec<&NodeInput> = self.nodes.iter().collect();
        order.sort_by_key(|n| (n.node_id != self.options.reference_node, n.node_id));
        order
    }
}
