//! From a run's files to what will be done: every node's inputs, the
//! reference node, the clock evidence, the policies.

use std::path::{Path, PathBuf};

use alignment_core::{AlignOptions, NodeInput, OffsetsFile};

use crate::clocks::{ClockEvidence, ClockReason, ClockSource};
use crate::discover::{OFFSETS_FILE_NAME, RunFiles};
use crate::error::{Result, RunError};

/// An alignment of a whole run, checked and ready to execute: every input
/// read that can be read before the traces (the offsets file), every node
/// id cross-checked.
#[derive(Debug, Clone)]
pub struct Plan {
    /// One input per node, by node id.
    pub nodes: Vec<NodeInput>,
    /// The clock evidence: probe offsets, or corrections estimated from
    /// the collectives.
    pub clocks: ClockEvidence,
    /// Why that evidence.
    pub clock_reason: ClockReason,
    /// The policies; `options.reference_node` is the global clock.
    pub options: AlignOptions,
}

impl RunFiles {
    /// Plan the alignment of this run with `options`: reads the offsets
    /// file and checks it against the traces (every listed node has a
    /// trace; every trace's node is listed, unless passed through), and
    /// that the reference node has a trace.
    pub fn plan(&self, options: &AlignOptions) -> Result<Plan> {
        self.plan_with(options, ClockSource::Auto)
    }

    /// Plan the alignment with the clock evidence `source`: the probe
    /// offsets (checked against the traces), or corrections estimated from
    /// the collectives (which reads every trace's collectives now); `Auto`
    /// takes the probes when the run has an offsets file.
    pub fn plan_with(&self, options: &AlignOptions, source: ClockSource) -> Result<Plan> {
        if self.nodes.is_empty() {
            return Err(RunError::NoTraces);
        }
        self.check_formats()?;
        let have = || self.nodes.keys().copied().collect::<Vec<_>>();
        if !self.nodes.contains_key(&options.reference_node) {
            return Err(RunError::ReferenceWithoutTrace {
                node: options.reference_node,
                have: have(),
            });
        }
        let nodes: Vec<NodeInput> = self
            .nodes
            .iter()
            .map(|(&node_id, files)| NodeInput {
                node_id,
                trace: files.trace.clone(),
                snapshots: files.snapshots.clone(),
                ..Default::default()
            })
            .collect();
        let collectives = |nodes: Vec<NodeInput>, clock_reason| {
            let estimate = crate::clocks::from_collectives(&nodes, options)?;
            Ok(Plan {
                nodes,
                clocks: ClockEvidence::Collectives(Box::new(estimate)),
                clock_reason,
                options: options.clone(),
            })
        };
        match (source, &self.offsets) {
            (ClockSource::Collectives, _) => return collectives(nodes, ClockReason::Asked),
            (ClockSource::Auto, None) => return collectives(nodes, ClockReason::NoOffsetsFile),
            _ => {}
        }
        let path = self.offsets.clone().ok_or_else(|| RunError::NoOffsets {
            path: self.offsets_folder().join(OFFSETS_FILE_NAME),
        })?;
        let offsets = OffsetsFile::read(&path).map_err(RunError::Offsets)?;
        if let Some(&node) = offsets.nodes.keys().find(|n| !self.nodes.contains_key(n)) {
            return Err(RunError::OffsetsNodeWithoutTrace {
                path,
                node,
                have: have(),
            });
        }
        if !options.pass_through_without_offsets
            && let Some(&node) = self.nodes.keys().find(|n| !offsets.nodes.contains_key(n))
        {
            return Err(RunError::NodeNotInOffsets { path, node });
        }
        if source == ClockSource::Auto
            && !options.pass_through_without_offsets
            && let Some(node) = node_without_anchors(&offsets, &nodes)
        {
            return collectives(nodes, ClockReason::NoUsableProbeRows { node });
        }
        let clock_reason = match source {
            ClockSource::Auto => ClockReason::ProbeOffsets,
            _ => ClockReason::Asked,
        };
        Ok(Plan {
            nodes,
            clocks: ClockEvidence::Probes(offsets),
            clock_reason,
            options: options.clone(),
        })
    }

    /// The folder the traces are in (for naming a missing offsets file).
    fn offsets_folder(&self) -> PathBuf {
        self.nodes
            .values()
            .next()
            .and_then(|f| f.trace.parent())
            .map(PathBuf::from)
            .unwrap_or_default()
    }
}

/// A node (not node 0, whose clock the offsets are measured against) that
/// no row of the offsets file gives an anchor.
fn node_without_anchors(offsets: &OffsetsFile, nodes: &[NodeInput]) -> Option<u32> {
    let rows: Vec<_> = offsets.rows.iter().map(|(_, r)| *r).collect();
    nodes
        .iter()
        .map(|n| n.node_id)
        .filter(|&n| n != alignment_core::OFFSETS_BASE_NODE)
        .find(|&n| {
            matches!(
                clock_model::OffsetAnchors::from_rows(&rows, n, alignment_core::OFFSETS_BASE_NODE),
                Err(clock_model::ClockError::NoOffsetAnchors { .. })
            )
        })
}

impl Plan {
    /// Fail with [`RunError::OutputIsInput`] when `output` is one of the
    /// run's inputs (a trace, a snapshots file, the offsets file), so that
    /// no command writes over the data it reads.
    pub fn check_output(&self, output: &Path) -> Result<()> {
        let offsets = match &self.clocks {
            ClockEvidence::Probes(o) => Some(o.path.as_path()),
            ClockEvidence::Collectives(_) => None,
        };
        let inputs = self
            .nodes
            .iter()
            .flat_map(|n| std::iter::once(n.trace.as_path()).chain(n.snapshots.as_deref()))
            .chain(offsets);
        for input in inputs {
            if crate::each::same_file(output, input) {
                return Err(RunError::OutputIsInput {
                    path: output.to_path_buf(),
                });
            }
        }
        Ok(())
    }

    /// Fail with [`RunError::ReferenceWithoutTrace`] unless the reference
    /// node has an input (a plan built by hand may lack it).
    pub(crate) fn check_reference(&self) -> Result<()> {
        let reference = self.options.reference_node;
        match self.nodes.iter().any(|n| n.node_id == reference) {
            true => Ok(()),
            false => Err(self.no_reference()),
        }
    }

    /// The error of a plan whose reference node has no input.
    pub(crate) fn no_reference(&self) -> RunError {
        RunError::ReferenceWithoutTrace {
            node: self.options.reference_node,
            have: self.nodes.iter().map(|n| n.node_id).collect(),
        }
    }

    /// The nodes in merge order: the reference first, then by node id.
    pub fn merge_order(&self) -> Vec<&NodeInput> {
        let mut order: Vec<&NodeInput> = self.nodes.iter().collect();
        order.sort_by_key(|n| (n.node_id != self.options.reference_node, n.node_id));
        order
    }
}
