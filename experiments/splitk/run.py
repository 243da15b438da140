"""Split-K at N = 1024: chapter 10's kernel with each tile's K range cut into SPLITS pieces run by different CTAs,
and a deterministic fix-up (splitk.cu says how), an experiment outside the book's run; its output goes to
experiments/splitk/record.json. From the repository root:

    python3 -m experiments.splitk.run check [small]   correctness, ragged K splits included (`small`: three shapes,
                                                      for compute-sanitizer)
    python3 -m experiments.splitk.run time            N = 1024: rung 10 as it launches against the split builds and
                                                      cuBLAS

Why N = 1024: rung 10 runs it on 64 CTAs of 128 x 128 tiles (clusters of one), so 68 of 132 SMs idle; it is the
furthest shape from cuBLAS. Splitting K in two gives 128 units of work for 128 SMs.
"""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/splitk_scratch.json")  # nothing here belongs to the book's run

from helpers import check, device  # noqa: E402
from helpers.kernel import ShapeError  # noqa: E402
from helpers.launch import prepare, validate  # noqa: E402
from helpers.registry import rung  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

from .build import BASE, fits, split_source, unsplit_source  # noqa: E402

RECORD = Path(__file__).with_name("record.json")


CHECKS = ((256, 256, 256), (384, 512, 192), (512, 768, 320), (1024, 1024, 1024), (2048, 1024, 448), (1024, 2048, 128))


def run_checks(shapes=CHECKS) -> bool:
    ok = True
    for splits in (2, 3, 4):
        src = split_source(splits)
        for shape in shapes:
            if not fits(*shape, splits):
                continue
            try:
                validate(rung(BASE), *shape, src)
            except ShapeError:
                continue
            got = check(BASE, *shape, source=src)
            ok &= bool(got.ok)
            print(f"SPLITS={splits} {'x'.join(map(str, shape)):<16} {got}", flush=True)
    return ok


def time_shape(m: int, n: int, k: int, splits=(2, 3, 4)) -> dict:
    launches = {"rung 10": prepare("10_chip", m, n, k),  # first: its inputs and cuBLAS serve every build
                "128 x 128, no split": prepare(BASE, m, n, k, source=unsplit_source())}
    launches.update({f"SPLITS={s}": prepare(BASE, m, n, k, source=split_source(s))
                     for s in splits if fits(m, n, k, s)})
    row = bench_launches(launches)
    print(f"{m}x{n}x{k}: " + "  ".join(f"{x} {row[x]['tflops']:.1f} ({row[x]['ratio']:.3f}, {row[x]['us']:.2f} us, "
                                       f"grid {row[x]['grid']})" for x in launches)
          + f"  cuBLAS {row['cublas_best']['tflops']:.1f}", flush=True)
    return row


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    what = sys.argv[1:] or ["check", "time"]
    # small: the two smallest shapes and one where some CTAs take a non-owner unit and then an owner unit
    if "check" in what and not run_checks((CHECKS[0], CHECKS[1], CHECKS[4]) if "small" in what else CHECKS):
        sys.exit("a split-K build computed a wrong C")
    if "time" in what:
        shapes = ((1024, 1024, 1024), (1024, 1024, 4096), (2048, 2048, 1024))
        RECORD.write_text(json.dumps({"time": [time_shape(*s) for s in shapes], "env": device().env()}, indent=1)
                          + "\n")
