//! The clocks of a PyTorch (Kineto) run: every rank's correction estimated
//! from the collectives, or, for a run of one rank, none at all (its own
//! clock is the timeline).

use std::path::PathBuf;

use clock_model::OffsetMap;
use collective_check::{Extraction, NodeId};
use collective_clock::{Estimate, EstimateReport, Estimator};

use crate::clocks::{ClockReason, ClockSource};
use crate::error::{Result, RunError};

/// The identity, for the rank of a one-rank run.
static IDENTITY: OffsetMap = OffsetMap::Identity;

/// How a PyTorch run's clocks are had: estimated from the collectives
/// with an estimator, or taken as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KinetoClockChoice {
    /// Estimated from the collectives (nothing for one rank).
    Estimate(Estimator),
    /// The clocks as recorded ([`ClockSource::Recorded`]).
    Recorded,
}

impl From<Estimator> for KinetoClockChoice {
    fn from(estimator: Estimator) -> Self {
        KinetoClockChoice::Estimate(estimator)
    }
}

impl From<&crate::ClockPolicy> for KinetoClockChoice {
    fn from(policy: &crate::ClockPolicy) -> Self {
        match policy.source {
            ClockSource::Recorded => KinetoClockChoice::Recorded,
            _ => KinetoClockChoice::Estimate(policy.estimator),
        }
    }
}

/// Every rank's correction onto the reference rank's clock.
#[derive(Debug, Clone)]
pub enum KinetoClocks {
    /// One rank: its clock is the timeline, nothing is estimated.
    OneRank(NodeId),
    /// Corrections estimated from the collectives.
    Estimated(Box<Estimate>),
    /// The clocks as recorded, for these ranks: no correction.
    Recorded(Vec<NodeId>),
}

impl KinetoClocks {
    /// Where the corrections come from.
    pub fn source(&self) -> ClockSource {
        match self {
            KinetoClocks::OneRank(_) => ClockSource::Identity,
            KinetoClocks::Estimated(_) => ClockSource::Collectives,
            KinetoClocks::Recorded(_) => ClockSource::Recorded,
        }
    }

    /// Why.
    pub fn reason(&self) -> ClockReason {
        match self {
            KinetoClocks::OneRank(_) => ClockReason::OneNode,
            KinetoClocks::Estimated(_) => ClockReason::NoOffsetsFile,
            KinetoClocks::Recorded(_) => ClockReason::Asked,
        }
    }

    /// The report of the estimate (`None` for one rank).
    pub fn report(&self) -> Option<&EstimateReport> {
        match self {
            KinetoClocks::OneRank(_) | KinetoClocks::Recorded(_) => None,
            KinetoClocks::Estimated(e) => Some(&e.report),
        }
    }

    /// Rank `node`'s correction (the identity for the reference); a rank
    /// the clocks do not hold is [`RunError::NotEstimated`].
    pub fn map(&self, node: NodeId) -> Result<&OffsetMap> {
        match self {
            KinetoClocks::OneRank(rank) if *rank == node => Ok(&IDENTITY),
            KinetoClocks::OneRank(_) => Err(RunError::NotEstimated { node }),
            KinetoClocks::Recorded(ranks) if ranks.contains(&node) => Ok(&IDENTITY),
            KinetoClocks::Recorded(_) => Err(RunError::NotEstimated { node }),
            KinetoClocks::Estimated(e) => e.maps.get(&node).ok_or(RunError::NotEstimated { node }),
        }
    }
}

/// The clocks of a Kineto run (`traces`: rank → file) onto rank
/// `reference`'s clock, and its collectives as recorded: as recorded when
/// `choice` says so; for one rank the identity (nothing to estimate from
/// or to); else [`estimate_kineto`](crate::estimate_kineto)'s estimate.
pub fn kineto_clocks(
    traces: &[(NodeId, PathBuf)],
    reference: NodeId,
    choice: impl Into<KinetoClockChoice>,
) -> Result<(KinetoClocks, Extraction)> {
    let estimator = match choice.into() {
        KinetoClockChoice::Estimate(estimator) => estimator,
        KinetoClockChoice::Recorded => {
            if !traces.iter().any(|(rank, _)| *rank == reference) {
                return Err(RunError::ReferenceWithoutTrace {
                    node: reference,
                    have: traces.iter().map(|(rank, _)| *rank).collect(),
                });
            }
            let before = crate::kineto::read_collectives(traces)?;
            let ranks = traces.iter().map(|(rank, _)| *rank).collect();
            return Ok((KinetoClocks::Recorded(ranks), before));
        }
    };
    match traces {
        [(rank, _)] if *rank == reference => {
            let before = crate::kineto::read_collectives(traces)?;
            Ok((KinetoClocks::OneRank(*rank), before))
        }
        _ => {
            let (estimate, before) = crate::kineto::estimate_kineto(traces, reference, estimator)?;
            Ok((KinetoClocks::Estimated(Box::new(estimate)), before))
        }
    }
}

/// [`kineto_clocks`] of the ranks `ranks` from their collectives as
/// recorded, `before` (read where each trace lives, checked by
/// `joined_verified`).
pub(crate) fn kineto_clocks_from(
    ranks: &[NodeId],
    before: &Extraction,
    reference: NodeId,
    choice: impl Into<KinetoClockChoice>,
) -> Result<KinetoClocks> {
    if !ranks.contains(&reference) {
        return Err(RunError::ReferenceWithoutTrace {
            node: reference,
            have: ranks.to_vec(),
        });
    }
    let estimator = match choice.into() {
        KinetoClockChoice::Estimate(estimator) => estimator,
        KinetoClockChoice::Recorded => return Ok(KinetoClocks::Recorded(ranks.to_vec())),
    };
    match ranks {
        [rank] => Ok(KinetoClocks::OneRank(*rank)),
        _ => {
            let estimate = crate::kineto::estimate_from(before, reference, estimator)?;
            Ok(KinetoClocks::Estimated(Box::new(estimate)))
        }
    }
}
