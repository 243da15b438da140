"""FP8 with promoted accumulation (issue "ahead", item 5), an experiment outside the book's run; results/fp8_promoted.json
keeps its output.

    python ci/fp8_promoted.py time       2048 .. 8192: rung 12, the same kernel on 128 x 128 tiles, 12_fp8_promoted
                                         and every cuBLASLt FP8 algorithm (promoted and fast accumulation), in the
                                         same interleaved rounds
    python ci/fp8_promoted.py probe      the accumulator probe (helpers.fp8) on the three builds and rung 10
    python ci/fp8_promoted.py profile    Nsight Compute on the three builds at N = 8192

Why three builds: 12_fp8_promoted changes two things against rung 12, the tile (128 x 256 -> 128 x 128, since the
partial sums and their fp32 totals of a 64 x 256 slice would need 256 registers a thread) and the promotion. The
128 x 128 build without promotion separates them: rung 12 -> narrow is the tile's cost, narrow -> promoted the
promotion's.
"""
import json
import os
import sys

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/fp8_promoted_scratch.json")  # nothing here belongs to the book's run

from helpers import device  # noqa: E402
from helpers.compiler import apply_config  # noqa: E402
from helpers.fp8 import probe_accumulator  # noqa: E402
from helpers.launch import prepare  # noqa: E402
from helpers.playground import source  # noqa: E402
from helpers.registry import ROOT, rung  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

RECORD = ROOT / "results" / "fp8_promoted.json"
NARROW = {"BN": 128, "WGMMA_N": 128}   # 12_fp8_promoted's tile, without its promotion
BUILDS = ("12_fp8", "12_fp8, 128 x 128", "12_fp8_promoted")
SHAPES = ((2048,) * 3, (4096,) * 3, (6144,) * 3, (8192,) * 3, (8192, 8192, 1024))


def launches(m: int, n: int, k: int) -> dict:
    return {"12_fp8": prepare("12_fp8", m, n, k),  # first: its inputs and cuBLASLt's serve every build
            "12_fp8, 128 x 128": prepare("12_fp8", m, n, k, source=apply_config(source("12_fp8"), NARROW)),
            "12_fp8_promoted": prepare("12_fp8_promoted", m, n, k)}


def time_shape(m: int, n: int, k: int) -> dict:
    row = bench_launches(launches(m, n, k))
    groups = row["cublas_groups"]
    print(f"{m}x{n}x{k}: " + "  ".join(f"{x} {row[x]['tflops']:.1f} ({row[x]['us']:.1f} us)" for x in BUILDS)
          + "  " + "  ".join(f"{g} {v['tflops']:.1f}" for g, v in groups.items()), flush=True)
    return row


def probes() -> dict:
    return {x: probe_accumulator(x) for x in ("12_fp8", "12_fp8_promoted", "10_beyond_cublas")}


def profiles(n: int = 8192) -> dict:
    from helpers.profile import collect
    out = {}
    for name, r, config in (("12_fp8", "12_fp8", {}), ("12_fp8, 128 x 128", "12_fp8", NARROW),
                            ("12_fp8_promoted", "12_fp8_promoted", {})):
        out[name] = {**collect(rung(r), n, config=config), "rung": name, "source": "ci/fp8_promoted.py",
                     "run": "outside the book's run", "gpu": device().name}
        print(name, {k: out[name].get(k) for k in ("duration_us", "sm_clock_mhz", "tensor_pipe_pct", "tma_tbps", "l2_tbps", "stall_family")}, flush=True)
    return out


def save(part: str, value) -> None:
    data = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    data[part] = value
    data.setdefault("env", {})[part] = device().env()  # each part says which machine and when
    RECORD.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    what = sys.argv[1:] or ["probe", "time", "profile"]
    if "probe" in what:
        got = probes()
        print(json.dumps(got, indent=1))
        save("probe", got)
    if "time" in what:
        save("time", [time_shape(*s) for s in SHAPES])
    if "profile" in what:
        save("profile", profiles())
