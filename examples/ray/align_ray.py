#!/usr/bin/env python3
"""Align a run with Ray tasks: summarize (one task per node), fit, apply.

    python examples/ray/align_ray.py RUN ALIGN_CLI [--out-dir DIR] [--work DIR] [--address ADDR]

Each task runs the align-cli binary. The summaries and the clocks travel
through Ray's object store (they are small), so only the run folder, the
output folder and align-cli must be where the tasks run; Ray orders the
phases by the object references each task takes, with no waiting here.
The aligned traces go where `align-cli align --run-dir RUN` puts them: each
under its input's file name in RUN-aligned/ beside the run folder.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import ray

TRACE_SUFFIXES = (".xplane.pb", ".xplane.pb.gz", ".pt.trace.json", ".pt.trace.json.gz")


def node_of(name):
    """The node id in a trace's file name (after `node`, else `rank`), or None."""
    lower = name.lower()
    for word in ("node", "rank"):
        match = re.search(word + r"([0-9]+)", lower)
        if match:
            return int(match.group(1))
    return None


def run_traces(run):
    """{node id: trace path} of a run folder, as align-cli finds them."""
    traces = {}
    for name in sorted(os.listdir(run)):
        if ".aligned." in name or not name.endswith(TRACE_SUFFIXES):
            continue
        node = node_of(name)
        if node is None:
            continue
        path = os.path.join(run, name)
        if node in traces:
            raise SystemExit(f"{run}: two traces for node {node}: {traces[node]} and {path}")
        traces[node] = path
    if not traces:
        raise SystemExit(f"{run}: no traces (*.xplane.pb[.gz], *.pt.trace.json[.gz] named node<N>/rank<N>)")
    return traces


def run_cli(args):
    """Run align-cli; its stdout, or an error naming the command and its stderr."""
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-2000:]}"
        )
    return done.stdout


@ray.remote(num_cpus=1)
def summarize(align_cli, run, node):
    """Node `node`'s summary, as bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, f"node{node}.summary")
        run_cli([align_cli, "summarize", "--run-dir", run, "--node", str(node), "-o", out])
        with open(out, "rb") as f:
            return f.read()


@ray.remote(num_cpus=1)
def fit(align_cli, nodes, *summaries):
    """clocks.json from the summaries of `nodes` (in that order), as bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for node, summary in zip(nodes, summaries):
            path = os.path.join(tmp, f"node{node}.summary")
            with open(path, "wb") as f:
                f.write(summary)
            paths.append(path)
        out = os.path.join(tmp, "clocks.json")
        run_cli([align_cli, "fit", *paths, "-o", out])
        with open(out, "rb") as f:
            return f.read()


@ray.remote(num_cpus=1)
def apply(align_cli, trace, clocks, out):
    """Align `trace` with `clocks` (bytes) into `out`; align-cli's report."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "clocks.json")
        with open(path, "wb") as f:
            f.write(clocks)
        return run_cli([align_cli, "apply", trace, "--clocks", path, "-o", out])


class TaskFailed(Exception):
    """Some task failed; the distinct causes."""


def root_cause(err):
    """The message of the task error at the bottom of a chain of task errors."""
    while isinstance(err, ray.exceptions.RayTaskError) and err.cause is not None:
        err = err.cause
    return str(err)


def default_out_dir(run):
    """RUN-aligned beside the run folder, as `align-cli align --run-dir`."""
    run = os.path.realpath(run)
    name = os.path.basename(run)
    return os.path.join(os.path.dirname(run), name + "-aligned") if name else "aligned"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="run folder (one trace per node)")
    parser.add_argument("align_cli", help="the align-cli binary")
    parser.add_argument("--out-dir", help="aligned traces (default RUN-aligned)")
    parser.add_argument("--work", help="also write the summaries and clocks.json here")
    parser.add_argument("--address", help="Ray cluster to join (default: a local one)")
    return parser.parse_args()


def align(args):
    """Submit every task, wait for the apply tasks; the aligned trace paths."""
    run = os.path.realpath(args.run)
    align_cli = os.path.realpath(args.align_cli)
    if not os.path.isfile(align_cli):
        raise SystemExit(f"{args.align_cli}: no such program")
    out_dir = os.path.realpath(args.out_dir or default_out_dir(run))
    if out_dir == run:
        raise SystemExit(f"the output folder cannot be the run folder {run}")
    os.makedirs(out_dir, exist_ok=True)
    traces = run_traces(run)
    nodes = sorted(traces)
    summaries = [summarize.remote(align_cli, run, node) for node in nodes]
    clocks = fit.remote(align_cli, nodes, *summaries)
    outs = [os.path.join(out_dir, os.path.basename(traces[node])) for node in nodes]
    applied = [apply.remote(align_cli, traces[n], clocks, o) for n, o in zip(nodes, outs)]
    ray.wait(applied, num_returns=len(applied))
    failures = []
    for node, ref in zip(nodes, applied):
        try:
            report = ray.get(ref).strip()
            print(report if report else f"node {node}: aligned")
        except ray.exceptions.RayTaskError as err:
            cause = root_cause(err)
            if cause not in failures:
                failures.append(cause)
    if failures:
        raise TaskFailed(failures)
    if args.work:
        os.makedirs(args.work, exist_ok=True)
        for node, summary in zip(nodes, ray.get(summaries)):
            with open(os.path.join(args.work, f"node{node}.summary"), "wb") as f:
                f.write(summary)
        with open(os.path.join(args.work, "clocks.json"), "wb") as f:
            f.write(ray.get(clocks))
    return outs


def main():
    args = parse_args()
    started = time.monotonic()
    if args.address:
        ray.init(address=args.address)
    else:
        ray.init(include_dashboard=False)
    up = time.monotonic()
    try:
        outs = align(args)
        done = time.monotonic()
    except TaskFailed as failed:
        for cause in failed.args[0]:
            print(f"align_ray.py: a task failed: {cause}", file=sys.stderr)
        return 1
    finally:
        ray.shutdown()
    print(f"{len(outs)} aligned traces in {os.path.dirname(outs[0])}")
    print(f"ray start {up - started:.2f} s; summarize, fit and apply {done - up:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
