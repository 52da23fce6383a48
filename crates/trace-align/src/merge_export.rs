//! A merge exported as it is written: the merged XSpace, held in memory,
//! written as a Perfetto trace or Chrome trace JSON with the merge's own
//! collective check and each node's applied correction.

use collective_check::{NodeSource, Report};
use trace_merge::MergeReport;

use crate::error::{Result, RunError};
use crate::plan::Plan;

/// Samples per node of the clock-correction counter of an export.
pub const CORRECTION_SAMPLES: usize = 500;

/// The name of the counter track of each node's applied correction.
pub const CORRECTION_COUNTER: &str = "clock correction (ns)";

impl Plan {
    /// Export the merged XSpace `bytes` (the merge `report` describes) to
    /// a temporary beside `report.output`, in the format its name asks
    /// for: the flows and violation marks of `checked` (the merge's check
    /// of its own output; `None`: found by reading `bytes`), each merged
    /// node's correction as a counter track, and `tracks`.
    pub(crate) fn export_merged(
        &self,
        bytes: &[u8],
        report: &MergeReport,
        checked: Option<&Report>,
        tracks: &[perfetto_export::NodeTrack],
    ) -> Result<(perfetto_export::Summary, safe_temp::TempFile)> {
        let path = &report.output;
        let export = |source| RunError::Export {
            path: path.clone(),
            source: Box::new(source),
        };
        let input = perfetto_export::Input {
            bytes,
            path,
            node: NodeSource::PlaneStat,
        };
        let mut options = perfetto_export::Options::default();
        options.counters = self.correction_counters(report)?;
        options.collectives = checked.cloned();
        options.tracks = tracks.to_vec();
        perfetto_export::export_staged(&[input], path, &options).map_err(export)
    }

    /// Each merged node's applied correction over the merged run, sampled
    /// [`CORRECTION_SAMPLES`] times; none when the run's times do not fit
    /// 64-bit epoch ns (no trace of this era).
    fn correction_counters(
        &self,
        report: &MergeReport,
    ) -> Result<Vec<perfetto_export::NodeCounter>> {
        let start = report.session_start_ns;
        let stop = report.session_stop_ns.unwrap_or(start);
        let (Ok(start), Ok(stop)) = (i64::try_from(start), i64::try_from(stop)) else {
            return Ok(Vec::new());
        };
        self.correction_curves(start, stop, CORRECTION_SAMPLES)?
            .into_iter()
            .filter(|curve| report.nodes.iter().any(|n| n.node_id == curve.node))
            .map(|curve| {
                perfetto_export::NodeCounter::new(curve.node, CORRECTION_COUNTER, curve.points)
                    .map_err(|source| RunError::Export {
                        path: report.output.clone(),
                        source: Box::new(source),
                    })
            })
            .collect()
    }
}
