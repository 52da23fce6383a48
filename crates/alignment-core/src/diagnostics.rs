//! What an alignment did to a node, for the user and for tools: counts of
//! corrected, clamped and extrapolated events, the anchors used and skipped,
//! the correction range, and the policies in force.

use std::path::PathBuf;

use clock_model::NodeId;
use clock_model::{AnchorSource, OffsetWarning, ShiftHistogram, SkipReason};
use serde::{Serialize, Serializer};

use crate::launch::LaunchLag;
use crate::line::{LineClock, OFF_AFTER, OFF_BEFORE, SNAP_AFTER, SNAP_BEFORE};
use crate::options::{AlignOptions, snake_case};

/// Counts over a set of events (one line, or a whole node).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineCounts {
    /// Events whose times were mapped.
    pub events: u64,
    /// Events copied with their times unchanged (bookkeeping planes,
    /// aggregated events).
    pub copied: u64,
    /// Events moved by the monotonicity guard (or whose end was raised to their start).
    pub clamped: u64,
    /// Events with a time before the first snapshot pair.
    pub snapshot_before: u64,
    /// Events with a time after the last snapshot pair.
    pub snapshot_after: u64,
    /// Events with a time before the first offset anchor.
    pub offset_before: u64,
    /// Events with a time after the last offset anchor.
    pub offset_after: u64,
    /// Smallest correction of a start, ps.
    pub correction_min_ps: Option<i128>,
    /// Largest correction of a start, ps.
    pub correction_max_ps: Option<i128>,
    /// Sum of the corrections of starts, ps.
    pub correction_sum_ps: i128,
    /// How far the repair moved the starts it moved.
    pub repaired: ShiftHistogram,
}

impl LineCounts {
    #[inline]
    pub(crate) fn note_flags(&mut self, flags: u8) {
        self.snapshot_before += u64::from(flags & SNAP_BEFORE != 0);
        self.snapshot_after += u64::from(flags & SNAP_AFTER != 0);
        self.offset_before += u64::from(flags & OFF_BEFORE != 0);
        self.offset_after += u64::from(flags & OFF_AFTER != 0);
    }

    #[inline]
    pub(crate) fn note_correction(&mut self, ps: i128) {
        // Per event: kept to plain comparisons.
        self.correction_min_ps = Some(self.correction_min_ps.map_or(ps, |m| m.min(ps)));
        self.correction_max_ps = Some(self.correction_max_ps.map_or(ps, |m| m.max(ps)));
        self.correction_sum_ps += ps;
    }

    /// Add another set of counts.
    pub fn add(&mut self, other: &LineCounts) {
        self.events += other.events;
        self.copied += other.copied;
        self.clamped += other.clamped;
        self.snapshot_before += other.snapshot_before;
        self.snapshot_after += other.snapshot_after;
        self.offset_before += other.offset_before;
        self.offset_after += other.offset_after;
        self.correction_sum_ps += other.correction_sum_ps;
        self.correction_min_ps = min_of(self.correction_min_ps, other.correction_min_ps);
        self.correction_max_ps = max_of(self.correction_max_ps, other.correction_max_ps);
        self.repaired.add(&other.repaired);
    }
}

/// The smaller of two optional values (`None` is "no value yet").
#[inline]
fn min_of(a: Option<i128>, b: Option<i128>) -> Option<i128> {
    a.into_iter().chain(b).min()
}

/// The larger of two optional values.
#[inline]
fn max_of(a: Option<i128>, b: Option<i128>) -> Option<i128> {
    a.into_iter().chain(b).max()
}

/// How one line was treated.
#[derive(Debug, Clone, Serialize)]
pub struct LineReport {
    /// The plane's name.
    pub plane: String,
    /// The line's name.
    pub line: String,
    /// The line id.
    pub line_id: i64,
    /// The clock its times were read on.
    pub clock: LineClock,
    /// Events mapped.
    pub events: u64,
    /// Events copied with unchanged times.
    pub copied: u64,
}

/// An offset anchor as reported.
#[derive(Debug, Clone, Serialize)]
pub struct AnchorReport {
    /// The round.
    pub round_id: u64,
    /// `x_k`: host time, epoch ns (rounded down).
    pub host_ns: i64,
    /// The measured offset, ns (rounded to the nearest).
    pub offset_ns: i64,
    /// Which rule placed it.
    pub source: AnchorSource,
}

/// A row that gave no anchor.
#[derive(Debug, Clone, Serialize)]
pub struct SkippedReport {
    /// The round.
    pub round_id: u64,
    /// Why it was skipped.
    pub reason: SkipReason,
}

/// Extrapolation counts.
#[derive(Debug, Clone, Copy, Serialize, Default)]
pub struct Extrapolations {
    /// Events before the first snapshot pair.
    pub before_first_snapshot: u64,
    /// Events after the last snapshot pair.
    pub after_last_snapshot: u64,
    /// Events before the first offset anchor.
    pub before_first_offset_anchor: u64,
    /// Events after the last offset anchor.
    pub after_last_offset_anchor: u64,
}

/// The correction applied to event starts, ns (rounded to the nearest).
#[derive(Debug, Clone, Copy, Serialize, Default, PartialEq, Eq)]
pub struct CorrectionRange {
    /// Smallest.
    pub min_ns: i64,
    /// Largest.
    pub max_ns: i64,
    /// Mean.
    pub mean_ns: i64,
}

/// Snapshot pairs used.
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotReport {
    /// Where they came from.
    pub source: String,
    /// How many.
    pub count: usize,
    /// First and last host time, epoch ns.
    pub sys_range_ns: Option<(i128, i128)>,
}

/// The offset model a node got, why, and the correction's uncertainty.
#[derive(Debug, Clone, Serialize)]
pub struct OffsetModelReport {
    /// The model used: `fit`, `drift`, `interpolate`, or `identity` for the
    /// reference node (never `auto`).
    pub model: String,
    /// Why: `reference`, `forced`, `plentiful`, `few_anchors`, `long_gap`,
    /// `few_rounds`.
    pub reason: String,
    /// Anchors used.
    pub anchors: usize,
    /// Rounds from the first anchor's to the last's.
    pub rounds_spanned: u64,
    /// Most consecutive rounds without an anchor between two anchors.
    pub longest_gap_rounds: u64,
    /// Inner knots of the fit.
    pub knots: usize,
    /// Anchors left out of the fit as isolated outliers.
    pub outliers: usize,
    /// One standard error of the correction inside the anchored range, ns.
    pub error_ns: Option<u64>,
    /// The anchors' noise σ, ns.
    pub noise_ns: Option<u64>,
    /// RMS residual of the fit, ns.
    pub residual_rms_ns: Option<u64>,
}

impl OffsetModelReport {
    /// `model (reason), error ± N ns` in words, for one-line summaries.
    pub fn brief(&self) -> String {
        format!(
            "{} ({}), error ± {}",
            self.model,
            self.reason.replace('_', " "),
            self.error_ns
                .map_or("unknown".to_string(), |e| format!("{e} ns"))
        )
    }
}

impl From<&clock_model::ModelChoice> for OffsetModelReport {
    fn from(c: &clock_model::ModelChoice) -> Self {
        let u = c.uncertainty.as_ref();
        OffsetModelReport {
            model: match c.reason {
                clock_model::ModelReason::Reference => "identity".to_string(),
                _ => snake_case(&format!("{:?}", c.model)),
            },
            reason: snake_case(&format!("{:?}", c.reason)),
            anchors: c.anchors,
            rounds_spanned: c.rounds_spanned,
            longest_gap_rounds: c.longest_gap_rounds,
            knots: c.knots,
            outliers: c.outliers,
            error_ns: u.map(|u| u.error_ns),
            noise_ns: u.and_then(|u| u.noise_ns),
            residual_rms_ns: u.and_then(|u| u.residual_rms_ns),
        }
    }
}

/// The snapshot model a node got, why, and how noisy its pairs are.
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotModelReport {
    /// The model used: `exact` or `fit` (never `auto`).
    pub model: clock_model::SnapshotModel,
    /// Why: `forced`, `few_pairs`, `exact_pairs`, `noisy_pairs`.
    pub reason: clock_model::SnapshotReason,
    /// Pairs used.
    pub pairs: usize,
    /// The pairs' noise σ once a smooth curve is taken out, ns (five pairs
    /// or more).
    pub noise_ns: Option<u64>,
    /// Inner knots of the fit.
    pub knots: usize,
    /// Pairs left out of the fit as isolated outliers.
    pub outliers: usize,
    /// One standard error of the fitted map inside the pairs' range, ns
    /// (the fit only).
    pub error_ns: Option<u64>,
}

impl SnapshotModelReport {
    /// `model (reason), noise N ns[, error ± N ns]` in words, for one-line
    /// summaries.
    pub fn brief(&self) -> String {
        let mut s = format!(
            "{} ({}), noise {}",
            snake_case(&format!("{:?}", self.model)),
            snake_case(&format!("{:?}", self.reason)).replace('_', " "),
            self.noise_ns
                .map_or("unknown".to_string(), |n| format!("{n} ns"))
        );
        if let Some(e) = self.error_ns {
            s += &format!(", error ± {e} ns");
        }
        s
    }

    /// True when the map is not simply the exact one `auto` builds from
    /// exact pairs: a fit, or a model forced by the caller. Worth a word
    /// in a short summary.
    pub fn is_notable(&self) -> bool {
        self.model != clock_model::SnapshotModel::Exact
            || self.reason == clock_model::SnapshotReason::Forced
    }
}

impl From<&clock_model::SnapshotChoice> for SnapshotModelReport {
    fn from(c: &clock_model::SnapshotChoice) -> Self {
        SnapshotModelReport {
            model: c.model,
            reason: c.reason,
            pairs: c.pairs,
            noise_ns: c.noise_ns,
            knots: c.knots,
            outliers: c.outliers,
            error_ns: c.error_ns,
        }
    }
}

/// A default the alignment used for lack of evidence, and on how many
/// lines. Each leaves the output right when the default holds (which the
/// input cannot tell), so it is a warning, not an error; the output that
/// would be wrong without evidence is refused instead (an [`crate::AlignError`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "fallback")]
#[non_exhaustive]
pub enum Fallback {
    /// The trace has no integer `profile_start_time` in a `Task Environment`
    /// plane and none was given: its line timestamps were read as absolute
    /// epoch ns (`T_sess = 0`).
    NoSessionStart {
        /// Lines with events read so.
        lines: u64,
    },
    /// Tracer lines chosen automatically on a node with a tracer clock
    /// (snapshot pairs), but its tracer start `S_w` is unknown: no host
    /// line can be recognised as a GPU runtime callback line (whose start
    /// is `S_w`), so every host line was read on the wall clock.
    HostLinesWithoutTracerStart {
        /// Host lines with events read on the wall clock for that reason.
        lines: u64,
    },
    /// Lines on the tracer clock that hold no event, on a node without the
    /// tracer path's inputs (snapshot pairs, `S_w`, `S_g`): their start was
    /// copied unchanged.
    EmptyTracerLinesUnmapped {
        /// Such lines.
        lines: u64,
    },
}

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fallback::NoSessionStart { lines } => write!(
                f,
                "no profile_start_time in the trace: {lines} lines read as absolute epoch times"
            ),
            Fallback::HostLinesWithoutTracerStart { lines } => write!(
                f,
                "tracer start S_w unknown: {lines} host lines read on the wall clock without a check for GPU runtime callback lines (--tracer-line names them)"
            ),
            Fallback::EmptyTracerLinesUnmapped { lines } => write!(
                f,
                "{lines} empty tracer-clock lines kept their start unmapped (the node has no tracer clock inputs)"
            ),
        }
    }
}

/// How many lines were read under each [`Fallback`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FallbackCounts {
    pub no_session_start: u64,
    pub host_lines_without_tracer_start: u64,
    pub empty_tracer_lines: u64,
}

impl FallbackCounts {
    /// The fallbacks that happened.
    pub(crate) fn list(&self) -> Vec<Fallback> {
        [
            Fallback::NoSessionStart {
                lines: self.no_session_start,
            },
            Fallback::HostLinesWithoutTracerStart {
                lines: self.host_lines_without_tracer_start,
            },
            Fallback::EmptyTracerLinesUnmapped {
                lines: self.empty_tracer_lines,
            },
        ]
        .into_iter()
        .filter(|f| f.lines() > 0)
        .collect()
    }
}

impl Fallback {
    /// The lines read under it.
    pub fn lines(&self) -> u64 {
        match *self {
            Fallback::NoSessionStart { lines }
            | Fallback::HostLinesWithoutTracerStart { lines }
            | Fallback::EmptyTracerLinesUnmapped { lines } => lines,
        }
    }
}

/// Everything the alignment of one node did.
#[derive(Debug, Clone, Serialize)]
pub struct NodeDiagnostics {
    /// The node.
    pub node_id: NodeId,
    /// The input trace.
    pub trace: PathBuf,
    /// The node's session start `T_sess`, epoch ns.
    pub session_start_ns: i128,
    /// The output's session start (the reference node's), epoch ns.
    pub output_session_start_ns: i128,
    /// `S_w`, epoch ns.
    pub start_walltime_ns: Option<u64>,
    /// `S_g`, ns.
    pub start_gpu_ns: Option<u64>,
    /// True when the node had no usable offsets and was copied through unaligned.
    pub passed_through: bool,
    /// The snapshot pairs, when used.
    pub snapshots: Option<SnapshotReport>,
    /// The snapshot model chosen, why, and the pairs' noise (`None`
    /// without pairs).
    pub snapshot_model: Option<SnapshotModelReport>,
    /// Offset anchors used.
    pub anchors_used: Vec<AnchorReport>,
    /// Offsets rows skipped.
    pub anchors_skipped: Vec<SkippedReport>,
    /// Warnings about the offsets (unconverged rounds, jumps).
    pub warnings: Vec<OffsetWarning>,
    /// Defaults used for lack of evidence, with counts.
    pub fallbacks: Vec<Fallback>,
    /// The offset model chosen, why, and the correction's uncertainty
    /// (`None` when passed through).
    pub offset_model: Option<OffsetModelReport>,
    /// Events corrected.
    pub events_corrected: u64,
    /// Events clamped by the monotonicity guard.
    pub events_clamped: u64,
    /// Events extrapolated, by map and side.
    pub extrapolated: Extrapolations,
    /// Correction applied to starts.
    pub correction: Option<CorrectionRange>,
    /// Events whose start the repair moved, and by how much (`None`: the
    /// node has no repair map); serialised as its [`clock_model::ShiftStats`], kept as
    /// the histogram so that nodes add up.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "shift_stats"
    )]
    pub repaired: Option<ShiftHistogram>,
    /// Launch → kernel lags by correlation id, on the output clock (`None`:
    /// no kernel of the node has its launch, or device events are written
    /// on the tracer timeline).
    pub launch_lag: Option<LaunchLag>,
    /// The policies in force.
    pub policies: AlignOptions,
    /// How each line was treated.
    pub lines: Vec<LineReport>,
}

impl NodeDiagnostics {
    pub(crate) fn set_counts(&mut self, counts: &LineCounts) {
        self.events_corrected = counts.events;
        self.events_clamped = counts.clamped;
        if self.repaired.is_some() {
            self.repaired = Some(counts.repaired.clone());
        }
        self.extrapolated = Extrapolations {
            before_first_snapshot: counts.snapshot_before,
            after_last_snapshot: counts.snapshot_after,
            before_first_offset_anchor: counts.offset_before,
            after_last_offset_anchor: counts.offset_after,
        };
        self.correction = match (counts.correction_min_ps, counts.correction_max_ps) {
            (Some(min), Some(max)) if counts.events > 0 => Some(CorrectionRange {
                min_ns: ps_to_nearest_ns(min),
                max_ns: ps_to_nearest_ns(max),
                mean_ns: ps_to_nearest_ns(counts.correction_sum_ps / counts.events as i128),
            }),
            _ => None,
        };
    }

    /// The diagnostics as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("diagnostics serialise")
    }

    /// A short human summary (a few lines).
    pub fn summary(&self) -> String {
        let mut s = format!(
            "node {}: {} events corrected",
            self.node_id, self.events_corrected
        );
        if self.passed_through {
            s.push_str(" — PASSED THROUGH UNALIGNED (no usable offsets)");
        }
        if let Some(c) = &self.correction {
            s.push_str(&format!(
                ", correction {} .. {} ns (mean {})",
                c.min_ns, c.max_ns, c.mean_ns
            ));
        }
        let e = &self.extrapolated;
        s.push_str(&format!(
            "\n  clamped {}, extrapolated: snapshots {} before / {} after, offsets {} before / {} after",
            self.events_clamped,
            e.before_first_snapshot,
            e.after_last_snapshot,
            e.before_first_offset_anchor,
            e.after_last_offset_anchor
        ));
        s.push_str(&format!(
            "\n  anchors used {}, skipped {}",
            self.anchors_used.len(),
            self.anchors_skipped.len()
        ));
        if let Some(m) = &self.snapshot_model {
            s.push_str(&format!(
                "\n  snapshot model {}: {} pairs, {} knots, {} outliers",
                m.brief(),
                m.pairs,
                m.knots,
                m.outliers
            ));
        }
        if let Some(m) = &self.offset_model {
            s.push_str(&format!(
                "\n  offset model {}: {} anchors over {} rounds, longest gap {} rounds, {} knots, {} outliers",
                m.brief(),
                m.anchors,
                m.rounds_spanned,
                m.longest_gap_rounds,
                m.knots,
                m.outliers,
            ));
        }
        if let Some(lag) = &self.launch_lag {
            s.push_str(&format!("\n  launch -> kernel: {lag}"));
        }
        for w in &self.warnings {
            s.push_str(&format!("\n  warning: {w:?}"));
        }
        for f in &self.fallbacks {
            s.push_str(&format!("\n  warning: {f}"));
        }
        s
    }
}

/// Picoseconds to the nearest nanosecond (ties away from zero), saturating
/// at the ends of `i64`.
pub(crate) fn ps_to_nearest_ns(ps: i128) -> i64 {
    let ns = if ps >= 0 {
        (ps + 500) / 1000
    } else {
        (ps - 500) / 1000
    };
    ns.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// A repair's shifts as their summary.
fn shift_stats<S: Serializer>(h: &Option<ShiftHistogram>, s: S) -> Result<S::Ok, S::Error> {
    h.as_ref().map(ShiftHistogram::stats).serialize(s)
}
