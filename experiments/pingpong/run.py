"""Ping-pong consumers: chapter 10's kernel with PINGPONG = 1 against the same kernel cooperative, an experiment
outside the book's run; its output goes to experiments/pingpong/record.json. From the repository root:

    python3 -m experiments.pingpong.run check     correctness at small and ragged shapes (`check small`: the three
                                                  smallest, which run.sh runs under compute-sanitizer)
    python3 -m experiments.pingpong.run time      every shape: the variants and cuBLAS, in the same interleaved rounds
    python3 -m experiments.pingpong.run trace     clock64 stamps of CTA 0's consumers, one launch a variant, at
                                                  8192 x 8192 x 1024
    python3 -m experiments.pingpong.run profile   Nsight Compute on each variant at N = 8192 (helpers.profile.collect)
    python3 -m experiments.pingpong.run control   the five-stage ping-pong with GROUP_M = 16, timed and profiled
    python3 -m experiments.pingpong.run square    the 128 x 128 ping-pong (SQUARE_TILE): checked, timed, traced
    python3 -m experiments.pingpong.run single    one consumer warpgroup on 64 x 256 tiles (SINGLE), timed, traced
    python3 -m experiments.pingpong.run issue     one wgmma group in flight per consumer, or two (ISSUE), timed, traced
    `check small tile128`, `check small single` and `check small issue` check only those builds; `check` alone checks
    the PINGPONG builds. `small`: the three smallest shapes (a CTA gets one tile); `mid`: two shapes where a CTA gets
    several, so the turns act. run.sh runs both under compute-sanitizer.

Every build is pingpong.cu with a config (build.py), launched as 10_grouped_order; "rung 10" is 10_chip as it
launches (its tile per shape, clusters of one where no CTA takes a second tile).
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/pingpong_scratch.json")  # nothing here belongs to the book's run

from helpers import check, device  # noqa: E402
from helpers.kernel import ShapeError, kernel  # noqa: E402
from helpers.launch import prepare, validate  # noqa: E402
from helpers.registry import rung  # noqa: E402
from helpers.results import record_part  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

from .build import BASE, CONTROL, ISSUE, SINGLE, SQUARE_TILE, TRACE_TILES, VARIANTS, source_of  # noqa: E402

RECORD = Path(__file__).with_name("record.json")
SQUARE = (1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
OTHER = ((8192, 8192, 1024), (4096, 16384, 4096), (2048, 8192, 8192), (12288, 12288, 4096))
# Shapes that reach every path: one tile per CTA, odd and even tile counts per CTA (the last tile's consumer has no
# one to hand the turn to), k tiles fewer than stages, one k tile, and a cluster tile of 128 rows.
CHECKS = ((256, 256, 256), (384, 512, 512), (640, 768, 128), (2048, 2048, 256), (4096, 2048, 128), (1024, 1024, 64))


def run_checks(shapes=CHECKS, names=None) -> bool:
    ok = True
    for name in names or [x for x in VARIANTS if VARIANTS[x]]:
        src = source_of(name)
        for shape in shapes:
            try:
                validate(rung(BASE), *shape, src)
            except ShapeError:
                continue  # a shape this build's tile does not divide
            got = check(BASE, *shape, source=src)
            ok &= bool(got.ok)
            print(f"{name:<20} {'x'.join(map(str, shape)):<16} {got}", flush=True)
    return ok


def time_shape(m: int, n: int, k: int, configs: dict = VARIANTS) -> dict:
    """The builds `configs` names and rung 10 as it launches, with every cuBLAS contender, in the same interleaved
    rounds."""
    launches = {name: prepare(BASE, m, n, k, source=source_of(name)) for name in configs}
    launches["rung 10"] = prepare("10_chip", m, n, k)
    row = bench_launches(launches)
    cells = "  ".join(f"{name} {row[name]['tflops']:.1f} ({row[name]['ratio']:.3f})" for name in launches)
    print(f"{m}x{n}x{k}: {cells}  cuBLAS {row['cublas_best']['tflops']:.1f}", flush=True)
    return row


def trace(m: int = 8192, n: int = 8192, k: int = 1024, names=VARIANTS) -> dict:
    """CTA 0's consumer thread 0 stamps clock64 (TRACE = 1) when a tile's k loop may start (after its turn), when its
    last wgmma group has finished, and when its epilogue has issued the tile's last store."""
    import cupy as cp
    import numpy as np
    out = {"shape": [m, n, k], "unit": "SM clock cycles", "tiles": TRACE_TILES}
    for name in names:
        lau = prepare(BASE, m, n, k, source=source_of(name, traced=True))
        stamps = cp.ndarray((2 * TRACE_TILES * 3,), cp.uint64, lau.kernel.module().get_global("pingpong_trace"))
        stamps.fill(0)
        a, b = lau.inputs()
        lau(a, b, lau.output())
        cp.cuda.runtime.deviceSynchronize()
        s = stamps.get().reshape(2, TRACE_TILES, 3).astype(np.int64)
        s[s > 0] -= s[s > 0].min()
        out[name] = s.tolist()
        print(name, "first tiles per consumer:", s[0, :3].tolist(), s[1, :3].tolist(), flush=True)
    return out


def profiles(configs: dict = VARIANTS, n: int = 8192) -> dict:
    """Nsight Compute on each build; the profiled process reads the build's source from a scratch file."""
    import tempfile
    from helpers.profile import collect
    out = {}
    for name, config in configs.items():
        with tempfile.NamedTemporaryFile("w", suffix=".cu", delete=False) as f:
            f.write(source_of(name))
        out[name] = {**collect(rung(BASE), n, config={"source_file": f.name}), "rung": name,
                     "source": "experiments/pingpong", "run": "outside the book's run", "gpu": device().name}
        os.unlink(f.name)
    return out


FOLLOW_UP_SHAPES = ((4096,) * 3, (8192,) * 3, (8192, 8192, 1024))


def follow_up(names: dict, shapes) -> dict:
    """A part of the record for a follow-up experiment: the builds `names` names, timed at `shapes` with rung 10 and
    cuBLAS, traced at 8192 x 8192 x 1024, with the constants pingpong_phases needs to read the trace."""
    consts = {x: kernel(rung(BASE), source_of(x)).consts for x in names}
    return {"time": [time_shape(*s, names) for s in shapes], "trace": trace(names=names),
            "consts": {x: {k: consts[x][k] for k in ("BM", "BN", "BK", "STAGES", "STAGE_BYTES")} for x in names}}


def save(part: str, value) -> None:
    record_part(RECORD, part, value)


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    what = sys.argv[1:] or ["check", "time", "trace", "profile"]
    if "check" in what:  # `check [small | mid] [tile128 | single | issue]`: checks only (default: ping-pong's builds)
        names = (list(SQUARE_TILE) if "tile128" in what else list(SINGLE) if "single" in what
                 else list(ISSUE) if "issue" in what else None)
        shapes = CHECKS[:3] if "small" in what else CHECKS[3:5] if "mid" in what else CHECKS
        if not run_checks(shapes, names):
            sys.exit("a ping-pong variant computed a wrong C")
        what = [x for x in what if x not in ("square", "single", "issue")]
    if "time" in what:
        save("time", [time_shape(s, s, s) for s in SQUARE] + [time_shape(*s) for s in OTHER])
    if "trace" in what:
        save("trace", trace())
    if "profile" in what:
        save("profile", profiles())
    if "square" in what:  # the lead: 128 x 128 per consumer, beside the cooperative kernel and the 5-stage build
        if not run_checks(CHECKS, list(SQUARE_TILE)):
            sys.exit("the 128 x 128 ping-pong computed a wrong C")
        save("square", follow_up({"cooperative": {}, "ping-pong, 5 stages": {}, **SQUARE_TILE},
                                 [(s, s, s) for s in SQUARE] + list(OTHER)))
    if "single" in what:  # one consumer warpgroup, timed beside the cooperative kernel and the 5-stage ping-pong
        save("single", follow_up({"cooperative": {}, "ping-pong, 5 stages": {}, **SINGLE}, FOLLOW_UP_SHAPES))
    if "issue" in what:  # how a consumer issues: one wgmma group in flight, or two
        save("issue", follow_up({"cooperative": {}, **ISSUE}, FOLLOW_UP_SHAPES))
    if "control" in what:  # the same patch of C per group: GROUP_M counts cluster tile rows, half as tall here
        save("control", {"time": [time_shape(*s, configs=CONTROL) for s in FOLLOW_UP_SHAPES],
                         "profile": profiles({k: v for k, v in CONTROL.items() if k not in VARIANTS})})
