#!/usr/bin/env python3
"""Bit-flip sweep: corrupt real and simulated traces and run every command on them.

Makes FILES copies of node traces (the JAX fixtures and a small simulated
run), each with 1-4 random bit flips, puts each into a copy of its run folder
in place of the original, and runs `inspect` (the file), `validate` and
`export` (every trace of the run), `align --run-dir`, `merge --run-dir` and
`report --run-dir` on it, with a timeout per run. A command that refuses a run as recorded (one node alone
cannot be aligned) counts as `n/a` on its flipped copies.

Prints, per command, how many runs panicked, hung, were refused and were
accepted; then the files that `inspect` refuses but another command accepts,
or refuses with another message (file, plane/line/event, byte offset). Exit
status 1 when any run panicked or hung or any such file exists.

Usage: scripts/bitflip.py --bin target/release/align-cli [--files 200] [--seed 1]
(scripts/bitflip.sh builds the binary and runs this).
"""

import argparse
import concurrent.futures
import os
import random
import shutil
import subprocess
import sys
import tempfile

COMMANDS = ("inspect", "validate", "align", "merge", "export", "report")
# Exit code 2 is "bad input"; 0 and 1 (a validation over its threshold) mean
# the input was read.
REFUSED = 2
PANIC = 101


def sources(root, synth_dir, bin_path):
    """(run folder, trace name) of every node trace to corrupt."""
    out = []
    fixtures = os.path.join(root, "fixtures", "jax-cpu")
    for run in sorted(os.listdir(fixtures)):
        run_dir = os.path.join(fixtures, run)
        for name in sorted(os.listdir(run_dir)):
            if name.endswith(".xplane.pb"):
                out.append((run_dir, name))
    subprocess.run(
        [bin_path, "-q", "synth", synth_dir, "--nodes", "2", "--gpus", "1",
         "--steps", "60", "--kernels", "4", "--seed", "7"],
        check=True, stdout=subprocess.DEVNULL)
    for name in sorted(os.listdir(synth_dir)):
        if name.endswith(".xplane.pb"):
            out.append((synth_dir, name))
    return out


def flip(data, rng):
    data = bytearray(data)
    flips = rng.randint(1, 4)
    for _ in range(flips):
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
    return bytes(data), flips


def run(cmd, timeout):
    """(outcome, first stderr line): outcome is ok/refused/panic/hang/exit N."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=timeout, env=dict(os.environ, RUST_BACKTRACE="0"))
    except subprocess.TimeoutExpired:
        return "hang", ""
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode == PANIC or "panicked" in err:
        return "panic", err.strip().splitlines()[0] if err.strip() else ""
    if p.returncode == REFUSED:
        return "refused", [strip_prefix(l) for l in err.strip().splitlines()]
    if p.returncode in (0, 1):
        return "ok", ""
    return f"exit {p.returncode}", err.strip()[:200]


def strip_prefix(line):
    for prefix in ("error: ", "caused by: "):
        if line.startswith(prefix):
            return line[len(prefix):]
    return line


def same_message(inspect_lines, other_lines):
    """True when another command's error ends with inspect's (after its
    own `cannot inspect FILE` line): file, place and byte offset."""
    tail = inspect_lines[1:]
    return bool(tail) and other_lines[-len(tail):] == tail


def one_case(index, case, bin_path, work, timeout):
    run_dir, name, data, flips = case
    folder = os.path.join(work, f"case{index:04}")
    run_copy = os.path.join(folder, "run")
    shutil.copytree(run_dir, run_copy)
    trace = os.path.join(run_copy, name)
    if data is not None:
        with open(trace, "wb") as f:
            f.write(data)
    out = os.path.join(folder, "out")
    os.mkdir(out)
    # Every node of the run, as given per node (one file alone would be
    # read as a merged trace).
    traces = sorted(os.path.join(run_copy, n) for n in os.listdir(run_copy)
                    if n.endswith(".xplane.pb"))
    cmds = {
        "inspect": [bin_path, "-q", "inspect", trace],
        "validate": [bin_path, "-q", "validate"] + traces,
        "align": [bin_path, "-q", "align", "--run-dir", run_copy,
                  "--out-dir", os.path.join(out, "aligned")],
        "merge": [bin_path, "-q", "merge", "--run-dir", run_copy,
                  "-o", os.path.join(out, "combined.xplane.pb")],
        "export": [bin_path, "-q", "export", "-o",
                   os.path.join(out, "run.pftrace")] + traces,
        "report": [bin_path, "-q", "report", "--run-dir", run_copy,
                   "-o", os.path.join(out, "report.html")],
    }
    results = {c: run(cmd, timeout) for c, cmd in cmds.items()}
    shutil.rmtree(folder)
    return index, run_dir, name, flips, results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bin_path = os.path.abspath(args.bin)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bitflip-") as work:
        traces = sources(root, os.path.join(work, "synth"), bin_path)
        # Which commands accept each run as recorded: a command that refuses
        # the intact run (one node cannot be aligned) says nothing about the
        # flipped one.
        clean = {}
        for i, (run_dir, name) in enumerate(traces):
            _, _, _, _, results = one_case(
                10_000 + i, (run_dir, name, None, 0), bin_path, work, args.timeout)
            clean[(run_dir, name)] = {c for c, (o, _) in results.items() if o == "ok"}
        cases = []
        for i in range(args.files):
            run_dir, name = traces[i % len(traces)]
            with open(os.path.join(run_dir, name), "rb") as f:
                data, flips = flip(f.read(), rng)
            cases.append((run_dir, name, data, flips))
        done = []
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for index, run_dir, name, flips, results in pool.map(
                    lambda ic: one_case(ic[0], ic[1], bin_path, work, args.timeout),
                    enumerate(cases)):
                for c in COMMANDS:
                    if c not in clean[(run_dir, name)] and results[c][0] in ("ok", "refused"):
                        results[c] = ("n/a", [])
                done.append((index, run_dir, name, flips, results))
    report(done, len(traces), args)


def report(done, n_traces, args):
    counts = {c: {} for c in COMMANDS}
    disagree = []
    other_message = []
    stricter = 0
    bad = []
    for index, run_dir, name, flips, results in done:
        for c, (outcome, msg) in results.items():
            counts[c][outcome] = counts[c].get(outcome, 0) + 1
            if outcome in ("panic", "hang") or outcome.startswith("exit"):
                bad.append((index, name, c, outcome, msg))
        if results["inspect"][0] == "refused":
            accepted = [c for c in COMMANDS[1:] if results[c][0] == "ok"]
            if accepted:
                disagree.append((index, os.path.basename(run_dir), name, accepted))
            for c in COMMANDS[1:]:
                if results[c][0] == "refused" and not same_message(
                        results["inspect"][1], results[c][1]):
                    other_message.append((index, name, c, results["inspect"][1][1:],
                                          results[c][1]))
        elif any(results[c][0] == "refused" for c in COMMANDS[1:]):
            stricter += 1
    print(f"bit-flip sweep: {len(done)} files x 1-4 flips from {n_traces} traces "
          f"(seed {args.seed}, timeout {args.timeout:g} s)")
    for c in COMMANDS:
        parts = ", ".join(f"{k} {v}" for k, v in sorted(counts[c].items()))
        print(f"  {c:9} {parts}")
    panics = sum(counts[c].get("panic", 0) for c in COMMANDS)
    hangs = sum(counts[c].get("hang", 0) for c in COMMANDS)
    refused = counts["inspect"].get("refused", 0)
    print(f"panics {panics}, hangs {hangs}; inspect refuses {refused} files, "
          f"another command accepts {len(disagree)} of them")
    print(f"refusals with another message than inspect's: {len(other_message)}")
    print(f"files inspect accepts that another command refuses "
          f"(bad times, no collectives, ...): {stricter}")
    for index, run, name, accepted in disagree:
        print(f"  case {index}: {run}/{name}: accepted by {', '.join(accepted)}")
    for index, name, c, theirs, ours in other_message:
        print(f"  case {index}: {name}: inspect: {' / '.join(theirs)}; {c}: {' / '.join(ours)}")
    for index, name, c, outcome, msg in bad:
        print(f"  case {index}: {name}: {c}: {outcome}: {msg}")
    sys.exit(1 if panics or hangs or disagree or other_message or bad else 0)


if __name__ == "__main__":
    main()
