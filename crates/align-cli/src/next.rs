//! The last line a command prints: what to do with what it wrote.

use std::path::Path;

use crate::cmd::align::Layout;
use crate::{ClusterCommand, Command, Global};

/// The line that tells what to do with the output of `command`, printed
/// after it succeeds; none under `--quiet` or `--json` (stdout is then
/// the JSON alone), nor for commands whose output is what they print.
pub fn step(command: &Command, global: &Global) -> Option<String> {
    if global.quiet {
        return None;
    }
    match command {
        Command::Merge(a) if !a.json => Some(view(&a.output)),
        Command::Align(a) if !a.json => Some(match &a.run_dir {
            Some(run) => {
                let out = a
                    .out_dir
                    .clone()
                    .unwrap_or_else(|| trace_align::default_out_dir(run));
                match a.layout {
                    Layout::Xprof => format!(
                        "next: `xprof --logdir {}` shows every node as a host of one run",
                        out.display()
                    ),
                    Layout::SameNames => format!(
                        "next: each node's aligned trace is in {} under its input's name: open one in its viewer,                          or give the folder to HTA's TraceAnalysis (PyTorch traces)",
                        out.display()
                    ),
                }
            }
            None => match &a.output {
                Some(out) => view(out),
                None => "next: open the aligned trace written above in its viewer".to_owned(),
            },
        }),
        Command::Export(a) => Some(view(&a.output)),
        Command::Report(a) if !a.json => {
            let out = a.output.as_deref().unwrap_or(Path::new("report.html"));
            Some(format!(
                "next: open {} in a web browser (one page, no network needed)",
                out.display()
            ))
        }
        Command::Cluster(ClusterCommand::Summarize(a)) | Command::Summarize(a) if !a.json => {
            Some(format!(
                "next: bring every node's summary together and run `align-cli cluster fit SUMMARY... -o clocks.json` \
                 ({} is this node's)",
                a.output.display()
            ))
        }
        Command::Cluster(ClusterCommand::Fit(a)) | Command::Fit(a) if !a.json => Some(format!(
            "next: on each node, `align-cli cluster apply TRACE --clocks {} -o ALIGNED.xplane.pb`",
            a.output.display()
        )),
        Command::Cluster(ClusterCommand::Apply(a)) | Command::Apply(a) if !a.json => {
            Some(view(&a.output))
        }
        _ => None,
    }
}

/// What to open `output` with, told from its name.
pub fn view(output: &Path) -> String {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let shown = output.display();
    let perfetto = [
        ".pftrace",
        ".perfetto-trace",
        ".pftrace.gz",
        ".perfetto-trace.gz",
    ];
    if name.ends_with(".tar") {
        format!(
            "next: open {shown} in Perfetto UI v58.2 or later (https://ui.perfetto.dev, Open trace file): one machine per node on one timeline"
        )
    } else if perfetto.iter().any(|s| name.ends_with(s)) {
        format!("next: open {shown} in Perfetto UI (https://ui.perfetto.dev, Open trace file)")
    } else if name.ends_with(".json") || name.ends_with(".json.gz") {
        format!("next: open {shown} in Perfetto UI (https://ui.perfetto.dev) or chrome://tracing")
    } else if name.ends_with(".xplane.pb") || name.ends_with(".xplane.pb.gz") {
        format!(
            "next: view {shown} with xprof (place it in LOGDIR/plugins/profile/RUN/, then `xprof --logdir LOGDIR`), \
             or `align-cli export {shown} -o run.pftrace` for Perfetto UI"
        )
    } else {
        format!("next: open {shown} in its viewer")
    }
}
