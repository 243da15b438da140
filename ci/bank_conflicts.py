"""Count shared-memory wavefronts of ldmatrix in rungs 03 (unswizzled) and 04 (swizzled) with Nsight Compute,
and record measured conflict degree = wavefronts / (4 per ldmatrix.x4) beside the computed one.

    python ci/bank_conflicts.py            (on the GPU host; ncu must be on PATH)
"""
import csv
import io
import subprocess
import sys

from helpers import device, results
from helpers.explore import kernel_conflict_degree

METRICS = ("smsp__inst_executed_op_ldsm.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum")
LAYOUT = {"03_mma_sync": "row-major", "04_swizzle": "swizzled", "05_cp_async": "swizzled"}
RUN = "from helpers import check; import sys; print(check(sys.argv[1], 512))"


def measure(rung_id: str) -> dict:
    out = subprocess.run(["ncu", "--csv", "--clock-control", "none", "--metrics", ",".join(METRICS),
                          "-k", "regex:gemm_", "-c", "1", sys.executable, "-c", RUN, rung_id],
                         capture_output=True, text=True, timeout=300)
    rows = [r for r in csv.reader(io.StringIO(out.stdout)) if len(r) > 5]
    if not rows:
        raise RuntimeError(f"ncu gave no metrics for {rung_id}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    header, values = rows[0], rows[1:]
    name, value = header.index("Metric Name"), header.index("Metric Value")
    got = {r[name]: float(r[value].replace(",", "")) for r in values if r[value] not in ("n/a", "")}
    inst, fronts = got[METRICS[0]], got[METRICS[1]]
    return {"ldsm_instructions": inst, "ldsm_wavefronts": fronts,
            "ldsm_bank_conflicts": got.get(METRICS[2]), "measured_degree": fronts / (4 * inst),
            "computed_degree": kernel_conflict_degree(LAYOUT[rung_id]), "n": 512}


if __name__ == "__main__":
    dev = device()
    for rid in LAYOUT:
        entry = {**measure(rid), "gpu": dev.name, "env": dev.env(), "date": dev.env()["date"]}
        results.record("bank_conflicts", rid, entry, results.path_for(dev.slug))
        print(rid, {k: v for k, v in entry.items() if k != "env"}, flush=True)
