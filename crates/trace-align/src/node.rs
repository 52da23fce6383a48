//! One node of a run, from its trace to its aligned planes and its
//! collectives before and after, in one read of the trace.

use std::path::Path;

use alignment_core::{
    NodeAligner, NodeClocks, NodeDiagnostics, NodeInput, PlaneOutput, PlaneSource, PlaneWritten,
};
use collective_check::{Extraction, NodeId, NodeSource, Retime};
use xplane_proto::{FileBytes, LineView, PlaneView, XSpaceWriter};

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
    /// `place`; at the same time (on another core) read its collectives as
    /// recorded and as aligned. `output_start_ns` is the output's session
    /// start.
    pub(crate) fn align_into<W: std::io::Write + std::io::Seek + Send>(
        &self,
        bytes: &FileBytes,
        options: &alignment_core::AlignOptions,
        output_start_ns: i128,
        writer: &mut XSpaceWriter<W>,
        place: impl FnMut(&PlaneSource<'_, '_>) -> PlaneOutput + Send,
        collectives: Option<&collective_check::Options>,
    ) -> Result<(NodeDiagnostics, Vec<PlaneWritten>, Option<NodeCollectives>)> {
        let node = self.input.node_id;
        let aligner = |clocks: NodeClocks| {
            NodeAligner::with_clocks(
                &self.input.trace,
                bytes.view(),
                clocks,
                self.session_start_ns,
                options,
                Some(output_start_ns),
            )
            .map_err(RunError::align(node))
        };
        let mut writing = aligner(self.clocks.clone())?;
        let reading = aligner(self.clocks.clone())?;
        let (written, collectives) = rayon::join(
            || {
                writing
                    .write_placed(writer, place)
                    .map_err(RunError::align(node))
            },
            || {
                collectives
                    .map(|options| {
                        let mut c = NodeCollectives::default();
                        collective_check::extract_bytes_retimed(
                            bytes,
                            &self.input.trace,
                            NodeSource::Given(NodeId(node.into())),
                            options,
                            &AlignedTimes(&reading),
                            &mut c.before,
                            &mut c.after,
                        )
                        .map(|()| c)
                        .map_err(|source| RunError::Collectives { node, source })
                    })
                    .transpose()
            },
        );
        let written = written?;
        Ok((writing.into_diagnostics(), written, collectives?))
    }
}
