"""Cluster shapes: chapter 10's kernel in clusters of 2 x 1 (as chapter 10 has it: two CTAs along M share B), 1 x 2
(two CTAs along N share A), 2 x 2 and 1 x 1 (clusters.cu says how), an experiment outside the book's run; its output
goes to experiments/clusters/record.json. From the repository root:

    python3 -m experiments.clusters.run check [small]   correctness of the 1 x 2, 2 x 2 and 2 x 1 builds (`small`:
                                                        the shapes run.sh runs under compute-sanitizer)
    python3 -m experiments.clusters.run time            every shape: the four builds, rung 10 and cuBLAS in the same
                                                        rounds
    python3 -m experiments.clusters.run profile         Nsight Compute on the four at N = 8192

The grid is what it always is: as many clusters as cuOccupancyMaxActiveClusters says fit
(helpers.gpu.max_active_clusters), each walking the list of cluster tiles.
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/clusters_scratch.json")  # nothing here belongs to the book's run

from helpers import check, device  # noqa: E402
from helpers.launch import prepare  # noqa: E402
from helpers.registry import rung  # noqa: E402
from helpers.results import record_part  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

from .build import BASE, SHAPES_OF, cluster_source  # noqa: E402

RECORD = Path(__file__).with_name("record.json")
SHAPES = ((2048,) * 3, (3072,) * 3, (4096,) * 3, (6144,) * 3, (8192,) * 3, (12288,) * 3, (8192, 8192, 1024),
          (4096, 16384, 4096))
# 512 x 512 divides every cluster tile (256 x 512 at most); several tiles a cluster at 2048 x 2048 and 4096 x 2048
CHECKS = ((512, 512, 256), (1024, 512, 192), (512, 1024, 64), (2048, 2048, 256), (4096, 2048, 128))

def run_checks(shapes=CHECKS) -> bool:
    ok = True
    for name in ("1 x 2", "2 x 2", "2 x 1"):
        for shape in shapes:
            got = check(BASE, *shape, source=cluster_source(*SHAPES_OF[name]))
            print(f"{name}: {got}", flush=True)
            ok &= bool(got.ok)
    return ok


def time_shape(m: int, n: int, k: int) -> dict:
    launches = {name: prepare(BASE, m, n, k, source=cluster_source(*cs)) for name, cs in SHAPES_OF.items()}
    launches["rung 10"] = prepare("10_chip", m, n, k)
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
        out[name] = {**collect(rung(BASE), n, config={"source_file": f.name}), "rung": name,
                     "source": "experiments/clusters", "run": "outside the book's run", "gpu": device().name}
        os.unlink(f.name)
        e = out[name]
        print(name, {k: e.get(k) for k in ("duration_us", "sm_clock_mhz", "tensor_pipe_pct", "l2_tbps", "dram_bytes")},
              flush=True)
    return out


def save(part: str, value) -> None:
    record_part(RECORD, part, value)


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    what = sys.argv[1:] or ["check", "time", "profile"]
    if "check" in what and not run_checks(CHECKS[:3] if "small" in what else CHECKS):
        sys.exit("a cluster build computed a wrong C")
    if "time" in what:
        save("time", [time_shape(*s) for s in SHAPES])
    if "profile" in what:
        save("profile", profiles())
