"""Nsight Compute counters for chapter 10: how each tile schedule uses L2, beside cuBLAS.

For rung 09 (one tile per block, the hardware's block order), the chapter-10 steps and cuBLAS at N=4096 and 8192:
L2 hit rate of all sectors requested, bytes read from DRAM, and how busy the tensor pipe was.

    python ci/l2_schedule.py            (on the GPU host; ncu must be on PATH)
"""
import csv
import io
import subprocess
import sys

from helpers import chapter_rungs, device, results

METRICS = ("lts__t_sector_hit_rate.pct", "dram__bytes_read.sum", "gpu__time_duration.sum",
           "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed")
RUNG = "from helpers import check; import sys; print(check(sys.argv[1], int(sys.argv[2])))"
CUBLAS = ("import sys, cupy as cp; from helpers.check import random_inputs; n = int(sys.argv[2]); "
          "a, b = random_inputs('bf16', n, n, n, b_layout='nk'); cp.matmul(a, b.T); cp.cuda.runtime.deviceSynchronize()")


def ncu(what: str, n: int) -> dict:
    script, kernels = (CUBLAS, "regex:nvjet|gemm|xmma|cutlass") if what == "cublas" else (RUNG, "regex:^gemm_")
    out = subprocess.run(["ncu", "--csv", "--clock-control", "none", "--metrics", ",".join(METRICS), "-k", kernels,
                          "-c", "1", sys.executable, "-c", script, what, str(n)], capture_output=True, text=True,
                         timeout=600)
    rows = [r for r in csv.reader(io.StringIO(out.stdout)) if len(r) > 5]
    if not rows:
        raise RuntimeError(f"ncu gave no metrics for {what}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    header = rows[0]
    name, value, kernel = header.index("Metric Name"), header.index("Metric Value"), header.index("Kernel Name")
    got = {r[name]: float(r[value].replace(",", "")) for r in rows[1:] if r[value] not in ("n/a", "")}
    return {"l2_hit_pct": got.get(METRICS[0]), "dram_read_gb": got.get(METRICS[1], 0) / 1e9,
            "ncu_ms": got.get(METRICS[2], 0) / 1e6, "tensor_pipe_pct": got.get(METRICS[3]), "kernel": rows[1][kernel][:80]}


if __name__ == "__main__":
    dev = device()
    env = dev.env()
    for n in (4096, 8192):
        for what in ("09_setmaxnreg", *(r.id for r in chapter_rungs("10")), "cublas"):
            entry = {**ncu(what, n), "n": n, "gpu": dev.name, "date": env["date"], "env": env}
            results.record("l2_schedule", f"{what}@{n}", entry, results.path_for(dev.slug))
            print(what, n, {k: v for k, v in entry.items() if k not in ("env", "gpu", "date")}, flush=True)
