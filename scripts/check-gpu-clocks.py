#!/usr/bin/env python3
"""Check the GPU tracer clocks against the host clocks on a machine with an
NVIDIA GPU: CUPTI's cuptiGetTimestamp and the device's %globaltimer (read by
a one-thread PTX kernel through the driver API, no nvcc needed).

For each clock: sandwich reads (host CLOCK_REALTIME, GPU clock, REALTIME),
the tightest of a few tries, every --period for --duration; then the read
windows, which POSIX clock it tracks (offset spread across the samples)
and its rate against REALTIME. With --align-cli PATH (a build with
`--features cupti`) it also records and inspects a snapshots file with
`align-cli snapshots record --clock cupti`.

    scripts/check-gpu-clocks.py [--duration 5] [--period 0.5] [--align-cli target/release/align-cli]

Needs only Python 3 and the NVIDIA driver (libcuda.so.1), plus libcupti for
the CUPTI part ($CUPTI_LIBRARY, else the loader path and
/usr/local/cuda/extras/CUPTI/lib64). Exits 1 when neither clock can be read.
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time

POSIX = {
    "CLOCK_REALTIME": time.CLOCK_REALTIME,
    "CLOCK_MONOTONIC": time.CLOCK_MONOTONIC,
    "CLOCK_MONOTONIC_RAW": time.CLOCK_MONOTONIC_RAW,
    "CLOCK_BOOTTIME": time.CLOCK_BOOTTIME,
}

PTX = b"""
.version 6.0
.target sm_50
.address_size 64
.visible .entry read_globaltimer(.param .u64 out)
{
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u64 %rd3, %globaltimer;
  st.global.u64 [%rd2], %rd3;
  ret;
}
"""


def load_cupti():
    names = [os.environ.get("CUPTI_LIBRARY")] if os.environ.get("CUPTI_LIBRARY") else []
    names += ["libcupti.so", "libcupti.so.13", "libcupti.so.12", "libcupti.so.11.8",
              "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", "/usr/local/cuda/lib64/libcupti.so"]
    errors = []
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError as e:
            errors.append(f"{name}: {e}")
            continue
        get = lib.cuptiGetTimestamp
        get.argtypes = [ctypes.POINTER(ctypes.c_uint64)]
        get.restype = ctypes.c_int

        def read():
            ts = ctypes.c_uint64()
            code = get(ctypes.byref(ts))
            if code != 0:
                raise RuntimeError(f"cuptiGetTimestamp returned {code}")
            return ts.value
        return read, name
    raise RuntimeError("no CUPTI library: " + "; ".join(errors))


def load_globaltimer():
    cuda = ctypes.CDLL("libcuda.so.1")

    def check(code, what):
        if code != 0:
            raise RuntimeError(f"{what} failed with CUresult {code}")
    check(cuda.cuInit(0), "cuInit")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    module, func = ctypes.c_void_p(), ctypes.c_void_p()
    check(cuda.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(PTX)), "cuModuleLoadData")
    check(cuda.cuModuleGetFunction(ctypes.byref(func), module, b"read_globaltimer"),
          "cuModuleGetFunction")
    out = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(out), ctypes.c_size_t(8)), "cuMemAlloc")
    arg = ctypes.c_uint64(out.value)
    params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(arg), ctypes.c_void_p))
    cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]

    def read():
        check(cuda.cuLaunchKernel(func, 1, 1, 1, 1, 1, 1, 0, None, params, None), "cuLaunchKernel")
        check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
        host = ctypes.c_uint64()
        check(cuda.cuMemcpyDtoH_v2(ctypes.byref(host), out, ctypes.c_size_t(8)), "cuMemcpyDtoH")
        return host.value
    read()  # JIT and first launch outside the measurement
    return read, "libcuda.so.1 %globaltimer (PTX kernel)"


def sandwich(read, tries):
    """Tightest (window, midpoint REALTIME, GPU ns, {posix clock: reading})."""
    best = None
    for _ in range(tries):
        posix = {name: time.clock_gettime_ns(cid) for name, cid in POSIX.items() if name != "CLOCK_REALTIME"}
        a = time.clock_gettime_ns(time.CLOCK_REALTIME)
        gpu = read()
        b = time.clock_gettime_ns(time.CLOCK_REALTIME)
        if b >= a and (best is None or b - a < best[0]):
            best = (b - a, a + (b - a) // 2, gpu, posix)
    return best


def check_clock(label, read, args):
    samples = []
    end = time.monotonic() + args.duration
    while time.monotonic() < end:
        samples.append(sandwich(read, args.tries))
        time.sleep(args.period)
    windows = sorted(s[0] for s in samples)
    print(f"{label}: {len(samples)} pairs")
    print(f"  read windows: min {windows[0]} ns, p50 {windows[len(windows) // 2]} ns, max {windows[-1]} ns")
    (_, s0, g0, _), (_, s1, g1, _) = samples[0], samples[-1]
    if s1 > s0:
        print(f"  rate vs CLOCK_REALTIME: {((g1 - g0) - (s1 - s0)) / (s1 - s0) * 1e6:+.3f} ppm")
    offsets = {"CLOCK_REALTIME": [g - s for _, s, g, _ in samples]}
    for name in POSIX:
        if name != "CLOCK_REALTIME":
            offsets[name] = [g - p[name] for _, _, g, p in samples]
    for name, values in offsets.items():
        spread = max(values) - min(values)
        print(f"  {label} - {name}: median {statistics.median(values):.0f} ns, spread {spread} ns")
    print("  (a GPU clock that is one of these reads a median offset near 0; the POSIX"
          " clocks are read just before the sandwich, so their spread includes Python's call jitter)")


def record_with_align_cli(cli, args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "node0.snapshots.pb")
        cmd = [cli, "snapshots", "record", "--clock", "cupti", "--period", f"{args.period}s",
               "--duration", f"{args.duration}s", "-o", out]
        print("$", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        subprocess.run([cli, "snapshots", "inspect", out], check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per clock")
    parser.add_argument("--period", type=float, default=0.5, help="seconds between pairs")
    parser.add_argument("--tries", type=int, default=5, help="sandwich reads per pair")
    parser.add_argument("--align-cli", help="an align-cli built with --features cupti")
    args = parser.parse_args()
    ok = 0
    for loader in (load_cupti, load_globaltimer):
        try:
            read, label = loader()
        except (OSError, RuntimeError, AttributeError) as e:
            print(f"{loader.__name__[5:]}: unavailable: {e}")
            continue
        check_clock(label, read, args)
        ok += 1
    if args.align_cli:
        record_with_align_cli(args.align_cli, args)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
