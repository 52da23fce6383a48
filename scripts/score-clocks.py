#!/usr/bin/env python3
"""Score the clock corrections of `align-cli collectives --json` against a
recording's truth: per rank, |estimated − true| correction (µs) at 201
evenly spaced host times over the span its segments cover; prints the
worst rank's p99, every rank's, and how many of the whole-run feasible
ranges (`joint_feasible`: each segment's start, middle and end) hold the
true correction.

    scripts/score-clocks.py RUN_DIR COLLECTIVES_JSON

The truth is `skew.json` (per rank, the measured libfaketime model: seen =
raw + seen_minus_raw_at_ref_ns + (rate − 1)(raw − ref_raw_ns)) or, where
there is none, `rank<N>.truth.jsonl` rows (faked_ns, true_ns),
interpolated. The correction of rank r at its host time h is rank 0's
reading of the same true instant minus h.
"""

import bisect
import json
import os
import sys


def skew_truth(path):
    ranks = json.load(open(path))["ranks"]
    models = {int(r): v["measured"] for r, v in ranks.items()}

    def seen(r, raw):
        m = models[r]
        return raw + m["seen_minus_raw_at_ref_ns"] + (m["rate"] - 1) * (raw - m["ref_raw_ns"])

    def raw_of(r, h):
        m = models[r]
        return m["ref_raw_ns"] + (h - m["ref_raw_ns"] - m["seen_minus_raw_at_ref_ns"]) / m["rate"]

    return lambda r, h: seen(0, raw_of(r, h)) - h


def interp(xs, ys, x):
    k = min(max(bisect.bisect_right(xs, x), 1), len(xs) - 1)
    x0, x1, y0, y1 = xs[k - 1], xs[k], ys[k - 1], ys[k]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def rows_truth(run):
    table = {}
    for name in os.listdir(run):
        if name.startswith("rank") and name.endswith(".truth.jsonl"):
            rank = int(name[4:name.index(".")])
            rows = sorted((json.loads(l) for l in open(os.path.join(run, name))),
                          key=lambda r: r["faked_ns"])
            table[rank] = ([r["faked_ns"] for r in rows], [r["true_ns"] for r in rows])
    if 0 not in table:
        sys.exit(f"{run}: no skew.json and no rank0.truth.jsonl")
    by_true = sorted(zip(table[0][1], table[0][0]))
    true0, faked0 = [t for t, _ in by_true], [f for _, f in by_true]

    def correction(r, h):
        true = interp(table[r][0], table[r][1], h)
        return interp(true0, faked0, true) - h

    return correction


def main():
    run, js = sys.argv[1], sys.argv[2]
    skew = os.path.join(run, "skew.json")
    truth = skew_truth(skew) if os.path.exists(skew) else rows_truth(run)
    report = json.load(open(js))["report"]
    worst, per_rank = 0.0, []
    covered, ranges = 0, 0
    for node in report["nodes"]:
        if node["reference"]:
            continue
        for s in node["segments"]:
            joint = s.get("joint_feasible") or {}
            middle = (s["start_host_ns"] + s["end_host_ns"]) // 2
            for key, h in (("start_ns", s["start_host_ns"]), ("middle_ns", middle),
                           ("end_ns", s["end_host_ns"])):
                if joint.get(key):
                    lo, hi = joint[key]
                    ranges += 1
                    covered += lo <= truth(node["node"], h) <= hi
        xs, ys = [], []
        for s in node["segments"]:
            xs += [s["start_host_ns"], s["end_host_ns"]]
            ys += [s["offset_start_ns"], s["offset_end_ns"]]
        errors = sorted(
            abs(interp(xs, ys, h) - truth(node["node"], h)) / 1e3
            for h in (xs[0] + (xs[-1] - xs[0]) * k / 200 for k in range(201))
        )
        p99 = errors[int(round(0.99 * (len(errors) - 1)))]
        worst = max(worst, p99)
        per_rank.append(f"r{node['node']} {p99:.1f}")
    print(f"{worst:.1f}\t{', '.join(per_rank)}\t{covered}/{ranges}")


if __name__ == "__main__":
    main()
