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
#[cfg(feature = "synth")]
pub mod synth;
pub mod validate;

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
