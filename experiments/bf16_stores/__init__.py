"""Readers of the bf16-stores experiment's record (record.json: the rounds its runner printed, seven experiments
outside the book's run), as chapter 10's tests read them: rounds, medians."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")


def record() -> dict:
    return json.loads(RECORD.read_text())


def rounds(*experiments: int, rec: dict | None = None) -> dict:
    """{(N, variant): [TFLOP/s of each round]} over the given experiments (numbered 1-7), so that a variant timed in
    two experiments is not pooled across their calls."""
    rates: dict = {}
    for e in (rec or record())["experiments"]:
        if e["experiment"] in experiments:
            for r in e["rounds"]:
                rates.setdefault((r["n"], r["variant"]), []).append(r["tflops"])
    return rates


def medians(*experiments: int, rec: dict | None = None) -> dict:
    """{(N, variant): the median TFLOP/s of its rounds} over the given experiments."""
    return {k: statistics.median(v) for k, v in rounds(*experiments, rec=rec).items()}
