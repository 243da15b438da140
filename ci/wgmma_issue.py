"""How many warpgroups does the tensor pipe need? Chapter 00's wgmma probe (back-to-back m64n256k16 on one resident
tile, no global traffic, one group of HGMMA_GROUP wgmmas in flight while the next is issued) run with one warpgroup
per SM instead of two, an experiment outside the book's run for chapter 10's ping-pong section, where one issuing
warpgroup kept the tensor pipe at most 85% busy in the GEMM's k loop. results/wgmma_issue.json keeps its output.

    python ci/wgmma_issue.py     the builds below, random operands, in the same interleaved rounds

Every build does the same number of wgmmas per launch (the one-warpgroup builds run twice the iterations), so their
TFLOP/s compare directly:
- "two warpgroups, one CTA": the probe as chapter 00 runs it (256 threads, one CTA per SM);
- "one warpgroup": 128 threads, one CTA per SM;
- "one warpgroup, 8 a group": the same with eight wgmmas per commit group instead of four (fewer waits);
- "two CTAs of one warpgroup": 128 threads, two CTAs per SM: two warpgroups again, in separate CTAs;
- "... + handshake": a patch (HANDSHAKE, below) adds what a GEMM consumer does around each k tile's group, without
  the data: a wait on an mbarrier (one whose phase has already completed, so the wait passes at once), a
  wgmma.fence before the group, and after its wait_group an arrival by one thread on a second barrier (the slot's
  release). The probe as chapter 00 runs it fences once, before its loop, and touches no barrier.
"""
import json
import os

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/wgmma_issue_scratch.json")  # nothing here belongs to the run

import numpy as np  # noqa: E402

from helpers import device  # noqa: E402
from helpers.compiler import apply_config  # noqa: E402
from helpers.gpu import require_live  # noqa: E402
from helpers.kernel import kernel  # noqa: E402
from helpers.launch import random_inputs  # noqa: E402
from helpers.registry import ROOT, probe  # noqa: E402
from helpers.timing import time_gpu  # noqa: E402

RECORD = ROOT / "results" / "wgmma_issue.json"
ITERS = 1 << 12
# name: (THREADS, HGMMA_GROUP, CTAs per SM, iterations)
# name: (THREADS, HGMMA_GROUP, CTAs per SM, iterations, handshake)
BUILDS = {"two warpgroups, one CTA": (256, 4, 1, ITERS, 0), "one warpgroup": (128, 4, 1, 2 * ITERS, 0),
          "one warpgroup, 8 a group": (128, 8, 1, ITERS, 0), "two CTAs of one warpgroup": (128, 4, 2, ITERS, 0),
          "two warpgroups + handshake": (256, 4, 1, ITERS, 1), "one warpgroup + handshake": (128, 4, 1, 2 * ITERS, 1)}
# The handshake patch of chapter 00's probe source (the file itself is not changed): anchors found once each.
HANDSHAKE = (
    ("constexpr int HGMMA_GROUP = 4;",
     "constexpr int HANDSHAKE = 0;  // ci/wgmma_issue.py: a GEMM consumer's barrier wait, fence and release a group\n"
     "constexpr int HGMMA_GROUP = 4;"),
    ("    const unsigned a = smem_addr(tiles), b = a + 64 * 128;\n",
     "    const unsigned a = smem_addr(tiles), b = a + 64 * 128;\n"
     "    __shared__ __align__(8) unsigned long long bars[2];  // [0]: phase 0 completed, [1]: never completes\n"
     "    if (threadIdx.x == 0) {\n"
     "        mbarrier_init(smem_addr(&bars[0]), 1);\n"
     "        mbarrier_init(smem_addr(&bars[1]), (1 << 20) - 1);  // the largest count an mbarrier takes\n"
     "        fence_mbarrier_init();\n"
     "        mbarrier_arrive(smem_addr(&bars[0]));\n"
     "    }\n"
     "    __syncthreads();\n"),
    ("    for (int i = 0; i < iters; ++i) {\n#pragma unroll\n        for (int j = 0; j < HGMMA_GROUP; ++j) {",
     "    for (int i = 0; i < iters; ++i) {\n"
     "        if constexpr (HANDSHAKE) {\n"
     "            mbarrier_wait_parity(smem_addr(&bars[0]), 0);\n"
     "            wgmma_fence();\n"
     "        }\n"
     "#pragma unroll\n        for (int j = 0; j < HGMMA_GROUP; ++j) {"),
    ("        wgmma_wait_group<1>();  // one group stays in flight while the next is issued, as in a GEMM main loop\n",
     "        wgmma_wait_group<1>();  // one group stays in flight while the next is issued, as in a GEMM main loop\n"
     "        if (HANDSHAKE && threadIdx.x % 128 == 0) mbarrier_arrive(smem_addr(&bars[1]));\n"),
)


def probe_source(threads: int, group: int, handshake: int) -> str:
    src = probe("hgmma_peak").path.read_text()
    for old, new in HANDSHAKE:
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    return apply_config(src, {"THREADS": threads, "HGMMA_GROUP": group, "HANDSHAKE": handshake})


def main() -> dict:
    import cupy as cp
    p, sms = probe("hgmma_peak"), require_live().sms
    words = (64 + 256) * 128 // 4
    operands = random_inputs("bf16", 1, 4 * words // 2, 1)[1].view(cp.uint32).reshape(-1)[:words].copy()
    runs, flop = {}, None
    for name, (threads, group, per_sm, iters, handshake) in BUILDS.items():
        kern = kernel(p, probe_source(threads, group, handshake))
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
                  "power_w": t.power_w, "threads": BUILDS[name][0], "group": BUILDS[name][1],
                  "ctas_per_sm": BUILDS[name][2], "iters": BUILDS[name][3], "handshake": BUILDS[name][4]}
           for name, t in got.items()}
    for name, e in out.items():
        print(f"{name:<28} {e['tflops']:7.1f} TFLOP/s (IQR {e['iqr'][0]:.1f}-{e['iqr'][1]:.1f}), "
              f"{e['sm_clock_mhz']:.0f} MHz, {e['power_w']:.0f} W", flush=True)
    return out


if __name__ == "__main__":
    got = main()
    RECORD.write_text(json.dumps({"time": got, "env": device().env()}, indent=1) + "\n")
