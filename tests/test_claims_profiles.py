"""The limits the chapters name, held to what Nsight Compute recorded. Every profile panel (a code cell that calls
fig_profile) is followed by prose that opens with limit_sentence's words for the rung it draws, so a profile taken
again that changes the story fails here until the prose changes too. Runs without a GPU (it reads results/)."""
import json
import math
import re

import pytest

from helpers import results
from helpers.figures.profile import limit_of, limit_sentence, recorded_profile
from helpers.registry import ROOT

from conftest import says

PANEL = re.compile(r'fig_profile\("(\w+)", (?:"(\w+)"|None), n=(\d+)\)')


def _rendered(cell: dict) -> str:
    """The paragraph a rendered-prose cell (helpers.prose.say, tagged remove-input) shows: its saved Markdown output,
    which nbval holds to what the run renders."""
    if "remove-input" not in cell.get("metadata", {}).get("tags", []):
        return ""
    return "".join("".join(o.get("data", {}).get("text/markdown", "")) for o in cell.get("outputs", []))


def _panels():
    """(notebook, rung, n, the markdown right after the panel) for every panel in the book."""
    found = []
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        for i, c in enumerate(cells):
            m = PANEL.search("".join(c["source"])) if c["cell_type"] == "code" else None
            if m:
                after = cells[i + 1] if i + 1 < len(cells) else {"cell_type": "code", "source": []}
                text = "".join(after["source"]) if after["cell_type"] == "markdown" else _rendered(after)
                found.append((nb.name, m.group(1), int(m.group(3)), text))
    return found


def test_every_chapter_from_01_to_12_draws_a_profile_panel():
    chapters = {name[:2] for name, *_ in _panels()}
    assert chapters >= {f"{i:02d}" for i in range(1, 13)} - {"11"}, sorted(chapters)  # 11 prints the whole table


@pytest.mark.parametrize("name, rung_id, n, text", _panels(), ids=lambda x: x if isinstance(x, str) and "\n" not in x
                         and len(x) < 40 else None)
def test_the_prose_after_each_panel_names_the_recorded_limit(name, rung_id, n, text):
    assert says(text, limit_sentence(rung_id, n)), (name, rung_id, n)


@pytest.fixture(scope="module")
def data():
    return results.load(results.path_for())


def test_chapter_06_names_the_load_path_and_not_shared_memory(data):
    """The narrow wgmma rung sits on the LDG/cp.async roof; the operand path, measured by chapter 00's m64n64 probe,
    keeps up with the widest one; the banks are mostly idle; the wide rung stops at the block barrier."""
    md = "\n".join("".join(c["source"]) for c in json.loads((ROOT / "chapters" / "06_wgmma.ipynb").read_text())["cells"]
                   if c["cell_type"] == "markdown")
    narrow, wide = limit_of("06_wgmma_m64n64", 4096), limit_of("06_wgmma_wide", 4096)
    assert narrow["l2_fraction_of_roof"] > 0.9 and narrow["roof"] == "l2_read"
    assert wide["l2_fraction_of_roof"] < narrow["l2_fraction_of_roof"] and wide["top_stall"] == "barrier"
    raw = results.metrics("profiles", "06_wgmma_m64n64@4096")["raw"]  # kept apart from the run file
    banks = raw["l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed"]
    assert says(md, f"the banks serve reads {banks:.0f}% of the time") and banks < 50
    c = data["ceilings"]
    share = c["hgmma_n64_random"]["value"] / c["hgmma_peak_random"]["value"]
    assert says(md, f"sustains {c['hgmma_n64_random']['value']:.0f} TFLOP/s, {share:.0%} of the "
                    f"{c['hgmma_peak_random']['value']:.0f} of the m64n256k16 probe")
    assert not says(md, "because shared memory cannot deliver more")


def test_chapter_01_measures_what_the_second_block_buys(data):
    """Rung 4 held to 128 registers (MIN_BLOCKS = 2, tools/tune.py's variant) against rung 4 and rung 5."""
    md = "\n".join("".join(c["source"]) for c in json.loads((ROOT / "chapters" / "01_fp32_simt.ipynb").read_text())
                   ["cells"] if c["cell_type"] == "markdown")
    t = lambda r: data["gemm"][results.gemm_key(r, 4096, 4096, 4096)]["tflops"]  # noqa: E731
    v = data["variants"]['01_blocktile_2d:{"MIN_BLOCKS": 2}@4096']
    assert v["registers"] <= 128 and v["correct"]
    two, five = v["tflops"] / t("01_blocktile_2d"), t("01_vectorized") / t("01_blocktile_2d")
    assert says(md, f"The second block alone makes rung 4 ×{two:.2f} as fast; rung 5 is ×{five:.2f}")
    assert says(md, "share the step about equally") and abs(math.log(two) / math.log(five) - 0.5) < 0.1
    assert not says(md, "a second resident block is the larger part")


def test_chapter_08_measures_the_dram_traffic_it_once_guessed():
    md = "\n".join("".join(c["source"]) for c in json.loads((ROOT / "chapters" / "08_warp_specialization.ipynb")
                   .read_text())["cells"] if c["cell_type"] == "markdown")
    w, t = recorded_profile("08_warp_specialized", 8192), recorded_profile("07_tma", 8192)
    assert says(md, f"reads {w['dram_bytes'] / 1e9:.2f} GB from DRAM against {t['dram_bytes'] / 1e9:.2f} GB for rung 07")
    assert w["dram_bytes"] > t["dram_bytes"] and not says(md, "This chapter does not measure it")
