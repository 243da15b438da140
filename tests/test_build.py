"""Every registered kernel compiles for its arch with no GPU, and its SASS holds what its chapter claims."""
import re

import pytest

from helpers import PROBES, RUNGS, CompileError, build, opcode_families, rung
from helpers.compiler import parse_ptxas, sass_inventory
from helpers.csource import read_consts


@pytest.mark.parametrize("r", RUNGS, ids=lambda r: r.id)
def test_rung_sass_claims(r):
    b = build(r)
    inv = b.inventory(r.entry)
    assert sum(inv.values()) > 0, f"no SASS found for {r.entry}"
    for op in r.sass_has:
        assert b.count(op, r.entry) > 0, f"{r.id} claims {op} but its SASS has none: {inv.most_common(8)}"
    for op in r.sass_lacks:
        assert b.count(op, r.entry) == 0, f"{r.id} must not contain {op}"
    res = b.resources[r.entry]
    if "STL" in r.sass_has:  # the spill chapter 09 shows on purpose: it spills, and the wgmmas wait for it
        assert res.spill_stores > 0 and res.spill_loads > 0 and "C7512" in b.log, (r.id, res)
        return
    assert res.spill_stores == res.spill_loads == 0, f"{r.id} spills to local memory"
    assert res.stack_bytes == 0, f"{r.id} has a stack frame (a call or a local array)"
    # C7510, C7514, ...: each reason ptxas serializes the wgmmas has its own code; the sentence is the same
    assert "serialized" not in b.log and "C7508" not in b.log, f"{r.id}: ptxas serialized wgmma or ignored setmaxnreg"


@pytest.mark.parametrize("r", RUNGS, ids=lambda r: r.id)
def test_rung_geometry_constants(r):
    c = build(r).consts
    for name in (*r.tile, r.threads, *r.divides.values()):
        assert name in c, f"{r.id}: constexpr {name} not found in {r.path.name}"
    assert c[r.threads] <= 1024


def test_register_blocked_rungs_unroll_a_whole_tile_of_ffma():
    # The point of register blocking: one unrolled k-tile is BK*TM*TN FFMAs, the most common opcode.
    for rid in ("01_blocktile_2d", "01_vectorized", "01_warptiled"):
        r = next(x for x in RUNGS if x.id == rid)
        b = build(r)
        inv = b.inventory(r.entry)
        c = b.consts
        assert inv.most_common(1)[0][0] == "FFMA", (rid, inv.most_common(5))
        assert inv["FFMA"] >= c["BK"] * c["TM"] * c["TN"], (rid, inv["FFMA"])


def test_vectorized_rungs_use_wide_loads_only_where_claimed():
    # Chapter 01's claim, as counts from the constexprs: 16-byte global loads and stores (float4) start at
    # 01_vectorized; from 01_blocktile_2d on, a thread's reads of shared memory are LDS.128 already (ptxas merges
    # its TM and TN floats per k step), BK x (TM + TN) / 4 of them per k tile.
    def ops(rid: str) -> dict:
        r = rung(rid)
        inv = build(r).inventory(r.entry)
        wide = lambda prefix: sum(n for op, n in inv.items() if op.startswith(prefix) and ".128" in op)  # noqa: E731
        return {"ldg128": wide("LDG"), "stg128": wide("STG"), "lds128": inv["LDS.128"], "stg": inv["STG.E"],
                "lds": sum(n for op, n in inv.items() if op.startswith("LDS"))}
    got = {rid: ops(rid) for rid in ("01_naive", "01_blocktile_2d", "01_vectorized", "01_warptiled")}
    assert got["01_naive"]["lds"] == 0 and got["01_naive"]["ldg128"] == 0  # no shared memory, one float a load
    for rid in ("01_blocktile_2d", "01_vectorized", "01_warptiled"):
        c = build(rid).consts
        assert got[rid]["lds128"] == c["BK"] * (c["TM"] + c["TN"]) // 4 == got[rid]["lds"], (rid, got[rid])
    c = build("01_blocktile_2d").consts
    assert (got["01_blocktile_2d"]["ldg128"], got["01_blocktile_2d"]["stg128"]) == (0, 0)   # scalar global access:
    assert got["01_blocktile_2d"]["stg"] == c["TM"] * c["TN"]                                # one STG per element
    c = build("01_vectorized").consts  # one float4 of A and one of B per thread per tile, TM x TN / 4 float4 stores
    assert got["01_vectorized"]["ldg128"] == (c["BM"] * c["BK"] + c["BK"] * c["BN"]) // 4 // c["THREADS"] == 2
    assert got["01_vectorized"]["stg128"] == c["TM"] * c["TN"] // 4 and got["01_vectorized"]["stg"] == 0
    c = build("01_warptiled").consts   # double-buffered: the prologue's tile and the loop's next one
    assert got["01_warptiled"]["ldg128"] == 2 * (c["A_LOADS"] + c["B_LOADS"])
    assert got["01_warptiled"]["stg128"] == c["TM"] * c["TN"] // 4 and got["01_warptiled"]["stg"] == 0


@pytest.mark.parametrize("p", PROBES, ids=lambda p: p.id)
def test_probe_sass(p):
    b = build(p)
    for op in p.sass_has:
        assert b.count(op, p.entry) > 0, (p.id, op)


def test_compile_error_names_the_line():
    r = RUNGS[0]
    broken = r.path.read_text().replace("acc += A[", "acc += undefined_thing + A[", 1)
    with pytest.raises(CompileError) as e:
        build(r, source=broken)
    line = next(i for i, l in enumerate(broken.splitlines(), 1) if "undefined_thing" in l)
    assert f"line {line}" in str(e.value)
    marked = [x for x in str(e.value).splitlines() if x.startswith(">")]
    assert marked == [f">{line:>5} | {broken.splitlines()[line - 1]}"]  # the culprit, numbered, in its context


def test_a_missing_semicolon_is_named_where_it_belongs_and_warnings_wait():
    # the compiler notices a missing ';' at the next token, two lines down past a blank line here; the message
    # names the line the ';' belongs to, and leaves out the warnings the broken parse sets off (#607-D, #12-D)
    from helpers.csource import source
    r = next(x for x in RUNGS if x.id == "04_swizzle")
    lines = source(r.id).splitlines()
    culprit = next(i for i, l in enumerate(lines, 1) if l.startswith("static_assert(MMA_N % 2 == 0"))
    assert not lines[culprit].strip()  # a blank line follows it
    lines[culprit - 1] = lines[culprit - 1].rstrip().removesuffix(";")
    with pytest.raises(CompileError) as e:
        build(r, source="\n".join(lines))
    text = str(e.value)
    assert text.splitlines()[0].startswith(f"kernels/04_swizzle.cu line {culprit}: expected a \";\" at the end of this line")
    assert f"noticed at line {culprit + 2}" in text and "warning #" not in text and "error: expected a" in text


def test_cache_is_keyed_by_source_and_options(tmp_path, monkeypatch):
    # A private, empty cache (no other test or xdist worker writes to it), so what lands in it can be counted: one
    # cubin and one log per compile. 01_naive compiles in a fraction of a second.
    import importlib
    monkeypatch.setattr(importlib.import_module("helpers.compiler"), "CACHE", tmp_path)  # the module, not build()
    r = RUNGS[0]
    a = build(r)
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".cubin", ".log"]
    stamp = a.cubin.stat().st_mtime_ns
    again = build(r)  # same source, same options: the cached cubin, read back, not compiled and written again
    assert again.cubin == a.cubin and again.cubin.stat().st_mtime_ns == stamp and again.resources == a.resources
    opt, edited = build(r, options=("-DUNUSED=1",)), build(r, source=r.path.read_text() + "\n// edited\n")
    assert len({a.cubin, opt.cubin, edited.cubin}) == 3 and len(list(tmp_path.glob("*.cubin"))) == 3
    assert opt.resources == edited.resources == a.resources  # neither change touches the code: the same kernel


def test_read_consts_evaluates_in_order():
    src = "constexpr int BM = 128;\nconstexpr int TM = 8;  // rows\nconstexpr int T = (BM / TM) * 2;\n"
    assert read_consts(src) == {"BM": 128, "TM": 8, "T": 32}


def test_parse_ptxas_and_inventory_on_known_text():
    log = ("ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
           "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
           "ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem\n")
    res = parse_ptxas(log)["k"]
    assert (res.registers, res.spill_stores, res.smem_static, res.barriers) == (40, 4, 4096, 1)
    sass = "        /*0010*/                   FFMA R1, R2, R3, R4 ;\n        /*0020*/               @!P0 LDS.128 R4, [R2] ;\n"
    assert sass_inventory(sass) == {"FFMA": 1, "LDS.128": 1}


def test_opcode_families_groups_modifiers():
    fams = opcode_families(build("01_vectorized"), "sgemm_vectorized")
    assert fams["LDS"] >= 32 and fams["FFMA"] == 512 and "HMMA" not in fams


@pytest.mark.parametrize("r", [x for x in (*RUNGS, *PROBES) if tuple(x.needs_cc) < (9, 0)], ids=lambda r: r.id)
def test_sm80_kernels_also_build_for_an_a100(r):
    # The banner tells an A100 or L4 user these run live there: an sm_90a cubin would not load, so Kernel.module
    # rebuilds them for the GPU's own architecture, and that build must succeed.
    b = build(r, arch="sm_80")
    assert re.search(r"^\s*\.target\s+sm_80$", b.sass(), re.M), f"{r.id}: nvdisasm says the cubin is not sm_80"
    assert r.entry in b.resources and b.count("HGMMA", r.entry) == 0


@pytest.mark.parametrize("r", [r for r in RUNGS if "USETMAXREG" in r.sass_has], ids=lambda r: r.id)
def test_setmaxnreg_splits_fit_the_pool_the_cta_got_at_launch(r):
    # setmaxnreg.inc takes registers from the CTA's pool, which ptxas fixed at launch: registers x threads.
    from helpers.models import register_budget
    b = build(r)
    c = b.consts
    need = 128 * c["PRODUCER_REGS"] + 128 * c["CONSUMERS"] * c["CONSUMER_REGS"]
    assert need <= b.resources[r.entry].registers * c["THREADS"], (need, b.resources[r.entry].registers)
    assert register_budget(c["PRODUCER_REGS"], c["CONSUMER_REGS"], c["CONSUMERS"],
                           b.resources[r.entry].registers)["fits"]


def test_a_split_past_the_pool_is_refused_at_compile_time():
    # 32 + 2 x 240 over 128 threads each is 65,536: the SM's file, but 1,024 more than the 64,512 the CTA gets.
    from helpers.csource import CompileError, apply_config
    from helpers.models import register_budget
    assert not register_budget(32, 240)["fits"] and register_budget(24, 240)["fits"]
    r = rung("09_setmaxnreg")
    with pytest.raises(CompileError, match="given at launch"):
        build(r, source=apply_config(r.path.read_text(), {"PRODUCER_REGS": 32}))


def test_chapter_01_register_tile_limits_are_what_ptxas_reports():
    # Chapter 01's common mistakes: a 16 x 8 patch per thread still fits, a 16 x 16 patch (256 accumulators) spills.
    from helpers.csource import apply_config
    r = rung("01_blocktile_2d")
    fits = build(r, source=apply_config(r.path.read_text(), {"TM": 16})).resources[r.entry]
    spills = build(r, source=apply_config(r.path.read_text(), {"TM": 16, "TN": 16})).resources[r.entry]
    assert fits.spill_stores == 0 and 240 <= fits.registers <= 255, fits
    assert spills.spill_stores > 0, spills


def test_rungs_08_on_keep_one_empty_barrier_parity_convention():
    # One convention from rung 08 on, so the diff of two rungs shows only what the later one changes: the producer
    # waits on empty[s] for the phase before its lap's (a fresh barrier counts as having completed it), and no
    # consumer arrives on the empty barriers before its loop.
    from helpers.registry import KERNELS
    for name in ("08_warp_specialized", "09_setmaxnreg", "10_chip"):
        src = (KERNELS / f"{name}.cu").read_text()
        waits = re.findall(r"mbarrier_wait_parity\(smem_addr\(&empty\[s\]\),\s*([^;]+)\);", src)
        assert waits and all(re.fullmatch(r"\(\(\w+ / STAGES\) & 1\) \^ 1", w) for w in waits), (name, waits)
        assert not re.search(r"for \(int s = 0; s < STAGES; \+\+s\) mbarrier_arrive", src), name


def test_the_xor_swizzle_is_written_once():
    # kernels/common/swizzle.cuh holds it; rung 10's epilogue spells the 128B layout of its TMA-store staging
    # buffer by hand, next to the copy that reads it.
    from helpers.registry import KERNELS
    for path in sorted(KERNELS.glob("*.cu")):
        code = re.sub(r"//.*", "", path.read_text())
        if not path.name.startswith("10_"):
            assert not re.search(r"\^\s*\(?\s*\w+\s*(&\s*7|%\s*8)", code), f"{path.name} writes its own swizzle"
    assert '#include "common/swizzle.cuh"' in (KERNELS / "06_wgmma.cu").read_text()


def test_chapter_05_ablation_changes_one_thing_a_step():
    """Chapter 05 cuts rung 04 -> 05 into single changes; its napkin quotes these build facts."""
    from helpers.models import blocks_per_sm
    ids = ["04_swizzle", "05_warp_64x64", "05_one_stage", "05_double_buffer", "05_cp_async"]
    assert [r.id for r in RUNGS if r.id in ids] == ids, "the chain must stay in this order in RUNGS"
    facts = []
    for rid in ids:
        r = rung(rid)
        b = build(r)
        c, res = b.consts, b.resources[r.entry]
        smem = res.smem_static + c.get("SMEM_BYTES", 0)
        facts.append({"block": (c["BM"], c["BN"], c["BK"]), "warp": (c["WM"], c["WN"]), "threads": c["THREADS"],
                      "regs": res.registers, "smem": smem, "stages": c.get("STAGES"),
                      "blocks": blocks_per_sm(res.registers, c["THREADS"], smem + 1024)["blocks"],
                      "cp_async": b.count("LDGSTS", r.entry) > 0, "sts": b.count("STS", r.entry) > 0})
    s04, warp, one, double, ring = facts
    assert all(f["block"] == (128, 128, 32) for f in facts), "every step keeps the 128 x 128 x 32 block tile"
    # step 1: the warp tile alone (threads, registers and blocks per SM follow from it)
    assert (s04["warp"], warp["warp"], s04["threads"], warp["threads"]) == ((64, 32), (64, 64), 256, 128)
    assert s04["smem"] == warp["smem"] == 16384 and not s04["cp_async"] and not warp["cp_async"] and warp["sts"]
    assert 130 <= s04["regs"] <= 150 and 220 <= warp["regs"] <= 240, "the prose says about 140 and about 230"
    assert (s04["blocks"], warp["blocks"]) == (1, 2)
    # step 2: the copy instruction alone
    assert one["cp_async"] and not one["sts"] and one["stages"] == 1 and one["smem"] == 16384
    assert one["warp"] == warp["warp"] and one["blocks"] == 2 and abs(one["regs"] - warp["regs"]) <= 8
    # steps 3 and 4: the ring depth alone
    assert [(f["stages"], f["smem"], f["blocks"]) for f in (double, ring)] == [(2, 32768, 2), (4, 65536, 2)]


def test_the_fp8_rung_compiles_to_qgmma_without_spills():
    """Chapter 12's rung: FP8 wgmma as exactly four QGMMA per stage, no bf16 HGMMA, rung 10's TMA, multicast and
    stmatrix epilogue, nothing in local memory."""
    from helpers.compiler import compile_source
    from helpers.registry import KERNELS
    b = compile_source((KERNELS / "12_fp8.cu").read_text(), "kernels/12_fp8.cu", "sm_90a")
    inv, res = b.inventory("gemm_fp8"), b.resources["gemm_fp8"]
    assert inv.get("QGMMA.64x256x32.F32.E4M3.E4M3") == 4 and not any(op.startswith("HGMMA") for op in inv), inv
    for op in ("UTMALDG.2D.MULTICAST", "UTMASTG.2D", "STSM.16.M88.4"):
        assert inv.get(op), op
    assert res.spill_stores == res.spill_loads == res.stack_bytes == 0, res
    assert b.consts["BK"] == 128 and b.consts["STAGE_BYTES"] == 49152  # the same 48 KiB stage, twice the k


def test_nvrtc_here_is_the_release_that_built_the_recorded_run():
    # requirements.txt pins it: another release allocates registers differently (a review saw 230 against the recorded
    # 226/227), and the chapters' saved build summaries would then disagree with what a reader's replay prints
    import json
    from helpers.compiler import nvrtc_version
    from helpers.results import path_for
    env = next(iter(json.loads(path_for().read_text())["gemm"].values()))["env"]
    assert ".".join(map(str, nvrtc_version())) == env["nvrtc"], "install requirements.txt: it pins NVRTC"
