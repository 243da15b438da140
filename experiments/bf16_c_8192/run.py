"""Why chapter 10 makes its blocks persistent before it writes C in bf16 (issue "ladder"), an experiment outside the
book's run; experiments/bf16_c_8192/record.json keeps its output (its `causes` part from the first run of `causes`,
whose profiles were printed before a timing part, since dropped, failed). build.py makes the variants of `causes`.

    python3 -m experiments.bf16_c_8192.run profiles
        three Nsight Compute profiles each of 09_setmaxnreg and 10_bf16_c_per_tile at
        8192: DRAM bytes read, L2 hit rate, duration and clock of each launch
    python3 -m experiments.bf16_c_8192.run time
        10_bf16_c_per_tile beside 10_bf16_c (both bf16 C, the second persistent) in
        three sets of rounds
    python3 -m experiments.bf16_c_8192.run causes
        which difference from rung 09 brings the DRAM bytes: rung 09 with a 1-CTA
        cluster launch, rung 09 writing bf16 C, 10_bf16_c_per_tile with and without
        its cluster launch, and the persistent kernel with either C; two profiles each
    python3 -m experiments.bf16_c_8192.run order
        rung 09, rung 09 writing bf16 C, 10_bf16_c_per_tile, 10_persistent (fp32 C)
        and 10_bf16_c in the same rounds at 4096 and 8192, twice each

Why: in run 2026-11-26T18:01Z-h100 the main path went from rung 09 to bf16 C with one block per tile (today's
10_bf16_c_per_tile), then to persistence, and the bf16 step tied at 8192: its rounds spread over 690.8-706.3 TFLOP/s,
and its profiled launches read 3.20 and 3.51 GB from DRAM against rung 09's 2.31. A one-block-per-tile launch leaves
the order tiles run in to the hardware; a persistent one walks the kernel's own list.
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/bf16_c_8192_scratch.json")  # nothing here belongs to the run

from experiments.bf16_c_8192.build import variants  # noqa: E402
from helpers.launch import prepare  # noqa: E402
from helpers.profile import collect  # noqa: E402
from helpers.registry import rung  # noqa: E402
from helpers.results import record_part  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

RECORD = Path(__file__).with_name("record.json")
N, REPEATS = 8192, 3
KEEP = ("duration_us", "sm_clock_mhz", "dram_read_bytes", "dram_write_bytes", "l2_hit_pct", "tensor_active_pct",
        "l2_tbps")


def profiles() -> dict:
    out = {}
    for rid in ("09_setmaxnreg", "10_bf16_c_per_tile"):
        out[rid] = []
        for i in range(REPEATS):
            e = collect(rung(rid), N)
            out[rid].append({k: e.get(k) for k in KEEP})
            print(f"{rid} launch {i}: {e['dram_read_bytes'] / 1e9:.2f} GB read, L2 hit {e.get('l2_hit_pct')}, "
                  f"{e['duration_us']:.1f} us at {e['sm_clock_mhz']:.0f} MHz", flush=True)
    return out


def time_sets() -> list:
    sets = []
    for i in range(REPEATS):
        row = bench_launches({rid: prepare(rid, N, N, N) for rid in ("10_bf16_c_per_tile", "10_bf16_c")})
        sets.append(row)
        print(f"set {i}: " + "  ".join(f"{rid} {row[rid]['tflops']:.1f} (IQR {row[rid]['iqr'][0]:.1f}-"
                                       f"{row[rid]['iqr'][1]:.1f})" for rid in ("10_bf16_c_per_tile", "10_bf16_c")),
              flush=True)
    return sets


def causes() -> dict:
    """Each variant profiled twice at 8192: DRAM bytes read, L2 hit rate, duration and clock of each launch."""
    out = {}
    for name, (rid, text) in variants().items():
        config = {}
        if text is not None:
            path = f"/tmp/bf16_c_8192_{name}.cu"
            open(path, "w").write(text)
            config = {"source_file": path}
        out[name] = []
        for i in range(2):
            e = collect(rung(rid), N, config=dict(config))
            out[name].append({k: e.get(k) for k in KEEP})
            print(f"{name} launch {i}: {e['dram_read_bytes'] / 1e9:.2f} GB read, L2 hit {e.get('l2_hit_pct')}, "
                  f"{e['duration_us']:.1f} us at {e['sm_clock_mhz']:.0f} MHz", flush=True)
    return out


def order() -> dict:
    """Persistence before bf16 C, or after: rung 09, rung 09 writing bf16 C, 10_bf16_c_per_tile, 10_persistent
    (fp32 C) and 10_bf16_c, in the same rounds at 4096 and 8192, twice each. Each writes a C of its own dtype."""
    from helpers.gpu import require_live
    from helpers.timing import input_sets_for, time_gpu
    builds = {"09_setmaxnreg": ("09_setmaxnreg", None, "fp32"),
              "09_bf16_c": ("09_setmaxnreg", variants()["09_bf16_c"][1], "bf16"),
              "10_bf16_c_per_tile": ("10_bf16_c_per_tile", None, "bf16"),
              "10_persistent": ("10_persistent", None, "fp32"),
              "10_bf16_c": ("10_bf16_c", None, "bf16")}
    out = {}
    for n in (4096, 8192, 4096, 8192):
        launches = {name: prepare(rid, n, n, n, source=text) for name, (rid, text, _) in builds.items()}
        first = launches["09_setmaxnreg"]
        inputs = [first.inputs() for _ in range(input_sets_for(n, n, n, 2, require_live().l2_bytes))]
        cs = {"fp32": first.output(), "bf16": launches["10_bf16_c"].output()}  # NaN-poisoned, one per dtype
        contenders = {}
        for name, lau in launches.items():
            kind = builds[name][2]
            args = []
            for a, b in inputs:
                got = list(lau.kernel.args(a, b, cs["bf16"]))  # rung 10's C map is bf16 whatever C is
                if kind == "fp32":
                    got[2 + (lau.rung.operands == "tensor_maps_c")] = cs["fp32"]
                args.append(tuple(got))
            contenders[name] = (lambda lau, args: lambda i: lau.enqueue(args[i % len(args)]))(lau, args)
        got = time_gpu(contenders, first.flops)
        row = {name: {"tflops": t.tflops, "iqr": list(t.tflops_iqr), "sm_clock_mhz": t.sm_clock_mhz,
                      "power_w": t.power_w} for name, t in got.items()}
        out.setdefault(str(n), []).append(row)
        print(f"{n}: " + "  ".join(f"{name} {row[name]['tflops']:.1f} ({row[name]['iqr'][0]:.1f}-"
                                   f"{row[name]['iqr'][1]:.1f})" for name in builds), flush=True)
    return out


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    what = sys.argv[1:] or ["profiles", "time", "causes", "order"]
    if "profiles" in what:
        record_part(RECORD, "profiles", profiles())
    if "time" in what:
        record_part(RECORD, "time", time_sets())
    if "causes" in what:
        record_part(RECORD, "causes", causes())
    if "order" in what:
        record_part(RECORD, "order", order())
