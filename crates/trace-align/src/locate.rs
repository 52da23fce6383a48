//! What one file is, told from its content: an XSpace trace, a PyTorch
//! profiler trace (Chrome-trace JSON holding `traceEvents`), or a file
//! that is not a profiler trace, and why.

use std::path::{Path, PathBuf};

use clock_model::NodeId;
use serde::Serialize;
use xplane_proto::{FileBytes, NODE_ID_STAT};

use crate::error::{Result, RunError};
use crate::format::TraceFormat;

/// Why a file found in a run folder (or named as a trace) is not one of
/// the run's traces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "why")]
pub enum NotTrace {
    /// A PyTorch execution trace (`ExecutionTraceObserver`): the graph of
    /// operators, without times on a timeline.
    ExecutionTrace,
    /// JSON without a top-level `traceEvents` array.
    OtherJson,
    /// The trace viewer's lossy copy (`<host>.trace.json.gz`) of an XSpace
    /// trace beside it, which is read instead.
    ViewerCopy {
        /// The XSpace trace it copies.
        of: PathBuf,
    },
    /// An aligned output of this tool in a run folder (`.aligned.` in
    /// its name); named on the command line it is read.
    Aligned,
    /// A merged XSpace trace (its planes carry node ids).
    Merged,
    /// A FIFO, socket or device: not read, so as not to block or consume it.
    NotRegular,
    /// A trace of another capture of the xprof log folder.
    OtherCapture {
        /// Its session folder.
        session: String,
    },
}

impl std::fmt::Display for NotTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotTrace::ExecutionTrace => f.write_str(
                "a PyTorch execution trace (the graph of operators, no timeline), not a profiler trace",
            ),
            NotTrace::OtherJson => {
                f.write_str("JSON without a top-level \"traceEvents\" array: not a profiler trace")
            }
            NotTrace::ViewerCopy { of } => write!(
                f,
                "the trace viewer's copy of {}, which is read instead",
                of.display()
            ),
            NotTrace::Aligned => f.write_str("an aligned output of this tool, not a recording"),
            NotTrace::Merged => f.write_str(
                "a merged trace (its planes carry node ids), not one node's recording",
            ),
            NotTrace::NotRegular => f.write_str("not a regular file (a FIFO, socket or device)"),
            NotTrace::OtherCapture { session } => {
                write!(f, "of another capture (session {session})")
            }
        }
    }
}

/// A file left out of a run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why.
    #[serde(flatten)]
    pub why: NotTrace,
}

/// What the content of a trace says about whose it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: TraceFormat,
    /// PyTorch: the rank it names (`distributedInfo.rank`, else the name)
    /// and whether from `distributedInfo`.
    pub rank: Option<(u32, bool)>,
    /// `node<N>`/`rank<N>` in the file name.
    pub named: Option<NodeId>,
    /// XSpace: the first of `XSpace.hostnames`.
    pub host: Option<String>,
    /// XSpace: the session start (`Task Environment`), epoch ns, when written.
    pub start_ns: Option<i128>,
}

/// Whether a file in a run folder is looked at as a possible trace, by
/// name: XSpace (`*.xplane.pb`, `.gz`), JSON (`*.json`, `.gz`).
pub(crate) fn candidate(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [".xplane.pb", ".xplane.pb.gz", ".json", ".json.gz"]
        .iter()
        .any(|s| name.ends_with(s))
}

/// `<host>.trace.json.gz` beside `<host>.xplane.pb` (or `.gz`): the
/// XSpace trace it copies.
pub(crate) fn viewer_copy_of(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let host = name
        .strip_suffix(".trace.json.gz")
        .or_else(|| name.strip_suffix(".trace.json"))?;
    // A PyTorch trace named `<worker>.<ns>.pt.trace.json` is never one.
    if host.ends_with(".pt") {
        return None;
    }
    [".xplane.pb", ".xplane.pb.gz"]
        .iter()
        .map(|s| path.with_file_name(format!("{host}{s}")))
        .find(|p| p.is_file())
}

/// Read what `path` is (`given`: named on the command line, not found in
/// a folder). `Ok(Err(why))`: not a trace of a run.
pub(crate) fn look(path: &Path, given: bool) -> Result<std::result::Result<Found, NotTrace>> {
    let meta = std::fs::metadata(path).map_err(RunError::io(path))?;
    if !meta.is_file() {
        return Ok(Err(NotTrace::NotRegular));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if name.contains(".aligned.") && !given {
        return Ok(Err(NotTrace::Aligned));
    }
    if let Some(of) = viewer_copy_of(path) {
        return Ok(Err(NotTrace::ViewerCopy { of }));
    }
    let named = crate::node_from_name(path);
    let format = match TraceFormat::detect(path) {
        Ok(format) => format,
        // A JSON-named file that is not JSON is no profiler trace of it.
        Err(RunError::UnknownFormat { .. }) if is_json_name(&name) => {
            return Ok(Err(NotTrace::OtherJson));
        }
        Err(e) => return Err(e),
    };
    if let Some(digits) = collective_check::unreadable_node_id_in_path(path) {
        return Err(RunError::UnreadableNodeInName {
            path: path.to_path_buf(),
            digits,
        });
    }
    match format {
        TraceFormat::XSpace => look_xspace(path, named),
        TraceFormat::Kineto => look_kineto(path, named),
    }
}

fn is_json_name(name: &str) -> bool {
    name.ends_with(".json") || name.ends_with(".json.gz")
}

fn look_xspace(path: &Path, named: Option<NodeId>) -> Result<std::result::Result<Found, NotTrace>> {
    let bytes = FileBytes::open(path).map_err(RunError::Trace)?;
    let wire = |source| RunError::Trace(bytes.locate(source));
    let view = bytes.view();
    if view.has_plane_stat(NODE_ID_STAT).map_err(wire)? {
        return Ok(Err(NotTrace::Merged));
    }
    let host = match view.hostnames().next() {
        Some(h) => Some(h.map_err(wire)?.to_owned()).filter(|h| !h.is_empty()),
        None => None,
    };
    let start_ns = xplane_proto::task_env_time_ns_view(&view, xplane_proto::PROFILE_START_TIME)
        .map_err(wire)?;
    Ok(Ok(Found {
        path: path.to_path_buf(),
        format: TraceFormat::XSpace,
        rank: None,
        named,
        host,
        start_ns,
    }))
}

/// How far into a JSON file the marks of an execution trace are looked for.
const HEAD: usize = 4096;

fn look_kineto(path: &Path, named: Option<NodeId>) -> Result<std::result::Result<Found, NotTrace>> {
    let kineto = |source| RunError::Kineto { source };
    let file = kineto_trace::TraceFile::open(path).map_err(kineto)?;
    let trace = match file.parse() {
        Ok(trace) => trace,
        Err(kineto_trace::Error::MissingTraceEvents { .. }) => {
            let head = xplane_proto::source::head(path, HEAD).map_err(RunError::Trace)?;
            let has = |key: &str| head.windows(key.len()).any(|w| w == key.as_bytes());
            return Ok(Err(if has("\"schema\"") && has("\"nodes\"") {
                NotTrace::ExecutionTrace
            } else {
                NotTrace::OtherJson
            }));
        }
        Err(e) => return Err(kineto(e)),
    };
    let rank = trace.rank().map_err(kineto)?.map(|r| {
        (
            r.rank,
            r.source == kineto_trace::RankSource::DistributedInfo,
        )
    });
    Ok(Ok(Found {
        path: path.to_path_buf(),
        format: TraceFormat::Kineto,
        rank,
        named,
        host: trace.host_name(),
        start_ns: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_by_name() {
        for name in [
            "h.xplane.pb",
            "h.XPLANE.PB.GZ",
            "r.pt.trace.json.gz",
            "rank-3.json.gz",
        ] {
            assert!(candidate(name), "{name}");
        }
        for name in [
            "round_offsets.jsonl",
            "node0.snapshots.pb",
            "README.md",
            "x.pb",
        ] {
            assert!(!candidate(name), "{name}");
        }
    }

    #[test]
    fn the_viewer_copy_beside_its_xspace() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("host-a.trace.json.gz");
        assert_eq!(viewer_copy_of(&copy), None);
        std::fs::write(dir.path().join("host-a.xplane.pb"), b"").unwrap();
        assert_eq!(
            viewer_copy_of(&copy),
            Some(dir.path().join("host-a.xplane.pb"))
        );
        let torch = dir.path().join("host-a.1.pt.trace.json.gz");
        assert_eq!(viewer_copy_of(&torch), None);
    }
}
