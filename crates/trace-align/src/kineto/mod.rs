//! PyTorch (Kineto) runs: every rank's correction estimated from its
//! collectives, each rank's trace rewritten with only its times moved.
//!
//! Kineto's GPU events are already on the host's CLOCK_REALTIME (see
//! `docs/kineto.md`), so one host correction per rank applies to every
//! event of its file.

pub(crate) mod clock;
pub(crate) mod flows;
pub(crate) mod lag;
pub(crate) mod space;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clock_model::{HostTime, OffsetMap};
use collective_check::{Extraction, NodeId, Report};
use collective_clock::{Estimate, EstimateReport, Estimator, Evidence};
use kineto_trace::{EpochNs, TraceFile};
use rayon::prelude::*;
use serde::Serialize;

use crate::clocks::{ClockReason, ClockSource};
use crate::error::{Result, RunError};
use crate::kineto::clock::{KinetoClockChoice, KinetoClocks, kineto_clocks};
use crate::kineto::lag::{RankLaunchLag, kineto_launch_lags};
use crate::outcome::{KinetoMerge, MergeOutcome};

/// One rank's aligned Kineto trace.
#[derive(Debug, Clone, Serialize)]
pub struct AlignedRank {
    /// The rank.
    pub rank: NodeId,
    /// The input trace.
    pub input: PathBuf,
    /// The aligned trace.
    pub output: PathBuf,
    /// `ts` values changed.
    pub ts_changed: u64,
    /// Events copied.
    pub events: u64,
}

/// What aligning a Kineto run did.
#[derive(Debug, Clone, Serialize)]
pub struct KinetoOutcome {
    /// Per rank, by rank.
    pub ranks: Vec<AlignedRank>,
    /// Where the corrections come from: the collectives, or none for a run
    /// of one rank (`identity`).
    pub clock_source: ClockSource,
    /// Why.
    pub clock_reason: ClockReason,
    /// The corrections estimated from the collectives, per rank and
    /// segment (`None` for one rank).
    pub collective_clocks: Option<EstimateReport>,
    /// The collectives as recorded.
    pub before: Report,
    /// The collectives as aligned.
    pub after: Report,
    /// Each rank's launch → kernel lags.
    pub launch_lags: Vec<RankLaunchLag>,
}

/// The `"traceAlign"` record written into each aligned file; the
/// correction is the estimate's report of the rank (`NodeReport`, or its
/// JSON as a clocks file keeps it).
#[derive(Serialize)]
pub(crate) struct Record<'a, C: Serialize + ?Sized> {
    pub tool: &'static str,
    pub clock_source: ClockSource,
    pub reference_rank: NodeId,
    pub correction: Option<&'a C>,
}

/// Align every rank of a Kineto run (`traces`: rank → file) onto rank
/// `reference`'s clock from the collectives, writing each rank's file under
/// its own name into `out_dir` (same compression).
pub fn align_kineto(
    traces: &[(NodeId, PathBuf)],
    reference: NodeId,
    clocks: impl Into<KinetoClockChoice>,
    out_dir: &Path,
) -> Result<KinetoOutcome> {
    let inputs: Vec<&Path> = traces.iter().map(|(_, t)| t.as_path()).collect();
    let outputs: Vec<PathBuf> = traces
        .iter()
        .map(|(_, input)| {
            let output = out_dir.join(input.file_name().unwrap_or_default());
            crate::check_output(&output, &inputs, &[])?;
            Ok(output)
        })
        .collect::<Result<_>>()?;
    crate::check_out_dir(out_dir)?;
    let launch_lags = kineto_launch_lags(traces)?;
    let (estimate, before) = kineto_clocks(traces, reference, clocks)?;
    let folder = crate::each::NewFolders::create([out_dir])?;
    let mut ranks = Vec::with_capacity(traces.len());
    // Every rank is staged and all are put in place at the end: a
    // failure (or a signal) leaves none of them.
    let mut staged = Vec::with_capacity(traces.len());
    for ((rank, input), output) in traces.iter().zip(outputs) {
        let (aligned, tmp) = write_rank(*rank, input, output, reference, &estimate)?;
        staged.push((tmp, aligned.output.clone()));
        ranks.push(aligned);
    }
    crate::each::persist_all_recorded(staged, out_dir)?;
    folder.keep();
    let after = aligned_collectives(before.clone(), &estimate)?;
    let options = check_options();
    Ok(KinetoOutcome {
        ranks,
        clock_source: estimate.source(),
        clock_reason: estimate.reason(),
        collective_clocks: estimate.report().cloned(),
        before: collective_check::check(&before, &options),
        after: collective_check::check(&after, &options),
        launch_lags,
    })
}

/// Kineto runs check point-to-point transfers too.
pub(crate) fn check_options() -> collective_check::Options {
    crate::format::TraceFormat::Kineto.check_options()
}

/// Every rank's correction onto rank `reference`'s clock, estimated from
/// the collectives of the Kineto traces (`traces`: rank → file) with
/// `estimator`, and the collectives as recorded. Ranks that disagree on a
/// process group or an NCCL/RCCL instance are an error
/// ([`collective_check::verify_kineto_groups`]), and so is a correction
/// beyond the plausibility bound ([`RunError::ImplausibleCorrection`]).
pub fn estimate_kineto(
    traces: &[(NodeId, PathBuf)],
    reference: NodeId,
    estimator: Estimator,
) -> Result<(Estimate, Extraction)> {
    if !traces.iter().any(|(rank, _)| *rank == reference) {
        return Err(RunError::ReferenceWithoutTrace {
            node: reference,
            have: traces.iter().map(|(rank, _)| *rank).collect(),
        });
    }
    let before = read_collectives(traces)?;
    let estimate = estimate_from(&before, reference, estimator)?;
    Ok((estimate, before))
}

/// Every rank's correction from the collectives `before` of every rank
/// (checked by [`joined_verified`]).
pub(crate) fn estimate_from(
    before: &Extraction,
    reference: NodeId,
    estimator: Estimator,
) -> Result<Estimate> {
    let evidence = Evidence::from_extraction(before, collective_check::PlaneChoice::Auto);
    crate::plausible::estimate_plausible(&evidence, reference, estimator)
}

/// The collectives of the Kineto traces (`traces`: rank → file) as
/// recorded; ranks that disagree on a process group or an NCCL/RCCL
/// instance are an error ([`collective_check::verify_kineto_groups`]).
pub(crate) fn read_collectives(traces: &[(NodeId, PathBuf)]) -> Result<Extraction> {
    read_collectives_with(traces, &check_options())
}

/// [`read_collectives`] read with `options`.
fn read_collectives_with(
    traces: &[(NodeId, PathBuf)],
    options: &collective_check::Options,
) -> Result<Extraction> {
    let per_rank = traces
        .par_iter()
        .with_max_len(1) // one task per rank
        .map(|(rank, path)| rank_collectives_with(*rank, path, options))
        // In node order, so that the error of a run with several is the
        // first node's, whichever task ends first.
        .collect::<Vec<_>>()
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    joined_verified(per_rank)
}

/// The happens-before check of the collectives of a Kineto run
/// (`traces`: rank → file, each file read as the rank the run gives it)
/// as recorded, read and checked with `options`.
pub fn check_kineto_run(
    traces: &[(NodeId, PathBuf)],
    options: &collective_check::Options,
) -> Result<Report> {
    let before = read_collectives_with(traces, options)?;
    Ok(collective_check::check(&before, options))
}

/// One rank's collectives as recorded in its Kineto trace `path` (what
/// its summary stores).
pub(crate) fn rank_collectives(rank: NodeId, path: &Path) -> Result<Extraction> {
    rank_collectives_with(rank, path, &check_options())
}

/// [`rank_collectives`] read with `options`.
fn rank_collectives_with(
    rank: NodeId,
    path: &Path,
    options: &collective_check::Options,
) -> Result<Extraction> {
    let mut ex = Extraction::new();
    let kineto = |source| RunError::Kineto { source };
    let file = TraceFile::open(path).map_err(kineto)?;
    let trace = file.parse().map_err(kineto)?;
    // The rank the run gives the file (its own, or given), whatever it says.
    collective_check::extract_kineto(&trace, rank, options, &mut ex)
        .map_err(|source| RunError::Collectives { node: rank, source })?;
    Ok(ex)
}

/// The collectives of every rank, given in rank order, in one extraction;
/// ranks that disagree on a process group or an NCCL/RCCL instance are an
/// error ([`collective_check::verify_kineto_groups`]).
pub(crate) fn joined_verified(
    per_rank: impl IntoIterator<Item = Extraction>,
) -> Result<Extraction> {
    let mut before = Extraction::new();
    for e in per_rank {
        before.append(e);
    }
    before.drop_partial_older_nccl();
    // A wrong match would pair events of different collectives in the fit.
    collective_check::verify_kineto_groups(&before).map_err(RunError::CollectivesDisagree)?;
    Ok(before)
}

/// Merge every rank of a Kineto run (`traces`: rank → file) into one
/// Chrome-trace JSON at `output` (gzip when it ends in `.gz`), each rank's
/// times moved onto rank `reference`'s clock by its correction estimated
/// from the collectives; pids renumbered per rank, and one flow through the
/// events of every collective instance.
pub fn merge_kineto(
    traces: &[(NodeId, PathBuf)],
    reference: NodeId,
    clocks: impl Into<KinetoClockChoice>,
    output: &Path,
) -> Result<MergeOutcome> {
    let inputs: Vec<&Path> = traces.iter().map(|(_, t)| t.as_path()).collect();
    crate::check_output(output, &inputs, &[".json", ".json.gz"])?;
    let launch_lags = kineto_launch_lags(traces)?;
    let (estimate, before) = kineto_clocks(traces, reference, clocks)?;
    let kineto = |source| RunError::Kineto { source };
    let files = traces
        .iter()
        .map(|(_, p)| TraceFile::open(p).map_err(kineto))
        .collect::<Result<Vec<_>>>()?;
    let parsed = files
        .iter()
        .map(|f| f.parse().map_err(kineto))
        .collect::<Result<Vec<_>>>()?;
    let maps = traces
        .iter()
        .map(|(rank, _)| RankClock::of(&estimate, *rank))
        .collect::<Result<Vec<_>>>()?;
    let inputs: Vec<kineto_trace::MergeInput<'_, '_>> = traces
        .iter()
        .zip(&parsed)
        .zip(&maps)
        .map(|(((rank, _), trace), map)| kineto_trace::MergeInput {
            trace,
            rank: rank.get(),
            host: trace.host_name(),
            map,
        })
        .collect();
    let options = check_options();
    let before_report = collective_check::check(&before, &options);
    let flows: Vec<kineto_trace::CrossRankFlow> = before_report
        .instances
        .iter()
        .filter_map(|i| {
            let events: Vec<(u32, u64)> = i
                .slots
                .iter()
                .filter_map(|s| Some((s.participant.node.get(), s.correlation?)))
                .collect();
            (events.len() > 1).then(|| kineto_trace::CrossRankFlow {
                name: i.op.clone(),
                events,
            })
        })
        .collect();
    let stats = kineto_trace::merge_to_file(&inputs, &flows, output).map_err(kineto)?;
    let after = aligned_collectives(before, &estimate)?;
    Ok(MergeOutcome {
        before: Some(before_report),
        after: Some(collective_check::check(&after, &options)),
        kineto: Some(KinetoMerge {
            launch_lags,
            json: Some(stats),
            ..KinetoMerge::default()
        }),
        ..MergeOutcome::new(
            output.to_path_buf(),
            estimate.source(),
            estimate.reason(),
            estimate.report().cloned(),
        )
    })
}

/// Rank files' times (epoch ns) on the reference clock: one rank's
/// correction as a [`kineto_trace::TimeMap`]. A time the correction would
/// move out of 64-bit nanoseconds is refused (the retiming then names the
/// event), never kept as it was.
pub(crate) struct RankClock<'e>(&'e OffsetMap);

impl RankClock<'_> {
    pub(crate) fn of(clocks: &KinetoClocks, rank: NodeId) -> Result<RankClock<'_>> {
        clocks.map(rank).map(RankClock)
    }
}

impl kineto_trace::TimeMap for RankClock<'_> {
    fn map(&self, t: EpochNs) -> Option<EpochNs> {
        let g = self.0.map(HostTime::from_ns(t.0)).time.as_ns_floor();
        i64::try_from(g).ok().map(EpochNs)
    }
}

/// The collectives `before` (read from the ranks' files) with every rank's
/// times corrected by `clocks`; a rank the clocks do not hold is an error
/// ([`RunError::NotEstimated`]).
pub fn aligned_collectives(mut before: Extraction, clocks: &KinetoClocks) -> Result<Extraction> {
    // Every occurrence's node is one of `before.nodes`.
    let maps = before
        .nodes
        .keys()
        .map(|&node| Ok((node, clocks.map(node)?)))
        .collect::<Result<BTreeMap<_, _>>>()?;
    before.map_times(|node, t| {
        collective_check::TimePs(maps[&node].map(HostTime::from_ps(t.0)).time.as_ps())
    });
    Ok(before)
}

/// Retime one rank into a complete temporary beside its output.
fn write_rank(
    rank: NodeId,
    input: &Path,
    output: PathBuf,
    reference: NodeId,
    clocks: &KinetoClocks,
) -> Result<(AlignedRank, safe_temp::TempFile)> {
    let record = Record {
        tool: "trace-align",
        clock_source: clocks.source(),
        reference_rank: reference,
        correction: clocks.report().and_then(|r| r.node(rank)),
    };
    write_rank_with(rank, input, output, clocks.map(rank)?, &record)
}

/// Rank `rank`'s trace `input` with every time moved by `map`, with
/// `record`, into a complete temporary beside `output` for the caller to
/// put in place.
pub(crate) fn write_rank_with<C: Serialize + ?Sized>(
    rank: NodeId,
    input: &Path,
    output: PathBuf,
    map: &OffsetMap,
    record: &Record<'_, C>,
) -> Result<(AlignedRank, safe_temp::TempFile)> {
    let time_map = RankClock(map);
    let file = TraceFile::open(input).map_err(|source| RunError::Kineto { source })?;
    let (stats, tmp) = kineto_trace::retime_staged(&file, &output, &time_map, record)
        .map_err(|source| RunError::Kineto { source })?;
    let aligned = AlignedRank {
        rank,
        input: input.to_path_buf(),
        output,
        ts_changed: stats.ts_changed,
        events: stats.events,
    };
    Ok((aligned, tmp))
}
