"""The CPU models the tensor-core chapters teach with: who holds which element of an mma.sync or wgmma fragment,
which bank each lane of an ldmatrix hits, how a cp.async ring overlaps copies with math, what a wgmma descriptor
encodes, how an mbarrier's phase completes, whether a register split or a block fits, how chapter 08's ring
behaves clock by clock, and how launches back to back overlap with programmatic dependent launch (chapter 10).
Everything here is computed, not measured (NumPy only, nothing drawn): the figures, the explorers, the exercises and
the tests all read the same models, and chapter 04 sets the computed bank conflicts beside Nsight Compute's
counters."""
from __future__ import annotations

import numpy as np

from .hardware import MAX_THREADS_PER_SM, REGISTER_FILE, SMEM_PER_SM

# ---- mma.sync.m16n8k16 fragments -------------------------------------------------------------------------

SHAPES = {"A": (16, 16), "B": (16, 8), "C": (16, 8)}


def mma_fragment(operand: str) -> tuple[np.ndarray, np.ndarray]:
    """(lane, element) owning each entry of A [16x16], B [16x8] or C [16x8] of mma.sync.m16n8k16.

    A lane's `element` e counts its values in register order: A holds 8 bf16 (4 registers), B 4 bf16
    (2 registers), C 4 fp32. Lane = 4 * group + t, with group = lane / 4 picking rows (A, C) or the column (B).
    """
    rows, cols = SHAPES[operand]
    lane = np.zeros((rows, cols), int)
    elem = np.zeros((rows, cols), int)
    for ln in range(32):
        g, t = ln // 4, ln % 4
        n_elems = {"A": 8, "B": 4, "C": 4}[operand]
        for e in range(n_elems):
            if operand == "A":    # a0,a1: row g; a2,a3: row g+8; a4..a7: the same, 8 columns on
                r, c = g + 8 * (e // 2 % 2), 2 * t + e % 2 + 8 * (e // 4)
            elif operand == "B":  # b0,b1: k = 2t, 2t+1 of column g; b2,b3: k + 8
                r, c = 2 * t + e % 2 + 8 * (e // 2), g
            else:                 # c0,c1: row g, columns 2t, 2t+1; c2,c3: row g+8
                r, c = g + 8 * (e // 2), 2 * t + e % 2
            lane[r, c], elem[r, c] = ln, e
    return lane, elem


def ldmatrix_x4(trans: bool = False) -> dict:
    """Who gives which address and who receives which element in ldmatrix.x4 (four 8x8 b16 matrices).

    'address_lane[m][r]': the lane whose address is row r of matrix m (lanes 8m..8m+7).
    'receiver[m]': [8, 8] array of the lane receiving element (r, c) of matrix m (register m of that lane).
    """
    receiver = np.zeros((4, 8, 8), int)
    for ln in range(32):
        for j in range(2):  # each lane receives two consecutive b16 per matrix
            r, c = ln // 4, 2 * (ln % 4) + j
            if trans:       # .trans: the lane gets column entries instead of row entries
                r, c = c, r
            receiver[:, r, c] = ln
    return {"address_lane": np.arange(32).reshape(4, 8), "receiver": receiver}


# ---- shared-memory banks ---------------------------------------------------------------------------------

LAYOUTS = ("row-major", "padded", "swizzled")


def offset(layout, row: int, col: int, cols: int) -> int:
    """Byte offset of bf16 element (row, col) of a [rows, cols] tile in shared memory. `layout` is one of
    LAYOUTS, or a function (row, chunk) -> chunk that places 16-byte chunks (a swizzle of your own)."""
    if callable(layout):
        chunk = layout(row, col // 8)
        if not 0 <= chunk < cols // 8:
            raise ValueError(f"swizzle sent chunk {col // 8} of row {row} to {chunk}, outside the row")
        return 2 * (row * cols + chunk * 8 + col % 8)
    if layout == "row-major":
        return 2 * (row * cols + col)
    if layout == "padded":                       # 8 spare bf16 (16 bytes) at the end of every row
        return 2 * (row * (cols + 8) + col)
    if layout == "swizzled":                     # kernels/common/swizzle.cuh, in Python
        chunks = cols // 8
        rows_per_line = 1 if chunks >= 8 else 8 // chunks
        mask = min(chunks, 8) - 1
        return 2 * (row * cols + ((col // 8) ^ ((row // rows_per_line) & mask)) * 8 + col % 8)
    raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")


def wavefronts(addresses) -> int:
    """Shared-memory wavefronts for one ldmatrix phase: 8 rows of 16 bytes. A wavefront serves 128 bytes
    (32 banks x 4 B); two different 16-byte chunks in the same 4-bank slot must go in different wavefronts."""
    slots: dict[int, set] = {}
    for a in addresses:
        slots.setdefault(a // 16 % 8, set()).add(a // 16)
    return max(len(chunks) for chunks in slots.values())


def ldmatrix_addresses(operand: str, layout: str, tile=(128, 32), base=(0, 0)) -> list[int]:
    """The 32 row addresses of one ldmatrix.x4 the way rungs 03-05 issue it, for A ([BM, BK] tile,
    row = lane % 16, column = 8 * (lane / 16)) or B ([BK, BN] tile, .trans, same pattern over k rows)."""
    rows, cols = tile
    r0, c0 = base
    return [offset(layout, r0 + lane % 16, c0 + lane // 16 * 8, cols) for lane in range(32)]


def conflict_degree(operand: str, layout: str, tile=(128, 32)) -> float:
    """Average wavefronts per ldmatrix phase (1.0 = conflict-free) over every ldmatrix a warp issues."""
    rows, cols = tile
    fronts, phases = 0, 0
    row_step = 16
    col_step = 16 if operand == "A" else 16  # A: k steps of 16; B: n steps of 16 (two n8 tiles per x4)
    for r0 in range(0, rows, row_step):
        for c0 in range(0, cols, col_step):
            addrs = ldmatrix_addresses(operand, layout, tile, (r0, c0))
            for p in range(4):
                fronts += wavefronts(addrs[8 * p: 8 * p + 8])
                phases += 1
    return fronts / phases


def kernel_conflict_degree(layout: str, bm=128, bn=128, bk=32, wm=64, wn=32) -> float:
    """What Nsight Compute should see for a rung's ldmatrix traffic: wavefronts per ideal wavefront, weighting
    A's x4 loads (wm/16 per k16 step) and B's x4.trans loads (wn/16 per k16 step) by how often they run."""
    a = conflict_degree("A", layout, (bm, bk))
    b = conflict_degree("B", layout, (bk, bn))
    na, nb = wm // 16, wn // 16
    return (na * a + nb * b) / (na + nb)


def bank_map(operand: str, layout: str, tile=(128, 32), phase: int = 0) -> np.ndarray:
    """[8 lanes, 32 banks] map of one ldmatrix phase: entry = 1 where that lane's 16 bytes sit in that bank."""
    addrs = ldmatrix_addresses(operand, layout, tile)[8 * phase: 8 * phase + 8]
    m = np.zeros((8, 32), int)
    for i, a in enumerate(addrs):
        bank = a // 4 % 32
        m[i, bank: bank + 4] = 1
    return m


# ---- cp.async pipeline -----------------------------------------------------------------------------------

def pipeline_schedule(stages: int, tiles: int = 8, copy_time: float = 3.0, math_time: float = 1.0) -> list:
    """A model of the ring in rung 05: (kind, tile, start, end) bars. Copies of tile t are issued when
    tile t - (stages - 1) starts computing (the prologue issues the first stages - 1), take copy_time, and
    tile t computes once it has landed and tile t - 1 is done. Times are in units of one tile's math."""
    bars, issue, land, done = [], {}, {}, -np.inf
    for t in range(min(stages - 1, tiles)):
        issue[t] = 0.0
    for t in range(tiles):
        land[t] = issue[t] + copy_time
        bars.append(("copy", t, issue[t], land[t]))
        start = max(land[t], done if t else 0.0)
        if t + stages - 1 < tiles:
            issue[t + stages - 1] = start
        done = start + math_time
        bars.append(("math", t, start, done))
    return bars


# ---- Hopper: wgmma descriptors and accumulators, mbarriers, register budgets -----------------------------

SWIZZLE_MODES = {0: "none (interleave)", 1: "128 B", 2: "64 B", 3: "32 B"}


def wgmma_desc_encode(addr: int, lbo: int = 16, sbo: int = 1024, swizzle: int = 1, base_offset: int = 0) -> int:
    """The 64-bit shared-memory matrix descriptor, as kernels/common/wgmma.cuh builds it (byte arguments)."""
    for name, v in (("start address", addr), ("leading byte offset", lbo), ("stride byte offset", sbo)):
        if v % 16:
            raise ValueError(f"the {name} must be a multiple of 16 bytes; got {v}")
    return (((addr & 0x3FFFF) >> 4) | ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32
            | (base_offset & 7) << 49 | (swizzle & 3) << 62)


def wgmma_desc_decode(desc: int) -> dict:
    return {"start_address": (desc & 0x3FFF) << 4, "leading_byte_offset": (desc >> 16 & 0x3FFF) << 4,
            "stride_byte_offset": (desc >> 32 & 0x3FFF) << 4, "base_offset": desc >> 49 & 7,
            "swizzle": SWIZZLE_MODES[desc >> 62 & 3]}


def wgmma_accumulator(n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """(thread, register) owning each element of the [64, n] fp32 accumulator of wgmma.m64nNk16.
    Warp w of the warpgroup owns rows 16w..16w+15 in the m16n8 layout, repeated n/8 times along N."""
    thread = np.zeros((64, n), int)
    reg = np.zeros((64, n), int)
    for t in range(128):
        w, lane = t // 32, t % 32
        for i in range(n // 2):
            r = 16 * w + lane // 4 + 8 * (i // 2 % 2)
            c = 8 * (i // 4) + 2 * (lane % 4) + i % 2
            thread[r, c], reg[r, c] = t, i
    return thread, reg


def mbarrier_countdown(expect_tx: int, copies: list[int], arrivals: int = 1) -> list[tuple[str, int, int, bool]]:
    """Replay one phase of a TMA barrier: (event, bytes landed so far, transaction bytes still pending, phase
    complete?). The phase completes the moment the pending arrivals and the pending bytes both reach zero, which
    with too small an expect_tx is part-way through the last copy: that copy is then split in two events, and the
    bytes still landing after the phase completed are counted against the barrier's next phase (its tx-count goes
    below zero), which is why "pending" ends negative there."""
    events, pending_arrivals, pending, landed, done = [], arrivals - 1, expect_tx, 0, False
    events.append((f"arrive.expect_tx({expect_tx} B)", landed, pending, pending_arrivals == 0 and pending == 0))
    for i, size in enumerate(copies):
        if not done and pending_arrivals == 0 and 0 < pending < size:   # this copy completes the phase mid-way
            landed, head = landed + pending, pending
            events.append((f"TMA copy {i}: first {head} of {size} B land", landed, 0, True))
            done, pending, size = True, 0, size - head
            label = f"TMA copy {i}: last {size} B land, in the next phase"
        else:
            label = f"TMA copy {i} lands ({size} B)" + (", in the next phase" if done else "")
        landed, pending = landed + size, pending - size
        done = done or (pending_arrivals == 0 and pending == 0)
        events.append((label, landed, pending, done))
    return events


def launch_registers(threads: int, file: int = REGISTER_FILE) -> int:
    """What ptxas may give each thread under __launch_bounds__(threads, 1): the file split evenly, rounded down to
    the allocation step of 8 registers (a warp gets them in chunks of 8 x 32)."""
    return file // threads // 8 * 8


def register_budget(producer: int, consumer: int, consumers: int = 2, launch_regs: int | None = None) -> dict:
    """Does a setmaxnreg split fit? setmaxnreg.inc draws from the CTA's own pool, which is what the CTA was given at
    launch (launch_regs per thread x its threads), not the SM's 65,536. A split past the pool never gets its
    registers: setmaxnreg.inc waits for them forever."""
    threads = 128 * (1 + consumers)
    launch_regs = launch_registers(threads) if launch_regs is None else launch_regs
    legal = all(v % 8 == 0 and 24 <= v <= 256 for v in (producer, consumer))
    total = 128 * producer + 128 * consumers * consumer
    pool = launch_regs * threads
    return {"registers": total, "pool": pool, "file": REGISTER_FILE, "fits": total <= pool, "legal_values": legal,
            "start_cap": launch_regs, "threads": threads}


def blocks_per_sm(registers: int, threads: int, smem_bytes: int = 0, smem_per_sm: int = SMEM_PER_SM,
                  max_threads: int = MAX_THREADS_PER_SM) -> dict:
    """How many blocks of a kernel fit on one SM at once, and which resource decides. Registers are allocated per
    warp in chunks of 8 per thread (256 per warp), so 130 registers cost as much as 136."""
    per_warp = -(-registers // 8) * 8 * 32
    warps = threads // 32
    by = {"registers": REGISTER_FILE // (per_warp * warps), "threads": max_threads // threads,
          "shared memory": smem_per_sm // smem_bytes if smem_bytes else 99}
    limit = min(by, key=by.get)
    return {"blocks": by[limit], "limited_by": limit, "registers_per_thread_allocated": per_warp // 32, **by}


def ring_parities(stages: int, k_tiles: int) -> list[dict]:
    """The mbarrier handshake of the full/empty ring of rungs 08 to 10, step by step: k tile `it` (in the persistent
    rung 10, counted over every tile the block computes) uses slot it % stages on lap it // stages. The consumer
    waits on the slot's full barrier for the phase of that lap (parity lap % 2); the producer waits on its empty
    barrier for the phase before (parity (lap - 1) % 2), which a freshly initialised barrier reports as complete,
    so lap 0 never waits and nobody arrives on the empty barriers in advance."""
    return [{"it": it, "slot": it % stages, "lap": it // stages, "consumer_waits_full": (it // stages) % 2,
             "producer_waits_empty": ((it // stages) & 1) ^ 1, "producer_may_wait": it >= stages}
            for it in range(k_tiles)]


class _Barrier:
    """An mbarrier as the PTX ISA describes it, without transaction bytes: a phase completes when its pending
    arrivals reach zero, and the count reloads. A parity wait passes once the phase of that parity has completed,
    that is while the current phase has the other parity."""

    def __init__(self, count: int):
        self.count, self.pending, self.phase = count, count, 0

    def arrive(self) -> None:
        self.pending -= 1
        if self.pending == 0:
            self.phase, self.pending = self.phase + 1, self.count

    def passed(self, parity: int) -> bool:
        return (self.phase & 1) != parity


def ring_run(stages: int, tiles: int, consumers: int = 2, empty_count: int | None = None,
             release: str = "after_wait", wgmma_clocks: int = 8, copy_clocks: int = 2, skew: int = 0) -> dict:
    """Rung 08's full/empty ring, clock by clock, to show what its classic mistakes do without a GPU. The producer
    waits on empty[s] for the parity of the phase before its lap, then its copy lands copy_clocks later and completes
    full[s]. Consumer c (starting c * skew clocks late) waits on full[s] for its lap's parity, issues the tile's
    wgmma group, which reads slot s for wgmma_clocks, then waits until at most one group is pending and releases
    the slot of the group before it (release="after_wait", as the kernel does) or releases the slot of the group it
    just committed (release="at_commit"). empty[s] expects empty_count arrivals (default: one per consumer).

    Returns {"outcome": "correct" | "race" | "hang", "why": one sentence, "tile": the tile overwritten or never
    issued (None when correct), "by": the tile that overwrote it, "clock": when}."""
    count = consumers if empty_count is None else empty_count
    full, empty = [_Barrier(1) for _ in range(stages)], [_Barrier(count) for _ in range(stages)]
    reading: list[list] = [[] for _ in range(stages)]   # (consumer, tile, until) per slot: wgmma groups reading it
    landing: list = []                       # (clock, tile) copies in flight
    issued, nxt = 0, [0] * consumers         # the producer's next tile; each consumer's next tile
    groups = [[] for _ in range(consumers)]  # (tile, slot, done clock) per consumer, oldest first
    state = ["wait_full"] * consumers
    idle, clock = 0, 0
    while clock < 100 * tiles * (wgmma_clocks + copy_clocks):
        moved = False
        for when, kt in [x for x in landing if x[0] == clock]:   # a copy lands: its slot must be free of readers
            s = kt % stages
            live = [(c, t) for c, t, until in reading[s] if until > clock]
            if live:
                c, t = live[0]
                return {"outcome": "race", "why": f"tile {kt} landed in slot {s} while consumer {c}'s wgmma still read "
                        f"tile {t} from it: nothing faults, C is wrong", "tile": t, "by": kt, "clock": clock}
            full[s].arrive()
            landing.remove((when, kt))
            moved = True
        if issued < tiles and empty[issued % stages].passed(((issued // stages) & 1) ^ 1):
            landing.append((clock + copy_clocks, issued))
            issued, moved = issued + 1, True
        for c in range(consumers):
            if clock < c * skew:
                continue
            kt = nxt[c]
            if state[c] == "wait_full" and kt < tiles and full[kt % stages].passed((kt // stages) & 1):
                s = kt % stages
                groups[c].append((kt, s, clock + wgmma_clocks))
                reading[s].append((c, kt, clock + wgmma_clocks))
                if release == "at_commit":
                    empty[s].arrive()
                state[c], moved = "wait_group", True
            elif state[c] == "wait_group" and all(done <= clock for _, _, done in groups[c][:-1]):
                if release == "after_wait" and len(groups[c]) > 1:
                    empty[groups[c][-2][1]].arrive()   # the group before the newest has finished reading its slot
                groups[c] = groups[c][-1:]
                nxt[c], state[c], moved = kt + 1, "wait_full", True
            elif state[c] == "wait_full" and kt == tiles and groups[c]:
                if all(done <= clock for _, _, done in groups[c]):
                    if release == "after_wait":
                        empty[groups[c][-1][1]].arrive()
                    groups[c], moved = [], True
        idle = 0 if moved or landing else idle + 1
        if all(n == tiles and not g for n, g in zip(nxt, groups)) and issued == tiles and not landing:
            return {"outcome": "correct", "why": f"all {tiles} tiles went through the {stages}-slot ring with no "
                    "slot refilled while it was read", "tile": None, "by": None, "clock": clock}
        if idle > wgmma_clocks + copy_clocks + consumers * skew + 2:
            if issued < tiles:
                s, lap = issued % stages, issued // stages
                why = (f"empty[{s}] expects {count} arrivals a phase and each use of the slot brings {consumers}, so "
                       "the phase never completes" if count > consumers else
                       f"each use of the slot brings {consumers} arrivals and completes {consumers // count} phases of "
                       f"empty[{s}], so the parity the producer needs was current only between two arrivals")
                return {"outcome": "hang", "why": f"the producer waits forever on empty[{s}] for parity "
                        f"{(lap & 1) ^ 1} before tile {issued}: {why}", "tile": issued, "by": None, "clock": clock}
            c = min(range(consumers), key=lambda i: nxt[i])
            return {"outcome": "hang", "why": f"consumer {c} waits forever on full[{nxt[c] % stages}] for tile {nxt[c]}",
                    "tile": nxt[c], "by": None, "clock": clock}
        clock += 1
    raise RuntimeError("ring_run: the model ran past its clock limit without deciding")


EPILOGUE_STEPS = ("write", "fence", "bar", "store")


def epilogue_order(steps) -> tuple[bool, str]:
    """Rung 10's TMA-store epilogue for one chunk, as the steps every consumer thread runs in order: "write" (its
    accumulators into the shared buffer, generic-proxy stores), "fence" (fence.proxy.async.shared::cta), "bar"
    (the warpgroup's named barrier) and "store" (the TMA store, issued by thread 0 only). The copy engine reads
    through the async proxy, so it is guaranteed the new values only if every writer fenced after writing, then
    all met at a barrier, then thread 0 stored. Returns (guaranteed?, why), in one sentence."""
    steps = list(steps) if not isinstance(steps, str) else steps.split()
    if any(x not in EPILOGUE_STEPS for x in steps) or steps.count("write") != 1 or steps.count("store") != 1:
        return False, (f"use each of {', '.join(map(repr, EPILOGUE_STEPS))}, with 'write' and 'store' exactly once "
                       "(a list such as ['write', 'store'])")
    w, st = steps.index("write"), steps.index("store")
    if st < w:
        return False, "the store is issued before the values are written: it copies whatever the buffer held"
    fences = [i for i in range(w + 1, st) if steps[i] == "fence"]
    if not fences:
        return False, ("no fence between the writes and the store: the writes are generic-proxy stores, the copy "
                       "engine reads through the async proxy, and without fence.proxy.async it may read the bytes "
                       "the buffer held before")
    if not any(steps[i] == "bar" for i in range(fences[0] + 1, st)):
        return False, ("no barrier between the writers' fences and thread 0's store: thread 0 may issue the store "
                       "while other threads have not yet written or fenced their part of the chunk")
    return True, "every writer fences its writes, all meet at the barrier, then one thread stores: guaranteed"


def l2_bytes_per_k_tile(bm: int, bn: int, bk: int, cluster: int, itemsize: int = 2) -> dict:
    """Bytes one CTA asks L2 for per k tile: its own A rows, and its share of B (all of it, or 1/cluster of it
    when the cluster multicasts B), against the bytes that land in its shared memory."""
    a, b = bm * bk * itemsize, bn * bk * itemsize
    return {"requested": a + b // cluster, "landed": a + b, "saved": 1 - (a + b // cluster) / (a + b)}


# ---- launches back to back, with and without programmatic dependent launch (chapter 10, step 6) ---------------------

def launch_timeline(launches: int = 3, pdl: bool = False, place: float = 0.8, prologue: float = 1.0,
                    loop: float = 4.0, epilogue: float = 1.0, drain: float = 0.6) -> list[dict]:
    """Times of `launches` launches of one kernel queued back to back on a stream (made-up durations, exact order),
    each grid on fewer SMs than the chip has. Plain: a launch is placed only after the previous grid has drained and
    its memory is flushed (`drain`), then its CTAs are placed (`place`) and run their prologue, k loop and epilogue.
    With PDL (10_pdl: griddepcontrol.wait after the prologue, then launch_dependents): the next grid is placed once
    every CTA of this one has passed its trigger, on the SMs this grid leaves idle; it runs its prologue there and
    waits until this grid has completed and drained. One dict a launch: start (placement begins), placed (its CTAs
    hold their SMs), ready (prologue done), go (its wait returns: the first load may issue), done (the grid's last
    CTA exits), drained (complete, its memory flushed)."""
    out: list[dict] = []
    for i in range(launches):
        if not out:
            start = 0.0
        elif pdl:
            start = out[-1]["go"]  # the previous grid's CTAs trigger right after their own wait
        else:
            start = out[-1]["done"] + drain
        ready = start + place + prologue
        go = max(ready, out[-1]["done"] + drain) if (pdl and out) else ready
        done = go + loop + epilogue
        out.append({"start": start, "placed": start + place, "ready": ready, "go": go, "done": done,
                    "drained": done + drain})
    return out
