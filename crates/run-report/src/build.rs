//! From a run's files to a [`Report`]: read once more with the clocks the
//! alignment uses, then computed section by section.

use alignment_core::AlignOptions;
use clock_model::NodeId;
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
            steps: crate::steps::steps(&run, &instances, &ops, t0),
            gpu: crate::gpu::GpuTime {
                nodes: run
                    .nodes
                    .iter()
                    .filter_map(|n| crate::gpu::node_time(n.node, &n.gpu))
                    .collect(),
            },
            nodes: node_ids,
        }
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serialises")
    }
}
