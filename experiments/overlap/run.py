"""The epilogue under the next tile's first k step: chapter 10's kernel with its switch OVERLAP (kernels/10_chip.cu),
an experiment outside the book's run; its output goes to experiments/overlap/record.json. From the repository root:

    python3 -m experiments.overlap.run check [small]   correctness of every OVERLAP build (`small`: the shapes run.sh
                                                       runs under compute-sanitizer)
    python3 -m experiments.overlap.run time            every shape: the builds, rung 10 as it launches and cuBLAS in
                                                       the same rounds
    python3 -m experiments.overlap.run profile         Nsight Compute on rung 10 and the "all late" build at N = 4096
                                                       and 8192
    python3 -m experiments.overlap.run steps [small]   10_overlap as it launches beside builds that issue the next
                                                       tile's first two k steps early (build.py's patch), with two
                                                       and all chunks late: checked, then timed (`small`: checks only)
    python3 -m experiments.overlap.run fp8 [small]     12_fp8 with OVERLAP = 0 and 2 (kernels/12_fp8.cu has the
                                                       switch too), each shape as rung 12's policy builds it: checked,
                                                       then timed with cuBLAS in the same rounds (`small`: checks only)

Each build is rung 10 with the tile and cluster its tile policy picks for the shape (helpers.tiles.launch_config),
plus OVERLAP = L: the tile's last L chunks of 64 columns are rounded to bf16 pairs, the next tile's first k step is
issued, and those chunks go out while its wgmmas run. L = 0 is the rung as committed.
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/overlap_scratch.json")  # nothing here belongs to the book's run

from helpers import check, device  # noqa: E402
from helpers.facts import variant_source  # noqa: E402
from helpers.gpu import require_live  # noqa: E402
from helpers.kernel import kernel, overriding  # noqa: E402
from helpers.launch import prepare  # noqa: E402
from helpers.registry import rung  # noqa: E402
from helpers.results import record_part  # noqa: E402
from helpers.tiles import launch_config  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

from . import BUILDS  # noqa: E402

RECORD = Path(__file__).with_name("record.json")
FINAL = rung("10_chip")
SHAPES = ((2048,) * 3, (3072,) * 3, (4096,) * 3, (6144,) * 3, (8192,) * 3, (8192, 8192, 1024), (4096, 16384, 4096),
          (12288, 12288, 4096), (2048, 8192, 8192))
# one k step (the early issue is the whole k loop); several tiles per cluster; ragged edges; pairs whose second CTA
# reads wholly past M; every tile of the menu (1536 = 6 x 256 = 8 x 192 = 12 x 128)
CHECKS = ((256, 256, 64), (2304, 2048, 128), (4095, 4104, 200), (100, 35840, 64), (3072, 3072, 64),
          (1536, 1536, 512), (4096, 4096, 256))


def source_for(m: int, n: int, k: int, late: int) -> str:
    """Rung 10's file with the overrides its tile policy picks for M x N x K, plus OVERLAP = late."""
    picked = launch_config(FINAL, m, n, k, kernel(FINAL).resident_clusters(), require_live().sms)
    return variant_source(FINAL, {**picked, "OVERLAP": late})


def run_checks(shapes=CHECKS) -> bool:
    ok = True
    for name, late in BUILDS.items():
        for shape in shapes:
            got = check(FINAL, *shape, source=source_for(*shape, late))
            print(f"{name}: {got}", flush=True)
            ok &= bool(got.ok)
    return ok


def time_shape(m: int, n: int, k: int) -> dict:
    launches = {"rung 10": prepare(FINAL, m, n, k)}
    launches.update({name: prepare(FINAL, m, n, k, source=source_for(m, n, k, late))
                     for name, late in BUILDS.items()})
    row = bench_launches(launches)
    print(f"{m}x{n}x{k}: " + "  ".join(f"{x} {row[x]['tflops']:.1f} ({row[x]['ratio']:.3f})" for x in launches)
          + f"  cuBLAS {row['cublas_best']['tflops']:.1f}", flush=True)
    return row


def profiles(sizes=(4096, 8192)) -> dict:
    from helpers.profile import collect
    out = {}
    for n in sizes:  # square sizes: the tile policy keeps the rung's own tile, so OVERLAP is the one override
        for name, late in (("as committed", 0), ("all late", max(BUILDS.values()))):
            key = f"{name}@{n}"
            out[key] = {**collect(FINAL, n, config={"OVERLAP": late}), "rung": name, "source": "experiments/overlap",
                        "run": "outside the book's run", "gpu": device().name}
            print(key, {x: out[key].get(x) for x in ("duration_us", "sm_clock_mhz", "tensor_pipe_pct")}, flush=True)
    return out


FP8 = rung("12_fp8")
FP8_SHAPES = ((2048,) * 3, (3072,) * 3, (4096,) * 3, (8192,) * 3, (8192, 8192, 1024), (4080, 4112, 4112))
FP8_CHECKS = ((256, 256, 128), (2304, 2048, 256), (4095, 4104, 208), (100, 35840, 128), (3072, 3072, 128),
              (1536, 1536, 512), (4096, 4096, 512))


def fp8_source(m: int, n: int, k: int, late: int) -> str:
    """12_fp8's file with the overrides its tile policy picks for M x N x K, plus OVERLAP = late."""
    picked = launch_config(FP8, m, n, k, kernel(FP8).resident_clusters(), require_live().sms)
    return variant_source(FP8, {**picked, "OVERLAP": late})


def fp8_rung(late: int):
    """12_fp8 whose config sets OVERLAP = late: a registry rung's config wins over a source's (helpers.kernel)."""
    return overriding(FP8, {"OVERLAP": late})


def fp8(small: bool = False) -> dict:
    """Part fp8: the checks of 12_fp8 with OVERLAP = 2 at every check shape, then (unless `small`) each shape timed:
    the kernel with OVERLAP = 0 and with OVERLAP = 2 at every shape, with the tile and clusters rung 12's policy picks
    and PDL's attribute, beside cuBLAS in the same rounds."""
    checks = []
    for shape in FP8_CHECKS[:4] if small else FP8_CHECKS:
        got = check(fp8_rung(2), *shape, source=fp8_source(*shape, 2))
        print(f"12_fp8, OVERLAP = 2: {got}", flush=True)
        checks.append({"shape": list(shape), "ok": bool(got.ok)})
    out = {"check": checks, "time": []}
    names = {f"OVERLAP = {late}": late for late in (0, 2)}
    for m, n, k in () if small else FP8_SHAPES:
        row = bench_launches({name: prepare(fp8_rung(late), m, n, k, source=fp8_source(m, n, k, late))
                              for name, late in names.items()})
        print(f"{m}x{n}x{k}: " + "  ".join(f"{x} {row[x]['tflops']:.1f} ({row[x]['ratio']:.3f})" for x in names)
              + f"  cuBLAS {row['cublas_best']['tflops']:.1f}", flush=True)
        out["time"].append(row)
    return out


STEP_BUILDS = {"2 late, 2 steps": (2, 2), "all late, 1 step": (4, 1), "all late, 2 steps": (4, 2)}
STEP_SHAPES = ((3072,) * 3, (4096,) * 3, (8192,) * 3, (8192, 8192, 1024))


def steps_source(m: int, n: int, k: int, late: int, steps: int) -> str:
    """Rung 10's file with the tile and clusters 10_overlap's policy picks for M x N x K, PDL = 1, OVERLAP = late
    (0 where no CTA takes a second tile, as the policy builds it), and `steps` k steps issued early."""
    from .build import source
    r = rung("10_overlap")
    picked = launch_config(r, m, n, k, kernel(r).resident_clusters(), require_live().sms)
    return source({**picked, "PDL": 1, "OVERLAP": late if picked.get("OVERLAP", 1) else 0}, steps)


def steps(small: bool = False) -> dict:
    """Part steps: each build checked at the check shapes (one and two k steps, ragged edges, CTAs with a second
    tile), then (unless `small`) timed beside 10_overlap as it launches and cuBLAS in the same rounds."""
    from .build import BASE
    checks = []
    for name, (late, n_steps) in STEP_BUILDS.items():
        for shape in CHECKS[:4] if small else CHECKS:
            got = check(BASE, *shape, source=steps_source(*shape, late, n_steps))
            print(f"{name}: {got}", flush=True)
            checks.append({"build": name, "shape": list(shape), "ok": bool(got.ok)})
    out = {"check": checks, "time": []}
    for m, n, k in () if small else STEP_SHAPES:
        launches = {"10_overlap": prepare("10_overlap", m, n, k)}
        launches.update({name: prepare(BASE, m, n, k, source=steps_source(m, n, k, *b))
                         for name, b in STEP_BUILDS.items()})
        row = bench_launches(launches)
        print(f"{m}x{n}x{k}: " + "  ".join(f"{x} {row[x]['tflops']:.1f} ({row[x]['ratio']:.3f})" for x in launches)
              + f"  cuBLAS {row['cublas_best']['tflops']:.1f}", flush=True)
        out["time"].append(row)
    return out


def save(part: str, value) -> None:
    record_part(RECORD, part, value)


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    what = sys.argv[1:] or ["check", "time", "profile"]
    if "check" in what and not run_checks(CHECKS[:4] if "small" in what else CHECKS):
        sys.exit("an OVERLAP build computed a wrong C")
    if "time" in what:
        save("time", [time_shape(*s) for s in SHAPES])
    if "profile" in what:
        save("profile", profiles())
    for name, run, wrong in (("steps", steps, "a two-step build"), ("fp8", fp8, "12_fp8 with OVERLAP = 2")):
        if name in what:
            part = run("small" in what)
            if not all(x["ok"] for x in part["check"]):
                sys.exit(f"{wrong} computed a wrong C")
            if part["time"]:  # `small` only checks
                save(name, part)
