"""Nsight Compute counters for chapter 10: how each tile schedule uses L2, beside cuBLAS.

For rung 09 (one tile per block, the hardware's block order), the chapter-10 steps and cuBLAS at N=4096 and 8192:
L2 hit rate of all sectors requested, bytes read from DRAM, how busy the tensor pipe was, and the shared-memory
store instructions (what stmatrix cuts). At N=3072, where rung 10 changes its tile, the last two steps and cuBLAS:
how busy the SMs were over the kernel's duration (the wave napkin's efficiency). For chapter 12, the FP8 rung and
cuBLASLt's FP8 GEMM with fast accumulation (torch._scaled_mm, its heuristic choice) at N=4096 and 8192.

    python3 -m tools.l2_schedule [ID ...]   (on the GPU host; ncu must be on PATH; IDs: only these rungs or "cublas")
"""
from __future__ import annotations

import argparse
import sys

from helpers import chapter_rungs, device, results, store
from tools.bank_conflicts import ncu  # the same one-kernel ncu reading, here with the schedule's metrics

METRICS = ("lts__t_sector_hit_rate.pct", "dram__bytes_read.sum", "gpu__time_duration.sum",
           "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
           "smsp__inst_executed_op_shared_st.sum", "sm__cycles_active.avg.pct_of_peak_sustained_elapsed")
CUBLAS = ("import sys, cupy as cp; from helpers.launch import random_inputs; n = int(sys.argv[2]); "
          "a, b = random_inputs('bf16', n, n, n, b_layout='nk'); cp.matmul(a, b.T); cp.cuda.runtime.deviceSynchronize()")

CUBLAS_FP8 = ("import sys, torch; from helpers.formats import FP8_INPUT_SCALE; from helpers.launch import random_inputs; n = int(sys.argv[2]); "
              "a, b = random_inputs('e4m3', n, n, n, b_layout='nk'); f = torch.float8_e4m3fn; "
              "s = torch.tensor(FP8_INPUT_SCALE, device='cuda'); "
              "torch._scaled_mm(torch.from_dlpack(a).view(f), torch.from_dlpack(b).view(f).t(), scale_a=s, scale_b=s, "
              "out_dtype=torch.bfloat16, use_fast_accum=True); torch.cuda.synchronize()")
SCRIPTS = {"cublas": CUBLAS, "cublas_fp8": CUBLAS_FP8}


def profile(what: str, n: int) -> dict:
    got = ncu(what, n, METRICS, *((SCRIPTS[what], "regex:nvjet|gemm|xmma|cutlass") if what in SCRIPTS else ()))
    return {"l2_hit_pct": got.get(METRICS[0]), "dram_read_gb": got.get(METRICS[1], 0) / 1e9,
            "ncu_ms": got.get(METRICS[2], 0) / 1e6, "tensor_pipe_pct": got.get(METRICS[3]),
            "shared_store_inst": got.get(METRICS[4]), "sm_busy_pct": got.get(METRICS[5]), "kernel": got["kernel"][:80]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tools.l2_schedule", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ids", nargs="*", metavar="ID", help='only these rungs, "cublas" or "cublas_fp8" (default: all)')
    only = ap.parse_args(argv).ids
    dev = device()
    env = dev.env()
    plan = [(n, what) for n in (4096, 8192) for what in ("09_setmaxnreg", *(r.id for r in chapter_rungs("10")), "cublas")]
    plan += [(3072, "10_grouped_order"), (3072, "10_chip"), (3072, "cublas")]
    plan += [(n, what) for n in (4096, 8192) for what in ("12_fp8", "cublas_fp8")]
    plan = [(n, what) for n, what in plan if what in only] if only else plan
    for n, what in plan:
        entry = {**profile(what, n), "n": n, "run": store.run_id(), "gpu": dev.name, "date": env["date"], "env": env}
        results.record("l2_schedule", f"{what}@{n}", entry, results.path_for(dev.slug))
        print(what, n, {k: v for k, v in entry.items() if k not in ("env", "gpu", "date")}, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
