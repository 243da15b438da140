"""Reader of the one-warpgroup probe's record (record.json, written by its runner outside the book's run), as chapter
10 shows it: table."""
from __future__ import annotations

import json
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")


def record() -> dict:
    return json.loads(RECORD.read_text())


def table(rec: dict | None = None) -> None:
    """Print the record's rates: chapter 00's wgmma probe with two warpgroups per SM or one, the same wgmmas per
    launch, in the same interleaved rounds, each against the two-warpgroup build."""
    rec = rec or record()
    env, t = rec["env"], rec["time"]
    base = t["two warpgroups, one CTA"]["tflops"]
    print(f"experiments/wgmma_issue, {env['name']}, {env['date']}, outside the book's run:\n"
          f"m64n256k16 back to back on one resident tile, random operands")
    for name, e in t.items():
        print(f"  {name:<28}{e['tflops']:>8.1f} TFLOP/s ({e['tflops'] / base:.2f}), {e['threads']} threads x "
              f"{e['ctas_per_sm']} CTA a SM, {e['group']} wgmmas a group, {e['sm_clock_mhz']:.0f} MHz")
