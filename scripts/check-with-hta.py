#!/usr/bin/env python3
"""Load a folder of per-rank PyTorch profiler traces with Holistic Trace
Analysis (HTA), as its users do, and print what it found per rank; with
--merged, also load the single merged file of the same run and check that
it holds, rank by rank, the same events at the same times.

    pip install HolisticTraceAnalysis psutil
    python3 scripts/check-with-hta.py DIR
    python3 scripts/check-with-hta.py ALIGNED_DIR --merged merged.json.gz

HTA reads one file per rank: it takes a file's rank from the first
`"rank": N` in its text (`distributedInfo`), else rank 0, and every
analysis (temporal breakdown, communication/computation overlap, kernel
breakdown) is per rank. A merged file is therefore one trainer to HTA
(rank 0, with a warning), whose processes are all the ranks' processes:
it loads, but HTA's per-rank figures would add up the ranks. So for the
merged file this script checks what can be checked: HTA parses it, and
for every rank (its processes found through the merged file's
`traceAlign.processes`, which map each new pid to its rank) the events
HTA keeps are those it keeps from the rank's aligned file (same count,
same names, same times to HTA's microsecond resolution).

Exits non-zero when HTA cannot load a file, finds no events of a rank, or
the merged file differs from the folder.
"""

import argparse
import collections
import gzip
import json
import os
import sys

from hta.trace_analysis import TraceAnalysis


def absolute_events(analysis, rank):
    """(name, absolute µs) of every event HTA kept for `rank`, sorted."""
    t = analysis.t
    df = t.get_trace(rank)
    names = t.symbol_table.get_sym_table()
    base_us = t.meta_data[rank].get("baseTimeNanoseconds", 0) // 1000
    return df, sorted(
        (names[n], int(ts) + int(t.min_ts) + base_us) for n, ts in zip(df["name"], df["ts"])
    )


def load_folder(path):
    analysis = TraceAnalysis(trace_dir=path)
    ranks = sorted(analysis.t.get_all_traces().keys())
    if not ranks:
        sys.exit("HTA loaded no rank")
    for rank in ranks:
        df = analysis.t.get_trace(rank)
        if df.empty:
            sys.exit(f"rank {rank}: no events")
        span_ms = (df["ts"].max() - df["ts"].min()) / 1e3
        print(f"rank {rank}: {len(df)} events over {span_ms:.0f} ms, first ts {df['ts'].min()}")
    print(f"HTA loaded {len(ranks)} rank(s) from {path}")
    return analysis, ranks


def pid_ranks(merged):
    opener = gzip.open if merged.endswith(".gz") else open
    with opener(merged, "rt") as f:
        record = json.load(f).get("traceAlign", {})
    return {p["pid"]: p["rank"] for p in record.get("processes", [])}


def check_merged(merged, folder, ranks):
    analysis = TraceAnalysis(
        trace_files={0: os.path.abspath(merged)}, trace_dir=os.path.dirname(os.path.abspath(merged))
    )
    df, events = absolute_events(analysis, 0)
    owner = pid_ranks(merged)
    if not owner:
        sys.exit(f"{merged}: no traceAlign.processes (not written by align-cli merge?)")
    per_rank = collections.defaultdict(list)
    names = analysis.t.symbol_table.get_sym_table()
    base_us = analysis.t.meta_data[0].get("baseTimeNanoseconds", 0) // 1000
    for n, ts, pid in zip(df["name"], df["ts"], df["pid"]):
        rank = owner.get(int(pid))
        if rank is None:
            sys.exit(f"{merged}: pid {pid} is not in traceAlign.processes")
        per_rank[rank].append((names[n], int(ts) + int(analysis.t.min_ts) + base_us))
    print(f"HTA loaded {merged} as one trace: {len(events)} events of ranks {sorted(per_rank)}")
    bad = 0
    for rank in ranks:
        _, want = absolute_events(folder, rank)
        got = sorted(per_rank.get(rank, []))
        same = got == want
        bad += not same
        print(f"rank {rank}: {len(got)} events in the merged file, {len(want)} in its own file, "
              f"{'identical names and times' if same else 'DIFFERENT'}")
    extra = sorted(set(per_rank) - set(ranks))
    if extra:
        sys.exit(f"{merged}: ranks {extra} are not in the folder")
    if bad:
        sys.exit(f"{bad} rank(s) differ between {merged} and the folder")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir", help="folder of per-rank traces")
    p.add_argument("--merged", help="the single merged file of the same run (align-cli merge)")
    args = p.parse_args()
    folder, ranks = load_folder(args.dir)
    if args.merged:
        check_merged(args.merged, folder, ranks)


if __name__ == "__main__":
    main()
