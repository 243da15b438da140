"""Reader of the repeated 8192 block (record.json: a run's first block of square rows at N = 8192, measured and then
replaced, beside the block the run recorded): record."""
from __future__ import annotations

import json
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")


def record() -> dict:
    return json.loads(RECORD.read_text())
