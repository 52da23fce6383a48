//! Whose trace each file is, for the commands that take loose traces
//! (`validate`, `export`): the one discovery of every command
//! ([`super::run_args::find`]), or one merged trace.

use std::path::{Path, PathBuf};

use anyhow::bail;
use collective_check::NodeId;
use trace_align::RunFiles;
use xplane_proto::{FileBytes, NODE_ID_STAT};

/// What a command that takes loose traces reads.
pub enum Read {
    /// One merged XSpace trace (each plane's node from its `node_id` stat).
    Merged(PathBuf),
    /// A run: one trace per node.
    Run(RunFiles),
}

impl Read {
    /// The traces read.
    pub fn paths(&self) -> Vec<PathBuf> {
        match self {
            Read::Merged(path) => vec![path.clone()],
            Read::Run(run) => run.nodes.values().map(|f| f.trace.clone()).collect(),
        }
    }
}

/// The traces of `paths` (traces and run folders): one merged XSpace
/// trace when `merged` allows it and the one path is one, else the run
/// through the one discovery of every command.
pub fn read_run(
    paths: &[PathBuf],
    session: Option<&str>,
    merged: bool,
    quiet: bool,
) -> anyhow::Result<Read> {
    if let [path] = paths
        && merged
        && path.is_file()
        && is_merged(path)?
    {
        return Ok(Read::Merged(path.clone()));
    }
    let run = super::run_args::find(paths, session, quiet)?;
    if run.nodes.is_empty() {
        bail!(
            "no profiler traces found in {} (every file left out is listed above)",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(Read::Run(run))
}

/// True when `path` is an XSpace trace with a `node_id` plane stat
/// (written by `merge`).
fn is_merged(path: &Path) -> anyhow::Result<bool> {
    if trace_align::TraceFormat::detect(path)? != trace_align::TraceFormat::XSpace {
        return Ok(false);
    }
    let file = FileBytes::open(path)?;
    let view = file.view();
    Ok(view
        .has_plane_stat(NODE_ID_STAT)
        .map_err(|e| file.wire_error(e))?)
}

/// The run's traces by node id: as the run tells them, or with the
/// `given` ids (`--node-ids`, one per trace, in the order of `paths`).
pub fn with_ids(
    run: &RunFiles,
    paths: &[PathBuf],
    given: &[NodeId],
) -> anyhow::Result<Vec<(NodeId, PathBuf)>> {
    if given.is_empty() {
        return Ok(run.traces());
    }
    if let Some(dir) = paths.iter().find(|p| p.is_dir()) {
        bail!(
            "{}: --node-ids gives the ids of trace files, one each, not of a folder's",
            dir.display()
        );
    }
    if given.len() != paths.len() {
        bail!(
            "--node-ids gives {} ids for {} traces",
            given.len(),
            paths.len()
        );
    }
    Ok(given.iter().copied().zip(paths.iter().cloned()).collect())
}

/// Refuse `--node-ids` for PyTorch traces, which name their ranks.
pub fn refuse_for_kineto(given: &[NodeId]) -> anyhow::Result<()> {
    if !given.is_empty() {
        bail!("--node-ids is for XSpace traces; a PyTorch profiler trace names its rank");
    }
    Ok(())
}
