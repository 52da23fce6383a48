#!/usr/bin/env python3
"""Load a folder of per-rank PyTorch profiler traces with Holistic Trace
Analysis (HTA), as its users do, and print what it found per rank; with
--merged, also load the single merged file of the same run and check that
it holds, rank by rank, the same events at the same times; with
--breakdown, compare the GPU time of `align-cli report --json` with HTA's.

    pip install HolisticTraceAnalysis psutil
    python3 scripts/check-with-hta.py DIR
    python3 scripts/check-with-hta.py ALIGNED_DIR --merged merged.json.gz
    python3 scripts/check-with-hta.py RUN_DIR --breakdown [--align-cli PATH]

--breakdown runs HTA's `get_temporal_breakdown` and
`get_idle_time_breakdown` on the folder's `*.pt.trace.json[.gz]` files
(linked into a temporary folder: HTA reads every `*.json` of a folder) and
`align-cli report --run-dir RUN_DIR --json`, and prints per rank the idle,
compute and non-compute time of both and per rank and stream the idle time
by cause. HTA runs with `HTA_DISABLE_NS_ROUNDING=1`, its own switch that
keeps the traces' ns: by default its parser rounds every event's start up
and its end down to whole µs, which on kernels of a microsecond or two
drops much of their time (printed too, for reference, as "HTA µs"). Exits
non-zero when a figure of the report is off HTA's (ns) by more than 1 %.

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
import glob
import gzip
import json
import os
import subprocess
import sys
import tempfile

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


TOLERANCE = 0.01


def traces_only(run_dir, into):
    """Link the run's per-rank trace files into the folder `into`."""
    files = sorted(glob.glob(os.path.join(run_dir, "*.pt.trace.json*")))
    if not files:
        sys.exit(f"{run_dir}: no *.pt.trace.json[.gz] file")
    for f in files:
        os.symlink(os.path.abspath(f), os.path.join(into, os.path.basename(f)))


def hta_breakdown(folder, rounding):
    """Per rank (idle, compute, non-compute) in ns, and per (rank, stream,
    cause) the idle ns, from HTA."""
    if rounding:
        os.environ.pop("HTA_DISABLE_NS_ROUNDING", None)
    else:
        os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    analysis = TraceAnalysis(trace_dir=folder)
    temporal = analysis.get_temporal_breakdown(visualize=False)
    per_rank = {
        int(r["rank"]): (r["idle_time(us)"] * 1e3, r["compute_time(us)"] * 1e3,
                         r["non_compute_time(us)"] * 1e3)
        for _, r in temporal.iterrows()
    }
    idle = {}
    for rank in [] if rounding else per_rank:
        df, _ = analysis.get_idle_time_breakdown(ranks=[rank], visualize=False)
        for _, r in df.iterrows():
            idle[(rank, int(r["stream"]), r["idle_category"])] = r["idle_time"] * 1e3
    return per_rank, idle


def report_breakdown(run_dir, align_cli):
    """The same figures from `align-cli report --json`."""
    out = subprocess.run([align_cli, "report", "--run-dir", run_dir, "--json"],
                         check=True, capture_output=True, text=True).stdout
    nodes = json.loads(out)["gpu"]["nodes"]
    per_rank = {n["node"]: (n["gpu_idle_ns"], n["gpu_compute_ns"], n["gpu_non_compute_ns"])
                for n in nodes}
    idle = {}
    for n in nodes:
        for s in n["streams"]:
            for cause in ("host_wait", "kernel_wait", "other"):
                idle[(n["node"], s["stream"], cause)] = s["idle"][cause + "_ns"]
    return per_rank, idle


def off(ours, theirs):
    """Relative difference, 0 when both are 0."""
    if theirs == 0:
        return 0.0 if ours == 0 else float("inf")
    return abs(ours - theirs) / abs(theirs)


def check_breakdown(run_dir, align_cli):
    ours, our_idle = report_breakdown(run_dir, align_cli)
    with tempfile.TemporaryDirectory() as tmp:
        traces_only(run_dir, tmp)
        try:
            hta_us, _ = hta_breakdown(tmp, rounding=True)
            hta_ns, hta_idle = hta_breakdown(tmp, rounding=False)
        except Exception as e:  # HTA's own failure, reported as such
            what = f"{type(e).__name__}: {e}"
            mine = (f"{len(ours)} rank(s) with GPU streams" if ours else "no GPU streams")
            sys.exit(f"HTA cannot break this run down ({what}); the report finds {mine}")
    bad = 0
    print(f"GPU time per rank, ms: report vs HTA (ns), off by; HTA µs for reference ({run_dir})")
    print(f"{'rank':>4} {'part':<12} {'report':>12} {'HTA':>12} {'off':>8} {'HTA µs':>12}")
    for rank in sorted(set(hta_ns) | set(ours)):
        if rank not in ours or rank not in hta_ns:
            print(f"{rank:>4} only in {'HTA' if rank in hta_ns else 'the report'}")
            bad += 1
            continue
        for i, part in enumerate(("idle", "compute", "non-compute")):
            o, h, u = ours[rank][i], hta_ns[rank][i], hta_us[rank][i]
            d = off(o, h)
            bad += d > TOLERANCE
            flag = "" if d <= TOLERANCE else "  OFF"
            print(f"{rank:>4} {part:<12} {o / 1e6:>12.3f} {h / 1e6:>12.3f} {100 * d:>7.4f}% "
                  f"{u / 1e6:>12.3f}{flag}")
    idle_bad = 0
    for key in sorted(set(hta_idle) | set(our_idle)):
        o, h = our_idle.get(key, 0), hta_idle.get(key, 0)
        if abs(o - h) > max(TOLERANCE * abs(h), 1000):
            idle_bad += 1
            print(f"rank {key[0]} stream {key[1]} {key[2]}: report {o / 1e6:.3f} ms, "
                  f"HTA {h / 1e6:.3f} ms  OFF")
    print(f"idle by cause: {len(hta_idle)} (rank, stream, cause) figures of HTA, "
          f"{idle_bad} off by more than 1 % (and 1 µs)")
    if bad or idle_bad:
        sys.exit(f"{bad + idle_bad} figure(s) off HTA by more than 1 %")
    print("every figure within 1 % of HTA")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir", help="folder of per-rank traces")
    p.add_argument("--merged", help="the single merged file of the same run (align-cli merge)")
    p.add_argument("--breakdown", action="store_true",
                   help="compare the GPU time of `align-cli report --json` with HTA's")
    p.add_argument("--align-cli", default="target/release/align-cli",
                   help="the align-cli binary (default target/release/align-cli)")
    args = p.parse_args()
    if args.breakdown:
        check_breakdown(args.dir, args.align_cli)
        return
    folder, ranks = load_folder(args.dir)
    if args.merged:
        check_merged(args.merged, folder, ranks)


if __name__ == "__main__":
    main()
