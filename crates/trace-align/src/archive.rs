//! A run written as Perfetto's multi-machine archive (`*.tar`): every
//! node's aligned trace as its own Perfetto trace, on a machine of its own,
//! and a `perfetto_manifest` that says how their clocks relate.
//!
//! A manifest relates two clocks by one constant offset and cannot say
//! that one drifts; the corrections fitted here have drift and segments.
//! So each member holds its node's trace already aligned onto the
//! reference node's clock (what `align --run-dir` writes), and the
//! manifest relates every member's clock to the reference member's with
//! offset 0. What was fitted is recorded in the manifest's `attributes`.

use std::collections::BTreeMap;
use std::path::Path;

use clock_model::NodeId;
use collective_check::NodeSource;
use perfetto_export::archive::{Attribute, ClockName, MANIFEST_NAME, Manifest, ManifestFile};
use serde::Serialize;

use crate::discover::RunFiles;
use crate::each::OutputLayout;
use crate::error::{Result, RunError};
use crate::format::TraceFormat;
use crate::outcome::MergeOutcome;
use crate::write::{Output, RunSettings};

/// One member of a Perfetto archive: a node's aligned trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ArchiveMember {
    /// The node (a PyTorch run's rank).
    pub node: NodeId,
    /// Its name in the archive (`node<N>.pftrace`, `rank<N>.pftrace`).
    pub name: String,
    /// The machine the manifest puts it on.
    pub machine: String,
    /// Its size, bytes.
    pub bytes: u64,
}

/// The clock every member's events are on: an export's absolute epoch ns.
const CLOCK: ClockName = ClockName::Realtime;

impl RunFiles {
    /// Every node aligned on its own ([`RunFiles::write`] to
    /// [`Output::each_node`], in a temporary folder beside `output`), each
    /// exported as a Perfetto trace, and all of them with their manifest
    /// in one TAR at `output`, which appears complete or not at all.
    pub(crate) fn write_archive(
        &self,
        output: &Output,
        settings: &RunSettings,
    ) -> Result<MergeOutcome> {
        let path = output.path();
        let traces = self.traces();
        let inputs: Vec<&Path> = traces.iter().map(|(_, t)| t.as_path()).collect();
        crate::check_output(path, &inputs, &[".tar"])?;
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .map_or("archive".into(), |n| n.to_string_lossy());
        let staging =
            safe_temp::TempDir::in_dir(folder, &name).map_err(|e| RunError::CreateDir {
                path: folder.to_path_buf(),
                source: e.into_io(),
            })?;
        let format = self.format()?;
        let each = Output::each_node(staging.path(), OutputLayout::SameNames);
        let mut outcome = self.write_with_progress(&each, settings, |_| {})?;
        let word = match format {
            TraceFormat::XSpace => "node",
            TraceFormat::Kineto => "rank",
        };
        let export_error = |source| RunError::Export {
            path: path.to_path_buf(),
            source: Box::new(source),
        };
        let mut exports = Vec::with_capacity(outcome.outputs.len());
        let mut members = Vec::with_capacity(outcome.outputs.len());
        let mut summary = perfetto_export::Summary::default();
        for (&node, file) in &outcome.outputs {
            let (space, host) = node_space(format, node, file)?;
            let input = perfetto_export::Input {
                bytes: &space,
                path: file,
                node: NodeSource::Given(node),
            };
            let mut trace = Vec::new();
            let format = perfetto_export::Format::Perfetto { gzip: false };
            let options = perfetto_export::Options::default();
            let exported = perfetto_export::write_format(&[input], format, &options, &mut trace)
                .map_err(export_error)?;
            summary.add(&exported);
            let machine = match host.filter(|h| !h.is_empty()) {
                Some(host) => format!("{host} ({word} {node})"),
                None => format!("{word} {node}"),
            };
            members.push(ArchiveMember {
                node,
                name: format!("{word}{node}.pftrace"),
                machine,
                bytes: trace.len() as u64,
            });
            exports.push(trace);
        }
        let manifest = manifest(&members, settings.align.reference_node, &outcome);
        let json = manifest.to_json();
        let mut entries: Vec<(&str, &[u8])> = vec![(MANIFEST_NAME, json.as_bytes())];
        entries.extend(
            members
                .iter()
                .zip(&exports)
                .map(|(m, t)| (m.name.as_str(), t.as_slice())),
        );
        let staged = perfetto_export::archive::stage_tar(path, &entries).map_err(export_error)?;
        staged.persist(path).map_err(|e| RunError::Write {
            path: path.to_path_buf(),
            source: e.into_io(),
        })?;
        drop(staging);
        outcome.output = path.to_path_buf();
        outcome.outputs = BTreeMap::new();
        outcome.export = Some(summary);
        outcome.archive = members;
        Ok(outcome)
    }
}

/// The manifest of `members`: each on its machine, the reference node's
/// member (else the first) the timeline, every other member's clock
/// related to it with offset 0 (they are aligned already); what was
/// fitted as `trace_align.*` attributes.
fn manifest(members: &[ArchiveMember], reference: NodeId, outcome: &MergeOutcome) -> Manifest {
    let mut manifest = Manifest::new();
    let Some(timeline) = members
        .iter()
        .find(|m| m.node == reference)
        .or(members.first())
    else {
        return manifest;
    };
    manifest.pin_trace_time(&timeline.name, CLOCK);
    for m in members {
        let file = ManifestFile::on_machine(&m.name, &m.machine);
        manifest.files.push(if m.name == timeline.name {
            file
        } else {
            file.synced_to(&timeline.name, CLOCK, 0)
        });
    }
    let mut attribute = |key: String, value: Attribute| {
        manifest
            .attributes
            .insert(format!("trace_align.{key}"), value);
    };
    attribute(
        "reference_node".into(),
        Attribute::Integer(i64::from(timeline.node.get())),
    );
    let source = serde_json::to_value(outcome.clock_source)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    attribute("clock_source".into(), Attribute::Text(source));
    attribute(
        "clock_reason".into(),
        Attribute::Text(outcome.clock_reason.to_string()),
    );
    attribute(
        "aligned".into(),
        Attribute::Text(
            "each file is already on the reference node's clock; offset 0 relates them".into(),
        ),
    );
    for d in &outcome.nodes {
        if let Some(c) = d.correction {
            attribute(
                format!("node{}.correction_ns", d.node_id),
                Attribute::Text(format!("{}..{}", c.min_ns, c.max_ns)),
            );
        }
    }
    for n in outcome.collective_clocks.iter().flat_map(|c| &c.nodes) {
        let member = members.iter().find(|m| m.node == n.node);
        let Some(member) = member else { continue };
        let key = member.name.trim_end_matches(".pftrace");
        attribute(
            format!("{key}.offset_at_run_start_ns"),
            Attribute::Integer(n.offset_at_run_start_ns),
        );
        if let Some(first) = n.segments.first() {
            attribute(
                format!("{key}.drift_ppb"),
                Attribute::Integer(first.drift_ppb),
            );
        }
        attribute(
            format!("{key}.segments"),
            Attribute::Integer(n.segments.len() as i64),
        );
    }
    manifest
}

/// A node's aligned trace as XSpace: the file mapped, or converted.
enum NodeBytes {
    Mapped(xplane_proto::FileBytes),
    Converted(Vec<u8>),
}

impl std::ops::Deref for NodeBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            NodeBytes::Mapped(bytes) => bytes,
            NodeBytes::Converted(bytes) => bytes,
        }
    }
}

/// A node's aligned trace as XSpace bytes, and its host's name.
fn node_space(
    format: TraceFormat,
    node: NodeId,
    file: &Path,
) -> Result<(NodeBytes, Option<String>)> {
    match format {
        TraceFormat::XSpace => {
            let bytes = crate::node::open(file)?;
            let host = bytes
                .view()
                .hostnames()
                .next()
                .and_then(|h| h.ok())
                .map(str::to_owned);
            Ok((NodeBytes::Mapped(bytes), host))
        }
        TraceFormat::Kineto => {
            let kineto = |source| RunError::Kineto { source };
            let source = kineto_trace::TraceFile::open(file).map_err(kineto)?;
            let trace = source.parse().map_err(kineto)?;
            let (space, _) = kineto_trace::to_xspace(&trace, node.get()).map_err(kineto)?;
            let bytes = xplane_proto::encode_xspace(&space).map_err(RunError::write(file))?;
            Ok((
                NodeBytes::Converted(bytes),
                space.hostnames.first().cloned(),
            ))
        }
    }
}
