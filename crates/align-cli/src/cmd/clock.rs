//! The clock-evidence flags shared by `align` and `merge`, and how the
//! per-node choice is printed.

use collective_check::NodeId;
use trace_align::{
    ClockPolicy, ClockSource, ClockWarning, CrossCheck, Estimator, NodeClock, RepairBound,
    RepairOutcome,
};

/// Where the clock corrections come from.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ClockSourceArg {
    /// Per node: the probe offsets where a node has usable rows, the
    /// collectives elsewhere (all of them without an offsets file).
    Auto,
    /// The probe offsets file.
    Probes,
    /// The collectives: no participant ends one before all have begun it.
    Collectives,
}

impl From<ClockSourceArg> for ClockSource {
    fn from(a: ClockSourceArg) -> Self {
        match a {
            ClockSourceArg::Auto => ClockSource::Auto,
            ClockSourceArg::Probes => ClockSource::Probes,
            ClockSourceArg::Collectives => ClockSource::Collectives,
        }
    }
}

/// With `--clock-source auto`: the probes against the collectives.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CrossCheckArg {
    /// No check (the collectives are read only for nodes without probe rows).
    Off,
    /// Check each node's probe correction against its collectives and warn
    /// when they contradict each other.
    Report,
    /// As `report`, and align a contradicted node from the collectives.
    Override,
}

impl From<CrossCheckArg> for CrossCheck {
    fn from(a: CrossCheckArg) -> Self {
        match a {
            CrossCheckArg::Off => CrossCheck::Off,
            CrossCheckArg::Report => CrossCheck::Report,
            CrossCheckArg::Override => CrossCheck::Override,
        }
    }
}

/// How corrections are estimated from the collectives.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub enum EstimatorArg {
    /// The centre of the region the happens-before constraints allow:
    /// best where collectives end far apart (CPU runs, gloo).
    Centre,
    /// A robust regression on the ends of the collectives.
    Regression,
    /// The regression, moved into the allowed region when outside it:
    /// best where collectives end close together (GPU runs).
    Combined,
    /// The centre of the whole run's feasible region, every node at once
    /// (a linear programme; the largest least slack over every
    /// constraint): a reference to compare `centre` with.
    JointCentre,
    /// Combined where the collective ends agree to within 10 µs, else the
    /// centre; the choice and its figures are printed.
    #[default]
    Auto,
}

impl From<EstimatorArg> for Estimator {
    fn from(a: EstimatorArg) -> Self {
        match a {
            EstimatorArg::Centre => Estimator::Centre,
            EstimatorArg::Regression => Estimator::Regression,
            EstimatorArg::Combined => Estimator::Combined,
            EstimatorArg::JointCentre => Estimator::JointCentre,
            EstimatorArg::Auto => Estimator::Auto,
        }
    }
}

/// The clock flags.
#[derive(Debug, Clone, clap::Args)]
pub struct ClockArgs {
    /// The clock evidence: per node the probe offsets where usable, else
    /// the collectives (auto); the probe offsets; or the collectives.
    #[arg(long, value_enum, default_value_t = ClockSourceArg::Auto)]
    pub clock_source: ClockSourceArg,
    /// With auto: check the probe offsets against the collectives (report),
    /// also replace contradicted nodes' probes (override), or not (off).
    #[arg(long, value_enum, default_value_t = CrossCheckArg::Override)]
    pub cross_check: CrossCheckArg,
    /// How corrections are estimated from the collectives (see
    /// `docs/collective-clock.md`: centre for CPU runs whose collectives end
    /// far apart, combined for GPU runs; auto chooses from the ends).
    #[arg(long, value_enum, default_value_t)]
    pub estimator: EstimatorArg,
    /// Repair the collectives the clock correction leaves violated (the
    /// controlled logical clock): move each late end forward past the
    /// latest begin, amortised over the node's events before it (XSpace
    /// runs).
    #[arg(long)]
    pub repair: bool,
    /// With --repair: how much the gap between two events of a node may
    /// stretch or shrink, percent (0.0001 to 50).
    #[arg(long, value_name = "PERCENT", default_value = "1", value_parser = parse_bound)]
    pub repair_bound: RepairBound,
}

/// `PERCENT` or `PERCENT%`.
fn parse_bound(s: &str) -> Result<RepairBound, String> {
    let number = s.trim().trim_end_matches('%').trim_end();
    let percent: f64 = number
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage"))?;
    RepairBound::from_percent(percent).map_err(|e| e.to_string())
}

impl ClockArgs {
    /// The policy these flags ask for.
    pub fn policy(&self) -> ClockPolicy {
        ClockPolicy {
            source: self.clock_source.into(),
            cross_check: self.cross_check.into(),
            estimator: self.estimator.into(),
            repair: self.repair.then_some(self.repair_bound),
        }
    }

    /// Fail when a flag asks for what a PyTorch run cannot do.
    pub fn refuse_for_kineto(&self) -> anyhow::Result<()> {
        if self.repair {
            anyhow::bail!(
                "--repair applies to XSpace runs; PyTorch (Kineto) runs are aligned from their \
                 collectives without a repair"
            );
        }
        Ok(())
    }
}

/// Violations left by the repair printed at most (the rest in `--json`).
const PRINTED_UNREPAIRED: usize = 5;

/// What the repair did, in a few lines.
pub fn repair_summary(r: &RepairOutcome) -> String {
    let p = &r.plan;
    let e = &r.events;
    let mut s = format!(
        "repair (bound {} %): {} of {} instances repaired; violations {} -> {}; {} events moved, \
         p50 {} ns, p99 {} ns, max {} ns\n",
        f64::from(p.bound_ppm.ppm()) / 1e4,
        p.instances_repaired,
        p.instances_checked,
        p.violations_before,
        p.violations_after,
        e.moved,
        e.p50_ns,
        e.p99_ns,
        e.max_ns
    );
    for u in p.unrepaired.iter().take(PRINTED_UNREPAIRED) {
        s += &format!(
            "warning: repair left instance {} ({}, {}) on node {}{}: end {} ns before the latest \
             begin ({})\n",
            u.instance,
            u.op,
            u.key,
            u.node,
            u.device.map_or(String::new(), |d| format!(" device {d}")),
            u.by_ns,
            match u.cause {
                trace_align::UnrepairedCause::SameNode => "the latest begin is on the same node",
                trace_align::UnrepairedCause::Bound => "the bound leaves too short a ramp",
            }
        );
    }
    let printed = p.unrepaired.len().min(PRINTED_UNREPAIRED);
    if p.violations_after > printed {
        s += &format!(
            "warning: and {} more violation(s) left by the repair (listed in --json)\n",
            p.violations_after - printed
        );
    }
    s
}

/// Node `node`'s clock in brief, when it says more than "probes": where
/// its correction comes from and why, or how its probes compare with its
/// collectives.
pub fn brief(clocks: &[NodeClock], node: NodeId) -> Option<String> {
    let c = clocks.iter().find(|c| c.node == node)?;
    match (c.source, c.probe_check) {
        (ClockSource::Probes, Some(check)) => Some(format!(
            "collectives {} (probes {:+} ns from their estimate)",
            if check.conflict { "DISAGREE" } else { "agree" },
            check.difference_ns
        )),
        (ClockSource::Collectives, _) => Some(format!("from collectives ({})", c.reason)),
        _ => None,
    }
}

/// A node's correction estimated from the collectives, in brief: its
/// segments, its offset at the run's start (the one every command
/// prints), the drift of its first segment and the half-width of the
/// feasible interval at that segment's middle; "reference" for the
/// reference.
pub fn collective_brief(report: &trace_align::EstimateReport, node: NodeId) -> Option<String> {
    let n = report.node(node)?;
    if n.reference {
        return Some("reference".to_owned());
    }
    let first = n.segments.first()?;
    let width = first
        .uncertainty
        .middle_ns
        .map_or("unbounded".to_owned(), |w| format!("± {w} ns"));
    Some(format!(
        "{} segment(s), offset at run start {} ns, drift {} ppb, feasible {width}",
        n.segments.len(),
        n.offset_at_run_start_ns,
        first.drift_ppb
    ))
}

/// Print every clock warning on stderr.
pub fn warn(warnings: &[ClockWarning]) {
    for w in warnings {
        errln!("warning: {w}");
    }
}

/// Say on stderr what the matching of the collectives found amiss (counts
/// that differ between participants, instances left incomplete, …): the
/// clocks rest on what was matched.
pub fn warn_collectives(report: &collective_check::Report) {
    for w in &report.warnings {
        errln!("warning: {}", w.message);
    }
}

/// The line a command prints about a run's clocks (`clocks: SOURCE
/// (REASON)`), `None` for probe offsets (the usual case, said per node).
pub fn clocks_line(source: ClockSource, reason: &trace_align::ClockReason) -> Option<String> {
    (source != ClockSource::Probes).then(|| format!("clocks: {} ({reason})", source_words(source)))
}

/// A run's clock source in words.
pub fn source_words(source: ClockSource) -> &'static str {
    match source {
        ClockSource::Probes => "probe offsets",
        ClockSource::Collectives => "estimated from the collectives",
        ClockSource::Both => "probe offsets and the collectives",
        ClockSource::Identity => "none needed, the identity",
        ClockSource::Auto => "auto",
    }
}

/// The collectives line of `merge` and `align`: the run's counts (the
/// definitions of [`collective_check::Counts`], the words every command
/// prints) after alignment, and the happens-before violations before and
/// after it.
pub fn check_line(before: &collective_check::Report, after: &collective_check::Report) -> String {
    format!(
        "{}\nhappens-before violations {} before -> {} after (of {} checked)",
        after.summary.counts,
        before.summary.violations,
        after.summary.violations,
        after.summary.counts.checked
    )
}
