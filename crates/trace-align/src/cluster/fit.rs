//! Phase 2: every node's clock correction from the summaries alone, by
//! the plan's own choice (`auto`, probes or collectives, the cross-check),
//! into a [`RunClocks`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alignment_core::{AlignOptions, NodeInput, OFFSETS_BASE_NODE, OffsetsFile};
use clock_model::{NodeId, SnapshotMap, SnapshotPair};
use serde_json::value::RawValue;

use super::clocks_file::{
    CLOCKS_FORMAT, CLOCKS_VERSION, NodeEntry, RunClocks, SnapshotPieces, StoredCorrection,
};
use super::repair::StoredRepair;
use super::stored::{StoredMap, StoredOffsets};
use super::summary::{NodeSummary, OffsetsLine, SummaryFile};
use crate::clocks::{Correction, HostCollectives};
use crate::error::{Result, RunError};
use crate::format::TraceFormat;
use crate::node_clock::ClockPolicy;
use crate::plan::{OffsetsSource, Plan, PlanStep, plan_nodes};

/// Estimate every node's clock correction from `summaries` (one per node)
/// with `options` and `policy`: the same choice and estimate as
/// [`RunFiles::plan_clocks`](crate::RunFiles::plan_clocks) on the traces
/// they came from. With [`ClockPolicy::repair`] (XSpace runs), the repair
/// [`RunFiles::plan_clocks`](crate::RunFiles::plan_clocks) computes, from
/// the summaries' collectives (see `cluster/repair.rs`).
pub fn fit(
    summaries: &[SummaryFile],
    options: &AlignOptions,
    policy: &ClockPolicy,
) -> Result<RunClocks> {
    let by_node = by_node(summaries)?;
    let first = by_node.values().next().ok_or(RunError::NoTraces)?;
    let asked = serde_json::to_value(options).ok();
    for s in by_node.values() {
        agree(first, s)?;
        if serde_json::to_value(&s.summary.options).ok() != asked {
            return Err(RunError::OptionsDiffer {
                path: s.path.clone(),
            });
        }
    }
    let nodes: BTreeMap<NodeId, NodeSummary> = by_node
        .iter()
        .map(|(&n, s)| (n, s.summary.clone()))
        .collect();
    match first.summary.trace.format {
        TraceFormat::Kineto => fit_kineto(&nodes, options, policy),
        TraceFormat::XSpace => fit_xspace(&by_node, &nodes, options, policy),
    }
}

/// The summaries by node; two of one node are an error.
fn by_node(summaries: &[SummaryFile]) -> Result<BTreeMap<NodeId, &SummaryFile>> {
    let mut by_node: BTreeMap<NodeId, &SummaryFile> = BTreeMap::new();
    for s in summaries {
        if let Some(first) = by_node.insert(s.summary.node, s) {
            return Err(RunError::SummaryTwice {
                node: s.summary.node,
                first: first.path.clone(),
                second: s.path.clone(),
            });
        }
    }
    Ok(by_node)
}

/// Fail unless `s` can be of the run of `first`: the same trace format,
/// and the same probe offsets file (or none).
fn agree(first: &SummaryFile, s: &SummaryFile) -> Result<()> {
    let what = if s.summary.trace.format != first.summary.trace.format {
        "the trace format"
    } else if s.summary.offsets.as_ref().map(|o| &o.file)
        != first.summary.offsets.as_ref().map(|o| &o.file)
    {
        "the probe offsets file"
    } else {
        return Ok(());
    };
    Err(RunError::SummariesDisagree {
        path: s.path.clone(),
        other: first.path.clone(),
        what,
    })
}

/// A Kineto run: every rank from its collectives (a Kineto run is aligned
/// without a repair, as `align` aligns it).
fn fit_kineto(
    nodes: &BTreeMap<NodeId, NodeSummary>,
    options: &AlignOptions,
    policy: &ClockPolicy,
) -> Result<RunClocks> {
    let ranks: Vec<NodeId> = nodes.keys().copied().collect();
    let before = crate::kineto::joined_verified(nodes.values().map(|s| s.collectives.clone()))?;
    let reference = options.reference_node;
    let clocks = crate::kineto::clock::kineto_clocks_from(&ranks, &before, reference, policy)?;
    let entries = nodes
        .values()
        .map(|s| {
            let map = clocks.map(s.node)?;
            let report = clocks.report().and_then(|r| r.node(s.node));
            Ok(NodeEntry {
                node: s.node,
                trace: s.trace.clone(),
                snapshots_file: None,
                clock: serde_json::json!({ "node": s.node, "source": clocks.source() }),
                correction: match map {
                    clock_model::OffsetMap::Identity => StoredCorrection::Identity,
                    map => StoredCorrection::Estimated {
                        map: StoredMap::of(map, s.node)?,
                        identity: None,
                    },
                },
                estimate: report.map(raw).transpose()?,
                snapshot_map: None,
                repair: None,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RunClocks {
        format: CLOCKS_FORMAT.to_owned(),
        version: CLOCKS_VERSION,
        trace_format: TraceFormat::Kineto,
        options: options.clone(),
        clock_source: clocks.source(),
        clock_reason: json(&clocks.reason())?,
        clock_warnings: serde_json::Value::Array(Vec::new()),
        output_session_start_ns: 0,
        repair: None,
        nodes: entries,
    })
}

/// An XSpace run: the plan's choice on the summaries.
fn fit_xspace(
    files: &BTreeMap<NodeId, &SummaryFile>,
    nodes: &BTreeMap<NodeId, NodeSummary>,
    options: &AlignOptions,
    policy: &ClockPolicy,
) -> Result<RunClocks> {
    let reference = options.reference_node;
    if !nodes.contains_key(&reference) {
        return Err(RunError::ReferenceWithoutTrace {
            node: reference,
            have: nodes.keys().copied().collect(),
        });
    }
    let inputs: Vec<NodeInput> = files
        .iter()
        .map(|(&node_id, s)| NodeInput {
            node_id,
            trace: s.path.clone(),
            ..Default::default()
        })
        .collect();
    let offsets_file = nodes
        .values()
        .find_map(|s| s.offsets.as_ref())
        .map(|o| PathBuf::from(&o.file.file_name));
    let read = |path: &Path| run_offsets(path, nodes);
    let source = OffsetsSource {
        path: offsets_file,
        missing: PathBuf::from(crate::OFFSETS_FILE_NAME),
        read: &read,
    };
    let host = HostCollectives::Summaries(nodes);
    let plan = match plan_nodes(inputs, &source, options, policy, host)? {
        PlanStep::Planned(plan) => plan,
        PlanStep::Pending(inputs, pending) => {
            let evidence = host.evidence(&pending.read, options)?;
            let chosen = pending.decide(&inputs, &evidence, options)?;
            Plan::chosen(inputs, chosen, options)
        }
    };
    let repair = policy
        .repair
        .map(|bound| super::repair::repair_from_summaries(&plan, nodes, bound))
        .transpose()?;
    run_clocks(&plan, nodes, repair.as_ref())
}

/// The run's offsets file, joined from every summary's part and checked
/// as the file is.
fn run_offsets(path: &Path, nodes: &BTreeMap<NodeId, NodeSummary>) -> Result<OffsetsFile> {
    let parts: Vec<_> = nodes.values().filter_map(|s| s.offsets.as_ref()).collect();
    // Each summary holds its node's header entry.
    let header = parts
        .iter()
        .flat_map(|o| &o.nodes)
        .map(|n| (n.node_id, *n))
        .collect();
    let mut rows: Vec<&OffsetsLine> = parts.iter().flat_map(|o| &o.rows).collect();
    rows.sort_by_key(|r| r.line);
    let offsets =
        OffsetsFile::from_lines(path, header, rows.iter().map(|r| (r.line, r.text.as_str())))
            .map_err(RunError::Offsets)?;
    crate::plausible::check_probes(&offsets)?;
    Ok(offsets)
}

/// The clocks file of `plan`, with `repair` when it repairs.
fn run_clocks(
    plan: &Plan,
    nodes: &BTreeMap<NodeId, NodeSummary>,
    repair: Option<&collective_clock::Repair>,
) -> Result<RunClocks> {
    let options = &plan.options;
    let report = plan.clocks.estimate_report();
    let mut entries = Vec::with_capacity(nodes.len());
    let mut starts = Vec::new();
    for (s, clock) in nodes.values().zip(&plan.node_clocks) {
        let correction = plan.clocks.correction(s.node)?;
        if let Some(start) = s.trace.session_start_ns.filter(|&t| t != 0) {
            starts.push(correction.host_ns_to_global_ns(s.node, start, options)?);
        }
        entries.push(NodeEntry {
            node: s.node,
            trace: s.trace.clone(),
            snapshots_file: s.snapshots.as_ref().and_then(|p| p.file.clone()),
            clock: json(clock)?,
            correction: stored(correction, s.node, options.reference_node, nodes)?,
            estimate: report
                .as_ref()
                .and_then(|r| r.node(s.node))
                .map(raw)
                .transpose()?,
            snapshot_map: snapshot_pieces(s, options)?,
            repair: repair
                .and_then(|r| r.maps.get(&s.node))
                .map(StoredRepair::of),
        });
    }
    Ok(RunClocks {
        format: CLOCKS_FORMAT.to_owned(),
        version: CLOCKS_VERSION,
        trace_format: TraceFormat::XSpace,
        options: options.clone(),
        clock_source: plan.clocks.source(),
        clock_reason: json(&plan.clock_reason)?,
        clock_warnings: json(&plan.clock_warnings)?,
        output_session_start_ns: starts.into_iter().min().unwrap_or(0),
        repair: repair.map(|r| raw(&r.report)).transpose()?,
        nodes: entries,
    })
}

/// `correction` of `node` as stored: probe offsets keep the header entries
/// and rows of the node, the reference and node 0 (what its maps are built
/// from).
fn stored(
    correction: Correction<'_>,
    node: NodeId,
    reference: NodeId,
    nodes: &BTreeMap<NodeId, NodeSummary>,
) -> Result<StoredCorrection> {
    let part = |offsets: &OffsetsFile| {
        let keep = [node, reference, OFFSETS_BASE_NODE];
        let mut rows: Vec<OffsetsLine> = keep
            .iter()
            .filter_map(|n| nodes.get(n)?.offsets.as_ref())
            .flat_map(|o| o.rows.iter().cloned())
            .collect();
        rows.sort_by_key(|r| r.line);
        rows.dedup();
        StoredOffsets {
            file_name: super::identity::file_name(&offsets.path),
            // The header's nodes of the rows kept: the whole header in
            // every node's entry would grow with the square of the nodes.
            nodes: offsets
                .nodes
                .values()
                .filter(|n| keep.contains(&n.node_id))
                .copied()
                .collect(),
            rows,
        }
    };
    Ok(match correction {
        Correction::Probes(offsets) => StoredCorrection::Probes {
            offsets: part(offsets),
        },
        Correction::Estimated { map, identity } => StoredCorrection::Estimated {
            map: StoredMap::of(map, node)?,
            identity: identity.map(part),
        },
        Correction::Identity => StoredCorrection::Identity,
    })
}

/// The snapshot map of summary `s` under `options`, as its pieces.
fn snapshot_pieces(s: &NodeSummary, options: &AlignOptions) -> Result<Option<SnapshotPieces>> {
    let Some(snapshots) = s.snapshots.as_ref().filter(|p| !p.pairs.is_empty()) else {
        return Ok(None);
    };
    let pairs: Vec<SnapshotPair> = snapshots
        .pairs
        .iter()
        .map(|&[tracer, host]| SnapshotPair {
            tracer: clock_model::TracerTime::from_ps(tracer),
            host: clock_model::HostTime::from_ps(host),
        })
        .collect();
    let estimate = SnapshotMap::estimate(
        &pairs,
        options.snapshot_model,
        options.snapshot_extrapolation,
    )
    .map_err(|source| RunError::Align {
        node: s.node,
        source: alignment_core::AlignError::Clock {
            path: PathBuf::from(&s.trace.file.file_name),
            node: s.node,
            what: "snapshot map",
            source: Box::new(source),
        },
    })?;
    let forward = estimate.map.forward();
    Ok(Some(SnapshotPieces {
        model: estimate.choice.model,
        pairs: pairs.len(),
        extrapolation: forward.extrapolation(),
        anchors: forward
            .anchors()
            .map(|(t, h)| [t.as_ps(), h.as_ps()])
            .collect(),
    }))
}

/// `value` as JSON.
fn json(value: &impl serde::Serialize) -> Result<serde_json::Value> {
    serde_json::to_value(value).map_err(|source| RunError::Json {
        what: "the clock choice",
        source,
    })
}

/// `value` as its compact JSON text, kept verbatim.
fn raw(value: &impl serde::Serialize) -> Result<Box<RawValue>> {
    serde_json::value::to_raw_value(value).map_err(|source| RunError::Json {
        what: "the estimate's report",
        source,
    })
}
