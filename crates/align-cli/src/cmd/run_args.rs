//! The flags that select a run's files, shared by the commands that read
//! a run (`merge`, `report`, `collectives`), and the one way every
//! command finds its traces ([`find`]).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use collective_check::NodeId;
use trace_align::{FindOptions, RunFiles};

/// A run folder and/or trace paths, with per-node overrides.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Input")]
pub struct RunArgs {
    /// Traces or run folders. A folder gives every profiler trace below
    /// it (XSpace, PyTorch profiler JSON; told by content, the xprof
    /// layout `plugins/profile/<session>/` included); each trace's node is
    /// read from the file (`distributedInfo.rank`, `rank<N>`/`node<N>` in
    /// the name, the host).
    #[arg(value_name = "TRACE|FOLDER")]
    pub paths: Vec<PathBuf>,
    /// A run folder, as a folder among the paths; its
    /// `node<N>.snapshots.pb|jsonl` and `round_offsets.jsonl` are read too.
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// In an xprof log folder, the capture holding this session folder
    /// (default: the newest capture; the others are listed).
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
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

/// `N=PATH`.
fn parse_node_path(s: &str) -> Result<(NodeId, PathBuf), String> {
    let (n, p) = s.split_once('=').ok_or("expected N=PATH")?;
    let n = n.parse().map_err(|_| format!("'{n}' is not a node id"))?;
    Ok((n, PathBuf::from(p)))
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

/// The run of `paths` (traces and run folders) through the one discovery
/// of every command, with what it left out and how it told each node
/// said on stderr unless `quiet`.
pub fn find<P: AsRef<Path>>(
    paths: &[P],
    session: Option<&str>,
    quiet: bool,
) -> anyhow::Result<RunFiles> {
    let options = FindOptions {
        session: session.map(str::to_owned),
    };
    let run = RunFiles::find(paths, &options)?;
    if !quiet {
        say(&run);
    }
    Ok(run)
}

/// What the discovery left out, the captures it did not read, and a
/// trace told rank 0 for being the only one, on stderr.
pub fn say(run: &RunFiles) {
    // A capture left out is said once, below.
    let other_capture =
        |s: &&trace_align::Skipped| matches!(s.why, trace_align::NotTrace::OtherCapture { .. });
    for s in run.skipped.iter().filter(|s| !other_capture(s)) {
        errln!("note: left out {}: {}", s.path.display(), s.why);
    }
    if let Some(taken) = &run.capture {
        for other in &run.other_captures {
            errln!(
                "note: left out an older capture: session {} ({} traces); pick it with --session {}",
                other.sessions.join(", "),
                other.traces,
                other.sessions[0]
            );
        }
        if !run.other_captures.is_empty() || taken.sessions.len() > 1 {
            errln!(
                "note: read the capture of session {}",
                taken.sessions.join(", ")
            );
        }
    }
    for f in run.nodes.values() {
        if f.origin == trace_align::NodeOrigin::Lone {
            errln!(
                "note: {} names no rank; the one trace of the run is rank 0",
                f.trace.display()
            );
        }
    }
}

/// The node ↔ file ↔ rank/host table on stderr (runs of several nodes,
/// unless `quiet`).
pub fn say_table(run: &RunFiles, quiet: bool) {
    if !quiet && run.nodes.len() > 1 {
        err!("{}", run.table());
    }
}

impl RunArgs {
    /// The run's files: the run folder's and the paths', with the
    /// overrides given; what was left out said unless `quiet`. A node
    /// given twice by one flag (`--trace 0=A --trace 0=B`) is an error:
    /// the last would otherwise win, and a run of two traces would be
    /// merged as one node.
    pub fn files(&self, quiet: bool) -> anyhow::Result<RunFiles> {
        once_per_node("--trace", &self.traces)?;
        once_per_node("--snapshots", &self.snapshots)?;
        let found: Vec<&Path> = self
            .run_dir
            .iter()
            .chain(&self.paths)
            .map(PathBuf::as_path)
            .collect();
        let mut run = match found.is_empty() {
            true => RunFiles::default(),
            false => find(&found, self.session.as_deref(), quiet)?,
        };
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
            match found.as_slice() {
                [] => bail!("no traces found; give trace paths, run folders or --trace N=PATH"),
                _ => bail!(
                    "no profiler traces found in {} (every file left out is listed above)",
                    found
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
        Ok(run)
    }
}
