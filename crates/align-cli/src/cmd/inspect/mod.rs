//! `align-cli inspect FILE...`: what is in each XSpace file, plane by plane,
//! and what is wrong with it. Reads with the zero-copy reader, so files of
//! gigabytes need no more memory than their metadata.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context as _;

use crate::Global;
use crate::out::StdoutError;
use xplane_proto::inspect::{FileReport, scan_file};

mod kineto;

/// Arguments of `inspect`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// XSpace files (`*.xplane.pb`, or gzip-compressed `*.xplane.pb.gz`),
    /// PyTorch profiler traces, or run folders (every profiler trace
    /// below them, as `merge` finds them).
    #[arg(required = true, value_name = "FILE|FOLDER")]
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
    let files = expand(&args.files, global)?;
    for path in print_all(&files, args.json, global)? {
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

/// One file to inspect.
enum Inspected {
    /// An XSpace trace (a node's, or merged).
    XSpace(PathBuf),
    /// A PyTorch profiler trace, with its rank as the discovery tells it.
    Kineto(PathBuf, u32, trace_align::NodeOrigin),
}

/// The files to inspect: a folder's traces as every command finds them;
/// a file given, XSpace as it is (merged traces included), else read as
/// a one-trace run (what is not a profiler trace is refused, saying what
/// it is).
fn expand(paths: &[PathBuf], global: &Global) -> anyhow::Result<Vec<Inspected>> {
    let mut files = Vec::new();
    for path in paths {
        let pytorch = path.is_file()
            && trace_align::TraceFormat::detect(path).ok()
                == Some(trace_align::TraceFormat::Kineto);
        // XSpace, or unreadable: what the XSpace reader says of it.
        if !pytorch && !path.is_dir() {
            files.push(Inspected::XSpace(path.clone()));
            continue;
        }
        let run = crate::cmd::run_args::find(&[path], None, global.quiet)?;
        for (&node, f) in &run.nodes {
            files.push(match trace_align::TraceFormat::detect(&f.trace)? {
                trace_align::TraceFormat::XSpace => Inspected::XSpace(f.trace.clone()),
                trace_align::TraceFormat::Kineto => {
                    Inspected::Kineto(f.trace.clone(), node.get(), f.origin)
                }
            });
        }
    }
    Ok(files)
}

/// Print every file's report; the files with a problem of [`REFUSED`].
fn print_all<'a>(
    files: &'a [Inspected],
    json: bool,
    global: &Global,
) -> anyhow::Result<Vec<&'a PathBuf>> {
    let mut out = BufWriter::new(io::stdout().lock());
    let mut reports = Vec::new();
    let mut pytorch = Vec::new();
    let mut refused = Vec::new();
    for file in files {
        let path = match file {
            Inspected::XSpace(path) => path,
            Inspected::Kineto(path, rank, from) => {
                let report = kineto::read(path, *rank, *from)
                    .with_context(|| format!("cannot inspect {}", path.display()))?;
                if json {
                    pytorch.push(report);
                } else {
                    out.write_all(kineto::text(&report).as_bytes())
                        .and_then(|()| out.flush())
                        .map_err(StdoutError)?;
                }
                continue;
            }
        };
        let report =
            scan_file(path).with_context(|| format!("cannot inspect {}", path.display()))?;
        if report
            .planes
            .iter()
            .any(|p| p.problems.iter().any(|x| REFUSED.contains(&x.kind)))
        {
            refused.push(path);
        }
        if json {
            reports.push(report);
        } else {
            crate::render::inspect::write_text(&mut out, &report, global)
                .and_then(|()| out.flush())
                .map_err(StdoutError)?;
        }
    }
    if json {
        // Through a struct, not `json!`: absolute picoseconds need i128.
        #[derive(serde::Serialize)]
        struct Output<'a> {
            files: &'a [FileReport],
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            pytorch: &'a [kineto::KinetoReport],
        }
        let output = Output {
            files: &reports,
            pytorch: &pytorch,
        };
        serde_json::to_writer_pretty(&mut out, &output).map_err(|e| StdoutError(e.into()))?;
        writeln!(out).map_err(StdoutError)?;
    }
    out.flush().map_err(StdoutError)?;
    Ok(refused)
}
