//! One entry point for a whole run: whatever its traces' format (XSpace
//! or PyTorch's Kineto JSON) and whatever the output (one XSpace, a
//! Perfetto trace, Chrome trace JSON, or every node's own trace in a
//! folder), aligned, checked and written by [`RunFiles::write`], with one
//! [`MergeOutcome`].

use std::path::{Path, PathBuf};

use alignment_core::AlignOptions;
use clock_model::NodeId;
use perfetto_export::Format;

use crate::discover::RunFiles;
use crate::each::OutputLayout;
use crate::error::{Result, RunError};
use crate::format::TraceFormat;
use crate::kineto::space::KinetoSpace;
use crate::merge::MergeSettings;
use crate::node_clock::ClockPolicy;
use crate::outcome::{KinetoMerge, MergeOutcome};

/// Where a run is written: a path and the format its name asks for
/// ([`Output::from_path`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    path: PathBuf,
    kind: OutputKind,
}

/// The format of an [`Output`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputKind {
    /// One merged XSpace (`*.xplane.pb`; gzip-compressed: `*.xplane.pb.gz`).
    XSpace,
    /// A Perfetto trace or Chrome trace JSON. From XSpace traces it is
    /// exported as the merge is written, with no merged XSpace on disk;
    /// PyTorch ranks merge into Chrome trace JSON as JSON, and into a
    /// Perfetto trace through XSpace.
    Export(Format),
    /// Every node's aligned trace, in its own format, in a folder laid out
    /// as the layout says ([`Output::each_node`]).
    EachNode(OutputLayout),
    /// Perfetto's multi-machine archive (`*.tar`): every node's aligned
    /// trace as a Perfetto trace on a machine of its own, and a
    /// `perfetto_manifest` relating their clocks
    /// ([`MergeOutcome::archive`] names the members).
    PerfettoArchive,
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
        ".tar",
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
    /// assert_eq!(out.kind(), &OutputKind::Export(Format::Perfetto { gzip: false }));
    /// assert_eq!(Output::from_path("merged.xplane.pb")?.kind(), &OutputKind::XSpace);
    /// assert_eq!(Output::from_path("run.tar")?.kind(), &OutputKind::PerfettoArchive);
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
        } else if name.ends_with(".tar") {
            OutputKind::PerfettoArchive
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

    /// Every node's aligned trace in the folder `dir`, laid out by
    /// `layout` (an xprof log folder for XSpace runs, or each under its
    /// input's name).
    pub fn each_node(dir: impl Into<PathBuf>, layout: OutputLayout) -> Output {
        Output {
            path: dir.into(),
            kind: OutputKind::EachNode(layout),
        }
    }

    /// An XSpace written at `path`, whatever its name.
    pub(crate) fn xspace(path: &Path) -> Output {
        Output {
            path: path.to_path_buf(),
            kind: OutputKind::XSpace,
        }
    }

    /// The file written (the folder, for [`OutputKind::EachNode`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its format.
    pub fn kind(&self) -> &OutputKind {
        &self.kind
    }

    /// Refuse [`MergeSettings::tracks`](crate::MergeSettings) here unless a
    /// run of `format` written here is an export that draws them: a
    /// Perfetto trace, or the Chrome trace JSON of an XSpace run (PyTorch
    /// ranks merge into JSON as JSON); else
    /// [`RunError::TracksWithoutExport`].
    pub fn check_draws_tracks(&self, format: TraceFormat) -> Result<()> {
        match self.kind {
            OutputKind::Export(Format::Perfetto { .. }) => Ok(()),
            OutputKind::Export(Format::ChromeJson { .. }) if format == TraceFormat::XSpace => {
                Ok(())
            }
            _ => Err(RunError::TracksWithoutExport {
                path: self.path.clone(),
            }),
        }
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
    /// - [`OutputKind::EachNode`]: every node's own trace aligned into the
    ///   folder (XSpace: [`crate::Plan::align_each_as`]; PyTorch: each
    ///   rank's JSON with only its times moved), the files named in
    ///   [`MergeOutcome::outputs`]; `progress` is not called.
    /// - [`OutputKind::PerfettoArchive`]: every node aligned as for
    ///   [`OutputKind::EachNode`], each exported as a Perfetto trace, and
    ///   all of them with their `perfetto_manifest` in one TAR (the
    ///   members in [`MergeOutcome::archive`]); `progress` is not called.
    ///
    /// The output (and its summary) appear complete, or not at all.
    pub fn write_with_progress(
        &self,
        output: &Output,
        settings: &RunSettings,
        progress: impl FnMut(NodeId),
    ) -> Result<MergeOutcome> {
        let mut outcome = self.write_as(output, settings, progress)?;
        outcome.run = Some(self.clone());
        Ok(outcome)
    }

    /// [`RunFiles::write_with_progress`], before the run is put in the outcome.
    fn write_as(
        &self,
        output: &Output,
        settings: &RunSettings,
        progress: impl FnMut(NodeId),
    ) -> Result<MergeOutcome> {
        let format = self.format()?;
        if !settings.merge.tracks.is_empty() {
            output.check_draws_tracks(format)?;
        }
        if output.kind == OutputKind::PerfettoArchive {
            return self.write_archive(output, settings);
        }
        if let OutputKind::EachNode(layout) = &output.kind {
            return match format {
                TraceFormat::XSpace => self.write_each(output.path(), layout, settings),
                TraceFormat::Kineto => self.write_each_rank(output.path(), layout, settings),
            };
        }
        match format {
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

    /// Every node of an XSpace run aligned into `dir` ([`Plan::align_each_as`]).
    fn write_each(
        &self,
        dir: &Path,
        layout: &OutputLayout,
        settings: &RunSettings,
    ) -> Result<MergeOutcome> {
        let plan = self.plan_clocks(&settings.align, &settings.clocks)?;
        let validate = settings.merge.validate;
        let each =
            plan.align_each_as(dir, layout, validate.then_some(&settings.merge.collectives))?;
        Ok(MergeOutcome {
            node_clocks: each.node_clocks,
            clock_warnings: each.clock_warnings,
            outputs: each
                .nodes
                .iter()
                .map(|n| (n.diagnostics.node_id, n.output.clone()))
                .collect(),
            nodes: each.nodes.into_iter().map(|n| n.diagnostics).collect(),
            repair: each.repair,
            before: each.before,
            after: each.after,
            ..MergeOutcome::new(
                dir.to_path_buf(),
                each.clock_source,
                each.clock_reason,
                each.collective_clocks,
            )
        })
    }

    /// Every rank of a PyTorch run rewritten into `dir` with its times
    /// moved ([`crate::align_kineto`]); an xprof layout is
    /// [`RunError::XprofForKineto`].
    fn write_each_rank(
        &self,
        dir: &Path,
        layout: &OutputLayout,
        settings: &RunSettings,
    ) -> Result<MergeOutcome> {
        if settings.clocks.repair.is_some() {
            return Err(RunError::KinetoRepair);
        }
        if *layout != OutputLayout::SameNames {
            return Err(RunError::XprofForKineto {
                path: dir.to_path_buf(),
            });
        }
        let reference = settings.align.reference_node;
        let ranks = crate::align_kineto(&self.traces(), reference, &settings.clocks, dir)?;
        Ok(MergeOutcome {
            outputs: ranks
                .ranks
                .iter()
                .map(|r| (r.rank, r.output.clone()))
                .collect(),
            before: Some(ranks.before),
            after: Some(ranks.after),
            kineto: Some(KinetoMerge {
                launch_lags: ranks.launch_lags,
                ranks: ranks.ranks,
                ..KinetoMerge::default()
            }),
            ..MergeOutcome::new(
                dir.to_path_buf(),
                ranks.clock_source,
                ranks.clock_reason,
                ranks.collective_clocks,
            )
        })
    }

    /// [`RunFiles::write_with_progress`] of a PyTorch run.
    fn write_kineto(&self, output: &Output, settings: &RunSettings) -> Result<MergeOutcome> {
        if settings.clocks.repair.is_some() {
            return Err(RunError::KinetoRepair);
        }
        let traces = self.traces();
        let reference = settings.align.reference_node;
        let clocks = &settings.clocks;
        let path = output.path();
        if let OutputKind::Export(Format::ChromeJson { .. }) = output.kind {
            return crate::merge_kineto(&traces, reference, clocks, path);
        }
        let inputs: Vec<&Path> = traces.iter().map(|(_, t)| t.as_path()).collect();
        crate::check_output(path, &inputs, Output::SUFFIXES)?;
        let (space, mut outcome) = crate::merge_kineto_space(&traces, reference, clocks)?;
        outcome.output = path.to_path_buf();
        outcome.export = space.write_with(
            output,
            perfetto_export::Packets::default(),
            &settings.merge.tracks,
        )?;
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
        self.write_with(output, packets, &[])
    }

    /// [`KinetoSpace::write`], the export adding `tracks` (the cross-node
    /// critical path, for one; an XSpace output holds none).
    pub fn write_with(
        &self,
        output: &Output,
        packets: perfetto_export::Packets,
        tracks: &[perfetto_export::NodeTrack],
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
        options.tracks = tracks.to_vec();
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
