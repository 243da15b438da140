"""The limits the chapters name, held to what Nsight Compute recorded. Every profile panel (a code cell that calls
fig_profile) is followed by prose that opens with limit_sentence's words for the rung it draws, so a profile taken
again that changes the story fails here until the prose changes too. Runs without a GPU (it reads results/)."""
import json
import re

import pytest

from helpers import results
from helpers.figures.profile import limit_sentence
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

