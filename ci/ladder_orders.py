"""Chapter 10's steps as a lattice (issue "ladder"): every combination of its five switches, timed in the same
interleaved rounds at N = 4096 and 8192, so that any order of the steps can be read off one measurement. An
experiment outside the book's run; results/ladder_orders.json keeps its output.

    python ci/ladder_orders.py check    the 32 builds at two small shapes
    python ci/ladder_orders.py time     the 32 builds and cuBLAS at N = 4096 and 8192, then every order of the steps

The switches, from 10_bf16_c_per_tile (rung 09's kernel writing bf16 C, one block per tile) to 10_stmatrix (rung 10
with its 128 x 256 tile, which is what rung 10 launches at these two sizes):
  P  persistent: one CTA per SM walks the tiles (the launch's grid; off: one block per tile, grid "tile_list")
  C  CLUSTER = 2: pairs along M share B by multicast
  S  SCHEDULE = 1: the grouped tile order
  E  EPILOGUE = 2: the TMA store, written with stmatrix (off: 8-byte paired stores from registers)
  F  STAGES = 4 (off: 3, as rungs 07 to 09)
The book's main path took P, then C and S together, then E, then F, when this ran; it now takes P, bf16 C
(every build here writes bf16 C), then C and F together, then E, then S. An order rises at a size when each step's
lower quartile lies above the upper quartile of the build before it, the rule of chapter 11's step table.
"""
import itertools
import json
import os
import sys
from dataclasses import replace

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/ladder_orders_scratch.json")  # nothing here belongs to the run

from helpers import check, device  # noqa: E402
from helpers.compiler import apply_config  # noqa: E402
from helpers.launch import prepare  # noqa: E402
from helpers.registry import ROOT, rung  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

RECORD = ROOT / "results" / "ladder_orders.json"
FLAGS = "PCSEF"
SIZES = (4096, 8192)
# 10_stmatrix carries no registry config, so a source's constants stand (a rung's own config would override them);
# the one-block-per-tile builds are the same rung with 10_bf16_c_per_tile's grid, under an id of their own (the cache key)
PERSISTENT = rung("10_stmatrix")
TILE_LIST = replace(PERSISTENT, id="10_stmatrix_tile_list", grid="tile_list")


def name(on: str) -> str:
    return "".join(f if f in on else "-" for f in FLAGS)


def build(on: str):
    config = {"CLUSTER": 2 if "C" in on else 1, "SCHEDULE": int("S" in on), "EPILOGUE": 2 if "E" in on else 0,
              "STAGES": 4 if "F" in on else 3}
    return (PERSISTENT if "P" in on else TILE_LIST), apply_config(PERSISTENT.path.read_text(), config)


BUILDS = ["".join(c) for k in range(len(FLAGS) + 1) for c in itertools.combinations(FLAGS, k)]


def run_checks() -> bool:
    ok = True
    for on in BUILDS:
        r, src = build(on)
        for shape in ((512, 512, 256), (2304, 2048, 128)):
            got = check(r, *shape, source=src)
            ok &= bool(got.ok)
            if not got.ok:
                print(name(on), got, flush=True)
    print(f"{len(BUILDS)} builds x 2 shapes: {'all correct' if ok else 'WRONG'}", flush=True)
    return ok


def time_size(n: int) -> dict:
    launches = {}
    for on in BUILDS:
        r, src = build(on)
        launches[name(on)] = prepare(r, n, n, n, source=src)
    row = bench_launches(launches)
    print(f"N = {n}: " + ", ".join(f"{x} {row[x]['tflops']:.1f}" for x in launches)
          + f"; cuBLAS {row['cublas_best']['tflops']:.1f}", flush=True)
    return row


def orders(rows: dict) -> list[dict]:
    """Every order of the five switches: the factor and whether each step rises at each size."""
    out = []
    for perm in itertools.permutations(FLAGS):
        steps, on = [], ""
        for flag in perm:
            a, b = name(on), name(on + flag)
            on += flag
            steps.append({"flag": flag, **{str(n): {"factor": rows[n][b]["tflops"] / rows[n][a]["tflops"],
                                                   "rises": rows[n][b]["iqr"][0] > rows[n][a]["iqr"][1]}
                                          for n in rows}})
        out.append({"order": "".join(perm), "steps": steps,
                    "rises": all(s[str(n)]["rises"] for s in steps for n in rows)})
    return out


if __name__ == "__main__":
    what = sys.argv[1:] or ["check", "time"]
    if "check" in what and not run_checks():
        sys.exit("a lattice build computed a wrong C")
    if "time" in what:
        rows = {n: time_size(n) for n in SIZES}
        found = orders(rows)
        good = [o["order"] for o in found if o["rises"]]
        print(f"orders that rise at every step at both sizes: {good or 'none'}")
        RECORD.write_text(json.dumps({"time": {str(n): r for n, r in rows.items()}, "orders": found,
                                      "env": device().env()}, indent=1) + "\n")
