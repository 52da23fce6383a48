//! `align-cli merge`: align every node of a run and merge them into one
//! trace, validating collectives before and after.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alignment_core::{AlignOptions, NodeDiagnostics, NodeInput, OffsetsFile, align_node};
use anyhow::{Context, bail};
use collective_check::{NodeId, Report};
use indicatif::ProgressBar;
use serde::Serialize;
use trace_merge::{MergeInput, MergeOptions, MergeReport};

use super::align::{node_from_name, session_start};
use super::policy::PolicyArgs;
use crate::Global;
use crate::exit::ValidationFailed;

/// Align and merge every node of a run.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A run folder: `node<N>.xplane.pb` / `rank<N>.xplane.pb` traces,
    /// optional `node<N>.snapshots.pb|jsonl`, and `round_offsets.jsonl`.
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// A node's trace, `N=PATH` (repeatable); overrides what the run folder has for N.
    #[arg(long = "trace", value_name = "N=PATH", value_parser = parse_node_path)]
    pub traces: Vec<(u32, PathBuf)>,
    /// A node's snapshot pairs, `N=PATH` (repeatable).
    #[arg(long = "snapshots", value_name = "N=PATH", value_parser = parse_node_path)]
    pub snapshots: Vec<(u32, PathBuf)>,
    /// The offsets file; default: `round_offsets.jsonl` in the run folder.
    #[arg(long)]
    pub offsets: Option<PathBuf>,
    /// The merged trace.
    #[arg(short, long, default_value = "combined.xplane.pb")]
    pub output: PathBuf,
    /// GPU plane id stride per node (GPU plane id = node × stride + ordinal).
    #[arg(long, default_value_t = trace_merge::DEFAULT_GPU_ID_STRIDE)]
    pub gpu_id_stride: u32,
    /// Skip the collective check.
    #[arg(long)]
    pub no_validate: bool,
    /// Exit with status 1 when the merged trace has more collective violations than this.
    #[arg(long, default_value_t = 0)]
    pub max_violations: usize,
    /// Print the outcome as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

fn parse_node_path(s: &str) -> Result<(u32, PathBuf), String> {
    let (n, p) = s.split_once('=').ok_or("expected N=PATH")?;
    let n = n.parse().map_err(|_| format!("'{n}' is not a node id"))?;
    Ok((n, PathBuf::from(p)))
}

/// What to merge: one trace per node and the offsets file.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Node id → (trace, snapshots file).
    pub nodes: BTreeMap<u32, (PathBuf, Option<PathBuf>)>,
    /// The offsets file.
    pub offsets: PathBuf,
    /// Trace-like files of the run folder left out: no node id in the name.
    pub ignored: Vec<PathBuf>,
}

/// Find the traces, snapshot files and offsets file of a run folder.
pub fn discover(dir: &Path) -> anyhow::Result<Plan> {
    let mut nodes: BTreeMap<u32, (PathBuf, Option<PathBuf>)> = BTreeMap::new();
    let mut snapshots: BTreeMap<u32, PathBuf> = BTreeMap::new();
    let mut plan_ignored = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("reading run folder {}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    paths.sort();
    for path in paths {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let is_trace = (name.ends_with(".xplane.pb") || name.ends_with(".xplane.pb.gz"))
            && !name.contains(".aligned.");
        let is_snapshots = name.contains(".snapshots.");
        if !is_trace && !is_snapshots {
            continue;
        }
        // Node files are named node<N>/rank<N>; anything else (a merged
        // trace, say) is not a node's and is left out, with a word.
        let Ok(node) = node_from_name(&path) else {
            plan_ignored.push(path);
            continue;
        };
        if is_trace {
            if let Some((first, _)) = nodes.insert(node, (path.clone(), None)) {
                bail!(
                    "node {node} has two traces in {}: {} and {}",
                    dir.display(),
                    first.display(),
                    path.display()
                );
            }
        } else {
            snapshots.insert(node, path);
        }
    }
    for (node, path) in snapshots {
        match nodes.get_mut(&node) {
            Some(entry) => entry.1 = Some(path),
            None => bail!(
                "{}: snapshots for node {node}, which has no trace",
                path.display()
            ),
        }
    }
    Ok(Plan {
        nodes,
        ignored: plan_ignored,
        offsets: dir.join("round_offsets.jsonl"),
    })
}

/// The outcome of a merge.
#[derive(Debug, Serialize)]
pub struct Outcome {
    /// The merged trace.
    pub output: PathBuf,
    /// Per node, what alignment did.
    pub nodes: Vec<NodeDiagnostics>,
    /// What the merge did.
    pub merge: MergeReport,
    /// Collective check of the unaligned traces.
    pub before: Option<Report>,
    /// Collective check of the merged trace.
    pub after: Option<Report>,
}

/// Align every node of `plan` into a temporary folder, merge, and validate.
pub fn execute(
    plan: &Plan,
    options: &AlignOptions,
    output: &Path,
    gpu_id_stride: u32,
    validate: bool,
    progress: bool,
) -> anyhow::Result<Outcome> {
    let offsets = OffsetsFile::read(&plan.offsets)?;
    for node in offsets.nodes.keys() {
        if !plan.nodes.contains_key(node) {
            bail!(
                "{}: the offsets list node {node}, but no trace was found for it (have {:?})",
                plan.offsets.display(),
                plan.nodes.keys().collect::<Vec<_>>()
            );
        }
    }
    if !options.pass_through_without_offsets {
        for node in plan.nodes.keys() {
            if !offsets.nodes.contains_key(node) {
                bail!(
                    "{}: node {node} has a trace but is not in the offsets meta header",
                    plan.offsets.display()
                );
            }
        }
    }
    let reference = plan
        .nodes
        .get(&options.reference_node)
        .with_context(|| format!("the reference node {} has no trace", options.reference_node))?;
    let base = session_start(&reference.0)?;
    let tmp = tempfile::Builder::new()
        .prefix(".align-cli-")
        .tempdir_in(
            output
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new(".")),
        )
        .context("creating a working folder beside the output")?;
    let bar = if progress {
        ProgressBar::new(plan.nodes.len() as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_message("aligning");
    let mut diagnostics = Vec::new();
    let mut inputs = Vec::new();
    for (&node, (trace, snapshots)) in &plan.nodes {
        let aligned = tmp.path().join(format!("node{node}.aligned.xplane.pb"));
        let input = NodeInput {
            node_id: node,
            trace: trace.clone(),
            snapshots: snapshots.clone(),
            ..Default::default()
        };
        let d = align_node(&input, &offsets, options, Some(base), &aligned)
            .with_context(|| format!("aligning node {node}"))?;
        inputs.push(MergeInput {
            node_id: node,
            path: aligned,
            hostname: None,
            diagnostics: Some(serde_json::to_value(&d)?),
        });
        diagnostics.push(d);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let merge = trace_merge::merge(
        &inputs,
        &MergeOptions {
            reference_node: Some(options.reference_node),
            gpu_id_stride,
            summary_path: None,
        },
        output,
    )
    .context("merging")?;
    let (before, after) = if validate {
        let check = collective_check::Options::default();
        let files: Vec<(NodeId, PathBuf)> = plan
            .nodes
            .iter()
            .map(|(&n, (p, _))| (NodeId(n.into()), p.clone()))
            .collect();
        (
            Some(collective_check::check_files(&files, &check).context("validating the inputs")?),
            Some(
                collective_check::check_merged(output, &check)
                    .context("validating the merged trace")?,
            ),
        )
    } else {
        (None, None)
    };
    Ok(Outcome {
        output: output.to_path_buf(),
        nodes: diagnostics,
        merge,
        before,
        after,
    })
}

/// The end-of-run summary: one line per node, then the collective check.
pub fn summary(outcome: &Outcome) -> String {
    let mut s = format!(
        "{:>5}  {:>10}  {:>26}  {:>8}  {:>12}\n",
        "node", "events", "correction (ns)", "clamped", "extrapolated"
    );
    for d in &outcome.nodes {
        let range = d.correction.map_or("-".to_owned(), |c| {
            format!("{:.0} .. {:.0}", c.min_ns, c.max_ns)
        });
        let e = &d.extrapolated;
        let extrapolated = e.before_first_snapshot
            + e.after_last_snapshot
            + e.before_first_offset_anchor
            + e.after_last_offset_anchor;
        let model = d
            .offset_model
            .as_ref()
            .map_or(String::new(), |m| format!("  offset model {}", m.brief()));
        s += &format!(
            "{:>5}  {:>10}  {:>26}  {:>8}  {:>12}{}{model}\n",
            d.node_id,
            d.events_corrected,
            range,
            d.events_clamped,
            extrapolated,
            if d.passed_through {
                "  PASSED THROUGH UNALIGNED"
            } else {
                ""
            }
        );
    }
    if let (Some(b), Some(a)) = (&outcome.before, &outcome.after) {
        s += &format!(
            "collectives: {} instances; happens-before violations {} before -> {} after\n",
            a.summary.instances, b.summary.violations, a.summary.violations
        );
    }
    s += &format!(
        "wrote {} ({} planes, {} events) and {}\n",
        outcome.output.display(),
        outcome.merge.planes,
        outcome.merge.events,
        trace_merge::summary_beside(&outcome.output).display()
    );
    s
}

/// Fail with [`ValidationFailed`] when the merged trace has too many violations.
pub fn enforce(outcome: &Outcome, max_violations: usize) -> anyhow::Result<()> {
    if let Some(after) = &outcome.after
        && after.summary.violations > max_violations
    {
        return Err(ValidationFailed {
            what: format!(
                "{} collective happens-before violations in {} (allowed: {max_violations})",
                after.summary.violations,
                outcome.output.display()
            ),
        }
        .into());
    }
    Ok(())
}

pub fn run(args: Args, global: &Global) -> anyhow::Result<()> {
    let mut plan = match &args.run_dir {
        Some(dir) => discover(dir)?,
        None => Plan {
            nodes: BTreeMap::new(),
            ignored: Vec::new(),
            offsets: args
                .offsets
                .clone()
                .context("give --run-dir, or --offsets and --trace N=PATH")?,
        },
    };
    if let Some(offsets) = &args.offsets {
        plan.offsets = offsets.clone();
    }
    for (node, path) in &args.traces {
        plan.nodes.insert(*node, (path.clone(), None));
    }
    for (node, path) in &args.snapshots {
        match plan.nodes.get_mut(node) {
            Some(entry) => entry.1 = Some(path.clone()),
            None => bail!(
                "--snapshots {node}={}: node {node} has no trace",
                path.display()
            ),
        }
    }
    if !global.quiet {
        for path in &plan.ignored {
            eprintln!(
                "note: left out {}: no node<N>/rank<N> in its name",
                path.display()
            );
        }
    }
    if plan.nodes.is_empty() {
        bail!("no traces found; give --run-dir or --trace N=PATH");
    }
    let progress = !global.quiet && !args.json;
    let outcome = execute(
        &plan,
        &args.policy.options(),
        &args.output,
        args.gpu_id_stride,
        !args.no_validate,
        progress,
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&outcome)?);
    } else if !global.quiet {
        print!("{}", summary(&outcome));
    }
    enforce(&outcome, args.max_violations)
}
