#!/usr/bin/env python3
"""Record real multi-rank PyTorch profiler (Kineto) traces with gloo on 127.0.0.1.

Each rank runs in its own process; every step runs several collective kinds
(all_reduce, all_gather, broadcast, reduce, all_to_all, barrier) and a ring of
point-to-point send/recv, under torch.profiler. Each rank writes
`rank<R>.pt.trace.json.gz` into the output folder.

With --subgroup, a second process group of ranks 1..world-1 (dist.new_group)
runs an all_reduce of the same tensor as the default group's, an all_gather
and a barrier every step as well: gloo annotations carry no group name, so
the same op with the same shapes runs in two groups.

With --skew, ranks 1..3 run under libfaketime (offset and rate per rank) and
every rank records its true CLOCK_REALTIME beside the faked one, through the
raw clock_gettime syscall that libfaketime does not intercept, into
`rank<R>.truth.jsonl`: one {"faked_ns", "true_ns", "bracket_ns"} row per
50 ms, the faked reading between two true ones (true_ns their midpoint,
bracket_ns their distance, at most 100 µs).

    python3 scripts/record-kineto.py --world-size 2 --steps 100 --out fixtures/kineto-gloo/2rank
    python3 scripts/record-kineto.py --world-size 4 --steps 20 --subgroup \
        --out fixtures/kineto-gloo/n4_gloo_2groups_20steps
    python3 scripts/record-kineto.py --world-size 4 --steps 200 --sleep-ms 20 --skew \
        --out fixtures/kineto-gloo/4rank-skew
"""

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faketime_truth import TruthSampler, faketime_env, free_port, pause  # noqa: E402

# Offset (s) and rate of the faked clock per rank; rank 0 keeps the true clock.
SKEWS = {1: "+0.0037 x1.000025", 2: "-0.0021 x0.99998", 3: "+0.0115 x1.00001"}


def launch(args):
    os.makedirs(args.out, exist_ok=True)
    port = free_port()
    procs = []
    for rank in range(args.world_size):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   RANK=str(rank), WORLD_SIZE=str(args.world_size))
        if args.skew and rank in SKEWS:
            env.update(faketime_env(SKEWS[rank]))
        cmd = [sys.executable, __file__, "--worker", "--out", args.out,
               "--steps", str(args.steps), "--sleep-ms", str(args.sleep_ms),
               "--world-size", str(args.world_size)]
        if args.skew:
            cmd.append("--skew")
        if args.subgroup:
            cmd.append("--subgroup")
        procs.append(subprocess.Popen(cmd, env=env))
    codes = [p.wait() for p in procs]
    if any(codes):
        sys.exit(f"a rank failed: exit codes {codes}")
    meta = {"world_size": args.world_size, "steps": args.steps, "sleep_ms": args.sleep_ms,
            "subgroup": list(range(1, args.world_size)) if args.subgroup else None,
            "skew": {str(r): SKEWS[r] for r in SKEWS if args.skew and r < args.world_size},
            "torch": __import__("torch").__version__}
    with open(os.path.join(args.out, "recording.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


def subgroup_step(torch, dist, x, sub, size):
    # The same all_reduce as the default group's (same shape), then others.
    dist.all_reduce(x, group=sub)
    gathered = [torch.empty_like(x) for _ in range(size)]
    dist.all_gather(gathered, x, group=sub)
    dist.barrier(group=sub)


def step(torch, dist, rank, world, x, model):
    # A forward and backward pass (fwdbwd flows), gradients all-reduced.
    model(x.view(world, 256)).tanh().sum().backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad = None
    dist.all_reduce(x)
    dist.all_reduce(x[:64])
    gathered = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(gathered, x)
    dist.broadcast(x, src=0)
    dist.reduce(x, dst=world - 1)
    out = torch.empty_like(x)
    dist.all_to_all_single(out, x)
    dist.barrier()
    right, left = (rank + 1) % world, (rank - 1) % world
    buf = torch.empty_like(x)
    if rank % 2 == 0:
        dist.send(x, right)
        dist.recv(buf, left)
    else:
        dist.recv(buf, left)
        dist.send(x, right)


def worker(args):
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    sampler = TruthSampler() if args.skew else None
    if sampler:
        sampler.start()
    dist.init_process_group("gloo", rank=rank, world_size=world)
    # Every rank creates the group (new_group is collective); ranks 1.. use it.
    members = list(range(1, world))
    sub = dist.new_group(ranks=members, backend="gloo") if args.subgroup else None
    x = torch.arange(256 * world, dtype=torch.float32) + rank
    torch.manual_seed(0)
    model = torch.nn.Linear(256, 16)
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                  record_shapes=True)
    dist.barrier()
    with prof:
        for _ in range(args.steps):
            step(torch, dist, rank, world, x, model)
            if sub is not None and rank in members:
                subgroup_step(torch, dist, x, sub, len(members))
            x.fill_(float(rank))
            if args.sleep_ms:
                pause(args.sleep_ms / 1000)
    dist.barrier()
    dist.destroy_process_group()
    if sampler:
        sampler.stop()
    path = os.path.join(args.out, f"rank{rank}.pt.trace.json")
    prof.export_chrome_trace(path)
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)
    if sampler:
        sampler.write(args.out, rank)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--sleep-ms", type=float, default=0.0)
    p.add_argument("--skew", action="store_true")
    p.add_argument("--subgroup", action="store_true")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    worker(args) if args.worker else launch(args)


if __name__ == "__main__":
    main()
