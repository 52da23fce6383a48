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

/// Every rank's correction onto the reference rank's clock.
#[derive(Debug, Clone)]
pub enum KinetoClocks {
    /// One rank: its clock is the timeline, nothing is estimated.
    OneRank(NodeId),
    /// Corrections estimated from the collectives.
    Estimated(Box<Estimate>),
}

impl KinetoClocks {
    /// Where the corrections come from.
    pub fn source(&self) -> ClockSource {
        match self {
            KinetoClocks::OneRank(_) => ClockSource::Identity,
            KinetoClocks::Estimated(_) => ClockSource::Collectives,
        }
    }

    /// Why.
    pub fn reason(&self) -> ClockReason {
        match self {
            KinetoClocks::OneRank(_) => ClockReason::OneNode,
            KinetoClocks::Estimated(_) => ClockReason::NoOffsetsFile,
        }
    }

    /// The report of the estimate (`None` for one rank).
    pub fn report(&self) -> Option<&EstimateReport> {
        match self {
            KinetoClocks::OneRank(_) => None,
            KinetoClocks::Estimated(e) => Some(&e.report),
        }
    }

    /// Rank `node`'s correction (the identity for the reference); a rank
    /// the clocks do not hold is [`RunError::NotEstimated`].
    pub fn map(&self, node: NodeId) -> Result<&OffsetMap> {
        match self {
            KinetoClocks::OneRank(rank) if *rank == node => Ok(&IDENTITY),
            KinetoClocks::OneRank(_) => Err(RunError::NotEstimated { node }),
            KinetoClocks::Estimated(e) => e.maps.get(&node).ok_or(RunError::NotEstimated { node }),
        }
    }
}

/// The clocks of a Kineto run (`traces`: rank → file) onto rank
/// `reference`'s clock, and its collectives as recorded: for one rank the
/// identity (nothing to estimate from or to), else
/// [`estimate_kineto`](crate::estimate_kineto)'s estimate.
pub fn kineto_clocks(
    traces: &[(NodeId, PathBuf)],
    reference: NodeId,
    estimator: Estimator,
) -> Result<(KinetoClocks, Extraction)> {
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
    estimator: Estimator,
) -> Result<KinetoClocks> {
    if !ranks.contains(&reference) {
        return Err(RunError::ReferenceWithoutTrace {
            node: reference,
            have: ranks.to_vec(),
        });
    }
    match ranks {
        [rank] => Ok(KinetoClocks::OneRank(*rank)),
        _ => {
            let estimate = crate::kineto::estimate_from(before, reference, estimator)?;
            Ok(KinetoClocks::Estimated(Box::new(estimate)))
        }
    }
}
