//! One node's trace aligned on its own, from the run's probe offsets:
//! what `align-cli align TRACE --offsets round_offsets.jsonl` does.

use std::path::{Path, PathBuf};

use alignment_core::{AlignNode, AlignOptions, NodeInput};

use crate::each::{AlignedNode, NewFolders, persist_all_recorded};
use crate::error::{Result, RunError};

/// One node's trace and what aligning it on its own takes.
#[derive(Debug, Clone)]
pub struct SingleNode {
    /// The node: its trace, snapshot pairs and overrides of the header.
    pub input: NodeInput,
    /// The run's probe offsets (`round_offsets.jsonl`).
    pub offsets: PathBuf,
    /// The reference node's trace, whose session start the output uses;
    /// `None`: this node's session start mapped onto the global clock.
    pub reference_trace: Option<PathBuf>,
}

impl SingleNode {
    /// Align the node's trace into `output`, with its statistics beside
    /// it ([`stats_beside`]): both appear together, or neither, and a
    /// folder made for them is removed again on failure. The offsets
    /// header's tracer start is checked against the trace unless the
    /// input overrides it.
    pub fn align(&self, output: &Path, options: &AlignOptions) -> Result<AlignedNode> {
        let input = &self.input;
        let stats = stats_beside(output);
        let inputs: Vec<&Path> = [Some(&input.trace), Some(&self.offsets)]
            .into_iter()
            .chain([input.snapshots.as_ref(), self.reference_trace.as_ref()])
            .flatten()
            .map(PathBuf::as_path)
            .collect();
        crate::check_output(output, &inputs, &[".xplane.pb", ".xplane.pb.gz"])?;
        crate::check_output(&stats, &inputs, &[])?;
        let checked = input
            .start_walltime_ns
            .is_none()
            .then_some((input.node_id, input.trace.as_path()));
        let offsets = crate::read_offsets(&self.offsets, checked)?;
        let base = self
            .reference_trace
            .as_deref()
            .map(session_start)
            .transpose()?;
        let made = NewFolders::create(output.parent())?;
        let mut node = AlignNode::new(input, &offsets).options(options);
        if let Some(base) = base {
            node = node.session_start_ns(base);
        }
        let (diagnostics, trace) = node
            .to_staged(output)
            .map_err(RunError::align(input.node_id))?;
        let staged = xplane_proto::write_temp(&stats, |f| {
            std::io::Write::write_all(f, diagnostics.to_json().as_bytes())
        })
        .map_err(RunError::write(&stats))?;
        // Recorded as this tool's outputs, so that a later `align --run-dir`
        // into the same folder may replace them.
        let dir = output
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        persist_all_recorded(vec![(trace, output.to_path_buf()), (staged, stats)], dir)?;
        made.keep();
        Ok(AlignedNode {
            output: output.to_path_buf(),
            diagnostics,
        })
    }
}

/// Session start of an XSpace trace, epoch ns.
pub(crate) fn session_start(path: &Path) -> Result<i128> {
    let bytes = xplane_proto::FileBytes::open(path).map_err(RunError::Trace)?;
    xplane_proto::session_start_ns_view(&bytes.view())
        .map_err(|e| RunError::Trace(bytes.wire_error(e)))
}

/// The statistics file written beside an aligned trace
/// (`X.xplane.pb` → `X.xplane.pb.alignment_stats.json`).
pub fn stats_beside(output: &Path) -> PathBuf {
    let name = output
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("aligned");
    output.with_file_name(format!("{name}.alignment_stats.json"))
}

/// Where a run folder's aligned traces go by default: `RUN-aligned`
/// beside the run folder `run` (after resolving `.`, `..` and links;
/// `aligned` for a folder without a name, such as `/`). Outside the run
/// folder, so that a second read of the run never takes them for inputs.
pub fn default_out_dir(run: &Path) -> PathBuf {
    let run = std::fs::canonicalize(run).unwrap_or_else(|_| run.to_path_buf());
    match run.file_name() {
        Some(name) => {
            let mut aligned = name.to_os_string();
            aligned.push("-aligned");
            run.with_file_name(aligned)
        }
        None => PathBuf::from("aligned"),
    }
}

/// The aligned copy of `trace` by default: its own name, in
/// [`default_out_dir`] of its folder.
pub fn default_output(trace: &Path) -> PathBuf {
    let dir = trace
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = trace.file_name().unwrap_or(std::ffi::OsStr::new("trace"));
    default_out_dir(dir).join(name)
}
