"""Reader of the clusters-of-one record (record.json: rung 10's rows at N = 1024 and 2048, measured in pairs and
then with clusters of one, in the same run), as chapter 10's tests read it: rows."""
from __future__ import annotations

import json
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")


def record() -> dict:
    return json.loads(RECORD.read_text())


def rows(rec: dict | None = None) -> dict:
    """{(what, N): the row}: what is "replaced" (the pairs) or "recorded" (clusters of one)."""
    return {(e["what"], e["n"]): e for e in (rec or record())["rows"]}
