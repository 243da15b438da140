"""Readers of the bf16-C-at-8192 experiment's record (record.json: profiles, time, causes and order, each part from
its own lease, outside the book's run), as chapter 10's tests read them: record, dram_read_gb."""
from __future__ import annotations

import json
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")


def record() -> dict:
    return json.loads(RECORD.read_text())


def dram_read_gb(rec: dict | None = None) -> dict:
    """{variant: [GB read from DRAM by each profiled launch]} of the causes part, under the names it ran with (the
    record's "names" maps them to today's)."""
    return {name: [launch["dram_read_gb"] for launch in launches]
            for name, launches in (rec or record())["causes"].items()}
