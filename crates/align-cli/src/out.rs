//! Everything the commands print on stdout goes through `outln!` and
//! `out!`, which return a [`StdoutError`] instead of panicking as
//! `println!` does: a closed pipe (`align-cli merge --json | head`) then
//! ends the run with status 0 and any other write error (a full disk,
//! `> /dev/full`) with status 2 and its cause ([`crate::exit::code`]).
//! Notes and warnings go to stderr through `errln!` and `err!`, which
//! never panic as `eprintln!` does when stderr itself cannot be written
//! (`2> /dev/full`): the run's outcome is its exit status.

use std::fmt;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Context;

/// Stdout could not be written.
#[derive(Debug)]
pub struct StdoutError(pub io::Error);

impl fmt::Display for StdoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("writing to stdout")
    }
}

impl std::error::Error for StdoutError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Write `text` to stdout and flush it.
pub fn write(text: &str) -> Result<(), StdoutError> {
    let mut stdout = io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(StdoutError)
}

/// Write `text` to stderr; a write error is dropped (stderr has nowhere
/// to report it, and the exit status still tells the outcome).
pub fn note(text: &str) {
    let mut stderr = io::stderr().lock();
    let _ = stderr
        .write_all(text.as_bytes())
        .and_then(|()| stderr.flush());
}

/// Flush whatever is still buffered on stdout (at the end of a run).
pub fn flush() -> Result<(), StdoutError> {
    io::stdout().lock().flush().map_err(StdoutError)
}

/// `println!` that returns `Result<(), StdoutError>`: `outln!("{x}")?;`.
macro_rules! outln {
    () => {
        $crate::out::write("\n")
    };
    ($($arg:tt)*) => {
        $crate::out::write(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` that returns `Result<(), StdoutError>`: `out!("{x}")?;`.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(&format!($($arg)*))
    };
}

/// `eprintln!` that cannot panic: `errln!("note: {x}");`.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::out::note(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that cannot panic.
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::out::note(&format!($($arg)*))
    };
}

/// Write a report to `path` (`-`: stdout) with `write`, atomically: a
/// report that cannot be written whole (a full disk) leaves no empty or
/// partial file behind.
pub fn write_report(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    if path == Path::new("-") {
        let mut out = std::io::stdout().lock();
        write(&mut out).context("writing to stdout")?;
        return Ok(out.flush().map_err(StdoutError)?);
    }
    // Atomically: a report that cannot be written whole (a full disk) leaves
    // no empty or partial file behind.
    let mut failure = None;
    xplane_proto::write_atomically(path, |file| {
        let mut out = BufWriter::new(file);
        if let Err(e) = write(&mut out) {
            failure = Some(e);
            return Err(std::io::Error::other("the report could not be written"));
        }
        out.flush()
    })
    // The writer's I/O error, not its own (which names the path again).
    .map_err(|e| failure.take().unwrap_or_else(|| e.into_io().into()))
    .with_context(|| format!("writing {}", path.display()))
}
