//! One node of a run, from its trace to its aligned planes and its
//! collectives before and after, in one read of the trace.

use std::path::Path;

use alignment_core::{
    NodeAligner, NodeClocks, NodeDiagnostics, NodeInput, PlaneOutput, PlaneSource, PlaneWritten,
};
use collective_check::{Capture, Extraction, NodeSource, Retime, append_retimed};
use xplane_proto::{FileBytes, LineView, PlaneView, XSpaceWriter};

use crate::capture::{AsAligned, CollectiveTap, CollectiveTaps, OnHostClock};
use crate::error::{Result, RunError};
use crate::plan::Plan;

/// A node whose clocks are built: what is needed to align it, without its
/// trace mapped (so a run maps one trace at a time).
pub(crate) struct PreparedNode<'p> {
    pub input: &'p NodeInput,
    pub clocks: NodeClocks,
    /// The trace's own session start, epoch ns.
    pub session_start_ns: i128,
}

impl Plan {
    /// Build one node's clocks from its trace and the offsets.
    pub(crate) fn prepare<'p>(&self, input: &'p NodeInput) -> Result<PreparedNode<'p>> {
        self.prepare_from(input, &open(&input.trace)?)
    }

    /// Build one node's clocks from its trace `bytes`, already open.
    pub(crate) fn prepare_from<'p>(
        &self,
        input: &'p NodeInput,
        bytes: &FileBytes,
    ) -> Result<PreparedNode<'p>> {
        let (mut clocks, session_start_ns) =
            self.clocks
                .node_clocks(input, &bytes.view(), &self.options)?;
        clocks.repair = self.repair_map(input.node_id);
        Ok(PreparedNode {
            input,
            clocks,
            session_start_ns,
        })
    }
}

/// Map a trace.
pub(crate) fn open(path: &Path) -> Result<FileBytes> {
    FileBytes::open(path).map_err(RunError::Trace)
}

/// A node's collectives as recorded and as aligned.
#[derive(Default)]
pub(crate) struct NodeCollectives {
    pub before: Extraction,
    pub after: Extraction,
}

/// What a node's aligning walk captures besides its aligned planes.
#[derive(Clone, Copy)]
pub(crate) struct WalkCaptures<'s> {
    /// The collectives as recorded and as aligned, read with these options.
    pub validation: Option<&'s collective_check::Options>,
    /// The collectives on the node's own host clock (the evidence of the
    /// probe check), read with these options.
    pub host_clock: Option<&'s collective_check::Options>,
    /// The line buffers the aligners of a run share.
    pub buffers: &'s xplane_proto::BufferPool,
}

/// What a node's aligning walk gave besides its planes.
pub(crate) struct Walked {
    pub diagnostics: NodeDiagnostics,
    pub written: Vec<PlaneWritten>,
    /// With [`WalkCaptures::validation`].
    pub collectives: Option<NodeCollectives>,
    /// With [`WalkCaptures::host_clock`].
    pub host_clock: Option<Extraction>,
}

/// Retimes collectives exactly as the aligner maps their events.
pub(crate) struct AlignedTimes<'n, 'a>(pub &'n NodeAligner<'a>);

impl Retime for AlignedTimes<'_, '_> {
    fn retime(&self, plane: &PlaneView<'_>, line: &LineView<'_>, abs_ps: i128) -> i128 {
        self.0.retime(plane, line, abs_ps)
    }
}

impl PreparedNode<'_> {
    /// Align the node's trace `bytes` into `writer`, each plane placed by
    /// `place`, and take what `captures` asks for from the same walk.
    /// `output_start_ns` is the output's session start.
    pub(crate) fn align_into<W: xplane_proto::BufferSink + Send>(
        &self,
        bytes: &FileBytes,
        options: &alignment_core::AlignOptions,
        output_start_ns: i128,
        writer: &mut XSpaceWriter<W>,
        place: impl FnMut(&PlaneSource<'_, '_>) -> PlaneOutput + Send,
        captures: WalkCaptures<'_>,
    ) -> Result<Walked> {
        let node = self.input.node_id;
        let mut writing = NodeAligner::with_clocks(
            &self.input.trace,
            bytes.view(),
            self.clocks.clone(),
            self.session_start_ns,
            options,
            Some(output_start_ns),
        )
        .map_err(RunError::align(node))?;
        writing.share_buffers(captures.buffers);
        let host = match captures.host_clock {
            Some(_) => Some(self.host_clock_aligner(bytes, options)?),
            None => None,
        };
        let collectives_err = |source| RunError::Collectives { node, source };
        let source = NodeSource::Given(node);
        let (mut mine, mut on_host) = (Extraction::new(), Extraction::new());
        let capture = |check, out| {
            Capture::new(bytes, &self.input.trace, source, check, out).map_err(collectives_err)
        };
        let validation = match captures.validation {
            Some(check) => Some(CollectiveTap::new(capture(check, &mut mine)?, AsAligned)),
            None => None,
        };
        let host_tap = match (captures.host_clock, host.as_ref()) {
            (Some(check), Some(host)) => Some(CollectiveTap::new(
                capture(check, &mut on_host)?,
                OnHostClock(host),
            )),
            _ => None,
        };
        let mut taps = CollectiveTaps(validation, host_tap);
        let written = writing
            .write_tapped(writer, place, &mut taps)
            .map_err(RunError::align(node))?;
        let CollectiveTaps(validation, host_tap) = taps;
        let moved = validation.map(finish).transpose();
        let host_moved = host_tap.map(finish).transpose();
        let (moved, host_moved) = (
            moved.map_err(collectives_err)?,
            host_moved.map_err(collectives_err)?,
        );
        let collectives = moved.map(|moved| {
            let mut c = NodeCollectives::default();
            append_retimed(mine, &moved, &mut c.before, &mut c.after);
            c
        });
        let host_clock = host_moved.map(|moved| {
            let (mut recorded, mut retimed) = (Extraction::new(), Extraction::new());
            append_retimed(on_host, &moved, &mut recorded, &mut retimed);
            retimed
        });
        Ok(Walked {
            diagnostics: writing.into_diagnostics(),
            written,
            collectives,
            host_clock,
        })
    }

    /// The aligner that maps the node onto its own host clock (no offset,
    /// no repair) and its own session start, as the planning's read of the
    /// collectives maps them.
    fn host_clock_aligner<'b>(
        &self,
        bytes: &'b FileBytes,
        options: &alignment_core::AlignOptions,
    ) -> Result<NodeAligner<'b>> {
        let node = self.input.node_id;
        let (clocks, session_start_ns) = NodeClocks::with_offset(
            self.input,
            &bytes.view(),
            clock_model::OffsetMap::Identity,
            options,
        )
        .map_err(RunError::align(node))?;
        NodeAligner::with_clocks(
            &self.input.trace,
            bytes.view(),
            clocks,
            session_start_ns,
            options,
            Some(session_start_ns),
        )
        .map_err(RunError::align(node))
    }
}

/// The moved times of a finished capture, or the first error of its scan.
fn finish<M>(
    tap: CollectiveTap<'_, '_, M>,
) -> std::result::Result<
    Vec<(collective_check::TimePs, collective_check::TimePs)>,
    collective_check::Error,
> {
    match tap.error {
        Some(e) => Err(e),
        None => Ok(tap.capture.finish()),
    }
}
