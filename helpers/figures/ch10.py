"""Chapter 10 (the chip as the unit): fig_persistent_schedule, fig_cluster_multicast, fig_tma_store_epilogue,
fig_tile_waves, and the ping-pong experiment (ci/pingpong.py, outside the run): pingpong_table, pingpong_phases,
pingpong_profiles, pingpong_control, pingpong_followups, fig_pingpong_trace, pingpong_source, pingpong_diff;
split-K (ci/splitk.py): splitk_table; cluster shapes (ci/clusters.py): clusters_table, clusters_profiles,
fig_cluster_shapes; the one-warpgroup probe (ci/wgmma_issue.py): wgmma_issue_table; and 64-row tiles
(ci/small_tiles.py): small_tiles_table."""
from __future__ import annotations

import re

import numpy as np

from ..compiler import build
from ..explore import l2_bytes_per_k_tile
from ..hardware import KIB, TENSOR_FLOP_PER_CLK
from ..registry import ROOT, rung
from ..tiles import waves
from .common import axes, clean

RUNG = "10_beyond_cublas"
FALLBACK_CLUSTERS = 66        # measured: results/nvidia-h100-80gb-hbm3.json grids, the clusters rung 10 launches on
                              # the H100; used only if the results in use record none
RANK_COLOURS = ("#1f77b4", "#2ca02c")    # what CTA rank 0 / rank 1 asks L2 for
WAVE_CMAP = "YlGnBu_r"


def _consts() -> dict:
    return build(RUNG).consts


def _clusters() -> int:
    """Clusters the persistent grid launches: the recorded driver count if there is one, else the H100's 66."""
    from ..ladder import NotRecorded, recorded_entry
    try:
        return int(recorded_entry("grids", RUNG)["clusters"])
    except (NotRecorded, KeyError):
        return FALLBACK_CLUSTERS


def _tile_origin(t: int, tiles_m: int, tiles_n: int, schedule: int, group_m: int) -> tuple[int, int]:
    """The kernel's tile_origin(), in Python: schedule index t -> (tile row tm, tile column tn) of cluster tiles."""
    if schedule == 0:
        return t // tiles_n, t % tiles_n
    per_group = group_m * tiles_n
    group = t // per_group
    first = group * group_m
    rows = min(tiles_m - first, group_m)
    i = t - group * per_group
    return first + i % rows, i // rows


def _schedule(n: int, schedule: int, clusters: int, c: dict) -> dict:
    """Every cluster tile of an N x N C: the schedule index t that lands on it, the cluster that computes it
    (cluster j takes t = j, j + clusters, ...: first_tile = blockIdx.x / CLUSTER, tile_step = gridDim.x / CLUSTER)
    and the wave t // clusters it is computed in."""
    tiles_m, tiles_n = n // c["CLUSTER_BM"], n // c["BN"]
    order = np.full((tiles_m, tiles_n), -1)
    for t in range(tiles_m * tiles_n):
        tm, tn = _tile_origin(t, tiles_m, tiles_n, schedule, c["GROUP_M"])
        assert order[tm, tn] == -1, "the schedule must visit every tile once"
        order[tm, tn] = t
    assert (order >= 0).all()
    return {"order": order, "cluster": order % clusters, "wave": order // clusters, "tiles_m": tiles_m,
            "tiles_n": tiles_n}


def fig_persistent_schedule(ax=None, sizes=(4096, 3072)):
    """One panel per (N, order): each cell is a 256 x 256 cluster tile of C (rank 0 computes its top 128 rows, rank 1
    the bottom 128), labelled with the cluster that computes it and coloured by the wave it is computed in; the
    first wave is outlined. Row by row (SCHEDULE 0) against grouped (SCHEDULE 1, GROUP_M tile rows per group)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    c = _consts()
    clusters = _clusters()
    gm = c["GROUP_M"]
    most = max(waves(n, n, c["CLUSTER_BM"], c["BN"], clusters)["busiest"] for n in sizes)
    cmap = plt.get_cmap(WAVE_CMAP)
    colours = [cmap(0.08 + 0.84 * w / max(most - 1, 1)) for w in range(most)]
    big = max(n // c["BN"] for n in sizes)
    gap_x, gap_y = 3.0, 5.2
    ax = axes(ax, (11.9, 6.5 * len(sizes)))  # the Axes (0.775 of the figure) come out 9.2 in wide, the column
    y0 = 0.0
    for n in sizes:
        w = waves(n, n, c["CLUSTER_BM"], c["BN"], clusters)
        for col, (schedule, name) in enumerate(((0, "row by row (SCHEDULE 0)"),
                                                (1, f"grouped (SCHEDULE 1, GROUP_M {gm})"))):
            s = _schedule(n, schedule, clusters, c)
            assert s["wave"].max() + 1 == w["busiest"]
            x0 = col * (big + gap_x)
            tm_n, tn_n = s["tiles_m"], s["tiles_n"]
            for tm in range(tm_n):
                for tn in range(tn_n):
                    wave = s["wave"][tm, tn]
                    fc = colours[wave]
                    ax.add_patch(Rectangle((x0 + tn, y0 + tm), 1, 1, fc=fc, ec="white", lw=0.6))
                    lum = 0.299 * fc[0] + 0.587 * fc[1] + 0.114 * fc[2]
                    ax.text(x0 + tn + 0.5, y0 + tm + 0.53, str(s["cluster"][tm, tn]), ha="center", va="center",
                            fontsize=8, color="black" if lum > 0.55 else "white")
            # outline the first wave: every cell edge whose neighbour is not in wave 0
            first = s["wave"] == 0
            for tm in range(tm_n):
                for tn in range(tn_n):
                    if not first[tm, tn]:
                        continue
                    x, y = x0 + tn, y0 + tm
                    if tm == 0 or not first[tm - 1, tn]:
                        ax.plot([x, x + 1], [y, y], color="crimson", lw=2.2)
                    if tm == tm_n - 1 or not first[tm + 1, tn]:
                        ax.plot([x, x + 1], [y + 1, y + 1], color="crimson", lw=2.2)
                    if tn == 0 or not first[tm, tn - 1]:
                        ax.plot([x, x], [y, y + 1], color="crimson", lw=2.2)
                    if tn == tn_n - 1 or not first[tm, tn + 1]:
                        ax.plot([x + 1, x + 1], [y, y + 1], color="crimson", lw=2.2)
            rows = np.unique(np.nonzero(first)[0]).size
            cols = np.unique(np.nonzero(first)[1]).size
            ax.text(x0, y0 - 1.75, f"N = {n}, {name}", fontsize=10, weight="bold", ha="left", va="center")
            ax.text(x0, y0 - 0.75, f"wave 0 spans {rows} tile rows of A and {cols} tile columns of B",
                    fontsize=8.5, ha="left", va="center", color="crimson")
            for tn in range(0, tn_n, 4 if tn_n > 12 else 3):
                ax.text(x0 + tn + 0.5, y0 + tm_n + 0.45, str(tn), ha="center", va="center", fontsize=8,
                        color="dimgray")
            for tm in range(0, tm_n, 4 if tm_n > 12 else 3):
                ax.text(x0 - 0.35, y0 + tm + 0.5, str(tm), ha="right", va="center", fontsize=8, color="dimgray")
        last = w["tiles"] - (w["busiest"] - 1) * clusters
        ax.text(2 * big + gap_x, y0 + s["tiles_m"] + 1.25,
                f"{w['tiles']} cluster tiles on {clusters} clusters: {w['busiest']} waves, the last with {last} tiles "
                f"({clusters - last} clusters idle), busy {w['efficiency']:.0%} of the time",
                fontsize=8.5, ha="right", va="center")
        y0 += s["tiles_m"] + gap_y
    top = max(waves(n, n, c["CLUSTER_BM"], c["BN"], clusters)["tiles"] for n in sizes)
    handles = [Patch(color=colours[k], label=f"wave {k}: schedule indices {k * clusters}-"
                     f"{min((k + 1) * clusters, top) - 1}") for k in range(most)]
    handles.append(Patch(fc="none", ec="crimson", lw=2, label="the first wave"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3, fontsize=8.5,
              frameon=False)
    ax.set_xlim(-1.2, 2 * big + gap_x + 0.3)
    ax.set_ylim(y0 - gap_y + 2.0, -2.4)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"Which of the {clusters} clusters computes which {c['CLUSTER_BM']} x {c['BN']} tile of C "
                 f"(the number in the cell), and in which wave\n"
                 f"cluster j takes schedule indices j, j + {clusters}, j + {2 * clusters}, ...; tile rows down, "
                 f"tile columns across", fontsize=10.5)
    return ax


def fig_cluster_multicast(ax=None):
    """One k tile of a cluster of two: each CTA asks L2 for its own A rows and half of the shared B slice; the
    multicast writes each half of B into both CTAs' shared memory, at the same offset, and completes its bytes on
    both CTAs' full barriers. Bottom: bytes per CTA per k tile, asked of L2 against landed in shared memory."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

    c = _consts()
    bm, bn, bk, cl = c["BM"], c["BN"], c["BK"], c["CLUSTER"]
    half = c["B_BOX_ROWS"]
    a_kib, h_kib = bm * bk * 2 // KIB, half * bk * 2 // KIB
    ax = axes(ax, (12.4, 10.5))  # its equal-aspect drawing comes out 9.2 in wide, the book's column
    blue, green = RANK_COLOURS
    box_kw = dict(boxstyle="round,pad=0.02,rounding_size=0.25")

    def block(x, y, w, h, colour, text, fs=8.5, alpha=0.28):
        ax.add_patch(Rectangle((x, y), w, h, fc=colour, ec=colour, alpha=alpha, lw=0))
        ax.add_patch(Rectangle((x, y), w, h, fc="none", ec=colour, lw=1.5))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fs)

    def arrow(p, q, colour, rad=0.0, lw=1.8, ls="-"):
        ax.add_patch(FancyArrowPatch(p, q, arrowstyle="-|>", mutation_scale=15, color=colour, lw=lw, ls=ls,
                                     connectionstyle=f"arc3,rad={rad}", shrinkA=1, shrinkB=1))

    # --- L2 on the left: each CTA's A rows and the shared B slice, each piece coloured by the CTA that asks for it
    ax.add_patch(FancyBboxPatch((0.0, -0.2), 8.0, 17.0, fc="0.96", ec="0.6", lw=1.0, **box_kw))
    ax.text(4.0, 16.2, "L2 (global memory behind it)", ha="center", fontsize=10, weight="bold")
    block(0.7, 13.2, 6.6, 1.8, blue, f"A rows row0 + 0-{bm - 1}\n[{bm}, {bk}] bf16, {a_kib} KiB, rank 0 asks")
    block(0.7, 8.2, 6.6, 1.8, blue, f"Bt rows col0 + 0-{half - 1}: {h_kib} KiB\nrank 0 asks, multicast mask 0b11")
    block(0.7, 6.4, 6.6, 1.8, green, f"Bt rows col0 + {half}-{bn - 1}: {h_kib} KiB\nrank 1 asks, multicast mask 0b11")
    ax.text(4.0, 10.25, f"the shared slice Bt [{bn}, {bk}] bf16", ha="center", va="bottom", fontsize=8,
            color="dimgray")
    block(0.7, 0.5, 6.6, 1.8, green, f"A rows row0 + {bm}-{2 * bm - 1}\n[{bm}, {bk}] bf16, {a_kib} KiB, "
          f"rank 1 asks")

    # --- the two CTAs on the right, one ring slot each; B sits on the side facing the other CTA
    ledger = (f"full[s] expects\n{c['TX_BYTES']:,} B:\n{a_kib} KiB of A\n+ 2 x {h_kib} KiB of B\n\n"
              f"empty[s] waits for\n{c['CONSUMERS'] * cl} arrivals:\n{c['CONSUMERS']} consumers x {cl} CTAs\n"
              f"(the partner\nwrites here too)")
    for rank, (y0, a_y, b_y) in enumerate(((8.6, 13.2, 9.0), (-0.2, 0.5, 3.3))):
        colour = RANK_COLOURS[rank]
        ax.add_patch(FancyBboxPatch((13.0, y0), 12.6, 8.2, fc="white", ec=colour, lw=2.0, **box_kw))
        ax.text(19.3, y0 + 7.7, f"CTA rank {rank} (its own SM): shared memory, ring slot s", ha="center",
                fontsize=9.5, weight="bold", color=colour)
        block(14.0, a_y, 6.2, 1.8, colour, f"A [{bm}, {bk}], {a_kib} KiB: its own rows")
        block(14.0, b_y + 1.8, 6.2, 1.8, blue, f"B rows 0-{half - 1}, {h_kib} KiB\nwritten by rank 0's copy")
        block(14.0, b_y, 6.2, 1.8, green, f"B rows {half}-{bn - 1}, {h_kib} KiB\nwritten by rank 1's copy")
        ax.text(20.7, y0 + 3.7, ledger, ha="left", va="center", fontsize=8)
    # A: unicast, each CTA its own rows
    arrow((7.3, 14.1), (14.0, 14.1), blue, lw=2.2)
    arrow((7.3, 1.4), (14.0, 1.4), green, lw=2.2)
    ax.text(10.6, 14.35, "its own A: one CTA", ha="center", va="bottom", fontsize=8, color=blue)
    ax.text(10.6, 1.65, "its own A: one CTA", ha="center", va="bottom", fontsize=8, color=green)
    # B halves: one read from L2, two writes (one per CTA, at the same offset in each)
    arrow((7.3, 9.5), (14.0, 11.7), blue)
    arrow((7.3, 8.7), (14.0, 6.0), blue)
    arrow((7.3, 7.7), (14.0, 9.9), green)
    arrow((7.3, 6.9), (14.0, 4.2), green)
    ax.text(10.5, 3.55, "multicast: each half\nof B is read from L2\nonce and written into\nboth CTAs, "
            "at the same\noffset, counted on\nboth full[s]", ha="center", va="center", fontsize=8.2)

    # --- bytes per CTA per k tile, from the explorer
    scale = 16.0 / l2_bytes_per_k_tile(bm, bn, bk, 1)["landed"]
    ax.text(0.0, -1.2, "bytes per CTA per k tile (helpers.explore.l2_bytes_per_k_tile)", fontsize=9.5,
            weight="bold", va="center")
    y = -2.1
    for size in (1, cl):
        t = l2_bytes_per_k_tile(bm, bn, bk, size)
        for what, value, colour in (("asked of L2", t["requested"], "0.35"),
                                    ("landed in shared memory", t["landed"], "0.75")):
            ax.add_patch(Rectangle((7.0, y - 0.32), value * scale, 0.64, fc=colour, ec="none"))
            note = f"   ({t['saved']:.0%} fewer)" if what == "asked of L2" and t["saved"] > 0 else ""
            ax.text(7.0 + value * scale + 0.2, y, f"{value:,} B{note}", va="center", fontsize=8.5,
                    weight="bold" if note else "normal")
            ax.text(6.8, y, f"cluster of {size}: {what}", ha="right", va="center", fontsize=8.5)
            y -= 0.85
        y -= 0.25
    ax.set(xlim=(-0.2, 25.8), ylim=(y, 17.0))
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def _epilogue_events(chunks: int, write: float = 3.0, fence: float = 0.5, bar: float = 0.35,
                          issue: float = 0.45, read: float = 5.8, drain: float = 2.4) -> dict:
    """Schematic times (made-up units) of one consumer warpgroup's epilogue in the kernel's order, per chunk q:
    thread 0 waits with wait_group.read 1 (store q - 2 has read its buffer), named barrier (the other 127 threads
    wait there), all 128 threads write chunk q to buffer q % 2, each fences, named barrier, thread 0 issues the TMA
    store and commits its bulk group. The read is drawn longer than the writes so that one wait shows."""
    ev = {"wait": [], "bar": [], "bar_t0": [], "write": [], "fence": [], "issue": [], "read": [], "drain": []}
    now = 0.0          # thread 0 is ready for the next chunk
    arrive = 0.0       # the other threads reach the first named barrier of the next chunk
    for q in range(chunks):
        free = ev["read"][q - 2][1] if q >= 2 else now
        done_wait = max(now, free)
        ev["wait"].append((q, now, done_wait))
        ev["bar"].append((q, arrive, done_wait + bar))
        ev["bar_t0"].append((q, done_wait, done_wait + bar))
        t = done_wait + bar
        ev["write"].append((q, t, t + write))
        t += write
        ev["fence"].append((q, t, t + fence))
        t += fence
        ev["bar"].append((q, t, t + bar))
        ev["bar_t0"].append((q, t, t + bar))
        t += bar
        arrive = t
        ev["issue"].append((q, t, t + issue))
        t += issue
        ev["read"].append((t, t + read))
        ev["drain"].append((t + 0.4 * read, t + read + drain))
        now = t
    ev["end"] = arrive
    return ev


def fig_tma_store_epilogue(rung_id: str = "10_tma_store", ax=None):
    """A schematic timeline (durations made up, order exact) of one consumer warpgroup writing its 64 x BN slice
    of C: BN / C_CHUNK chunks through two shared buffers, with the kernel's fence, named barriers, TMA store,
    commit and bulk-group waits. Arrows mark the waits that protect a buffer from being rewritten too early.
    Step 4 (10_tma_store) writes with st.shared; later steps with stmatrix."""
    from matplotlib.patches import FancyArrowPatch, Patch, Rectangle

    c = build(rung(rung_id)).consts
    chunks = c["BN"] // c["C_CHUNK"]
    if c["EPILOGUE"] == 2:  # stmatrix.x4: 4 registers (8 bf16) per lane, 16 columns of a warp's 16 rows
        store, per_thread = "stmatrix", f"{c['C_CHUNK'] // 16} stmatrix.x4"
    else:                   # st.shared: one bf16x2 per instruction
        store, per_thread = "st.shared", f"{64 * c['C_CHUNK'] // 128 // 2} bf16x2"
    ev = _epilogue_events(chunks)
    lanes = {"threads": 4.0, "t0": 3.0, "buf0": 2.0, "buf1": 1.0, "global": 0.0}
    colours = {"write": "#4c72b0", "fence": "#dd8452", "bar": "0.55", "wait": "#c44e52", "issue": "black",
               "read": "#8172b3", "drain": "#8172b3", "next": "0.85"}
    h = 0.56
    ax = axes(ax, (9.2, 6.4))

    def seg(lane, t0, t1, kind, text="", hatch=None, fc=None, tc="white"):
        y = lanes[lane]
        ax.add_patch(Rectangle((t0, y - h / 2), max(t1 - t0, 0.04), h, fc=fc or colours[kind], ec="white",
                               lw=0.5, hatch=hatch, alpha=0.55 if hatch else 1.0))
        if text:
            ax.text((t0 + t1) / 2, y, text, ha="center", va="center", fontsize=8, color=tc)

    for q, t0, t1 in ev["write"]:
        seg("threads", t0, t1, "write", f"write\nchunk {q}\n-> buffer {q % 2}")
        seg(f"buf{q % 2}", t0, t1, "write", f"chunk {q}:\n{store}")
    for q, t0, t1 in ev["fence"]:
        seg("threads", t0, t1, "fence")
    for q, t0, t1 in ev["bar"]:
        seg("threads", t0, t1, "bar")
    for q, t0, t1 in ev["bar_t0"]:
        seg("t0", t0, t1, "bar")
    for q, t0, t1 in ev["wait"]:
        if t1 - t0 > 0.05:
            seg("t0", t0, t1, "wait", "wait")
        else:
            ax.plot([t0, t0], [lanes["t0"] - h / 2, lanes["t0"] + h / 2], color=colours["wait"], lw=2.2)
    for q, t0, t1 in ev["issue"]:
        seg("t0", t0, t1, "issue")
        ax.text((t0 + t1) / 2, lanes["t0"] + h / 2 + 0.08, f"store {q}\n+ commit", ha="center", va="bottom",
                fontsize=8)
    for q, (t0, t1) in enumerate(ev["read"]):
        seg(f"buf{q % 2}", t0, t1, "read", f"TMA reads chunk {q}")
    for q, (t0, t1) in enumerate(ev["drain"]):
        y = lanes["global"] + (0.12 if q % 2 else -0.12)
        ax.add_patch(Rectangle((t0, y - h / 4), t1 - t0, h / 2, fc=colours["drain"], alpha=0.45, ec="white",
                               hatch="///"))
        ax.text(t1 + 0.1, y, f"{q}", va="center", fontsize=8, color="dimgray")
    # the reuse rule: store q - 2 must have read its buffer before chunk q is written there
    for q, t0, t1 in ev["wait"]:
        if q >= 2:
            r_end = ev["read"][q - 2][1]
            ax.add_patch(FancyArrowPatch((r_end, lanes[f"buf{q % 2}"] + h / 2), (t1, lanes["t0"] - h / 2),
                                         arrowstyle="-|>", mutation_scale=12, color=colours["wait"], lw=1.3,
                                         connectionstyle="arc3,rad=0.0"))
    # after the last chunk: the next tile's k loop, or, after the block's last tile, wait_group 0
    end, tail = ev["end"], max(t1 for _, t1 in ev["drain"])
    t0_end = ev["issue"][-1][2]
    seg("threads", end, end + 7.0, "next", "next tile: k loop (wgmma)", fc=colours["next"], tc="black")
    seg("t0", t0_end, tail, "wait", hatch="xx", fc=colours["wait"])
    ax.text((t0_end + tail) / 2, lanes["t0"], "last tile only: wait_group 0\n(reads and writes done), then exit",
            ha="center", va="center", fontsize=8, color="black",
            bbox=dict(fc="white", ec="none", alpha=0.8, pad=0.6))
    names = {"threads": "all 128 threads\nof consumer c", "t0": "thread 0: writes too,\nand issues the stores",
             "buf0": f"buffer 0\n({c['C_BUFFER_BYTES'] // KIB} KiB)",
             "buf1": f"buffer 1\n({c['C_BUFFER_BYTES'] // KIB} KiB)",
             "global": "copy engine:\nwrites to C in global"}
    for lane, y in lanes.items():
        ax.text(-0.4, y, names[lane], ha="right", va="center", fontsize=8.5)
    handles = [Patch(color=colours["write"], label=f"{store}: {per_thread} per thread per chunk"),
               Patch(color=colours["fence"], label="fence.proxy.async.shared::cta (every writer)"),
               Patch(color=colours["bar"], label="bar.sync on the warpgroup's named barrier"),
               Patch(color=colours["issue"], label="cp.async.bulk.tensor store + commit_group"),
               Patch(color=colours["wait"], label="cp.async.bulk.wait_group.read 1 (red tick: returns at once)"),
               Patch(color=colours["read"], label="the store reads its buffer"),
               Patch(fc=colours["drain"], alpha=0.45, hatch="///", label="its writes reach C later")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=2, fontsize=8,
              frameon=False)
    ax.set(xlim=(-0.2, max(end + 7.0, tail) + 0.6), ylim=(-0.55, 5.05), yticks=[], xticks=[])
    for side in ("left", "right", "top", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"Schematic, not to scale: one consumer's epilogue, {c['BN']} / {c['C_CHUNK']} = {chunks} chunks of "
                 f"[64, {c['C_CHUNK']}] bf16 through 2 buffers\nthe order is the kernel's; red arrows: "
                 f"a buffer is rewritten only after the store two chunks back has read it", fontsize=10)
    return ax


def fig_tile_waves(ax=None, sizes=(1024, 2048, 3072, 4096, 6144, 8192)):
    """The tile-per-shape napkin rung 10 launches with (helpers.launch.choose_tile): for each square N and each
    tile the rung may use, the predicted time (busiest cluster's tiles x tile area / the tile's steady rate)
    relative to the 128 x 256 tile, with how busy the chip is over the waves; the picked tile is outlined."""
    from matplotlib.patches import Patch

    from ..tiles import choose_tile, tile_candidates
    r = rung(RUNG)
    clusters = _clusters()
    shapes = [(cols, rate) for _, _, cols, rate in tile_candidates(r)]
    colours = {cols: col for (cols, _), col in zip(shapes, ("#4c72b0", "#dd8452", "#55a868"))}
    ax = axes(ax, (9.2, 5.0))
    width = 0.8 / len(shapes)
    top = 0.0
    for i, n in enumerate(sizes):
        rows = {row["tile"][1]: row for row in choose_tile(r, n, n, n, clusters)}
        wide = rows[shapes[0][0]]["cost"]
        for j, (cols, rate) in enumerate(shapes):
            x = i + (j - (len(shapes) - 1) / 2) * width
            row = rows.get(cols)
            if row is None:
                ax.text(x, 0.03, f"N %\n{cols}\n!= 0", ha="center", va="bottom", fontsize=8, color="0.45")
                continue
            rel = row["cost"] / wide
            top = max(top, rel)
            ax.bar(x, rel, width * 0.92, color=colours[cols], ec="black" if row["picked"] else "none",
                   lw=2.2 if row["picked"] else 0)
            ax.text(x, rel + 0.02, f"{row['busiest']} x\n{row['efficiency']:.0%}", ha="center", va="bottom",
                    fontsize=8)
    ax.axhline(1.0, color="0.3", lw=0.8, ls=":")
    ax.set_xticks(range(len(sizes)), [f"N = {n}" for n in sizes])
    ax.set_ylim(0, top * 1.28)
    ax.set_ylabel("predicted time, relative to\nthe 128 x 256 tile (lower is faster)")
    handles = [Patch(color=colours[cols], label=f"128 x {cols} tile, steady rate {rate:.2f}") for cols, rate in shapes]
    handles.append(Patch(fc="white", ec="black", lw=2.2, label="the tile the launch picks"))
    ax.legend(handles=handles, loc="upper left", ncol=2, fontsize=8, frameon=False)
    clean(ax)
    ax.set_title(f"Wave quantization per tile on {clusters} clusters of 2 CTAs: above each bar, the tiles the busiest\n"
                 f"cluster computes x how busy the chip is over those waves", fontsize=10)
    return ax


# ---- ping-pong consumers: an experiment outside the run (ci/pingpong.py writes the record) -----------------------

PINGPONG_RECORD = ROOT / "results" / "pingpong.json"
# The builds ci/pingpong.py compares, as constexpr overrides of 10_stmatrix (chapter 10's file, 128 x 256 tiles):
PINGPONG_VARIANTS = {"cooperative": {}, "ping-pong": {"PINGPONG": 1},
                     "ping-pong, 5 stages": {"PINGPONG": 1, "C_BUFFERS": 1}}
# A control: GROUP_M counts tile rows of CLUSTER_BM, half as tall in ping-pong, so its grouped order walks a patch of C
# half as tall. With 16 rows per group the patch is the cooperative kernel's again.
PINGPONG_CONTROL = {"cooperative": {}, "ping-pong, 5 stages": PINGPONG_VARIANTS["ping-pong, 5 stages"],
                    "ping-pong, 5 stages, GROUP_M 16": {"PINGPONG": 1, "C_BUFFERS": 1, "GROUP_M": 16}}


# The experiment's switch, as a patch of chapter 10's file: PINGPONG (each consumer takes every other tile of its CTA,
# 64 x BN, and the two take turns at the ring through named barriers 3 and 4), SLOT_READERS (one reader per slot and
# CTA in ping-pong), and j, the CTA's tile count, in the consumers' loop. With PINGPONG = 0 the patched file builds
# the same SASS as the file itself. It is a patch, not a switch in the file, because it is not a rung.
PINGPONG_PATCH = (
    ('                                             // store, 2: -> shared (stmatrix) -> TMA store\n',
     '                                             // store, 2: -> shared (stmatrix) -> TMA store\n'
     'constexpr int PINGPONG = 0;                  // 1: each consumer takes every other tile (ping-pong)\n'),
    ('constexpr int BM = 64 * CONSUMERS;           // rows of C per CTA\n',
     "constexpr int BM = PINGPONG ? 64 : 64 * CONSUMERS;      // rows of C per tile: one consumer's, or both"
     " consumers'\n"
     'constexpr int SLOT_READERS = PINGPONG ? 1 : CONSUMERS;  // consumer warpgroups of a CTA that read each'
     ' ring slot\n'),
    ('            mbarrier_init(smem_addr(&empty[s]), CONSUMERS * CLUSTER);  // every consumer of the cluster'
     ' frees it\n',
     '            mbarrier_init(smem_addr(&empty[s]), SLOT_READERS * CLUSTER);  // each reader in the cluster'
     ' frees it\n'),
    ('        };\n'
     '        for (int tile = first_tile; tile < tiles; tile += tile_step) {\n',
     '        };\n'
     "        for (int tile = first_tile, j = 0; tile < tiles; tile += tile_step, ++j) {  // j: the CTA's j-th"
     ' tile\n'
     '            if constexpr (PINGPONG) {\n'
     '                if (j % CONSUMERS != c) continue;\n'
     "                it = j * k_tiles;                              // the producer's count at this tile's"
     ' first k tile\n'
     '                if (j > 0) bar_sync(3 + c, 256);               // my turn: the other consumer issued its'
     ' last wgmma\n'
     '            }\n'),
    ('                const unsigned sA = ring + s * STAGE_BYTES + c * 64 * 128, sB = ring + s * STAGE_BYTES +'
     ' A_TILE * 2;\n',
     '                const unsigned sA = ring + s * STAGE_BYTES + (PINGPONG ? 0 : c * 64 * 128),\n'
     '                               sB = ring + s * STAGE_BYTES + A_TILE * 2;\n'),
    ('            }\n'
     '            wgmma_wait_group<0>();\n',
     '            }\n'
     '            if (PINGPONG && tile + tile_step < tiles) bar_arrive(3 + (c + 1) % CONSUMERS, 256);  // the'
     " next tile's turn\n"
     '            wgmma_wait_group<0>();\n'),
    ('            const int row = row0 + rank * BM + c * 64;\n',
     '            const int row = row0 + rank * BM + (PINGPONG ? 0 : c * 64);\n'),
)


def pingpong_source(config: dict | None = None) -> str:
    """10_stmatrix's source with PINGPONG_PATCH applied, then the constexpr overrides `config`."""
    from ..compiler import apply_config
    from ..playground import source
    text = source("10_stmatrix")
    for old, new in PINGPONG_PATCH:
        assert text.count(old) == 1, f"chapter 10's file changed under the ping-pong patch: {old[:60]!r}"
        text = text.replace(old, new)
    return apply_config(text, config or {})


def pingpong_diff() -> None:
    """Show the patch as the diff of the built sources, the way chapters show a rung's lesson."""
    import difflib
    from ..playground import source
    from ..report import _display_code
    diff = difflib.unified_diff(source("10_stmatrix").splitlines(), pingpong_source().splitlines(),
                                "10_stmatrix", "10_stmatrix + PINGPONG_PATCH", n=1, lineterm="")
    _display_code("\n".join(diff), "diff")


def pingpong_record() -> dict:
    import json
    return json.loads(PINGPONG_RECORD.read_text())


def _pingpong_consts(name: str) -> dict:
    from ..kernel import kernel
    return kernel(rung("10_stmatrix"), pingpong_source(PINGPONG_VARIANTS[name])).consts


def pingpong_phases(name: str, record: dict | None = None, part: str | None = None) -> dict:
    """One variant's trace in ci/pingpong.py's record (CTA 0's consumers, one launch), as medians over its tiles, in
    SM cycles: a tile's k loop (from its turn to its last wgmma group done), per k tile, its epilogue (to the last
    store issued) and the wait from there to the consumer's next turn. `pipe` is the share of the tensor pipe the k
    loop keeps busy: the FLOPs of one k tile of a tile (both consumers' halves, in the cooperative kernel) at
    TENSOR_FLOP_PER_CLK, over the cycles it took. `landing` is the bytes a k tile's stage lands in shared memory per
    cycle of it; `span` the cycles CTA 0 took for its tiles. `part`: a later part of the record with its own trace
    and constants (ci/pingpong.py square)."""
    rec = record or pingpong_record()
    c, trace = (rec[part]["consts"][name], rec[part]["trace"]) if part else (_pingpong_consts(name), rec["trace"])
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


def pingpong_table(record: dict | None = None) -> None:
    """Print the record's timings: each shape, each variant's TFLOP/s and its ratio to the fastest cuBLAS timed in
    the same rounds."""
    rec = record or pingpong_record()
    names = [*PINGPONG_VARIANTS, "rung 10"]
    env = rec["env"]["time"]
    print(f"ci/pingpong.py on {env['name']} ({env['date']}), outside the book's run; TFLOP/s (ratio to cuBLAS)")
    print(f"{'M x N x K':<18}" + "".join(f"{x:>22}" for x in names) + f"{'cuBLAS':>9}")
    for row in rec["time"]:
        cells = "".join(f"{row[x]['tflops']:>14.1f} ({row[x]['ratio']:.3f})" for x in names)
        print(f"{'x'.join(map(str, row['shape'])):<18}{cells}{row['cublas_best']['tflops']:>9.1f}")


def pingpong_profiles(record: dict | None = None) -> None:
    """Print the record's Nsight Compute profiles of the variants at N = 8192, as chapter profiles print."""
    from ..profile import table
    rec = record or pingpong_record()
    print(f"ci/pingpong.py, {rec['env']['profile']['date']}:")
    print(table(rec["profile"].values()))


def pingpong_control(record: dict | None = None) -> None:
    """Print the control: the five-stage ping-pong with its grouped order's patch of C as tall as the cooperative
    kernel's, timed beside both, and its DRAM bytes at N = 8192 beside theirs."""
    rec = record or pingpong_record()
    ctl = rec["control"]
    print(f"ci/pingpong.py control, {rec['env']['control']['date']}; TFLOP/s (ratio to cuBLAS):")
    for row in ctl["time"]:
        cells = ", ".join(f"{x} {row[x]['tflops']:.1f} ({row[x]['ratio']:.3f})" for x in PINGPONG_CONTROL)
        print(f"  {'x'.join(map(str, row['shape']))}: {cells}")
    dram = {**{x: rec["profile"][x]["dram_bytes"] for x in PINGPONG_VARIANTS}, **{
        x: e["dram_bytes"] for x, e in ctl["profile"].items()}}
    print("DRAM GB at N = 8192 (Nsight Compute): " + ", ".join(f"{x} {v / 1e9:.2f}" for x, v in dram.items()))


def pingpong_followups(record: dict | None = None) -> None:
    """Print the follow-up experiments (ci/pingpong.py square, single and issue), each from its own lease: per build,
    the trace's k tile in cycles against the tensor pipe's rate, the bytes landing per cycle, the epilogue, and
    TFLOP/s at the shapes every part timed (N = 4096, 8192 and 8192 x 8192 x 1024, "K=1024")."""
    rec = record or pingpong_record()
    shapes = [(4096,) * 3, (8192,) * 3, (8192, 8192, 1024)]
    print(f"{'build':<33}{'tile':>8}{'stages':>7}{'k tile':>7}{'of pipe':>8}{'B/cycle':>8}{'epilogue':>9}"
          f"{'TFLOP/s: 4096/8192/K=1024':>27}")
    for part, names in (("square", ("cooperative", "ping-pong, 5 stages", "ping-pong, 128 x 128")),
                        ("single", ("cooperative", "ping-pong, 5 stages", "one consumer, 64 x 256")),
                        ("issue", ("cooperative", "cooperative, two groups", "one consumer", "one consumer, two groups",
                                   "ping-pong, 5 stages, two groups"))):
        print(f"ci/pingpong.py {part}, {rec['env'][part]['date']}:")
        rows = {tuple(r["shape"]): r for r in rec[part]["time"]}
        for name in names:
            ph = pingpong_phases(name, rec, part)
            rates = " / ".join(f"{rows[s][name]['tflops']:.1f}" for s in shapes)
            print(f"  {name:<31}{'x'.join(map(str, ph['tile'])):>8}{ph['stages']:>7}{ph['per_k_tile']:>7.0f}"
                  f"{ph['pipe']:>8.0%}{ph['landing']:>8.1f}{ph['epilogue']:>9.0f}{rates:>27}")


SPLITK_RECORD = ROOT / "results" / "splitk.json"   # ci/splitk.py's output, outside the run


def splitk_table(record: dict | None = None) -> None:
    """Print ci/splitk.py's timings: per shape, each build's time per launch, TFLOP/s and ratio to cuBLAS, with the
    grid it launched."""
    import json
    rec = record or json.loads(SPLITK_RECORD.read_text())
    print(f"ci/splitk.py on {rec['env']['name']} ({rec['env']['date']}), outside the book's run")
    for row in rec["time"]:
        print(f"{'x'.join(map(str, row['shape']))}: cuBLAS {row['cublas_best']['us']:.2f} µs")
        for name, x in row.items():
            if isinstance(x, dict) and "grid" in x:
                print(f"  {name:<22}{x['us']:>8.2f} µs {x['tflops']:>8.1f} TFLOP/s ({x['ratio']:.3f})   "
                      f"{x['grid']:>4} CTAs, {x['tile'][0]} x {x['tile'][1]} tiles")


CLUSTERS_RECORD = ROOT / "results" / "clusters.json"   # ci/clusters.py's output, outside the run
CLUSTER_SHAPES = ("1 x 1", "2 x 1", "1 x 2", "2 x 2")    # CLUSTER_M x CLUSTER_N


def clusters_record() -> dict:
    import json
    return json.loads(CLUSTERS_RECORD.read_text())


def cluster_l2_kib(cm: int, cn: int, bm: int = 128, bn: int = 256, bk: int = 64) -> float:
    """KiB a CTA pulls from L2 per k tile in clusters of cm x cn: its share of A (shared by the cn CTAs of its row)
    and of B (shared by the cm CTAs of its column), bf16."""
    return (bm * bk / cn + bn * bk / cm) * 2 / 1024


def clusters_table(record: dict | None = None) -> None:
    """Print ci/clusters.py's timings: per shape, TFLOP/s of each cluster shape and of rung 10 as it launches, each
    with its ratio to the fastest cuBLAS of the same rounds, and the grids the driver's count gave."""
    rec = record or clusters_record()
    env = rec["env"]["time"]
    names = (*CLUSTER_SHAPES, "rung 10")
    print(f"ci/clusters.py, {env['name']}, {env['date']}, outside the book's run; TFLOP/s (/ cuBLAS)")
    print(f"{'M x N x K':<18}" + "".join(f"{x:>15}" for x in names) + f"{'cuBLAS':>8}")
    for row in rec["time"]:
        print(f"{'x'.join(map(str, row['shape'])):<18}"
              + "".join(f"{row[x]['tflops']:>7.1f} ({row[x]['ratio']:.3f})" for x in names)
              + f"{row['cublas_best']['tflops']:>8.1f}")
    grids = {x: {row[x]["grid"] for row in rec["time"] if min(row["shape"][:2]) >= 4096} for x in CLUSTER_SHAPES}
    print("CTAs launched from N = 4096 up: "
          + ", ".join(f"{x} {'/'.join(map(str, sorted(g)))}" for x, g in grids.items()))


def clusters_profiles(record: dict | None = None) -> None:
    """Print the record's Nsight Compute profiles at N = 8192, as chapter profiles print."""
    from ..profile import table
    rec = record or clusters_record()
    print(f"ci/clusters.py, {rec['env']['profile']['date']}:")
    print(table(rec["profile"].values()))


def fig_cluster_shapes(record: dict | None = None, ax=None):
    """Each cluster shape's TFLOP/s as a fraction of the 2 x 1 build's in the same rounds, at every square N the record
    timed, beside the L2 bytes per CTA per k tile that the shape's multicast leaves (the legend)."""
    rec = record or clusters_record()
    ax = axes(ax, (6.0, 3.2))
    rows = [r for r in rec["time"] if len(set(r["shape"])) == 1]
    ns = [r["shape"][0] for r in rows]
    styles = {"1 x 1": ("0.55", "o"), "2 x 1": ("tab:blue", "s"), "1 x 2": ("tab:orange", "^"),
              "2 x 2": ("tab:red", "D")}
    for name in CLUSTER_SHAPES:
        cm, cn = (int(x) for x in name.split(" x "))
        colour, marker = styles[name]
        ax.plot(range(len(ns)), [r[name]["tflops"] / r["2 x 1"]["tflops"] for r in rows], marker=marker, color=colour,
                label=f"{name}: {cluster_l2_kib(cm, cn):.0f} KiB a k tile from L2")
    ax.axhline(1.0, color="0.8", lw=0.8, zorder=0)
    ax.set_xticks(range(len(ns)), [f"{n}" for n in ns])
    ax.set_xlabel("N (M = N = K)")
    ax.set_ylabel("TFLOP/s / 2 x 1's")
    ax.set_title("Cluster shapes, same rounds (ci/clusters.py, outside the run)", fontsize=9)
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
              title="CTAs (M x N): bytes a CTA pulls", title_fontsize=9)
    return clean(ax)


WGMMA_ISSUE_RECORD = ROOT / "results" / "wgmma_issue.json"   # ci/wgmma_issue.py's output, outside the run


def wgmma_issue_table(record: dict | None = None) -> None:
    """Print ci/wgmma_issue.py's rates: chapter 00's wgmma probe with two warpgroups per SM or one, the same wgmmas
    per launch, in the same interleaved rounds, each against the two-warpgroup build."""
    import json
    rec = record or json.loads(WGMMA_ISSUE_RECORD.read_text())
    env, t = rec["env"], rec["time"]
    base = t["two warpgroups, one CTA"]["tflops"]
    print(f"ci/wgmma_issue.py, {env['name']}, {env['date']}, outside the book's run:\n"
          f"m64n256k16 back to back on one resident tile, random operands")
    for name, e in t.items():
        print(f"  {name:<28}{e['tflops']:>8.1f} TFLOP/s ({e['tflops'] / base:.2f}), {e['threads']} threads x "
              f"{e['ctas_per_sm']} CTA a SM, {e['group']} wgmmas a group, {e['sm_clock_mhz']:.0f} MHz")


SMALL_TILES_RECORD = ROOT / "results" / "small_tiles.json"   # ci/small_tiles.py's output, outside the run


def small_tiles_table(record: dict | None = None) -> None:
    """Print ci/small_tiles.py's timings: per shape, rung 10 as it launches and the one-consumer builds, each with its
    time per launch, its ratio to the fastest cuBLAS of the same rounds and its grid, then what that cuBLAS was."""
    import json
    rec = record or json.loads(SMALL_TILES_RECORD.read_text())
    print(f"ci/small_tiles.py, {rec['env']['name']}, {rec['env']['date']}, outside the book's run")
    for row in rec["time"]:
        print(f"{'x'.join(map(str, row['shape']))}: cuBLAS {row['cublas_best']['us']:.2f} µs, "
              + re.sub(r"^.*?(tile \d+x\d+, cluster \dx\dx\d).*$", r"\1", row["cublas"]))
        for name, x in row.items():
            if isinstance(x, dict) and "grid" in x:
                print(f"  {name:<27}{x['us']:>8.2f} µs ({x['ratio']:.3f})  {x['grid']:>4} CTAs of "
                      f"{x['tile'][0]} x {x['tile'][1]}, clusters of {x['cluster']}")


def fig_pingpong_trace(names=("cooperative", "ping-pong, 5 stages"), rows: int = 384, ax=None):
    """CTA 0's two consumers in one launch of each variant at the record's shape (8192 x 8192 x 1024), over the tiles
    that make its first `rows` rows of C: each tile's k loop (coloured, numbered in the CTA's tile order) and its
    epilogue (grey), from clock64 stamps. In the cooperative kernel the consumers share each tile and write C
    together; in ping-pong each takes every other tile, half as tall."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    rec = pingpong_record()
    axs = ax if ax is not None else plt.subplots(len(names), 1, figsize=(9.2, 1.6 + 1.25 * len(names)), sharex=True)[1]
    axs = np.atleast_1d(axs)
    horizon = 0
    for a, name in zip(axs, names):
        stamps, ph = rec["trace"][name], pingpong_phases(name, rec)
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
    fig.suptitle(f"Measured: CTA 0's first {rows} rows of C at {shape}, one launch each (ci/pingpong.py,\n"
                 f"{rec['env']['trace']['name']}, {rec['env']['trace']['date']}, outside the book's run)",
                 fontsize=10)
    fig.tight_layout()
    return axs
