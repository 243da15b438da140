"""Stream-K: chapter 10's kernel with the last waves' tiles cut along k into equal ranges, one per worker, and a
deterministic fix-up (streamk.cu says how), an experiment outside the book's run; its output goes to
experiments/streamk/record.json. From the repository root:

    python3 -m experiments.streamk.run check [small]   correctness and run-to-run identity of every build (`small`:
                                                       the shapes run.sh runs under compute-sanitizer)
    python3 -m experiments.streamk.run time            every shape: the builds, rung 10 as it launches and cuBLAS in
                                                       the same rounds
    python3 -m experiments.streamk.run profile         Nsight Compute on the whole-tiles and stream-K builds at 4096
                                                       and 8192
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/streamk_scratch.json")  # nothing here belongs to the book's run

from helpers import check, device  # noqa: E402
from helpers.launch import prepare  # noqa: E402
from helpers.registry import rung  # noqa: E402
from helpers.results import record_part  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

from .build import BASE, BUILDS, KERNEL, TIMING_ONLY, config_for, plan, source  # noqa: E402

RECORD = Path(__file__).with_name("record.json")
# the record's part "broad" (its first run, before LATE_FLAG and FIXUP) also timed 16384, 4096 x 16384 x 4096 and
# 12288 x 12288 x 4096
SHAPES = ((2048,) * 3, (3072,) * 3, (4096,) * 3, (6144,) * 3, (8192,) * 3, (8192, 8192, 1024), (2048, 8192, 8192),
          (127, 4096, 4096))
# small: four tiles cut into 16-17 pieces each (an owner adds 16 partials); 72 tiles all cut, one or two pieces
# each; the same ragged (edge tiles, a partial last k tile). Then one tile row of clusters of one (M = 100), and
# full-size shapes where whole tiles and cut ones mix.
CHECKS = ((512, 512, 8448), (2304, 2048, 512), (2300, 2040, 1000), (100, 4096, 4096), (4096, 4096, 4096),
          (8192, 8192, 1024), (3072, 3072, 3072))


def launch(m: int, n: int, k: int, name: str):
    return prepare(BASE, m, n, k, source=source(config_for(m, BUILDS[name])))


def run_checks(shapes=CHECKS) -> bool:
    import cupy as cp
    ok = True
    for name in [x for x in BUILDS if x not in TIMING_ONLY]:
        for shape in shapes:
            lau = launch(*shape, name)
            got = check(lau)
            # run to run: the same inputs twice must give the same bits (the fix-up adds in a fixed order)
            a, b = lau.inputs()
            c1, c2 = lau.output(), lau.output()
            lau(a, b, c1)
            lau(a, b, c2)
            same = bool(cp.array_equal(c1.view(cp.uint16), c2.view(cp.uint16)))
            p = plan(*shape, lau.grid[0] // lau.kernel.consts["CLUSTER"], config_for(shape[0], BUILDS[name]))
            print(f"{name}: {got}; run to run {'identical' if same else 'DIFFERENT'}; plan {p}", flush=True)
            ok &= bool(got.ok) and same
    return ok


def time_shape(m: int, n: int, k: int) -> dict:
    launches = {"rung 10": prepare("10_chip", m, n, k)}
    launches.update({name: launch(m, n, k, name) for name in BUILDS})
    row = bench_launches(launches)
    row["plans"] = {name: plan(m, n, k, launches[name].grid[0] // launches[name].kernel.consts["CLUSTER"],
                               config_for(m, BUILDS[name])) for name in BUILDS}
    print(f"{m}x{n}x{k}: " + "  ".join(f"{x} {row[x]['tflops']:.1f} ({row[x]['ratio']:.3f})" for x in launches)
          + f"  cuBLAS {row['cublas_best']['tflops']:.1f}; stream-K plan {row['plans']['stream-K']}", flush=True)
    return row


def profiles(sizes=(4096, 8192)) -> dict:
    from helpers.profile import collect
    out = {}
    for n in sizes:
        for name in ("whole tiles", "stream-K", "stream-K, no fix-up"):
            key = f"{name}@{n}"
            config = {"source_file": str(KERNEL), **config_for(n, BUILDS[name])}
            out[key] = {**collect(rung(BASE), n, config=config), "rung": name,
                        "source": "experiments/streamk", "run": "outside the book's run", "gpu": device().name}
            print(key, {x: out[key].get(x) for x in ("duration_us", "sm_clock_mhz", "tensor_pipe_pct")}, flush=True)
    return out


def save(part: str, value) -> None:
    record_part(RECORD, part, value)


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    what = sys.argv[1:] or ["check", "time", "profile"]
    if "check" in what and not run_checks(CHECKS[:3] if "small" in what else CHECKS):
        sys.exit("a stream-K build computed a wrong C, or a different C from the same inputs")
    if "time" in what:
        save("time", [time_shape(*s) for s in SHAPES])
    if "profile" in what:
        save("profile", profiles())
