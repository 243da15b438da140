"""Cluster shapes (issue "ahead", item 3): chapter 10's kernel in clusters of 2 x 1 (as committed: two CTAs along M
share B), 1 x 2 (two CTAs along N share A) and 2 x 2 (four CTAs: each A tile shared along its row, each B tile along
its column), an experiment outside the book's run; results/clusters.json keeps its output.

    python ci/clusters.py check [small]   correctness of the 1 x 2 and 2 x 2 builds (`small`: the shapes that
                                          ci/gpu.sh runs under compute-sanitizer)
    python ci/clusters.py time            every shape: 1 x 1, 2 x 1, 1 x 2, 2 x 2 and cuBLAS in the same rounds
    python ci/clusters.py profile         Nsight Compute on the four at N = 8192

Every build is 10_stmatrix (rung 10 with its 128 x 256 tile at every shape, four stages, grouped order, TMA-store
epilogue) with a patch that splits CLUSTER into CLUSTER_M x CLUSTER_N. The grid is what it always is: as many clusters
as cuOccupancyMaxActiveClusters says fit (helpers.gpu.max_active_clusters), each walking the list of cluster tiles.
What the patch changes, for a CTA of rank r (its row rm = r % CLUSTER_M, its column rn = r / CLUSTER_M):
- its tile is row rm, column rn of the cluster tile (CLUSTER_M x BM rows, CLUSTER_N x BN columns);
- A: the CLUSTER_N CTAs of a row need the same A tile; each fetches A_BOX_ROWS = BM / CLUSTER_N of its rows and
  multicasts them to the row; B as before, along a column (B_BOX_ROWS = BN / CLUSTER_M rows each);
- every consumer of the cluster still frees a slot in every CTA (the empty barrier counts CONSUMERS x CLUSTER):
  a CTA's slot is written by its row and its column, so its producer waits for all of them, and for 2 x 2 also for
  the diagonal CTA, which writes nothing into it (one barrier for the cluster, simple, a little stricter than needed).
The source is patched, not the file, so the builds the book's run recorded keep their SASS.
"""
import os
import sys

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/clusters_scratch.json")  # nothing here belongs to the book's run

from helpers import check, device  # noqa: E402
from helpers.compiler import apply_config  # noqa: E402
from helpers.launch import prepare  # noqa: E402
from helpers.registry import ROOT, rung  # noqa: E402
from helpers.results import record_part  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

RECORD = ROOT / "results" / "clusters.json"
SHAPES = ((2048,) * 3, (3072,) * 3, (4096,) * 3, (6144,) * 3, (8192,) * 3, (12288,) * 3, (8192, 8192, 1024),
          (4096, 16384, 4096))
# 512 x 512 divides every cluster tile (256 x 512 at most); several tiles a cluster at 2048 x 2048 and 4096 x 2048
CHECKS = ((512, 512, 256), (1024, 512, 192), (512, 1024, 64), (2048, 2048, 256), (4096, 2048, 128))
SHAPES_OF = {"1 x 1": (1, 1), "2 x 1": (2, 1), "1 x 2": (1, 2), "2 x 2": (2, 2)}

PATCH = (
    ("constexpr int CLUSTER = 2;                   // CTAs per cluster along M; they share the B tile\n",
     "constexpr int CLUSTER_M = 2;                 // CTAs per cluster along M; they share the B tile\n"
     "constexpr int CLUSTER_N = 1;                 // CTAs per cluster along N; they share the A tile\n"
     "constexpr int CLUSTER = CLUSTER_M * CLUSTER_N;\n"),
    ("constexpr int CLUSTER_BM = BM * CLUSTER;", "constexpr int CLUSTER_BM = BM * CLUSTER_M;"),
    ("constexpr int B_BOX_ROWS = BN / CLUSTER;     // rows of Bt each CTA of the cluster fetches and multicasts\n",
     "constexpr int B_BOX_ROWS = BN / CLUSTER_M;   // rows of Bt each CTA of a column fetches and multicasts\n"
     "constexpr int A_BOX_ROWS = BM / CLUSTER_N;   // rows of A each CTA of a row fetches and multicasts\n"),
    ('static_assert(CLUSTER == 1 || CLUSTER == 2, "the multicast mask below is written for pairs");',
     'static_assert(CLUSTER_M <= 2 && CLUSTER_N <= 2, "the multicast masks below are written for pairs");'),
    ("    col0 = tn * BN;\n", "    col0 = tn * BN * CLUSTER_N;  // the cluster tile's first column\n"),
    ("const int tiles_m = M / CLUSTER_BM, tiles_n = N / BN,",
     "const int tiles_m = M / CLUSTER_BM, tiles_n = N / (BN * CLUSTER_N),"),
    ("    const unsigned rank = CLUSTER > 1 ? cluster_ctarank() : 0;\n",
     "    const unsigned rank = CLUSTER > 1 ? cluster_ctarank() : 0;\n"
     "    const unsigned rm = rank % CLUSTER_M, rn = rank / CLUSTER_M;  // this CTA's row and column in the cluster\n"
     "    const unsigned row_mask = ((1u << CLUSTER) - 1) / ((1u << CLUSTER_M) - 1) << rm;  // CTAs sharing A\n"
     "    const unsigned col_mask = ((1u << CLUSTER_M) - 1) << (rn * CLUSTER_M);            // CTAs sharing B\n"),
    # the producer: this CTA's column, then A multicast along the row and B along the column
    ("                tile_origin(tile, tiles_m, tiles_n, row0, col0);\n"
     "                for (int kt = 0; kt < k_tiles; ++kt, ++it) {",
     "                tile_origin(tile, tiles_m, tiles_n, row0, col0);\n"
     "                col0 += rn * BN;\n"
     "                for (int kt = 0; kt < k_tiles; ++kt, ++it) {"),
    ("                    tma_load_2d(sA, &tmA, kt * BK, row0 + rank * BM, bar);\n"
     "                    if constexpr (CLUSTER > 1) {\n"
     "                        tma_load_2d_multicast(sB + rank * B_BOX_ROWS * 128, &tmB, kt * BK, col0 + rank * B_BOX_ROWS,\n"
     "                                              bar, (1 << CLUSTER) - 1);\n",
     "                    if constexpr (CLUSTER_N > 1) {\n"
     "                        tma_load_2d_multicast(sA + rn * A_BOX_ROWS * 128, &tmA, kt * BK,\n"
     "                                              row0 + rm * BM + rn * A_BOX_ROWS, bar, row_mask);\n"
     "                    } else {\n"
     "                        tma_load_2d(sA, &tmA, kt * BK, row0 + rm * BM, bar);\n"
     "                    }\n"
     "                    if constexpr (CLUSTER_M > 1) {\n"
     "                        tma_load_2d_multicast(sB + rm * B_BOX_ROWS * 128, &tmB, kt * BK, col0 + rm * B_BOX_ROWS,\n"
     "                                              bar, col_mask);\n"),
    # the consumers: this CTA's tile of C
    ("            tile_origin(tile, tiles_m, tiles_n, row0, col0);\n"
     "            for (int kt = 0; kt < k_tiles; ++kt, ++it) {",
     "            tile_origin(tile, tiles_m, tiles_n, row0, col0);\n"
     "            col0 += rn * BN;\n"
     "            for (int kt = 0; kt < k_tiles; ++kt, ++it) {"),
    ("            const int row = row0 + rank * BM + c * 64;", "            const int row = row0 + rm * BM + c * 64;"),
)


def cluster_source(cm: int, cn: int) -> str:
    src = rung("10_stmatrix").path.read_text()
    for old, new in PATCH:
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    return apply_config(src, {"CLUSTER_M": cm, "CLUSTER_N": cn})


def run_checks(shapes=CHECKS) -> bool:
    ok = True
    for name in ("1 x 2", "2 x 2", "2 x 1"):
        for shape in shapes:
            got = check("10_stmatrix", *shape, source=cluster_source(*SHAPES_OF[name]))
            print(f"{name}: {got}", flush=True)
            ok &= bool(got.ok)
    return ok


def time_shape(m: int, n: int, k: int) -> dict:
    launches = {name: prepare("10_stmatrix", m, n, k, source=cluster_source(*cs)) for name, cs in SHAPES_OF.items()}
    launches["rung 10"] = prepare("10_beyond_cublas", m, n, k)
    row = bench_launches(launches)
    print(f"{m}x{n}x{k}: " + "  ".join(f"{x} {row[x]['tflops']:.1f} ({row[x]['ratio']:.3f}, grid {row[x]['grid']})"
                                       for x in launches) + f"  cuBLAS {row['cublas_best']['tflops']:.1f}", flush=True)
    return row


def profiles(n: int = 8192) -> dict:
    import tempfile
    from helpers.profile import collect
    out = {}
    for name, (cm, cn) in SHAPES_OF.items():
        with tempfile.NamedTemporaryFile("w", suffix=".cu", delete=False) as f:
            f.write(cluster_source(cm, cn))
        out[name] = {**collect(rung("10_stmatrix"), n, config={"source_file": f.name}), "rung": name,
                     "source": "ci/clusters.py", "run": "outside the book's run", "gpu": device().name}
        os.unlink(f.name)
        e = out[name]
        print(name, {k: e.get(k) for k in ("duration_us", "sm_clock_mhz", "tensor_pipe_pct", "l2_tbps", "dram_bytes")},
              flush=True)
    return out


def save(part: str, value) -> None:
    record_part(RECORD, part, value)


if __name__ == "__main__":
    what = sys.argv[1:] or ["check", "time", "profile"]
    if "check" in what and not run_checks(CHECKS[:3] if "small" in what else CHECKS):
        sys.exit("a cluster build computed a wrong C")
    if "time" in what:
        save("time", [time_shape(*s) for s in SHAPES])
    if "profile" in what:
        save("profile", profiles())
