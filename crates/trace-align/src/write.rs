//! One entry point for a whole run: whatever its traces' format (XSpace
//! or PyTorch's Kineto JSON) and whatever the output (one XSpace, a
//! Perfetto trace, Chrome trace JSON), aligned, merged, checked and
//! written by [`RunFiles::write`], with one [`MergeOutcome`].

use std::path::{Path, PathBuf};

use alignment_core::AlignOptions;
use clock_model::NodeId;
use perfetto_export::Format;

use crate::discover::RunFiles;
use crate::error::{Result, RunError};
use crate::format::TraceFormat;
use crate::kineto::space::KinetoSpace;
use crate::merge::MergeSettings;
use crate::node_clock::ClockPolicy;
use crate::outcome::MergeOutcome;

/// Where a run is written: a path and the format its name asks for
/// ([`Output::from_path`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    path: PathBuf,
    kind: OutputKind,
}

/// The format of an [`Output`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputKind {
    /// One merged XSpace (`*.xplane.pb`; gzip-compressed: `*.xplane.pb.gz`).
    XSpace,
    /// A Perfetto trace or Chrome trace JSON. From XSpace traces it is
    /// exported as the merge is written, with no merged XSpace on disk;
    /// PyTorch ranks merge into Chrome trace JSON as JSON, and into a
    /// Perfetto trace through XSpace.
    Export(Format),
}

impl Output {
    /// The names of the outputs a run is written to.
    pub const SUFFIXES: &'static [&'static str] = &[
        ".xplane.pb",
        ".xplane.pb.gz",
        ".pftrace",
        ".pftrace.gz",
        ".perfetto-trace",
        ".perfetto-trace.gz",
        ".json",
        ".json.gz",
    ];

    /// The output at `path`, its format told from its name (ASCII
    /// case-insensitive); a name ending in none of [`Output::SUFFIXES`]
    /// is [`RunError::OutputFormat`].
    ///
    /// ```
    /// use perfetto_export::Format;
    /// use trace_align::{Output, OutputKind};
    ///
    /// let out = Output::from_path("run.pftrace")?;
    /// assert_eq!(out.kind(), OutputKind::Export(Format::Perfetto { gzip: false }));
    /// assert_eq!(Output::from_path("merged.xplane.pb")?.kind(), OutputKind::XSpace);
    /// assert!(Output::from_path("run.txt").is_err());
    /// # Ok::<(), trace_align::RunError>(())
    /// ```
    pub fn from_path(path: impl Into<PathBuf>) -> Result<Output> {
        let path = path.into();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        let kind = if name.ends_with(".xplane.pb") || name.ends_with(".xplane.pb.gz") {
            OutputKind::XSpace
        } else if let Some(format) = Format::from_path(&path) {
            OutputKind::Export(format)
        } else {
            return Err(RunError::OutputFormat {
                path,
                expected: Output::SUFFIXES.join(", "),
            });
        };
        Ok(Output { path, kind })
    }

    /// An XSpace written at `path`, whatever its name.
    pub(crate) fn xspace(path: &Path) -> Output {
        Output {
            path: path.to_path_buf(),
            kind: OutputKind::XSpace,
        }
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its format.
    pub fn kind(&self) -> OutputKind {
        self.kind
    }
}

/// How a run is aligned and merged.
#[derive(Debug, Clone, Default)]
pub struct RunSettings {
    /// How each node is aligned (the reference node among them).
    pub align: AlignOptions,
    /// Where the clock corrections come from.
    pub clocks: ClockPolicy,
    /// How the nodes are merged and checked (XSpace runs).
    pub merge: MergeSettings,
}

impl RunFiles {
    /// Align every node of the run onto the reference node's clock and
    /// write it to `output`; see [`RunFiles::write_with_progress`].
    pub fn write(&self, output: &Output, settings: &RunSettings) -> Result<MergeOutcome> {
        self.write_with_progress(output, settings, |_| {})
    }

    /// Align every node of the run onto the reference node's clock, merge
    /// them into `output`, and check the collectives before and after;
    /// `progress` sees each node id once its events are written (XSpace
    /// runs).
    ///
    /// - XSpace traces: planned and merged as [`RunFiles::merge_checked`]
    ///   does (probe offsets, snapshot pairs and the collectives, as the
    ///   policy asks), written as XSpace or exported from the merge in
    ///   memory, with its summary beside it.
    /// - PyTorch (Kineto) traces: every rank's correction estimated from
    ///   its collectives; merged into Chrome trace JSON as JSON, or
    ///   converted to XSpace and written as it or exported. A repair
    ///   ([`ClockPolicy::repair`]) is [`RunError::KinetoRepair`].
    ///
    /// The output (and its summary) appear complete, or not at all.
    pub fn write_with_progress(
        &self,
        output: &Output,
        settings: &RunSettings,
        progress: impl FnMut(NodeId),
    ) -> Result<MergeOutcome> {
        match self.format()? {
            TraceFormat::XSpace => {
                let (_, outcome) = self.merge_checked(
                    &settings.align,
                    &settings.clocks,
                    output,
                    &settings.merge,
                    progress,
                )?;
                Ok(outcome)
            }
            TraceFormat::Kineto => self.write_kineto(output, settings),
        }
    }

    /// [`RunFiles::write_with_progress`] of a PyTorch run.
    fn write_kineto(&self, output: &Output, settings: &RunSettings) -> Result<MergeOutcome> {
        if settings.clocks.repair.is_some() {
            return Err(RunError::KinetoRepair);
        }
        let traces = self.traces();
        let reference = settings.align.reference_node;
        let estimator = settings.clocks.estimator;
        let path = output.path();
        if let OutputKind::Export(Format::ChromeJson { .. }) = output.kind {
            return crate::merge_kineto(&traces, reference, estimator, path);
        }
        let inputs: Vec<&Path> = traces.iter().map(|(_, t)| t.as_path()).collect();
        crate::check_output(path, &inputs, Output::SUFFIXES)?;
        let (space, mut outcome) = crate::merge_kineto_space(&traces, reference, estimator)?;
        outcome.output = path.to_path_buf();
        outcome.export = space.write(output, perfetto_export::Packets::default())?;
        Ok(outcome)
    }
}

impl KinetoSpace {
    /// Write the run to `output`: as XSpace, or exported with the flows
    /// and violation marks of its collectives (a Perfetto trace's packets
    /// stored as `packets` says), atomically. What the export wrote;
    /// `None` for XSpace.
    pub fn write(
        &self,
        output: &Output,
        packets: perfetto_export::Packets,
    ) -> Result<Option<perfetto_export::Summary>> {
        let path = output.path();
        if output.kind == OutputKind::XSpace {
            xplane_proto::write_xspace(path, &self.space).map_err(RunError::write(path))?;
            return Ok(None);
        }
        let bytes = xplane_proto::encode_xspace(&self.space).map_err(RunError::write(path))?;
        let input = perfetto_export::Input {
            bytes: &bytes,
            path: Path::new("the converted PyTorch traces"),
            node: collective_check::NodeSource::PlaneStat,
        };
        let mut options = perfetto_export::Options::default();
        options.packets = packets;
        options.collectives = Some(self.collectives.clone());
        let exported =
            perfetto_export::export_file_with(&[input], path, &options).map_err(|source| {
                RunError::Export {
                    path: path.to_path_buf(),
                    source: Box::new(source),
                }
            })?;
        Ok(Some(exported))
    }
}
