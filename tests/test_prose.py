"""Numbers in the text: helpers.prose's verdicts, and the book-wide rules every chapter's rendered paragraphs keep (the
chapter tests hold what each paragraph concludes). CPU only."""
import json
import re
from types import SimpleNamespace

import pytest

from helpers.prose import num, pct, pick, spread, step, where, x
from helpers.registry import ROOT

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
DECIMAL = re.compile(r"(?<![\w.\-/])\d+\.\d+(?![\w.])")


def _row(tflops, lo, hi, run="2026-11-26T19:47Z-h100", gpu="NVIDIA H100 80GB HBM3"):
    return SimpleNamespace(tflops=tflops, tflops_iqr=[lo, hi], run=run, gpu=gpu)


def test_a_step_rises_or_falls_only_beyond_both_spreads():
    a = _row(100.0, 99.0, 101.0)
    assert step(a, _row(103.0, 102.0, 104.0)).verdict == "rises"
    assert step(a, _row(97.0, 96.0, 98.0)).verdict == "falls"
    flat = step(a, _row(101.5, 100.5, 102.5))  # a higher median whose rounds overlap: not a rise
    assert flat.flat and flat.verdict == "is flat" and flat.factor == pytest.approx(1.015)
    assert spread(a, _row(1.0, 0.0, 5.0)) == 5.0


def test_numbers_and_places_are_written_one_way():
    assert (num(1024, 0), num(621.26), x(1.1534), pct(0.843)) == ("1,024", "621.3", "×1.15", "84%")
    assert pick(True, "holds", "misses") == "holds" and pick(False, "holds", "misses") == "misses"
    # the same words live and replayed, so a GPU execution and CI's replay render one text
    assert where(_row(1, 0, 2)) == "run 2026-11-26T19:47Z-h100 on NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_rendered_paragraph_is_hidden_checked_and_saved(path):
    """A rendered-prose cell shows only its paragraph in the book (remove-input) and in JupyterLab (source_hidden),
    nbval re-renders it from the replayed run (nbval-check-output), and it holds its paragraphs and nothing else."""
    for c in json.loads(path.read_text())["cells"]:
        tags = c.get("metadata", {}).get("tags", [])
        if "remove-input" not in tags:
            continue
        assert "nbval-check-output" in tags and c["metadata"].get("jupyter", {}).get("source_hidden"), c["id"]
        assert "say(" in "".join(c["source"]), c["id"]
        kinds = [(o["output_type"], tuple(sorted(o.get("data", {})))) for o in c["outputs"]]
        assert kinds and set(kinds) == {("display_data", ("text/markdown", "text/plain"))}, (c["id"], kinds)
        assert c["execution_count"], c["id"]  # nbval refuses a saved output without one


def test_the_book_types_few_numbers():
    """Measured numbers are rendered, never typed: what decimals the markdown cells still hold are constants of the
    hardware, the formats and the napkins (issue "data": at most 60 in the whole book)."""
    typed = {p.stem: len(DECIMAL.findall("".join("".join(c["source"]) for c in json.loads(p.read_text())["cells"]
                                                 if c["cell_type"] == "markdown"))) for p in CHAPTERS}
    assert sum(typed.values()) <= 60, typed
