"""Readers of the stream-K experiment's record (record.json, written by its runner outside the book's run), as chapter
10 shows them: table (part "time": every build at eight shapes; part "broad": the first run, more shapes, fewer
builds), profiles, cycles."""
from __future__ import annotations

import json
from pathlib import Path

from .build import BUILDS

RECORD = Path(__file__).with_name("record.json")


def record() -> dict:
    return json.loads(RECORD.read_text())


def table(rec: dict | None = None, part: str = "time") -> None:
    """Print one timing part: per shape, TFLOP/s of rung 10 as it launches and of each build, each with its ratio to
    the fastest cuBLAS of the same rounds, and the stream-K plan (tiles run whole, k steps a worker's range holds)."""
    rec = rec or record()
    env = rec["env"][part]
    rows = rec[part]
    names = [x for x in ("rung 10", *BUILDS) if x in rows[0]]
    print(f"experiments/streamk ({part}), {env['name']}, {env['date']}, outside the book's run; TFLOP/s (/ cuBLAS)")
    print(f"{'M x N x K':<16}" + "".join(f"{x:>{max(len(x) + 2, 17)}}" for x in names) + f"{'cuBLAS':>8}  plan")
    for row in rows:
        plan = row.get("plans", {}).get("stream-K")
        say_plan = "" if plan is None else (f"{plan['whole']} of {plan['tiles']} tiles whole" +
                                            (f", {plan['range_steps']:.0f} k steps a worker" if plan['range_steps']
                                             else ""))
        print(f"{'x'.join(map(str, row['shape'])):<16}"
              + "".join(f"{row[x]['tflops']:>{max(len(x) + 2, 17) - 8}.1f} ({row[x]['ratio']:.3f})" for x in names)
              + f"{row['cublas_best']['tflops']:>8.1f}  {say_plan}")


def cycles(entry: dict) -> float:
    """A profile's kernel time in SM cycles, at the clock it ran (Nsight Compute's elapsed-cycle rate)."""
    return entry["duration_us"] * entry["sm_clock_mhz"]


def profiles(rec: dict | None = None) -> None:
    """Print the record's Nsight Compute profiles: duration, clock, cycles, tensor pipe, L2 hit rate, DRAM bytes."""
    rec = rec or record()
    print(f"experiments/streamk, Nsight Compute, {rec['env']['profile']['date']}:")
    print(f"{'build @ N':<26}{'µs':>8}{'MHz':>8}{'k cycles':>10}{'tensor %':>10}{'L2 hit %':>10}{'DRAM read MB':>14}"
          f"{'write MB':>10}")
    for key, p in rec["profile"].items():
        print(f"{key:<26}{p['duration_us']:>8.1f}{p['sm_clock_mhz']:>8.0f}{cycles(p) / 1e3:>10.1f}"
              f"{p['tensor_pipe_pct']:>10.1f}{p['l2_hit_pct']:>10.1f}{p['dram_read_bytes'] / 1e6:>14.0f}"
              f"{p['dram_write_bytes'] / 1e6:>10.0f}")
