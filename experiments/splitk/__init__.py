"""Reader of the split-K experiment's record (record.json, written by its runner outside the book's run), as chapter
10 shows it: table."""
from __future__ import annotations

import json
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")


def record() -> dict:
    return json.loads(RECORD.read_text())


def table(rec: dict | None = None) -> None:
    """Print the record's timings: per shape, each build's time per launch, TFLOP/s and ratio to cuBLAS, with the
    grid it launched."""
    rec = rec or record()
    print(f"experiments/splitk on {rec['env']['name']} ({rec['env']['date']}), outside the book's run")
    for row in rec["time"]:
        print(f"{'x'.join(map(str, row['shape']))}: cuBLAS {row['cublas_best']['us']:.2f} µs")
        for name, x in row.items():
            if isinstance(x, dict) and "grid" in x:
                print(f"  {name:<22}{x['us']:>8.2f} µs {x['tflops']:>8.1f} TFLOP/s ({x['ratio']:.3f})   "
                      f"{x['grid']:>4} CTAs, {x['tile'][0]} x {x['tile'][1]} tiles")
