//! Whose trace each file is, for the commands that take loose traces
//! (`validate`, `export`): the same rule and the same words in both.

use std::path::PathBuf;

use anyhow::bail;
use collective_check::{NodeId, node_id_from_path};

/// The node id of each trace: `given` (`--node-ids`, one per trace),
/// else the digits after `node`/`rank` in every name, else the file order
/// (said on stderr unless `quiet`, when there are several files).
pub fn node_ids(traces: &[PathBuf], given: &[NodeId], quiet: bool) -> anyhow::Result<Vec<NodeId>> {
    if !given.is_empty() {
        if given.len() != traces.len() {
            bail!(
                "--node-ids gives {} ids for {} traces",
                given.len(),
                traces.len()
            );
        }
        return Ok(given.to_vec());
    }
    if let Some(named) = traces.iter().map(node_id_from_path).collect() {
        return Ok(named);
    }
    if traces.len() > 1 && !quiet {
        errln!("note: not every file name has node<N>/rank<N>; node ids follow the file order");
    }
    Ok((0..).map(NodeId).take(traces.len()).collect())
}

/// Refuse `--node-ids` for PyTorch traces, which name their ranks.
pub fn refuse_for_kineto(given: &[NodeId]) -> anyhow::Result<()> {
    if !given.is_empty() {
        bail!("--node-ids is for XSpace traces; a PyTorch profiler trace names its rank");
    }
    Ok(())
}
