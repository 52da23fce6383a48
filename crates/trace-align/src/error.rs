//! The crate's one error type.

use std::path::PathBuf;

use clock_model::{NodeId, NodeList};
/// Why a run could not be discovered, planned, aligned or merged. Every
/// variant names the file, folder or node concerned; a failed merge leaves
/// no output behind.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A run folder or trace could not be read.
    #[error("reading {path}")]
    Io {
        /// The folder or file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// An output folder could not be created.
    #[error("creating {path}")]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A node has two traces in the run folder.
    #[error("node {node} has two traces: {first} and {second}")]
    TwoTraces {
        /// The node.
        node: NodeId,
        /// The first trace found.
        first: PathBuf,
        /// The second.
        second: PathBuf,
    },
    /// A snapshots file for a node that has no trace.
    #[error("{path}: snapshots for node {node}, which has no trace")]
    SnapshotsWithoutTrace {
        /// The node.
        node: NodeId,
        /// The snapshots file.
        path: PathBuf,
    },
    /// A trace given without a node id whose file name names none.
    #[error("{path}: cannot tell the node id from the file name (no node<N>/rank<N>)")]
    NoNodeId {
        /// The trace.
        path: PathBuf,
    },
    /// A file given as a trace is neither format the tool reads.
    #[error("{path}: not an XSpace trace (*.xplane.pb) nor a Kineto trace (JSON): {reason}")]
    UnknownFormat {
        /// The file.
        path: PathBuf,
        /// What its first bytes are.
        reason: &'static str,
    },
    /// One file given as the trace of two nodes (under two names, or
    /// through a link).
    #[error("{second}: given twice (the same file as {first}); one trace cannot be two nodes'")]
    SameTrace {
        /// Its first name.
        first: PathBuf,
        /// Its second.
        second: PathBuf,
    },
    /// A trace without events (other than clock snapshot pairs).
    #[error("{path}: the trace holds no events; give --allow-empty to accept it")]
    EmptyTrace {
        /// The trace.
        path: PathBuf,
    },
    /// An XSpace event with a negative duration.
    #[error(transparent)]
    NegativeDuration(alignment_core::NegativeDuration),
    /// A trace in a format this operation does not handle yet.
    #[error("{path}: a {format} trace; aligning and merging read XSpace traces only")]
    UnsupportedFormat {
        /// The file.
        path: PathBuf,
        /// The format found.
        format: crate::TraceFormat,
    },
    /// Traces of one run in two formats.
    #[error("traces of one run in mixed formats (XSpace and PyTorch JSON): {first} and {second}")]
    MixedFormats {
        /// A trace in the first format.
        first: PathBuf,
        /// A trace in another.
        second: PathBuf,
    },
    /// No trace at all.
    #[error("no traces found in the run")]
    NoTraces,
    /// The run has no probe offsets file.
    #[error("{path}: no probe offsets file (round_offsets.jsonl)")]
    NoOffsets {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The offsets file lists a node that has no trace.
    #[error(
        "{path}: the offsets list node {node}, but no trace was found for it (the run's nodes are {})",
        NodeList(have)
    )]
    OffsetsNodeWithoutTrace {
        /// The offsets file.
        path: PathBuf,
        /// The node.
        node: NodeId,
        /// The nodes that have traces.
        have: Vec<NodeId>,
    },
    /// A node has a trace but no entry in the offsets file's header.
    #[error("{path}: node {node} has a trace but is not in the offsets meta header")]
    NodeNotInOffsets {
        /// The offsets file.
        path: PathBuf,
        /// The node.
        node: NodeId,
    },
    /// The reference node has no trace.
    #[error(
        "the reference node {node} has no trace: the run's nodes are {} (the reference must be one of them)",
        NodeList(have)
    )]
    ReferenceWithoutTrace {
        /// The reference node.
        node: NodeId,
        /// The nodes that have traces.
        have: Vec<NodeId>,
    },
    /// An output would replace one of the run's inputs.
    #[error("{path}: an output may not replace an input")]
    OutputIsInput {
        /// The output (and input).
        path: PathBuf,
    },
    /// An output names something that is not a regular file (a directory,
    /// a device, a FIFO, a socket); writing would replace it.
    #[error("{path}: an output must be a regular file or a new path; this is {kind}")]
    OutputNotAFile {
        /// The output.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// An output would replace a file of the run folder, or put a trace
    /// there that the folder's next run would read as a node's.
    #[error(
        "{path}: an output may not go over a file of the run folder {folder}, nor add a trace to it"
    )]
    OutputInRunFolder {
        /// The output.
        path: PathBuf,
        /// The run folder (a folder of the command's inputs).
        folder: PathBuf,
    },
    /// An output folder holds a file this tool did not write there (or
    /// that changed since): its outputs would replace it, or lie beside
    /// it as if of one run.
    #[error(
        "{dir}: an output folder must be new, empty, or hold only this tool's outputs (as its record {record} shows); {file} is not one: choose another folder"
    )]
    OutDirNotOurs {
        /// The output folder.
        dir: PathBuf,
        /// The first file in it that is not this tool's output.
        file: PathBuf,
        /// The record's file name.
        record: &'static str,
    },
    /// The record of an output folder's outputs could not be read or
    /// written.
    #[error("{path}: the record of the outputs written here")]
    OutputRecord {
        /// The folder.
        path: PathBuf,
        /// The cause.
        #[source]
        source: safe_temp::Error,
    },
    /// The folder of a command's one output file does not exist (the
    /// command does not create it).
    #[error("{path}: its folder {folder} does not exist (this command does not create it)")]
    OutputFolderMissing {
        /// The output.
        path: PathBuf,
        /// Its folder.
        folder: PathBuf,
    },
    /// Slice tracks (the critical path) were asked for an output that
    /// holds no export of the merge to draw them in.
    #[error(
        "{path}: the critical path is drawn in a Perfetto trace (or the Chrome trace JSON of an XSpace run): name the output *.pftrace"
    )]
    TracksWithoutExport {
        /// The output.
        path: PathBuf,
    },
    /// An output's name does not end in a format the command writes.
    #[error("{path}: the output's name must end in a format this command writes: {expected}")]
    OutputFormat {
        /// The output.
        path: PathBuf,
        /// The suffixes accepted.
        expected: String,
    },
    /// The run name of an xprof layout is not one plain folder name.
    #[error(
        "{name:?} cannot name an xprof run: give one folder name (letters, digits, `-`, `_`, `.`; not `.` or `..`)"
    )]
    XprofRunName {
        /// The name given.
        name: String,
    },
    /// The GPU id stride of the merged trace is too small.
    #[error("gpu_id_stride must be at least 2 (one GPU and the host plane), got {0}")]
    GpuIdStride(u32),
    /// The probe offsets file could not be read.
    #[error("reading the probe offsets")]
    Offsets(#[source] alignment_core::AlignError),
    /// The collectives give no clock corrections (no shared instance,
    /// inconsistent constraints).
    #[error("estimating the clocks from the collectives")]
    Estimate(#[source] Box<collective_clock::Error>),
    /// The traces share too few collectives to estimate every clock from
    /// (a few ranks of a large job, sampled traces): the ways on.
    #[error(
        "the traces share no collective to align some node by (a partial or sampled run?): \
         merge on the clocks as recorded with --clock-source recorded (one host, or clocks \
         synchronised by PTP), or add the other ranks' traces (a run folder, or --trace N=PATH)"
    )]
    NothingShared(#[source] Box<collective_clock::Error>),
    /// The collective estimate holds no correction for a node it was asked
    /// to align (every node of the run is estimated, so this is a fault of
    /// the estimate, not of the input).
    #[error("node {node}: the estimate from the collectives holds no correction for it")]
    NotEstimated {
        /// The node.
        node: collective_check::NodeId,
    },
    /// A node's clock correction is beyond the plausibility bound (an
    /// offset larger than the spread of the nodes' starts plus a second, a
    /// drift beyond ±1000 ppm): the estimate is wrong, whatever it came
    /// from.
    #[error(
        "node {node}: the clock correction is not plausible: {what} {value} from {evidence} is \
         beyond the bound {bound}"
    )]
    ImplausibleCorrection {
        /// The node.
        node: collective_check::NodeId,
        /// Which estimate (the collectives' segment, the probe rows).
        evidence: String,
        /// "offset" or "drift".
        what: &'static str,
        /// The value, with its unit.
        value: String,
        /// The bound, with its unit and where it comes from.
        bound: String,
    },
    /// An offsets header whose tracer start for a node lies outside that
    /// node's trace's session.
    #[error(
        "{path}: line 1 (the meta header): node {node}'s start_walltime_ns {start_walltime_ns} is {off_by_days:.1} days from its trace's session ({trace}: {session_start_ns} .. {session_stop_ns} ns, ± 1 s): not its tracer start"
    )]
    ImplausibleStart {
        /// The offsets file.
        path: PathBuf,
        /// The node.
        node: NodeId,
        /// The header's tracer start, epoch ns.
        start_walltime_ns: u64,
        /// The node's trace.
        trace: PathBuf,
        /// Its session's start, epoch ns.
        session_start_ns: i128,
        /// Its session's stop, epoch ns.
        session_stop_ns: i128,
        /// How far the start is from the session's, days.
        off_by_days: f64,
    },
    /// The repair of the collectives after the clock correction failed.
    #[error("repairing the collectives left violated by the clock correction")]
    Repair(#[source] Box<collective_clock::Error>),
    /// Aligning a node failed.
    #[error("aligning node {node}")]
    Align {
        /// The node.
        node: NodeId,
        /// Why.
        #[source]
        source: alignment_core::AlignError,
    },
    /// A node's planes could not be placed in the merged trace (a corrupt
    /// trace, a GPU ordinal that does not fit).
    #[error("placing the planes of node {node}")]
    Layout {
        /// The node.
        node: NodeId,
        /// Why.
        #[source]
        source: trace_merge::MergeError,
    },
    /// Merging failed.
    #[error("merging")]
    Merge(#[source] trace_merge::MergeError),
    /// Reading a trace's collectives failed.
    #[error("reading the collectives of node {node}")]
    Collectives {
        /// The node.
        node: NodeId,
        /// Why.
        #[source]
        source: collective_check::Error,
    },
    /// The ranks of a Kineto run disagree on a process group or collective.
    #[error("the collectives of the ranks do not agree")]
    CollectivesDisagree(#[source] collective_check::Error),
    /// A Kineto trace could not be read or written: the trace's own
    /// error, which names the file (and byte offset), and nothing before
    /// it (an ENOSPC on an output once began "a PyTorch (Kineto) trace").
    #[error(transparent)]
    Kineto {
        /// Why (naming the file and byte offset).
        source: kineto_trace::Error,
    },
    /// A Kineto trace of a run of several names no rank (no
    /// `distributedInfo.rank`, no `rank<N>` in its name).
    #[error(
        "{path}: a PyTorch (Kineto) trace without a rank (no distributedInfo.rank, no rank<N> in its name) in a run of several traces; give its rank with --trace N=PATH"
    )]
    NoRank {
        /// The trace.
        path: PathBuf,
    },
    /// A trace whose file name says its node or rank with a number no node
    /// id can be.
    #[error(
        "{path}: the file name says node or rank {digits}, more than a node id can be (at most 4294967295); rename the file, or give its node with --trace N=PATH"
    )]
    UnreadableNodeInName {
        /// The trace.
        path: PathBuf,
        /// The digits of the name.
        digits: String,
    },
    /// A file given as a trace is not a profiler trace.
    #[error("{path}: {why}")]
    NotATrace {
        /// The file.
        path: PathBuf,
        /// What it is.
        why: crate::NotTrace,
    },
    /// `--session` names no session folder of the xprof log folder.
    #[error("no session folder {name} in the run (sessions: {})", if have.is_empty() { "none, not an xprof log folder".to_owned() } else { have.join(", ") })]
    NoSuchSession {
        /// The name asked for.
        name: String,
        /// The session folders found.
        have: Vec<String>,
    },
    /// Two XSpace traces of one host, with no `node<N>`/`rank<N>` in
    /// their names to tell their nodes apart.
    #[error(
        "{first} and {second} are both of host {host}; name them node<N>/rank<N> or give --trace N=PATH"
    )]
    SameHost {
        /// The host.
        host: String,
        /// The first trace.
        first: PathBuf,
        /// The second.
        second: PathBuf,
    },
    /// A summary or clocks file could not be read: truncated, corrupt, or
    /// not one at all.
    #[error("{path}: not a readable {what} (truncated or corrupt?)")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What it should be: `summary`, `clocks file`.
        what: &'static str,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A report could not be written as JSON.
    #[error("writing {what} as JSON")]
    Json {
        /// What.
        what: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A node asked for that has no trace in the run.
    #[error(
        "node {node} has no trace in the run (its nodes are {})",
        NodeList(have)
    )]
    NodeWithoutTrace {
        /// The node.
        node: NodeId,
        /// The nodes the run has.
        have: Vec<NodeId>,
    },
    /// A summary or clocks file of another format or version than this
    /// build reads.
    #[error(
        "{path}: a {what} of format {found:?} version {version}; this build reads {expected:?} version {expected_version}"
    )]
    FormatVersion {
        /// The file.
        path: PathBuf,
        /// What it should be.
        what: &'static str,
        /// The format it names.
        found: String,
        /// Its version.
        version: u32,
        /// The format this build reads.
        expected: &'static str,
        /// The version this build reads.
        expected_version: u32,
    },
    /// Two summaries of one node given to one fit.
    #[error("{second}: a second summary of node {node} (the first: {first})")]
    SummaryTwice {
        /// The node.
        node: NodeId,
        /// The first summary.
        first: PathBuf,
        /// The second.
        second: PathBuf,
    },
    /// Summaries that cannot be of one run.
    #[error("{path}: {what} differs from that of {other}; the summaries are not of one run")]
    SummariesDisagree {
        /// The summary.
        path: PathBuf,
        /// A summary it disagrees with.
        other: PathBuf,
        /// What differs.
        what: &'static str,
    },
    /// A clocks file without the node asked for.
    #[error("{path}: no clocks for node {node} (it has nodes {})", NodeList(have))]
    NodeNotInClocks {
        /// The clocks file.
        path: PathBuf,
        /// The node.
        node: NodeId,
        /// The nodes it has.
        have: Vec<NodeId>,
    },
    /// A trace that is not the one a summary or clocks file was made from.
    #[error(
        "{path}: not the trace {source_file} names for node {node} (expected {expected}, found {found})"
    )]
    TraceMismatch {
        /// The trace given.
        path: PathBuf,
        /// The summary or clocks file.
        source_file: PathBuf,
        /// The node.
        node: NodeId,
        /// The identity recorded.
        expected: String,
        /// The identity of the trace given.
        found: String,
    },
    /// A trace that no node of a clocks file was made from.
    #[error(
        "{path}: no node of {clocks} was summarised from this trace ({found}); give --node to name it"
    )]
    TraceNotInClocks {
        /// The trace.
        path: PathBuf,
        /// The clocks file.
        clocks: PathBuf,
        /// The trace's identity.
        found: String,
    },
    /// A clocks file or summary names a file by something other than a
    /// plain name in the trace's own folder (an absolute path, `..`, a
    /// folder): it would read a file outside the run.
    #[error(
        "{path}: node {node} names the file {name:?}; a file named here must be a plain file name in the trace's folder (no folder, no '..', not absolute)"
    )]
    FileNameNotPlain {
        /// The clocks file or summary.
        path: PathBuf,
        /// The node.
        node: NodeId,
        /// The name found.
        name: String,
    },
    /// Two nodes of a clocks file were summarised from traces with the
    /// same bytes: which one a trace is cannot be told from it.
    #[error(
        "{path}: nodes {first} and {second} of {clocks} were summarised from traces with the same bytes ({found}); give --node to name it"
    )]
    TraceAmbiguousInClocks {
        /// The trace.
        path: PathBuf,
        /// The clocks file.
        clocks: PathBuf,
        /// One node.
        first: NodeId,
        /// Another.
        second: NodeId,
        /// The trace's identity.
        found: String,
    },
    /// A summary read with other alignment policies than the fit's.
    #[error(
        "{path}: summarised with other alignment policies (snapshot model, tracer lines, reference, ...) than the fit was given; give fit the same"
    )]
    OptionsDiffer {
        /// The summary.
        path: PathBuf,
    },
    /// A node's trace read a second time, with the tracer start of its
    /// probe offsets header, gave another number of collectives.
    #[error(
        "{path}: node {node} has {first} collectives read with the trace's tracer start, {second} with its probe offsets'"
    )]
    ProbeStartRead {
        /// The trace.
        path: PathBuf,
        /// The node.
        node: NodeId,
        /// Read with the trace's tracer start.
        first: usize,
        /// Read with the probe offsets header's.
        second: usize,
    },
    /// A trace could not be mapped or decompressed.
    #[error("opening a trace")]
    Trace(#[source] xplane_proto::Error),
    /// Exporting a run to a Perfetto trace or Chrome trace JSON failed.
    #[error("exporting {path}")]
    Export {
        /// The output.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<perfetto_export::Error>,
    },
    /// An xprof log folder asked of a PyTorch run.
    #[error(
        "{path}: an xprof log folder holds XSpace traces; this run's traces are PyTorch's (convert them with a merge to NAME.xplane.pb)"
    )]
    XprofForKineto {
        /// The output folder.
        path: PathBuf,
    },
    /// A repair asked of a PyTorch run.
    #[error(
        "the repair applies to XSpace runs; PyTorch (Kineto) runs are aligned from their collectives without a repair"
    )]
    KinetoRepair,
    /// Writing an output failed.
    #[error("writing {path}")]
    Write {
        /// The output.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The crate's result type.
pub type Result<T, E = RunError> = std::result::Result<T, E>;

impl RunError {
    /// The error of an estimate from the collectives: [`RunError::NothingShared`]
    /// when the traces share too little to estimate from.
    pub(crate) fn estimate(e: collective_clock::Error) -> RunError {
        use collective_clock::Error as E;
        match e {
            E::NoSharedInstances
            | E::NoSharedInstance { .. }
            | E::ReferenceNotShared { .. }
            | E::Disconnected { .. } => RunError::NothingShared(Box::new(e)),
            e => RunError::Estimate(Box::new(e)),
        }
    }

    /// [`RunError::Align`] of `node`; an event with a negative duration,
    /// which an aligning walk refuses as it reads it, is
    /// [`RunError::NegativeDuration`], as [`crate::check_traces`] names it.
    pub(crate) fn align(node: NodeId) -> impl FnOnce(alignment_core::AlignError) -> Self {
        move |source| match source {
            alignment_core::AlignError::NegativeDuration(d) => RunError::NegativeDuration(d),
            source => RunError::Align { node, source },
        }
    }

    /// [`RunError::Write`] of `path` from a writer's error: the I/O
    /// error under it (the writer's error names the path again).
    pub(crate) fn write(path: &std::path::Path) -> impl FnOnce(xplane_proto::Error) -> Self + '_ {
        move |e| RunError::Write {
            path: path.to_path_buf(),
            source: e.into_io(),
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| RunError::Io { path, source }
    }
}
