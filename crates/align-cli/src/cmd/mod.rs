//! One module per subcommand, each with its `Args` and `run`.

pub mod align;
#[cfg(feature = "synth")]
pub mod bench;
pub mod clock;
pub mod cluster;
pub mod collectives;
#[cfg(feature = "synth")]
pub mod demo;
pub mod export;
pub mod inspect;
pub mod merge;
pub mod nodes;
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

/// Refuse to write `output` unless [`trace_align::check_output`] passes it
/// for a command that reads `inputs` and writes a name ending in one of
/// `suffixes` (empty: any), into a folder that exists: every command that
/// writes one file checks it here before it reads or writes anything.
pub fn check_output(
    output: &std::path::Path,
    inputs: &[std::path::PathBuf],
    suffixes: &[&str],
) -> anyhow::Result<()> {
    let inputs: Vec<&std::path::Path> = inputs.iter().map(std::path::PathBuf::as_path).collect();
    trace_align::check_output(output, &inputs, suffixes)?;
    Ok(trace_align::check_output_folder(output)?)
}

/// The one check of a command's traces ([`trace_align::check_traces`]),
/// empty traces accepted when `allow_empty`; their format.
pub fn check_traces<P: AsRef<std::path::Path>>(
    traces: &[P],
    allow_empty: bool,
) -> anyhow::Result<trace_align::TraceFormat> {
    Ok(trace_align::check_traces(
        traces,
        trace_align::TraceRules {
            allow_empty,
            walked: false,
        },
    )?)
}
