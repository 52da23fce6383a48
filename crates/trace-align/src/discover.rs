//! What a run is made of: one trace per node, optional snapshot files, and
//! the probe offsets file, found in a run folder or given one by one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clock_model::NodeId;
use serde::Serialize;

use crate::error::{Result, RunError};
use crate::format::TraceFormat;

/// The name of the probe offsets file in a run folder.
pub const OFFSETS_FILE_NAME: &str = "round_offsets.jsonl";

/// One node's files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeFiles {
    /// Its trace.
    pub trace: PathBuf,
    /// Its snapshot pairs file (`SnapshotPairs` protobuf or JSONL), when
    /// not embedded in the trace.
    pub snapshots: Option<PathBuf>,
}

/// The files of a run. Node ids are the traces' (`node<N>`/`rank<N>` in
/// the file name, or given), never positions in a list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RunFiles {
    /// Node id → its files.
    pub nodes: BTreeMap<NodeId, NodeFiles>,
    /// The probe offsets file, when the run has one.
    pub offsets: Option<PathBuf>,
    /// Trace-like files of the run folder that were left out: no node id in
    /// the name (an earlier merged trace, say).
    pub ignored: Vec<PathBuf>,
}

impl RunFiles {
    /// Find the traces (`*.xplane.pb[.gz]`, `*.pt.trace.json[.gz]`, named
    /// `node<N>`/`rank<N>`),
    /// snapshot files (`*.snapshots.*`) and `round_offsets.jsonl` of a run
    /// folder. Aligned outputs (`*.aligned.*`) are not inputs.
    pub fn discover(dir: impl AsRef<Path>) -> Result<RunFiles> {
        let dir = dir.as_ref();
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(RunError::io(dir))?
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<_>>()
            .map_err(RunError::io(dir))?;
        paths.sort();
        let mut run = RunFiles::default();
        let mut snapshots = Vec::new();
        for path in paths {
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let is_trace = [
                ".xplane.pb",
                ".xplane.pb.gz",
                ".pt.trace.json",
                ".pt.trace.json.gz",
            ]
            .iter()
            .any(|ext| name.ends_with(ext))
                && !name.contains(".aligned.");
            let is_snapshots = name.contains(".snapshots.");
            if !is_trace && !is_snapshots {
                continue;
            }
            let Some(node) = node_from_name(&path) else {
                run.ignored.push(path);
                continue;
            };
            if is_trace {
                run.add_trace(node, path)?;
            } else {
                snapshots.push((node, path));
            }
        }
        for (node, path) in snapshots {
            run.set_snapshots(node, path)?;
        }
        let offsets = dir.join(OFFSETS_FILE_NAME);
        run.offsets = offsets.exists().then_some(offsets);
        Ok(run)
    }

    /// The run of these traces, each node id read from its file name.
    pub fn from_traces<P: AsRef<Path>>(traces: impl IntoIterator<Item = P>) -> Result<RunFiles> {
        let mut run = RunFiles::default();
        for trace in traces {
            let trace = trace.as_ref();
            let node = node_from_name(trace).ok_or_else(|| RunError::NoNodeId {
                path: trace.to_path_buf(),
            })?;
            run.add_trace(node, trace.to_path_buf())?;
        }
        Ok(run)
    }

    /// Add node `node`'s trace; a second trace for a node is an error.
    pub fn add_trace(&mut self, node: NodeId, trace: PathBuf) -> Result<()> {
        if let Some(first) = self.nodes.get(&node) {
            return Err(RunError::TwoTraces {
                node,
                first: first.trace.clone(),
                second: trace,
            });
        }
        self.nodes.insert(
            node,
            NodeFiles {
                trace,
                snapshots: None,
            },
        );
        Ok(())
    }

    /// Set node `node`'s trace, replacing what the run folder had.
    pub fn set_trace(&mut self, node: NodeId, trace: PathBuf) {
        self.nodes.insert(
            node,
            NodeFiles {
                trace,
                snapshots: None,
            },
        );
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
