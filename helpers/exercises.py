"""The chapters' exercises, graded: the expected answers, the usual wrong ones with what each got wrong, and a
predict-then-measure answer held against the run's measurement, or the recorded one. The fix-the-kernel exercises
live in kernel_exercises, the compiler's in ptxas_exercises; chapters import them from here."""
from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from .hardware import (FFMA_FLOP_PER_CLK, KIB, MAX_SM_CLOCK_HZ, REGISTER_FILE, SCHEDULERS, SMEM_BYTES_PER_CLK,
                       SMEM_PER_BLOCK_OPTIN, SMS, TENSOR_FLOP_PER_CLK, WARP)
# chapter 06's compiler exercise lives in ptxas_exercises; chapters import its verbs from here too
from .ptxas_exercises import LAUNCH_BOUNDS, bounded, compiler_says, most_blocks, spill_free  # noqa: F401
# the fix-the-kernel exercises (chapters 04 and 07) live in kernel_exercises; chapters import them from here too
from .kernel_exercises import KERNEL_EXERCISES, KernelExercise  # noqa: F401


# ---- the chapters' numeric exercises: the expected answers live here, not in the notebooks' check cells ----------

def _ch10(x: dict) -> dict:
    from .models import epilogue_order, ring_parities
    from .tiles import waves
    c, clusters = x["c"], x["clusters"]
    last = waves(6144, 6144, c["CLUSTER_BM"], c["BN"], clusters)
    return {1: (c["BM"] + c["BN"]) * c["BK"] * 2,
            2: waves(4096, 4096, c["CLUSTER_BM"], c["BN"], clusters)["busiest"],
            3: [p["producer_waits_empty"] for p in ring_parities(4, 10)],
            4: clusters * last["busiest"] - last["tiles"], 6: epilogue_order}


def _usual(chapter: str, x: dict) -> dict:
    """{exercise: ((a usual wrong answer, what it got wrong), ...)} for the answers that are not predictions: the
    multicast's bytes, the other side's parity, a factor of two. Only the mistakes that differ from the answer."""
    from .models import ring_parities
    from .tiles import waves
    usual: dict = {}
    if chapter == "07":
        own = [p["consumer_waits_full"] for p in ring_parities(4, 10)]
        usual = {1: (((128 + 128) * 64 * 4, "that counts 4 bytes an element; a bf16 value is 2 (exercise 3's broken copy does the "
                               "same)"),
                     (16384, "that is the elements of A and B, or the bytes of one of them; expect_tx counts the "
                             "bytes of both boxes"),
                     (49152, "that is rung 07's own 128 x 256 tile; the question asks for a 128 x 128 one")),
                 2: (([kt & 1 for kt in range(10)], "that flips the parity every tile; it flips once a lap, when the "
                                                   "ring wraps after 4 tiles"),
                     ([kt // 4 for kt in range(10)], "those are the laps; the wait takes the lap's parity, lap & 1, "
                                                     "so lap 2 waits for parity 0 again"),
                     ([p ^ 1 for p in own], "that is the producer's parity on the empty barrier, the phase before "
                                            "its lap; the consumers wait on the full barrier for their own lap's "
                                            "phase"))}
    if chapter == "10":
        c, k = x["c"], x["clusters"]
        tx, own = (c["BM"] + c["BN"]) * c["BK"] * 2, (c["BM"] + c["BN"] // c["CLUSTER"]) * c["BK"] * 2
        producer = [p["producer_waits_empty"] for p in ring_parities(4, 10)]
        busiest = lambda bm, clusters: waves(4096, 4096, bm, c["BN"], clusters)["busiest"]  # noqa: E731
        last = lambda bm, clusters: clusters * waves(6144, 6144, bm, c["BN"], clusters)["busiest"] - \
            waves(6144, 6144, bm, c["BN"], clusters)["tiles"]  # noqa: E731
        cta = (f"that counts the CTAs' {c['BM']} x {c['BN']} tiles; a cluster computes one {c['CLUSTER_BM']} x "
               f"{c['BN']} tile")
        blocks = f"that shares the tiles among {k * c['CLUSTER']} CTAs; the {c['CLUSTER']} CTAs of a cluster share one"
        usual = {1: ((own, f"that is what this CTA fetches itself; the partner multicasts the other {tx - own:,} bytes "
                           "of B into this CTA's stage and they count down the same barrier, so announcing "
                           f"{own:,} releases the slot before that half lands"),
                     (2 * tx, "that counts 4 bytes an element; a bf16 value is 2"),
                     ((2 * c["BM"] + c["BN"]) * c["BK"] * 2, "that counts the partner's A too; only B is "
                                                             "multicast, each CTA's A lands in its own stage alone"),
                     (c["BM"] * c["BK"] * 2, "that is A alone; both halves of B land in the stage too")),
                 2: ((busiest(c["BM"], k), cta), (busiest(c["CLUSTER_BM"], k * c["CLUSTER"]), blocks)),
                 3: (([p ^ 1 for p in producer], "that is the consumers' parity on the full barrier, their own lap's "
                                                "phase; the producer waits on the empty barrier for the phase before "
                                                "its lap, the lap's parity flipped: lap 0 asks for parity 1, which a "
                                                "fresh barrier reports complete"),
                     ([it & 1 for it in range(10)], "that flips the parity every tile; it flips once a lap, when the "
                                                    "ring wraps after 4 tiles")),
                 4: ((last(c["BM"], k), cta), (last(c["CLUSTER_BM"], k * c["CLUSTER"]), blocks))}
    right = _expected(chapter, x) if usual else {}
    return {i: tuple((w, why) for w, why in said if w != right.get(i)) for i, said in usual.items()}


def _ring_mistakes(stages_08: int, stages_same_tile: int) -> dict:
    """Chapter 08's exercises 3 (rung 08's ring) and 4 (08_same_tile's), answered by the CPU model of the ring
    (models.ring_run), not typed in."""
    from .models import ring_run
    return {3: ring_run(stages_08, 24, empty_count=256)["tile"],
            4: ring_run(stages_same_tile, 24, release="at_commit")["by"]}


# ---- predict, then measure: a napkin number from the kernels' constexprs, held against this run's measurement ----

INSTRUCTIONS_PER_COPY = 10             # chapter 07's upper end: a cp.async's LDGSTS and nine integer instructions


def _consts(rung_id: str) -> dict:
    from .compiler import build
    return build(rung_id).consts


def _l2_cap(x: dict) -> float:
    """Chapter 02: the shared-memory rung's FLOP per byte of BF16 global loads, times the L2 bandwidth (TB/s)."""
    c = _consts("02_wmma_smem")
    return 2 * c["BM"] * c["BN"] * c["BK"] / ((c["BM"] + c["BN"]) * c["BK"] * 2) * x["l2"]


def _cp_async_cap(x: dict) -> float:
    """Chapter 05: the ring's block tile's FLOP per byte of BF16 copied from L2, times chapter 00's cp.async roof
    measured alike (the context's `cp_async`, TB/s): the rate the load path allows, whatever the ring's depth."""
    c = _consts("05_cp_async")
    return 2 * c["BM"] * c["BN"] * c["BK"] / ((c["BM"] + c["BN"]) * c["BK"] * 2) * x["cp_async"]


def _cp_async_cap_mistakes(x: dict) -> tuple:
    """Chapter 05's usual wrong caps, each with what it got wrong."""
    from .hardware import TENSOR_BOOST_HZ
    cap, roof = _cp_async_cap(x), x["cp_async"]
    per_byte = cap / roof
    said = ((roof, f"that is the roof itself, bytes a second; each byte of this tile feeds {per_byte:.0f} FLOP"),
            (SMS * TENSOR_FLOP_PER_CLK * TENSOR_BOOST_HZ / 1e12, "that is the tensor cores' datasheet peak, the "
             "bound if bytes were free; the question asks what the bytes allow"),
            (4096 / 2 * roof, "that counts each byte of A and B once for the whole product; every block copies its "
                              "own panels, so use the block tile's FLOP per byte"))
    old = ((per_byte * x["l2"], "that is the old roof, `l2_read`, with one load in flight a thread; take the cp.async "
                                "roof measured alike"),) if "l2" in x else ()
    return old + said


def _ldmatrix_ceiling(x: dict) -> float:
    """Chapter 03: the unswizzled rung's shared-memory ceiling (TFLOP/s). One k tile's FLOP (its mma.sync) over
    the wavefronts of its ldmatrix.x4 (4 phases each, at the row-major layout's conflict degree) and its stores,
    at the highest SM clock (MAX_SM_CLOCK_HZ: the exercise's boost-clock napkin; chapter 03 then converts at the clock
    Nsight Compute saw the kernel run at, lower under load)."""
    c = _consts("03_mma_sync")
    warps, steps = c["THREADS"] // WARP, c["BK"] // 16
    mma = (c["WM"] // 16) * (c["WN"] // 8)         # m16n8k16 per warp and k step
    wavefronts = _ldmatrix_wavefronts("03_mma_sync", "row-major")
    wavefronts += (c["BM"] + c["BN"]) * c["BK"] * 2 / SMEM_BYTES_PER_CLK
    flop = warps * steps * mma * 2 * 16 * 8 * 16
    return flop / wavefronts * SMS * MAX_SM_CLOCK_HZ / 1e12


def _ldmatrix_wavefronts(rung_id: str, layout: str) -> float:
    """Shared-memory wavefronts of one k tile's ldmatrix.x4 reads in an mma.sync rung (03, 04): per warp and 16-deep
    k step WM/16 loads of A and WN/16 of B (a .trans load covers two n8 tiles), 4 phases each, each phase as many
    wavefronts as the layout's conflict degree."""
    from .models import conflict_degree
    c = _consts(rung_id)
    warps, steps = c["THREADS"] // WARP, c["BK"] // 16
    x4 = {"A": c["WM"] // 16, "B": c["WN"] // 16}
    degree = {"A": conflict_degree("A", layout, (c["BM"], c["BK"])),
              "B": conflict_degree("B", layout, (c["BK"], c["BN"]))}
    return sum(warps * steps * x4[op] * 4 * degree[op] for op in "AB")


def _cycles_saved(x: dict) -> float:
    """Chapter 04: the shared-memory cycles per k tile the swizzle saves, one wavefront a cycle (the stores cost the
    same in both rungs and cancel)."""
    return _ldmatrix_wavefronts("04_swizzle", "row-major") - _ldmatrix_wavefronts("04_swizzle", "swizzled")


def _cycles_saved_mistakes(x: dict) -> tuple:
    """Chapter 04's usual wrong counts of the saving, each with what it got wrong."""
    c = _consts("04_swizzle")
    before, after = _ldmatrix_wavefronts("04_swizzle", "row-major"), _ldmatrix_wavefronts("04_swizzle", "swizzled")
    stores = (c["BM"] + c["BN"]) * c["BK"] * 2 / SMEM_BYTES_PER_CLK
    ratio = "that is a ratio of the two costs; the question asks for the cycles a k tile saves"
    return ((before, "that is all of rung 03's reads; rung 04's still cost one wavefront a phase, so subtract them"),
            (before + stores, "that is rung 03's whole shared-memory work; rung 04 still does its reads and stores"),
            (before - after + stores, "the stores fill the tiles in both rungs, the same wavefronts: they cancel"),
            ((before - after) / 4, "that counts one wavefront per ldmatrix.x4; each reads 4 matrices, one phase "
                                   "each, and every phase costs its conflict degree"),
            (before / after, ratio), ((before + stores) / (after + stores), ratio))


def _kernel_k_tile_cycles(rung_id: str, row) -> float:
    """Cycles one SM spends on a block's k tile at a measured rate, at the clock Nsight Compute saw the kernel run
    at (its elapsed-cycle rate), ignoring the partly empty last wave."""
    from .figures import recorded_profile
    c = _consts(rung_id)
    flop_per_sm_cycle = row.tflops * 1e12 / (SMS * recorded_profile(rung_id, row.n)["sm_clock_mhz"] * 1e6)
    return 2 * c["BM"] * c["BN"] * c["BK"] / flop_per_sm_cycle


def _measured_saving(n: int = 4096) -> tuple[float, list]:
    from .ladder import measure
    slow, fast = measure("03_mma_sync", n), measure("04_swizzle", n)
    return _kernel_k_tile_cycles("03_mma_sync", slow) - _kernel_k_tile_cycles("04_swizzle", fast), [slow, fast]


def _load_roof_speedup(x: dict) -> float:
    """Chapter 06: the wide rung's rate over the narrow one's if the L2 load path were the only limit: each runs at
    its block tile's FLOP per byte loaded, 2 BM BN / (2 (BM + BN)) for bf16, times the same LDG/cp.async roof, below
    the wgmma peak, so the roof itself cancels out."""
    def flop_per_byte(rung_id: str) -> float:
        c = _consts(rung_id)
        return 2 * c["BM"] * c["BN"] / (2 * (c["BM"] + c["BN"]))
    return flop_per_byte("06_wgmma_wide") / flop_per_byte("06_wgmma_m64n64")


def _issue_speedup(x: dict) -> float:
    """Chapter 07, the napkin's upper end: rung 06's copies are issue cycles the tensor cores sit idle through, on
    top of a k tile's math; rung 07 removes them. Two warps share a scheduler, so their copies add up."""
    c6, c7 = _consts("06_wgmma_wide"), _consts("07_tma")
    tile = 2 * c7["BM"] * c7["BN"] * c7["BK"] / TENSOR_FLOP_PER_CLK
    idle = c6["THREADS"] // WARP // SCHEDULERS * (c6["A_LOADS"] + c6["B_LOADS"]) * INSTRUCTIONS_PER_COPY
    return (tile + idle) / tile


def _tile_speedup(x: dict) -> float:
    """Chapter 10: at N=3072, the wave napkin's time of the 128 x 256 tile over that of the tile the launch picks
    (the busiest cluster's tiles x tile area / steady rate), on the chapter's count of clusters."""
    from .tiles import choose_tile
    from .registry import rung
    rows = choose_tile(rung("10_chip"), 3072, 3072, 3072, x["clusters"])
    return rows[0]["cost"] / next(row["cost"] for row in rows if row["picked"])


def _rate(rung_id: str, n: int = 4096) -> tuple[float, list]:
    """measure() reuses the row the chapter measured earlier in this run, measures it now, or replays it."""
    from .ladder import measure
    row = measure(rung_id, n)
    return row.tflops, [row]


def _speedup(fast: str, slow: str, n: int = 4096) -> tuple[float, list]:
    from .ladder import measure
    a, b = measure(fast, n), measure(slow, n)
    return a.tflops / b.tflops, [a, b]


def _fp8_rate(x: dict) -> float:
    """Chapter 12: the napkin's speed-up of FP8 over BF16 on the same kernel, the tensor cores' rate ratio."""
    from .hardware import FP8_RATE
    return float(FP8_RATE)


@dataclass(frozen=True)
class Prediction:
    model: Callable[[dict], float]   # context -> the napkin's number, computed from the kernels' constexprs
    measured: Callable[[], tuple]    # () -> (the measured number, the ladder rows it came from)
    what: str                        # what was measured
    unit: str                        # a format for both numbers
    band: float                      # relative: a measurement this close to the prediction is "close"
    leaves_out: str                  # what the napkin has no term for, said when the measurement is not close
    mistakes: Callable[[dict], tuple] = lambda x: ()  # context -> ((a usual wrong answer, what it got wrong), ...)


PREDICTIONS = {
    ("04", 4): Prediction(
        _cycles_saved, _measured_saving, "a k tile's cycles, 03_mma_sync less 04_swizzle, at N=4096 (each at its "
        "recorded Nsight Compute clock)", "{:,.0f} cycles", 0.1,
        "the napkin adds the shared-memory cycles to everything else a k tile waits for. In rung 03 the warps' "
        "mma.sync work runs while other warps' conflicted reads are served; once the reads are fast that work is "
        "exposed again, so the tile shortens by less than the wavefronts removed.",
        _cycles_saved_mistakes),
    ("02", 3): Prediction(
        _l2_cap, lambda: _rate("02_wmma_smem"), "02_wmma_smem at N=4096", "{:.1f} TFLOP/s", 0.25,
        "the cap counts bytes and nothing else. Each k tile is copy, barrier, compute, barrier, so no load overlaps "
        "any math inside a block; every fragment arrives as generic 32-bit loads (and MOVM transposes for B) issued "
        "by the same schedulers as the HMMA; and every warp waits out its loads' latency."),
    ("05", 3): Prediction(
        _cp_async_cap, lambda: _rate("05_cp_async"), "05_cp_async at N=4096", "{:.0f} TFLOP/s", 0.1,
        "the cap is the load path's alone, and holds only where the copies keep L2 busy every cycle and nothing else "
        "waits. Each block copies its tiles in bursts, one per barrier; every k tile ends at a __syncthreads; and with "
        "two warps per scheduler a warp's fixed-latency waits (an ldmatrix result before its mma.sync, the address "
        "arithmetic) are covered by at most one other warp. The profile under *What limits it* says which dominates.",
        _cp_async_cap_mistakes),
    ("03", 3): Prediction(
        _ldmatrix_ceiling, lambda: _rate("03_mma_sync"), "03_mma_sync at N=4096", "{:.1f} TFLOP/s", 0.2,
        "the ceiling assumes the boost clock and the shared-memory pipe busy every cycle; under load the kernel runs "
        "about a tenth slower (Nsight Compute's clock), and its warps wait most at the HMMAs for their fragments, "
        "not for the global loads (long_scoreboard is a tenth of the stalls)."),
    ("06", 3): Prediction(
        _load_roof_speedup, lambda: _speedup("06_wgmma_wide", "06_wgmma_m64n64"),
        "06_wgmma_wide / 06_wgmma_m64n64 at N=4096", "{:.3f}x", 0.1,
        "two bounds give the ratio of two rates only if both rungs reach the same share of their bound. The narrow "
        "rung sits on the load-path roof (its profile: L2 -> SM at about 99% of chapter 00's LDG probe), but the "
        "wide one stops short of it: every k tile waits at a block barrier and drains its wgmma group (wait_group 0) "
        "before the next can start, and its profile's top stall is that barrier. The model has no term for it."),
    ("10", 5): Prediction(
        _tile_speedup, lambda: _speedup("10_chip", "10_grouped_order", 3072),
        "10_chip / 10_grouped_order at N=3072", "{:.3f}x", 0.1,
        "the napkin prices a tile by its area and one steady rate measured at other sizes. It has no term for the "
        "pipeline's fill and drain around each cluster's first and last tile, nor for how the smaller tile's "
        "extra L2 traffic lands when all clusters start together."),
    ("12", 4): Prediction(
        _fp8_rate, lambda: _speedup("12_fp8", "10_chip", 8192), "12_fp8 / 10_chip at N=8192",
        "{:.3f}x", 0.1,
        "the napkin doubles every part of a tile's time, but only the k loop runs on the tensor pipe. The epilogue "
        "writes the same bf16 C in the same time, and the ring moves the same bytes per stage, now for twice the "
        "FLOP; in a long run the power cap, not the instruction rate, sets the clock."),
    ("07", 5): Prediction(
        _issue_speedup, lambda: _speedup("07_tma", "06_wgmma_wide"), "07_tma / 06_wgmma_wide at N=4096",
        "{:.3f}x", 0.1,
        "the cost of a copy is a guess (ten instructions is the napkin's upper end; five gives a gain half as "
        "large), rung 07's own wait on the slot's mbarrier and thread 0's copies ahead of its warpgroup's wgmmas "
        "are not counted, and the rings differ in depth, which exercise 4 measures."),
}


def _provenance(row) -> str:
    how = {"live": "measured now", "this run": "measured earlier in this run", "recorded": "recorded"}[row.source]
    return f"{how} on {row.gpu}, {row.date}"


def comparison(p: Prediction, mine: float) -> list[str]:
    """The measurement a prediction is held against, where it came from, and how far the prediction was off."""
    from .store import NotRecorded
    try:
        value, rows = p.measured()
    except NotRecorded as err:
        return [f"  nothing to compare with: {err}"]
    where = "; ".join(dict.fromkeys(_provenance(r) for r in rows))
    lines = [f"  measured: {p.what}, {p.unit.format(value)} ({where})"]
    if mine is None or not isinstance(mine, (int, float)):
        return lines
    off = abs(value / mine - 1)
    lines.append(f"  your prediction: {p.unit.format(mine)}; the measurement is {value / mine:.0%} of it, "
                 f"off by {off:.0%}.")
    if off <= p.band:
        return lines + [f"  close: within {p.band:.0%}."]
    return lines + textwrap.wrap(f"off by more than {p.band:.0%}: here is what the model leaves out: {p.leaves_out}",
                                 110, initial_indent="  ", subsequent_indent="    ")


def _expected(chapter: str, x: dict) -> dict:
    """{exercise number: expected answer} for a chapter, from the same explorers and measurements it shows."""
    from .models import conflict_degree, launch_registers, mma_fragment, register_budget, wgmma_desc_encode
    from .ptxas_exercises import _fewest_consumer_regs, _most_blocks, _register_cap
    from .tiles import waves
    if chapter == "10":
        return _ch10(x)
    if chapter == "12":
        from .fp8 import per_tensor_scale, spec
        c = x["c"]
        return {1: 2 * c["BM"] * c["BN"] * c["BK"] / c["STAGE_BYTES"], 2: spec("e4m3").max_finite,
                3: per_tensor_scale([3.5, -1.0], "e4m3")}
    if chapter == "11":
        pairs = [(b, a) for b, a in zip(x["steps"], x["steps"][1:]) if b.dtype == a.dtype]
        return {1: max(pairs, key=lambda p: p[1].tflops / p[0].tflops)[1].rung,
                2: waves(12288, 12288, 256, 256, x["clusters"])["tiles"]}
    table = {
        "00": lambda: {1: x["ffma"] / x["hbm"], 2: SMS * FFMA_FLOP_PER_CLK * 1.6 / 1e3},
        "01": lambda: {1: 2 * 64 * 256 / (4 * (64 + 256)), 2: 4 / 64},
        "02": lambda: {1: 2 * 128 * 128 / (2 * (128 + 128)), 2: x["l2"] * 8},
        "03": lambda: {1: int(mma_fragment("C")[0][13, 6]), 2: 64 // 16 + 64 // 16},
        "04": lambda: {2: conflict_degree("A", "row-major", (64, 64))},
        "05": lambda: {1: 3 * (128 * 64 + 64 * 128) * 2, 2: REGISTER_FILE // (168 * 256)},
        "06": lambda: {1: wgmma_desc_encode(0x4000 + 2 * 32), 2: 256 // 2,
                       4: _register_cap(_consts("06_wgmma_m64n64")["THREADS"], 3), 5: _most_blocks("06_wgmma_m64n64")},
        "07": lambda: {1: (128 * 64 + 128 * 64) * 2, 2: [(kt // 4) & 1 for kt in range(10)]},
        "08": lambda: {1: 2 * (16 // 7), 2: (SMEM_PER_BLOCK_OPTIN - 2 * KIB) // ((128 * 64 + 256 * 64) * 2),
                       **_ring_mistakes(_consts("08_warp_specialized")["STAGES"], _consts("08_same_tile")["STAGES"])},
        "09": lambda: {1: max(v for v in range(24, 257, 8) if register_budget(24, v, 3)["fits"]),
                       2: launch_registers(384), 3: _fewest_consumer_regs()},
    }
    return table[chapter]()


def _predicted(chapter: str, x: dict) -> dict:
    """{exercise number: the napkin's number} for a chapter's predict-then-measure exercises."""
    return {i: p.model(x) for (ch, i), p in PREDICTIONS.items() if ch == chapter}


TOLERANCE = {"00": 0.03, "01": 0.01, "02": 0.02, "12": 0.01}  # relative, for answers worked out from measured numbers
TOLERANCE.update({key: 0.05 for key in PREDICTIONS})  # (chapter, exercise): a napkin worked with rounded numbers

def tolerance_note(chapter: str) -> str:
    """The sentence each chapter's exercises open with, stating how close a number must be to count (TOLERANCE);
    tests/test_exercises.py holds every chapter's prose to it word for word ("" for a chapter of exact answers)."""
    base = TOLERANCE.get(chapter)
    preds = sorted(i for ch, i in PREDICTIONS if ch == chapter)
    which = " and ".join(map(str, preds))
    pred = f"the prediction of exercise {which} counts within {TOLERANCE[chapter, preds[0]]:.0%} of the napkin's" \
        if preds else ""
    if base:
        return f"A numeric answer counts within {base:.0%} of the expected one" + (f"; {pred}." if pred else ".")
    return f"{pred[0].upper()}{pred[1:]}; the other answers must be exact." if pred else ""


# The wrong answers people give most, as factors of the right one, and what each one usually means.
HINTS = ((2.0, "twice the answer: a factor of 2 counted once too often (an FMA is 2 FLOP, a bf16 value 2 bytes, "
               "a tile has two operands)"),
         (0.5, "half the answer: a factor of 2 left out (an FMA is 2 FLOP, a bf16 value 2 bytes, a tile has two "
               "operands)"),
         (1e3, "1,000 times the answer: check the unit asked for (TB/s, not GB/s; TFLOP/s, not GFLOP/s)"),
         (1e-3, "a thousandth of the answer: check the unit asked for (TB/s, not GB/s; TFLOP/s, not GFLOP/s)"),
         (1024.0, "1,024 times the answer: check the unit asked for (KiB against bytes)"),
         (1 / 1024, "a 1,024th of the answer: check the unit asked for (bytes against KiB)"))


def _hint(mine, expected, rel: float, mistakes: tuple = ()) -> str:
    """Why an answer is off, when it is off in one of the usual ways (an exercise's own `mistakes`, (wrong answer,
    what it got wrong) pairs, first; a list must equal one); else how close a number must come."""
    if isinstance(mine, (list, tuple)):
        said = next((why for wrong, why in mistakes if isinstance(wrong, list) and list(mine) == wrong), None)
        if said:
            return f": {said}"
        if isinstance(expected, list) and len(mine) != len(expected):
            return f": {len(expected)} values are asked for, and the list has {len(mine)}"
        return ""
    if not isinstance(mine, (int, float)) or not isinstance(expected, (int, float)) or not expected or not mine:
        return ""
    slack = max(rel, 0.02)
    for wrong, why in mistakes:
        if wrong and abs(mine / wrong - 1) <= slack:
            return f": {why}"
    for factor, why in HINTS:
        if abs(mine / (expected * factor) - 1) <= slack:
            return f": {why}"
    if abs(expected - 1) > slack and abs(mine * expected - 1) <= slack:
        return ": that is the inverse of the answer; check which quantity goes on top"
    return f" (answers within {rel:.0%} count)" if rel else ""


def mark(name: str, mine, expected, rel: float = 0.0, mistakes: tuple = ()) -> str:
    """One verdict. `expected` is a value, or a CPU model that judges the answer: (answer) -> (right?, why);
    `mistakes` are the usual wrong answers of a numeric one, each with what it got wrong."""
    if mine is None:
        return f"{name}: fill in your answer above, then run this cell again."
    if callable(expected):
        ok, why = expected(mine)
        return f"{name}: correct" if ok else f"{name}: not yet: {why}"
    if rel:
        # the tolerance is a bound a reader reads as inclusive: 1.9 against 2.0 within 5% must pass, though
        # 1.9 / 2.0 - 1 is -0.050000000000000044 in binary floating point
        ok = isinstance(mine, (int, float)) and abs(mine / expected - 1) <= rel + 1e-9
    else:
        ok = list(mine) == expected if isinstance(mine, tuple) and isinstance(expected, list) else mine == expected
    return f"{name}: correct" if ok else f"{name}: not yet{_hint(mine, expected, rel, mistakes)}"


def grade(chapter: str, answers: dict, **context) -> None:
    """Print one verdict per exercise of `chapter`; `context` passes what the answers depend on (measured
    ceilings, the kernel's constants, the number of clusters). A prediction that matches the napkin is then held
    against the measurement (this run's, or the recorded one), and the report says which it was."""
    expected = {**_expected(chapter, context), **_predicted(chapter, context)}
    mistakes = _usual(chapter, context)
    for i, mine in answers.items():
        usual = mistakes.get(i, ()) + (PREDICTIONS[chapter, i].mistakes(context) if (chapter, i) in PREDICTIONS else ())
        said = mark(f"exercise {i}", mine, expected[i], TOLERANCE.get((chapter, i), TOLERANCE.get(chapter, 0.0)), usual)
        print(said)
        if (chapter, i) in PREDICTIONS and mine is not None:
            right = said.endswith("correct")
            lines = comparison(PREDICTIONS[chapter, i], mine if right else None)
            print("\n".join(lines if right else lines + ["  once your prediction matches the napkin, the check "
                                                          "says how far the measurement is from it."]))


def swizzle_mark(name: str, fn, shape=(32, 128)) -> str:
    """A swizzle must be a permutation of each row's 16-byte chunks (else it loses data) and conflict-free."""
    from .models import conflict_degree
    rows, cols = shape
    chunks = cols * 2 // 16
    for row in range(rows):
        seen = sorted(fn(row, chunk) for chunk in range(chunks))
        if seen != list(range(chunks)):
            return (f"{name}: not yet: row {row} maps its {chunks} chunks onto {len(set(seen))} distinct slots "
                    f"(a swizzle must permute the chunks of a row, or data is overwritten)")
    got = conflict_degree("B", fn, shape)
    return f"{name}: " + ("correct" if got == 1 else f"not yet ({got:.0f} wavefronts per phase)")
