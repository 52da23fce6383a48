//! A PyTorch (Kineto) run as one XSpace: every rank converted exactly
//! ([`kineto_trace::to_xspace`]), as recorded or moved onto the reference
//! rank's clock, its planes placed as a merge places a node's planes, and
//! the collectives matched on the very times the XSpace holds, so that
//! the Perfetto export draws their flows and violations.

use std::path::{Path, PathBuf};

use collective_check::{Extraction, NodeId, Report};
use kineto_trace::{Compression, Trace, TraceFile, XSpaceStats};
use trace_merge::{DEFAULT_GPU_ID_STRIDE, IdScheme, MergeError, classify, place};
use xplane_proto::{
    ORIGINAL_PLANE_STAT, PROFILE_START_TIME, TASK_ENV_PLANE, XPlane, XPlaneExt, XSpace, x_stat,
};

use crate::error::{Result, RunError};
use crate::kineto::RankClock;
use crate::kineto::flows::flows_report;
use crate::outcome::{KinetoMerge, MergeOutcome};

/// A Kineto run as one XSpace.
#[derive(Debug, Clone)]
pub struct KinetoSpace {
    /// Every rank's planes, each with its `node_id` (the rank).
    pub space: XSpace,
    /// What each rank's conversion carried and left out, by rank.
    pub ranks: Vec<(NodeId, XSpaceStats)>,
    /// The collectives of the converted times (point-to-point included),
    /// each instance's op renamed to its participants' event name so that
    /// the export finds them ([`flows_report`]); hand it to
    /// `perfetto_export::Options::collectives`.
    pub collectives: Report,
    /// Instances whose participants have different event names (a send
    /// and its recv): no flow is drawn through them.
    pub unflowed: usize,
}

/// The Kineto traces of a run (`traces`: rank → file, as
/// [`crate::RunFiles::traces`] gives them) as recorded, in one XSpace.
pub fn kineto_space(traces: &[(NodeId, PathBuf)]) -> Result<KinetoSpace> {
    let files = traces
        .iter()
        .map(|(_, p)| TraceFile::open(p).map_err(kineto))
        .collect::<Result<Vec<_>>>()?;
    let parsed = files
        .iter()
        .map(|f| f.parse().map_err(kineto))
        .collect::<Result<Vec<_>>>()?;
    let ranked: Vec<(NodeId, &Trace<'_>)> = traces
        .iter()
        .zip(&parsed)
        .map(|((rank, _), trace)| (*rank, trace))
        .collect();
    Ok(space_of(&ranked)?.0)
}

/// Every rank of a Kineto run (`traces`: rank → file) moved onto rank
/// `reference`'s clock by its correction estimated from the collectives
/// (as [`crate::merge_kineto`] moves them, floored to the ns), in one
/// XSpace.
pub fn merge_kineto_space(
    traces: &[(NodeId, PathBuf)],
    reference: NodeId,
    clocks: impl Into<crate::KinetoClockChoice>,
) -> Result<(KinetoSpace, MergeOutcome)> {
    let launch_lags = crate::kineto_launch_lags(traces)?;
    let (estimate, before) = crate::kineto_clocks(traces, reference, clocks)?;
    let mut retimed = Vec::with_capacity(traces.len());
    for (rank, path) in traces {
        let file = TraceFile::open(path).map_err(kineto)?;
        let map = RankClock::of(&estimate, *rank)?;
        let mut bytes = Vec::new();
        kineto_trace::retime(&file.parse().map_err(kineto)?, &map, &"aligned", &mut bytes)
            .map_err(kineto)?;
        retimed.push(TraceFile::from_bytes(bytes, path, Compression::None));
    }
    let parsed = retimed
        .iter()
        .map(|f| f.parse().map_err(kineto))
        .collect::<Result<Vec<_>>>()?;
    let ranked: Vec<(NodeId, &Trace<'_>)> = traces
        .iter()
        .zip(&parsed)
        .map(|((rank, _), trace)| (*rank, trace))
        .collect();
    let (space, after) = space_of(&ranked)?;
    let options = crate::kineto::check_options();
    let outcome = MergeOutcome {
        before: Some(collective_check::check(&before, &options)),
        after: Some(after),
        kineto: Some(KinetoMerge {
            launch_lags,
            converted: space.ranks.clone(),
            unflowed: space.unflowed,
            ..KinetoMerge::default()
        }),
        ..MergeOutcome::new(
            PathBuf::new(),
            estimate.source(),
            estimate.reason(),
            estimate.report().cloned(),
        )
    };
    Ok((space, outcome))
}

fn kineto(source: kineto_trace::Error) -> RunError {
    RunError::Kineto { source }
}

/// Convert, place and check `ranked`: the run's XSpace, and its
/// collectives with their own op names. The lowest rank is the reference
/// (its host plane keeps the name `/host:CPU`).
fn space_of(ranked: &[(NodeId, &Trace<'_>)]) -> Result<(KinetoSpace, Report)> {
    let mut sorted: Vec<_> = ranked.to_vec();
    sorted.sort_by_key(|(rank, _)| *rank);
    if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(RunError::TwoTraces {
            node: w[0].0,
            first: w[0].1.path().to_path_buf(),
            second: w[1].1.path().to_path_buf(),
        });
    }
    let scheme = IdScheme::new(DEFAULT_GPU_ID_STRIDE).expect("the default stride is valid");
    let mut space = XSpace::default();
    let mut ranks = Vec::with_capacity(sorted.len());
    let options = crate::kineto::check_options();
    let mut ex = Extraction::new();
    let converted = sorted
        .iter()
        .map(|(rank, trace)| kineto_trace::to_xspace(trace, rank.get()).map_err(kineto))
        .collect::<Result<Vec<_>>>()?;
    // One session start for all: the earliest rank's.
    let start = converted
        .iter()
        .map(|(c, _)| xplane_proto::session_start_ns(c))
        .min()
        .unwrap_or(0);
    for (k, ((rank, trace), (converted, stats))) in sorted.iter().zip(converted).enumerate() {
        let shift = xplane_proto::session_start_ns(&converted) - start;
        for mut plane in converted.planes {
            if plane.name == TASK_ENV_PLANE {
                continue;
            }
            rebase(&mut plane, shift);
            space
                .planes
                .push(placed(plane, scheme, *rank, k == 0, trace.path())?);
        }
        for host in converted.hostnames {
            if !space.hostnames.contains(&host) {
                space.hostnames.push(host);
            }
        }
        ranks.push((*rank, stats));
        collective_check::extract_kineto(trace, *rank, &options, &mut ex).map_err(|source| {
            RunError::Collectives {
                node: *rank,
                source,
            }
        })?;
    }
    space.planes.push(task_environment(start));
    ex.drop_partial_older_nccl();
    collective_check::verify_kineto_groups(&ex).map_err(RunError::CollectivesDisagree)?;
    let after = collective_check::check(&ex, &options);
    let (collectives, unflowed) = flows_report(&after, &space);
    let space = KinetoSpace {
        space,
        ranks,
        collectives,
        unflowed,
    };
    Ok((space, after))
}

/// Move every line of `plane` `shift_ns` (≥ 0) later: from its rank's
/// session start onto the run's, which is no later.
fn rebase(plane: &mut XPlane, shift_ns: i128) {
    for line in &mut plane.lines {
        // The line's epoch-ns time (an i64) less a start in [0, that time]
        // (or 0 for a time before the epoch) is an i64 again.
        line.timestamp_ns = i64::try_from(i128::from(line.timestamp_ns) + shift_ns)
            .expect("an i64 epoch time less an earlier, non-negative start fits i64");
    }
}

/// The merged run's `Task Environment`: its session start, epoch ns.
fn task_environment(start_ns: i128) -> XPlane {
    let mut env = XPlane {
        name: TASK_ENV_PLANE.to_owned(),
        ..Default::default()
    };
    env.set_stat(
        PROFILE_START_TIME,
        x_stat::Value::Uint64Value(u64::try_from(start_ns).unwrap_or(0)),
    );
    env
}

/// `plane` of `rank` under the name and id a merge gives it (the original
/// name stays in its `original_plane_name` stat).
fn placed(
    mut plane: XPlane,
    scheme: IdScheme,
    rank: NodeId,
    reference: bool,
    path: &Path,
) -> Result<XPlane> {
    let original = plane
        .find_stat(&plane.stats, ORIGINAL_PLANE_STAT)
        .and_then(|s| s.value.as_ref())
        .and_then(|v| plane.resolve_str(v))
        .map_or_else(|| plane.name.clone(), str::to_owned);
    let layout = |reason: String| RunError::Layout {
        node: rank,
        source: MergeError::GpuOrdinal {
            path: path.to_path_buf(),
            node_id: rank,
            plane: original.clone(),
            reason,
            max_ordinal_plus_one: u64::from(scheme.stride() - 1),
        },
    };
    let kind = classify(&original, false).map_err(|b| layout(b.0))?;
    let placement =
        place(scheme, rank, reference, kind, &original, plane.id).map_err(|b| layout(b.0))?;
    plane.name = placement.name;
    plane.id = placement.id;
    Ok(plane)
}
