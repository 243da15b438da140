"""A measured pipeline timeline: the instrumented build (TRACE = 1) of a warp-specialized rung stamps clock64
per k tile and per role in block (0, 0); this module launches it once, reads the stamps back, records them,
and draws the producer/consumer Gantt chart. In replay mode the recorded stamps are drawn."""
from __future__ import annotations

import numpy as np

from .kernel import faults_explained, variant
from .launch import random_inputs, validate
from .store import obtain
from .registry import rung as _rung


def measure_timeline(rung_id: str = "09_setmaxnreg", n: int = 4096, save: bool = True) -> dict:
    """Stamps of one launch at N x N x N: {'roles': [[[start, end] per tile] per role], ...} in SM cycles."""
    r = _rung(rung_id)
    entry, source = obtain("timeline", f"{r.id}@{n}", lambda: _stamps(r, n), r.needs_cc, r.arch, save)
    return {**entry, "source": source}


def _stamps(r, n: int) -> dict:
    import cupy as cp
    kern = variant(r, {"TRACE": 1})
    validate(r, n, n, n, kern.source)
    consts = kern.consts
    roles, tiles = 1 + consts["CONSUMERS"], n // consts["BK"]
    trace = cp.ndarray((roles * consts["TRACE_TILES"] * 2,), cp.uint64, kern.module().get_global("trace_clock"))
    trace.fill(0)
    a, b = random_inputs(r.dtype, n, n, n, b_layout=r.b_layout)
    c = cp.empty((n, n), cp.float32)
    grid, block, smem = kern.geometry(n, n)
    with faults_explained(r):
        kern.function()(grid, block, kern.args(a, b, c), shared_mem=smem)
        cp.cuda.runtime.deviceSynchronize()
    stamps = trace.get().reshape(roles, consts["TRACE_TILES"], 2)[:, :tiles].astype(np.int64)
    stamps -= stamps[stamps > 0].min()
    return {"rung": r.id, "n": n, "tiles": tiles, "stages": consts["STAGES"], "consumers": consts["CONSUMERS"],
            "roles": stamps.tolist(), "unit": "SM clock cycles"}


def plot_timeline(tl: dict, first: int = 0, count: int = 24, ax=None):
    """Gantt chart for tiles first..first+count: the producer's span from getting an empty slot to having issued
    the copies, and each consumer's span from a tile's data being ready to the next tile's (a tick marks when
    the tile's wgmma group had finished: one group stays in flight, so that is after the next tile started)."""
    import matplotlib.pyplot as plt
    roles = np.asarray(tl["roles"])
    last = min(first + count, tl["tiles"])
    ax = ax or plt.subplots(figsize=(8, 1.2 + 0.6 * roles.shape[0]))[1]  # 8 in: the book shows it unscaled
    names = ["producer (TMA)"] + [f"consumer {i}" for i in range(roles.shape[0] - 1)]
    for y, spans in enumerate(roles):
        for t in range(first, last):
            s, e = spans[t]
            if y:  # a consumer works on tile t until tile t + 1 is ready
                e = spans[t + 1][0] if t + 1 < len(spans) else e
                ax.plot([spans[t][1]] * 2, [y - 0.35, y + 0.35], color="black", lw=0.8)
            ax.barh(y, max(e - s, 1), left=s, height=0.6, edgecolor="white",
                    color="tab:blue" if y == 0 else ("tab:orange" if t % 2 else "tab:red"))
            if y:
                ax.text((s + e) / 2, y, str(t), ha="center", va="center", fontsize=8, color="white")
    where = "measured live" if tl.get("source") == "live" else "recorded"
    ax.set(yticks=range(len(names)), yticklabels=names, xlabel=f"time in block (0, 0), {tl['unit']}",
           title=f"{tl['rung']} at N={tl['n']}, tiles {first}-{last - 1} of {tl['tiles']}, {tl['stages']} stages\n"
                 f"({where} on {tl['gpu']}, {tl['date']})")
    ax.invert_yaxis()
    return ax


def summary(tl: dict) -> dict:
    """What the chart shows, in numbers (SM cycles, medians over the steady state):
    cycles per tile for a consumer; how long a consumer waited for data (from finishing tile t-1's group to tile
    t+1 being ready, which includes the loop's own bookkeeping); how early the producer issued each copy."""
    roles = np.asarray(tl["roles"], dtype=float)
    prod, cons = roles[0], roles[1:]
    per_tile = [float(np.median(np.diff(c[:, 0]))) for c in cons]
    wait = [float(np.median(np.clip(c[2:, 0] - c[:-2, 1], 0, None))) for c in cons]
    lead = float(np.median(cons[0][:, 0] - prod[:, 1]))
    return {"cycles_per_tile": [int(x) for x in per_tile], "wait_for_data_cycles": [int(x) for x in wait],
            "issue_to_ready_cycles": int(lead)}
