//! One node's inputs, and its alignment from a file into a file or an
//! `XSpace` in memory.

use std::path::{Path, PathBuf};

use clock_model::NodeId;
use xplane_proto::{FileBytes, SpaceView, XSpaceFile, XSpaceWriter};

use super::NodeAligner;
use crate::diagnostics::NodeDiagnostics;
use crate::error::{AlignError, Result};
use crate::offsets::OffsetsFile;
use crate::options::AlignOptions;

/// One node's inputs. `None` fields are read from the files.
#[derive(Debug, Clone, Default)]
pub struct NodeInput {
    /// The node id (as in the offsets file).
    pub node_id: NodeId,
    /// Its XSpace trace.
    pub trace: PathBuf,
    /// A `SnapshotPairs` protobuf or JSONL file; `None`: the trace's
    /// embedded `/host:snapshots` plane.
    pub snapshots: Option<PathBuf>,
    /// Override `T_sess` (epoch ns).
    pub session_start_ns: Option<i128>,
    /// Override `S_w` (epoch ns).
    pub start_walltime_ns: Option<u64>,
    /// Override `S_g` (ns).
    pub start_gpu_ns: Option<u64>,
}

/// One node's alignment, set up step by step and run into a file or an
/// `XSpace` in memory:
///
/// ```no_run
/// # use alignment_core::{AlignNode, AlignOptions, NodeInput, OffsetsFile};
/// # fn f(input: &NodeInput, offsets: &OffsetsFile) -> alignment_core::Result<()> {
/// let options = AlignOptions::default();
/// let diagnostics = AlignNode::new(input, offsets)
///     .options(&options)
///     .session_start_ns(1_765_432_100_000_000_000) // the reference node's `T_sess`
///     .to_file("node1.aligned.xplane.pb".as_ref())?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug)]
#[must_use = "an alignment does nothing until run with `to_file` or `to_space`"]
pub struct AlignNode<'a> {
    input: &'a NodeInput,
    offsets: &'a OffsetsFile,
    options: Option<&'a AlignOptions>,
    output_session_start_ns: Option<i128>,
}

impl<'a> AlignNode<'a> {
    /// Align `input` with the probe `offsets`, under the default policies,
    /// onto the node's own session start mapped onto the global clock.
    pub fn new(input: &'a NodeInput, offsets: &'a OffsetsFile) -> Self {
        AlignNode {
            input,
            offsets,
            options: None,
            output_session_start_ns: None,
        }
    }

    /// Under `options`.
    pub fn options(mut self, options: &'a AlignOptions) -> Self {
        self.options = Some(options);
        self
    }

    /// With the output's session start `ns` (epoch ns): the reference
    /// node's `T_sess`, so that every node's output shares it.
    pub fn session_start_ns(mut self, ns: i128) -> Self {
        self.output_session_start_ns = Some(ns);
        self
    }

    fn aligner<'v>(&self, view: SpaceView<'v>) -> Result<NodeAligner<'v>> {
        let default = AlignOptions::default();
        NodeAligner::new(
            self.input,
            view,
            self.offsets,
            self.options.unwrap_or(&default),
            self.output_session_start_ns,
        )
    }

    /// Align the trace file `input.trace` into `out`, atomically: on any
    /// error nothing is written.
    pub fn to_file(&self, out: &Path) -> Result<NodeDiagnostics> {
        let (diagnostics, tmp) = self.to_staged(out)?;
        tmp.persist(out).map_err(|e| xplane_proto::Error::Io {
            path: out.to_path_buf(),
            source: e.into_io(),
        })?;
        Ok(diagnostics)
    }

    /// [`AlignNode::to_file`] up to the rename: the complete aligned trace
    /// in a temporary beside `out`, for the caller to put in place with
    /// the outputs that belong with it ([`safe_temp::persist_together`]);
    /// dropped, it is removed.
    pub fn to_staged(&self, out: &Path) -> Result<(NodeDiagnostics, safe_temp::TempFile)> {
        let bytes = FileBytes::open(&self.input.trace)?;
        let mut aligner = self.aligner(bytes.view())?;
        let mut file = XSpaceFile::create(out)?;
        aligner.write(file.writer())?;
        let (hostnames, errors, warnings) = aligner.space_strings()?;
        let tmp = file.finish(&hostnames, &errors, &warnings)?;
        Ok((aligner.into_diagnostics(), tmp))
    }

    /// Align `space`, held in memory; `input.trace` only names it in
    /// errors, and `input.snapshots` may still name a file.
    pub fn to_space(
        &self,
        space: &xplane_proto::XSpace,
    ) -> Result<(xplane_proto::XSpace, NodeDiagnostics)> {
        let encoded = xplane_proto::encode_xspace(space)?;
        let mut aligner = self.aligner(SpaceView::new(&encoded))?;
        let mut writer = XSpaceWriter::new(std::io::Cursor::new(Vec::new()));
        aligner.write(&mut writer)?;
        let (hostnames, errors, warnings) = aligner.space_strings()?;
        let out = writer.finish(&hostnames, &errors, &warnings)?.into_inner();
        let aligned = SpaceView::new(&out)
            .to_owned()
            .map_err(|e| AlignError::wire(&self.input.trace, &SpaceView::new(&out), e))?;
        Ok((aligned, aligner.into_diagnostics()))
    }
}
