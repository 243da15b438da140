"""Keep the book's results one coherent run: drop every timed entry (GEMM rows, cuBLAS baselines, ceilings,
cross-checks) that the given run did not measure, so no chapter can replay a number from an older run.

    python3 -m tools.prune_results RUN_ID        (the last step of ci/gpu.sh)
"""
from __future__ import annotations

import argparse
import json
import sys

from helpers import device, results

TIMED = ("gemm", "baselines", "ceilings", "crosscheck", "demos", "numba", "timeline", "grids", "sustained", "variants",
         "accumulator")
# Nsight Compute counters are kept whole (each entry names the run that measured it): ci/gpu.sh's `profile` step is
# not among its default steps, so a run that did not take the profiles must not erase them.
NCU = ("bank_conflicts", "profile", "l2_schedule", "profiles", "stall_sites")


def prune(run: str) -> None:
    path = results.path_for(device().slug)
    data = results.load(path)
    for section in list(data):
        if section not in TIMED and section not in NCU:
            print(f"dropped section {section} ({len(data[section])} entries): nothing reads it any more")
            del data[section]
            continue
        if section not in TIMED:
            continue
        stale = [k for k, e in data[section].items() if e.get("run") != run]
        for k in stale:
            del data[section][k]
        print(f"{section}: kept {len(data[section])}, dropped {len(stale)} from older runs {stale[:6]}")
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tools.prune_results", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", metavar="RUN_ID", help="the run to keep (GEMM_LADDER_RUN)")
    prune(ap.parse_args(argv).run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
