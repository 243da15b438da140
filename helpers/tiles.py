"""The tile policy: which tile a launch of a rung uses for a problem shape. Rung 10 carries several tiles
(`Rung.tile_choices`); at full waves the widest is fastest, so a narrower one wins only where it fills a last wave
that the widest leaves empty. The wave napkin prices that, as cuBLAS's heuristics do; `helpers.launch` applies it
(`launch_config`), and the chapters' explorers and figures draw it. Where no CTA gets a second tile, rungs 10 and 12
also launch clusters of one CTA (`solo`). Every choice here is made from the kernels' facts (their constants, read
from the source with no compile) and the resident clusters the launch passes in: nothing is built here.
"""
from __future__ import annotations

from .facts import Facts, facts, variant_source
from .registry import Rung


def waves(m: int, n: int, tile_m: int, tile_n: int, workers: int) -> dict:
    """Wave quantization of a persistent schedule: `workers` (clusters) take tiles round robin; the busiest
    takes ceil(tiles / workers), so the chip is busy tiles / (workers * that) of the time. An edge tile that C
    covers only in part counts whole: its CTA runs every k step of it."""
    tiles = -(-m // tile_m) * -(-n // tile_n)
    most = -(-tiles // workers)
    return {"tiles": tiles, "workers": workers, "waves": tiles / workers, "busiest": most,
            "efficiency": tiles / (workers * most)}


def pick_tile(m: int, n: int, shapes: list[tuple[dict, int, int, float]], workers: int,
              ragged: bool = False) -> list[dict]:
    """The tile-per-shape heuristic of rung 10 on the wave napkin alone. `shapes` are (constexpr overrides, tile
    rows, tile columns, steady rate) candidates, the rung's own tile first with rate 1; the rate is what the tile
    reaches at full waves relative to the rung's own. Each candidate that divides M and N costs busiest x tile area
    / rate, in units of one tile of the first shape; the cheapest is picked, the first on a tie. Returns every
    dividing candidate with its waves, cost and whether it was picked. A `ragged` kernel may also take a tile that
    divides neither, its edge tiles counted whole; it does only where no candidate divides, so every shape a tile
    divides keeps the pick it had before kernels took ragged edges."""
    exact = [s for s in shapes if m % s[1] == 0 and n % s[2] == 0]
    rows = []
    for config, tm, tn, rate in exact or (shapes if ragged else []):
        w = waves(m, n, tm, tn, workers)
        rows.append({"config": config, "tile": (tm, tn), "rate": rate, **w,
                     "cost": w["busiest"] * (tm * tn) / (shapes[0][1] * shapes[0][2]) / rate})
    best = min(range(len(rows)), key=lambda i: (round(rows[i]["cost"], 9), i), default=None)
    return [{**row, "picked": i == best} for i, row in enumerate(rows)]


def solo(m: int, n: int, tile_m: int, tile_n: int, sms: int) -> bool:
    """Whether a launch of a rung with `solo_clusters` runs clusters of one CTA: where its CTA tiles (tile_m x
    tile_n, one CTA's) number no more than the SMs, no CTA takes a second tile. A pair then shares one B tile per k
    step and nothing across tiles, and each CTA still waits for its partner's half of B every k step. A measured rule,
    not a derived one: tools/tune.py found clusters of one ahead at N = 2048 (one tile per CTA) and behind at 4096 and
    8192 (several); experiments/clusters_of_one has rung 10's rows at 1024 and 2048 before and after it."""
    return -(-m // tile_m) * -(-n // tile_n) <= sms


def choices(r: Rung) -> list[tuple[dict, Facts, float]]:
    """(overrides, facts, steady rate) of every tile a launch of r may use: its own first, then r.tile_choices."""
    return [(overrides, facts(r, variant_source(r, overrides)), rate)
            for overrides, rate in (({}, 1.0), *r.tile_choices)]


def _candidate(r: Rung, overrides: dict, f: Facts, rate: float) -> tuple[dict, int, int, float]:
    # rows per cluster tile (what M must divide into) and columns per tile
    return overrides, f.consts[r.divides.get("M", r.tile[0])], f.tile[1], rate


def tile_candidates(r: Rung) -> list[tuple[dict, int, int, float]]:
    """The tiles a launch of r may use, as (overrides, rows, columns, rate) for pick_tile."""
    return [_candidate(r, *c) for c in choices(r)]


def choose_tile(r: Rung, m: int, n: int, k: int, workers: int) -> list[dict]:
    """pick_tile over r's tiles that fit M x N x K, for `workers` resident clusters."""
    fits = [_candidate(r, *c) for c in choices(r) if c[1].misfit(m, n, k) is None]
    return pick_tile(m, n, fits, workers, r.ragged) if fits else []


def fits(r: Rung, m: int, n: int, k: int) -> str | None:
    """Why no tile of rung r takes M x N x K, in the words of the smallest one, or None where one does. A rung
    without tile choices answers for its own tile."""
    own = facts(r).misfit(m, n, k)
    if own and r.tile_choices:
        return None if choose_tile(r, m, n, k, 1) else choices(r)[-1][1].misfit(m, n, k)
    return own


def launch_config(r: Rung, m: int, n: int, k: int, workers: int | None, sms: int) -> dict:
    """The constexpr overrides a launch of rung r at M x N x K uses ({}: the rung as built): the tile the wave
    napkin picks for `workers` resident clusters of the rung's own build (where r has tile choices), then clusters of
    one CTA where no CTA of that tile gets a second one (r.solo_clusters, on a chip of `sms` SMs). There a build
    that stores its last chunks of C under the next tile's first k step (OVERLAP > 0) stores them all first, as
    10_pdl does: no CTA has a next tile, and the early rounding only costs (experiments/overlap measured it)."""
    picked, tile = {}, facts(r).tile
    if r.tile_choices:
        picked = next(row["config"] for row in choose_tile(r, m, n, k, workers) if row["picked"])
        tile = next(f.tile for overrides, f, _ in choices(r) if overrides == picked)
    if r.solo_clusters and solo(m, n, *tile, sms):
        picked = {**picked, "CLUSTER": 1}
        if facts(r).consts.get("OVERLAP"):  # no CTA has a next tile whose first k step could hide its epilogue
            picked["OVERLAP"] = 0
    return picked
