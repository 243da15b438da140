"""Readers of the promoted-accumulation experiment's record (record.json, written by its runner outside the book's
run), as chapter 12 shows them: table, profiles, record (its accumulator probe)."""
from __future__ import annotations

import json
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")
# Short column heads of the builds (build.py names them); a part's table shows the builds its rows hold
HEADS = {"12_fp8": "rung 12", "12_fp8_promoted": "promoted", "promoted, 128 x 128": "128 x 128",
         "promoted, 128 x 192": "128 x 192", "12_fp8_promoted, every 256 k": "every 256",
         "rung 12, launched plainly": "plain", "promoted, one add a slice (C wrong)": "1 add",
         "12_fp8, 128 x 128": "128 x 128"}
LT_PROMOTED, LT_FAST = "cuBLASLt FP8 autotuned", "cuBLASLt FP8 fast autotuned"   # helpers.timing's group names
PARTS = {"time": "", "one_buffer": " (one partial buffer, commit df668fc)", "first_try": " (first try)"}


def record() -> dict:
    return json.loads(RECORD.read_text())


def rows_of(rec: dict, part: str = "time") -> list[dict]:
    return rec[part] if part == "time" else rec[part]["time"]


def table(rec: dict | None = None, part: str = "time") -> None:
    """Print a timing part of the record ("time", "one_buffer" or "first_try"): per shape, each build's TFLOP/s, then
    the fastest cuBLASLt algorithm of each accumulation mode, all from the same interleaved rounds; last,
    12_fp8_promoted against both."""
    rec = rec or record()
    rows, env = rows_of(rec, part), rec["env"][part]
    builds = [b for b in HEADS if b in rows[0]]
    print(f"experiments/fp8_promoted{PARTS[part]}, {env['name']}, {env['date']}, outside the book's run; TFLOP/s\n"
          f"(each shape: one set of interleaved rounds; Lt: cuBLASLt; the ratios: promoted's)")
    heads = (*(HEADS[b] for b in builds), "Lt prom.", "Lt fast", "/ Lt prom.", "/ rung 12")
    print(f"{'M x N x K':<15}" + "".join(f"{h:>10}" for h in heads[:-2]) + "".join(f"{h:>11}" for h in heads[-2:]))
    for row in rows:
        got = [row[b]["tflops"] for b in builds] + [row["cublas_groups"][g]["tflops"] for g in (LT_PROMOTED, LT_FAST)]
        promoted = row["12_fp8_promoted"]["tflops"]
        ratios = (promoted / row["cublas_groups"][LT_PROMOTED]["tflops"], promoted / row["12_fp8"]["tflops"])
        print(f"{'x'.join(map(str, row['shape'])):<15}" + "".join(f"{x:>10.1f}" for x in got)
              + "".join(f"{x:>11.3f}" for x in ratios))


def profiles(rec: dict | None = None, part: str = "time") -> None:
    """Print a part's Nsight Compute profiles at N = 8192 (the chapters' profile table)."""
    from helpers.profile import table as profile_table
    rec = rec or record()
    entries = rec["profile"] if part == "time" else rec[part]["profile"]
    env = rec["env"]["profile" if part == "time" else part]
    print(f"experiments/fp8_promoted{PARTS[part]}, {env['date']}:")
    print(profile_table([{**e, "rung": HEADS.get(name, name) if name != "12_fp8_promoted" else name}
                         for name, e in entries.items()]))
