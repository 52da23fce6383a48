//! The crate's one error type.

use std::path::PathBuf;

use clock_model::NodeId;
/// Why a node could not be aligned: one variant per meaning, each naming
/// the file and the place (line, plane, pair, node) so the user can find
/// the bad input. A cause is printed by the error chain, never twice.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AlignError {
    /// Reading or writing a trace failed.
    #[error(transparent)]
    Trace(#[from] xplane_proto::Error),
    /// A file could not be read.
    #[error("reading {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON line could not be parsed.
    #[error("{path}:{line}: malformed JSON, expected {expected}")]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What the line should hold.
        expected: &'static str,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// The offsets file's first line is not the meta header (or the file is empty).
    #[error("{path}:{line}: the first line must be the meta header with \"meta\": true")]
    NoMetaHeader {
        /// The offsets file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
    /// The meta header lists a node twice.
    #[error("{path}:{line}: node {node} is listed twice in the meta header")]
    NodeListedTwice {
        /// The offsets file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The node.
        node: NodeId,
    },
    /// An offsets row names a node the header does not list.
    #[error("{path}:{line}: row for node {node}, which the meta header does not list")]
    RowForUnlistedNode {
        /// The offsets file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The node.
        node: NodeId,
    },
    /// An offsets row with a NaN or infinite offset or drift.
    #[error("{path}:{line}: offset_ns and drift_ppm of node {node} must be finite")]
    NonFiniteOffset {
        /// The offsets file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The node.
        node: NodeId,
    },
    /// Offsets rows out of round order.
    #[error(
        "{path}:{line}: round_id {round} after round {previous}: rows must be in ascending round order"
    )]
    RoundsOutOfOrder {
        /// The offsets file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// This row's round.
        round: u64,
        /// The round before it.
        previous: u64,
    },
    /// An offsets row whose window ends before it starts.
    #[error("{path}:{line}: window ends ({end_ns}) before it starts ({start_ns})")]
    WindowBackwards {
        /// The offsets file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// Window start, epoch ns.
        start_ns: u64,
        /// Window end, epoch ns.
        end_ns: u64,
    },
    /// An offsets row with no window and no legacy midpoint.
    #[error(
        "{path}:{line}: a row needs window_start_ns and window_end_ns (or the legacy midpoint_sys_ns)"
    )]
    RowWithoutWindow {
        /// The offsets file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
    /// Snapshot pairs in which a clock goes backwards.
    #[error(
        "{file}: snapshot pair {pair}: {clock} clock goes backwards: {after_ns} ns after {before_ns} ns"
    )]
    SnapshotsBackwards {
        /// Where the pairs came from.
        file: PathBuf,
        /// 0-based index of the pair that goes back.
        pair: usize,
        /// Which clock: `sys` or `tracer`.
        clock: &'static str,
        /// The previous pair's value, ns.
        before_ns: i128,
        /// This pair's value, ns.
        after_ns: i128,
    },
    /// A snapshot event without its tracer time.
    #[error(
        "{path}: plane /host:snapshots, line '{line}', event {event}: no rocm_ns stat (the tracer time)"
    )]
    SnapshotWithoutTracerTime {
        /// The trace.
        path: PathBuf,
        /// The line name.
        line: String,
        /// 0-based event index.
        event: usize,
    },
    /// A snapshot event before the epoch.
    #[error(
        "{path}: plane /host:snapshots, line '{line}', event {event}: negative host time {sys_ns} ns"
    )]
    NegativeSnapshotTime {
        /// The trace.
        path: PathBuf,
        /// The line name.
        line: String,
        /// 0-based event index.
        event: usize,
        /// The host time found.
        sys_ns: i128,
    },
    /// A snapshots file that is not a `SnapshotPairs` protobuf.
    #[error("{path}: not a SnapshotPairs protobuf")]
    NotSnapshotPairs {
        /// The file.
        path: PathBuf,
        /// The decoder's error.
        #[source]
        source: xplane_proto::prost::DecodeError,
    },
    /// The node is not in the offsets file's header.
    #[error(
        "{path}: meta header: node {node} is not listed (nodes: {})",
        clock_model::NodeList(listed)
    )]
    NodeNotListed {
        /// The offsets file.
        path: PathBuf,
        /// The node.
        node: NodeId,
        /// The nodes listed.
        listed: Vec<NodeId>,
    },
    /// The reference node is not in the offsets file's header.
    #[error("{path}: meta header: the reference node {node} is not listed")]
    ReferenceNotListed {
        /// The offsets file.
        path: PathBuf,
        /// The reference node.
        node: NodeId,
    },
    /// No row of the offsets file gives the node an anchor.
    #[error(
        "node {node}: no usable offsets rows in {path} ({}); pass the node through unaligned to keep it",
        if *.has_rows { "every row was skipped" } else { "the node has no rows" }
    )]
    NoUsableOffsets {
        /// The offsets file.
        path: PathBuf,
        /// The node.
        node: NodeId,
        /// True when the node has rows, all skipped.
        has_rows: bool,
    },
    /// A clock map could not be built from its anchors.
    #[error("{path}: node {node}: {what}")]
    Clock {
        /// The file the anchors came from.
        path: PathBuf,
        /// The node.
        node: NodeId,
        /// Which map.
        what: &'static str,
        /// The map's own error, naming the anchor.
        #[source]
        source: Box<clock_model::ClockError>,
    },
    /// Events on the tracer clock, but an input the tracer path needs is missing.
    #[error("{path}: plane '{plane}', line '{line}': events on the tracer clock, but {missing}")]
    TracerInputMissing {
        /// The trace.
        path: PathBuf,
        /// The plane.
        plane: String,
        /// The line.
        line: String,
        /// What is missing.
        missing: TracerInput,
    },
    /// Events on the tracer clock, and the node's snapshot pairs come from
    /// a file (or the trace's `/host:snapshots` plane) that is there but
    /// holds no pair.
    #[error(
        "{path}: plane '{plane}', line '{line}': events on the tracer clock, but {snapshots} holds no clock snapshot pairs (the file is there, with none in it)"
    )]
    NoSnapshotPairs {
        /// The trace.
        path: PathBuf,
        /// The plane.
        plane: String,
        /// The line.
        line: String,
        /// Where the pairs were read from.
        snapshots: PathBuf,
    },
    /// A kernel begins before the runtime call that launched it (paired by
    /// correlation id) by more than [`crate::KERNEL_LEAD_TOLERANCE_NS`]:
    /// the device plane's times are not on the clock they were read on.
    #[error(
        "{path}: {place}: the kernel with correlation_id {correlation_id} begins {lead_ns} ns before the runtime call that launched it (allowed: {tolerance_ns} ns); the device times are not on the clock they were read on"
    )]
    KernelBeforeLaunch {
        /// The trace.
        path: PathBuf,
        /// Where the kernel is: `plane '<name>'` (XSpace), the event at a
        /// byte offset (Kineto JSON).
        place: String,
        /// The kernel's correlation id.
        correlation_id: u64,
        /// How far it begins before its launch, ns (its lag, negated).
        lead_ns: i64,
        /// The lead allowed, ns.
        tolerance_ns: i64,
    },
    /// The trace is another node's: its tracer start is the one the
    /// offsets header lists for that node.
    #[error(
        "{path}: aligned as node {node}, but it is node {other}'s trace: its tracer start S_w {start_walltime_ns} ns (the /host:snapshots line) is node {other}'s in {offsets}"
    )]
    TraceOfAnotherNode {
        /// The trace.
        path: PathBuf,
        /// The node it was to be aligned as.
        node: NodeId,
        /// The node whose tracer start it has.
        other: NodeId,
        /// The offsets file.
        offsets: PathBuf,
        /// The trace's tracer start, epoch ns.
        start_walltime_ns: u64,
    },
    /// The trace holds no events (its planes are empty, or hold only clock
    /// snapshot pairs), and [`crate::AlignOptions::allow_empty`] is off.
    #[error(
        "{path}: the trace holds no events (other than clock snapshot pairs); refused unless empty traces are allowed (--allow-empty)"
    )]
    NoEvents {
        /// The trace.
        path: PathBuf,
    },
    /// An event with a negative duration (refused as it is read: an event
    /// cannot end before it starts).
    #[error(transparent)]
    NegativeDuration(NegativeDuration),
    /// An aligned time that does not fit the output's int64 fields.
    #[error(
        "{path}: plane '{plane}', line '{line}' (id {line_id}), event {event}: aligned time {value_ps} ps from the line start does not fit int64"
    )]
    Overflow {
        /// The trace.
        path: PathBuf,
        /// The plane.
        plane: String,
        /// The line name.
        line: String,
        /// The line id.
        line_id: i64,
        /// 0-based event index.
        event: usize,
        /// The value that does not fit, ps.
        value_ps: i128,
    },
    /// A line's own start (`timestamp_ns`) or duration (`duration_ps`) that
    /// does not fit the output's int64 field after alignment.
    #[error(
        "{path}: plane '{plane}', line '{line}' (id {line_id}): aligned {field} {value} does not fit int64"
    )]
    LineFieldOverflow {
        /// The trace.
        path: PathBuf,
        /// The plane.
        plane: String,
        /// The line name.
        line: String,
        /// The line id.
        line_id: i64,
        /// The field.
        field: LineField,
        /// The value that does not fit, in the field's unit.
        value: i128,
    },
    /// An event's correction that does not fit the int64 correction stat (ns).
    #[error(
        "{path}: plane '{plane}', line '{line}' (id {line_id}), event {event}: correction {correction_ps} ps does not fit the int64 ns of the correction stat"
    )]
    CorrectionOverflow {
        /// The trace.
        path: PathBuf,
        /// The plane.
        plane: String,
        /// The line name.
        line: String,
        /// The line id.
        line_id: i64,
        /// 0-based event index.
        event: usize,
        /// The correction, ps.
        correction_ps: i128,
    },
    /// A time of the output's `Task Environment` (its session start or stop
    /// on the output timeline) outside the uint64 epoch ns it is stored in.
    #[error(
        "{path}: Task Environment: {stat} on the output timeline would be {value_ns} ns, outside 0 ..= 2^64 - 1"
    )]
    SessionTimeOutOfRange {
        /// The trace.
        path: PathBuf,
        /// The stat: `profile_start_time` or `profile_stop_time`.
        stat: &'static str,
        /// The time, epoch ns.
        value_ns: i128,
    },
}

/// A field of a line's own header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineField {
    /// `timestamp_ns`, the line's start.
    TimestampNs,
    /// `duration_ps`, the line's span.
    DurationPs,
}

impl std::fmt::Display for LineField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LineField::TimestampNs => "timestamp_ns",
            LineField::DurationPs => "duration_ps",
        })
    }
}

/// An input the tracer-clock path needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TracerInput {
    /// The clock snapshot pairs.
    SnapshotPairs,
    /// `S_w`, the tracer start on the host clock.
    StartWalltime,
    /// `S_g`, the tracer start on the tracer clock.
    StartGpu,
}

impl std::fmt::Display for TracerInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TracerInput::SnapshotPairs => {
                "the node has no clock snapshot pairs (no /host:snapshots plane with pairs, and no snapshots file)"
            }
            TracerInput::StartWalltime => "the node has no start_walltime_ns (S_w)",
            TracerInput::StartGpu => {
                "start_gpu_ns (S_g) is unknown (0 in the offsets header); give it explicitly"
            }
        })
    }
}

/// The crate's result type.
pub type Result<T, E = AlignError> = std::result::Result<T, E>;

impl AlignError {
    /// Malformed trace bytes found by the zero-copy reader in the XSpace
    /// `view` of `path`, reported as the checker reports them (the first
    /// malformed message in file order, with its place and byte offset),
    /// whichever reader met them.
    pub(crate) fn wire(
        path: &std::path::Path,
        view: &xplane_proto::SpaceView<'_>,
        source: xplane_proto::WireError,
    ) -> Self {
        AlignError::Trace(xplane_proto::malformed_error(path, view, source))
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| AlignError::Io { path, source }
    }
}

/// An XSpace event with a negative duration, and where it is: one
/// definition for every reader that refuses it (the aligning walk here,
/// the input check of `trace-align`), so both say the same.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{path}: plane {plane:?}, line {line} ({line_name:?}), event {event}: negative duration {duration_ps} ps"
)]
pub struct NegativeDuration {
    /// The trace.
    pub path: PathBuf,
    /// The plane's name.
    pub plane: String,
    /// The line's index in the plane.
    pub line: usize,
    /// The line's name.
    pub line_name: String,
    /// The event's index in the line.
    pub event: u64,
    /// Its duration, ps.
    pub duration_ps: i64,
}
