//! `round_offsets.jsonl` as the probe graph calculation writes it
//! (formats.md §3): a meta header, then one row per (round, node).

use std::io::Write;
use std::path::Path;

use crate::SynthError;
use crate::clock::TruePs;
use crate::gfmt::format_g;
use crate::node_file::NodeRun;
use crate::plan::Plan;
use crate::rng::{Rng, Tag};

/// A probe round's window in true time.
#[derive(Clone, Copy, Debug)]
struct Window {
    start: TruePs,
    end: TruePs,
}

/// The probe windows: back to back, each `probe_window_ms` plus a drawn
/// processing time, from `probe_lead_ms` before `epoch_ns` until one opens
/// after the session stop.
fn windows(plan: &Plan) -> Vec<Window> {
    let cfg = &plan.config;
    let mut start =
        TruePs(i128::from(cfg.epoch_ns) * 1000 - (cfg.probe_lead_ms * 1e9).round() as i128);
    let mut out = Vec::new();
    let mut round = 0u64;
    while start < plan.stop {
        let mut r = Rng::keyed(cfg.seed, Tag::Probe, round, u64::MAX, 0);
        let [a, b] = cfg.probe_processing_ms;
        let end = start.plus(((cfg.probe_window_ms + r.uniform(a, b)) * 1e9).round() as i128);
        out.push(Window { start, end });
        start = end;
        round += 1;
    }
    out
}

/// Write `path`; returns the number of rounds.
pub(crate) fn write_offsets(
    plan: &Plan,
    nodes: &[NodeRun],
    path: &Path,
) -> Result<u64, SynthError> {
    let cfg = &plan.config;
    let digits = cfg.offset_digits;
    let mut text = String::new();
    text.push_str("{\"meta\":true,\"nodes\":[");
    for (i, n) in nodes.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!(
            "{{\"node_id\":{},\"start_walltime_ns\":{},\"start_gpu_ns\":{}}}",
            n.node_id, n.start_walltime_ns, n.start_gpu_ns
        ));
    }
    text.push_str("]}\n");
    let reference = &plan.clocks[0];
    let wins = windows(plan);
    for (round, win) in wins.iter().enumerate() {
        let round = round as u64;
        let ref_ws = reference.host_ns(win.start);
        let ref_we = reference.host_ns(win.end);
        for node in 0..cfg.nodes {
            let clock = &plan.clocks[node as usize];
            let probes = !cfg.non_probing_nodes.contains(&node);
            let reachable = !cfg
                .unreachable
                .iter()
                .any(|u| u.round == round && u.node == node);
            let (ws, we) = if probes {
                (clock.host_ns(win.start), clock.host_ns(win.end))
            } else {
                (ref_ws, ref_we)
            };
            let (offset, drift) = if node == 0 || !reachable {
                (0.0, 0.0)
            } else {
                // The true offset at the row's midpoint, read on the clock the window is in.
                let mid_ps = (ws + we) * 1000 / 2;
                let t = if probes {
                    clock.true_at_host(mid_ps)
                } else {
                    reference.true_at_host(mid_ps)
                };
                let offset_ps = clock.host_ps(t) - reference.host_ps(t);
                // Rate relative to the parent (node 0) over the window.
                let di = clock.host_ps(win.end) - clock.host_ps(win.start);
                let d0 = reference.host_ps(win.end) - reference.host_ps(win.start);
                let drift = (di - d0) as f64 / d0 as f64 * 1e6;
                let mut r = Rng::keyed(cfg.seed, Tag::Probe, round, u64::from(node), 1);
                let measured = offset_ps as f64 / 1000.0 + cfg.offset_noise_ns * r.normal();
                // A probe graph bug acts on the measured (noisy) offset.
                let written = match cfg.probe_errors.iter().find(|e| e.node == node) {
                    Some(e) => e.apply(measured),
                    None => measured,
                };
                (written, drift + cfg.drift_noise_ppm * r.normal())
            };
            text.push_str(&format!(
                "{{\"round_id\":{round},\"window_id\":{round},\"window_start_ns\":{ws},\"window_end_ns\":{we},\"node_id\":{node},\"offset_ns\":{},\"drift_ppm\":{},\"residual\":0,\"reachable\":{reachable},\"converged\":true}}\n",
                format_g(offset, digits),
                format_g(drift, digits),
            ));
        }
    }
    xplane_proto::write_atomically(path, |f| f.write_all(text.as_bytes()))?;
    Ok(wins.len() as u64)
}
