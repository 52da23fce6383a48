//! The one guard every command runs on each file it is about to write.

use std::path::{Path, PathBuf};

use crate::each::same_file;
use crate::error::{Result, RunError};

/// Names that a run folder's discovery reads as a node's trace.
const TRACE_SUFFIXES: [&str; 4] = [
    ".xplane.pb",
    ".xplane.pb.gz",
    ".pt.trace.json",
    ".pt.trace.json.gz",
];

/// Check that the folder `output` would be written into exists, for a
/// command that writes one file and creates no folder: before the work, so
/// that a missing folder is not found only once everything is computed
/// ([`RunError::OutputFolderMissing`]). A bare name's folder is the
/// working folder.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// assert!(trace_align::check_output_folder(&dir.path().join("merged.pftrace")).is_ok());
/// assert!(trace_align::check_output_folder(&dir.path().join("new/merged.pftrace")).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_output_folder(output: &Path) -> Result<()> {
    let folder = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match std::fs::metadata(folder) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(RunError::OutputFolderMissing {
            path: output.to_path_buf(),
            folder: folder.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

/// Check that `output` may be written by a command that reads `inputs`
/// and writes the formats named by `suffixes` (`".xplane.pb"`,
/// `".json.gz"`, ...; empty: any name). Nothing is written; the first
/// rule broken is the error:
///
/// - an existing `output` must be a regular file (after following links):
///   a directory, device (`/dev/null`, `/dev/full`), FIFO or socket is
///   [`RunError::OutputNotAFile`] (an atomic write would rename a file
///   over it);
/// - `output` may not be one of `inputs` ([`RunError::OutputIsInput`]);
/// - the run folders are the folders of the inputs: `output` may not
///   replace any file in them, nor be a new trace there that the next
///   run of the folder would read as a node (a trace name with
///   `node<N>`/`rank<N>` in it; [`RunError::OutputInRunFolder`]);
/// - its name must end in one of `suffixes` ([`RunError::OutputFormat`]).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let trace = dir.path().join("run/node0.xplane.pb");
/// # std::fs::create_dir(dir.path().join("run"))?;
/// # std::fs::write(&trace, b"")?;
/// let out = dir.path().join("merged.xplane.pb");
/// assert!(trace_align::check_output(&out, &[&trace], &[".xplane.pb"]).is_ok());
/// assert!(trace_align::check_output(&trace, &[&trace], &[]).is_err());
/// assert!(trace_align::check_output(Path::new("/dev/null"), &[&trace], &[]).is_err());
/// assert!(trace_align::check_output(&out.with_extension("txt"), &[&trace], &[".xplane.pb"]).is_err());
/// # use std::path::Path;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_output(output: &Path, inputs: &[&Path], suffixes: &[&str]) -> Result<()> {
    if let Ok(meta) = std::fs::metadata(output)
        && !meta.is_file()
    {
        return Err(RunError::OutputNotAFile {
            path: output.to_path_buf(),
            kind: kind_of(&meta.file_type()),
        });
    }
    if inputs.iter().any(|input| same_file(output, input)) {
        return Err(RunError::OutputIsInput {
            path: output.to_path_buf(),
        });
    }
    if let Some(folder) = run_folder_of(output, inputs) {
        return Err(RunError::OutputInRunFolder {
            path: output.to_path_buf(),
            folder,
        });
    }
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if !suffixes.is_empty() && !suffixes.iter().any(|s| name.ends_with(s)) {
        return Err(RunError::OutputFormat {
            path: output.to_path_buf(),
            expected: suffixes.join(", "),
        });
    }
    Ok(())
}

/// Check that `dir` may take every node's output of a run: it must not
/// exist, or be an empty folder, or hold only files its
/// [`safe_temp::OutputRecord`] proves this tool wrote there and nobody
/// changed since ([`RunError::OutDirNotOurs`] names the first other
/// file). Outputs written into it are then recorded as they are placed,
/// so that the next run may replace them.
pub fn check_out_dir(dir: &Path) -> Result<()> {
    if let Ok(meta) = std::fs::metadata(dir)
        && !meta.is_dir()
    {
        return Err(RunError::OutputNotAFile {
            path: dir.to_path_buf(),
            kind: "not a folder",
        });
    }
    let record_error = |source| RunError::OutputRecord {
        path: dir.to_path_buf(),
        source,
    };
    let record = safe_temp::OutputRecord::read(dir).map_err(record_error)?;
    match record.strangers().map_err(record_error)?.into_iter().next() {
        Some(file) => Err(RunError::OutDirNotOurs {
            dir: dir.to_path_buf(),
            file,
            record: safe_temp::RECORD_FILE,
        }),
        None => Ok(()),
    }
}

/// The run folder that `output` would change: the input's folder that
/// holds it, when it exists there already or is named like a node's trace.
fn run_folder_of(output: &Path, inputs: &[&Path]) -> Option<PathBuf> {
    let parent = output.parent().filter(|p| !p.as_os_str().is_empty());
    let out_dir = std::fs::canonicalize(parent.unwrap_or(Path::new("."))).ok()?;
    let name = output.file_name()?.to_string_lossy().to_ascii_lowercase();
    let replaces = output.exists();
    // A name the folder's next run would read: a node's trace or
    // snapshots, or the offsets file.
    let node_named = (TRACE_SUFFIXES.iter().any(|s| name.ends_with(s))
        || name.ends_with(".snapshots.pb")
        || name.ends_with(".snapshots.jsonl"))
        && crate::node_from_name(output).is_some();
    let trace_named = node_named || name == "round_offsets.jsonl";
    if !replaces && !trace_named {
        return None;
    }
    inputs
        .iter()
        .filter_map(|input| {
            let dir = input.parent().filter(|p| !p.as_os_str().is_empty());
            std::fs::canonicalize(dir.unwrap_or(Path::new("."))).ok()
        })
        .find(|dir| *dir == out_dir)
}

/// What a non-regular file is, in words.
fn kind_of(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_char_device() || file_type.is_block_device() {
            return "a device";
        }
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_new_node_trace_in_the_run_folder_but_not_other_new_files() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("node1.xplane.pb");
        std::fs::write(&trace, b"x").unwrap();
        let new_trace = dir.path().join("node2.xplane.pb");
        let err = check_output(&new_trace, &[&trace], &[]).unwrap_err();
        assert!(matches!(err, RunError::OutputInRunFolder { .. }), "{err}");
        let report = dir.path().join("report.html");
        assert!(check_output(&report, &[&trace], &[".html"]).is_ok());
        // Discovery leaves a trace without a node id out of the run.
        let merged = dir.path().join("merged.xplane.pb");
        assert!(check_output(&merged, &[&trace], &[]).is_ok());
    }

    #[test]
    fn refuses_replacing_a_run_folder_file_it_does_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("node0.xplane.pb");
        let truth = dir.path().join("truth.bin");
        std::fs::write(&trace, b"x").unwrap();
        std::fs::write(&truth, b"x").unwrap();
        let err = check_output(&truth, &[&trace], &[]).unwrap_err();
        assert!(matches!(err, RunError::OutputInRunFolder { .. }), "{err}");
    }

    #[test]
    fn refuses_a_directory_and_a_device() {
        let dir = tempfile::tempdir().unwrap();
        let err = check_output(dir.path(), &[], &[]).unwrap_err();
        assert!(err.to_string().contains("a directory"), "{err}");
        let err = check_output(Path::new("/dev/full"), &[], &[]).unwrap_err();
        assert!(err.to_string().contains("a device"), "{err}");
    }
}
