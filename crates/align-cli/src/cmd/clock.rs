//! The clock-evidence flags shared by `align` and `merge`.

use trace_align::{ClockPolicy, ClockSource, CrossCheck, Estimator, RepairBound};

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
    /// The clocks as recorded, no correction: for runs on one host, or on
    /// hosts whose clocks are already synchronised (PTP); and for partial
    /// runs whose traces share no collective.
    Recorded,
}

impl From<ClockSourceArg> for ClockSource {
    fn from(a: ClockSourceArg) -> Self {
        match a {
            ClockSourceArg::Auto => ClockSource::Auto,
            ClockSourceArg::Probes => ClockSource::Probes,
            ClockSourceArg::Collectives => ClockSource::Collectives,
            ClockSourceArg::Recorded => ClockSource::Recorded,
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
#[command(next_help_heading = "Clocks")]
pub struct ClockArgs {
    /// The clock evidence: per node the probe offsets where usable, else
    /// the collectives (auto); the probe offsets; the collectives; or the
    /// clocks as recorded.
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
