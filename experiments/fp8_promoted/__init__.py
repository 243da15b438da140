"""Readers of the promoted-accumulation experiment's record (record.json, written by its runner outside the book's
run), as chapter 12 shows them: table, profiles, record (its accumulator probe)."""
from __future__ import annotations

import json
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")
BUILDS = ("12_fp8", "12_fp8, 128 x 128", "12_fp8_promoted", "12_fp8_promoted, every 256 k")
HEADS = ("rung 12", "128 x 128", "promoted", "every 256")
LT_PROMOTED, LT_FAST = "cuBLASLt FP8 autotuned", "cuBLASLt FP8 fast autotuned"   # helpers.timing's group names


def record() -> dict:
    return json.loads(RECORD.read_text())


def table(rec: dict | None = None, part: str = "time") -> None:
    """Print a timing part of the record: per shape, each build's TFLOP/s, then the fastest cuBLASLt algorithm of
    each accumulation mode, all from the same interleaved rounds; last, 12_fp8_promoted against both."""
    rec = rec or record()
    rows = rec[part] if part == "time" else rec[part]["time"]
    env = rec["env"][part]
    builds = [(b, h) for b, h in zip(BUILDS, HEADS) if b in rows[0]]
    print(f"experiments/fp8_promoted{' (first try)' if part != 'time' else ''}, {env['name']}, {env['date']}, outside the "
          f"book's run; TFLOP/s\n(each shape: one set of interleaved rounds; Lt: cuBLASLt; the ratios: promoted's)")
    heads = (*(h for _, h in builds), "Lt prom.", "Lt fast", "/ Lt prom.", "/ rung 12")
    print(f"{'M x N x K':<16}" + "".join(f"{h:>11}" for h in heads))
    for row in rows:
        got = [row[b]["tflops"] for b, _ in builds]
        got += [row["cublas_groups"][g]["tflops"] for g in (LT_PROMOTED, LT_FAST)]
        promoted = row["12_fp8_promoted"]["tflops"]
        ratios = (promoted / row["cublas_groups"][LT_PROMOTED]["tflops"], promoted / row["12_fp8"]["tflops"])
        print(f"{'x'.join(map(str, row['shape'])):<16}" + "".join(f"{x:>11.1f}" for x in got)
              + "".join(f"{x:>11.3f}" for x in ratios))


def profiles(rec: dict | None = None, part: str | None = None) -> None:
    """Print the record's Nsight Compute profiles at N = 8192 (the chapters' profile table), for the final builds
    or, with part="first_try", for the first try's."""
    from helpers.profile import table as profile_table
    rec = rec or record()
    entries, env = (rec["first_try"]["profile"], rec["env"]["first_try"]) if part else (rec["profile"],
                                                                                      rec["env"]["profile"])
    print(f"experiments/fp8_promoted{' (first try)' if part else ''}, {env['date']}:")
    short = dict(zip(BUILDS, ("12_fp8", "12_fp8, 128 x 128", "12_fp8_promoted", "promoted, 256 k")))
    print(profile_table([{**e, "rung": short.get(name, name)} for name, e in entries.items()]))
