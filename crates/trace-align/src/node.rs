//! One node of a run, from its trace to its aligned planes and its
//! collectives before and after, in one read of the trace.

use std::path::Path;

use alignment_core::{
    LineBuffers, NodeAligner, NodeClocks, NodeDiagnostics, NodeInput, PlaneOutput, PlaneSource,
    PlaneWritten,
};
use collective_check::{Capture, Extraction, NodeId, NodeSource, Retime, append_retimed};
use xplane_proto::{FileBytes, LineView, PlaneView, XSpaceWriter};

use crate::capture::CollectiveTap;
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
        let (mut clocks, session_start_ns) = self
            .clocks
            .node_clocks(input, &bytes.view(), &self.options)
            .map_err(RunError::align(input.node_id))?;
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

/// Retimes collectives exactly as the aligner maps their events.
pub(crate) struct AlignedTimes<'n, 'a>(pub &'n NodeAligner<'a>);

impl Retime for AlignedTimes<'_, '_> {
    fn retime(&self, plane: &PlaneView<'_>, line: &LineView<'_>, abs_ps: i128) -> i128 {
        self.0.retime(plane, line, abs_ps)
    }
}

impl PreparedNode<'_> {
    /// Align the node's trace `bytes` into `writer`, each plane placed by
    /// `place`, and (with `collectives`) read its collectives as recorded
    /// and as aligned from the same walk. `output_start_ns` is the
    /// output's session start.
    pub(crate) fn align_into<W: std::io::Write + std::io::Seek + Send>(
        &self,
        bytes: &FileBytes,
        options: &alignment_core::AlignOptions,
        output_start_ns: i128,
        writer: &mut XSpaceWriter<W>,
        place: impl FnMut(&PlaneSource<'_, '_>) -> PlaneOutput + Send,
        collectives: Option<&collective_check::Options>,
        buffers: &LineBuffers,
    ) -> Result<(NodeDiagnostics, Vec<PlaneWritten>, Option<NodeCollectives>)> {
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
        writing.share_buffers(buffers);
        let Some(check) = collectives else {
            let written = writing
                .write_placed(writer, place)
                .map_err(RunError::align(node))?;
            return Ok((writing.into_diagnostics(), written, None));
        };
        let collectives_err = |source| RunError::Collectives { node, source };
        let source = NodeSource::Given(NodeId(node.into()));
        let mut mine = Extraction::new();
        let capture = Capture::new(bytes, &self.input.trace, source, check, &mut mine)
            .map_err(collectives_err)?;
        let mut tap = CollectiveTap::new(capture);
        let written = writing
            .write_tapped(writer, place, &mut tap)
            .map_err(RunError::align(node))?;
        if let Some(source) = tap.error {
            return Err(collectives_err(source));
        }
        let moved = tap.capture.finish();
        let mut c = NodeCollectives::default();
        append_retimed(mine, &moved, &mut c.before, &mut c.after);
        Ok((writing.into_diagnostics(), written, Some(c)))
    }
}
