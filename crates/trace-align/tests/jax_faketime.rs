//! Real JAX runs whose processes ran with known clock errors
//! (`fixtures/jax-faketime`: ranks 1.. under libfaketime, the true clock
//! recorded beside the faked one), aligned from their collectives alone and
//! compared with the truth.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alignment_core::AlignOptions;
use clock_model::HostTime;
use collective_check::{
    Extraction, NodeId, NodeSource, Options as CheckOptions, PlaneChoice, extract_file,
};
use collective_clock::{Estimate, Estimator, Evidence, JointOutcome, Options, Role, estimate};
use trace_align::{ClockEvidence, ClockSource, MergeSettings, RunFiles, TraceFormat};

/// The recorded runs and their number of ranks.
const RUNS: [(&str, u32); 3] = [
    ("n2_skew_250steps", 2),
    ("n4_skew_300steps", 4),
    ("n4_skew_1thread_350steps", 4),
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-faketime")
        .join(name)
}

/// One truth row: the faked clock the profiler read, and the true clock.
struct TruthRow {
    faked_ns: i64,
    true_ns: i64,
}

fn truth(dir: &Path, rank: u32) -> Vec<TruthRow> {
    let path = dir.join(format!("rank{rank}.truth.jsonl"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            TruthRow {
                faked_ns: row["faked_ns"].as_i64().unwrap(),
                true_ns: row["true_ns"].as_i64().unwrap(),
            }
        })
        .collect()
}

/// The `q`-quantile of sorted `v`.
fn quantile(v: &[i128], q: f64) -> i128 {
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// Align the run `name` from its collectives (as `merge --clock-source
/// collectives` does) and return, per rank, the sorted |error| (ns) against
/// the truth; see [`errors_of`].
fn errors_against_truth(name: &str, ranks: u32) -> Vec<Vec<i128>> {
    let dir = fixture(name);
    let run = RunFiles::discover(&dir).unwrap();
    assert_eq!(run.format().unwrap(), TraceFormat::XSpace);
    assert_eq!(run.nodes.len(), ranks as usize);
    let plan = run
        .plan_with(&AlignOptions::default(), ClockSource::Collectives)
        .unwrap();
    let ClockEvidence::Collectives(estimate) = &plan.clocks else {
        panic!("not aligned from the collectives");
    };
    assert_eq!(estimate.report.violated_constraints(), 0);
    errors_of(name, estimate, ranks, "default")
}

/// Per rank, the sorted |error| (ns) of `estimate`'s correction at every
/// truth row inside the span its collectives cover: the corrected faked
/// reading against the true one (rank 0 keeps the true clock and is the
/// reference). Prints p50, p99 and max per rank, and checks that the truth
/// lies in the feasible interval of each fitted rank.
fn errors_of(name: &str, estimate: &Estimate, ranks: u32, label: &str) -> Vec<Vec<i128>> {
    errors_with(name, estimate, ranks, label, true)
}

/// [`errors_of`], checking the feasible interval only when `truth_inside`.
fn errors_with(
    name: &str,
    estimate: &Estimate,
    ranks: u32,
    label: &str,
    truth_inside: bool,
) -> Vec<Vec<i128>> {
    let dir = fixture(name);
    (0..ranks)
        .map(|rank| {
            let node = rank;
            let report = estimate.report.node(NodeId(node)).unwrap();
            let first = report.segments.first().map(|s| s.start_host_ns);
            let last = report.segments.last().map(|s| s.end_host_ns);
            let mut errors: Vec<i128> = truth(&dir, rank)
                .iter()
                .filter(|row| {
                    report.reference
                        || (first.is_some_and(|f| row.faked_ns >= f)
                            && last.is_some_and(|l| row.faked_ns <= l))
                })
                .map(|row| {
                    let g = estimate
                        .to_global(NodeId(node), HostTime::from_ns(row.faked_ns))
                        .unwrap();
                    (g.as_ns_floor() - i128::from(row.true_ns)).abs()
                })
                .collect();
            errors.sort_unstable();
            assert!(
                errors.len() > 50,
                "rank {rank}: {} truth rows",
                errors.len()
            );
            let offset = report.segments.first().map_or(0, |s| s.offset_start_ns);
            let drift = report.segments.first().map_or(0, |s| s.drift_ppb);
            println!(
                "{name} {label} rank {rank}: correction at start {offset} ns, drift {drift} ppb; \
                 {} truth rows; |error| p50 {} ns, p99 {} ns, max {} ns{}",
                errors.len(),
                quantile(&errors, 0.5),
                quantile(&errors, 0.99),
                errors[errors.len() - 1],
                feasible_against_truth(&dir, rank, report, truth_inside)
            );
            errors
        })
        .collect()
}

/// For a fitted rank: the half-widths the fit reports for its first segment
/// (start, middle, end, µs), and the true correction at the segment's
/// middle, which must lie in the feasible interval reported there.
fn feasible_against_truth(
    dir: &Path,
    rank: u32,
    report: &collective_clock::NodeReport,
    truth_inside: bool,
) -> String {
    let Some(seg) = report.segments.first().filter(|_| !report.reference) else {
        return String::new();
    };
    let us = |v: Option<i64>| v.map_or("-".to_string(), |v| (v / 1000).to_string());
    let u = &seg.uncertainty;
    let middle = seg.start_host_ns + (seg.end_host_ns - seg.start_host_ns) / 2;
    let truth = faked_to_true(&truth(dir, rank), middle) - middle;
    // Every constraint holds on the true clocks
    // (`the_tightest_constraints_are_uneven_latencies_not_descheduling`), so
    // the truth lies in the feasible interval: the reported half-width
    // covers the error on these runs.
    let Some([lo, hi]) = seg.feasible_middle_ns else {
        assert!(!truth_inside, "rank {rank}: no bounded interval");
        return format!("; true correction at the middle {truth} ns, no bounded interval");
    };
    if let Some([jlo, jhi]) = seg.joint_feasible.and_then(|r| r.middle_ns) {
        // The whole run's feasible range holds the truth and, where the
        // other ranks' estimates are feasible (the centre), the one above.
        assert!(
            !truth_inside || (jlo <= lo && hi <= jhi),
            "rank {rank}: [{jlo}, {jhi}] ⊉ [{lo}, {hi}]"
        );
        assert!(
            (jlo..=jhi).contains(&truth),
            "rank {rank}: true correction {truth} ns outside the joint [{jlo}, {jhi}]"
        );
    }
    let inside = (lo..=hi).contains(&truth);
    assert!(
        inside || !truth_inside,
        "rank {rank}: true correction {truth} ns outside [{lo}, {hi}]"
    );
    let inside = format!(
        "true correction {truth} ns {} [{lo}, {hi}]",
        if inside { "in" } else { "OUTSIDE" }
    );
    format!(
        "; half-width {} / {} / {} µs; at the middle {inside}",
        us(u.start_ns),
        us(u.middle_ns),
        us(u.end_ns)
    )
}

/// The run's collectives, each trace read on its own clock.
fn evidence(name: &str) -> Evidence {
    let run = RunFiles::discover(fixture(name)).unwrap();
    let mut options = CheckOptions::default();
    options.include_point_to_point = true;
    let mut all = Extraction::new();
    for (node, trace) in run.traces() {
        extract_file(&trace, NodeSource::Given(node), &options, &mut all).unwrap();
    }
    Evidence::from_extraction(&all, PlaneChoice::Auto)
}

/// Merge the run from its collectives: every violation is removed.
fn merge_removes_violations(name: &str) {
    let run = RunFiles::discover(fixture(name)).unwrap();
    let plan = run
        .plan_with(&AlignOptions::default(), ClockSource::Collectives)
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let outcome = plan
        .merge(
            out.path().join("merged.xplane.pb"),
            &MergeSettings::default(),
        )
        .unwrap();
    let (before, after) = (outcome.before.unwrap(), outcome.after.unwrap());
    println!(
        "{name}: {} instances; violations {} before, {} after",
        before.summary.counts.matched, before.summary.violations, after.summary.violations
    );
    assert!(before.summary.violations > 100, "the skew shows before");
    assert_eq!(after.summary.violations, 0);
    assert_eq!(outcome.merge.as_ref().unwrap().nodes.len(), run.nodes.len());
}

/// Align the run `name` (as the plan does) and check every rank's p99
/// |error| against the truth is below `bound_ns`.
fn p99_below(name: &str, ranks: u32, bound_ns: i128) {
    for (rank, e) in errors_against_truth(name, ranks).iter().enumerate() {
        let p99 = quantile(e, 0.99);
        assert!(p99 < bound_ns, "{name} rank {rank}: p99 {p99} ns");
    }
}

/// Two processes, rank 1 skewed by +3.7 ms/+25 ppm (at libfaketime's start),
/// 250 steps of psum, all_gather, psum_scatter and ppermute over 12.6 s.
#[test]
fn n2_skewed_rank_is_brought_back_to_the_true_clock() {
    // Measured with the default (`auto` → centre): rank 1 p50 1.3 µs, p99
    // 1.8 µs (docs/accuracy.md; the combined fit 23 µs); the target is
    // 20 µs.
    p99_below("n2_skew_250steps", 2, 20_000);
}

/// Four processes on two cores, ranks 1–3 skewed by +3.7 ms/+25 ppm,
/// −1.2 ms/−15 ppm and +11.5 ms/+10 ppm, 300 steps over 16.6 s.
#[test]
fn n4_skewed_ranks_are_brought_back_to_the_true_clock() {
    // Measured with the default (`auto` → centre): p99 11, 18 and 20 µs for
    // ranks 1–3 (docs/accuracy.md; the combined fit: 37, 39 and 53 µs),
    // with the collective permutes' one-way constraints bounding each
    // offset to ±36–61 µs (without them: p99 54, 57 and 13 µs, ±112–298
    // µs); the tightest constraints have uneven latencies in the two
    // directions of a pair (see
    // `the_tightest_constraints_are_uneven_latencies_not_descheduling`).
    p99_below("n4_skew_300steps", 4, 80_000);
}

/// The same clock errors with less contention: every process runs XLA on
/// one thread and is bound to one of the two cores (ranks 0 and 2 on one,
/// 1 and 3 on the other), with a 4×16 block per rank; 350 steps over
/// 15.3 s.
#[test]
fn n4_one_thread_per_process_ranks_are_brought_back_to_the_true_clock() {
    // Measured with the default (`auto` → centre): p99 75, 86 and 59 µs for
    // ranks 1–3 (docs/accuracy.md; 64, 70 and 76 µs without the collective
    // permutes' one-way constraints, so the bound was raised from 80 to
    // 100 µs when they came in): the collectives are no shorter, and the
    // reduce-scatter still ends ranks 1 and 2 last
    // (`the_reduce_scatter_ends_ranks_1_and_2_last`); the permutes narrow
    // the feasible region (±78–139 µs against ±142–270 µs) but its centre
    // is not nearer the truth on this run, and the 40 µs target is not
    // reached.
    p99_below("n4_skew_1thread_350steps", 4, 100_000);
}

#[test]
fn merge_from_collectives_removes_every_violation() {
    for (name, _) in RUNS {
        merge_removes_violations(name);
    }
}

/// The three estimators of `collective-clock` on the same recorded
/// collectives (`--nocapture` prints the figures of `docs/accuracy.md`):
/// the default one is what the plan used, and the centre and the combined
/// fit violate no constraint. A rank's feasible interval is taken with the
/// other ranks at their fitted corrections: the truth must lie in it for
/// the centre (the default on these runs), whose fit is close to the truth
/// on every rank; for the regression and the combined fit, whose errors on
/// the other ranks reach tens of µs, it is printed (`OUTSIDE` where it
/// misses) but not required.
#[test]
fn estimators_compared_against_the_truth() {
    for (name, ranks) in RUNS {
        let ev = evidence(name);
        let planned = errors_against_truth(name, ranks);
        for estimator in Estimator::ALL.into_iter().chain([Estimator::JointCentre]) {
            let fit = estimate(&ev, NodeId(0), &Options::with_estimator(estimator)).unwrap();
            if estimator != Estimator::Regression {
                assert_eq!(fit.report.violated_constraints(), 0, "{estimator}");
            }
            if estimator == Estimator::JointCentre {
                // The joint centre widens the least slack of the sweeps'
                // fixed point, or keeps it.
                let Some(JointOutcome::Solved {
                    sweeps_slack_ns,
                    joint_slack_ns,
                    ..
                }) = fit.report.joint
                else {
                    panic!("{name}: {:?}", fit.report.joint);
                };
                assert!(joint_slack_ns >= sweeps_slack_ns, "{name}");
            }
            let centre = estimator == Estimator::Centre || estimator == Estimator::default();
            let errors = errors_with(name, &fit, ranks, estimator.as_str(), centre);
            if estimator == Estimator::default() {
                assert_eq!(errors, planned, "{name}: the plan's fit is the default one");
            }
        }
    }
}

/// The correction `true − faked` of a rank where the clock `clock` picks
/// from a truth row reads `at`, interpolated between the rows around it.
fn correction_at(rows: &[TruthRow], clock: impl Fn(&TruthRow) -> i64, at: i64) -> i64 {
    let k = rows
        .partition_point(|r| clock(r) <= at)
        .clamp(1, rows.len() - 1);
    let (a, b) = (&rows[k - 1], &rows[k]);
    let (ca, cb) = (a.true_ns - a.faked_ns, b.true_ns - b.faked_ns);
    let t = i128::from(at - clock(a));
    let span = i128::from(clock(b) - clock(a));
    ca + (i128::from(cb - ca) * t / span) as i64
}

/// The true correction of a rank at true time `g`.
fn true_correction(rows: &[TruthRow], g: i64) -> i64 {
    correction_at(rows, |r| r.true_ns, g)
}

/// `Plan::correction_curves`: the correction each node gets, sampled over
/// the run, follows the true clock error (rank 0 is the reference: 0).
#[test]
fn correction_curves_follow_the_true_clock_error() {
    let dir = fixture("n2_skew_250steps");
    let plan = RunFiles::discover(&dir)
        .unwrap()
        .plan_with(&AlignOptions::default(), ClockSource::Collectives)
        .unwrap();
    let rows = truth(&dir, 1);
    // Inside the span the collectives cover.
    let (start, end) = (
        rows[rows.len() / 5].true_ns,
        rows[rows.len() * 4 / 5].true_ns,
    );
    let curves = plan.correction_curves(start, end, 50).unwrap();
    assert_eq!(
        curves.iter().map(|c| c.node.get()).collect::<Vec<_>>(),
        [0, 1]
    );
    assert!(curves[0].points.iter().all(|&(_, c)| c == 0));
    assert_eq!(curves[1].points.len(), 50);
    assert_eq!(curves[1].points[0].0, start);
    assert_eq!(curves[1].points[49].0, end);
    let worst = curves[1]
        .points
        .iter()
        .map(|&(g, c)| (c - true_correction(&rows, g)).abs())
        .max()
        .unwrap();
    println!("correction curve of rank 1: worst |error| {worst} ns over 50 samples");
    // The fit's p99 against the truth is 23 µs (docs/accuracy.md); the
    // correction itself is about −3.7 ms.
    assert!(worst < 40_000, "{worst} ns");
    assert!(curves[1].points.iter().all(|&(_, c)| c < -3_000_000));
}

/// The true time of a rank's faked reading `f`.
fn faked_to_true(rows: &[TruthRow], f: i64) -> i64 {
    f + correction_at(rows, |r| r.faked_ns, f)
}

/// Per op kind (the op name before its first `.`): the shortest duration
/// of each rank's part (its own clock), and per ordered pair of ranks
/// `(i, j)` the least `end_j − begin_i` in true time over the kind's
/// instances: the tightest constraint between `i` and `j` as the truth sees
/// it. Indexed `[i][j]`, `i64::MAX` where never measured.
type Tightest = BTreeMap<String, (Vec<i64>, Vec<Vec<i64>>)>;

/// One rank's part in an instance: its rank, its duration on its own
/// clock, its begin and end in true time, and which of them constrain the
/// other parts.
type TruePart = (usize, i64, i64, i64, Role);

/// Every instance of the run's collectives: its op kind (the op name
/// before its first `.`) and its parts.
fn instances_in_true_time(name: &str, ranks: u32) -> Vec<(String, Vec<TruePart>)> {
    let dir = fixture(name);
    let rows: Vec<Vec<TruthRow>> = (0..ranks).map(|r| truth(&dir, r)).collect();
    let ev = evidence(name);
    ev.instances()
        .iter()
        .map(|inst| {
            let kind = ev.op_name(inst.op).split('.').next().unwrap().to_string();
            let parts = inst
                .members
                .iter()
                .map(|m| {
                    let r = m.node.0 as usize;
                    let (b, e) = (m.begin.as_ns_floor() as i64, m.end.as_ns_floor() as i64);
                    (
                        r,
                        e - b,
                        faked_to_true(&rows[r], b),
                        faked_to_true(&rows[r], e),
                        m.role,
                    )
                })
                .collect();
            (kind, parts)
        })
        .collect()
}

fn tightest_true_slacks(name: &str, ranks: u32) -> Tightest {
    let n = ranks as usize;
    let mut out = Tightest::new();
    for (kind, times) in instances_in_true_time(name, ranks) {
        let (own, cross) = out
            .entry(kind)
            .or_insert_with(|| (vec![i64::MAX; n], vec![vec![i64::MAX; n]; n]));
        for &(i, duration, begin, _, role) in times.iter().filter(|t| t.4.starts()) {
            if role == Role::Both {
                own[i] = own[i].min(duration);
            }
            for &(j, _, _, end, _) in times.iter().filter(|t| t.0 != i && t.4.ends()) {
                cross[i][j] = cross[i][j].min(end - begin);
            }
        }
    }
    out
}

/// Where the constraints of the 4-process run bind in truth: every
/// constraint holds on the true clocks, but the tightest ones leave
/// 108–369 µs between one rank's begin and another's end (the collectives'
/// own latency), unevenly between the two directions of a pair. The centre
/// of the feasible region puts each pair midway, so it is off by half that
/// asymmetry: the reduce_scatters of ranks 0 and 1 leave 254 µs one way and
/// 147 µs the other, and the default fit is 53 µs off on rank 1
/// (docs/accuracy.md). Descheduling only widens a slack, so it is not what
/// binds.
#[test]
fn the_tightest_constraints_are_uneven_latencies_not_descheduling() {
    for (name, ranks) in RUNS {
        for (kind, (own, cross)) in tightest_true_slacks(name, ranks) {
            let us = |v: &[i64]| -> Vec<i64> {
                v.iter()
                    .map(|&t| if t == i64::MAX { -1 } else { t / 1000 })
                    .collect()
            };
            println!("{name} {kind}: shortest part per rank (µs) {:?}", us(&own));
            for (i, row) in cross.iter().enumerate() {
                println!(
                    "  least end − begin of rank {i} in true time (µs) {:?}",
                    us(row)
                );
                assert!(
                    row.iter().all(|&t| t > 0),
                    "{name} {kind}: the truth violates a constraint"
                );
            }
            if name == "n4_skew_300steps" && kind == "reduce_scatter" {
                let uneven = (cross[0][1] - cross[1][0]).abs();
                assert!(uneven > 80_000, "ranks 0 and 1: {uneven} ns");
            }
        }
    }
}

/// The run's collectives of one op kind (the op name before its first `.`).
fn evidence_of_kind(all: &Evidence, kind: &str) -> Evidence {
    let mut ev = Evidence::new();
    ev.nodes = all.nodes.clone();
    for inst in all.instances() {
        let op = all.op_name(inst.op);
        if op.split('.').next() == Some(kind) {
            let parts: Vec<_> = inst
                .members
                .iter()
                .map(|m| (m.node, m.begin, m.end))
                .collect();
            ev.push_all_to_all(op, inst.key.clone(), &parts);
        }
    }
    ev
}

/// The centre fitted on each op kind's collectives alone: each kind's
/// tightest constraints have their own uneven latencies, so the kinds
/// disagree by tens of µs; the mean of their corrections is printed beside
/// them (`--nocapture`).
#[test]
fn centres_of_each_op_kind_against_the_truth() {
    let name = "n4_skew_300steps";
    let ranks = 4;
    let all = evidence(name);
    let dir = fixture(name);
    let options = Options::with_estimator(Estimator::Centre);
    let kinds = ["all_gather", "psum_invariant", "reduce_scatter"];
    let fits: Vec<Estimate> = kinds
        .iter()
        .map(|kind| {
            let fit = estimate(&evidence_of_kind(&all, kind), NodeId(0), &options).unwrap();
            assert_eq!(fit.report.violated_constraints(), 0, "{kind}");
            fit
        })
        .collect();
    for rank in 1..ranks {
        let rows = truth(&dir, rank);
        let inner = &rows[rows.len() / 10..rows.len() * 9 / 10];
        let mut per_kind = vec![Vec::new(); kinds.len()];
        let mut mean = Vec::new();
        for row in inner {
            let h = HostTime::from_ns(row.faked_ns);
            let errs: Vec<i128> = fits
                .iter()
                .map(|f| {
                    f.to_global(NodeId(rank), h).unwrap().as_ns_floor() - i128::from(row.true_ns)
                })
                .collect();
            for (k, e) in errs.iter().enumerate() {
                per_kind[k].push(e.abs());
            }
            mean.push((errs.iter().sum::<i128>() / errs.len() as i128).abs());
        }
        let p99 = |mut v: Vec<i128>| {
            v.sort_unstable();
            quantile(&v, 0.99) / 1000
        };
        let kind_p99: Vec<String> = kinds
            .iter()
            .zip(per_kind)
            .map(|(k, v)| format!("{k} {}", p99(v)))
            .collect();
        println!(
            "{name} rank {rank}: centre of one kind, p99 |error| (µs): {}; their mean {}",
            kind_p99.join(", "),
            p99(mean)
        );
    }
}

/// Per op kind and rank, the least time (true time) from the last begin of
/// an all-to-all style instance in which every rank takes part to the
/// rank's end.
fn least_end_after_last_begin(name: &str, ranks: u32) -> BTreeMap<String, Vec<i64>> {
    let mut out = BTreeMap::<String, Vec<i64>>::new();
    for (kind, parts) in instances_in_true_time(name, ranks) {
        if parts.len() != ranks as usize || parts.iter().any(|p| p.4 != Role::Both) {
            continue;
        }
        let last_begin = parts.iter().map(|p| p.2).max().expect("members");
        let least = out
            .entry(kind)
            .or_insert_with(|| vec![i64::MAX; ranks as usize]);
        for &(rank, _, _, end, _) in &parts {
            least[rank] = least[rank].min(end - last_begin);
        }
    }
    out
}

/// Why the tightest constraints of a 4-process run are uneven: once the
/// last rank has begun, XLA's gloo reduce-scatter (gloo's halving-doubling
/// algorithm) ends ranks 1 and 2 well after ranks 0 and 3 (on
/// `n4_skew_300steps` at least 254 and 258 µs against 111 and 108 µs, on
/// `n4_skew_1thread_350steps` 239 and 209 against 109 and 131 µs), while
/// for the all-reduce and the all-gather the rank that ends last changes
/// from run to run. So a reduce-scatter's constraint from rank 0 to rank 1
/// leaves more room than the one from rank 1 to rank 0, with or without
/// contention.
#[test]
fn the_reduce_scatter_ends_ranks_1_and_2_last() {
    for (name, ranks) in RUNS.into_iter().filter(|&(_, r)| r == 4) {
        let least = least_end_after_last_begin(name, ranks);
        for (kind, v) in &least {
            let us: Vec<i64> = v.iter().map(|t| t / 1000).collect();
            println!("{name} {kind}: least end after the last begin per rank (µs) {us:?}");
        }
        let rs = &least["reduce_scatter"];
        let gap = rs[1].min(rs[2]) - rs[0].max(rs[3]);
        assert!(
            gap > 60_000,
            "{name}: ranks 1 and 2 end {gap} ns after 0 and 3"
        );
    }
}

/// The 2×2 `(data, model)` mesh run: ranks 0–3 are devices 0, 2048, 4096
/// and 6144; per step a `psum` over `model` (`psum_invariant.15`, groups
/// {0,1} and {2,3}), an `all_gather` over `data` (`all_gather.3`, groups
/// {0,2} and {1,3}), a `psum` over both (`psum_invariant.14`) and a
/// `ppermute` within each row (`ppermute.3`); 60 steps, the clock errors of
/// the 4-process runs.
const MESH: &str = "mesh2x2_skew_60steps";

/// The run's collectives on their own clocks, with every occurrence's
/// replica group forgotten: every `run_id` is one instance, as the
/// matching was before it read the groups.
fn evidence_without_groups(name: &str) -> Evidence {
    let run = RunFiles::discover(fixture(name)).unwrap();
    let mut all = Extraction::new();
    for (node, trace) in run.traces() {
        extract_file(
            &trace,
            NodeSource::Given(node),
            &CheckOptions::default(),
            &mut all,
        )
        .unwrap();
    }
    let mut merged = Extraction::new();
    for o in all.occurrences() {
        let op = merged.intern(all.name(o.op));
        let module = o.module.map(|m| merged.intern(all.name(m)));
        merged.push(collective_check::Occurrence {
            op,
            module,
            group: collective_check::ReplicaGroup::All,
            ..*o
        });
    }
    merged.nodes = all.nodes.clone();
    Evidence::from_extraction(&merged, PlaneChoice::Auto)
}

/// Per instance of `ev`, its op and its members' ranks; and the number of
/// its constraints (`end_i >= begin_j`, i ≠ j, `i` a member whose end
/// counts and `j` one whose begin counts) that the true clocks break.
fn false_constraints(name: &str, ev: &Evidence) -> (BTreeMap<String, Vec<Vec<u32>>>, usize) {
    let dir = fixture(name);
    let rows: Vec<Vec<TruthRow>> = (0..4).map(|r| truth(&dir, r)).collect();
    let mut members: BTreeMap<String, Vec<Vec<u32>>> = BTreeMap::new();
    let mut broken = 0;
    for inst in ev.instances() {
        let parts: Vec<(u32, i64, i64, Role)> = inst
            .members
            .iter()
            .map(|m| {
                let r = m.node.0;
                let at = |t: HostTime| faked_to_true(&rows[r as usize], t.as_ns_floor() as i64);
                (r, at(m.begin), at(m.end), m.role)
            })
            .collect();
        broken += parts
            .iter()
            .filter(|i| i.3.ends())
            .flat_map(|i| {
                parts
                    .iter()
                    .filter(move |j| j.0 != i.0 && j.3.starts())
                    .map(move |j| (i, j))
            })
            .filter(|(i, j)| i.2 < j.1)
            .count();
        members
            .entry(ev.op_name(inst.op).to_owned())
            .or_default()
            .push(parts.iter().map(|p| p.0).collect());
    }
    (members, broken)
}

/// The collective permutes' pairs, from their HLO, as one-way constraints:
/// on the ring of `n4_skew_300steps` each rank receives from the one
/// before it, on the mesh each rank of a row from the other; in true time
/// every receiver ends after its sender began.
#[test]
fn permute_pairs_hold_on_the_true_clocks() {
    for (name, want) in [("n4_skew_300steps", 1200), (MESH, 240)] {
        let dir = fixture(name);
        let rows: Vec<Vec<TruthRow>> = (0..4).map(|r| truth(&dir, r)).collect();
        let ev = evidence(name);
        let mut least = i64::MAX;
        let mut count = 0;
        for inst in ev.instances() {
            if ev.op_name(inst.op) != "ppermute.3" {
                continue;
            }
            let at = |role: Role| {
                let m = inst.members.iter().find(|m| m.role == role).unwrap();
                let (r, t) = (m.node.0, if role.starts() { m.begin } else { m.end });
                (r, faked_to_true(&rows[r as usize], t.as_ns_floor() as i64))
            };
            let ((from, begin), (to, end)) = (at(Role::Sends), at(Role::Receives));
            let next = if name == MESH {
                from ^ 1
            } else {
                (from + 1) % 4
            };
            assert_eq!(to, next, "{name}: rank {from} sends to {to}");
            least = least.min(end - begin);
            count += 1;
        }
        println!("{name}: {count} permute pairs, least true end − begin {least} ns");
        assert_eq!(count, want, "{name}");
        assert!(
            least > 0,
            "{name}: the truth breaks a permute pair ({least} ns)"
        );
    }
}

/// Each replica group of a collective over one mesh axis is an instance of
/// its own, and no constraint of the run is false on the true clocks;
/// matched by `run_id` alone, the two groups of an op are one instance
/// whose cross-group constraints the truth breaks.
#[test]
fn mesh_sub_axis_collectives_are_one_instance_per_group() {
    let (by_op, broken) = false_constraints(MESH, &evidence(MESH));
    let groups = |op: &str| {
        let mut sets: BTreeMap<Vec<u32>, usize> = BTreeMap::new();
        for m in &by_op[op] {
            let mut m = m.clone();
            m.sort_unstable();
            *sets.entry(m).or_default() += 1;
        }
        sets.into_iter().collect::<Vec<_>>()
    };
    assert_eq!(groups("psum_invariant.14"), [(vec![0, 1, 2, 3], 60)]);
    assert_eq!(
        groups("psum_invariant.15"),
        [(vec![0, 1], 60), (vec![2, 3], 60)]
    );
    assert_eq!(groups("all_gather.3"), [(vec![0, 2], 60), (vec![1, 3], 60)]);
    // The ppermutes within each row: one one-way instance per direction.
    assert_eq!(groups("ppermute.3"), [(vec![0, 1], 120), (vec![2, 3], 120)]);
    assert_eq!(broken, 0);

    let (merged, merged_broken) = false_constraints(MESH, &evidence_without_groups(MESH));
    let sizes: Vec<usize> = merged["psum_invariant.15"].iter().map(Vec::len).collect();
    assert!(sizes.iter().all(|&n| n == 4), "{sizes:?}");
    println!("{MESH}: false constraints by run_id alone {merged_broken}, by group {broken}");
    assert!(merged_broken > 100, "{merged_broken}");
}

/// The mesh run aligned from its collectives against the truth (every
/// constraint holds, the truth lies in each rank's feasible interval), and
/// what matching by `run_id` alone gives: constraints that cannot all hold,
/// and feasible intervals that miss the truth.
#[test]
fn mesh_ranks_are_brought_back_to_the_true_clock() {
    // Measured (docs/accuracy.md): p99 16, 23 and 14 µs for ranks 1–3
    // (14, 22 and 14 µs without the permutes' one-way constraints); by
    // run_id alone 378 violated constraints and p99 2.0, 3.9 and 5.2 ms
    // (ranks 2 and 3 at the drift bound).
    p99_below(MESH, 4, 80_000);
    let fit = estimate(
        &evidence_without_groups(MESH),
        NodeId(0),
        &Options::default(),
    )
    .unwrap();
    let violated = fit.report.violated_constraints();
    println!("{MESH} run_id alone: {violated} violated constraints");
    let errors = errors_with(MESH, &fit, 4, "run_id alone", false);
    assert!(violated > 100, "{violated}");
    assert!(errors.iter().any(|e| quantile(e, 0.99) > 1_000_000));
}

#[test]
fn mesh_merge_from_collectives_removes_every_violation() {
    merge_removes_violations(MESH);
}

/// A short real run with a clock error written in: the first `span_ns` of
/// the recording `name`'s collectives, every rank's times put on the true
/// clock (its truth rows), then rank `moved`'s moved by `offset_ns` plus
/// `ppm` parts per million of the time since the cut's start. Returns the
/// evidence and, per rank, the written clock's error (written − true) as a
/// function of the written time.
fn written_short_run(
    name: &str,
    ranks: u32,
    span_ns: i64,
    moved: u32,
    (offset_ns, ppm): (i64, f64),
) -> (Evidence, impl Fn(NodeId, i128) -> f64) {
    let dir = fixture(name);
    let rows: Vec<Vec<TruthRow>> = (0..ranks).map(|r| truth(&dir, r)).collect();
    let full = evidence(name);
    let true_ns = |m: &collective_clock::Member, t: HostTime| {
        faked_to_true(&rows[m.node.0 as usize], t.as_ns_floor() as i64)
    };
    let start = full
        .instances()
        .iter()
        .flat_map(|i| i.members.iter().map(|m| true_ns(m, m.begin)))
        .min()
        .unwrap();
    // The written clock of `node` at true time `t`, ns.
    let write = move |node: NodeId, t: i64| -> i64 {
        if node.0 != moved {
            return t;
        }
        t + offset_ns + (ppm * 1e-6 * (t - start) as f64).round() as i64
    };
    let mut ev = Evidence::new();
    for inst in full.instances() {
        let first = inst
            .members
            .iter()
            .map(|m| true_ns(m, m.begin))
            .min()
            .unwrap();
        let last = inst
            .members
            .iter()
            .map(|m| true_ns(m, m.end))
            .max()
            .unwrap();
        if first < start || last > start + span_ns {
            continue;
        }
        let at = |m: &collective_clock::Member, t: HostTime| {
            HostTime::from_ns(write(m.node, true_ns(m, t)))
        };
        let op = full.op_name(inst.op);
        match inst.members.as_slice() {
            [s, r] if s.role == Role::Sends && r.role == Role::Receives => ev.push_one_way(
                op,
                inst.key.clone(),
                (s.node, at(s, s.begin)),
                (r.node, at(r, r.end)),
            ),
            [r, s] if s.role == Role::Sends && r.role == Role::Receives => ev.push_one_way(
                op,
                inst.key.clone(),
                (s.node, at(s, s.begin)),
                (r.node, at(r, r.end)),
            ),
            members => {
                let parts: Vec<_> = members
                    .iter()
                    .map(|m| (m.node, at(m, m.begin), at(m, m.end)))
                    .collect();
                ev.push_all_to_all(op, inst.key.clone(), &parts);
            }
        }
    }
    // Written time w of the moved rank: w = t + offset + ppm·(t − start),
    // so its error at w is (w − start − offset)·ppm/(1 + ppm) + offset.
    let error = move |node: NodeId, w_ns: i128| -> f64 {
        if node.0 != moved {
            return 0.0;
        }
        let p = ppm * 1e-6;
        let t = (w_ns as f64 - offset_ns as f64 - start as f64) / (1.0 + p) + start as f64;
        w_ns as f64 - t
    };
    (ev, error)
}

/// The default estimate of a written short run: per fitted rank, the
/// sorted |error| (ns) at every member's begin and end; prints the choice.
fn short_run_errors(name: &str, ranks: u32, span_ns: i64, written: (i64, f64)) -> Vec<(u32, f64)> {
    let mut worst = Vec::new();
    for moved in 1..ranks {
        let (ev, error) = written_short_run(name, ranks, span_ns, moved, written);
        let est = estimate(&ev, NodeId(0), &Options::default()).unwrap();
        assert_eq!(est.report.violated_constraints(), 0, "{name}");
        let mut by_rank: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
        for inst in ev.instances() {
            for m in &inst.members {
                for t in [m.begin, m.end] {
                    let off = est.offset_ps(m.node, t).unwrap() as f64 / 1000.0;
                    // The correction undoes the written error.
                    let e = (off + error(m.node, t.as_ns_floor())).abs();
                    by_rank.entry(m.node.0).or_default().push(e);
                }
            }
        }
        let p99 = by_rank
            .values_mut()
            .map(|v| {
                v.sort_by(f64::total_cmp);
                v[((v.len() - 1) as f64 * 0.99).round() as usize]
            })
            .fold(0.0, f64::max);
        println!(
            "{name}: first {:.1} s, {} instances, rank {moved} written {} ns / {} ppm: p99 {:.1} µs; {}",
            span_ns as f64 / 1e9,
            ev.instances().len(),
            written.0,
            written.1,
            p99 / 1000.0,
            est.report.choice.as_ref().unwrap()
        );
        worst.push((moved, p99));
    }
    worst
}

/// A real 2-process run cut to its first 2.5 s, every clock put on the
/// truth and a constant +3.7 ms written into rank 1: no drift is invented
/// (p99 within 10 µs); with +25 ppm written in too, within 20 µs.
#[test]
fn a_short_run_with_a_written_offset_comes_back_without_invented_drift() {
    for (written, bound_ns) in [((3_700_000, 0.0), 10_000.0), ((3_700_000, 25.0), 20_000.0)] {
        for (moved, p99) in short_run_errors("n2_skew_250steps", 2, 2_500_000_000, written) {
            assert!(p99 <= bound_ns, "rank {moved} {written:?}: p99 {p99} ns");
        }
    }
}
