"""Readers of the ping-pong experiment's record (record.json, written by its runner outside the book's run), as
chapter 10 shows them: table, phases, profiles, control, followups, fig_trace, and diff, the experiment's kernel
against chapter 10's file. The builds themselves (VARIANTS, CONTROL, source) live in build.py."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from helpers.hardware import TENSOR_FLOP_PER_CLK

from .build import BASE, CONTROL, VARIANTS, source

RECORD = Path(__file__).with_name("record.json")


def record() -> dict:
    return json.loads(RECORD.read_text())


def diff() -> None:
    """Show what the switch PINGPONG changes in the experiment's kernel: every line of pingpong.cu that reads it (the
    tile height, the readers per slot, the consumers' rows), then the diff of the built text with its `if constexpr`
    branches resolved at PINGPONG = 0 and 1 (the turns). At PINGPONG = 0 the file builds 10_grouped_order's SASS."""
    import difflib
    from helpers.csource import resolve_switches
    from helpers.listing import display_code
    text = source()
    reads = [f"{i:4} {line}" for i, line in enumerate(text.splitlines(), 1)
             if ("PINGPONG" in line or "SLOT_READERS" in line) and not line.lstrip().startswith("//")]
    display_code("// experiments/pingpong/pingpong.cu: the lines that read the switch\n" + "\n".join(reads), "cuda")
    lines = difflib.unified_diff(resolve_switches(text).splitlines(),
                                 resolve_switches(source({"PINGPONG": 1})).splitlines(),
                                 "pingpong.cu, PINGPONG = 0", "pingpong.cu, PINGPONG = 1", n=1, lineterm="")
    display_code("\n".join(lines), "diff")


def consts(name: str) -> dict:
    """The constants of one of VARIANTS as built (BM, BN, BK, STAGES, STAGE_BYTES, ...)."""
    from helpers.kernel import kernel
    from helpers.registry import rung
    return kernel(rung(BASE), source(VARIANTS[name])).consts


def phases(name: str, rec: dict | None = None, part: str | None = None) -> dict:
    """One variant's trace in the record (CTA 0's consumers, one launch), as medians over its tiles, in SM cycles: a
    tile's k loop (from its turn to its last wgmma group done), per k tile, its epilogue (to the last store issued)
    and the wait from there to the consumer's next turn. `pipe` is the share of the tensor pipe the k loop keeps
    busy: the FLOPs of one k tile of a tile (both consumers' halves, in the cooperative kernel) at
    TENSOR_FLOP_PER_CLK, over the cycles it took. `landing` is the bytes a k tile's stage lands in shared memory per
    cycle of it; `span` the cycles CTA 0 took for its tiles. `part`: a later part of the record with its own trace
    and constants (the runner's square, single and issue parts)."""
    rec = rec or record()
    c, trace = (rec[part]["consts"][name], rec[part]["trace"]) if part else (consts(name), rec["trace"])
    k_tiles = trace["shape"][2] // c["BK"]
    loop, epilogue, wait = [], [], []
    for stamps in trace[name]:
        tiles = [t for t in stamps if t[1] > 0]
        for i, (start, drained, stored) in enumerate(tiles):
            loop.append(drained - start)
            epilogue.append(stored - drained)
            if i + 1 < len(tiles):
                wait.append(tiles[i + 1][0] - stored)
    per_k = float(np.median(loop)) / k_tiles
    ideal = 2 * c["BM"] * c["BN"] * c["BK"] / TENSOR_FLOP_PER_CLK
    return {"k_loop": float(np.median(loop)), "per_k_tile": per_k, "ideal_per_k_tile": ideal, "pipe": ideal / per_k,
            "epilogue": float(np.median(epilogue)), "wait": float(np.median(wait)) if wait else 0.0,
            "landing": c["STAGE_BYTES"] / per_k, "stages": c["STAGES"], "tile": (c["BM"], c["BN"]),
            "span": int(max(t[2] for stamps in trace[name] for t in stamps))}


def table(rec: dict | None = None) -> None:
    """Print the record's timings: each shape, each variant's TFLOP/s and its ratio to the fastest cuBLAS timed in
    the same rounds."""
    rec = rec or record()
    names = [*VARIANTS, "rung 10"]
    env = rec["env"]["time"]
    print(f"experiments/pingpong on {env['name']} ({env['date']}), outside the book's run; TFLOP/s (ratio to cuBLAS)")
    print(f"{'M x N x K':<18}" + "".join(f"{x:>22}" for x in names) + f"{'cuBLAS':>9}")
    for row in rec["time"]:
        cells = "".join(f"{row[x]['tflops']:>14.1f} ({row[x]['ratio']:.3f})" for x in names)
        print(f"{'x'.join(map(str, row['shape'])):<18}{cells}{row['cublas_best']['tflops']:>9.1f}")


def profiles(rec: dict | None = None) -> None:
    """Print the record's Nsight Compute profiles of the variants at N = 8192, as chapter profiles print."""
    from helpers.profile import table as profile_table
    rec = rec or record()
    print(f"experiments/pingpong, {rec['env']['profile']['date']}:")
    print(profile_table(rec["profile"].values()))


def control(rec: dict | None = None) -> None:
    """Print the control: the five-stage ping-pong with its grouped order's patch of C as tall as the cooperative
    kernel's, timed beside both, and its DRAM bytes at N = 8192 beside theirs."""
    rec = rec or record()
    ctl = rec["control"]
    print(f"experiments/pingpong control, {rec['env']['control']['date']}; TFLOP/s (ratio to cuBLAS):")
    for row in ctl["time"]:
        cells = ", ".join(f"{x} {row[x]['tflops']:.1f} ({row[x]['ratio']:.3f})" for x in CONTROL)
        print(f"  {'x'.join(map(str, row['shape']))}: {cells}")
    dram = {**{x: rec["profile"][x]["dram_bytes"] for x in VARIANTS}, **{
        x: e["dram_bytes"] for x, e in ctl["profile"].items()}}
    print("DRAM GB at N = 8192 (Nsight Compute): " + ", ".join(f"{x} {v / 1e9:.2f}" for x, v in dram.items()))


def followups(rec: dict | None = None) -> None:
    """Print the follow-up experiments (the runner's square, single and issue parts), each from its own lease: per
    build, the trace's k tile in cycles against the tensor pipe's rate, the bytes landing per cycle, the epilogue,
    and TFLOP/s at the shapes every part timed (N = 4096, 8192 and 8192 x 8192 x 1024, "K=1024")."""
    rec = rec or record()
    shapes = [(4096,) * 3, (8192,) * 3, (8192, 8192, 1024)]
    print(f"{'build':<33}{'tile':>8}{'stages':>7}{'k tile':>7}{'of pipe':>8}{'B/cycle':>8}{'epilogue':>9}"
          f"{'TFLOP/s: 4096/8192/K=1024':>27}")
    for part, names in (("square", ("cooperative", "ping-pong, 5 stages", "ping-pong, 128 x 128")),
                        ("single", ("cooperative", "ping-pong, 5 stages", "one consumer, 64 x 256")),
                        ("issue", ("cooperative", "cooperative, two groups", "one consumer", "one consumer, two groups",
                                   "ping-pong, 5 stages, two groups"))):
        print(f"experiments/pingpong {part}, {rec['env'][part]['date']}:")
        rows = {tuple(r["shape"]): r for r in rec[part]["time"]}
        for name in names:
            ph = phases(name, rec, part)
            rates = " / ".join(f"{rows[s][name]['tflops']:.1f}" for s in shapes)
            print(f"  {name:<31}{'x'.join(map(str, ph['tile'])):>8}{ph['stages']:>7}{ph['per_k_tile']:>7.0f}"
                  f"{ph['pipe']:>8.0%}{ph['landing']:>8.1f}{ph['epilogue']:>9.0f}{rates:>27}")


def fig_trace(names=("cooperative", "ping-pong, 5 stages"), rows: int = 384, ax=None):
    """CTA 0's two consumers in one launch of each variant at the record's shape (8192 x 8192 x 1024), over the tiles
    that make its first `rows` rows of C: each tile's k loop (coloured, numbered in the CTA's tile order) and its
    epilogue (grey), from clock64 stamps. In the cooperative kernel the consumers share each tile and write C
    together; in ping-pong each takes every other tile, half as tall."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from helpers.figures.common import clean
    rec = record()
    axs = ax if ax is not None else plt.subplots(len(names), 1, figsize=(9.2, 1.6 + 1.25 * len(names)), sharex=True)[1]
    axs = np.atleast_1d(axs)
    horizon = 0
    for a, name in zip(axs, names):
        stamps, ph = rec["trace"][name], phases(name, rec)
        per_consumer = rows // ph["tile"][0] // (1 if name == "cooperative" else 2)
        for y, consumer in enumerate(stamps):
            done = [t for t in consumer if t[1] > 0][:per_consumer]
            for j, (start, drained, stored) in enumerate(done):
                number = j if name == "cooperative" else 2 * j + y
                a.barh(y, drained - start, left=start, height=0.6, color="tab:red" if number % 2 else "tab:orange")
                a.barh(y, stored - drained, left=drained, height=0.6, color="0.6")
                a.text((start + drained) / 2, y, str(number), ha="center", va="center", fontsize=8, color="white")
                horizon = max(horizon, stored)
        a.set_yticks([0, 1], ["consumer 0", "consumer 1"])
        a.invert_yaxis()
        clean(a)
        a.set_title(f"{name}: {ph['tile'][0]} x {ph['tile'][1]} tiles, {ph['stages']} stages; a k tile takes "
                    f"{ph['per_k_tile']:.0f} cycles against {ph['ideal_per_k_tile']:.0f} at the tensor pipe's rate "
                    f"({ph['pipe']:.0%})", fontsize=9)
    axs[-1].set_xlim(0, horizon * 1.02)
    axs[-1].set_xlabel("SM clock cycles since CTA 0's first stamp")
    fig = axs[0].figure
    fig.legend(handles=[Patch(color="tab:orange", label="k loop of a tile (its number)"),
                        Patch(color="0.6", label="epilogue: C to shared memory, TMA stores issued")],
               loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=8, frameon=False, ncol=2)
    shape = " x ".join(map(str, rec["trace"]["shape"]))
    fig.suptitle(f"Measured: CTA 0's first {rows} rows of C at {shape}, one launch each (experiments/pingpong,\n"
                 f"{rec['env']['trace']['name']}, {rec['env']['trace']['date']}, outside the book's run)",
                 fontsize=10)
    fig.tight_layout()
    return axs
