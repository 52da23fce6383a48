//! `auto` with a probe offsets file, node by node: a node keeps its probe
//! correction when it has usable rows (and, checked, they agree with its
//! collectives); the others get theirs from the collectives, fitted onto
//! the probe-aligned nodes.

use std::collections::{BTreeMap, BTreeSet};

use alignment_core::{AlignOptions, NodeClocks, NodeInput, OFFSETS_BASE_NODE, OffsetsFile};
use clock_model::{GlobalTime, HostTime};
use collective_check::NodeId;
use collective_clock::{CorrectionCheck, Estimate, Estimator, Evidence};

use crate::clocks::{ClockEvidence, ClockReason, ClockSource};
use crate::error::{Result, RunError};
use crate::node_clock::{
    ClockPolicy, ClockWarning, CrossCheck, MIN_CONFLICT_NS, NodeClock, NodeClockReason, ProbeCheck,
};

/// The clock evidence `auto` settled on, per node and for the run.
pub(crate) struct Chosen {
    pub clocks: ClockEvidence,
    pub reason: ClockReason,
    pub node_clocks: Vec<NodeClock>,
    pub warnings: Vec<ClockWarning>,
}

/// Where the choice stands before any collective is read.
pub(crate) enum Step {
    /// Chosen without the collectives, or from them alone.
    Chosen(Chosen),
    /// The collectives of [`Pending::read`] are needed.
    Pending(Pending),
}

/// A choice that needs the collectives of some nodes, on their own host
/// clocks: to check their probe corrections, or to fit the nodes without
/// usable probe rows.
pub(crate) struct Pending {
    offsets: OffsetsFile,
    cross_check: CrossCheck,
    estimator: Estimator,
    /// Nodes without usable probe rows.
    without: BTreeSet<NodeId>,
    /// The probe clocks of the nodes that have them.
    probes: BTreeMap<NodeId, NodeClocks>,
    /// The nodes whose collectives are needed, by node id.
    pub read: Vec<NodeInput>,
}

/// The choice up to the collectives.
pub(crate) fn start(
    nodes: &[NodeInput],
    offsets: OffsetsFile,
    options: &AlignOptions,
    policy: &ClockPolicy,
    host: crate::clocks::HostCollectives<'_>,
) -> Result<Step> {
    let (cross_check, estimator) = (policy.cross_check, policy.estimator);
    let reference = options.reference_node;
    // With pass-through, nodes without usable rows are copied unaligned.
    let without: BTreeSet<NodeId> = match options.pass_through_without_offsets {
        true => BTreeSet::new(),
        false => nodes_without_anchors(&offsets, nodes),
    };
    if without.contains(&reference) {
        return all_from_collectives(nodes, options, reference, estimator, host).map(Step::Chosen);
    }
    if without.is_empty() && cross_check == CrossCheck::Off {
        return Ok(Step::Chosen(probes_only(nodes, offsets, options)));
    }
    let probes = probe_maps(nodes, &offsets, options, &without)?;
    let read: Vec<NodeInput> = nodes
        .iter()
        .filter(|n| probes.contains_key(&n.node_id) || without.contains(&n.node_id))
        .cloned()
        .collect();
    Ok(Step::Pending(Pending {
        offsets,
        cross_check,
        estimator,
        without,
        probes,
        read,
    }))
}

/// Every node on its probe correction, unchecked.
fn probes_only(nodes: &[NodeInput], offsets: OffsetsFile, options: &AlignOptions) -> Chosen {
    Chosen {
        clocks: ClockEvidence::Probes(offsets),
        reason: ClockReason::ProbeOffsets,
        node_clocks: probe_clocks(nodes, options, &BTreeMap::new()),
        warnings: Vec::new(),
    }
}

impl Pending {
    /// What the choice is when the check finds no conflict: every node on
    /// its probes; `None` when some node has no usable probe row (its
    /// correction must come from the collectives whatever the check says).
    pub fn unless_conflict(&self, nodes: &[NodeInput], options: &AlignOptions) -> Option<Chosen> {
        self.without
            .is_empty()
            .then(|| probes_only(nodes, self.offsets.clone(), options))
    }

    /// The choice, given `evidence`: the collectives of [`Pending::read`]
    /// on their host clocks.
    pub fn decide(
        self,
        nodes: &[NodeInput],
        evidence: &Evidence,
        options: &AlignOptions,
    ) -> Result<Chosen> {
        let Pending {
            offsets,
            cross_check,
            estimator,
            without,
            probes,
            read: _,
        } = self;
        let mut warnings = Vec::new();
        let checks = match cross_check {
            CrossCheck::Off => BTreeMap::new(),
            _ => check_all(evidence, &probes, options, estimator, &mut warnings),
        };
        let overridden = cross_check == CrossCheck::Override;
        let conflicting: BTreeSet<NodeId> = checks
            .iter()
            .filter(|(_, c)| c.conflict)
            .map(|(&n, _)| n)
            .collect();
        for &node in &conflicting {
            warnings.push(ClockWarning::ProbeConflict {
                node,
                check: checks[&node],
                overridden,
            });
        }
        let mut free = without.clone();
        if overridden {
            free.extend(&conflicting);
        }
        let mut checks = checks;
        let mut estimate = None;
        if !free.is_empty() {
            let reference = options.reference_node;
            loop {
                let fitted = fit_free(evidence, &probes, &free, estimator)?;
                let newly = match overridden {
                    true => held_conflicts(&fitted, evidence, &probes, &free, reference),
                    false => BTreeMap::new(),
                };
                estimate = Some(fitted);
                if newly.is_empty() {
                    break;
                }
                for (node, check) in newly {
                    warnings.push(ClockWarning::ProbeConflict {
                        node,
                        check,
                        overridden,
                    });
                    checks.insert(node, check);
                    free.insert(node);
                }
            }
        }
        let mut node_clocks = probe_clocks(nodes, options, &checks);
        for c in node_clocks.iter_mut().filter(|c| free.contains(&c.node)) {
            c.source = ClockSource::Collectives;
            c.reason = match without.contains(&c.node) {
                true => NodeClockReason::NoUsableProbeRows,
                false => NodeClockReason::ProbeConflict,
            };
        }
        let Some(estimate) = estimate else {
            return Ok(Chosen {
                clocks: ClockEvidence::Probes(offsets),
                reason: ClockReason::ProbeOffsets,
                node_clocks,
                warnings,
            });
        };
        Ok(Chosen {
            clocks: ClockEvidence::Both {
                offsets,
                estimate: Box::new(estimate),
                from_collectives: free,
            },
            reason: ClockReason::PerNode,
            node_clocks,
            warnings,
        })
    }
}

/// The reference itself has no usable probe row: every node from the
/// collectives.
fn all_from_collectives(
    nodes: &[NodeInput],
    options: &AlignOptions,
    reference: NodeId,
    estimator: Estimator,
    host: crate::clocks::HostCollectives<'_>,
) -> Result<Chosen> {
    let estimate = crate::clocks::from_collectives(nodes, options, estimator, host)?;
    let node_clocks = nodes
        .iter()
        .map(|n| NodeClock {
            node: n.node_id,
            source: ClockSource::Collectives,
            reason: match n.node_id == reference {
                true => NodeClockReason::Reference,
                false => NodeClockReason::NoUsableProbeRows,
            },
            probe_check: None,
        })
        .collect();
    Ok(Chosen {
        clocks: ClockEvidence::Collectives(Box::new(estimate)),
        reason: ClockReason::NoUsableProbeRows { node: reference },
        node_clocks,
        warnings: Vec::new(),
    })
}

/// Every node on its probes, with its check.
fn probe_clocks(
    nodes: &[NodeInput],
    options: &AlignOptions,
    checks: &BTreeMap<NodeId, ProbeCheck>,
) -> Vec<NodeClock> {
    nodes
        .iter()
        .map(|n| NodeClock {
            node: n.node_id,
            source: ClockSource::Probes,
            reason: match n.node_id == options.reference_node {
                true => NodeClockReason::Reference,
                false => NodeClockReason::ProbeOffsets,
            },
            probe_check: checks.get(&n.node_id).copied(),
        })
        .collect()
}

/// Nodes (not node 0, whose clock the offsets are measured against) that
/// no row of the offsets file gives an anchor.
pub(crate) fn nodes_without_anchors(
    offsets: &OffsetsFile,
    nodes: &[NodeInput],
) -> BTreeSet<NodeId> {
    let rows: Vec<_> = offsets.rows.iter().map(|(_, r)| *r).collect();
    nodes
        .iter()
        .map(|n| n.node_id)
        .filter(|&n| n != OFFSETS_BASE_NODE)
        .filter(|&n| {
            matches!(
                clock_model::OffsetAnchors::from_rows(&rows, n, OFFSETS_BASE_NODE),
                Err(clock_model::ClockError::NoOffsetAnchors { .. })
            )
        })
        .collect()
}

/// The probe clocks of every node listed in the offsets with usable rows.
pub(crate) fn probe_maps(
    nodes: &[NodeInput],
    offsets: &OffsetsFile,
    options: &AlignOptions,
    without: &BTreeSet<NodeId>,
) -> Result<BTreeMap<NodeId, NodeClocks>> {
    nodes
        .iter()
        .map(|n| n.node_id)
        .filter(|n| offsets.nodes.contains_key(n) && !without.contains(n))
        .map(|n| {
            let clocks = NodeClocks::build(n, offsets, None, None, None, options)
                .map_err(RunError::align(n))?;
            Ok((n, clocks))
        })
        .filter(|r| !matches!(r, Ok((_, c)) if c.passed_through))
        .collect()
}

/// `h` on `clocks`' global timeline, as a host time of the reference.
fn on_global(clocks: &NodeClocks, h: HostTime) -> HostTime {
    HostTime::from_ps(clocks.host_to_global(h).time.as_ps())
}

/// Every probe node's check against the full estimate from the
/// collectives; a failed estimate is a warning, not an error.
fn check_all(
    evidence: &Evidence,
    probes: &BTreeMap<NodeId, NodeClocks>,
    options: &AlignOptions,
    estimator: Estimator,
    warnings: &mut Vec<ClockWarning>,
) -> BTreeMap<NodeId, ProbeCheck> {
    let reference = options.reference_node;
    let full = match collective_clock::estimate(
        evidence,
        reference,
        &collective_clock::Options::with_estimator(estimator),
    ) {
        Ok(full) => full,
        Err(e) => {
            warnings.push(ClockWarning::CheckUnavailable {
                reason: e.to_string(),
            });
            return BTreeMap::new();
        }
    };
    let checker = full.correction_checker(evidence);
    probes
        .iter()
        .filter(|&(&n, _)| n != reference)
        .filter_map(|(&n, clocks)| Some((n, probe_check(&full, &checker, n, clocks)?)))
        .collect()
}

/// Node `node`'s probe correction against `full` and its evidence (in
/// `checker`, built from both).
pub(crate) fn probe_check(
    full: &Estimate,
    checker: &collective_clock::CorrectionChecker<'_>,
    node: NodeId,
    probe: &NodeClocks,
) -> Option<ProbeCheck> {
    let c = checker.check(node, |h| probe.host_to_global(h).time)?;
    let mut check = judge(c, tolerance_ns(probe));
    if let Some((h, [lo, hi])) = crate::collectives::feasible_at_middle(full, node) {
        let offset_ns = ((probe.host_to_global(h).time.as_ps() - h.as_ps()) / 1000) as i64;
        let outside = (lo - offset_ns).max(offset_ns - hi).max(0);
        check.outside_feasible_ns = Some(outside);
        check.conflict |= outside > check.tolerance_ns;
    }
    Some(check)
}

/// A violation larger than this contradicts `probe`'s correction: three
/// times its standard error, at least [`MIN_CONFLICT_NS`], ns.
fn tolerance_ns(probe: &NodeClocks) -> i64 {
    probe
        .offset_choice
        .as_ref()
        .and_then(|c| c.uncertainty.as_ref())
        .map_or(MIN_CONFLICT_NS, |u| {
            i64::try_from(u.error_ns.saturating_mul(3))
                .unwrap_or(i64::MAX)
                .max(MIN_CONFLICT_NS)
        })
}

/// The one definition of a probe correction that contradicts the
/// collectives, used by the choice and by every report of it.
fn judge(c: CorrectionCheck, tolerance_ns: i64) -> ProbeCheck {
    let difference_tolerance_ns = tolerance_ns.saturating_add(c.end_spread_ns);
    ProbeCheck {
        difference_ns: c.median_difference_ns,
        constraints: c.constraints,
        violated: c.violated,
        worst_violation_ns: c.worst_ns,
        end_spread_ns: c.end_spread_ns,
        tolerance_ns,
        difference_tolerance_ns,
        outside_feasible_ns: None,
        conflict: c.worst_ns > tolerance_ns
            || c.median_difference_ns.unsigned_abs() > difference_tolerance_ns.unsigned_abs(),
    }
}

/// The held probe nodes (not the reference, not in `free`) whose probe
/// correction contradicts the constraints of `estimate`, the fit of the
/// nodes in `free` onto the held ones: each checked with every other node
/// where the final clocks put it.
fn held_conflicts(
    estimate: &Estimate,
    evidence: &Evidence,
    probes: &BTreeMap<NodeId, NodeClocks>,
    free: &BTreeSet<NodeId>,
    reference: NodeId,
) -> BTreeMap<NodeId, ProbeCheck> {
    let mapped = held_on_global(evidence, probes, free);
    let checker = estimate.correction_checker(&mapped);
    probes
        .iter()
        .filter(|&(&n, _)| n != reference && !free.contains(&n))
        .filter_map(|(&n, clocks)| {
            // The held node's times are already on the global clock.
            let c = checker.check(n, |h| GlobalTime::from_ps(h.as_ps()))?;
            Some((n, judge(c, tolerance_ns(clocks))))
        })
        .filter(|(_, c)| c.conflict)
        .collect()
}

/// `evidence` with every probe node not in `free` on its probe clock.
fn held_on_global(
    evidence: &Evidence,
    probes: &BTreeMap<NodeId, NodeClocks>,
    free: &BTreeSet<NodeId>,
) -> Evidence {
    let mut mapped = evidence.clone();
    mapped.map_times(|node, h| match probes.get(&node) {
        Some(clocks) if !free.contains(&node) => on_global(clocks, h),
        _ => h,
    });
    mapped
}

/// The nodes in `free` fitted from the collectives onto the probe clocks
/// of every other node of `evidence` (held at their probe corrections),
/// within the plausibility bound.
fn fit_free(
    evidence: &Evidence,
    probes: &BTreeMap<NodeId, NodeClocks>,
    free: &BTreeSet<NodeId>,
    estimator: Estimator,
) -> Result<Estimate> {
    let mapped = held_on_global(evidence, probes, free);
    let held: BTreeSet<NodeId> = probes
        .keys()
        .filter(|n| !free.contains(n))
        .copied()
        .collect();
    let estimate = collective_clock::estimate_holding(
        &mapped,
        &held,
        &collective_clock::Options::with_estimator(estimator),
    )
    .map_err(RunError::estimate)?;
    crate::plausible::check_estimate(&estimate.report)?;
    Ok(estimate)
}
