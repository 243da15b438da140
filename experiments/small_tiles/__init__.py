"""Reader of the 64-row tiles experiment's record (record.json, written by its runner outside the book's run), as
chapter 10 shows it: table."""
from __future__ import annotations

import json
import re
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")


def record() -> dict:
    return json.loads(RECORD.read_text())


def table(rec: dict | None = None) -> None:
    """Print the record's timings: per shape, rung 10 as it launches and the one-consumer builds, each with its time
    per launch, its ratio to the fastest cuBLAS of the same rounds and its grid, then what that cuBLAS was."""
    rec = rec or record()
    print(f"experiments/small_tiles, {rec['env']['name']}, {rec['env']['date']}, outside the book's run")
    for row in rec["time"]:
        print(f"{'x'.join(map(str, row['shape']))}: cuBLAS {row['cublas_best']['us']:.2f} µs, "
              + re.sub(r"^.*?(tile \d+x\d+, cluster \dx\dx\d).*$", r"\1", row["cublas"]))
        for name, x in row.items():
            if isinstance(x, dict) and "grid" in x:
                print(f"  {name:<27}{x['us']:>8.2f} µs ({x['ratio']:.3f})  {x['grid']:>4} CTAs of "
                      f"{x['tile'][0]} x {x['tile'][1]}, clusters of {x['cluster']}")
