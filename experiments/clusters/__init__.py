"""Readers of the cluster-shapes experiment's record (record.json, written by its runner outside the book's run), as
chapter 10 shows them: table, profiles, fig_shapes; SHAPES and l2_kib, the bytes each shape's multicast leaves."""
from __future__ import annotations

import json
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")
SHAPES = ("1 x 1", "2 x 1", "1 x 2", "2 x 2")    # CLUSTER_M x CLUSTER_N


def record() -> dict:
    return json.loads(RECORD.read_text())


def l2_kib(cm: int, cn: int, bm: int = 128, bn: int = 256, bk: int = 64) -> float:
    """KiB a CTA pulls from L2 per k tile in clusters of cm x cn: its share of A (shared by the cn CTAs of its row)
    and of B (shared by the cm CTAs of its column), bf16."""
    return (bm * bk / cn + bn * bk / cm) * 2 / 1024


def table(rec: dict | None = None) -> None:
    """Print the record's timings: per shape, TFLOP/s of each cluster shape and of rung 10 as it launches, each with
    its ratio to the fastest cuBLAS of the same rounds, and the grids the driver's count gave."""
    rec = rec or record()
    env = rec["env"]["time"]
    names = (*SHAPES, "rung 10")
    print(f"experiments/clusters, {env['name']}, {env['date']}, outside the book's run; TFLOP/s (/ cuBLAS)")
    print(f"{'M x N x K':<18}" + "".join(f"{x:>15}" for x in names) + f"{'cuBLAS':>8}")
    for row in rec["time"]:
        print(f"{'x'.join(map(str, row['shape'])):<18}"
              + "".join(f"{row[x]['tflops']:>7.1f} ({row[x]['ratio']:.3f})" for x in names)
              + f"{row['cublas_best']['tflops']:>8.1f}")
    grids = {x: {row[x]["grid"] for row in rec["time"] if min(row["shape"][:2]) >= 4096} for x in SHAPES}
    print("CTAs launched from N = 4096 up: "
          + ", ".join(f"{x} {'/'.join(map(str, sorted(g)))}" for x, g in grids.items()))


def profiles(rec: dict | None = None) -> None:
    """Print the record's Nsight Compute profiles at N = 8192, as chapter profiles print."""
    from helpers.profile import table as profile_table
    rec = rec or record()
    print(f"experiments/clusters, {rec['env']['profile']['date']}:")
    print(profile_table(rec["profile"].values()))


def fig_shapes(rec: dict | None = None, ax=None):
    """Each cluster shape's TFLOP/s as a fraction of the 2 x 1 build's in the same rounds, at every square N the record
    timed, beside the L2 bytes per CTA per k tile that the shape's multicast leaves (the legend)."""
    from helpers.figures.common import axes, clean
    rec = rec or record()
    ax = axes(ax, (6.0, 3.2))
    rows = [r for r in rec["time"] if len(set(r["shape"])) == 1]
    ns = [r["shape"][0] for r in rows]
    styles = {"1 x 1": ("0.55", "o"), "2 x 1": ("tab:blue", "s"), "1 x 2": ("tab:orange", "^"),
              "2 x 2": ("tab:red", "D")}
    for name in SHAPES:
        cm, cn = (int(x) for x in name.split(" x "))
        colour, marker = styles[name]
        ax.plot(range(len(ns)), [r[name]["tflops"] / r["2 x 1"]["tflops"] for r in rows], marker=marker, color=colour,
                label=f"{name}: {l2_kib(cm, cn):.0f} KiB a k tile from L2")
    ax.axhline(1.0, color="0.8", lw=0.8, zorder=0)
    ax.set_xticks(range(len(ns)), [f"{n}" for n in ns])
    ax.set_xlabel("N (M = N = K)")
    ax.set_ylabel("TFLOP/s / 2 x 1's")
    ax.set_title("Cluster shapes, same rounds (experiments/clusters, outside the run)", fontsize=9)
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
              title="CTAs (M x N): bytes a CTA pulls", title_fontsize=9)
    clean(ax)
    return ax
