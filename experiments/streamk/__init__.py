"""Readers of the stream-K experiment's record (record.json, written by its runner outside the book's run), as chapter
10 shows them: table (part "time": every build at eight shapes; part "broad": the first run, more shapes, fewer
builds), profiles, cycles, fig_k_steps (the schedule drawn from the build's own arithmetic)."""
from __future__ import annotations

import json
from pathlib import Path

from .build import BUILDS, pieces, plan

RECORD = Path(__file__).with_name("record.json")


def record() -> dict:
    return json.loads(RECORD.read_text())


def table(rec: dict | None = None, part: str = "time") -> None:
    """Print one timing part: per shape, TFLOP/s of rung 10 as it launches and of each build, each with its ratio to
    the fastest cuBLAS of the same rounds, and the stream-K plan (tiles run whole, k steps a worker's range holds)."""
    rec = rec or record()
    env = rec["env"][part]
    rows = rec[part]
    names = [x for x in ("rung 10", *BUILDS) if x in rows[0]]
    print(f"experiments/streamk ({part}), {env['name']}, {env['date']}, outside the book's run; TFLOP/s (/ cuBLAS)")
    print(f"{'M x N x K':<16}" + "".join(f"{x:>{max(len(x) + 2, 17)}}" for x in names) + f"{'cuBLAS':>8}  plan")
    for row in rows:
        plan = row.get("plans", {}).get("stream-K")
        say_plan = "" if plan is None else (f"{plan['whole']} of {plan['tiles']} tiles whole" +
                                            (f", {plan['range_steps']:.0f} k steps a worker" if plan['range_steps']
                                             else ""))
        print(f"{'x'.join(map(str, row['shape'])):<16}"
              + "".join(f"{row[x]['tflops']:>{max(len(x) + 2, 17) - 8}.1f} ({row[x]['ratio']:.3f})" for x in names)
              + f"{row['cublas_best']['tflops']:>8.1f}  {say_plan}")


def cycles(entry: dict) -> float:
    """A profile's kernel time in SM cycles, at the clock it ran (Nsight Compute's elapsed-cycle rate)."""
    return entry["duration_us"] * entry["sm_clock_mhz"]


def profiles(rec: dict | None = None) -> None:
    """Print the record's Nsight Compute profiles: duration, clock, cycles, tensor pipe, L2 hit rate, DRAM bytes."""
    rec = rec or record()
    print(f"experiments/streamk, Nsight Compute, {rec['env']['profile']['date']}:")
    print(f"{'build @ N':<26}{'µs':>8}{'MHz':>8}{'k cycles':>10}{'tensor %':>10}{'L2 hit %':>10}{'DRAM read MB':>14}"
          f"{'write MB':>10}")
    for key, p in rec["profile"].items():
        print(f"{key:<26}{p['duration_us']:>8.1f}{p['sm_clock_mhz']:>8.0f}{cycles(p) / 1e3:>10.1f}"
              f"{p['tensor_pipe_pct']:>10.1f}{p['l2_hit_pct']:>10.1f}{p['dram_read_bytes'] / 1e6:>14.0f}"
              f"{p['dram_write_bytes'] / 1e6:>10.0f}")


def k_steps(shape=(4096,) * 3, workers: int = 66):
    """Which k step each worker computes at each moment of the cut tiles' part (stream-K) and of the same tiles'
    rounds whole (rung 10's schedule): two arrays [workers, time], NaN where a worker has nothing to do. Pure
    arithmetic of the plan (build.plan, build.pieces), no measurement."""
    import numpy as np
    p = plan(*shape, workers)
    kt, whole = p["k_tiles"], p["whole"]
    cut_tiles = list(range(whole, p["tiles"]))
    rounds = -(-len(cut_tiles) // workers)
    dp = np.full((workers, rounds * kt), np.nan)
    for i, _ in enumerate(cut_tiles):  # round robin: tile whole + i goes to worker i % workers in round i // workers
        dp[i % workers, (i // workers) * kt:(i // workers + 1) * kt] = np.arange(kt)
    sk = np.full((workers, dp.shape[1]), np.nan)
    for w in range(workers):
        ks = [k for tile, k0, k1 in pieces(p, w) if tile >= whole for k in range(k0, k1)]
        sk[w, :len(ks)] = ks
    return dp, sk, p


def fig_k_steps(shape=(4096,) * 3, workers: int = 66, ax=None):
    """Two panels, one row per worker, time to the right, coloured by the k step being computed: the cut tiles run
    whole, round robin (left: a column is one colour, every worker at the same k, so a wave shares each k slice of
    A and B in L2, and the last round leaves workers idle), and as stream-K ranges (right: no idle worker, but at any
    moment the workers sit at k steps spread over all of K)."""
    import matplotlib.pyplot as plt
    dp, sk, p = k_steps(shape, workers)
    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    cmap = plt.get_cmap("twilight").copy()
    cmap.set_bad("white")
    for a, data, title in ((ax[0], dp, f"whole tiles: {p['tiles'] - p['whole']} tiles in "
                            f"{dp.shape[1] // p['k_tiles']} rounds"),
                           (ax[1], sk, f"stream-K: {p['range_steps']:.1f} k steps a worker")):
        im = a.imshow(data, aspect="auto", cmap=cmap, vmin=0, vmax=p["k_tiles"] - 1, interpolation="nearest")
        a.set_title(title, fontsize=10)
        a.set_xlabel("time in the cut tiles' part (k steps)")
    ax[0].set_ylabel(f"worker (cluster), {workers} of them")
    cb = ax[1].figure.colorbar(im, ax=ax, fraction=0.03, pad=0.02)
    cb.set_label("k step being computed")
    ax[0].figure.suptitle(f"{' x '.join(map(str, shape))}: the last {p['tiles'] - p['whole']} of {p['tiles']} cluster "
                          "tiles, as rung 10 runs them and as stream-K cuts them", fontsize=10)
    return ax

