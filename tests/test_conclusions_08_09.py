"""What chapters 08 and 09 teach, held to the book's run. Their measured numbers are rendered from the run
(helpers.prose; nbval holds the rendered text to the replayed run), so these tests hold conclusions, not sentences:
each assertion says which taught conclusion the run no longer supports. Runs without a GPU (it reads results/)."""
import json
import math

import pytest

from helpers import results
from helpers.figures import limit_of, recorded_profile
from helpers.ladder import Row
from helpers.prose import step
from helpers.registry import ROOT

from conftest import prose, says

SIZES = (4096, 8192)


@pytest.fixture(scope="module")
def data():
    return results.load(results.path_for())


def _row(data, rung: str, n: int) -> Row:
    return Row.from_entry(data["gemm"][results.gemm_key(rung, n, n, n)], "recorded")


def _text(name: str) -> str:
    """A chapter's markdown cells and the paragraphs its rendered-prose cells show (their saved Markdown output)."""
    cells = json.loads((ROOT / "chapters" / name).read_text())["cells"]
    shown = ["".join(c["source"]) if c["cell_type"] == "markdown" else
             "".join("".join(o.get("data", {}).get("text/markdown", "")) for o in c.get("outputs", []))
             for c in cells if c["cell_type"] == "markdown" or "remove-input" in c["metadata"].get("tags", [])]
    return prose("\n".join(shown))


def _per_byte(rung_id: str) -> float:
    """FLOP per byte a k tile loads, BM x BN / (BM + BN), from the rung's own constants."""
    from helpers import build, rung
    k = build(rung(rung_id)).consts
    return k["BM"] * k["BN"] / (k["BM"] + k["BN"])


def _wait_share(data, rung_id: str) -> float:
    """Consumer 0's median wait for data as a share of its median tile, in the recorded timeline at 4096."""
    from helpers.timeline import summary
    s = summary(data["timeline"][f"{rung_id}@4096"])
    return s["wait_for_data_cycles"][0] / s["cycles_per_tile"][0]


def test_chapter_08_rung_is_a_step_down_from_rung_07(data):
    """'Slower than rung 07, and why': slower at both sizes beyond the rounds' spread, and further behind at 8192 than
    at 4096 (the gap the per-tile napkin cannot explain: even rung 08's best round at 8192 against rung 07's worst
    stays under its worst at 4096 against rung 07's best); at 4096 the ratio sits between the napkin's two models
    (bytes bind: 64 / 85.3; latency binds: above 1). How much further differs by board, with the HBM rate (x0.61 on
    the H100's run, x0.82 on the H200's): cell m_slower renders whether it is "much slower" and says why."""
    assert says(_text("08_warp_specialization.ipynb"), "## Slower than rung 07, and why")
    down = {n: step(_row(data, "07_tma", n), _row(data, "08_warp_specialized", n)) for n in SIZES}
    assert all(d.falls for d in down.values()), f"rung 08 is no longer slower than rung 07 at both sizes: {down}"
    best8 = _row(data, "08_warp_specialized", 8192).tflops_iqr[1] / _row(data, "07_tma", 8192).tflops_iqr[0]
    worst4 = _row(data, "08_warp_specialized", 4096).tflops_iqr[0] / _row(data, "07_tma", 4096).tflops_iqr[1]
    assert best8 < worst4, f"rung 08 is no longer further behind rung 07 at 8192 than at 4096: {down}"
    bytes_model = _per_byte("08_warp_specialized") / _per_byte("07_tma")
    assert bytes_model < down[4096].factor < 1, \
        f"at 4096 rung 08 against rung 07 is no longer between the napkin's two models: {down[4096].factor:.2f}"


def test_chapter_08_profile_says_the_ring_is_starved_of_bytes(data):
    """At 8192 rung 08 reads several times rung 07's DRAM bytes (the grid's shape: half the reuse of each Bt panel),
    streamed close to the HBM copy roof measured in the same run, and the consumers' wait on a `full` barrier
    (`long_scoreboard`) is one of its top two stalls, several times rung 07's share. Whether it is the top one differs
    by board (first on the H100's run; second to `wait` on the H200's, whose HBM is faster): cells c08-profile-md and
    f82d8aea render which."""
    from helpers.ceilings import recorded_ceilings
    w, t = recorded_profile("08_warp_specialized", 8192), recorded_profile("07_tma", 8192)
    assert w["dram_bytes"] > 1.5 * t["dram_bytes"], \
        f"rung 08 no longer reads much more from DRAM than rung 07 at 8192: {w['dram_bytes'] / t['dram_bytes']:.2f}"
    hbm = w["dram_bytes"] / (w["duration_us"] * 1e-6) / 1e12 / recorded_ceilings()["hbm_copy"].value
    assert hbm > 0.85, f"rung 08 no longer streams from DRAM near the HBM roof at 8192: {hbm:.0%} of it"
    stalls = w["stall_reasons"]
    assert "long_scoreboard" in sorted(stalls, key=lambda k: -stalls[k])[:2] and \
        stalls["long_scoreboard"] > 3 * t["stall_reasons"]["long_scoreboard"], \
        f"rung 08's wait for bytes is no longer a top stall, several times rung 07's: {stalls}"
    assert not says(_text("08_warp_specialization.ipynb"), "This chapter does not measure it")


def test_chapter_08_timeline_shows_the_copies_issued_early_and_the_consumers_waiting(data):
    """The timeline: each copy issued long before a consumer needs it, yet consumer 0 waits for data more than a
    fifth of each tile, and a tile takes well over the 512 clocks of math it holds at peak."""
    from helpers.timeline import summary
    s = summary(data["timeline"]["08_warp_specialized@4096"])
    assert s["issue_to_ready_cycles"] > 2 * s["cycles_per_tile"][0], f"the copies are no longer issued long before: {s}"
    assert _wait_share(data, "08_warp_specialized") > 0.2, f"rung 08's consumers no longer wait for bytes: {s}"
    assert s["cycles_per_tile"][0] > 1.2 * 512, f"a tile of rung 08 no longer takes well over 512 clocks: {s}"
    assert s["wait_for_data_cycles"][0] > s["cycles_per_tile"][0] - 512, \
        f"the consumers' wait is no longer longer than all the idle a tile can hold (it overlaps wait_group 1): {s}"


def test_chapter_08_littles_law_says_bandwidth(data):
    """The ring is full (each copy issued long before it is needed), so the tile period is set by the delivery rate:
    at the 512-clock floor the block would need more than the TMA roof can deliver, L2 delivers most of that roof at
    4096, and the bytes model at the two rungs' measured delivery rates gives rung 08's ratio to rung 07 within 5%.
    The wgmmas' operand reads per unit of tensor-pipe busy rise from rung 07 to rung 08 and stay under the read port."""
    from helpers.ceilings import recorded_ceilings
    from helpers.figures.profile import port_of
    lim, p8, p7 = limit_of("08_warp_specialized", 4096), *(recorded_profile(r, 4096) for r in ("08_warp_specialized", "07_tma"))
    roof = recorded_ceilings()[lim["roof"]].value
    need = 32768 / 512 * 132 * p8["sm_clock_mhz"] * 1e6 / 1e12
    assert need > roof and lim["l2_fraction_of_roof"] > 0.85, f"rung 08 is no longer fed at the TMA roof: {lim}"
    ratio = _row(data, "08_warp_specialized", 4096).tflops / _row(data, "07_tma", 4096).tflops
    fed = _per_byte("08_warp_specialized") / _per_byte("07_tma") * p8["l2_tbps"] / p7["l2_tbps"]
    assert abs(fed / ratio - 1) < 0.05, f"the bytes model at the measured rates no longer gives the ratio: {fed:.2f}"
    reads = {r: port_of(r, 4096)["smem_read_pct"] / recorded_profile(r, 4096)["tensor_active_pct"]
             for r in ("08_warp_specialized", "07_tma")}
    assert reads["07_tma"] < reads["08_warp_specialized"] < 1, f"the operand reads per FLOP no longer rise, under the port: {reads}"


def test_chapter_08_the_roles_alone_are_a_small_real_step(data):
    """Rung 07's tile held fixed (08_same_tile): the roles alone rise beyond the rounds' spread at both sizes, a small
    step, within the napkin's "about a tenth" (under x1.15), not a multiple; the smaller tile costs more at 8192 than
    at 4096; setmaxnreg alone (rung 09) runs ahead where the napkin predicted level. The profile: long_scoreboard on
    top, L2 nearer its roof than rung 07, the tensor pipe busier, no more DRAM traffic than rung 07, and `barrier`
    under a third of its share in rung 07. What differs by board, rendered by cells c08-same-tile-result,
    c08-profile-same-tile-md and f82d8aea: the step's size against the tenth (under half at both sizes on the H100's
    run; about half at 4096 and about all of it at 8192 on the H200's), the DRAM traffic (the same as rung 07's on the
    H100's run, two thirds of it on the H200's, where rung 07 itself reads more), and whether `barrier` left the top
    three (on the H100's run; third on the H200's)."""
    roles = {n: step(_row(data, "07_tma", n), _row(data, "08_same_tile", n)) for n in SIZES}
    assert all(r.rises and r.factor < 1.15 for r in roles.values()), \
        f"the roles alone are no longer a small real step, within the napkin's tenth: {roles}"
    shrink = {n: step(_row(data, "08_same_tile", n), _row(data, "08_warp_specialized", n)) for n in SIZES}
    assert all(s.falls for s in shrink.values()) and shrink[8192].factor < shrink[4096].factor, \
        f"the smaller tile no longer costs, and more at 8192: {shrink}"
    alone = {n: step(_row(data, "08_same_tile", n), _row(data, "09_setmaxnreg", n)) for n in SIZES}
    assert all(a.rises for a in alone.values()), f"rung 09 no longer runs ahead of 08_same_tile: {alone}"
    held, before = limit_of("08_same_tile", 8192), limit_of("07_tma", 8192)
    assert held["top_stall"] == "long_scoreboard", f"08_same_tile's top stall is now {held['top_stall']}"
    assert held["l2_fraction_of_roof"] > before["l2_fraction_of_roof"], "08_same_tile no longer nearer the L2 roof"
    p, p7 = recorded_profile("08_same_tile", 8192), recorded_profile("07_tma", 8192)
    assert p["tensor_active_pct"] > p7["tensor_active_pct"], "08_same_tile's tensor pipe is no longer busier"
    assert p["dram_bytes"] / p7["dram_bytes"] < 1.05, "08_same_tile now reads more from DRAM than rung 07"
    assert p["stall_reasons"]["barrier"] < p7["stall_reasons"]["barrier"] / 3, \
        f"`barrier` is no longer far below rung 07's share in 08_same_tile: {p['stall_reasons']}"


def test_chapter_09_compares_rungs_as_the_run_measured(data):
    """Rung 09 against rung 08 (a little under the 85.3 / 64 the bytes allow at 4096, more at 8192, where the wide
    tile also undoes rung 08's DRAM traffic: under half of it), against rung 07 (ahead at both sizes, by under a
    fifth: the drain's tenth the napkin priced, plus setmaxnreg's small step), and against 08_same_tile (setmaxnreg
    alone: the napkin's tie missed, the rounds apart). The profile: against 08_same_tile the tensor pipe busier and L2
    delivering more, with the same DRAM traffic. Whether the gain at 8192 is "far larger" differs by board (x1.80
    against x1.24 on the H100's run, x1.39 against x1.24 on the H200's): cell 1921b206 renders which."""
    up = {n: step(_row(data, "08_warp_specialized", n), _row(data, "09_setmaxnreg", n)) for n in SIZES}
    allows = _per_byte("09_setmaxnreg") / _per_byte("08_warp_specialized")
    assert all(u.rises for u in up.values()), f"rung 09 is no longer faster than rung 08 at both sizes: {up}"
    assert allows - 0.2 <= up[4096].factor <= allows, f"at 4096 rung 09's gain over rung 08 left the napkin: {up}"
    assert up[8192].factor > up[4096].factor, f"at 8192 the gain over rung 08 is no longer larger: {up}"
    d9, d8 = (recorded_profile(r, 8192)["dram_bytes"] for r in ("09_setmaxnreg", "08_warp_specialized"))
    assert d9 < 0.5 * d8, f"at 8192 rung 09 no longer reads far less from DRAM than rung 08: x{d9 / d8:.2f}"
    on07 = {n: step(_row(data, "07_tma", n), _row(data, "09_setmaxnreg", n)) for n in SIZES}
    assert all(o.rises and o.factor < 1.2 for o in on07.values()), \
        f"rung 09 is no longer a little ahead of rung 07 at both sizes: {on07}"
    alone = {n: step(_row(data, "08_same_tile", n), _row(data, "09_setmaxnreg", n)) for n in SIZES}
    assert all(a.rises and a.factor < 1.1 for a in alone.values()), \
        f"setmaxnreg alone is no longer small and real: {alone}"
    p9, p8 = recorded_profile("09_setmaxnreg", 8192), recorded_profile("08_same_tile", 8192)
    assert p9["tensor_active_pct"] > p8["tensor_active_pct"] and p9["l2_tbps"] > p8["l2_tbps"], \
        "with setmaxnreg the tensor pipe is no longer busier and L2 no longer delivers more"
    assert abs(p9["dram_bytes"] / p8["dram_bytes"] - 1) < 0.05, "setmaxnreg changed the DRAM traffic"
    assert limit_of("09_setmaxnreg", 8192)["top_stall"] == "long_scoreboard", "rung 09's top stall moved"


def test_chapter_09_timeline_is_close_to_the_floor_though_the_wait_looks_large(data):
    """A consumer's median tile close to the 1,024 clocks of math it holds at peak; its wait for data larger than in
    rung 08, and not idle tensor time."""
    from helpers.timeline import summary
    s09 = summary(data["timeline"]["09_setmaxnreg@4096"])
    assert max(s09["cycles_per_tile"]) <= 1.15 * 1024, f"rung 09's tile is no longer close to the floor: {s09}"
    assert _wait_share(data, "09_setmaxnreg") > _wait_share(data, "08_warp_specialized") > 0.2, \
        "rung 09's consumers no longer wait a larger share of each tile than rung 08's"
    # at the same size, the profile: the math at peak takes as many of the kernel's clocks as the tensor pipe is busy,
    # and a round of blocks lasts longer than block (0, 0)'s main loop (the time outside it: fill, epilogue, exit)
    import numpy as np
    tl, p4 = data["timeline"]["09_setmaxnreg@4096"], recorded_profile("09_setmaxnreg", 4096)
    cycles = p4["duration_us"] * p4["sm_clock_mhz"]
    work = 512 * 64 * 1024 / 132 / cycles
    assert abs(100 * work - p4["tensor_pipe_pct"]) < 3, f"the tensor pipe is no longer busy as long as its math: {work:.0%}"
    roles = np.asarray(tl["roles"])
    span = roles[1:, -1, 1].max() - roles[0, 0, 0]
    assert 0.03 < 1 - span / (cycles / 4) < 0.25, f"the time outside the main loop left its range: {span} of {cycles / 4:.0f}"


def test_chapter_09_wide_tile_spills_without_setmaxnreg_and_not_with_it(data):
    """Chapter 09's last section: the 128 x 320 tile built from rung 08's file (no setmaxnreg) and from rung 09's. The
    two builds differ by exactly rung 09's own diff; one spills and serializes its wgmmas, the other does neither. The
    spill costs more than the napkin's (every local byte an L1 hit); the wide tile beats the 128 x 256 one at both
    sizes within what the waves and the bytes allow; the spilled bytes go out to DRAM."""
    import difflib
    from helpers import build, rung
    from helpers.csource import built_source
    from helpers.hardware import SMEM_BYTES_PER_CLK, SMS, TENSOR_FLOP_PER_CLK

    def changed(a, b):
        x, y = built_source(rung(a))[1], built_source(rung(b))[1]
        return [line for line in difflib.unified_diff(x.splitlines(), y.splitlines(), lineterm="", n=0)
                if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed("09_wide_spill", "09_wide") == changed("08_same_tile", "09_setmaxnreg")
    spill, wide = build(rung("09_wide_spill")), build(rung("09_wide"))
    s, w = spill.resources["gemm_warp_specialized"], wide.resources["gemm_setmaxnreg"]
    assert s.spill_stores > 1000 and s.spill_loads > 1000 and "C7512" in spill.log
    assert w.spill_stores == w.spill_loads == 0 and "C75" not in wide.log
    # the napkin as the chapter computes it: the local bytes of one k tile at the banks' rate, against its tensor work
    sass = spill.sass().splitlines()
    mma = [i for i, line in enumerate(sass) if "HGMMA" in line]
    moved = sum(8 if ".64" in line else 4 for line in sass[mma[0]:mma[-1] + 1] if "STL" in line or "LDL" in line)
    k = spill.consts
    napkin = moved * 256 / SMEM_BYTES_PER_CLK / (2 * k["BM"] * k["BN"] * k["BK"] / TENSOR_FLOP_PER_CLK)
    slow = {n: _row(data, "09_wide", n).tflops / _row(data, "09_wide_spill", n).tflops for n in (5120, 10240)}
    assert min(slow.values()) > 2 * napkin, f"the spill no longer costs far above the napkin's x{napkin:.1f}: {slow}"
    beats = {n: step(_row(data, "09_setmaxnreg", n), _row(data, "09_wide", n)) for n in (5120, 10240)}
    assert all(b.rises for b in beats.values()), f"the wide tile no longer beats the 128 x 256 tile: {beats}"
    bytes_allow = _per_byte("09_wide") / _per_byte("09_setmaxnreg")

    def waves_allow(n):
        rounds = lambda bn: math.ceil((n // 128) * (n // bn) / SMS) * bn  # noqa: E731
        return rounds(256) / rounds(320)
    assert waves_allow(10240) == 1 and beats[10240].factor <= bytes_allow, \
        f"at 10240 the wide tile gains more than its bytes allow: {beats[10240]} against x{bytes_allow:.2f}"
    assert beats[5120].factor <= waves_allow(5120) * bytes_allow, \
        f"at 5120 the wide tile gains more than its waves and bytes allow: {beats[5120]}"
    p, q = recorded_profile("09_wide_spill", 10240), recorded_profile("09_wide", 10240)
    assert p["local_bytes"] > 0 and q["local_bytes"] == 0, "the wide build now spills, or the spilling one does not"
    assert p["dram_bytes"] > 10 * q["dram_bytes"], "the spilled bytes no longer go out to DRAM"
    assert p["tensor_active_pct"] < 10, f"the spilling build's tensor pipe is busy {p['tensor_active_pct']:.0f}%"


@pytest.mark.parametrize("rung_id", ("08_same_tile", "09_setmaxnreg"))
def test_chapters_08_09_warps_wait_on_full_slots_and_the_port_is_level_with_the_tensor_pipe(rung_id):
    """At both sizes the top stall site is the mbarrier.try_wait loop, and it is the consumers' wait on a `full` slot
    (the branch runs as often as the first HGMMA: once per consumer warp and k tile), with `wgmma.wait_group 1`
    second; not a bar.sync. Shared memory's load (operand reads + TMA fills) stays level with the tensor pipe, within
    a few points: both follow the tensor rate, 80 and 48 B per tensor clock for the 128 x 256 tile (a load, not a
    roof: experiments/smem_port moved more than 128 B a clock of the two)."""
    from helpers.figures.profile import port_of
    from helpers.sites import WAIT_LOOP
    for n in SIZES:
        lim = limit_of(rung_id, n)
        top, second = lim["sites"]["sites"][:2]
        assert top["kind"] == WAIT_LOOP, f"{rung_id}'s warps no longer wait most in the mbarrier loop at {n}: {top}"
        ran, hgmma = top["executed"], lim["sites"]["mma_executed"]
        assert ran == hgmma, f"{rung_id}'s top wait loop is no longer the consumers' (ran {ran}, HGMMA {hgmma})"
        assert second["opcode"].startswith("WARPGROUP.DEPBAR"), f"wgmma.wait_group is no longer second: {second}"
        assert not any(s["kind"].startswith("bar.sync") for s in lim["sites"]["sites"][:3]), \
            f"a bar.sync is now among {rung_id}'s top sites at {n}"
        port = port_of(rung_id, n)["smem_port_pct"]
        assert abs(port - lim["pipe_pct"]) < 3, \
            f"{rung_id}'s port ({port:.0f}%) is no longer level with its tensor pipe ({lim['pipe_pct']:.0f}%) at {n}"


def test_chapter_09_spill_napkin_and_epilogue_sass():
    """Chapter 09: the spilling 128 x 320 build's 170 KiB of shared memory rounds the carveout up to 196 KiB, leaving
    60 KiB of the 256 KiB L1 array, less than its consumers' stack; the epilogue's R2URs under the 168 cap copy the
    stores' memory descriptor (one register pair) into uniform registers, not the stores' addresses."""
    import re
    from helpers import build, chapter_rungs, rung
    from helpers.hardware import KIB, SMEM_RESERVED_PER_BLOCK
    _, spill, _ = chapter_rungs("09")
    b = build(spill)
    res = b.resources[spill.entry]
    smem = b.consts["SMEM_BYTES"] + res.smem_static + SMEM_RESERVED_PER_BLOCK
    carve = min(k * KIB for k in (0, 8, 16, 32, 64, 100, 132, 164, 196, 228) if k * KIB >= smem)
    assert 256 * KIB - carve == 60 * KIB, "the spilling build no longer leaves 60 KiB of L1"
    assert res.stack_bytes * b.consts["CONSUMERS"] * 128 > 256 * KIB - carve, "the consumers' stack now fits in L1"
    sass = build(rung("08_same_tile")).sass().splitlines()
    stg = [i for i, x in enumerate(sass) if "STG" in x]
    sources = {m.group(1) for x in sass[stg[0]:stg[-1] + 1] for m in [re.search(r"R2UR\s+UR\d+,\s*(R\d+)", x)] if m}
    assert len(sources) == 2, f"the epilogue's R2URs copy {sorted(sources)}, not one descriptor pair"
    descs = {m.group(1) for x in build(rung("09_setmaxnreg")).sass().splitlines()
             for m in [re.search(r"STG\S*\s+desc\[(UR\d+)\]", x)] if m}
    assert len(descs) == 1, f"compiled against 240 the stores name {sorted(descs)}, not one descriptor"
    text = _text("09_setmaxnreg.ipynb")
    assert "memory descriptor" in text and "hangs." not in text.replace("by the ISA's rules hangs", "")
