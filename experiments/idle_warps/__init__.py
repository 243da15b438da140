"""Reader of the idle-warps record (record.json: the book's run's entries for chapter 10's and 12's 2-CTA cluster
builds as measured before the producer's three idle warps exited, moved here when the run re-measured them): kept."""
from __future__ import annotations

import json
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")


def kept(section: str, key: str) -> dict:
    """The replaced entry of the book's run: section "gemm", "profiles" or "stall_sites", key as the run keys it."""
    return json.loads(RECORD.read_text())["kept"][section][key]
