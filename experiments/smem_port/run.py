"""Is an SM's shared memory one port of 128 bytes a clock that wgmma's operand reads and TMA's fills share? Chapter
00's wgmma probe (back-to-back m64n256k16 on one resident tile, two consumer warpgroups) with a producer warp that
lands FILL bytes of TMA fills in the same SM's shared memory for every group of 8 wgmmas the consumers issue, the
consumers waiting on each group's fill: fills paced to the tensor rate, so a saturated port shows as a lower tensor
rate. An experiment outside the book's run, for chapters 06, 10 and 12; its output goes to
experiments/smem_port/record.json.

    python3 -m experiments.smem_port.run          check every build (a short launch each), then time them
    python3 -m experiments.smem_port.run check    the check alone (a short launch of every build; nothing recorded)

The builds (build.py): A and B from shared memory (80 B a clock of operand reads at the full tensor rate) with fills
of 0, 16, 32, 48, 64 and 80 B a clock; A from registers (64 B a clock) with the same fills; and the fills alone (the
waits, no wgmma: how fast this SM's fills land with nothing else using the port). On every SM the fills come from L2
at rate x SMs x clock, so that sweep stops at 32 B a clock (8.4 TB/s at 1.98 GHz, about the H200's L2 -> SM roof); on a
quarter of the SMs every build runs, 80 B a clock drawing 5.2 TB/s at 1.98 GHz; on an eighth, the A+B sweep and the
fills alone again, L2 further still from binding. Each grid's builds are timed in the same interleaved rounds
(helpers.timing: GPU time, median and IQR), then launched STAMP_LAUNCHES more times to read the kernel's own stamps:
clock64 and globaltimer at each CTA's start and end give the clock the SMs ran at, and the tensor rate, operand and
fill bytes per SM clock, CTA by CTA.
"""
import json
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/smem_port_scratch.json")  # nothing here belongs to the run

import numpy as np  # noqa: E402

from helpers import device  # noqa: E402
from helpers.gpu import require_live  # noqa: E402
from helpers.kernel import kernel  # noqa: E402
from helpers.launch import random_inputs  # noqa: E402
from helpers.timing import time_gpu  # noqa: E402
from helpers.tma import tensor_map_2d  # noqa: E402

from . import line  # noqa: E402
from .build import BUILDS, GRIDS, PROBE, RUNS, source_of  # noqa: E402

RECORD = Path(__file__).with_name("record.json")
ITERS = 1 << 12        # groups per launch: 32,768 wgmmas an SM, about 2.2 ms at the full rate and 1.9 GHz
CHECK_ITERS = 64
SOURCE_BOXES = 512     # 8 MiB of [128, 64] bf16 boxes, read over and over: L2-resident on the H100 and the H200
STAMP_LAUNCHES = 3
SETTLE = 4             # rounds of 20 launches of every build before the timing: the clock sags, then settles


class Fixture:
    """What every launch shares: the operand tile's random values and the L2-resident source of the fills, each
    [128, 64] box of it filled with its own number + 1 (so a landed box names itself), and its tensor map."""

    def __init__(self):
        import cupy as cp
        words = (64 + 256) * 128 // 4
        self.operands = random_inputs("bf16", 1, 4 * words // 2, 1)[1].view(cp.uint32).reshape(-1)[:words].copy()
        rows = kernel(PROBE, source_of("fills only")).consts["BOX_ROWS"]
        tag = cp.arange(1, SOURCE_BOXES + 1, dtype=cp.uint16)
        self.source = cp.ascontiguousarray(cp.broadcast_to(cp.repeat(tag, rows)[:, None], (SOURCE_BOXES * rows, 64)))
        self.map = tensor_map_2d(self.source, rows, 64, dtype="bf16")


class Run:
    """One build at one grid: its kernel, buffers and launch, and what its stamps say."""

    def __init__(self, name: str, grid: int, iters: int, fx: Fixture):
        import cupy as cp
        self.name, self.grid, self.iters = name, grid, iters
        self.kern = kernel(PROBE, source_of(name))
        c = self.kern.consts
        self.c = c
        if iters * c["FILL_BOXES"] * grid >= 2**32:
            raise ValueError(f"{name}: iters x FILL_BOXES x grid must stay under 2^32 (the kernel's box index)")
        self.sink = cp.empty(grid * c["CONSUMERS"] * 128, cp.float32)
        self.stamps = cp.zeros(grid * c["STAMP_WORDS"], cp.uint64)
        fn, args = self.kern.function(), (fx.map, np.int32(SOURCE_BOXES), np.int32(iters), fx.operands, self.sink,
                                          self.stamps)
        self.launch = lambda i=0: fn((grid,), (self.kern.threads,), args, shared_mem=self.kern.smem)
        self.wgmmas = c["CONSUMERS"] * c["HGMMA_GROUP"] * iters * c["WGMMA"]   # per CTA
        self.flop = 2.0 * 64 * c["N"] * 16 * self.wgmmas * grid
        self.fill_bytes = iters * c["FILL_BYTES"]                             # per CTA

    def read(self) -> list[dict]:
        """Each CTA's stamps after a launch: cycles and ns from its start to its last consumer's end, its SM, and the
        word its check read; raises if a fill did not land (or a no-fill build found one)."""
        import cupy as cp
        cp.cuda.runtime.deviceSynchronize()
        s = self.stamps.get().reshape(self.grid, self.c["STAMP_WORDS"]).astype(np.int64)
        out = []
        for cta in s:
            word = int(cta[7])
            lo, hi = word & 0xFFFF, word >> 16
            landed = lo == hi and 1 <= lo <= SOURCE_BOXES
            if landed != (self.c["FILL_BOXES"] > 0):
                raise RuntimeError(f"{self.name}: the scratch word a CTA checked is {word:#x}, "
                                   f"{'not a landed box' if self.c['FILL_BOXES'] else 'yet no fill was issued'}.")
            out.append({"cycles": int(max(cta[2], cta[4]) - cta[0]), "ns": int(max(cta[3], cta[5]) - cta[1]),
                        "sm": int(cta[6])})
        return out


def check(grid: int, fx: Fixture) -> None:
    """A short launch of every build on `grid` CTAs: each finishes, every fill lands (a barrier that never completes
    traps after 4 s), each no-fill build lands none."""
    import cupy as cp
    for name in BUILDS:
        run = Run(name, grid, CHECK_ITERS, fx)
        try:
            run.launch()
            ctas = run.read()
        except (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError) as e:
            raise RuntimeError(f"{name} did not finish ({e}): most likely an mbarrier wait trapped after 4 s, a fill "
                               f"that never landed or a phase waited on twice; the CUDA context is unusable now.") \
                from None
        fills = f"{run.c['FILL_BOXES']} boxes landed a group" if run.c["FILL_BOXES"] else "no fills, none landed"
        print(f"check {name:<20} {len(ctas)} CTAs finished {CHECK_ITERS} groups, {fills} "
              f"({run.kern.build.resources[PROBE.entry].registers} registers)", flush=True)


def per_clock(run: Run, ctas: list[dict]) -> dict:
    """The stamps turned into rates per SM clock (medians over the CTAs of every stamp launch, the CTAs' spread as
    the quartiles of the tensor rate)."""
    c = run.c
    wgmma_clocks = c["GROUP_CLOCKS"] // (c["CONSUMERS"] * c["HGMMA_GROUP"])   # 128: one m64n256k16 at 4,096 FLOP/clk
    busy = sorted(run.wgmmas * wgmma_clocks / x["cycles"] for x in ctas)
    q1, med, q3 = statistics.quantiles(busy, n=4, method="inclusive") if len(busy) > 1 else busy * 3
    cycles = statistics.median(x["cycles"] for x in ctas)
    return {"tensor_busy": med, "tensor_busy_iqr": [q1, q3],
            "clock_mhz": statistics.median(x["cycles"] / x["ns"] * 1e3 for x in ctas),
            "operand_bytes_per_clk": run.wgmmas * c["OPERAND_BYTES"] / cycles,
            "fill_bytes_per_clk": run.fill_bytes / cycles, "cycles": cycles,
            "sms": sorted({x["sm"] for x in ctas})}


def measure(grid_name: str, fx: Fixture) -> dict:
    """Time one grid's builds in the same interleaved rounds, then read their stamps."""
    import cupy as cp
    grid = require_live().sms // GRIDS[grid_name]
    runs = {name: Run(name, grid, ITERS, fx) for name in RUNS[grid_name]}
    for _ in range(SETTLE):
        for run in runs.values():
            for _ in range(20):
                run.launch()
        cp.cuda.runtime.deviceSynchronize()
    got = time_gpu({name: run.launch for name, run in runs.items()})
    ctas = {name: [] for name in runs}
    for _ in range(STAMP_LAUNCHES):
        for name, run in runs.items():
            run.launch()
            ctas[name] += run.read()
    out = {}
    for name, run in runs.items():
        t = got[name]
        c, rates = run.c, per_clock(run, ctas[name])
        out[name] = {"fill_per_clk_at_full_rate": c["FILL_PER_CLK"], "operand_bytes_per_wgmma": c["OPERAND_BYTES"],
                     "a_in_regs": c["A_IN_REGS"], "wgmma": c["WGMMA"], "grid": grid, "iters": ITERS,
                     "us": t.ms * 1e3, "us_iqr": [t.q1_ms * 1e3, t.q3_ms * 1e3],
                     "tflops": run.flop / t.ms / 1e9, "iqr": [run.flop / t.q3_ms / 1e9, run.flop / t.q1_ms / 1e9],
                     "fill_tbs": grid * run.fill_bytes / t.ms / 1e9,
                     "nvml_clock_mhz_sample": t.sm_clock_mhz, "power_w_sample": t.power_w,
                     "registers": run.kern.build.resources[PROBE.entry].registers, **rates}
    for name, e in out.items():  # each against the no-fill build of its operands, on the same grid
        base = out.get(f"{'A regs' if e['a_in_regs'] else 'A+B smem'}, fill 0")
        if e["wgmma"] and base:
            e["vs_no_fill"] = e["tensor_busy"] / base["tensor_busy"]
            e["vs_no_fill_tflops"] = e["tflops"] / base["tflops"]
    return out


def show(grid_name: str, rows: dict) -> None:
    print(f"{grid_name} ({next(iter(rows.values()))['grid']} CTAs, one an SM)")
    for name, e in rows.items():
        print(line(name, e), flush=True)


def main() -> dict:
    dev = require_live(PROBE.needs_cc)
    fx = Fixture()
    check(dev.sms, fx)
    out = {}
    for grid_name in GRIDS:
        out[grid_name] = measure(grid_name, fx)
        show(grid_name, out[grid_name])
    return out


if __name__ == "__main__":
    args = set(sys.argv[1:])
    if {"-h", "--help"} & args or args - {"check"}:
        print(__doc__)
        sys.exit(0 if {"-h", "--help"} & args else 2)
    if args == {"check"}:
        check(require_live(PROBE.needs_cc).sms, Fixture())
        sys.exit(0)
    got = main()
    RECORD.write_text(json.dumps({"time": got, "source_bytes": SOURCE_BOXES * 128 * 128, "env": device().env()},
                                 indent=1) + "\n")
