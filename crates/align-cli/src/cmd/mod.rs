//! One module per subcommand, each with its `Args` and `run`.

pub mod align;
#[cfg(feature = "synth")]
pub mod bench;
pub mod clock;
pub mod collectives;
#[cfg(feature = "synth")]
pub mod demo;
pub mod export;
pub mod inspect;
pub mod kineto_out;
pub mod merge;
pub mod policy;
pub mod report;
pub mod run_args;
#[cfg(feature = "synth")]
pub mod score;
#[cfg(unix)]
pub mod snapshots;
#[cfg(feature = "synth")]
pub mod synth;
pub mod validate;

/// The names of the trace formats `merge` and `export` write: XSpace,
/// Perfetto, Chrome trace JSON.
pub const TRACE_OUTPUTS: &[&str] = &[
    ".xplane.pb",
    ".xplane.pb.gz",
    ".pftrace",
    ".perfetto-trace",
    ".json",
    ".json.gz",
];

/// Refuse to write `output` unless [`trace_align::check_output`] passes it
/// for a command that reads `inputs` and writes a name ending in one of
/// `suffixes` (empty: any): every command checks each file it writes here
/// before it reads or writes anything.
pub fn check_output(
    output: &std::path::Path,
    inputs: &[std::path::PathBuf],
    suffixes: &[&str],
) -> anyhow::Result<()> {
    let inputs: Vec<&std::path::Path> = inputs.iter().map(std::path::PathBuf::as_path).collect();
    Ok(trace_align::check_output(output, &inputs, suffixes)?)
}

/// An error naming `path` when the trace holds no events (`--allow-empty`
/// lets it through).
pub fn refuse_empty(path: &std::path::Path) -> anyhow::Result<()> {
    if !trace_align::holds_events(path)? {
        anyhow::bail!(
            "{}: the trace holds no events; give --allow-empty to accept it",
            path.display()
        );
    }
    Ok(())
}
