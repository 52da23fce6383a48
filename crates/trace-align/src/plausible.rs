//! The plausibility bound of a clock correction. However the correction
//! was found (probe offsets, the collectives, both), a node moved by more
//! than the spread of the nodes' starts plus one second, or drifting by
//! more than ±1000 ppm, is not a clock: it is a wrong estimate (a bad
//! match, a diverged fit, a corrupt offsets file), and aligning with it
//! is an error ([`RunError::ImplausibleCorrection`]) rather than a trace
//! quietly moved by days.

use std::path::Path;

use alignment_core::OffsetsFile;
use clock_model::RowWindow;
use collective_check::NodeId;
use collective_clock::EstimateReport;
use serde::Serialize;
use xplane_proto::{FileBytes, PROFILE_START_TIME, PROFILE_STOP_TIME, task_env_time_ns_view};

use crate::error::{Result, RunError};

/// The slack over the spread of the nodes' starts, ns (one second).
pub const OFFSET_SLACK_NS: i64 = 1_000_000_000;
/// The largest plausible drift, ppb (±1000 ppm).
pub const MAX_DRIFT_PPB: i64 = 1_000_000;
/// The shortest span between two probe rows over which their offsets give
/// a drift to check, ns (one second; shorter spans are dominated by the
/// probes' noise).
const DRIFT_SPAN_NS: i64 = 1_000_000_000;

/// The bound a run's corrections are held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Plausibility {
    /// The largest offset, ns: the spread of the nodes' starts plus
    /// [`OFFSET_SLACK_NS`].
    pub max_offset_ns: i64,
    /// The largest drift, ppb ([`MAX_DRIFT_PPB`]).
    pub max_drift_ppb: i64,
    /// What the starts were (for the error).
    #[serde(skip)]
    starts: &'static str,
}

impl Plausibility {
    /// The bound of a run whose nodes start at `starts` (epoch ns, each on
    /// its own clock).
    pub fn from_starts(starts: impl IntoIterator<Item = i64>) -> Self {
        Self::of("the nodes' starts", starts)
    }

    /// [`Plausibility::from_starts`], the starts named `what`.
    fn of(what: &'static str, starts: impl IntoIterator<Item = i64>) -> Self {
        let (lo, hi) = starts
            .into_iter()
            .fold((i64::MAX, i64::MIN), |(lo, hi), s| (lo.min(s), hi.max(s)));
        let spread = if lo <= hi { hi.abs_diff(lo) } else { 0 };
        let slack = OFFSET_SLACK_NS.unsigned_abs();
        Plausibility {
            max_offset_ns: i64::try_from(spread.saturating_add(slack)).unwrap_or(i64::MAX),
            max_drift_ppb: MAX_DRIFT_PPB,
            starts: what,
        }
    }

    /// Fail unless `node`'s offset `ns` (from `evidence`) is within bound.
    pub fn check_offset(&self, node: NodeId, evidence: &str, ns: i64) -> Result<()> {
        match ns.unsigned_abs() <= self.max_offset_ns.unsigned_abs() {
            true => Ok(()),
            false => Err(RunError::ImplausibleCorrection {
                node,
                evidence: evidence.to_owned(),
                what: "offset",
                value: format!("{ns} ns"),
                bound: format!(
                    "±{} ns (the spread of {} + 1 s)",
                    self.max_offset_ns, self.starts
                ),
            }),
        }
    }

    /// Fail unless `node`'s drift `ppb` (from `evidence`) is within bound.
    pub fn check_drift(&self, node: NodeId, evidence: &str, ppb: i64) -> Result<()> {
        match ppb.unsigned_abs() <= self.max_drift_ppb.unsigned_abs() {
            true => Ok(()),
            false => Err(RunError::ImplausibleCorrection {
                node,
                evidence: evidence.to_owned(),
                what: "drift",
                value: format!("{} ppm", ppb as f64 / 1e3),
                bound: format!("±{} ppm", self.max_drift_ppb / 1000),
            }),
        }
    }
}

/// The clocks estimated from `evidence` onto `reference` by `estimator`,
/// checked by [`check_estimate`].
pub(crate) fn estimate_plausible(
    evidence: &collective_clock::Evidence,
    reference: clock_model::NodeId,
    estimator: collective_clock::Estimator,
) -> Result<collective_clock::Estimate> {
    let estimate = collective_clock::estimate(
        evidence,
        reference,
        &collective_clock::Options::with_estimator(estimator),
    )
    .map_err(crate::RunError::estimate)?;
    check_estimate(&estimate.report)?;
    Ok(estimate)
}

/// Check every fitted node of an estimate from the collectives: each
/// segment's offsets at its ends and its drift. The nodes' starts are
/// their first collectives, each on its own clock.
pub(crate) fn check_estimate(report: &EstimateReport) -> Result<()> {
    let starts = report
        .nodes
        .iter()
        .filter_map(|n| n.segments.first().map(|s| s.start_host_ns));
    let bound = Plausibility::of("the nodes' first collectives", starts);
    for n in report.nodes.iter().filter(|n| !n.reference) {
        let count = n.segments.len();
        for (k, s) in n.segments.iter().enumerate() {
            let evidence = format!(
                "the estimate from the collectives, segment {} of {count} ({} collective instances)",
                k + 1,
                s.instances
            );
            bound.check_offset(n.node, &evidence, s.offset_start_ns)?;
            bound.check_offset(n.node, &evidence, s.offset_end_ns)?;
            bound.check_drift(n.node, &evidence, s.drift_ppb)?;
        }
    }
    Ok(())
}

/// How far outside its trace's session a node's tracer start may lie, ns
/// (one second).
pub const SESSION_SLACK_NS: i64 = 1_000_000_000;

/// Read the probe offsets at `path` for the nodes whose traces are
/// `traces`, and check them: every measured row's offset and each node's
/// drift ([`RunError::ImplausibleCorrection`]), and the meta header's
/// tracer start `start_walltime_ns` of each of these nodes, which must lie
/// within its trace's session (`profile_start_time` to
/// `profile_stop_time` of its `Task Environment` plane, ± [`SESSION_SLACK_NS`];
/// [`RunError::ImplausibleStart`]): a wrong start moves the node's tracer
/// lines by as much. A trace without a session start is not compared.
/// Every command reads an offsets file through this.
pub fn read_offsets<'a>(
    path: &Path,
    traces: impl IntoIterator<Item = (NodeId, &'a Path)>,
) -> Result<OffsetsFile> {
    let offsets = OffsetsFile::read(path).map_err(RunError::Offsets)?;
    check_probes(&offsets)?;
    for (node, trace) in traces {
        if let Some(header) = offsets.nodes.get(&node) {
            check_start(&offsets.path, node, header.start_walltime_ns, trace)?;
        }
    }
    Ok(offsets)
}

/// Fail unless `start_walltime_ns` (node `node`'s, from the header of
/// `offsets`) lies within the session of its trace `trace`.
fn check_start(offsets: &Path, node: NodeId, start_walltime_ns: u64, trace: &Path) -> Result<()> {
    let bytes = FileBytes::open(trace).map_err(RunError::Trace)?;
    let view = bytes.view();
    let time =
        |stat| task_env_time_ns_view(&view, stat).map_err(|e| RunError::Trace(bytes.locate(e)));
    let Some(start) = time(PROFILE_START_TIME)?.filter(|&t| t != 0) else {
        return Ok(());
    };
    let stop = time(PROFILE_STOP_TIME)?
        .filter(|&t| t >= start)
        .unwrap_or(start);
    let slack = i128::from(SESSION_SLACK_NS);
    let sw = i128::from(start_walltime_ns);
    match (start - slack..=stop + slack).contains(&sw) {
        true => Ok(()),
        false => Err(RunError::ImplausibleStart {
            path: offsets.to_path_buf(),
            node,
            start_walltime_ns,
            trace: trace.to_path_buf(),
            session_start_ns: start,
            session_stop_ns: stop,
            off_by_days: (sw - start) as f64 / 86_400e9,
        }),
    }
}

/// Check a probe offsets file: every measured row's offset, and each
/// node's drift between its first and last measured rows at least a
/// second apart. The nodes' starts are the header's `start_walltime_ns`.
pub(crate) fn check_probes(offsets: &OffsetsFile) -> Result<()> {
    let starts = offsets
        .nodes
        .values()
        .map(|n| i64::try_from(n.start_walltime_ns).unwrap_or(i64::MAX));
    let bound = Plausibility::of("the nodes' start_walltime_ns", starts);
    let path = offsets.path.display();
    for &node in offsets.nodes.keys() {
        let rows: Vec<_> = offsets
            .rows
            .iter()
            .filter(|(_, r)| r.node_id == node && r.reachable && r.offset_ns.is_finite())
            .collect();
        for (line, r) in &rows {
            let evidence = format!(
                "the probe offsets, {path} line {line} (round {})",
                r.round_id
            );
            bound.check_offset(node, &evidence, saturating_ns(r.offset_ns))?;
        }
        let timed: Vec<(usize, i64, f64)> = rows
            .iter()
            .filter_map(|(line, r)| row_time_ns(r.window).map(|t| (*line, t, r.offset_ns)))
            .collect();
        if let (Some(first), Some(last)) = (timed.first(), timed.last())
            && last.1.saturating_sub(first.1) >= DRIFT_SPAN_NS
        {
            let ppb = (last.2 - first.2) / (last.1 - first.1) as f64 * 1e9;
            let evidence = format!(
                "the probe offsets, {path} lines {} to {} (their mean drift)",
                first.0, last.0
            );
            bound.check_drift(node, &evidence, saturating_ns(ppb))?;
        }
    }
    Ok(())
}

/// A finite value rounded to an integer, at the ends of `i64` beyond them
/// (only compared with a bound far inside).
fn saturating_ns(x: f64) -> i64 {
    x.round() as i64
}

/// When a probe row was measured, ns (its window's middle or its legacy
/// midpoint); `None` for a row without a window.
fn row_time_ns(window: RowWindow) -> Option<i64> {
    let t = match window {
        RowWindow::Window { start_ns: 0, .. } => return None,
        RowWindow::Window { start_ns, end_ns } => start_ns / 2 + end_ns / 2,
        RowWindow::LegacyMidpoint { midpoint_sys_ns } => midpoint_sys_ns,
    };
    i64::try_from(t).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_bound_is_the_spread_of_the_starts_plus_a_second() {
        let bound = Plausibility::from_starts([5_000_000_000, 2_000_000_000, 3_000_000_000]);
        assert_eq!(bound.max_offset_ns, 4_000_000_000);
        assert!(bound.check_offset(NodeId(1), "x", -4_000_000_000).is_ok());
        assert!(bound.check_offset(NodeId(1), "x", 4_000_000_001).is_err());
        assert_eq!(Plausibility::from_starts([]).max_offset_ns, OFFSET_SLACK_NS);
        let far = Plausibility::from_starts([i64::MIN, i64::MAX]);
        assert_eq!(far.max_offset_ns, i64::MAX);
    }

    /// The offset that moved two ranks of a four-rank PyTorch run by 12.7
    /// days once passed with exit status 0.
    #[test]
    fn regression_a_correction_of_days_names_node_evidence_value_and_bound() {
        let bound =
            Plausibility::from_starts([1_790_000_000_000_000_000, 1_790_000_002_000_000_000]);
        let err = bound
            .check_offset(NodeId(3), "the estimate", -1_095_394_951_958_294)
            .unwrap_err();
        let text = err.to_string();
        for part in [
            "node 3",
            "the estimate",
            "-1095394951958294 ns",
            "±3000000000 ns",
        ] {
            assert!(text.contains(part), "{text}");
        }
    }

    /// A fit of a synthetic run passes; the same estimate with one node's
    /// second segment moved by 12.7 days, or drifting by 2000 ppm, is
    /// refused, naming node and segment.
    #[test]
    fn an_estimate_moved_by_days_or_drifting_too_fast_is_refused() {
        use collective_clock::{Options, SyntheticRun, estimate};
        let run = SyntheticRun {
            nodes: 4,
            ..SyntheticRun::default()
        };
        let (ev, _) = run.generate();
        let good = estimate(&ev, NodeId(0), &Options::default())
            .unwrap()
            .report;
        check_estimate(&good).unwrap();
        let node = good.nodes.iter().position(|n| n.node == NodeId(2)).unwrap();
        let mut far = good.clone();
        far.nodes[node].segments[0].offset_end_ns = -1_095_394_951_958_294;
        let text = check_estimate(&far).unwrap_err().to_string();
        for part in [
            "node 2",
            "segment 1 of",
            "-1095394951958294 ns",
            "first collectives",
        ] {
            assert!(text.contains(part), "{text}");
        }
        let mut fast = good;
        fast.nodes[node].segments[0].drift_ppb = 2_000_000;
        let text = check_estimate(&fast).unwrap_err().to_string();
        assert!(text.contains("drift 2000 ppm"), "{text}");
    }

    #[test]
    fn a_drift_beyond_1000_ppm_is_refused_either_way() {
        let bound = Plausibility::from_starts([0]);
        assert!(bound.check_drift(NodeId(1), "x", 1_000_000).is_ok());
        assert!(bound.check_drift(NodeId(1), "x", -1_000_000).is_ok());
        let err = bound.check_drift(NodeId(2), "x", -1_000_001).unwrap_err();
        assert!(err.to_string().contains("-1000.001 ppm"), "{err}");
    }
}
