"""How many warpgroups does the tensor pipe need? Chapter 00's wgmma probe (back-to-back m64n256k16 on one resident
tile, no global traffic, one group of HGMMA_GROUP wgmmas in flight while the next is issued) run with one warpgroup
per SM instead of two, an experiment outside the book's run for chapter 10's ping-pong section, where one issuing
warpgroup kept the tensor pipe at most 85% busy in the GEMM's k loop. Its output goes to
experiments/wgmma_issue/record.json.

    python3 -m experiments.wgmma_issue.run     the builds below, random operands, in the same interleaved rounds

Every build does the same number of wgmmas per launch (the one-warpgroup builds run twice the iterations), so their
TFLOP/s compare directly:
- "two warpgroups, one CTA": the probe as chapter 00 runs it (256 threads, one CTA per SM; like every build here, it
  sets up the handshake's two barriers before its loop);
- "one warpgroup": 128 threads, one CTA per SM;
- "one warpgroup, 8 a group": the same with eight wgmmas per commit group instead of four (fewer waits);
- "two CTAs of one warpgroup": 128 threads, two CTAs per SM: two warpgroups again, in separate CTAs;
- "... + handshake": HANDSHAKE = 1 adds what a GEMM consumer does around each k tile's group, without the data: a
  wait on an mbarrier (one whose phase has already completed, so the wait passes at once), a wgmma.fence before the
  group, and after its wait_group an arrival by one thread on a second barrier (the slot's release). The probe as
  chapter 00 runs it fences once, before its loop, and touches no barrier.
The kernel is wgmma_issue.cu (the probe alone, THREADS, HGMMA_GROUP and HANDSHAKE its config); build.py names the
builds.
"""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/wgmma_issue_scratch.json")  # nothing here belongs to the run

import numpy as np  # noqa: E402

from helpers import device  # noqa: E402
from helpers.gpu import require_live  # noqa: E402
from helpers.kernel import kernel  # noqa: E402
from helpers.launch import random_inputs  # noqa: E402
from helpers.registry import probe  # noqa: E402
from helpers.timing import time_gpu  # noqa: E402

from .build import BASE, BUILDS, source_of  # noqa: E402

RECORD = Path(__file__).with_name("record.json")
ITERS = 1 << 12
# name (build.py's BUILDS): (CTAs per SM, iterations)
LAUNCH = {"two warpgroups, one CTA": (1, ITERS), "one warpgroup": (1, 2 * ITERS),
          "one warpgroup, 8 a group": (1, ITERS), "two CTAs of one warpgroup": (2, ITERS),
          "two warpgroups + handshake": (1, ITERS), "one warpgroup + handshake": (1, 2 * ITERS)}


def main() -> dict:
    import cupy as cp
    p, sms = probe(BASE), require_live().sms
    words = (64 + 256) * 128 // 4
    operands = random_inputs("bf16", 1, 4 * words // 2, 1)[1].view(cp.uint32).reshape(-1)[:words].copy()
    runs, flop = {}, None
    for name, config in BUILDS.items():
        (per_sm, iters), threads, group = LAUNCH[name], config["THREADS"], config["HGMMA_GROUP"]
        kern = kernel(p, source_of(name))
        fn, blocks = kern.function(), sms * per_sm
        sink = cp.empty(blocks * threads, cp.float32)
        runs[name] = (lambda fn, blocks, threads, sink, iters: lambda i: fn(
            (blocks,), (threads,), (sink, np.int32(iters), operands)))(fn, blocks, threads, sink, iters)
        wgmmas = group * iters * blocks * threads // 128
        assert flop in (None, 2.0 * 64 * 256 * 16 * wgmmas), name  # every build: the same work per launch
        flop = 2.0 * 64 * 256 * 16 * wgmmas
    for _ in range(5):  # the clock sags under load, then settles (about 2 s of load): load it first
        for run in runs.values():
            for _ in range(40):
                run(0)
        cp.cuda.runtime.deviceSynchronize()
    got = time_gpu(runs, flop)
    out = {name: {"tflops": t.tflops, "iqr": list(t.tflops_iqr), "sm_clock_mhz": t.sm_clock_mhz,
                  "power_w": t.power_w, "threads": BUILDS[name]["THREADS"], "group": BUILDS[name]["HGMMA_GROUP"],
                  "ctas_per_sm": LAUNCH[name][0], "iters": LAUNCH[name][1], "handshake": BUILDS[name]["HANDSHAKE"]}
           for name, t in got.items()}
    for name, e in out.items():
        print(f"{name:<28} {e['tflops']:7.1f} TFLOP/s (IQR {e['iqr'][0]:.1f}-{e['iqr'][1]:.1f}), "
              f"{e['sm_clock_mhz']:.0f} MHz, {e['power_w']:.0f} W", flush=True)
    return out


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    got = main()
    RECORD.write_text(json.dumps({"time": got, "env": device().env()}, indent=1) + "\n")
