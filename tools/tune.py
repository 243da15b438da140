"""Try variants of a rung's constexpr configuration against the strongest cuBLAS (same rounds), at several sizes,
and record each (section "variants", with the run id) so chapters 01, 10 and 12 can show what was tried. Not a test.

    python3 -m tools.tune [RUNG ...]   -> one line per variant and size: TFLOP/s, % of cuBLAS, registers, correctness
"""
from __future__ import annotations

import argparse
import json
import sys

from helpers import bench, build, check, rung
from helpers.csource import apply_config
from helpers.store import obtain

SIZES = (2048, 4096, 8192)
VARIANTS = {
    "10_chip": [{}, {"GROUP_M": 4}, {"GROUP_M": 16}, {"SCHEDULE": 0}, {"CLUSTER": 1}, {"C_BUFFERS": 4}],
    "12_fp8": [{}, {"GROUP_M": 16}, {"CLUSTER": 1}],
    # chapter 01: rung 4 held to 128 registers, so two blocks fit an SM as they do for rung 5: occupancy alone
    "01_blocktile_2d": [{}, {"MIN_BLOCKS": 2}],
}
# The steady rate of rung 10's three tiles, where every one of them fills its waves alike (97% and 99% busy at
# 6144 and 12288): what helpers.registry's MID_RATE and NARROW_RATE stand for. {} is the committed 128 x 256.
TILE_SIZES = (6144, 12288)
TILES = {"10_chip": [{}, {"BN": 192, "WGMMA_N": 192}, {"BN": 128, "WGMMA_N": 128}]}


def variant(r, changes: dict, n: int) -> dict:
    src = apply_config(r.path.read_text(), changes)
    ok = check(r, 1536, 1536, 512, source=src)  # 1536 = 6 x 256 = 8 x 192 = 12 x 128: every tile divides it
    res = bench(r, n, source=src)
    return {"rung": r.id, "change": changes, "n": n, "tflops": res.kernel.tflops, "cublas_tflops": res.cublas.tflops,
            "ratio": res.ratio, "tflops_iqr": list(res.kernel.tflops_iqr), "cublas_ref": res.cublas_ref,
            "registers": build(r, source=src).resources[r.entry].registers, "correct": ok.ok}


def tune(*only: str) -> None:
    for table, sizes in ((VARIANTS, SIZES), (TILES, TILE_SIZES)):
        for rid, variants in table.items():
            if only and rid not in only:
                continue
            r = rung(rid)
            for n in sizes:
                for changes in variants:
                    e, _ = obtain("variants", f"{rid}:{json.dumps(changes, sort_keys=True)}@{n}",
                                    lambda: variant(r, changes, n), r.needs_cc, r.arch)
                    print(f"{rid} N={n} {changes or 'as committed'}: {e['tflops']:.1f} TFLOP/s, cuBLAS "
                          f"{e['cublas_tflops']:.1f}, {e['ratio']:.1%}, {e['registers']} regs, "
                          f"{'correct' if e['correct'] else 'WRONG'}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tools.tune", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rungs", nargs="*", metavar="RUNG",
                    help=f"only these (default: {', '.join({**VARIANTS, **TILES})})")
    tune(*ap.parse_args(argv).rungs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
