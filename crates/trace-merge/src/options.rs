//! What to merge and how.

use std::path::PathBuf;

use clock_model::NodeId;
/// One node's trace. The node id is the caller's (from the job's rank or the
/// offsets header), never the position in the input list.
#[derive(Debug, Clone)]
pub struct MergeInput {
    /// The node (machine) this trace came from; unique among the inputs.
    pub node_id: NodeId,
    /// The node's XSpace file (plain, or gzip when named `.gz`).
    pub path: PathBuf,
    /// The node's hostname; when `None`, the first entry of the file's
    /// XSpace `hostnames` field is used.
    pub hostname: Option<String>,
}

impl MergeInput {
    /// An input with no hostname override and no diagnostics.
    pub fn new(node_id: NodeId, path: impl Into<PathBuf>) -> Self {
        MergeInput {
            node_id,
            path: path.into(),
            hostname: None,
        }
    }
}

/// The default [`MergeOptions::gpu_id_stride`].
pub const DEFAULT_GPU_ID_STRIDE: u32 = 100;

/// How to merge.
///
/// Plane ids of drawn planes: GPU `k` of node `n` gets id `n * stride + k`;
/// the host plane of a non-reference node gets `n * stride + stride - 1`. So
/// every node owns the block `[n * stride, (n + 1) * stride)`, ids never
/// collide for any number of nodes, and GPU ordinals must be below
/// `stride - 1`.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// The node whose `/host:CPU` plane stays the host plane and whose
    /// session start is the merged trace's time base. `None`: the smallest
    /// node id.
    pub reference_node: Option<NodeId>,
    /// Size of each node's block of plane ids; at least 2.
    pub gpu_id_stride: u32,
    /// Where to write the merge summary. `None`: `<output name>.metadata.json`
    /// in the output's folder.
    pub summary_path: Option<PathBuf>,
}

impl Default for MergeOptions {
    fn default() -> Self {
        MergeOptions {
            reference_node: None,
            gpu_id_stride: DEFAULT_GPU_ID_STRIDE,
            summary_path: None,
        }
    }
}
