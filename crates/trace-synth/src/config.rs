//! What to simulate: cluster shape, clocks, workload, probing and noise.

use serde::{Deserialize, Serialize};

use crate::SynthError;

/// Explicit clock parameters of one node, overriding the random draw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSpec {
    /// θ: host clock offset at `epoch_ns`, ns (fractions allowed, kept to the ps).
    pub host_offset_ns: f64,
    /// ρ: host clock rate error, ppm.
    pub host_drift_ppm: f64,
    /// ε: tracer rate error relative to the host clock, ppm.
    pub tracer_drift_ppm: f64,
    /// Tracer clock (CLOCK_BOOTTIME) reading at `epoch_ns`, ns.
    pub boot_ns: i64,
}

/// A node made slow on purpose: it begins every collective late by
/// `delay_ns` (as if its compute before each collective ran that much
/// longer); the others wait for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Straggler {
    /// The slow node.
    pub node: u32,
    /// How late it begins every collective, ns.
    pub delay_ns: u64,
}

/// A probe round in which a node was not reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoundNode {
    /// The round.
    pub round: u64,
    /// The node (never the reference, node 0).
    pub node: u32,
}

/// A known error in one node's probe offsets, as a bug in the probe graph
/// calculation would make it (a wrong sign on an edge, a loop that does
/// not close): every reachable row of the node is written with it, while
/// the truth stays true.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeError {
    /// The node whose offsets are wrong (never the reference, node 0).
    pub node: u32,
    /// Write the negated offset (a sign error), before `add_ns`.
    #[serde(default)]
    pub negate: bool,
    /// Added to every written offset, ns.
    #[serde(default)]
    pub add_ns: i64,
}

/// `NODE:REST`, the node parsed; `expected` names the form in errors.
fn node_and(text: &str, expected: &str) -> Result<(u32, String), SynthError> {
    let bad = |reason: String| SynthError::BadSpec {
        text: text.to_owned(),
        reason,
    };
    let (node, rest) = text
        .split_once(':')
        .ok_or_else(|| bad(format!("expected {expected}")))?;
    let node = node
        .trim()
        .parse()
        .map_err(|e| bad(format!("{node:?} is not a node id: {e}")))?;
    Ok((node, rest.trim().to_owned()))
}

impl std::str::FromStr for Straggler {
    type Err = SynthError;

    /// `NODE:DELAY_NS`, e.g. `2:500000`.
    ///
    /// ```
    /// let s: trace_synth::Straggler = "2:500000".parse()?;
    /// assert_eq!((s.node, s.delay_ns), (2, 500_000));
    /// assert!("2".parse::<trace_synth::Straggler>().is_err());
    /// # Ok::<(), trace_synth::SynthError>(())
    /// ```
    fn from_str(text: &str) -> Result<Self, SynthError> {
        let (node, delay) = node_and(text, "NODE:DELAY_NS, e.g. 2:500000")?;
        let delay_ns = delay.parse().map_err(|e| SynthError::BadSpec {
            text: text.to_owned(),
            reason: format!("{delay:?} is not a delay in ns: {e}"),
        })?;
        Ok(Straggler { node, delay_ns })
    }
}

impl std::str::FromStr for ProbeError {
    type Err = SynthError;

    /// `NODE:NS` (added to every offset) or `NODE:negate`, e.g. `2:40000`.
    ///
    /// ```
    /// let e: trace_synth::ProbeError = "1:negate".parse()?;
    /// assert!(e.negate && e.add_ns == 0);
    /// assert_eq!("3:-250".parse::<trace_synth::ProbeError>()?.add_ns, -250);
    /// # Ok::<(), trace_synth::SynthError>(())
    /// ```
    fn from_str(text: &str) -> Result<Self, SynthError> {
        let (node, what) = node_and(text, "NODE:NS or NODE:negate, e.g. 2:40000")?;
        let (negate, add_ns) = match what.as_str() {
            "negate" => (true, 0),
            ns => (
                false,
                ns.parse().map_err(|e| SynthError::BadSpec {
                    text: text.to_owned(),
                    reason: format!("{ns:?} is not an offset error in ns (or `negate`): {e}"),
                })?,
            ),
        };
        Ok(ProbeError {
            node,
            negate,
            add_ns,
        })
    }
}

impl ProbeError {
    /// The offset written for a measured `offset_ns`.
    pub fn apply(&self, offset_ns: f64) -> f64 {
        let signed = if self.negate { -offset_ns } else { offset_ns };
        signed + self.add_ns as f64
    }
}

/// Everything that shapes a synthetic run. Every field has a default
/// ([`SynthConfig::default`]); a JSON config may give any subset.
///
/// Invariants, checked by [`SynthConfig::validate`]: at least one node and
/// GPU (at most 65 535 nodes and 253 GPUs per node, the limits of the event
/// id layout); `5 <= step_min_ms <= step_max_ms`; at least 10 µs per kernel
/// launch slot (`0.55·step_min / (2·kernels_per_stream)`); the collective stagger and end
/// spread fit in a twentieth of the shortest step, a straggler's delay in
/// a fortieth; node 0 (the reference) always probes and is always
/// reachable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SynthConfig {
    /// Seed of every random draw; the same seed gives byte-identical files.
    pub seed: u64,
    /// Number of nodes (machines).
    pub nodes: u32,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// Training steps.
    pub steps: u32,
    /// Shortest step, ms.
    pub step_min_ms: f64,
    /// Longest step, ms.
    pub step_max_ms: f64,
    /// Compute kernels per stream per step (two compute streams per GPU).
    pub kernels_per_stream: u32,
    /// Also run an all-gather after the all-reduce of every step.
    pub all_gather: bool,
    /// True time `t0` at which the clock parameters are given, epoch ns.
    pub epoch_ns: i64,
    /// Largest |θ|, the host clock offsets, ns.
    pub max_host_offset_ns: f64,
    /// Largest |ρ|, the host clock rate errors, ppm.
    pub max_host_drift_ppm: f64,
    /// Largest |ε|, the tracer-versus-host rate errors, ppm.
    pub max_tracer_drift_ppm: f64,
    /// Amplitude of a slow sinusoidal wander of each host clock, ns (0: none).
    pub wander_amplitude_ns: f64,
    /// Period of that wander, s.
    pub wander_period_s: f64,
    /// Explicit clock parameters per node (length `nodes`), replacing the draw.
    pub clocks: Option<Vec<ClockSpec>>,
    /// Largest gap between consecutive nodes' session starts, ms.
    pub session_spacing_ms: f64,
    /// Tracer start (where `(S_g, S_w)` are read) after the session start, ms: `[min, max]`.
    pub tracer_start_delay_ms: [f64; 2],
    /// Host (TraceMe) tracer start after the session start, ms: `[min, max]`.
    pub host_tracer_delay_ms: [f64; 2],
    /// First step after `epoch_ns`, ms (must leave room for every tracer start).
    pub warmup_ms: f64,
    /// Session stop after the last step, ms.
    pub cooldown_ms: f64,
    /// Largest stagger of the collective begins across participants, µs.
    pub max_stagger_us: f64,
    /// Every participant's end is at least this long after the latest begin, µs.
    pub collective_min_gap_us: f64,
    /// Participants' ends lie within this spread, µs.
    pub collective_end_spread_us: f64,
    /// Snapshot pair period, ms.
    pub snapshot_period_ms: f64,
    /// First snapshot pair after the tracer start, ms.
    pub snapshot_first_delay_ms: f64,
    /// Read gap of the snapshot pairs, ns (0: exact pairs). The host clock
    /// of each recorded pair is read a delay `N·|z₁| + N/10·z₂` (`z`
    /// standard normal) after its tracer clock: one-sided, mean 0.8 N,
    /// σ 0.6 N, plus a small jitter either way; the truth stays true.
    /// Left out of the written configuration when 0, so an exact run keeps
    /// the run id (a hash of that configuration) it had before the field.
    #[serde(skip_serializing_if = "is_zero")]
    pub snapshot_noise_ns: f64,
    /// Probe window length, ms.
    pub probe_window_ms: f64,
    /// Extra processing time per window, ms: `[min, max]`.
    pub probe_processing_ms: [f64; 2],
    /// The first probe window opens this long before `epoch_ns`, ms.
    pub probe_lead_ms: f64,
    /// σ of the Gaussian noise on `offset_ns`, ns.
    pub offset_noise_ns: f64,
    /// σ of the Gaussian noise on `drift_ppm`, ppm.
    pub drift_noise_ppm: f64,
    /// Significant digits of `offset_ns` and `drift_ppm` (6, as C++ streams print).
    pub offset_digits: usize,
    /// Nodes that do not probe: their rows carry the reference's window.
    pub non_probing_nodes: Vec<u32>,
    /// Rows written as unreachable (`reachable:false`, offset 0).
    pub unreachable: Vec<RoundNode>,
    /// A node that begins every collective late (none by default).
    pub straggler: Option<Straggler>,
    /// Nodes whose probe offsets are written wrong (none by default).
    pub probe_errors: Vec<ProbeError>,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            seed: 1,
            nodes: 4,
            gpus_per_node: 2,
            steps: 200,
            step_min_ms: 20.0,
            step_max_ms: 100.0,
            kernels_per_stream: 8,
            all_gather: true,
            epoch_ns: 1_765_432_100_000_000_000,
            max_host_offset_ns: 5e6,
            max_host_drift_ppm: 20.0,
            max_tracer_drift_ppm: 2.0,
            wander_amplitude_ns: 0.0,
            wander_period_s: 60.0,
            clocks: None,
            session_spacing_ms: 5.0,
            tracer_start_delay_ms: [20.0, 60.0],
            host_tracer_delay_ms: [1.0, 10.0],
            warmup_ms: 200.0,
            cooldown_ms: 200.0,
            max_stagger_us: 300.0,
            collective_min_gap_us: 5.0,
            collective_end_spread_us: 20.0,
            snapshot_period_ms: 4000.0,
            snapshot_first_delay_ms: 2000.0,
            snapshot_noise_ns: 0.0,
            probe_window_ms: 4000.0,
            probe_processing_ms: [50.0, 300.0],
            probe_lead_ms: 2000.0,
            offset_noise_ns: 100.0,
            drift_noise_ppm: 0.01,
            offset_digits: 6,
            non_probing_nodes: Vec::new(),
            unreachable: Vec::new(),
            straggler: None,
            probe_errors: Vec::new(),
        }
    }
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

fn check(ok: bool, field: &'static str, reason: impl FnOnce() -> String) -> Result<(), SynthError> {
    if ok {
        Ok(())
    } else {
        Err(SynthError::config(field, reason()))
    }
}

fn finite_nonneg(v: f64, field: &'static str) -> Result<(), SynthError> {
    check(v.is_finite() && v >= 0.0, field, || {
        format!("{v} is not a finite value >= 0")
    })
}

fn range(r: [f64; 2], field: &'static str) -> Result<(), SynthError> {
    finite_nonneg(r[0], field)?;
    finite_nonneg(r[1], field)?;
    check(r[0] <= r[1], field, || {
        format!("min {} > max {}", r[0], r[1])
    })
}

impl SynthConfig {
    /// Check the invariants stated on the type.
    pub fn validate(&self) -> Result<(), SynthError> {
        check((1..=65_535).contains(&self.nodes), "nodes", || {
            format!("{} is not in 1..=65535", self.nodes)
        })?;
        check(
            (1..=253).contains(&self.gpus_per_node),
            "gpus_per_node",
            || format!("{} is not in 1..=253", self.gpus_per_node),
        )?;
        check(self.steps >= 1, "steps", || "must be at least 1".into())?;
        check(self.kernels_per_stream >= 1, "kernels_per_stream", || {
            "must be at least 1".into()
        })?;
        check(
            self.step_min_ms.is_finite() && self.step_min_ms >= 5.0,
            "step_min_ms",
            || format!("{} is below 5 ms", self.step_min_ms),
        )?;
        let slot_us = 0.55 * self.step_min_ms * 1000.0 / f64::from(2 * self.kernels_per_stream);
        check(slot_us >= 10.0, "kernels_per_stream", || {
            format!(
                "{} kernels per stream leave {slot_us:.2} µs per launch in a {} ms step; at least 10 µs are needed",
                self.kernels_per_stream, self.step_min_ms
            )
        })?;
        check(
            self.step_max_ms.is_finite() && self.step_max_ms >= self.step_min_ms,
            "step_max_ms",
            || {
                format!(
                    "{} is below step_min_ms {}",
                    self.step_max_ms, self.step_min_ms
                )
            },
        )?;
        for (v, f) in [
            (self.max_host_offset_ns, "max_host_offset_ns"),
            (self.max_host_drift_ppm, "max_host_drift_ppm"),
            (self.max_tracer_drift_ppm, "max_tracer_drift_ppm"),
            (self.wander_amplitude_ns, "wander_amplitude_ns"),
            (self.session_spacing_ms, "session_spacing_ms"),
            (self.warmup_ms, "warmup_ms"),
            (self.cooldown_ms, "cooldown_ms"),
            (self.max_stagger_us, "max_stagger_us"),
            (self.collective_min_gap_us, "collective_min_gap_us"),
            (self.collective_end_spread_us, "collective_end_spread_us"),
            (self.snapshot_first_delay_ms, "snapshot_first_delay_ms"),
            (self.snapshot_noise_ns, "snapshot_noise_ns"),
            (self.probe_lead_ms, "probe_lead_ms"),
            (self.offset_noise_ns, "offset_noise_ns"),
            (self.drift_noise_ppm, "drift_noise_ppm"),
        ] {
            finite_nonneg(v, f)?;
        }
        check(
            self.max_host_drift_ppm + self.max_tracer_drift_ppm < 1000.0,
            "max_host_drift_ppm",
            || "rate errors must stay below 1000 ppm".into(),
        )?;
        check(
            self.wander_period_s.is_finite() && self.wander_period_s > 0.0,
            "wander_period_s",
            || format!("{} is not > 0", self.wander_period_s),
        )?;
        range(self.tracer_start_delay_ms, "tracer_start_delay_ms")?;
        range(self.host_tracer_delay_ms, "host_tracer_delay_ms")?;
        range(self.probe_processing_ms, "probe_processing_ms")?;
        let starts = f64::from(self.nodes - 1) * self.session_spacing_ms
            + self.tracer_start_delay_ms[1].max(self.host_tracer_delay_ms[1]);
        check(self.warmup_ms > starts, "warmup_ms", || {
            format!(
                "{} ms leaves no room for the session and tracer starts ({starts} ms)",
                self.warmup_ms
            )
        })?;
        let budget_us = self.step_min_ms * 1000.0 / 20.0;
        check(
            self.max_stagger_us + self.collective_min_gap_us + self.collective_end_spread_us
                <= budget_us,
            "max_stagger_us",
            || {
                format!(
                    "stagger + min gap + end spread must fit in {budget_us} µs (a twentieth of step_min_ms)"
                )
            },
        )?;
        check(
            self.snapshot_period_ms.is_finite() && self.snapshot_period_ms >= 1.0,
            "snapshot_period_ms",
            || format!("{} is below 1 ms", self.snapshot_period_ms),
        )?;
        check(
            self.snapshot_noise_ns * 1e-6 <= self.snapshot_period_ms / 1000.0,
            "snapshot_noise_ns",
            || {
                format!(
                    "{} ns is above a thousandth of snapshot_period_ms ({} ms): pairs could go backwards",
                    self.snapshot_noise_ns, self.snapshot_period_ms
                )
            },
        )?;
        check(
            self.probe_window_ms.is_finite() && self.probe_window_ms >= 1.0,
            "probe_window_ms",
            || format!("{} is below 1 ms", self.probe_window_ms),
        )?;
        check(
            (1..=17).contains(&self.offset_digits),
            "offset_digits",
            || format!("{} is not in 1..=17", self.offset_digits),
        )?;
        if let Some(clocks) = &self.clocks {
            check(clocks.len() == self.nodes as usize, "clocks", || {
                format!("{} entries for {} nodes", clocks.len(), self.nodes)
            })?;
            for c in clocks {
                check(
                    c.host_offset_ns.is_finite()
                        && c.host_drift_ppm.is_finite()
                        && c.tracer_drift_ppm.is_finite()
                        && (c.host_drift_ppm.abs() + c.tracer_drift_ppm.abs()) < 1000.0,
                    "clocks",
                    || format!("{c:?} has a non-finite value or a rate error over 1000 ppm"),
                )?;
            }
        }
        for &n in &self.non_probing_nodes {
            check(n != 0 && n < self.nodes, "non_probing_nodes", || {
                format!("node {n}: must be a node other than the reference 0")
            })?;
        }
        if let Some(s) = self.straggler {
            check(s.node < self.nodes, "straggler", || {
                format!("node {}: the run has {} nodes", s.node, self.nodes)
            })?;
            let budget_ns = self.step_min_ms * 1e6 / 40.0;
            check(s.delay_ns as f64 <= budget_ns, "straggler", || {
                format!(
                    "a delay of {} ns does not fit in {budget_ns} ns (a fortieth of step_min_ms)",
                    s.delay_ns
                )
            })?;
        }
        for (i, e) in self.probe_errors.iter().enumerate() {
            check(e.node != 0 && e.node < self.nodes, "probe_errors", || {
                format!(
                    "node {}: must be a node of the run other than the reference 0",
                    e.node
                )
            })?;
            check(
                self.probe_errors[..i].iter().all(|o| o.node != e.node),
                "probe_errors",
                || format!("node {} is given twice", e.node),
            )?;
        }
        for rn in &self.unreachable {
            check(rn.node != 0 && rn.node < self.nodes, "unreachable", || {
                format!(
                    "node {}: must be a node other than the reference 0",
                    rn.node
                )
            })?;
        }
        Ok(())
    }
}
