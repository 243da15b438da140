"""Ping-pong consumers (issue "ahead"): chapter 10's kernel with PINGPONG = 1 against the same kernel cooperative, an
experiment outside the book's run. It records nothing in the run's results; results/pingpong.json keeps its output.

    python ci/pingpong.py check     correctness at small and ragged shapes (`check small`: the three smallest, which
                                    ci/gpu.sh's pingpong step runs under compute-sanitizer)
    python ci/pingpong.py time      every shape: the variants below and cuBLAS, all in the same interleaved rounds
    python ci/pingpong.py trace     clock64 stamps of CTA 0's consumers, one launch per variant, at 8192 x 8192 x 1024
    python ci/pingpong.py profile   Nsight Compute on each variant at N = 8192 (helpers.profile.collect)
    python ci/pingpong.py control   the five-stage ping-pong with GROUP_M = 16, timed at three shapes and profiled
    python ci/pingpong.py square    the 128 x 128 ping-pong (STACK, below): checked, timed at every shape, traced
    python ci/pingpong.py single    one consumer warpgroup on 64 x 256 tiles (SINGLE), timed at 3 shapes and traced
    python ci/pingpong.py issue     one wgmma group in flight per consumer, or two (ISSUE), timed at 3 shapes, traced
    `check small tile128`, `check small single` and `check small issue` check only those builds; `check` alone checks
    the PINGPONG builds. `small`: the three smallest shapes (a CTA gets one tile); `mid`: two shapes where a CTA gets
    several, so the turns act. ci/gpu.sh runs both under compute-sanitizer.

The variants, all chapter 10's file (helpers.figures.ch10.PINGPONG_VARIANTS, which also reads the record back):
- "cooperative": 10_stmatrix as built (both consumers on one 128 x 256 tile, 2 x 1 clusters, four stages);
- "rung 10": 10_beyond_cublas as launched (its tile per shape, clusters of one where no CTA takes a second tile);
- "ping-pong": 10_stmatrix with PINGPONG = 1 (each consumer on its own 64 x 256 tile; 40 KiB stages, so the budget
  holds four beside two C buffers per consumer);
- "ping-pong, 5 stages": the same with one C buffer per consumer, which frees room for a fifth stage.
"""
import os
import sys

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/pingpong_scratch.json")  # nothing here belongs to the book's run

from helpers import check, device  # noqa: E402
from helpers.compiler import apply_config  # noqa: E402
from helpers.figures.ch10 import PINGPONG_CONTROL as CONTROL, PINGPONG_RECORD as RECORD  # noqa: E402
from helpers.figures.ch10 import PINGPONG_VARIANTS, pingpong_source  # noqa: E402
from helpers.kernel import ShapeError, kernel  # noqa: E402
from helpers.launch import prepare, validate  # noqa: E402
from helpers.registry import rung  # noqa: E402
from helpers.results import record_part  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

SQUARE = (1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
OTHER = ((8192, 8192, 1024), (4096, 16384, 4096), (2048, 8192, 8192), (12288, 12288, 4096))
# Shapes that reach every path: one tile per CTA, odd and even tile counts per CTA (the last tile's consumer has no
# one to hand the turn to), k tiles fewer than stages, one k tile, and a cluster tile of 128 rows.
CHECKS = ((256, 256, 256), (384, 512, 512), (640, 768, 128), (2048, 2048, 256), (4096, 2048, 128), (1024, 1024, 64))


# The lead chapter 10 names: a ping-pong consumer on a 128 x 128 tile (two m64n128 wgmmas stacked along M per k step,
# the same 128 accumulators a thread), 32 KiB a stage, six stages. Chapter 10's file has no switch for stacking: in
# it, that generalization changed the SASS of every build the book's run recorded. So this experiment patches the
# source instead, as ci/bf16_stores.py does; test_claims checks that every anchor below is still there.
STACK = (
    ("constexpr int WGMMA_N = 256;", "constexpr int M_WGMMAS = 1;\nconstexpr int WGMMA_N = 256;\n"
     "constexpr int CONSUMER_ROWS = 64 * M_WGMMAS;"),
    ("constexpr int BM = PINGPONG ? 64 : 64 * CONSUMERS;", "constexpr int BM = PINGPONG ? CONSUMER_ROWS : "
     "CONSUMER_ROWS * CONSUMERS;"),
    ("float acc[WGMMA_N / 2];", "float acc[M_WGMMAS][WGMMA_N / 2];"),
    ("(PINGPONG ? 0 : c * 64 * 128)", "(PINGPONG ? 0 : c * CONSUMER_ROWS * 128)"),
    ("wgmma_m64nNk16_bf16<WGMMA_N>(acc, wgmma_desc(sA + kk * 32), wgmma_desc(sB + kk * 32),\n"
     "                                                 kt + kk > 0);",
     "for (int h = 0; h < M_WGMMAS; ++h)\n"
     "                        wgmma_m64nNk16_bf16<WGMMA_N>(acc[h], wgmma_desc(sA + h * 64 * 128 + kk * 32),\n"
     "                                                     wgmma_desc(sB + kk * 32), kt + kk > 0);"),
    ("(PINGPONG ? 0 : c * 64);", "(PINGPONG ? 0 : c * CONSUMER_ROWS);"),
    ("store_accumulators<WGMMA_N>(C + (size_t)(row + 16 * warp) * N + col0, N, acc, lane);",  # fp32 C (dropped)
     "for (int h = 0; h < M_WGMMAS; ++h) store_accumulators<WGMMA_N>(C + (size_t)(row + 64 * h + 16 * warp) "
     "* N + col0, N, acc[h], lane);"),
    ("store_accumulators_paired<WGMMA_N>(C + (size_t)(row + 16 * warp) * N + col0, N, acc, lane);",
     "for (int h = 0; h < M_WGMMAS; ++h) store_accumulators_paired<WGMMA_N>(C + (size_t)(row + 64 * h + 16 * warp) "
     "* N + col0, N, acc[h], lane);"),
    ("for (int q = 0; q < BN / C_CHUNK; ++q) {", "for (int q = 0; q < M_WGMMAS * BN / C_CHUNK; ++q) {\n"
     "                    const int h = q / (BN / C_CHUNK), cq = q % (BN / C_CHUNK);"),
    ("for (int i = q * 32; i < q * 32 + 32; i += 2) {", "for (int i = cq * 32; i < cq * 32 + 32; i += 2) {"),
    ("__floats2bfloat162_rn(acc[i], acc[i + 1]);", "__floats2bfloat162_rn(acc[h][i], acc[h][i + 1]);"),
    ("stmatrix_accumulators<C_CHUNK>(buf, acc, q * C_CHUNK / 2, warp, lane);",
     "stmatrix_accumulators<C_CHUNK>(buf, acc[h], cq * C_CHUNK / 2, warp, lane);"),
    ("tma_store_2d(&tmC, col0 + q * C_CHUNK, row, smem_addr(buf));",
     "tma_store_2d(&tmC, col0 + cq * C_CHUNK, row + 64 * h, smem_addr(buf));"),
)
SQUARE_TILE = {"ping-pong, 128 x 128": {"PINGPONG": 1, "M_WGMMAS": 2, "WGMMA_N": 128, "BN": 128}}
# A control for what the ping-pong builds share, one warpgroup issuing wgmma at a time: the cooperative kernel with a
# single consumer on a 64 x 256 tile (CONSUMERS = 1), no turns and no ping-pong.
SINGLE = {"one consumer, 64 x 256": {"CONSUMERS": 1}}
# Why one issuing warpgroup stops at 85% of the pipe: a consumer waits, each k tile, until the group before is done
# (wait_group<1>). "two groups": wait_group<2> keeps two k tiles' wgmma groups in flight, and a slot is released two
# k tiles later. (Issuing wgmma.fence only before a tile's first k tile was tried too: ptxas puts the fence back,
# C7519, and in the ping-pong build serializes the wgmmas, C7520, so it measures nothing.)
TWO_GROUPS = (("                wgmma_wait_group<1>();  // the previous k tile's group is done reading its slot\n"
               "                if (kt > 0) release((it - 1) % STAGES);",
               "                wgmma_wait_group<2>();  // the group two k tiles back is done reading its slot\n"
               "                if (kt > 1) release((it - 2) % STAGES);"),
              ("            wgmma_wait_group<0>();\n            release((it - 1) % STAGES);",
               "            if (k_tiles > 1) {\n                wgmma_wait_group<1>();\n"
               "                release((it - 2) % STAGES);\n            }\n"
               "            wgmma_wait_group<0>();\n            release((it - 1) % STAGES);"))
ISSUE = {"one consumer": ({"CONSUMERS": 1}, ()),
         "one consumer, two groups": ({"CONSUMERS": 1}, TWO_GROUPS),
         "cooperative, two groups": ({}, TWO_GROUPS),
         "ping-pong, 5 stages, two groups": ({"PINGPONG": 1, "C_BUFFERS": 1}, TWO_GROUPS)}


def stacked(src: str, patch=STACK) -> str:
    for old, new in patch:
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    return src


def source_of(name: str) -> str | None:
    """The source of a build this script names (built on helpers.figures.ch10.pingpong_source, PINGPONG_PATCH applied
    to chapter 10's file); None for "cooperative", 10_stmatrix as built."""
    if name in SQUARE_TILE:
        return apply_config(stacked(pingpong_source()), SQUARE_TILE[name])
    if name in SINGLE:
        return pingpong_source(SINGLE[name])
    if name in ISSUE:
        config, patch = ISSUE[name]
        return apply_config(stacked(pingpong_source(), patch), config)
    return pingpong_source(PINGPONG_VARIANTS[name]) if PINGPONG_VARIANTS[name] else None


def run_checks(shapes=CHECKS, names=None) -> bool:
    ok = True
    for name in names or [x for x in PINGPONG_VARIANTS if PINGPONG_VARIANTS[x]]:
        src = source_of(name)
        for shape in shapes:
            try:
                validate(rung("10_stmatrix"), *shape, src)
            except ShapeError:
                continue  # a shape this build's tile does not divide
            got = check("10_stmatrix", *shape, source=src)
            ok &= bool(got.ok)
            print(f"{name:<20} {'x'.join(map(str, shape)):<16} {got}", flush=True)
    return ok


def time_shape(m: int, n: int, k: int, configs: dict = PINGPONG_VARIANTS) -> dict:
    """The builds `configs` names (source_of; "cooperative" is 10_stmatrix as built) and rung 10 as it launches, with
    every cuBLAS contender, in the same interleaved rounds."""
    launches = {name: prepare("10_stmatrix", m, n, k, source=source_of(name)) for name in configs}
    launches["rung 10"] = prepare("10_beyond_cublas", m, n, k)
    row = bench_launches(launches)
    cells = "  ".join(f"{name} {row[name]['tflops']:.1f} ({row[name]['ratio']:.3f})" for name in launches)
    print(f"{m}x{n}x{k}: {cells}  cuBLAS {row['cublas_best']['tflops']:.1f}", flush=True)
    return row


# The instrumented build: CTA 0's consumer thread 0 stamps clock64 when a tile's k loop may start (after its turn),
# when its last wgmma group has finished, and when its epilogue has issued the tile's last store.
TRACE_TILES = 64
STAMP = ("if (blockIdx.x == 0 && t == 0 && j < {T}) pingpong_trace[(c * {T} + j) * 3 + {w}] = clock64();")


def traced(src: str) -> str:
    T = TRACE_TILES
    head = "constexpr int PINGPONG"
    loop = ("            int row0, col0;\n            tile_origin(tile, tiles_m, tiles_n, row0, col0);\n"
            "            for (int kt = 0; kt < k_tiles; ++kt, ++it) {\n                const int s = it % STAGES;\n"
            "                mbarrier_wait_parity(smem_addr(&full[s]), (it / STAGES) & 1);")
    drained = "            wgmma_wait_group<0>();\n            release((it - 1) % STAGES);"
    end = "            }\n        }\n        if constexpr (EPILOGUE > 0) {"
    for anchor in (head, loop, drained, end):
        assert src.count(anchor) == 1, anchor
    src = src.replace(head, f"__device__ unsigned long long pingpong_trace[2 * {T} * 3];\n{head}")
    src = src.replace(loop, "            " + STAMP.format(T=T, w=0) + "\n" + loop)
    src = src.replace(drained, drained + "\n            " + STAMP.format(T=T, w=1))
    return src.replace(end, "            }\n            " + STAMP.format(T=T, w=2) + end[13:])


def trace(m: int = 8192, n: int = 8192, k: int = 1024, names=PINGPONG_VARIANTS) -> dict:
    import cupy as cp
    import numpy as np
    out = {"shape": [m, n, k], "unit": "SM clock cycles", "tiles": TRACE_TILES}
    for name in names:
        lau = prepare("10_stmatrix", m, n, k, source=traced(source_of(name) or pingpong_source()))
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


def profiles(configs: dict = PINGPONG_VARIANTS, n: int = 8192) -> dict:
    """Nsight Compute on each build; the profiled process reads the patched source from a scratch file."""
    import tempfile
    from helpers.profile import collect
    out = {}
    for name, config in configs.items():
        with tempfile.NamedTemporaryFile("w", suffix=".cu", delete=False) as f:
            f.write(pingpong_source())
        out[name] = {**collect(rung("10_stmatrix"), n, config={**config, "source_file": f.name}), "rung": name,
                     "source": "ci/pingpong.py", "run": "outside the book's run", "gpu": device().name}
        os.unlink(f.name)
    return out


FOLLOW_UP_SHAPES = ((4096,) * 3, (8192,) * 3, (8192, 8192, 1024))


def follow_up(names: dict, shapes) -> dict:
    """A part of the record for a follow-up experiment: the builds `names` names, timed at `shapes` with rung 10 and
    cuBLAS, traced at 8192 x 8192 x 1024, with the constants pingpong_phases needs to read the trace."""
    consts = {x: kernel(rung("10_stmatrix"), source_of(x) or pingpong_source()).consts for x in names}
    return {"time": [time_shape(*s, names) for s in shapes], "trace": trace(names=names),
            "consts": {x: {k: consts[x][k] for k in ("BM", "BN", "BK", "STAGES", "STAGE_BYTES")} for x in names}}


def save(part: str, value) -> None:
    record_part(RECORD, part, value)


if __name__ == "__main__":
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
                         "profile": profiles({k: v for k, v in CONTROL.items() if k not in PINGPONG_VARIANTS})})
