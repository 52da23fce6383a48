//! From a run's files to a [`Report`]: read once more with the clocks the
//! alignment uses, then computed section by section.

use alignment_core::AlignOptions;
use clock_model::NodeId;
use rayon::prelude::*;
use trace_align::{ClockPolicy, Plan, RunFiles, TraceFormat};

use crate::collectives::{node_instances, summarise};
use crate::error::Result;
use crate::input::RunData;
use crate::model::{Report, Violations};

/// How to build a report.
#[derive(Clone, Debug, Default)]
pub struct ReportOptions {
    /// The alignment policies (`reference_node` is the run's timeline).
    pub align: AlignOptions,
    /// The clock evidence of an XSpace run and the probes' cross-check
    /// (Kineto runs are aligned from their collectives).
    pub clock: ClockPolicy,
}

impl Report {
    /// The report of the run `run`: XSpace traces are planned and aligned
    /// as `merge` aligns them, Kineto traces from their collectives.
    pub fn build(run: &RunFiles, options: &ReportOptions) -> Result<Report> {
        match run.format()? {
            TraceFormat::Kineto => {
                let data = crate::kineto::read(
                    &run.traces(),
                    options.align.reference_node,
                    &options.clock,
                )?;
                Ok(Report::from_data(data))
            }
            TraceFormat::XSpace => {
                let plan = run.plan_clocks(&options.align, &options.clock)?;
                Report::from_plan(&plan)
            }
        }
    }

    /// The report of an XSpace run planned by `plan`.
    pub fn from_plan(plan: &Plan) -> Result<Report> {
        Ok(Report::from_data(crate::xspace::read(plan)?))
    }

    fn from_data(run: RunData) -> Report {
        let instances = node_instances(&run.after);
        let ops: Vec<&str> = run.after.instances.iter().map(|i| i.op.as_str()).collect();
        let starts = run.nodes.iter().filter_map(|n| n.extent).map(|e| e.start);
        let ends = run.nodes.iter().filter_map(|n| n.extent).map(|e| e.end);
        let t0 = starts.min().unwrap_or(0);
        let node_ids: Vec<NodeId> = run.nodes.iter().map(|n| n.node).collect();
        let (source, windows) = crate::steps::windows(&run, &instances, &ops);
        let steps = crate::steps::steps(&run, &instances, (source, &windows), t0);
        // The critical path and the GPU time (per node) read the same
        // events, each on its own.
        let slowest: Vec<i64> = steps.slowest.iter().map(|s| s.step).collect();
        let (critical_path, gpu_nodes) = rayon::join(
            || crate::critical::critical_path(&run, &instances, &windows, t0, &slowest),
            || {
                (run.nodes.par_iter())
                    .filter_map(|n| crate::gpu::node_time(n.node, &n.gpu))
                    .collect()
            },
        );
        Report {
            format: run.format,
            reference_node: run.reference_node,
            run_start_ns: t0,
            run_length_ns: ends.max().map_or(0, |e| e - t0),
            clocks: crate::clock::picture(&run, &instances, t0),
            counts: run.after.summary.counts.clone(),
            violations: Violations {
                before: run.before.summary.violations,
                after: run.after.summary.violations,
                max_before_ns: run.before.summary.max_violation_ns,
                max_after_ns: run.after.summary.max_violation_ns,
            },
            collectives: summarise(&instances, &node_ids),
            critical_path,
            steps,
            gpu: crate::gpu::GpuTime { nodes: gpu_nodes },
            nodes: node_ids,
            series_left_out: None,
        }
    }

    /// The report as pretty JSON ([`Report::for_json`]).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&*self.for_json()).expect("a report always serialises")
    }

    /// The report as its JSON holds it: a run of more than
    /// [`JSON_SERIES_NODES`](crate::JSON_SERIES_NODES) nodes keeps every
    /// node but not the per-node series, and says so in
    /// `series_left_out`; a smaller run is the report itself.
    pub fn for_json(&self) -> std::borrow::Cow<'_, Report> {
        if self.nodes.len() <= crate::JSON_SERIES_NODES {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut r = self.clone();
        for n in &mut r.clocks.nodes {
            n.evidence_left_out += n.evidence.len();
            n.samples.clear();
            n.evidence.clear();
        }
        for s in &mut r.steps.steps {
            s.nodes.clear();
            s.lateness_ns.clear();
        }
        r.series_left_out = Some(format!(
            "a run of {} nodes (more than {}): every node is listed, without its clock's \
             samples and evidence (clocks.nodes[].samples, .evidence: min_ns and max_ns kept) \
             and its part of each step (steps.steps[].nodes, .lateness_ns: steps.totals kept)",
            r.nodes.len(),
            crate::JSON_SERIES_NODES
        ));
        std::borrow::Cow::Owned(r)
    }
}
