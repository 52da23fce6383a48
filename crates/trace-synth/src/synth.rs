//! The entry point: write a whole synthetic run into a folder.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::SynthError;
use crate::config::SynthConfig;
use crate::node_file::{NodeRun, write_node};
use crate::offsets::write_offsets;
use crate::plan::Plan;
use crate::truth::TruthWriter;

/// File name of the offsets file in the output folder.
pub const OFFSETS_FILE: &str = "round_offsets.jsonl";
/// File name of the ground truth in the output folder.
pub const TRUTH_FILE: &str = "truth.bin";
/// File name of the configuration echo in the output folder.
pub const CONFIG_FILE: &str = "synth_config.json";

/// What [`synthesize`] wrote.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SynthRun {
    /// The output folder.
    pub out_dir: PathBuf,
    /// Per node: files, clock parameters, time bases, counts.
    pub nodes: Vec<NodeRun>,
    /// `round_offsets.jsonl`.
    pub offsets_path: PathBuf,
    /// `truth.bin`.
    pub truth_path: PathBuf,
    /// `synth_config.json`: the configuration used.
    pub config_path: PathBuf,
    /// Events with a truth record, over all nodes.
    pub events: u64,
    /// Probe rounds written.
    pub rounds: u64,
}

impl SynthRun {
    /// The trace files, in node order.
    pub fn xplane_paths(&self) -> Vec<PathBuf> {
        self.nodes.iter().map(|n| n.xplane_path.clone()).collect()
    }
}

/// Generate the run `config` describes into `out_dir` (created if missing):
/// `node<i>.xplane.pb`, `node<i>.snapshots.pb`, [`OFFSETS_FILE`],
/// [`TRUTH_FILE`] and [`CONFIG_FILE`], each noted in the folder's
/// [`safe_temp::OutputRecord`]. Streaming: memory does not grow with
/// the number of steps beyond a few bytes per step. The same config gives
/// byte-identical files.
pub fn synthesize(config: &SynthConfig, out_dir: impl AsRef<Path>) -> Result<SynthRun, SynthError> {
    config.validate()?;
    let out_dir = out_dir.as_ref();
    std::fs::create_dir_all(out_dir).map_err(SynthError::io(out_dir))?;
    let plan = Plan::new(config);
    let truth_path = out_dir.join(TRUTH_FILE);
    let json = serde_json::to_string_pretty(config).expect("config serialises");
    let mut truth = TruthWriter::create(
        &truth_path,
        i128::from(config.epoch_ns) * 1000,
        fnv1a(json.as_bytes()),
    )?;
    let nodes = (0..config.nodes)
        .map(|n| write_node(&plan, n, out_dir, &mut truth))
        .collect::<Result<Vec<_>, _>>()?;
    let events = truth.finish()?;
    let offsets_path = out_dir.join(OFFSETS_FILE);
    let rounds = write_offsets(&plan, &nodes, &offsets_path)?;
    let config_path = out_dir.join(CONFIG_FILE);
    xplane_proto::write_atomically(&config_path, |f| {
        std::io::Write::write_all(f, json.as_bytes())
    })?;
    // Noted as written here: a later `--force` removes only these.
    let written: Vec<PathBuf> = nodes
        .iter()
        .flat_map(|n| [n.xplane_path.clone(), n.snapshots_path.clone()])
        .chain([
            truth_path.clone(),
            offsets_path.clone(),
            config_path.clone(),
        ])
        .collect();
    safe_temp::OutputRecord::add(out_dir, &written)
        .map_err(|e| SynthError::io(out_dir)(e.into_io()))?;
    Ok(SynthRun {
        out_dir: out_dir.to_owned(),
        nodes,
        offsets_path,
        truth_path,
        config_path,
        events,
        rounds,
    })
}

/// FNV-1a, 64 bits: the run id, a hash of the configuration.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The files in `dir` that [`synthesize`] writes, whatever the run's size:
/// `node<i>.xplane.pb`, `node<i>.snapshots.pb` for any `i`,
/// [`OFFSETS_FILE`], [`TRUTH_FILE`] and [`CONFIG_FILE`]; sorted. A folder
/// that does not exist has none.
pub fn run_files_in(dir: impl AsRef<Path>) -> Result<Vec<PathBuf>, SynthError> {
    let dir = dir.as_ref();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(SynthError::io(dir)(e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(SynthError::io(dir))?;
        if entry.file_name().to_str().is_some_and(is_run_file) {
            found.push(entry.path());
        }
    }
    found.sort();
    Ok(found)
}

/// Whether `name` is one a synthetic run's files have.
fn is_run_file(name: &str) -> bool {
    if [OFFSETS_FILE, TRUTH_FILE, CONFIG_FILE].contains(&name) {
        return true;
    }
    let node = |rest: &str| {
        name.strip_prefix("node")
            .and_then(|s| s.strip_suffix(rest))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    node(".xplane.pb") || node(".snapshots.pb")
}

#[cfg(test)]
mod tests {
    use super::is_run_file;

    #[test]
    fn run_file_names() {
        for name in [
            "node0.xplane.pb",
            "node12.snapshots.pb",
            "truth.bin",
            "round_offsets.jsonl",
            "synth_config.json",
        ] {
            assert!(is_run_file(name), "{name}");
        }
        for name in [
            "node.xplane.pb",
            "node1.aligned.xplane.pb",
            "node1a.xplane.pb",
            "combined.xplane.pb",
            "notes.txt",
            "node1.xplane.pb.gz",
        ] {
            assert!(!is_run_file(name), "{name}");
        }
    }
}
