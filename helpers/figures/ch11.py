"""Chapter 11 (the climb): where the final rung's time goes, size by size, beside the contender's time. Not a picture
but a table: a budget computed from recorded data only, so a new run rewrites every line.

    budget        one dict per measured size of a rung: its time split into math, clock, tail, fills, epilogue and
                  what is left, with the contender's time
    budget_table  the budget as printed text, the estimated lines marked

Every line is a time in microseconds of one call. Which are measurements and which estimates:
- math: the FLOPs at the probe's tensor peak (ceiling `hgmma_peak`, wgmmas on zero operands), a measured ceiling.
- clock: the same FLOPs at the SM clock the rung ran at under load (Nsight Compute's elapsed-cycle rate in its recorded
  profile, at the nearest profiled size: an estimate at the sizes that were not profiled), less the math line.
- tail: wave quantization, the chip idle in the last wave (helpers.tiles.waves): a napkin, an estimate.
- fills: what TMA fills landing beside back-to-back wgmmas cost the tensor pipe in the chapter's fills probe (on its
  own lease and clock), at the fill rate the rung landed (its profile's, scaled by the tile's bytes per FLOP): an
  estimate, priced on the clock-bound math.
- epilogue: a traced kernel's epilogue (the chapter passes the cooperative kernel: the final rung's SASS but for the
  tile order; cycles per tile, scaled by the tile's area) times the busiest CTA's tiles: an estimate.
- left: the measured time less every line above; negative where the estimates overlap.
"""
from __future__ import annotations

from ..hardware import SMS, TENSOR_FLOP_PER_CLK

LINES = ("math", "clock", "tail", "fills", "epilogue", "left")
ESTIMATED = ("clock", "tail", "fills", "epilogue")


def _fill_per_clk(bm: int, bn: int) -> float:
    """Bytes a BM x BN tile's ring stages land per SM clock at the tensor peak (bf16: bytes a FLOP = elements a MAC)."""
    return TENSOR_FLOP_PER_CLK * (bm + bn) / (bm * bn)


def budget(rows, with_fills, traced: dict, rung_id: str = "10_chip") -> list[dict]:
    """The budget of `rung_id` at every square size among `rows` (helpers.ladder.Row, its tile as launched), sorted by
    size: each line in microseconds of one call (see the module's docstring), the measured time `us`, the contender's
    `cublas_us`, the `gap` between them, and what each line was computed from (`clock_mhz`, `efficiency`, `busiest`,
    `fill_per_clk`, `fill_vs_no_fill`). The two measurements made outside the book's run come in as arguments, from
    the chapter: `with_fills(bytes_per_clk)`, the fills probe's build landing that many bytes a clock (its
    `vs_no_fill`), and `traced`, a traced kernel's `tile` and `epilogue` cycles per tile."""
    from ..ceilings import ceiling
    from ..demos import persistent_grid
    from ..tiles import waves
    from .profile import port_of, recorded_profile
    from ..hardware import SMEM_BYTES_PER_CLK

    peak = ceiling("hgmma_peak").value * 1e12
    grid = persistent_grid(rung_id)
    profiled = {n: (recorded_profile(rung_id, n), port_of(rung_id, n)) for n in (4096, 8192)}
    tbm, tbn = traced["tile"]
    out = []
    for r in sorted((r for r in rows if r.rung == rung_id and r.m == r.n == r.k and r.has_number), key=lambda r: r.n):
        n, (bm, bn) = r.n, r.tile
        prof, port = profiled[min(profiled, key=lambda p: abs(p - n))]
        hz = prof["sm_clock_mhz"] * 1e6
        flop = 2 * n ** 3
        us, cublas_us = (flop / (t * 1e12) * 1e6 for t in (r.tflops, r.cublas_tflops))
        math = flop / peak * 1e6
        at_clock = flop / (SMS * TENSOR_FLOP_PER_CLK * hz) * 1e6
        w = waves(n, n, grid["cluster"] * bm, bn, grid["clusters"])
        tail = at_clock * (1 / w["efficiency"] - 1)
        fill = port["smem_fill_pct"] / 100 * SMEM_BYTES_PER_CLK * _fill_per_clk(bm, bn) / _fill_per_clk(tbm, tbn)
        near = with_fills(fill)
        fills = at_clock * (1 / near["vs_no_fill"] - 1)
        epilogue = w["busiest"] * traced["epilogue"] * (bm * bn) / (tbm * tbn) / hz * 1e6
        lines = {"math": math, "clock": at_clock - math, "tail": tail, "fills": fills, "epilogue": epilogue}
        lines["left"] = us - sum(lines.values())
        out.append({"n": n, "tile": (bm, bn), **lines, "us": us, "cublas_us": cublas_us, "gap": us - cublas_us,
                    "clock_mhz": hz / 1e6, "efficiency": w["efficiency"], "busiest": w["busiest"],
                    "fill_per_clk": fill, "fill_vs_no_fill": near["vs_no_fill"]})
    return out


def budget_table(lines: list[dict]) -> str:
    """The budget as a table, one size a line, microseconds of one call; the estimated lines carry a `~`."""
    head = "".join(f"{('~' if k in ESTIMATED else '') + k:>10}" for k in LINES)
    out = [f"{'N':>6} {'tile':>9}{head}{'rung':>10}{'cuBLAS':>10}{'gap':>9}"]
    for b in lines:
        tile = f"{b['tile'][0]}x{b['tile'][1]}"
        out.append(f"{b['n']:>6} {tile:>9}" + "".join(f"{b[k]:>10.1f}" for k in LINES) +
                   f"{b['us']:>10.1f}{b['cublas_us']:>10.1f}{b['gap']:>9.1f}")
    out.append("microseconds of one call; ~ an estimate (clock at the nearest profiled size, wave napkin, the "
               "fills probe's price of the fills, the traced epilogue scaled by tile area); left = rung - the rest")
    return "\n".join(out)
