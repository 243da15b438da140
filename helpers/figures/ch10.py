"""Chapter 10 (the chip as the unit): fig_persistent_schedule, fig_cluster_multicast, fig_tma_store_epilogue,
fig_tile_waves, fig_launches_back_to_back."""
from __future__ import annotations

import numpy as np

from ..compiler import build
from ..hardware import KIB
from ..models import l2_bytes_per_k_tile, launch_timeline
from ..registry import rung
from ..tiles import waves
from .common import axes, clean

RUNG = "10_chip"
FALLBACK_CLUSTERS = 66        # measured: results/nvidia-h100-80gb-hbm3/run.json grids, the clusters rung 10 launches on
                              # the H100; used only if the results in use record none
RANK_COLOURS = ("#1f77b4", "#2ca02c")    # what CTA rank 0 / rank 1 asks L2 for
WAVE_CMAP = "YlGnBu_r"


def _consts() -> dict:
    return build(RUNG).consts


def _clusters() -> int:
    """Clusters the persistent grid launches: the recorded driver count if there is one, else the H100's 66."""
    from ..ladder import recorded_entry
    from ..store import NotRecorded
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
    ax.text(0.0, -1.2, "bytes per CTA per k tile (helpers.models.l2_bytes_per_k_tile)", fontsize=9.5,
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


def fig_launches_back_to_back(ax=None, launches: int = 3):
    """A schematic (durations made up, order exact: helpers.models.launch_timeline) of three launches back to back,
    plain above and with programmatic dependent launch below: each row one launch's grid, from its placement to its
    last CTA's exit. With PDL the next grid is placed, on SMs the previous one leaves idle, as soon as the previous
    grid's CTAs pass their trigger; its prologue runs under the previous k loop, and its wait holds the first load
    until the previous grid has completed and its memory is flushed."""
    from matplotlib.patches import Patch, Rectangle

    colours = {"place": "0.8", "prologue": "#dd8452", "wait": "#c44e52", "work": "#4c72b0", "drain": "0.55"}
    h = 0.6
    ax = axes(ax, (9.2, 5.2))
    rows = {False: launch_timeline(launches), True: launch_timeline(launches, pdl=True)}
    ends = {}
    for panel, (pdl, times) in enumerate(rows.items()):
        base = (launches + 1.2) * (1 - panel)
        for i, t in enumerate(times):
            y = base + launches - 1 - i

            def seg(t0, t1, kind, y=y, **kw):
                ax.add_patch(Rectangle((t0, y - h / 2), t1 - t0, h, fc=colours[kind], ec="white", lw=0.5, **kw))

            seg(t["start"], t["placed"], "place")
            seg(t["placed"], t["ready"], "prologue")
            if t["go"] > t["ready"]:
                seg(t["ready"], t["go"], "wait", hatch="///", alpha=0.6)
            seg(t["go"], t["done"], "work")
            seg(t["done"], t["drained"], "drain", hatch="...", alpha=0.5)
            ax.text(-0.25, y, f"launch {i}", ha="right", va="center", fontsize=8)
        per = (times[-1]["done"] - times[0]["done"]) / (launches - 1)
        ends[pdl] = per
        title = ("with PDL: the next grid placed at the trigger, on idle SMs" if pdl else
                 "plain: the next grid placed after the previous one drains")
        ax.text(0, base + launches - 0.35, title, fontsize=9, va="bottom")
        ax.text(times[-1]["done"] + 0.8, base + 0.0, f"{per:.1f} a launch", va="center", fontsize=8)
    ax.set_xlim(-1.6, max(t["done"] for t in rows[False]) + 2.6)
    ax.set_ylim(-0.8, 2 * launches + 1.6)
    ax.set_yticks([])
    ax.set_xlabel("time (made-up units: the order is the kernel's, the durations are not)")
    ax.legend(handles=[Patch(fc=colours["place"], label="placed (CTAs, shared memory)"),
                       Patch(fc=colours["prologue"], label="prologue (barriers, cluster sync, maps)"),
                       Patch(fc=colours["wait"], hatch="///", alpha=0.6, label="griddepcontrol.wait"),
                       Patch(fc=colours["work"], label="k loops and epilogue"),
                       Patch(fc=colours["drain"], hatch="...", alpha=0.5, label="grid completes, memory flushed")],
              loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=8, ncol=3, frameon=False)
    ax.set_title(f"Launches back to back: PDL hides placement and prologue ({ends[False]:.1f} -> {ends[True]:.1f} "
                 "a launch)")
    clean(ax)
    return ax
