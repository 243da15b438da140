"""Readers of the overlapped-epilogue experiment's record (record.json, written by its runner outside the book's run),
as chapter 10 shows them: BUILDS (name -> OVERLAP, the chunks of C stored after the next tile's first k step is
issued), table, profiles."""
from __future__ import annotations

import json
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")
BUILDS = {"as committed": 0, "1 chunk late": 1, "2 chunks late": 2, "all late": 4}


def record() -> dict:
    return json.loads(RECORD.read_text())


def table(rec: dict | None = None) -> None:
    """Print the record's timings: per shape, TFLOP/s of rung 10 as it launches and of each OVERLAP build, each with
    its ratio to the fastest cuBLAS of the same rounds."""
    rec = rec or record()
    env = rec["env"]["time"]
    names = ("rung 10", *BUILDS)
    print(f"experiments/overlap, {env['name']}, {env['date']}, outside the book's run; TFLOP/s (/ cuBLAS)")
    print(f"{'M x N x K':<18}" + "".join(f"{x:>17}" for x in names) + f"{'cuBLAS':>8}")
    for row in rec["time"]:
        print(f"{'x'.join(map(str, row['shape'])):<18}"
              + "".join(f"{row[x]['tflops']:>9.1f} ({row[x]['ratio']:.3f})" for x in names)
              + f"{row['cublas_best']['tflops']:>8.1f}")


def profiles(rec: dict | None = None) -> None:
    """Print the record's Nsight Compute profiles, as chapter profiles print."""
    from helpers.profile import table as profile_table
    rec = rec or record()
    print(f"experiments/overlap, {rec['env']['profile']['date']}:")
    print(profile_table(rec["profile"].values()))


def fp8_table(rec: dict | None = None) -> None:
    """Print part fp8: per shape, TFLOP/s of 12_fp8 with OVERLAP = 0 (as it launched before it took the step) and
    with OVERLAP = 2, each with its ratio to the fastest cuBLASLt FP8 of the same rounds."""
    _part_table(rec or record(), "fp8", ("OVERLAP = 0", "OVERLAP = 2"), "cuBLASLt", 19)


def steps_table(rec: dict | None = None) -> None:
    """Print part steps: per shape, TFLOP/s of 10_overlap as it launches and of the builds that issue the next tile's
    first two k steps early or store all chunks late, each with its ratio to the fastest cuBLAS of the same rounds."""
    rec = rec or record()
    names = [x for x in rec["steps"]["time"][0] if x not in ("shape", "cublas", "note", "cublas_groups", "cublas_best")]
    _part_table(rec, "steps", names, "cuBLAS", 20)


def _part_table(rec: dict, part: str, names, reference: str, width: int) -> None:
    env = rec["env"][part]
    print(f"experiments/overlap part {part}, {env['name']}, {env['date']}, outside the book's run; TFLOP/s "
          f"(/ {reference})")
    print(f"{'M x N x K':<18}" + "".join(f"{x:>{width}}" for x in names) + f"{reference:>{len(reference) + 2}}")
    for row in rec[part]["time"]:
        print(f"{'x'.join(map(str, row['shape'])):<18}"
              + "".join(f"{row[x]['tflops']:>{width - 8}.1f} ({row[x]['ratio']:.3f})" for x in names)
              + f"{row['cublas_best']['tflops']:>{len(reference) + 2}.1f}")
