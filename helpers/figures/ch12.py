"""Chapter 12 (FP8): conceptual figures, each drawn from the models in helpers/fp8.py and, for the ring stage,
from rung 10's own constants (`build("10_chip").consts`). Each `fig_*` takes an optional Axes and returns
the Axes it drew on.

    fig_fp8_bit_layouts   bf16, e4m3 and e5m2 bit by bit, with bias, range and precision computed from the format
    fig_fp8_number_line   every positive e4m3 and e5m2 value on a log axis, and the gap to the next one
    fig_fp8_scaling       |x| of outlier-heavy data against e4m3's range, stored as is and per-tensor scaled
    fig_fp8_stage_bytes   rung 10's 48 KiB ring stage in bf16 (BK = 64) against FP8 (BK = 128)
"""
from __future__ import annotations

import numpy as np

from .. import formats, fp8
from ..hardware import FP8_RATE, KIB, SWIZZLE_ROW, TENSOR_FLOP_PER_CLK
from .common import A_COLOUR, B_COLOUR, axes, clean

FIELD_COLOURS = {"sign": "0.55", "exponent": "tab:blue", "mantissa": "tab:orange"}
FORMAT_COLOURS = {"e4m3": "tab:purple", "e5m2": "tab:green", "bf16": "tab:gray"}


def _num(v: float) -> str:
    """A format constant as the reader wants it: integers with thousands separators, powers of two by name."""
    if v >= 1 and float(v).is_integer() and v < 1e6:
        return f"{v:,.0f}"
    exponent = np.log2(v)
    if float(exponent).is_integer():
        return f"2^{exponent:.0f} = {v:.3g}"
    return f"{v:.3g}"


def _special_codes(f: formats.Format) -> str:
    e, m = "1" * f.exp_bits, f.man_bits
    if f.ieee:
        return f"S.{e}.{'0' * m} = inf,  S.{e}.(not 0) = NaN"
    return f"S.{e}.{'1' * m} = NaN (the only one), no inf"


def fig_fp8_bit_layouts(ax=None):
    """One row per format, one box per bit (sign, exponent, mantissa), and beside it what those widths give:
    the exponent bias, the largest finite value, the smallest normal and subnormal, and the relative step."""
    from matplotlib.patches import Patch, Rectangle
    ax = axes(ax, (9.2, 4.6))  # the numbers go beside the bits in four lines, to fit the book's column
    names = ("bf16", "e4m3", "e5m2")
    for row, name in enumerate(names):
        f = formats.spec(name)
        y = row * 1.6
        fields = ["sign"] + ["exponent"] * f.exp_bits + ["mantissa"] * f.man_bits
        for i, field in enumerate(fields):
            ax.add_patch(Rectangle((i, y), 0.94, 0.9, fc=FIELD_COLOURS[field], ec="white"))
            ax.text(i + 0.47, y + 0.45, str(f.bits - 1 - i), ha="center", va="center", fontsize=8, color="white")
        ax.text(-0.4, y + 0.45, name, ha="right", va="center", fontsize=11, weight="bold")
        ax.text(0, y - 0.08, f"1 + {f.exp_bits} + {f.man_bits} bits", fontsize=8, va="bottom", color="dimgray")
        ax.text(17.0, y + 0.45,
                f"bias {f.bias}    max finite {_num(f.max_finite)}\n"
                f"smallest normal {_num(f.min_normal)}    smallest subnormal {_num(f.min_subnormal)}\n"
                f"relative step 2^-{f.man_bits} = {f.eps:g} (rounding error <= {f.unit_roundoff:g})\n"
                f"{_special_codes(f)}", va="center", fontsize=8.5, family="monospace")
    ax.legend(handles=[Patch(color=c, label=k) for k, c in FIELD_COLOURS.items()], loc="upper left",
              bbox_to_anchor=(0.0, -0.02), ncol=3, fontsize=8, frameon=False)
    ax.set(xlim=(-2.2, 36), ylim=(len(names) * 1.6 - 0.3, -0.6))
    ax.set_axis_off()
    e4, e5 = formats.spec("e4m3"), formats.spec("e5m2")
    ax.set_title(f"Same 8 bits, two trade-offs: e4m3 keeps a third mantissa bit (max {_num(e4.max_finite)}),\n"
                 f"e5m2 keeps a fifth exponent bit (max {_num(e5.max_finite)})", fontsize=10.5)
    return ax


def fig_fp8_number_line(ax=None):
    """Every positive value of e4m3 and e5m2 (from formats.grid) on log axes: x is the value, y the gap to the next
    one up. Flat among the subnormals (a fixed step), then a staircase that doubles every binade, so the gap stays
    a fixed fraction of the value: 2^-3 to 2^-4 for e4m3, 2^-2 to 2^-3 for e5m2. Ticks along the bottom: the values
    themselves."""
    ax = axes(ax, (9.2, 5.4))
    for lane, name in enumerate(("e4m3", "e5m2")):
        f, colour = formats.spec(name), FORMAT_COLOURS[name]
        g = formats.grid(name)
        g = g[g > 0]
        gaps = formats.spacing(g, name)
        per_binade = int(np.sum((g >= 1) & (g < 2)))
        ax.step(g, gaps, where="post", color=colour, lw=1.6,
                label=f"{name}: {len(g)} positive values, {per_binade} per binade, gap = value x 2^-{f.man_bits} "
                      f"at each power of two")
        ax.plot(g, gaps, "o", ms=2.2, color=colour)
        ax.vlines(g, 0.02 + 0.05 * lane, 0.06 + 0.05 * lane, transform=ax.get_xaxis_transform(), color=colour,
                  lw=0.5)
        ax.annotate(f"max {_num(f.max_finite)}", (g[-1], gaps[-1]), xytext=(6, 6), textcoords="offset points",
                    fontsize=8.5, color=colour)
        ax.annotate(f"smallest subnormal 2^{np.log2(g[0]):.0f}\n(the gap is the value itself)", (g[0], gaps[0]),
                    xytext=(-4, 66), textcoords="offset points", fontsize=8, color=colour, ha="left",
                    bbox=dict(fc="white", ec="none", alpha=0.85), arrowprops=dict(arrowstyle="-", color=colour))
        ax.axvline(f.min_normal, color=colour, ls=":", lw=0.8)
        ax.text(f.min_normal, 0.97, f" {name} normals ->", transform=ax.get_xaxis_transform(), fontsize=8,
                color=colour, va="top")
    e4, e5 = formats.spec("e4m3"), formats.spec("e5m2")
    ax.set(xscale="log", yscale="log", xlabel="representable value (log); ticks at the bottom: one per value",
           ylabel="gap to the next value up (log)", ylim=(e5.min_subnormal / 60, e5.max_finite * 20))
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.93))
    clean(ax)
    ax.set_title(f"Every positive FP8 value: the gap doubles each binade, so precision is relative;\ne5m2 keeps half "
                 f"the values per binade and reaches 2^{np.log2(e5.max_finite / e4.max_finite):.0f} further "
                 f"at both ends", fontsize=10)
    return ax


def fig_fp8_scaling(ax=None, demo: fp8.ScalingDemo | None = None, seed: int = 0):
    """Histogram of |x| for activation-like data with outliers (fp8.scaling_demo), as stored without a scale and
    after dividing by the per-tensor scale, against e4m3's zones: flushed to zero, subnormal, normal, saturated."""
    d = demo if demo is not None else fp8.scaling_demo(np.random.default_rng(seed))
    f = formats.spec(d.fmt)
    ax = axes(ax, (9.2, 5.2))
    mag = np.abs(d.data[d.data != 0]).astype(np.float64)
    scaled = mag / d.scaled.scale
    lo = min(mag.min(), scaled.min(), f.min_subnormal) / 4
    hi = max(mag.max(), f.max_finite) * 4
    bins = np.logspace(np.log10(lo), np.log10(hi), 120)
    flush = f.min_subnormal / 2
    zones = [(lo, flush, "tab:red", "flushed to 0"), (flush, f.min_normal, "gold", "subnormal:\nfewer bits"),
             (f.min_normal, f.max_finite, "tab:green", f"normal: rel. error <= 2^-{f.man_bits + 1}"),
             (f.max_finite, hi, "tab:red", f"saturates to {_num(f.max_finite)}")]
    for a, b, colour, label in zones:
        ax.axvspan(a, b, color=colour, alpha=0.08)
        ax.text(np.sqrt(a * b), 0.98, label, transform=ax.get_xaxis_transform(), ha="center", va="top",
                fontsize=8, color=colour if colour != "gold" else "darkgoldenrod")
    for v in (flush, f.min_normal, f.max_finite):
        ax.axvline(v, color="0.3", lw=0.8, ls="--")
    u, s = d.unscaled, d.scaled
    n_u = ax.hist(mag, bins=bins, histtype="step", lw=1.6, color="0.35",
                  label=f"stored as is: {u.flushed:.2%} flushed, {u.saturated:.3%} saturated, "
                        f"dot-product error {u.dot_rel_err:.1%}")[0]
    n_s = ax.hist(scaled, bins=bins, histtype="step", lw=1.6, color="tab:blue",
                  label=f"divided by amax / {_num(f.max_finite)} = {s.scale:.3g}: {s.flushed:.2%} flushed, "
                        f"{s.saturated:.3%} saturated, dot-product error {s.dot_rel_err:.1%}")[0]
    # a decade of headroom, so the zone labels sit above the peaks
    ax.set(xscale="log", yscale="log", xlabel=f"|x| as handed to the {f.name} conversion (log)",
           ylabel="values per bin (log)", ylim=(0.5, 10 * max(n_u.max(), n_s.max())))
    rows, k = d.data.shape
    ax.legend(fontsize=8.5, loc="upper left", bbox_to_anchor=(0.0, -0.13), frameon=False,
              title=f"{rows} x {k} values; error of {rows} dot products of length {k}", title_fontsize=8)
    clean(ax)
    ax.set_title(f"Per-tensor scaling slides the histogram until amax lands on {_num(f.max_finite)}:\nthe outliers "
                 f"stop saturating, the bulk moves toward the subnormals", fontsize=10)
    return ax


def fig_fp8_stage_bytes(ax=None, rung_id: str = "10_chip"):
    """One ring stage of rung 10 (its BM, BN, BK and STAGE_BYTES, read from the kernel) in bf16 against rung 12's
    FP8 stage (checked against its kernel too), which keeps every box row at 128 bytes: BK doubles to 128, the bytes stay 48 KiB, the FLOP double. The
    FP8 tensor rate doubles too, so both stages last the same number of clocks at peak."""
    from matplotlib.patches import Patch
    from ..compiler import build
    c = build(rung_id).consts
    bf16, e4m3 = formats.ITEMSIZE["bf16"], formats.ITEMSIZE["e4m3"]
    rows = [("bf16", fp8.stage(c["BM"], c["BN"], c["BK"], bf16), TENSOR_FLOP_PER_CLK),
            ("e4m3", fp8.stage(c["BM"], c["BN"], SWIZZLE_ROW, e4m3), FP8_RATE * TENSOR_FLOP_PER_CLK)]
    c8 = build("12_fp8").consts
    for (_, s, _), k in zip(rows, (c, c8)):
        if s["bytes"] != k["STAGE_BYTES"] or s["bk"] != k["BK"]:
            raise ValueError(f"the stage model gives {s['bytes']} B and BK = {s['bk']}, but the kernel has "
                             f"STAGE_BYTES = {k['STAGE_BYTES']} and BK = {k['BK']}: update fp8.stage to the kernel")
    ax = axes(ax, (9.2, 4.0))
    for y, (name, s, rate) in enumerate(rows):
        a, b = s["a_bytes"] / KIB, s["b_bytes"] / KIB
        ax.barh(y, a, color=A_COLOUR, edgecolor="white", height=0.55)
        ax.barh(y, b, left=a, color=B_COLOUR, edgecolor="white", height=0.55)
        ax.text(a / 2, y, f"A [{c['BM']}, {s['bk']}]\n{a:.0f} KiB", ha="center", va="center", fontsize=8)
        ax.text(a + b / 2, y, f"B [{c['BN']}, {s['bk']}]\n{b:.0f} KiB", ha="center", va="center", fontsize=8)
        ax.text(a + b + 1.5, y,
                f"BK = {s['bk']} {name} = {s['row_bytes']} B per box row;\n{s['flop'] / 1e6:.2f} MFLOP per stage "
                f"= {s['flop_per_byte']:.0f} FLOP per byte\n"
                f"{s['flop'] / rate:,.0f} clocks at {rate:,} FLOP/clk/SM;\nx {c['STAGES']} stages = "
                f"{c['STAGES'] * s['bytes'] // KIB} KiB of ring", va="center", fontsize=8.5)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{rung_id}\n(bf16)", "12_fp8\n(e4m3)"], fontsize=9)
    ax.set(xlim=(0, 84), ylim=(len(rows) - 0.5, -0.5), xlabel="KiB per ring stage")
    ax.set_xticks(range(0, 49, 8))
    ax.legend(handles=[Patch(color=A_COLOUR, label="A box"), Patch(color=B_COLOUR, label="B box")],
              fontsize=8, loc="lower right", frameon=False)
    clean(ax)
    ax.set_title(f"Same {c['STAGE_BYTES'] // KIB} KiB stage, twice the k: FP8 doubles the FLOP per byte,\nand its "
                 f"doubled tensor rate spends them in the same clocks", fontsize=10)
    return ax
