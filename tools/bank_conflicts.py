"""Nsight Compute counters for the tensor-core chapters, recorded beside what the explorers compute:
  - rungs 03/04: shared-memory wavefronts and bank conflicts of the ldmatrix reads (conflict degree);
  - rung 05: how busy the shared-memory pipe and the tensor pipe are (what limits it).

    python3 -m tools.bank_conflicts            (on the GPU host; ncu must be on PATH)
"""
from __future__ import annotations

import argparse
import sys

from helpers import device, results, store
from helpers.models import kernel_conflict_degree
# ncu runs through helpers.profile, as every rung's profile does: one runner and one parser of its table
from helpers.ncu import ncu_rows

LDSM = ("smsp__inst_executed_op_ldsm.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")
PIPES = ("l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",
         "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
         "sm__warps_active.avg.pct_of_peak_sustained_active")
RUN = "from helpers import check; import sys; print(check(sys.argv[1], int(sys.argv[2])))"


def ncu(rung_id: str, n: int, metrics, script: str = RUN, kernels: str = "regex:^gemm_") -> dict:
    """The metrics of the first kernel matching `kernels` that `script` (given rung_id and n) launches, with
    that kernel's name under "kernel"."""
    rows, _ = ncu_rows(["--metrics", ",".join(metrics), "-k", kernels, "-c", "1"], script, rung_id, str(n))
    got = {r["Metric Name"]: float(r["Metric Value"].replace(",", "")) for r in rows
           if r["Metric Value"] not in ("n/a", "")}
    return {**got, "kernel": rows[0]["Kernel Name"]}


def conflicts(rung_id: str, layout: str, bm=128, bn=128, bk=32, wm=64, wn=32) -> dict:
    got = ncu(rung_id, 512, LDSM)
    inst, fronts = got[LDSM[0]], got[LDSM[1]]
    return {"ldsm_instructions": inst, "shared_load_wavefronts": fronts, "bank_conflicts": got.get(LDSM[2]),
            "measured_degree": fronts / (4 * inst),  # an ldmatrix.x4 moves 512 B: 4 wavefronts at best
            "computed_degree": kernel_conflict_degree(layout, bm, bn, bk, wm, wn), "n": 512}


def main(argv=None) -> int:
    argparse.ArgumentParser(prog="python3 -m tools.bank_conflicts", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    dev = device()
    env = dev.env()
    for rid, layout in (("03_mma_sync", "row-major"), ("04_swizzle", "swizzled")):
        entry = {**conflicts(rid, layout), "run": store.run_id(), "gpu": dev.name, "date": env["date"], "env": env}
        results.record("bank_conflicts", rid, entry, results.path_for(dev.slug))
        print(rid, {k: v for k, v in entry.items() if k != "env"}, flush=True)
    got = ncu("05_cp_async", 4096, PIPES)
    entry = {"shared_pipe_pct": got.get(PIPES[0]), "tensor_pipe_pct": got.get(PIPES[1]),
             "warps_active_pct": got.get(PIPES[2]), "n": 4096, "run": store.run_id(), "gpu": dev.name, "date": env["date"], "env": env}
    results.record("profile", "05_cp_async", entry, results.path_for(dev.slug))
    print("05_cp_async", {k: v for k, v in entry.items() if k != "env"}, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
