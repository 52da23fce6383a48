//! The flags that select a run's files, shared by `merge` and `report`.

use std::path::PathBuf;

use anyhow::{Context, bail};
use collective_check::NodeId;
use trace_align::RunFiles;

/// A run folder and/or trace paths, with per-node overrides.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Node traces (`node<N>`/`rank<N>` in the name gives the node id),
    /// instead of or beside a run folder.
    #[arg(value_name = "TRACE")]
    pub paths: Vec<PathBuf>,
    /// A run folder: `node<N>.xplane.pb` / `rank<N>.xplane.pb` traces
    /// (or PyTorch `rank<N>.pt.trace.json[.gz]`), optional
    /// `node<N>.snapshots.pb|jsonl`, and `round_offsets.jsonl`.
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// A node's trace, `N=PATH` (repeatable); overrides what the run folder has for N.
    #[arg(long = "trace", value_name = "N=PATH", value_parser = parse_node_path)]
    pub traces: Vec<(NodeId, PathBuf)>,
    /// A node's snapshot pairs, `N=PATH` (repeatable).
    #[arg(long = "snapshots", value_name = "N=PATH", value_parser = parse_node_path)]
    pub snapshots: Vec<(NodeId, PathBuf)>,
    /// The offsets file; default: `round_offsets.jsonl` in the run folder.
    #[arg(long)]
    pub offsets: Option<PathBuf>,
}

/// Every input file of the run: traces, snapshot files, the offsets file.
pub fn inputs(run: &RunFiles) -> Vec<PathBuf> {
    run.nodes
        .values()
        .flat_map(|f| std::iter::once(f.trace.clone()).chain(f.snapshots.clone()))
        .chain(run.offsets.clone())
        .collect()
}

/// Refuse a node that `flag` gives twice.
fn once_per_node(flag: &str, given: &[(NodeId, PathBuf)]) -> anyhow::Result<()> {
    let mut seen = std::collections::BTreeMap::new();
    for (node, path) in given {
        if let Some(first) = seen.insert(*node, path) {
            bail!(
                "{flag} {node}={}: node {node} is given twice ({flag} {node}={} before); one node has one file",
                path.display(),
                first.display()
            );
        }
    }
    Ok(())
}

/// `N=PATH`.
fn parse_node_path(s: &str) -> Result<(NodeId, PathBuf), String> {
    let (n, p) = s.split_once('=').ok_or("expected N=PATH")?;
    let n = n.parse().map_err(|_| format!("'{n}' is not a node id"))?;
    Ok((n, PathBuf::from(p)))
}

impl RunArgs {
    /// The run's files: the run folder's, with the overrides given. A
    /// node given twice by one flag (`--trace 0=A --trace 0=B`) is an
    /// error: the last would otherwise win, and a run of two traces
    /// would be merged as one node.
    pub fn files(&self) -> anyhow::Result<RunFiles> {
        once_per_node("--trace", &self.traces)?;
        once_per_node("--snapshots", &self.snapshots)?;
        let mut run = match &self.run_dir {
            Some(dir) => RunFiles::discover(dir)?,
            None => RunFiles::default(),
        };
        for path in &self.paths {
            let node = trace_align::node_from_name(path).with_context(|| {
                format!(
                    "{}: cannot tell the node id from the file name (no node<N>/rank<N>); give --trace N=PATH",
                    path.display()
                )
            })?;
            run.add_trace(node, path.clone())?;
        }
        if let Some(offsets) = &self.offsets {
            run.offsets = Some(offsets.clone());
        }
        for (node, path) in &self.traces {
            run.set_trace(*node, path.clone());
        }
        for (node, path) in &self.snapshots {
            run.set_snapshots(*node, path.clone())
                .with_context(|| format!("--snapshots {node}={}", path.display()))?;
        }
        if run.nodes.is_empty() {
            bail!("no traces found; give trace paths, --run-dir or --trace N=PATH");
        }
        Ok(run)
    }
}
