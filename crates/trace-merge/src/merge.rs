//! The merge: survey every input, then stream plane by plane into one
//! XSpace that appears only when complete, then write the summary.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use clock_model::NodeId;
use xplane_proto::{
    FileBytes, HOSTNAME_STAT, NODE_ID_STAT, ORIGINAL_PLANE_STAT, PROFILE_START_TIME,
    PROFILE_STOP_TIME, TASK_ENV_PLANE, XPlane, XSpaceFile, XStat, write_temp, x_stat,
};

use crate::copy::{PlaneJob, copy_plane};
use crate::error::MergeError;
use crate::naming::{IdScheme, PlaneKind};
use crate::options::{MergeInput, MergeOptions};
use crate::remap::PlaneMetadata;
use crate::report::{MergeReport, NodeReport, PlaneReport};
use crate::survey::{NodeLayout, survey};

/// The ending of the summary file written beside a merged trace unless
/// [`MergeOptions::summary_path`] says otherwise: `merged.xplane.pb` gets
/// `merged.xplane.pb.metadata.json` (see [`summary_beside`]).
pub const SUMMARY_SUFFIX: &str = ".metadata.json";

/// Merge per-node traces into one XSpace at `output`, and write the
/// [`MergeReport`] as JSON beside it (see [`summary_beside`]).
///
/// The inputs are memory-mapped one at a time and copied line by line, so
/// memory stays far below the inputs' size. Every line is moved onto the
/// reference node's session start (`timestamp_ns += T_node − T_ref`), which
/// is a no-op for traces already aligned onto the reference. On any error
/// nothing is left at `output` or at the summary path.
pub fn merge(
    inputs: &[MergeInput],
    options: &MergeOptions,
    output: impl AsRef<Path>,
) -> Result<MergeReport, MergeError> {
    let output = output.as_ref();
    let scheme = IdScheme::new(options.gpu_id_stride).ok_or_else(|| {
        MergeError::InvalidOption(format!(
            "gpu_id_stride must be at least 2 (one GPU and the host plane), got {}",
            options.gpu_id_stride
        ))
    })?;
    let reference = check_nodes(inputs, options.reference_node)?;

    // Reference first, then by node id.
    let mut order: Vec<&MergeInput> = inputs.iter().collect();
    order.sort_by_key(|i| (i.node_id != reference, i.node_id));
    let plans = order
        .iter()
        .map(|i| survey(i, i.node_id == reference, scheme))
        .collect::<Result<Vec<_>, _>>()?;
    let ref_plan = &plans[0];
    let t_ref = ref_plan.session_start_ns;
    let stop = plans.iter().filter_map(|p| p.session_stop_ns).max();

    let mut file = XSpaceFile::create(output).map_err(MergeError::Io)?;
    let w = file.writer();
    w.plane(&merged_task_environment(ref_plan, t_ref, stop))
        .map_err(MergeError::Io)?;
    let mut report = MergeReport::new(output, reference, t_ref, stop, scheme);
    for plan in &plans {
        report.push_node(copy_node(w, plan, t_ref)?);
    }
    report.finish();

    let summary = options
        .summary_path
        .clone()
        .unwrap_or_else(|| summary_beside(output));
    let trace = file
        .finish(&report.hostnames, &[], &report.warnings)
        .map_err(MergeError::Io)?;
    let staged = stage_summary(&summary, &report)?;
    persist_with_summary((trace, output), (staged, &summary))?;
    Ok(report)
}

/// Write `summary` (any serialisable report) as JSON into a complete
/// temporary beside `path`, to be put in place with the trace it
/// describes ([`persist_with_summary`]).
pub fn stage_summary(
    path: &Path,
    summary: &impl serde::Serialize,
) -> Result<safe_temp::TempFile, MergeError> {
    let json = serde_json::to_vec_pretty(summary).expect("the report serialises");
    write_temp(path, |f| std::io::Write::write_all(f, &json)).map_err(|e| MergeError::Summary {
        path: path.to_path_buf(),
        source: e.into_io(),
    })
}

/// Put a complete trace and its summary (temporaries, each with its
/// target) in place together ([`safe_temp::persist_together`]): both
/// appear, or, on an error or a signal, neither.
pub fn persist_with_summary(
    trace: (safe_temp::TempFile, &Path),
    summary: (safe_temp::TempFile, &Path),
) -> Result<(), MergeError> {
    let (output, summary_path) = (trace.1, summary.1);
    safe_temp::persist_together(vec![
        (trace.0, output.to_path_buf()),
        (summary.0, summary_path.to_path_buf()),
    ])
    .map_err(|e| match e {
        safe_temp::Error::Persist { target, source } if target == summary_path => {
            MergeError::Summary {
                path: target,
                source,
            }
        }
        e => MergeError::Io(xplane_proto::Error::Io {
            path: output.to_path_buf(),
            source: e.into_io(),
        }),
    })
}

/// The summary beside `output`: its whole name followed by
/// [`SUMMARY_SUFFIX`], so that every output has its own: two merges into
/// one folder, or one run merged to XSpace, Perfetto and Chrome JSON under
/// one stem, never share a summary.
///
/// ```
/// use std::path::Path;
/// use trace_merge::summary_beside;
/// assert_eq!(
///     summary_beside(Path::new("out/run7.xplane.pb")),
///     Path::new("out/run7.xplane.pb.metadata.json")
/// );
/// assert_eq!(summary_beside(Path::new("m.pftrace.gz")), Path::new("m.pftrace.gz.metadata.json"));
/// assert_ne!(summary_beside(Path::new("m.json")), summary_beside(Path::new("m.pftrace")));
/// ```
pub fn summary_beside(output: &Path) -> PathBuf {
    let mut name = output
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(SUMMARY_SUFFIX);
    output.with_file_name(name)
}

/// Check node ids and pick the reference.
pub(crate) fn check_nodes(
    inputs: &[MergeInput],
    wanted: Option<NodeId>,
) -> Result<NodeId, MergeError> {
    let mut seen: HashMap<NodeId, &Path> = HashMap::new();
    for input in inputs {
        if let Some(first) = seen.insert(input.node_id, &input.path) {
            return Err(MergeError::DuplicateNode {
                node_id: input.node_id,
                first: first.to_path_buf(),
                second: input.path.clone(),
            });
        }
    }
    let smallest = inputs
        .iter()
        .map(|i| i.node_id)
        .min()
        .ok_or(MergeError::NoInputs)?;
    let reference = wanted.unwrap_or(smallest);
    if !seen.contains_key(&reference) {
        let mut known: Vec<NodeId> = seen.keys().copied().collect();
        known.sort_unstable();
        return Err(MergeError::UnknownReference {
            node_id: reference,
            known,
        });
    }
    Ok(reference)
}

fn time_value(ns: i128) -> x_stat::Value {
    match u64::try_from(ns) {
        Ok(v) => x_stat::Value::Uint64Value(v),
        Err(_) => x_stat::Value::Int64Value(ns as i64),
    }
}

/// The one `Task Environment` of the merged trace: the reference's plane
/// with the reference's start `t_ref` and the latest stop of any node.
pub fn merged_task_environment(reference: &NodeLayout, t_ref: i128, stop: Option<i128>) -> XPlane {
    let source = reference.task_env.clone().unwrap_or_default();
    let mut meta = PlaneMetadata::new();
    let remap = meta.absorb_owned(&source.event_metadata, &source.stat_metadata);
    let mut stats: Vec<XStat> = source
        .stats
        .into_iter()
        .map(|mut s| {
            remap.remap_stat(&mut s);
            s
        })
        .collect();
    let mut set = |name: &str, value: x_stat::Value| {
        let id = meta.intern_stat(name);
        stats.retain(|s| s.metadata_id != id);
        stats.push(XStat {
            metadata_id: id,
            value: Some(value),
        });
    };
    set(PROFILE_START_TIME, time_value(t_ref));
    if let Some(stop) = stop {
        set(PROFILE_STOP_TIME, time_value(stop));
    }
    set(
        NODE_ID_STAT,
        x_stat::Value::Int64Value(i64::from(reference.node_id)),
    );
    if let Some(h) = &reference.hostname {
        set(HOSTNAME_STAT, x_stat::Value::StrValue(h.clone()));
    }
    set(
        ORIGINAL_PLANE_STAT,
        x_stat::Value::StrValue(TASK_ENV_PLANE.to_owned()),
    );
    XPlane {
        id: source.id,
        name: TASK_ENV_PLANE.to_owned(),
        lines: Vec::new(),
        event_metadata: meta.event_metadata().clone(),
        stat_metadata: meta.stat_metadata().clone(),
        stats,
    }
}

/// Copy every plane of one node.
fn copy_node<W: std::io::Write + std::io::Seek>(
    w: &mut xplane_proto::XSpaceWriter<W>,
    plan: &NodeLayout,
    t_ref: i128,
) -> Result<NodeReport, MergeError> {
    let bytes = FileBytes::open(&plan.path).map_err(MergeError::Io)?;
    let view = bytes.view();
    let rebase_ns = plan.session_start_ns - t_ref;
    let mut node = NodeReport {
        node_id: plan.node_id,
        path: plan.path.clone(),
        hostname: plan.hostname.clone(),
        session_start_ns: plan.session_start_ns,
        session_stop_ns: plan.session_stop_ns,
        rebase_ns,
        snapshots: None,
        planes: Vec::new(),
    };
    let mut planes = view.planes();
    for planned in &plan.planes {
        let plane = match planes.next() {
            Some(p) => p.map_err(|e| MergeError::corrupt(&plan.path, &view, e))?,
            None => return Err(changed(&plan.path)),
        };
        if plane.name != planned.original_name {
            return Err(changed(&plan.path));
        }
        let added = plan.added_stats(&planned.original_name);
        let job = PlaneJob {
            path: &plan.path,
            view: &view,
            id: planned.placement.id,
            name: &planned.placement.name,
            rebase_ns,
            unique_rows: planned.placement.drawn,
            snapshot_base_ns: (planned.kind == PlaneKind::Snapshots)
                .then_some(plan.session_start_ns),
            added,
        };
        let copied = copy_plane(w, &plane, &job)?;
        if copied.snapshots.is_some() && node.snapshots.is_none() {
            node.snapshots = copied.snapshots;
        }
        node.planes.push(PlaneReport {
            lines: copied.lines,
            events: copied.events,
            rows_renumbered: copied.rows_renumbered,
            ids_remapped: copied.ids_remapped,
            ..PlaneReport::placed(planned)
        });
    }
    if planes.next().is_some() {
        return Err(changed(&plan.path));
    }
    Ok(node)
}

fn changed(path: &Path) -> MergeError {
    MergeError::Io(xplane_proto::Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other("file changed while it was being merged"),
    })
}
