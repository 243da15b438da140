"""Split-K at N = 1024 (issue "ahead"): chapter 10's kernel with each tile's K range cut into SPLITS pieces run by
different CTAs, and a deterministic fix-up, an experiment outside the book's run. results/splitk.json keeps its output.

    python ci/splitk.py check [small]   correctness, ragged K splits included (`small`: three shapes, for
                                        compute-sanitizer)
    python ci/splitk.py time            N = 1024: rung 10 as it launches against the split builds and cuBLAS

Why N = 1024: rung 10 runs it on 64 CTAs of 128 x 128 tiles (clusters of one), so 68 of 132 SMs idle; it is the
furthest shape from cuBLAS (0.748 in the book's run). Splitting K in two gives 128 units of work for 128 SMs.

The patch (applied on top of helpers.figures.ch10.PINGPONG_PATCH with PINGPONG = 0, as ci/pingpong.py's builds are;
a source patch, so the builds the book's run recorded keep their SASS):
- Work units: unit u < (SPLITS - 1) x tiles computes split 1 + u / tiles of tile u % tiles; the last `tiles` units
  compute split 0, the tile's owner. Every CTA walks its units in order, so any owner waits only for units that
  every CTA reaches before its own owners, and those never wait: no deadlock while the whole grid is resident (it is
  persistent, never more CTAs than fit).
- Split s covers k tiles [s x k_tiles / SPLITS, (s + 1) x k_tiles / SPLITS): ragged when SPLITS does not divide.
- A split other than 0 stores its fp32 partial sums in a workspace, lane-major (each store instruction writes 512
  contiguous bytes), then bumps its consumer's flag (release: bar.sync, then thread 0's fence and atomic add).
- The owner waits for its flag to count SPLITS - 1 (bounded: it traps after 4 s), resets it for the next launch,
  adds the partials in split order (the same sum every run), and writes C as the kernel always does.
The workspace and flags are __device__ arrays of the module (zero at load), sized for the shapes this script runs.
"""
import json
import os
import sys

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/splitk_scratch.json")  # nothing here belongs to the book's run

from helpers import check, device  # noqa: E402
from helpers.compiler import apply_config  # noqa: E402
from helpers.figures.ch10 import pingpong_source  # noqa: E402
from helpers.kernel import ShapeError  # noqa: E402
from helpers.launch import prepare, validate  # noqa: E402
from helpers.playground import source  # noqa: E402
from helpers.registry import ROOT, rung  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

RECORD = ROOT / "results" / "splitk.json"
WS_FLOATS = 1 << 22          # 16 MiB of fp32 partials: (SPLITS - 1) x tiles x BM x BN must fit
FLAGS = 1 << 14
TILE = {"BN": 128, "WGMMA_N": 128, "CLUSTER": 1}   # rung 10's launch at N = 1024: 128 x 128, clusters of one

PATCH = (
    ("constexpr int PINGPONG = 0;",
     "constexpr int SPLITS = 1;                    // pieces each tile's K range is cut into (ci/splitk.py)\n"
     "constexpr int PINGPONG = 0;"),
    # the producer's walk
    ("            for (int tile = first_tile; tile < tiles; tile += tile_step) {\n"
     "                int row0, col0;\n"
     "                tile_origin(tile, tiles_m, tiles_n, row0, col0);\n"
     "                for (int kt = 0; kt < k_tiles; ++kt, ++it) {",
     "            for (int unit = first_tile; unit < tiles * SPLITS; unit += tile_step) {\n"
     "                const int split = unit < (SPLITS - 1) * tiles ? 1 + unit / tiles : 0, tile = unit % tiles;\n"
     "                int row0, col0;\n"
     "                tile_origin(tile, tiles_m, tiles_n, row0, col0);\n"
     "                for (int kt = split * k_tiles / SPLITS; kt < (split + 1) * k_tiles / SPLITS; ++kt, ++it) {"),
    # the consumers' walk
    ("        for (int tile = first_tile, j = 0; tile < tiles; tile += tile_step, ++j) {",
     "        for (int unit = first_tile, j = 0; unit < tiles * SPLITS; unit += tile_step, ++j) {\n"
     "            const int split = unit < (SPLITS - 1) * tiles ? 1 + unit / tiles : 0, tile = unit % tiles;\n"
     "            const int k0 = split * k_tiles / SPLITS, k1 = (split + 1) * k_tiles / SPLITS;"),
    ("            for (int kt = 0; kt < k_tiles; ++kt, ++it) {\n                const int s = it % STAGES;\n",
     "            for (int kt = k0; kt < k1; ++kt, ++it) {\n                const int s = it % STAGES;\n"),
    ("                                                 kt + kk > 0);",
     "                                                 kt + kk > k0);"),
    ("                if (kt > 0) release((it - 1) % STAGES);",
     "                if (kt > k0) release((it - 1) % STAGES);"),
    # the fix-up, before the epilogue
    ("            release((it - 1) % STAGES);  // the producer may refill it while we write C\n",
     "            release((it - 1) % STAGES);  // the producer may refill it while we write C\n"
     "            if constexpr (SPLITS > 1) {\n"
     "                const int slot = (tile * CLUSTER + rank) * CONSUMERS + c;  // this consumer's 64 x BN of C\n"
     "                unsigned* flag = &splitk_flags[slot];\n"
     "                if (split > 0) {\n"
     "                    float* ws = splitk_ws + ((size_t)(split - 1) * tiles * CLUSTER * CONSUMERS + slot)\n"
     "                                            * 64 * BN;\n"
     "#pragma unroll\n"
     "                    for (int i = 0; i < WGMMA_N / 2; ++i) ws[i * 128 + t] = acc[i];\n"
     "                    bar_sync(1 + c, 128);\n"
     "                    if (t == 0) {\n"
     "                        __threadfence();\n"
     "                        atomicAdd(flag, 1u);\n"
     "                    }\n"
     "                    continue;\n"
     "                }\n"
     "                if (t == 0) {\n"
     "                    const unsigned long long start = globaltimer_ns();\n"
     "                    while (atomicAdd(flag, 0u) < SPLITS - 1)\n"
     "                        if (globaltimer_ns() - start > MBARRIER_TIMEOUT_NS) __trap();\n"
     "                    __threadfence();\n"
     "                    *flag = 0;  // ready for the next launch: every split of this launch has arrived\n"
     "                }\n"
     "                bar_sync(1 + c, 128);\n"
     "                for (int p = 1; p < SPLITS; ++p) {  // in split order: the same sum every run\n"
     "                    const float* ws = splitk_ws + ((size_t)(p - 1) * tiles * CLUSTER * CONSUMERS + slot)\n"
     "                                                  * 64 * BN;\n"
     "#pragma unroll\n"
     "                    for (int i = 0; i < WGMMA_N / 2; ++i) acc[i] += __ldcg(ws + i * 128 + t);\n"
     "                }\n"
     "            }\n"),
)
ARRAYS = (f"__device__ float splitk_ws[{WS_FLOATS}];\n__device__ unsigned splitk_flags[{FLAGS}];\n")


def split_source(splits: int) -> str:
    src = pingpong_source()  # chapter 10's file with PINGPONG_PATCH (PINGPONG = 0): the loop counts its tiles in j
    for old, new in PATCH:
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    head = "constexpr int SPLITS"
    src = src.replace(head, ARRAYS + head, 1)
    return apply_config(src, {**TILE, "SPLITS": splits})


def fits(m: int, n: int, k: int, splits: int) -> bool:
    tiles = (m // 128) * (n // 128)
    return k // 64 >= splits and (splits - 1) * tiles * 128 * 128 <= WS_FLOATS and tiles * 2 <= FLAGS


CHECKS = ((256, 256, 256), (384, 512, 192), (512, 768, 320), (1024, 1024, 1024), (2048, 1024, 448), (1024, 2048, 128))


def run_checks(shapes=CHECKS) -> bool:
    ok = True
    for splits in (2, 3, 4):
        src = split_source(splits)
        for shape in shapes:
            if not fits(*shape, splits):
                continue
            try:
                validate(rung("10_stmatrix"), *shape, src)
            except ShapeError:
                continue
            got = check("10_stmatrix", *shape, source=src)
            ok &= bool(got.ok)
            print(f"SPLITS={splits} {'x'.join(map(str, shape)):<16} {got}", flush=True)
    return ok


def time_shape(m: int, n: int, k: int, splits=(2, 3, 4)) -> dict:
    launches = {"rung 10": prepare("10_beyond_cublas", m, n, k),  # first: its inputs and cuBLAS serve every build
                "128 x 128, no split": prepare("10_stmatrix", m, n, k, source=apply_config(source("10_stmatrix"),
                                                                                            TILE))}
    launches.update({f"SPLITS={s}": prepare("10_stmatrix", m, n, k, source=split_source(s))
                     for s in splits if fits(m, n, k, s)})
    row = bench_launches(launches)
    print(f"{m}x{n}x{k}: " + "  ".join(f"{x} {row[x]['tflops']:.1f} ({row[x]['ratio']:.3f}, {row[x]['us']:.2f} us, "
                                       f"grid {row[x]['grid']})" for x in launches)
          + f"  cuBLAS {row['cublas_best']['tflops']:.1f}", flush=True)
    return row


if __name__ == "__main__":
    what = sys.argv[1:] or ["check", "time"]
    # small: the two smallest shapes and one where some CTAs take a non-owner unit and then an owner unit
    if "check" in what and not run_checks((CHECKS[0], CHECKS[1], CHECKS[4]) if "small" in what else CHECKS):
        sys.exit("a split-K build computed a wrong C")
    if "time" in what:
        shapes = ((1024, 1024, 1024), (1024, 1024, 4096), (2048, 2048, 1024))
        RECORD.write_text(json.dumps({"time": [time_shape(*s) for s in shapes], "env": device().env()}, indent=1)
                          + "\n")
