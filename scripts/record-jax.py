#!/usr/bin/env python3
"""Record real multi-process JAX (XLA on CPU) traces with gloo collectives on 127.0.0.1.

Each process is one JAX process with one CPU device
(`jax.distributed.initialize`, gloo CPU collectives). Every step of a
training-like loop runs, in one jitted `shard_map` over all processes: a
matmul, a `psum` (all-reduce), an `all_gather`, a `psum_scatter`
(reduce-scatter) and a `ppermute` (collective-permute, a ring). The loop is
profiled with `jax.profiler.start_trace` / `stop_trace`, and each process's
trace is copied to `OUT/rank<R>.xplane.pb`.

With --skew, ranks 1..N-1 run under libfaketime (offset and rate per rank)
and every rank records its true CLOCK_REALTIME beside the faked one, through
the raw clock_gettime syscall that libfaketime does not intercept, into
`rank<R>.truth.jsonl`: one {"faked_ns", "true_ns", "bracket_ns"} row per
50 ms, the faked reading between two true ones (true_ns their midpoint,
bracket_ns their distance, at most 100 µs); the same format as
`scripts/record-kineto.py`.

    python3 scripts/record-jax.py --world-size 4 --steps 400 --sleep-ms 25 --skew \
        --out fixtures/jax-faketime/n4_skew_400steps

With --single-thread every process runs XLA on one thread (no Eigen or
OpenMP pools); with --pin, rank R is bound to CPU R mod (the CPUs this
script may use) before JAX starts, so that the processes of a run do not
migrate between cores; --rows and --cols shrink or grow the per-rank
block (and so the bytes every collective moves); with --realtime the
profiled loop's threads run under SCHED_RR (root only).

With --mesh AxB the A*B processes form a 2-D ("data", "model") mesh and
each step runs a psum over "model", an all_gather over "data", a psum over
both axes and a ppermute within each row: collectives of one op in
several replica groups under one run_id.

    python3 scripts/record-jax.py --mesh 2x2 --steps 60 --sleep-ms 30 --skew \
        --out fixtures/jax-faketime/mesh2x2_skew_60steps
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faketime_truth import TruthSampler, faketime_env, free_port, pause  # noqa: E402

# Environment of a process that runs XLA on its calling thread only.
SINGLE_THREAD_ENV = {
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}

# Offset (s) and rate of the faked clock per rank; rank 0 keeps the true clock.
SKEWS = {1: "+0.0037 x1.000025", 2: "-0.0012 x0.999985", 3: "+0.0115 x1.00001"}


def launch(args):
    os.makedirs(args.out, exist_ok=True)
    port = free_port()
    procs = []
    for rank in range(args.world_size):
        env = dict(os.environ, JAX_PLATFORMS="cpu")
        if args.single_thread:
            env.update(SINGLE_THREAD_ENV)
        if args.skew and rank in SKEWS:
            env.update(faketime_env(SKEWS[rank]))
        cmd = [sys.executable, __file__, "--worker", "--out", args.out,
               "--steps", str(args.steps), "--sleep-ms", str(args.sleep_ms),
               "--world-size", str(args.world_size), "--rank", str(rank),
               "--lag-ms", str(args.lag_ms), "--python-tracer", str(args.python_tracer),
               "--rows", str(args.rows), "--cols", str(args.cols),
               "--port", str(port)]
        if args.mesh:
            cmd += ["--mesh", "x".join(map(str, args.mesh))]
        for flag in ("skew", "pin", "single_thread", "realtime"):
            if getattr(args, flag):
                cmd.append("--" + flag.replace("_", "-"))
        procs.append(subprocess.Popen(cmd, env=env))
    codes = [p.wait() for p in procs]
    if any(codes):
        sys.exit(f"a rank failed: exit codes {codes}")
    import jax
    meta = {"world_size": args.world_size, "steps": args.steps, "sleep_ms": args.sleep_ms,
            "lag_ms": args.lag_ms, "python_tracer": args.python_tracer,
            "rows": args.rows, "cols": args.cols, "pin": args.pin,
            "single_thread": args.single_thread, "realtime": args.realtime,
            "mesh": list(args.mesh) if args.mesh else None,
            "skew": {str(r): SKEWS[r] for r in SKEWS if args.skew and r < args.world_size},
            "jax": jax.__version__}
    with open(os.path.join(args.out, "recording.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


def set_policy(policy, priority):
    """Set every thread of this process to the scheduling `policy`."""
    for tid in os.listdir("/proc/self/task"):
        os.sched_setscheduler(int(tid), policy, os.sched_param(priority))


def pin(rank):
    """Bind this process to one of the CPUs it may use, by rank."""
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[rank % len(cpus)]})


def parse_mesh(text):
    """`AxB` -> (A, B): a 2-D mesh of A rows ("data") by B columns ("model")."""
    try:
        rows, cols = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--mesh wants AxB (e.g. 2x2), not {text!r}")
    if rows < 2 or cols < 2:
        raise argparse.ArgumentTypeError(f"--mesh {text}: both axes need 2 or more devices")
    return rows, cols


def build_step(jax, world, mesh_shape=None):
    if mesh_shape:
        return build_mesh_step(jax, mesh_shape)
    import jax.numpy as jnp
    from jax.sharding import Mesh, PartitionSpec as P

    mesh = Mesh(jax.devices(), ("x",))
    ring = [(i, (i + 1) % world) for i in range(world)]

    def local(w, x):
        y = jnp.tanh(x @ w)
        g = jax.lax.psum(y, "x")                               # all-reduce
        full = jax.lax.all_gather(y, "x", tiled=True)          # all-gather
        part = jax.lax.psum_scatter(full, "x", tiled=True)     # reduce-scatter
        nxt = jax.lax.ppermute(part, "x", ring)                # collective-permute
        return w + 1e-3 * g.mean(), 0.5 * (x + nxt)

    fn = shard_map_fn(jax)(local, mesh=mesh, in_specs=(P(), P("x")), out_specs=(P(), P("x")))
    return mesh, jax.jit(fn)


def shard_map_fn(jax):
    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:
        from jax.experimental.shard_map import shard_map
    return shard_map


def build_mesh_step(jax, shape):
    """One step on a 2-D ("data", "model") mesh: collectives over one axis
    (several groups of the same op in one execution) and over both."""
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()).reshape(shape), ("data", "model"))
    cols = shape[1]
    ring = [(i, (i + 1) % cols) for i in range(cols)]

    def local(w, x):
        y = jnp.tanh(x @ w)
        m = jax.lax.psum(y, "model")                           # all-reduce, one group per row
        d = jax.lax.all_gather(y, "data", tiled=True)          # all-gather, one group per column
        g = jax.lax.psum(y, ("data", "model"))                 # all-reduce over every device
        nxt = jax.lax.ppermute(y, "model", ring)               # collective-permute within a row
        return w + 1e-3 * g.mean(), 0.5 * (x + nxt) + 1e-3 * (m + d[: y.shape[0]])

    fn = shard_map_fn(jax)(local, mesh=mesh, in_specs=(P(), P(("data", "model"))),
                           out_specs=(P(), P(("data", "model"))))
    return mesh, jax.jit(fn)


def worker(args):
    rank, world = args.rank, args.world_size
    if args.pin:
        pin(rank)
    sampler = TruthSampler() if args.skew else None
    if sampler:
        sampler.start()

    import jax
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{args.port}",
                               num_processes=world, process_id=rank)
    mesh, step = build_step(jax, world, args.mesh)
    local_x = np.full((args.rows, args.cols), 0.01 * (rank + 1), dtype=np.float32)
    x_spec = P(mesh.axis_names)
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, x_spec), local_x)
    w = jax.device_put(np.eye(args.cols, dtype=np.float32), NamedSharding(mesh, P()))
    w, x = step(w, x)  # compile outside the profiled part
    jax.block_until_ready((w, x))
    logdir = tempfile.mkdtemp(prefix=f"record-jax-rank{rank}-")
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = args.python_tracer
    jax.profiler.start_trace(logdir, profiler_options=options)
    if args.realtime:
        set_policy(os.SCHED_RR, 1)
    for i in range(args.steps):
        if args.lag_ms and i % world == rank:
            # Each rank in turn comes late to a step, so that each rank's
            # begin is in turn the last one of its collectives.
            pause(args.lag_ms / 1000)
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            w, x = step(w, x)
            jax.block_until_ready((w, x))
        if args.sleep_ms:
            pause(args.sleep_ms / 1000)
    if args.realtime:
        set_policy(os.SCHED_OTHER, 0)
    jax.profiler.stop_trace()
    found = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)
    if len(found) != 1:
        sys.exit(f"rank {rank}: expected one trace under {logdir}, found {found}")
    shutil.copyfile(found[0], os.path.join(args.out, f"rank{rank}.xplane.pb"))
    shutil.rmtree(logdir)
    if sampler:
        sampler.stop()
        sampler.write(args.out, rank)
    jax.distributed.shutdown()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--world-size", type=int, default=4)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--sleep-ms", type=float, default=25.0)
    p.add_argument("--lag-ms", type=float, default=0.0,
                   help="extra pause of rank (step mod world-size) before each step")
    p.add_argument("--python-tracer", type=int, default=0,
                   help="the profiler's python_tracer_level (1 records every Python call)")
    p.add_argument("--skew", action="store_true")
    p.add_argument("--rows", type=int, default=32,
                   help="rows of each rank's block of x")
    p.add_argument("--cols", type=int, default=64, help="columns of x (and the size of w)")
    p.add_argument("--single-thread", action="store_true",
                   help="run XLA on one thread per process (no Eigen/OpenMP pools)")
    p.add_argument("--realtime", action="store_true",
                   help="run the profiled loop's threads under SCHED_RR (priority 1; needs root)")
    p.add_argument("--pin", action="store_true",
                   help="bind rank R to CPU R mod (the CPUs this script may use)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--mesh", type=parse_mesh, default=None,
                   help="AxB: a 2-D (data, model) mesh of A*B processes (sets --world-size); "
                        "the step runs collectives over one axis and over both")
    args = p.parse_args()
    if args.mesh:
        args.world_size = args.mesh[0] * args.mesh[1]
    worker(args) if args.worker else launch(args)


if __name__ == "__main__":
    main()
