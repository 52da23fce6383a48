//! `align-cli inspect FILE...`: what is in each XSpace file, plane by plane,
//! and what is wrong with it. Reads with the zero-copy reader, so files of
//! gigabytes need no more memory than their metadata.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context as _;

use crate::Global;
use crate::out::StdoutError;
use xplane_proto::inspect::{FileReport, scan_file};

/// Arguments of `inspect`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// XSpace files (`*.xplane.pb`, or gzip-compressed `*.xplane.pb.gz`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print one JSON document (`{"files": [...]}`) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Inspect every file in order; the first unreadable file stops the run
/// with an error naming it (after the files before it were printed).
/// Every file read is printed whole, problems included; then a file with
/// a problem that every other command refuses (a negative duration) is
/// that command's error, the same verdict (exit status 2) and message.
pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    for path in print_all(&args, global)? {
        let rules = trace_align::TraceRules {
            allow_empty: true,
            walked: false,
        };
        trace_align::check_traces(&[path], rules)?;
    }
    Ok(())
}

/// The problems `inspect` lists that every other command refuses.
const REFUSED: [&str; 1] = ["negative_duration"];

/// Print every file's report; the files with a problem of [`REFUSED`].
fn print_all<'a>(args: &'a Args, global: &Global) -> anyhow::Result<Vec<&'a PathBuf>> {
    let mut out = BufWriter::new(io::stdout().lock());
    let mut reports = Vec::new();
    let mut refused = Vec::new();
    for path in &args.files {
        let report =
            scan_file(path).with_context(|| format!("cannot inspect {}", path.display()))?;
        if report
            .planes
            .iter()
            .any(|p| p.problems.iter().any(|x| REFUSED.contains(&x.kind)))
        {
            refused.push(path);
        }
        if args.json {
            reports.push(report);
        } else {
            crate::render::inspect::write_text(&mut out, &report, global)
                .and_then(|()| out.flush())
                .map_err(StdoutError)?;
        }
    }
    if args.json {
        // Through a struct, not `json!`: absolute picoseconds need i128.
        #[derive(serde::Serialize)]
        struct Output<'a> {
            files: &'a [FileReport],
        }
        serde_json::to_writer_pretty(&mut out, &Output { files: &reports })
            .map_err(|e| StdoutError(e.into()))?;
        writeln!(out).map_err(StdoutError)?;
    }
    out.flush().map_err(StdoutError)?;
    Ok(refused)
}
