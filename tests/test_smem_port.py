"""experiments/smem_port without a GPU: every build compiles for sm_90a as its README says (no spills, the wgmma form
and the TMA fills in its SASS, what it asks of the port, what fits in shared memory), and the readers find the roof
in a record. The measurement itself is the GPU's (experiments/smem_port/run.py)."""
from __future__ import annotations

import re

import pytest

from helpers.hardware import SMEM_PER_BLOCK_OPTIN, TENSOR_FLOP_PER_CLK


@pytest.fixture(scope="module")
def builds():
    from experiments.smem_port.build import BUILDS, PROBE, source_of
    from helpers.kernel import kernel
    return {name: kernel(PROBE, source_of(name)) for name in BUILDS}


def test_every_build_compiles_without_spills_with_its_wgmma_form_and_its_fills(builds):
    from experiments.smem_port.build import BUILDS, PROBE
    ss = re.compile(r"HGMMA\.64x256x16\.F32\.BF16 R\d+, gdesc")         # A and B through descriptors
    rs = re.compile(r"HGMMA\.64x256x16\.F32\.BF16 R\d+, R\d+, gdesc")   # A from registers
    for name, k in builds.items():
        config, c, res, sass = BUILDS[name], k.consts, k.build.resources[PROBE.entry], k.build.sass()
        assert k.build.arch == "sm_90a" and res.spill_stores == res.spill_loads == res.stack_bytes == 0, name
        assert all(c[key] == v for key, v in config.items()), name
        assert "serialized" not in k.build.log, f"{name}: ptxas serialized the wgmmas"
        assert bool(k.build.count("UTMALDG.2D", PROBE.entry)) == (c["FILL_BOXES"] > 0), name
        if c["WGMMA"] and c["FILL_BOXES"]:
            assert all(k.build.count(op, PROBE.entry) for op in PROBE.sass_has), name
        forms = (bool(ss.search(sass)), bool(rs.search(sass)))
        assert forms == ((False, False) if not c["WGMMA"] else (False, True) if c["A_IN_REGS"] else (True, False)), name
        assert k.threads == 288 and res.smem_static + k.smem <= SMEM_PER_BLOCK_OPTIN, name


def test_each_build_asks_the_port_what_its_name_says(builds):
    """FILL_PER_CLK is the fill bytes a clock at the full tensor rate (a group of 8 wgmmas is 1,024 clocks at
    TENSOR_FLOP_PER_CLK), OPERAND_BYTES what a wgmma reads from shared memory: 80 and 64 B a clock."""
    for name, k in builds.items():
        c = k.consts
        wgmmas = c["CONSUMERS"] * c["HGMMA_GROUP"]
        assert c["GROUP_CLOCKS"] == wgmmas * 2 * 64 * c["N"] * 16 // TENSOR_FLOP_PER_CLK == 1024, name
        if name != "fills only":
            assert name.endswith(f"fill {c['FILL_PER_CLK']}"), name
        per_clk = c["OPERAND_BYTES"] * wgmmas / c["GROUP_CLOCKS"]
        assert per_clk == (64 if c["A_IN_REGS"] else 80), name


def test_the_readers_find_the_bytes_and_the_ceiling_under_fills_and_say_when_there_is_no_record():
    import experiments.smem_port as sp

    def entry(ask, busy, regs=0):
        op = (64 if regs else 80) * busy
        return {"fill_per_clk_at_full_rate": ask, "a_in_regs": regs, "wgmma": 1, "grid": 33, "tensor_busy": busy,
                "vs_no_fill": busy, "operand_bytes_per_clk": op, "fill_bytes_per_clk": ask * busy, "tflops": 240 * busy,
                "iqr": [239 * busy, 241 * busy], "clock_mhz": 1980.0, "fill_tbs": 0.0}
    port = {f"A+B smem, fill {r}": entry(r, min(1.0, 128 / (80 + r))) for r in (0, 16, 32, 48, 64, 80)}
    port |= {f"A regs, fill {r}": entry(r, 1.0, 1) for r in (0, 16, 32, 48, 64, 80)}
    port["fills only"] = {**entry(80, 0.0), "wgmma": 0, "fill_bytes_per_clk": 100.0}
    rec = {"time": {sp.PORT_GRID: port}, "env": {"name": "a model", "date": "no date"}}
    assert [r["fill_asked"] for r in sp.rows(rec=rec)] == [0, 16, 32, 48, 64, 80]
    assert sp.port_roof(rec=rec) == pytest.approx(128.0)  # the model's port: reads plus fills never pass 128
    assert sp.port_roof("A regs", rec=rec) == pytest.approx(64 + 80)
    assert sp.with_fills(40, rec=rec)["fill_asked"] == 48 and sp.with_fills(500, rec=rec)["fill_asked"] == 80
    assert sp.fills_alone(rec=rec) == 100.0
    real = sp.port_roof()  # the H200's record: past one wavefront a clock, so not one port
    assert real > 128, real
    with pytest.raises(sp.NotRun):
        sp.port_roof(rec={"note": "not yet run"})
