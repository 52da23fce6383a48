//! What a run is made of: one trace per node, optional snapshot files, and
//! the probe offsets file, found in a run folder or given one by one.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clock_model::NodeId;
use rayon::prelude::*;
use serde::Serialize;

use crate::captures::Capture;
use crate::error::{Result, RunError};
use crate::format::TraceFormat;
use crate::locate::{Found, NotTrace, Skipped};

/// The name of the probe offsets file in a run folder.
pub const OFFSETS_FILE_NAME: &str = "round_offsets.jsonl";

/// How a trace's node id was told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeOrigin {
    /// Given with the trace (`--trace N=PATH`).
    Given,
    /// A PyTorch trace's `distributedInfo.rank`.
    DistributedInfo,
    /// `rank<N>` (`rank-<N>`, `rank_<N>`) or `node<N>` in the file name.
    FileName,
    /// An XSpace trace's host: the nodes are numbered in the natural
    /// order of the run's hosts.
    Host,
    /// The one trace of a run, naming no rank: rank 0.
    Lone,
}

impl std::fmt::Display for NodeOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NodeOrigin::Given => "given",
            NodeOrigin::DistributedInfo => "distributedInfo.rank",
            NodeOrigin::FileName => "file name",
            NodeOrigin::Host => "host order",
            NodeOrigin::Lone => "the one trace, rank 0",
        })
    }
}

/// One node's files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeFiles {
    /// Its trace.
    pub trace: PathBuf,
    /// Its snapshot pairs file (`SnapshotPairs` protobuf or JSONL), when
    /// not embedded in the trace.
    pub snapshots: Option<PathBuf>,
    /// How its node id was told.
    pub origin: NodeOrigin,
    /// The rank the trace names (PyTorch: `distributedInfo.rank`, else its
    /// file name), when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The host that wrote it, when the trace says (XSpace `hostnames`,
    /// PyTorch `host_name`) or its xprof file name does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl NodeFiles {
    /// The files of a node whose trace is `trace`, told by `origin`.
    pub fn new(trace: PathBuf, origin: NodeOrigin) -> NodeFiles {
        NodeFiles {
            trace,
            snapshots: None,
            origin,
            rank: None,
            host: None,
        }
    }
}

/// The files of a run. Node ids are the traces' (their rank, their host's
/// place among the run's hosts, `node<N>`/`rank<N>` in the file name, or
/// given), never positions in a list of arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RunFiles {
    /// Node id → its files.
    pub nodes: BTreeMap<NodeId, NodeFiles>,
    /// The probe offsets file, when the run has one.
    pub offsets: Option<PathBuf>,
    /// Files of the run folder that are not the run's traces, and why
    /// (execution traces, other JSON, the trace viewer's copies, outputs
    /// of this tool, FIFOs, traces of another capture).
    pub skipped: Vec<Skipped>,
    /// In an xprof log folder: the capture read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<Capture>,
    /// In an xprof log folder: the captures left out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other_captures: Vec<Capture>,
}

/// How a run's files are found ([`RunFiles::find`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FindOptions {
    /// In an xprof log folder, the capture holding this session folder
    /// (by default the newest).
    pub session: Option<String>,
}

impl RunFiles {
    /// Find the traces of a run folder: every profiler trace below it
    /// ([`RunFiles::find`]), snapshot files (`node<N>.snapshots.*`) and
    /// `round_offsets.jsonl`.
    pub fn discover(dir: impl AsRef<Path>) -> Result<RunFiles> {
        RunFiles::find(&[dir.as_ref()], &FindOptions::default())
    }

    /// The run of these traces, each one's node read from the file.
    pub fn from_traces<P: AsRef<Path>>(traces: impl IntoIterator<Item = P>) -> Result<RunFiles> {
        let paths: Vec<PathBuf> = traces
            .into_iter()
            .map(|p| p.as_ref().to_path_buf())
            .collect();
        RunFiles::find(&paths, &FindOptions::default())
    }

    /// The run of `inputs`: run folders and traces. A folder gives every
    /// profiler trace below it, told by content: XSpace (`*.xplane.pb`,
    /// `.gz`) and PyTorch profiler JSON (`*.json`, `.gz`, holding
    /// `traceEvents`), through the xprof layout
    /// (`plugins/profile/<session>/`, one capture: [`FindOptions::session`]);
    /// a file in it that is not a trace is in [`RunFiles::skipped`] with
    /// the reason. A file given that is not a trace is
    /// [`RunError::NotATrace`].
    ///
    /// Each trace's node is read from the file: a PyTorch trace's
    /// `distributedInfo.rank`, else `rank<N>`/`rank-<N>`/`rank_<N>` or
    /// `node<N>` in its name, else (the run's one trace) rank 0; an XSpace
    /// trace's `node<N>`/`rank<N>` name, else its host (`XSpace.hostnames`,
    /// or the file name's host when the content's hosts are not all
    /// different), numbered in the hosts' natural order. Two traces of one
    /// node are [`RunError::TwoTraces`], naming both.
    pub fn find<P: AsRef<Path>>(inputs: &[P], options: &FindOptions) -> Result<RunFiles> {
        let mut run = RunFiles::default();
        let mut candidates: Vec<(PathBuf, bool)> = Vec::new();
        let mut snapshots = Vec::new();
        for input in inputs {
            let input = input.as_ref();
            let meta = std::fs::metadata(input).map_err(RunError::io(input))?;
            if meta.is_dir() {
                let mut found = Vec::new();
                walk(input, &mut found, &mut snapshots, &mut run.skipped)?;
                candidates.extend(found.into_iter().map(|p| (p, false)));
                let offsets = input.join(OFFSETS_FILE_NAME);
                if run.offsets.is_none() && offsets.is_file() {
                    run.offsets = Some(offsets);
                }
            } else {
                candidates.push((input.to_path_buf(), true));
            }
        }
        // One file given twice (or through a link) is one trace.
        let paths: Vec<&Path> = candidates.iter().map(|(p, _)| p.as_path()).collect();
        crate::content::refuse_same_file(&paths)?;
        let looked: Vec<_> = candidates
            .par_iter()
            .with_max_len(1)
            .map(|(path, given)| crate::locate::look(path, *given))
            .collect();
        let mut found = Vec::new();
        for ((path, given), looked) in candidates.into_iter().zip(looked) {
            match looked? {
                Ok(f) => found.push(f),
                Err(why) if given => return Err(RunError::NotATrace { path, why }),
                Err(why) => run.skipped.push(Skipped { path, why }),
            }
        }
        let chosen = crate::captures::choose(found, options.session.as_deref())?;
        run.skipped.extend(chosen.skipped);
        run.capture = chosen.taken;
        run.other_captures = chosen.others;
        for (node, files) in assign(chosen.found)? {
            run.add_node(node, files)?;
        }
        for (node, path) in snapshots {
            run.set_snapshots(node, path)?;
        }
        Ok(run)
    }

    /// Add node `node`'s trace (given); a second trace for a node is an error.
    pub fn add_trace(&mut self, node: NodeId, trace: PathBuf) -> Result<()> {
        self.add_node(node, NodeFiles::new(trace, NodeOrigin::Given))
    }

    /// Add node `node`'s files; a second trace for a node is
    /// [`RunError::TwoTraces`].
    fn add_node(&mut self, node: NodeId, files: NodeFiles) -> Result<()> {
        if let Some(first) = self.nodes.get(&node) {
            return Err(RunError::TwoTraces {
                node,
                first: first.trace.clone(),
                second: files.trace,
            });
        }
        self.nodes.insert(node, files);
        Ok(())
    }

    /// Set node `node`'s trace, replacing what the run folder had for it
    /// (and the node the folder gave that file, if another).
    pub fn set_trace(&mut self, node: NodeId, trace: PathBuf) {
        let before = self
            .nodes
            .iter()
            .find(|(_, f)| crate::same_file(&f.trace, &trace))
            .map(|(&n, f)| (n, f.clone()));
        let mut files = NodeFiles::new(trace, NodeOrigin::Given);
        if let Some((was, old)) = before {
            self.nodes.remove(&was);
            files.rank = old.rank;
            files.host = old.host;
        }
        self.nodes.insert(node, files);
    }

    /// The node ↔ file ↔ rank/host table, one line per node.
    pub fn table(&self) -> String {
        let mut text = String::new();
        for (node, f) in &self.nodes {
            let mut who = Vec::new();
            if let Some(rank) = f.rank {
                who.push(format!("rank {rank}"));
            }
            if let Some(host) = &f.host {
                who.push(format!("host {host}"));
            }
            text += &format!(
                "node {node}: {} ({}; {})\n",
                f.trace.display(),
                if who.is_empty() {
                    "-".to_owned()
                } else {
                    who.join(", ")
                },
                f.origin
            );
        }
        text
    }

    /// Set node `node`'s snapshots file; the node must have a trace.
    pub fn set_snapshots(&mut self, node: NodeId, path: PathBuf) -> Result<()> {
        match self.nodes.get_mut(&node) {
            Some(files) => {
                files.snapshots = Some(path);
                Ok(())
            }
            None => Err(RunError::SnapshotsWithoutTrace { node, path }),
        }
    }

    /// The run's trace format, told from every file's content; traces of
    /// one run in two formats are an error.
    pub fn format(&self) -> Result<TraceFormat> {
        let mut found: Option<(TraceFormat, &PathBuf)> = None;
        for files in self.nodes.values() {
            let format = TraceFormat::detect(&files.trace)?;
            match found {
                Some((first, path)) if first != format => {
                    return Err(RunError::MixedFormats {
                        first: path.clone(),
                        second: files.trace.clone(),
                    });
                }
                _ => found = Some((format, &files.trace)),
            }
        }
        found.map(|(f, _)| f).ok_or(RunError::NoTraces)
    }

    /// The one check of the run's traces that every command runs before
    /// reading them ([`crate::check_traces`]: one file as two nodes, mixed
    /// formats, empty traces, negative durations, text that is not
    /// UTF-8); their format.
    pub fn check(&self, rules: crate::TraceRules) -> Result<TraceFormat> {
        let traces: Vec<&Path> = self.nodes.values().map(|f| f.trace.as_path()).collect();
        crate::check_traces(&traces, rules)
    }

    /// The probe offsets at `path`, checked against this run's traces
    /// ([`crate::read_offsets`]).
    pub fn read_offsets(&self, path: &Path) -> Result<alignment_core::OffsetsFile> {
        let traces = self.nodes.iter().map(|(&n, f)| (n, f.trace.as_path()));
        crate::read_offsets(path, traces)
    }

    /// The traces by node id, for runs read as a whole (Kineto).
    pub fn traces(&self) -> Vec<(NodeId, PathBuf)> {
        self.nodes
            .iter()
            .map(|(&n, f)| (n, f.trace.clone()))
            .collect()
    }

    /// Check that every trace is in a format this run can align, from the
    /// files' content.
    pub fn check_formats(&self) -> Result<()> {
        for files in self.nodes.values() {
            match TraceFormat::detect(&files.trace)? {
                TraceFormat::XSpace => {}
                format => {
                    return Err(RunError::UnsupportedFormat {
                        path: files.trace.clone(),
                        format,
                    });
                }
            }
        }
        Ok(())
    }
}

/// The node id in a file name (`node<N>`/`rank<N>`), if any.
pub fn node_from_name(path: &Path) -> Option<NodeId> {
    collective_check::node_id_from_path(path)
}

/// Every file below `dir` (links to folders not followed) that may be a
/// trace, snapshot files with their node, and the entries that are not
/// regular files, in natural order of their paths.
fn walk(
    dir: &Path,
    found: &mut Vec<PathBuf>,
    snapshots: &mut Vec<(NodeId, PathBuf)>,
    skipped: &mut Vec<Skipped>,
) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(RunError::io(dir))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .map_err(RunError::io(dir))?;
    entries.sort_by(|a, b| natural_cmp(&a.to_string_lossy(), &b.to_string_lossy()));
    for path in entries {
        let kind = std::fs::symlink_metadata(&path).map_err(RunError::io(&path))?;
        if kind.is_dir() {
            walk(&path, found, snapshots, skipped)?;
            continue;
        }
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let regular = std::fs::metadata(&path).is_ok_and(|m| m.is_file() || m.is_dir());
        if !regular {
            skipped.push(Skipped {
                path,
                why: NotTrace::NotRegular,
            });
        } else if name.contains(".snapshots.") {
            if let Some(node) = node_from_name(&path) {
                snapshots.push((node, path));
            }
        } else if crate::locate::candidate(name) {
            found.push(path);
        }
    }
    Ok(())
}

/// Each trace's node and files ([`RunFiles::find`]).
fn assign(found: Vec<Found>) -> Result<Vec<(NodeId, NodeFiles)>> {
    let lone = found.len() == 1;
    let mut nodes = Vec::with_capacity(found.len());
    let mut by_host = Vec::new();
    for f in found {
        let rank = f.rank.map(|(r, _)| r);
        let told = match (f.format, f.rank, f.named) {
            (TraceFormat::Kineto, Some((r, true)), _) => {
                Some((NodeId(r), NodeOrigin::DistributedInfo))
            }
            (TraceFormat::Kineto, Some((r, false)), _) => Some((NodeId(r), NodeOrigin::FileName)),
            (_, _, Some(n)) => Some((n, NodeOrigin::FileName)),
            (TraceFormat::Kineto, None, None) if lone => Some((NodeId(0), NodeOrigin::Lone)),
            (TraceFormat::Kineto, None, None) => return Err(RunError::NoRank { path: f.path }),
            (TraceFormat::XSpace, _, None) => None,
        };
        match told {
            Some((node, origin)) => nodes.push((
                node,
                NodeFiles {
                    rank,
                    host: f.host.clone(),
                    ..NodeFiles::new(f.path, origin)
                },
            )),
            None => by_host.push(f),
        }
    }
    // The hosts the content names, unless two traces name one (processes
    // of one machine): then the hosts of the file names.
    let distinct = |hosts: &[Option<String>]| {
        let mut seen: Vec<&String> = hosts.iter().flatten().collect();
        let n = seen.len();
        seen.sort();
        seen.dedup();
        n == hosts.len() && seen.len() == n
    };
    let content: Vec<Option<String>> = by_host.iter().map(|f| f.host.clone()).collect();
    let hosts: Vec<String> = if distinct(&content) {
        content.into_iter().flatten().collect()
    } else {
        by_host.iter().map(|f| file_host(&f.path)).collect()
    };
    let mut order: Vec<(String, Found)> = hosts.into_iter().zip(by_host).collect();
    order.sort_by(|a, b| natural_cmp(&a.0, &b.0));
    if let Some(w) = order.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(RunError::SameHost {
            host: w[0].0.clone(),
            first: w[0].1.path.clone(),
            second: w[1].1.path.clone(),
        });
    }
    let taken: std::collections::BTreeSet<NodeId> = nodes.iter().map(|(n, _)| *n).collect();
    let free = (0..).map(NodeId).filter(|n| !taken.contains(n));
    for (node, (host, f)) in free.zip(order) {
        nodes.push((
            node,
            NodeFiles {
                host: Some(host),
                ..NodeFiles::new(f.path, NodeOrigin::Host)
            },
        ));
    }
    Ok(nodes)
}

/// The host of an xprof file name: `<host>.xplane.pb[.gz]`.
fn file_host(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    for suffix in [".xplane.pb.gz", ".xplane.pb"] {
        if lower.ends_with(suffix) {
            return name[..name.len() - suffix.len()].to_owned();
        }
    }
    name
}

/// Natural order: runs of digits compared as numbers (`host2` before
/// `host10`), the rest as text.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a, b);
    loop {
        match (a.chars().next(), b.chars().next()) {
            (None, None) => return Ordering::Equal,
            (None, _) => return Ordering::Less,
            (_, None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let da = a.len() - a.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                let db = b.len() - b.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                let (na, nb) = (
                    a[..da].trim_start_matches('0'),
                    b[..db].trim_start_matches('0'),
                );
                let order = na.len().cmp(&nb.len()).then_with(|| na.cmp(nb));
                if order != Ordering::Equal {
                    return order;
                }
                (a, b) = (&a[da..], &b[db..]);
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(&y);
                }
                (a, b) = (&a[x.len_utf8()..], &b[y.len_utf8()..]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_in_natural_order() {
        let mut hosts = vec!["host10", "host2", "host1", "a"];
        hosts.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(hosts, ["a", "host1", "host2", "host10"]);
        assert_eq!(natural_cmp("h007", "h7"), Ordering::Equal);
        assert_eq!(file_host(Path::new("d/tpu-3.xplane.pb.gz")), "tpu-3");
    }
}
