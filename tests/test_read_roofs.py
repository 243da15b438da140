"""The like-for-like read roofs (issue 38, D): LDG, cp.async and TMA over the same working sets, each CTA its own
slice; TMA once more in probe_tma_l2's shared walk; and the read-only HBM probe. Their kernels compile without spills
and hold what their comments claim, the registry and the ceilings list them, and every roof states its working set.
The GPU tests at the end run each probe once, small."""
import re

import pytest

from helpers import PROBES, build, probe
from helpers.ceilings import _PROBE_OF, CEILINGS, READ_ROOFS, ceiling, recorded_ceilings
from helpers.probes import READ_PATHS, READ_SETS, Reading, read_plan, read_roof

NEW_PROBES = ("read_ldg", "read_cp_async", "read_tma")
NEW_CEILINGS = ("hbm_read", *READ_ROOFS)
SMS = 132  # an H100 SXM or an H200: the sets the ids name


def _sass(p) -> str:
    """The SASS of one probe's entry alone."""
    text = build(p).sass()
    start = text.index(f"\n{p.entry}:")
    return text[start:text.index("//----", start)]


@pytest.mark.parametrize("pid", NEW_PROBES)
def test_the_read_probes_compile_without_spills(pid):
    p = probe(pid)
    b = build(p)
    res = b.resources[p.entry]
    assert res.spill_stores == res.spill_loads == res.stack_bytes == 0, (pid, res)
    for op in p.sass_has:
        assert b.count(op, p.entry) > 0, (pid, op)


def test_the_ldg_probe_keeps_four_loads_in_flight_at_full_occupancy():
    # READ_UNROLL loads issue before the first add that consumes one, and 32 registers let 8 CTAs of 256 threads share
    # an SM's 65,536: the deepest LDG schedule (8 CTAs/SM) is what read_plan says it is.
    p = probe("read_ldg")
    b = build(p)
    sass = _sass(p)
    unroll = b.consts["READ_UNROLL"]
    first_add = sass.index("FADD")
    assert sass[:first_add].count("LDG.E.128") == unroll, sass[:first_add]
    assert b.resources[p.entry].registers * b.consts["THREADS"] * 8 <= 65536, b.resources[p.entry]


def test_the_cp_async_probe_waits_for_all_but_its_newest_fills():
    # cp.async.wait_group CP_SLOTS - 1: CP_SLOTS fills in flight per thread, the in-flight bytes read_plan counts.
    p = probe("read_cp_async")
    slots = build(p).consts["CP_SLOTS"]
    assert re.search(rf"DEPBAR\.LE SB0, 0x{slots - 1:x} ;", _sass(p)), "no wait for all but CP_SLOTS - 1 groups"


def test_every_tma_schedule_fits_shared_memory_and_its_slots():
    p = probe("read_tma")
    b = build(p)
    static = b.resources[p.entry].smem_static
    for cid, (path, name, shared) in READ_ROOFS.items():
        if path != "tma":
            continue
        for s in read_plan(path, READ_SETS[name], SMS, shared):
            rows, slots, boxes = s.args
            assert slots <= b.consts["READ_TMA_SLOTS"] and rows % 8 == 0 and rows <= 256, (cid, s)
            assert s.per_sm * (s.in_flight + static + 1024) <= 228 * 1024, (cid, s)  # 1 KiB reserved per CTA


def test_the_registry_and_the_ceilings_list_the_new_probes():
    assert set(NEW_PROBES) <= {p.id for p in PROBES}
    assert set(NEW_CEILINGS) <= set(CEILINGS)
    assert {_PROBE_OF[cid] for cid in NEW_CEILINGS} <= {p.id for p in PROBES}
    # three paths at three sets, each CTA its own slice, and TMA's shared walk at the small set
    assert sorted(READ_ROOFS) == sorted([f"read_{p}@{s}" for p in READ_PATHS for s in READ_SETS]
                                        + ["read_tma_shared@2.7MB"])
    for cid in ("l2_read", "tma_l2_read", "tma_l2_gemm", "tma_multicast", "hbm_copy"):  # chapters read these
        assert cid in CEILINGS


def test_tools_ceilings_measures_only_what_it_is_given():
    from tools.ceilings import chosen, main
    assert chosen(["hbm_read", "read_*"]) == list(NEW_CEILINGS)
    assert chosen([]) == list(CEILINGS)
    with pytest.raises(KeyError, match="no ceiling matches 'read_nope'"):
        chosen(["read_nope"])
    assert main(["--list", "read_tma*"]) == 0
    assert main(["read_nope"]) == 2


@pytest.mark.parametrize("cid", NEW_CEILINGS)
def test_each_new_ceiling_states_its_working_set(cid):
    label = CEILINGS[cid][0]
    if cid == "hbm_read":
        assert "2 GiB" in label
        return
    path, name, shared = READ_ROOFS[cid]
    mb = float(name.removesuffix("MB"))
    assert f"{name.removesuffix('MB')} MB working set ({READ_SETS[name] // 1024} KiB per SM" in label, label
    plan = read_plan(path, READ_SETS[name], SMS, shared)
    rates = {s.name: Reading(1.0 + i, 1755.0) for i, s in enumerate(plan)}
    got = read_roof(plan, rates, SMS, shared)
    d = got.detail
    assert got.value == max(r.value for r in rates.values()) and d["schedule"] == plan[-1].name
    assert abs(d["working set, MB"] - mb) <= 0.01 * mb and d["working set, bytes"] == plan[-1].set_bytes, d
    assert ("probe_tma_l2's walk" in d["sharing"]) == shared and (d["sharing"].startswith("none")) != shared
    assert set(d["schedules"]) == set(rates) and all("working set, MB" in e for e in d["schedules"].values())


@pytest.mark.parametrize("name", READ_SETS)
def test_the_three_paths_read_the_same_set_and_one_schedule_each_requests_no_line_twice(name):
    sets = {path: {s.set_bytes for s in read_plan(path, READ_SETS[name], SMS)} for path in READ_PATHS}
    assert all(v == {SMS * READ_SETS[name]} for v in sets.values()), sets
    for path in READ_PATHS:
        plan = read_plan(path, READ_SETS[name], SMS)
        assert any(SMS * s.per_sm * s.in_flight <= s.set_bytes for s in plan), (path, name)
        for s in plan:
            if path == "tma":  # every CTA the same number of its own whole boxes: the slices tile the set
                rows, _, boxes = s.args
                assert boxes % (SMS * s.per_sm) == 0 and boxes * rows * 128 == s.set_bytes, s


def test_the_shared_walk_shares_boxes_where_the_slices_do_not():
    # The 32 KiB boxes of probe_tma_l2's walk: fewer boxes than CTAs at 2.7 MB, so CTAs fetch one box at once; the set
    # is within half a box of the slices' set.
    shared = read_plan("tma", READ_SETS["2.7MB"], SMS, shared=True)
    assert any(s.args[2] < SMS * s.per_sm for s in shared), shared
    assert all(abs(s.set_bytes - SMS * READ_SETS["2.7MB"]) <= s.args[0] * 128 / 2 for s in shared), shared


def test_replay_works_without_the_new_ceilings_recorded():
    from helpers.gpu import why_not_live
    from helpers.store import NotRecorded
    if not why_not_live((9, 0), "sm_90a"):
        pytest.skip("this machine measures the ceilings live; replay is what is tested here")
    recorded = recorded_ceilings()
    assert "l2_read" in recorded
    for cid in NEW_CEILINGS:
        if cid in recorded:
            continue
        with pytest.raises(NotRecorded, match=re.escape(cid)):
            ceiling(cid)


@pytest.mark.gpu
@pytest.mark.parametrize("how", [("ldg", "2.7MB", False), ("cp_async", "2.7MB", False), ("tma", "8.7MB", False),
                                 ("tma", "2.7MB", True)], ids=lambda h: f"{h[0]}{'_shared' if h[2] else ''}@{h[1]}")
def test_each_read_probe_lands_its_bytes_and_states_its_set(how):
    # measure_read raises unless every probe's sink names the element or box its walk last read.
    from helpers.gpu import why_not_live
    from helpers.probes import measure_read
    needs = probe(f"read_{how[0]}").needs_cc
    reason = why_not_live(needs, "sm_90a" if needs >= (9, 0) else "")
    if reason:
        pytest.skip(reason)
    got = measure_read(*how, batch_ms=0.5)
    assert got.value > 0 and got.detail["working set, bytes"] > 0, got.detail


@pytest.mark.gpu
def test_hbm_read_reads_every_byte_of_more_than_l2():
    from helpers import device
    from helpers.probes import measure_hbm_read
    got = measure_hbm_read(0.25)
    assert 0.5 < got.value and got.detail["read per launch, bytes"] > 2 * device().l2_bytes, got.detail
