"""The hardware facts the napkins, figures and exercises use live once, in helpers/hardware.py, each with its source;
they agree with each other and with the H100 the book was recorded on. CPU only (it reads results/)."""
import ast
import io
import re
import tokenize

import pytest

from helpers import hardware, results
from helpers.registry import ROOT

HELPERS = ROOT / "helpers"
FACTS = sorted(name for name, value in vars(hardware).items()
               if name.isupper() and isinstance(value, (int, float)) and not isinstance(value, bool))


def _sources():
    """(path relative to the repository, text) of every helpers module but hardware.py."""
    return [(p.relative_to(ROOT), p.read_text()) for p in sorted(HELPERS.rglob("*.py")) if p != HELPERS / "hardware.py"]


RUNS = {tuple(words[i:j]) for words in (f.split("_") for f in FACTS)
        for i in range(len(words)) for j in range(i + 1, len(words) + 1)}


def _restated(name: str) -> bool:
    """A constant that restates a fact: the fact's name, with or without a prefix (KIB, CH05_KIB, H100_SMS); part
    of a fact's name after a prefix, or two words or more of it (CH01_SECTOR, CH05_MAX_WARPS, MAX_REGS); or a clock
    or per-clock rate under any name (H100_BOOST_HZ, CH05_PEAK_FLOP_PER_CLK)."""
    if not name.isupper():
        return False
    stem = re.sub(r"^(CH\d+|H100)_", "", name)
    words = tuple(stem.split("_"))
    return (stem in FACTS or (stem != name or len(words) > 1) and words in RUNS
            or bool(re.search(r"(^|_)[GM]?HZ$|BOOST|CLOCK|FLOP_PER_CLK|BYTES_PER_CLK", name)))


def test_no_other_module_defines_a_hardware_fact():
    found = []
    for path, text in _sources():
        for node in ast.walk(ast.parse(text)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            for target in targets:
                for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                    if _restated(name):
                        found.append(f"{path}:{node.lineno} {name}")
    assert not found, "import these from helpers.hardware instead of defining them: " + ", ".join(found)


def test_no_other_module_types_a_clock_or_a_memory_size():
    """The literals the facts used to be typed as: a clock (1.83e9, 1.98e9, 1,980 MHz, 1.83 GHz), the register file
    (65536) and the shared memory of an SM or a block (228 * 1024, 227 << 10). Strings and comments may say them."""
    clocks = {1.83e9, 1.98e9, 1830.0, 1980.0, 1.83, 1.98}
    found = []
    for path, text in _sources():
        toks = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
                if t.type in (tokenize.NUMBER, tokenize.OP)]
        for i, t in enumerate(toks):
            if t.type != tokenize.NUMBER:
                continue
            value = ast.literal_eval(t.string)
            smem = (t.string in ("227", "228") and i + 2 < len(toks) and
                    (toks[i + 1].string, toks[i + 2].string) in (("*", "1024"), ("<<", "10")))
            if value in clocks or value == hardware.REGISTER_FILE or smem:
                found.append(f"{path}:{t.start[0]} {t.line.strip()}")
    assert not found, "use helpers.hardware for these: " + "; ".join(found)


def test_the_facts_agree_with_each_other():
    h = hardware
    # the datasheet's two peaks are the per-clock rates at the two clocks: tensor cores at 1.83 GHz, FP32 at 1.98
    assert h.SMS * h.TENSOR_FLOP_PER_CLK * h.TENSOR_BOOST_HZ == pytest.approx(h.DENSE_BF16_FLOPS, rel=1e-3)
    assert h.SMS * h.FFMA_FLOP_PER_CLK * h.MAX_SM_CLOCK_HZ == pytest.approx(h.FP32_FLOPS, rel=1e-3)
    assert h.TENSOR_BOOST_HZ < h.MAX_SM_CLOCK_HZ
    assert h.FP32_LANES == h.SCHEDULERS * h.WARP                       # 32 lanes per sub-partition
    assert h.WARPGROUP == h.SCHEDULERS * h.WARP                         # one warp of a warpgroup per sub-partition
    assert h.MAX_WARPS_PER_SM * h.WARP == h.MAX_THREADS_PER_SM
    assert h.SMEM_BYTES_PER_CLK == h.WAVEFRONT_BYTES == h.SMEM_BANKS * h.BANK_BYTES == h.SLOTS * h.CHUNK
    assert h.SMEM_PER_BLOCK_OPTIN + h.SMEM_RESERVED_PER_BLOCK == h.SMEM_PER_SM  # a block may have all but the 1 KiB


def _reference() -> dict:
    return results.load(results.RESULTS / results.REFERENCE / results.RUN_FILE)  # the run the book was recorded from


def test_hardware_is_constants_only():
    """It reads no file and imports nothing from helpers: any module may import it, at import time."""
    tree = ast.parse((HELPERS / "hardware.py").read_text())
    imported = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [ast.unparse(n) for n in imported] == ["from __future__ import annotations"]
    assert not [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


def test_the_facts_match_every_recorded_gpu():
    """Every run file in results/ (the book's run and the other devices'): the chip's facts as each GPU reported them,
    and the board's L2 from MEMORY under the name it reported."""
    data = _reference()
    book = results.environments(results.RESULTS / results.REFERENCE / results.RUN_FILE)
    assert len(book) == sum("env" in e for section in data.values() for e in section.values()) > 0
    runs = sorted(results.RESULTS.glob(f"*/{results.RUN_FILE}"))
    assert len(runs) >= 2, runs  # the H100 run and the H200 run
    for path in runs:
        envs = results.environments(path)
        assert envs, path
        assert {env["sms"] for env in envs} == {hardware.SMS}, path
        assert {env["smem_optin_bytes"] for env in envs} == {hardware.SMEM_PER_BLOCK_OPTIN}, path
        assert {env["sm_clock_max_mhz"] * 1e6 for env in envs} == {hardware.MAX_SM_CLOCK_HZ}, path
        assert {env["l2_bytes"] for env in envs} == {hardware.MEMORY[env["name"]]["l2_bytes"] for env in envs}, path