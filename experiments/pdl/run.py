"""Launches that overlap: chapter 10's kernel with its switch PDL (kernels/10_chip.cu: griddepcontrol and
prefetch.tensormap), launched with programmatic stream serialization (helpers/pdl.py), an experiment outside the book's
run; its output goes to experiments/pdl/record.json. From the repository root:

    python3 -m experiments.pdl.run check [small]   the PDL build at the check shapes, launched plainly and with the
                                                   attribute; then launches back to back with the attribute, each
                                                   launch's A the C of the one before and C poisoned with NaN until
                                                   it is written, checked launch by launch, and several launches
                                                   into one C; then the control, the build without the wait, whose
                                                   C comes out wrong where a launch overlapped the one before and
                                                   read its A before it was written (`small`: the shapes run.sh runs
                                                   under compute-sanitizer, no control, nothing recorded)
    python3 -m experiments.pdl.run both            PDL with OVERLAP = 2 (chapter 10's two moves together), launched
                                                   with the attribute: checked, back to back, then timed beside
                                                   rung 10 at the shapes of the targets
    python3 -m experiments.pdl.run time            every shape: rung 10 as it launches, the PDL build launched
                                                   plainly and with the attribute, and every cuBLAS contender, on the
                                                   same inputs in the same interleaved rounds

Each build is rung 10 with the tile and cluster its tile policy picks for the shape (helpers.tiles.launch_config),
plus PDL. Every launch here goes to a stream of its own (non-blocking), made current for the whole part: cuBLAS, the
spin kernel and the timing events follow CuPy's current stream, and the legacy default stream is kept out of the
question.
"""
import os
import sys
from dataclasses import replace

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/pdl_scratch.json")  # nothing here belongs to the book's run

import numpy as np  # noqa: E402

from helpers import check, device  # noqa: E402
from helpers.correctness import verdict  # noqa: E402
from helpers.facts import variant_source  # noqa: E402
from helpers.formats import to_bf16, upcast  # noqa: E402
from helpers.gpu import missing, require_live  # noqa: E402
from helpers.kernel import faults_explained, kernel  # noqa: E402
from helpers.launch import prepare  # noqa: E402
from helpers.registry import rung  # noqa: E402
from helpers.results import record_part  # noqa: E402
from helpers.tiles import launch_config  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

from . import ATTRIBUTE, NAMES, PLAIN, RECORD, RUNG  # noqa: E402

FINAL = rung("10_chip")
SHAPES = ((1024,) * 3, (2048,) * 3, (1024, 1024, 4096), (127, 4096, 4096), (4096,) * 3)
# one k step; several tiles per cluster; ragged edges; pairs whose second CTA reads wholly past M; every tile of the
# menu (1536 = 6 x 256 = 8 x 192 = 12 x 128); then the timed shapes
CHECKS = ((256, 256, 64), (2304, 2048, 128), (4095, 4104, 200), (100, 35840, 64), (3072, 3072, 64),
          (1536, 1536, 512), (4096, 4096, 256), *SHAPES)
# back to back, N = K so that each launch's C is the next one's A: clusters of one on 128 x 128 and 128 x 256 tiles,
# a ragged M, pairs at 4096, a ragged N
CHAINS = ((1024, 1024, 1024), (2048, 2048, 2048), (127, 4096, 4096), (4096, 4096, 4096), (300, 200, 200))
SMALL = 4                       # the first checks (and the last, smallest chain) under compute-sanitizer
LENGTH, SMALL_LENGTH = 16, 4    # launches per chain
BOTH = "PDL + OVERLAP = 2, attribute"
OVERLAP_ALONE = "OVERLAP = 2, plain launch"
BOTH_SHAPES = ((1024,) * 3, (2048,) * 3, (3072,) * 3, (8192, 8192, 1024), (4096,) * 3, (8192,) * 3)
SPIN_NS = 20_000_000            # 20 ms of GPU spin ahead of a chain: the host queues it all before the first starts


def source_for(m: int, n: int, k: int, pdl: int = 1, overlap: int = 0) -> str:
    """Rung 10's file with the overrides its tile policy picks for M x N x K, plus PDL (and OVERLAP)."""
    picked = launch_config(FINAL, m, n, k, kernel(FINAL).resident_clusters(), require_live().sms)
    return variant_source(FINAL, {**picked, "PDL": pdl, **({"OVERLAP": overlap} if overlap else {})})


def launches(m: int, n: int, k: int, pdl: int = 1, overlap: int = 0) -> dict:
    """The PDL build at M x N x K launched plainly (CuPy) and with the attribute (as helpers.launch launches a build
    with PDL > 0)."""
    attributed = prepare(FINAL, m, n, k, source=source_for(m, n, k, pdl, overlap))
    return {PLAIN: replace(attributed, programmatic=False), ATTRIBUTE: attributed}


def spin(ns: int) -> None:
    """Keep the GPU busy for `ns` of GPU time (the timing harness's probe_spin), so what is queued after it starts
    only once the host has queued all of it."""
    kernel("hbm_copy").module().get_function("probe_spin")((1,), (32,), (np.uint64(ns),))


def back_to_back(lau, length: int) -> dict:
    """`length` launches queued back to back behind a spin, each launch's A the C of the launch before (N = K) and
    each C of its own, NaN until written: a launch that read its A before its predecessor had written all of it
    computes NaN or a wrong C. Then `length` launches on fresh pairs into one C, which must hold the last pair's
    product: a launch that stored before its predecessor had finished would be overwritten. B is scaled by
    1/sqrt(K), so |C| stays near |A| down the chain. Each result is checked against the higher-precision reference
    of the inputs that launch read (helpers.correctness.verdict)."""
    import cupy as cp
    m, n, k = lau.m, lau.n, lau.k
    if n != k:
        raise ValueError(f"a chain feeds each C [M, N] to the next launch as A [M, K], so it needs N = K; got "
                         f"{m}x{n}x{k}.")
    a0 = lau.inputs()[0]
    bs = [to_bf16(upcast(lau.inputs()[1]) / np.float32(k**0.5)) for _ in range(length)]
    cs = [lau.output() for _ in range(length)]
    chained = [lau.args(a0 if i == 0 else cs[i - 1], bs[i], cs[i]) for i in range(length)]
    pairs = [lau.inputs() for _ in range(length)]
    shared = lau.output()
    into_one = [lau.args(a, b, shared) for a, b in pairs]
    queued = cp.cuda.Event()
    with faults_explained(lau.rung):
        for batch in (chained, into_one):
            spin(SPIN_NS)
            queued.record()
            for x in batch:
                lau.enqueue(x)
            dry = queued.done  # the spin ended before the host had queued the batch: not all of it back to back
            cp.cuda.get_current_stream().synchronize()
            if dry:
                print(f"  note: the GPU caught up with the host while it queued {len(batch)} launches at {m}x{n}x{k}: "
                      "some of them did not follow one another back to back.", flush=True)
    got = [verdict(lau.rung, m, n, k, a0 if i == 0 else cs[i - 1], bs[i], cs[i]) for i in range(length)]
    last = verdict(lau.rung, m, n, k, *pairs[-1], shared)
    return {"shape": [m, n, k], "launches": length, "chain_ok": [bool(x.ok) for x in got],
            "chain_worst": max(x.worst_excess for x in got), "into_one_ok": bool(last.ok),
            "first_wrong": next((str(x) for x in (*got, last) if not x.ok), None)}


def run_checks(small: bool = False) -> tuple[bool, dict]:
    """Every check of the part: (all right, what to record)."""
    import cupy as cp
    ok, out = True, {"single": [], "back_to_back": [], "control": []}
    length = SMALL_LENGTH if small else LENGTH
    with cp.cuda.Stream(non_blocking=True):
        for shape in CHECKS[:SMALL] if small else CHECKS:
            for name, lau in launches(*shape).items():
                got = check(lau)
                print(f"{name}: {got}", flush=True)
                out["single"].append({"build": name, "shape": list(shape), "ok": bool(got.ok), "rel_err": got.rel_err,
                                      "worst": got.worst_excess})
                ok &= bool(got.ok)
        for shape in (CHAINS[-1:] if small else CHAINS):
            row = back_to_back(launches(*shape)[ATTRIBUTE], length)
            good = all(row["chain_ok"]) and row["into_one_ok"]
            print(f"{ATTRIBUTE}, {length} launches back to back at {'x'.join(map(str, shape))}: "
                  f"{'all correct' if good else 'WRONG: ' + row['first_wrong']}", flush=True)
            out["back_to_back"].append(row)
            ok &= good
        if not small:  # the build without the wait: wrong wherever a launch read or wrote C before its predecessor
            for shape in CHAINS:  # was done with it, which it can only where it overlapped that predecessor
                row = back_to_back(launches(*shape, pdl=2)[ATTRIBUTE], length)
                caught = not (all(row["chain_ok"]) and row["into_one_ok"])
                print(f"control (no wait), {length} launches back to back at {'x'.join(map(str, shape))}: "
                      + ("a wrong C: launches overlapped, and the check sees a missing wait" if caught else
                         "every C right: no launch touched a C before its predecessor was done with it (where the "
                         "grid fills the chip, a launch's CTAs start only as the previous one's exit)"), flush=True)
                out["control"].append({**row, "caught": caught})
            if not any(x["caught"] for x in out["control"]):
                print("WARNING: the control computed every C right at every shape: no launch overlapped its "
                      "predecessor, so programmatic dependent launch did not engage here and the time part cannot "
                      "show what it saves.", flush=True)
    return ok, out


def time_shape(m: int, n: int, k: int) -> dict:
    import cupy as cp
    with cp.cuda.Stream(non_blocking=True):
        row = bench_launches({RUNG: prepare(FINAL, m, n, k), **launches(m, n, k)})
    print(f"{m}x{n}x{k}: " + "  ".join(f"{x} {row[x]['us']:.2f} us ({row[x]['ratio']:.3f})" for x in NAMES)
          + f"  cuBLAS {row['cublas_best']['us']:.2f} us", flush=True)
    return row


def both() -> tuple[bool, dict, list]:
    """Part `both`: the two moves chapter 10 measured apart, together: PDL = 1 with OVERLAP = 2 (experiments/overlap's
    best build), launched with the attribute; checked once at the first checks and back to back (the 3072 chain runs
    the 128 x 192 tile, three chunks of C a tile), then timed at the shapes of the issue's targets beside rung 10,
    the PDL build alone (with the attribute) and OVERLAP = 2 alone (launched plainly), in the same rounds."""
    import cupy as cp
    ok, checked, rows = True, {"single": [], "back_to_back": []}, []
    with cp.cuda.Stream(non_blocking=True):
        for shape in CHECKS[:7]:
            got = check(launches(*shape, overlap=2)[ATTRIBUTE])
            print(f"{BOTH}: {got}", flush=True)
            checked["single"].append({"shape": list(shape), "ok": bool(got.ok), "worst": got.worst_excess})
            ok &= bool(got.ok)
        for shape in ((1024,) * 3, (3072,) * 3, (300, 200, 200)):
            row = back_to_back(launches(*shape, overlap=2)[ATTRIBUTE], LENGTH)
            good = all(row["chain_ok"]) and row["into_one_ok"]
            print(f"{BOTH}, {LENGTH} launches back to back at {'x'.join(map(str, shape))}: "
                  f"{'all correct' if good else 'WRONG: ' + row['first_wrong']}", flush=True)
            checked["back_to_back"].append(row)
            ok &= good
        for m, n, k in BOTH_SHAPES:
            overlap = prepare(FINAL, m, n, k, source=source_for(m, n, k, pdl=0, overlap=2))
            row = bench_launches({RUNG: prepare(FINAL, m, n, k), ATTRIBUTE: launches(m, n, k)[ATTRIBUTE],
                                  OVERLAP_ALONE: overlap, BOTH: launches(m, n, k, overlap=2)[ATTRIBUTE]})
            print(f"{m}x{n}x{k}: " + "  ".join(f"{x} {row[x]['us']:.2f} us ({row[x]['ratio']:.3f})"
                                               for x in (RUNG, ATTRIBUTE, OVERLAP_ALONE, BOTH))
                  + f"  cuBLAS {row['cublas_best']['us']:.2f} us", flush=True)
            rows.append(row)
    return ok, checked, rows


def save(part: str, value) -> None:
    record_part(RECORD, part, value)


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    what = sys.argv[1:] or ["check", "time"]
    unknown = set(what) - {"check", "small", "time", "both"}
    if unknown:
        sys.exit(f"unknown part {' '.join(sorted(unknown))}: the parts are `check [small]`, `time` and `both` (see "
                 "--help).")
    gap = missing((9, 0), "sm_90a")
    if gap:
        sys.exit(f"experiments/pdl runs on a Hopper GPU (H100 or H200) only, and here {gap}.")
    print(f"experiments/pdl on {device().name}", flush=True)
    if "check" in what:
        good, checked = run_checks(small="small" in what)
        if "small" not in what:
            save("check", checked)
        if not good:
            sys.exit("the PDL build computed a wrong C")
    if "time" in what:
        save("time", [time_shape(*s) for s in SHAPES])
    if "both" in what:
        good, checked, rows = both()
        save("both", {"check": checked, "time": rows})
        if not good:
            sys.exit("the PDL + OVERLAP build computed a wrong C")
