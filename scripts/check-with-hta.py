#!/usr/bin/env python3
"""Load a folder of per-rank PyTorch profiler traces with Holistic Trace
Analysis (HTA), as its users do, and print what it found per rank.

    pip install HolisticTraceAnalysis
    python3 scripts/check-with-hta.py DIR

Exits non-zero when HTA cannot load the folder or finds no events of a rank.
"""

import sys

from hta.trace_analysis import TraceAnalysis


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    analysis = TraceAnalysis(trace_dir=sys.argv[1])
    traces = analysis.t
    ranks = sorted(traces.get_all_traces().keys())
    if not ranks:
        sys.exit("HTA loaded no rank")
    for rank in ranks:
        df = traces.get_trace(rank)
        if df.empty:
            sys.exit(f"rank {rank}: no events")
        span_us = (df["ts"].max() - df["ts"].min()) / 1e3 if "ts" in df else float("nan")
        print(f"rank {rank}: {len(df)} events over {span_us:.0f} ms, "
              f"first ts {df['ts'].min()}")
    print(f"HTA loaded {len(ranks)} rank(s) from {sys.argv[1]}")


if __name__ == "__main__":
    main()
