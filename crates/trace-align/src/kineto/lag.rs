//! Each Kineto rank's own causality check: its kernels begin after the
//! runtime calls that launched them (by `correlation`), both on the host's
//! CLOCK_REALTIME; a rank whose kernels begin before their launches by
//! more than [`alignment_core::KERNEL_LEAD_TOLERANCE_NS`] is an error.

use std::path::PathBuf;

use alignment_core::{AlignError, KERNEL_LEAD_TOLERANCE_NS, LaunchCollector, LaunchLag};
use collective_check::NodeId;
use kineto_trace::TraceFile;
use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Result, RunError};

/// One rank's launch → kernel lags.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankLaunchLag {
    /// The rank.
    pub rank: NodeId,
    /// Its lags; `None` when no kernel has its launch in the file.
    pub lag: Option<LaunchLag>,
}

/// Every rank's lags (`traces`: rank → file), in the order given; the
/// first rank with a kernel too far before its launch is an error naming
/// the file, the kernel's byte offset, its correlation and its lead.
pub fn kineto_launch_lags(traces: &[(NodeId, PathBuf)]) -> Result<Vec<RankLaunchLag>> {
    traces
        .par_iter()
        .with_max_len(1) // one task per rank
        .map(|(rank, path)| rank_lag(*rank, path))
        .collect()
}

fn rank_lag(rank: NodeId, path: &std::path::Path) -> Result<RankLaunchLag> {
    let kineto = |source| RunError::Kineto { source };
    let file = TraceFile::open(path).map_err(kineto)?;
    let trace = file.parse().map_err(kineto)?;
    let found = kineto_trace::launches(&trace).map_err(kineto)?;
    let mut collector = LaunchCollector::new(i128::from(trace.base().ns()) * 1000);
    for (id, start) in found.launches {
        collector.launch(id, i128::from(start.0) * 1000);
    }
    for (id, start, offset) in found.kernels {
        collector.kernel(id, i128::from(start.0) * 1000, offset as u64);
    }
    let lag = collector.finish(|offset| format!("the event at byte {offset}"));
    if let Some(l) = lag.as_ref().filter(|l| l.violated()) {
        return Err(RunError::Align {
            node: rank,
            source: AlignError::KernelBeforeLaunch {
                path: path.to_path_buf(),
                place: l.earliest.place.clone(),
                correlation_id: l.earliest.correlation_id,
                lead_ns: l.min_ns.saturating_neg(),
                tolerance_ns: KERNEL_LEAD_TOLERANCE_NS,
            },
        });
    }
    Ok(RankLaunchLag { rank, lag })
}
