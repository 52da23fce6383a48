//! Exit codes and error reports.

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

/// Exit code of a run whose validation exceeded its threshold.
pub const VALIDATION_FAILED: u8 = 1;
/// Exit code for bad input or usage.
pub const BAD_INPUT: u8 = 2;

/// A validation ran to the end and its result exceeded the threshold the
/// user set; the process exits with [`VALIDATION_FAILED`] (1) rather than
/// [`BAD_INPUT`] (2). Return it (wrapped in `anyhow::Error`) from a
/// subcommand after printing the report.
#[derive(Debug)]
#[allow(dead_code)] // constructed by the validating subcommands
pub struct ValidationFailed {
    /// What exceeded which threshold, for the `error:` line.
    pub what: String,
}

impl fmt::Display for ValidationFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "validation failed: {}", self.what)
    }
}

impl std::error::Error for ValidationFailed {}

/// The exit code of a failed run: success for a closed stdout pipe (the
/// reader, such as `head`, has what it wanted), 1 for [`ValidationFailed`],
/// 2 for everything else.
pub fn code(err: &anyhow::Error) -> ExitCode {
    if is_broken_pipe(err) {
        ExitCode::SUCCESS
    } else if err.downcast_ref::<ValidationFailed>().is_some() {
        ExitCode::from(VALIDATION_FAILED)
    } else {
        ExitCode::from(BAD_INPUT)
    }
}

/// A closed pipe, as an I/O error or inside a JSON writer's error.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        let io = cause.downcast_ref::<io::Error>().map(io::Error::kind);
        let json = cause
            .downcast_ref::<serde_json::Error>()
            .and_then(serde_json::Error::io_error_kind);
        io.or(json) == Some(io::ErrorKind::BrokenPipe)
    })
}

/// Print the whole error chain to stderr (`error: ...`, then one
/// `caused by: ...` per cause; every error of the workspace prints only
/// itself, never its cause) and return the exit code.
pub fn report(err: &anyhow::Error) -> ExitCode {
    if !is_broken_pipe(err) {
        let mut stderr = io::stderr().lock();
        let _ = writeln!(stderr, "error: {err}");
        for cause in err.chain().skip(1) {
            let _ = writeln!(stderr, "caused by: {cause}");
        }
    }
    code(err)
}

/// Print a command-line parse failure (or `--help`/`--version`) and return
/// its exit code: 0 for help and version, 2 for a usage error.
pub fn usage(err: &clap::Error) -> ExitCode {
    let _ = err.print();
    if err.use_stderr() {
        ExitCode::from(BAD_INPUT)
    } else {
        ExitCode::SUCCESS
    }
}
