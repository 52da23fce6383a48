"""What the recording scripts (`record-kineto.py`, `record-jax.py`) share:
ranks run under libfaketime with a known clock error, and each records its
faked clock beside the true one (a raw `clock_gettime` syscall, which
libfaketime does not intercept) as `rank<R>.truth.jsonl`: one
{"faked_ns", "true_ns", "bracket_ns"} row per sample, the faked reading
between two true reads `bracket_ns` apart, `true_ns` their midpoint.
"""

import ctypes
import json
import os
import select
import socket
import threading
import time

FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
SYS_CLOCK_GETTIME = 228  # x86_64
CLOCK_REALTIME = 0
# Truth samples whose two true reads lie further apart are dropped.
MAX_BRACKET_NS = 100_000


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def true_realtime_ns(libc):
    ts = Timespec()
    if libc.syscall(SYS_CLOCK_GETTIME, CLOCK_REALTIME, ctypes.byref(ts)) != 0:
        raise OSError(ctypes.get_errno(), "clock_gettime syscall failed")
    return ts.tv_sec * 1_000_000_000 + ts.tv_nsec


def faketime_env(skew):
    """The environment that runs a process with the faked clock `skew`
    (libfaketime's `FAKETIME`, e.g. "+0.0037 x1.000025")."""
    return dict(LD_PRELOAD=FAKETIME_LIB, FAKETIME=skew,
                FAKETIME_NO_CACHE="1", DONT_FAKE_MONOTONIC="1")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pause(seconds):
    # time.sleep fails under libfaketime (clock_nanosleep gets a faked
    # deadline); select's relative timeout is not faked.
    select.select([], [], [], seconds)


class TruthSampler:
    """Samples (true before, faked, true after) every 50 ms on a thread of
    its own, from `start()` until `stop()`."""

    def __init__(self):
        self.rows = []
        self._stop = threading.Event()
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        # Of a few tries the tightest bracket is kept (the thread can be
        # preempted between the reads).
        while not self._stop.is_set():
            best = None
            for _ in range(5):
                before = true_realtime_ns(self._libc)
                faked = time.time_ns()
                after = true_realtime_ns(self._libc)
                if best is None or after - before < best[2] - best[0]:
                    best = (before, faked, after)
            if best[2] - best[0] <= MAX_BRACKET_NS:
                self.rows.append(best)
            pause(0.05)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join()

    def write(self, out_dir, rank):
        with open(os.path.join(out_dir, f"rank{rank}.truth.jsonl"), "w") as f:
            for before, faked, after in self.rows:
                row = {"faked_ns": faked, "true_ns": (before + after) // 2,
                       "bracket_ns": after - before}
                f.write(json.dumps(row) + "\n")
