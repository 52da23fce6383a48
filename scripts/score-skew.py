#!/usr/bin/env python3
"""Score aligned PyTorch (Kineto) traces of a recording with known clock
errors against its truth (`skew.json`, as in fixtures/real-gpu-machine).

    scripts/score-skew.py RUN ALIGNED

RUN holds the recorded `rank<N>.pt.trace.json.gz` and `skew.json`; ALIGNED
the same files as `align-cli align --run-dir RUN --out-dir ALIGNED` wrote
them (every event in the same order, only times moved). `skew.json` gives,
per rank r, its clock error err_r (seen - true, µs) at its first and last
trace event, linear in between; an event rank r recorded at seen time s
belongs at s - err_r(s) + err_0(s) once aligned onto rank 0. Prints, per
rank, the |error| of every complete event's begin (GPU events included):
p50, p99 and max in µs, and the same over all ranks. Exit 1 when a file
pair does not hold the same events.
"""

import gzip
import json
import sys
from decimal import Decimal
from pathlib import Path


def load(path):
    with gzip.open(path, "rt") as f:
        return json.load(f, parse_float=Decimal)


def begins_ns(doc):
    """(name, begin ns) of every complete event, in file order."""
    base = int(doc.get("baseTimeNanoseconds", 0))
    out = []
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and "ts" in e:
            out.append((e.get("name"), base + int(Decimal(e["ts"]) * 1000)))
    return out


def error_us(window):
    """err(s) in µs for seen ns s, linear between the window's ends."""
    s0 = window["trace_first_event_seen_ns"]
    s1 = window["trace_last_event_end_seen_ns"]
    e0 = float(window["offset_us_at_first_event"])
    e1 = float(window["offset_us_at_last_event"])
    return lambda s: e0 + (e1 - e0) * (s - s0) / (s1 - s0)


def quantiles(errors):
    errors = sorted(errors)
    pick = lambda q: errors[min(len(errors) - 1, int(q * len(errors)))]
    return pick(0.5), pick(0.99), errors[-1]


def main():
    run, aligned = Path(sys.argv[1]), Path(sys.argv[2])
    skew = json.loads((run / "skew.json").read_text())
    ranks = sorted(int(r) for r in skew["ranks"])
    err = {r: error_us(skew["ranks"][str(r)]["window"]) for r in ranks}
    everything = []
    print("| rank | events | p50 (µs) | p99 (µs) | max (µs) |")
    print("|---:|---:|---:|---:|---:|")
    for r in ranks:
        name = f"rank{r}.pt.trace.json.gz"
        recorded = begins_ns(load(run / name))
        moved = begins_ns(load(aligned / name))
        if [n for n, _ in recorded] != [n for n, _ in moved]:
            print(f"{aligned / name}: not the events of {run / name}", file=sys.stderr)
            return 1
        errors = []
        for (_, s), (_, got) in zip(recorded, moved):
            want = s - (err[r](s) - err[ranks[0]](s)) * 1000
            errors.append(abs(got - want) / 1000)
        everything += errors
        p50, p99, mx = quantiles(errors)
        print(f"| {r} | {len(errors)} | {p50:.1f} | {p99:.1f} | {mx:.1f} |")
    p50, p99, mx = quantiles(everything)
    print(f"| all | {len(everything)} | {p50:.1f} | {p99:.1f} | {mx:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
