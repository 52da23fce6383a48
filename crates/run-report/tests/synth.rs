//! The report of a simulated run: 4 nodes of 2 GPUs, 2 kernels per stream.

use run_report::{Report, ReportOptions};
use trace_align::RunFiles;
use trace_synth::{Straggler, SynthConfig, synthesize};

/// The report of a simulated run of `steps` steps, with `straggler` slow
/// on purpose when given.
pub fn report_of(steps: u32, straggler: Option<Straggler>) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let config = SynthConfig {
        nodes: 4,
        gpus_per_node: 2,
        steps,
        kernels_per_stream: 2,
        straggler,
        ..SynthConfig::default()
    };
    synthesize(&config, dir.path()).unwrap();
    let run = RunFiles::discover(dir.path()).unwrap();
    Report::build(&run, &ReportOptions::default()).unwrap()
}
