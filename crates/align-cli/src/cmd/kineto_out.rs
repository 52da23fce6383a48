//! A PyTorch (Kineto) run, converted to one XSpace, written as XSpace or
//! exported as Perfetto / Chrome trace JSON with its collectives' flows.

use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use perfetto_export::{Format, Input, Options, Packets, Summary, export_file_with};
use trace_align::KinetoSpace;

/// Where a converted Kineto run goes, by the output's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KinetoOut {
    /// `*.xplane.pb` (`*.xplane.pb.gz`: gzip).
    XSpace,
    /// Perfetto or Chrome trace JSON.
    Export(Format),
}

impl KinetoOut {
    /// The output a file name asks for (ASCII case-insensitive), if any.
    pub fn from_path(path: &Path) -> Option<KinetoOut> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        if name.ends_with(".xplane.pb") || name.ends_with(".xplane.pb.gz") {
            return Some(KinetoOut::XSpace);
        }
        Format::from_path(path).map(KinetoOut::Export)
    }
}

/// Write `run` to `output` as `out` asks, atomically (nothing is left
/// behind on an error). The export's summary, `None` for XSpace.
pub fn write(
    run: &KinetoSpace,
    out: KinetoOut,
    output: &Path,
    packets: Packets,
) -> anyhow::Result<Option<Summary>> {
    match out {
        KinetoOut::XSpace => {
            xplane_proto::write_xspace(output, &run.space)
                .with_context(|| format!("writing {}", output.display()))?;
            Ok(None)
        }
        KinetoOut::Export(_) => {
            let bytes = xplane_proto::encode_xspace(&run.space)?;
            let input = Input {
                bytes: &bytes,
                path: Path::new("the converted PyTorch traces"),
                node: collective_check::NodeSource::PlaneStat,
            };
            let mut options = Options::default();
            options.packets = packets;
            options.collectives = Some(run.collectives.clone());
            let summary = export_file_with(&[input], output, &options)
                .with_context(|| format!("exporting to {}", output.display()))?;
            Ok(Some(summary))
        }
    }
}

/// What the conversion carried and left out, over all ranks, in one line.
pub fn conversion_line(run: &KinetoSpace) -> String {
    let mut total = kineto_trace::XSpaceStats::default();
    for (_, s) in &run.ranks {
        total.add(s);
    }
    let mut line = format!(
        "converted {} ranks: {} complete events on {} lines of {} planes ({} with a correlation_id); not carried: {} instants, {} flow events, {} counter events, {} others",
        run.ranks.len(),
        total.events,
        total.lines,
        total.planes,
        total.correlated,
        total.instants,
        total.flow_events,
        total.counters,
        total.other
    );
    if run.unflowed > 0 {
        line += &format!(
            "; {} matched instances without a flow (their sides differ in name, e.g. send/recv)",
            run.unflowed
        );
    }
    line
}

/// The line an export or merge prints about what it wrote.
pub fn written_line(output: &Path, summary: Option<&Summary>, started: Instant) -> String {
    let size = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    let seconds = started.elapsed().as_secs_f64();
    match summary {
        None => format!("wrote {}: {size} bytes in {seconds:.2} s", output.display()),
        Some(s) => format!(
            "wrote {}: {} slices on {} tracks ({} extra for overlaps) of {} processes, {} collective flows, {} launch/kernel slices with a flow, {} happens-before violations marked; {size} bytes in {seconds:.2} s",
            output.display(),
            s.slices,
            s.tracks,
            s.extra_tracks,
            s.processes,
            s.collective_flows,
            s.correlated_slices,
            s.violations
        ),
    }
}
