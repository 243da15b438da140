"""FP8 with promoted accumulation (issue "ahead", item 5), an experiment outside the book's run;
its output goes to experiments/fp8_promoted/record.json.

    python3 -m experiments.fp8_promoted.run check
        the builds that are not rungs at shapes with odd and even k tile counts and ragged edges
    python3 -m experiments.fp8_promoted.run time
        2048 .. 8192: rung 12, 12_fp8_promoted, its summing on 128 x 128 and 128 x 192 tiles, the every-256-k
        build, two controls (rung 12 launched plainly; the promoted rung with one add a slice, whose C is wrong), and
        every cuBLASLt FP8 algorithm (promoted and fast accumulation), in the same interleaved rounds
    python3 -m experiments.fp8_promoted.run probe      the accumulator probe (helpers.fp8) on the builds and rung 10
    python3 -m experiments.fp8_promoted.run profile    Nsight Compute on the builds at N = 8192

Why these builds: 12_fp8_promoted keeps rung 12's 128 x 256 tile and sums each k tile in two 128-wide slices
through one partial buffer (a 64 x 256 slice's partial sums and totals would need 256 registers a thread). The
narrower tiles sum their whole width at once through a buffer as wide: what the slices save or cost against a
narrower tile. PROMOTE = 2 adds the partial sums every other k tile (256 k): half the adds, a coarser partial sum.
"""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/fp8_promoted_scratch.json")  # nothing here belongs to the book's run

from helpers import check, device  # noqa: E402
from helpers.fp8 import probe_accumulator  # noqa: E402
from helpers.launch import prepare  # noqa: E402
from helpers.registry import rung  # noqa: E402
from helpers.results import record_part  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

from .build import (EVERY_256, EVERY_256_CONFIG, EVERY_256_RUNG, NO_ADDS, PLAIN, PLAIN_RUNG, TILE_RUNGS, TILES,  # noqa: E402
                    every_256, no_adds_source, tile_source)

RECORD = Path(__file__).with_name("record.json")
BUILDS = ("12_fp8", "12_fp8_promoted", *TILES, EVERY_256, PLAIN, NO_ADDS)
# 3, 5, 8 and 7 k tiles; then ragged edges in M, N and K (the last k tile part zeros)
CHECKS = ((256, 256, 384), (512, 256, 640), (256, 512, 1024), (2304, 2048, 896), (4095, 4104, 4112), (200, 392, 720))
SHAPES = ((2048,) * 3, (4096,) * 3, (6144,) * 3, (8192,) * 3, (8192, 8192, 1024))


def launches(m: int, n: int, k: int) -> dict:
    return {"12_fp8": prepare("12_fp8", m, n, k),  # first: its inputs and cuBLASLt's serve every build
            "12_fp8_promoted": prepare("12_fp8_promoted", m, n, k),
            **{name: prepare(r, m, n, k, source=tile_source(name)) for name, r in TILE_RUNGS.items()},
            EVERY_256: prepare(EVERY_256_RUNG, m, n, k, source=every_256()),
            PLAIN: prepare(PLAIN_RUNG, m, n, k),
            NO_ADDS: prepare("12_fp8_promoted", m, n, k, source=no_adds_source())}


def run_checks() -> bool:
    ok = True
    for shape in CHECKS:
        for name, r, src in ((EVERY_256, EVERY_256_RUNG, every_256()), *((x, r, tile_source(x)) for x, r in TILE_RUNGS.items())):
            got = check(r, *shape, source=src)
            print(f"{name}: {got}", flush=True)
            ok &= bool(got.ok)
    return ok


def time_shape(m: int, n: int, k: int) -> dict:
    row = bench_launches(launches(m, n, k))
    groups = row["cublas_groups"]
    print(f"{m}x{n}x{k}: " + "  ".join(f"{x} {row[x]['tflops']:.1f} ({row[x]['us']:.1f} us)" for x in BUILDS)
          + "  " + "  ".join(f"{g} {v['tflops']:.1f}" for g, v in groups.items()), flush=True)
    return row


def probes() -> dict:
    got = {x: probe_accumulator(x) for x in ("12_fp8", "12_fp8_promoted", "10_chip")}
    return {**got, EVERY_256: probe_accumulator(EVERY_256_RUNG, every_256())}


def profiles(n: int = 8192) -> dict:
    from helpers.profile import collect
    out = {}
    for name, r, config in (("12_fp8", "12_fp8", {}), ("12_fp8_promoted", "12_fp8_promoted", {}),
                            *((x, "12_fp8_promoted", c) for x, c in TILES.items()),
                            (EVERY_256, "12_fp8", EVERY_256_CONFIG)):
        out[name] = {**collect(rung(r), n, config=config), "rung": name, "source": "experiments/fp8_promoted",
                     "run": "outside the book's run", "gpu": device().name}
        print(name, {k: out[name].get(k) for k in ("duration_us", "sm_clock_mhz", "tensor_pipe_pct", "l2_tbps")},
              flush=True)
    return out


def save(part: str, value) -> None:
    record_part(RECORD, part, value)


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    what = sys.argv[1:] or ["check", "probe", "time", "profile"]
    if "check" in what and not run_checks():
        sys.exit("a build computed a wrong C")
    if "probe" in what:
        got = probes()
        print(json.dumps(got, indent=1))
        save("probe", got)
    if "time" in what:
        save("time", [time_shape(*s) for s in SHAPES])
    if "profile" in what:
        save("profile", profiles())
