"""Evaluation, not a test: NVIDIA's nvbench (the `cuda-bench` package) times cupy.matmul and the final rung at
N=4096, and helpers.timing times the same two in the same process. nvbench's cold GPU time (a blocking kernel
ahead of each launch, L2 flushed) and batch GPU time should bracket what the harness reports.

    python3 -m tools.nvbench_eval [N]     (GPU host, with cuda-bench installed; prints both tables)
"""
import sys

import cupy as cp
import cuda.bench as nvbench

from helpers import prepare
from helpers.timing import bench

N = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
lau = prepare("10_chip", N)
a, b = lau.inputs()
c = lau.output()
args = lau.args(a, b, c)
out = cp.empty((N, N), a.dtype)


def on_stream(state, fn):
    stream = cp.cuda.ExternalStream(state.get_stream().__cuda_stream__()[1])

    def launch(_):
        with stream:
            fn()
    state.exec(launch)


def rung10(state):
    on_stream(state, lambda: lau.enqueue(args))


def cupy_matmul(state):
    on_stream(state, lambda: cp.matmul(a, b.T, out=out))


nvbench.register(rung10)
nvbench.register(cupy_matmul)
nvbench.run_all_benchmarks([sys.argv[0], "--min-samples", "50"])
got = bench(lau)
for name, t in {"kernel": got.kernel, **got.others}.items():
    print(f"harness {name:<20} median {t.ms * 1e3:8.1f} us  IQR {t.q1_ms * 1e3:.1f}-{t.q3_ms * 1e3:.1f} us  "
          f"{t.tflops:6.1f} TFLOP/s  SM {t.sm_clock_mhz} MHz  {t.power_w} W")
