"""Reader of the programmatic-dependent-launch experiment's record (record.json, written by its runner outside the
book's run): NAMES (the three launches each shape times), table, checks, both_table. A reader whose part the record
lacks says so and how to record it."""
from __future__ import annotations

import json
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")
RUNG = "rung 10"                         # 10_chip as it launches: PDL = 0, CuPy's launch
PLAIN = "PDL build, plain launch"        # PDL = 1 launched by CuPy: the instructions' cost, no overlap
ATTRIBUTE = "PDL build, attribute"       # PDL = 1 through cuLaunchKernelEx with programmatic stream serialization
NAMES = (RUNG, PLAIN, ATTRIBUTE)
OVERLAP_ALONE = "OVERLAP = 2, plain launch"            # experiments/overlap's best build, CuPy's launch
BOTH = "PDL + OVERLAP = 2, attribute"                  # both moves, with the attribute
BOTH_NAMES = (RUNG, ATTRIBUTE, OVERLAP_ALONE, BOTH)    # what part `both` times, in its own rounds


def record() -> dict:
    return json.loads(RECORD.read_text())


def _ran(rec: dict, part: str) -> bool:
    if part in rec:
        return True
    print(f"experiments/pdl: no `{part}` part recorded (python3 -m experiments.pdl.run {part} records it).")
    return False


def table(rec: dict | None = None) -> None:
    """Print the record's timings: per shape, the time per launch (µs) of rung 10 as it launches and of the PDL build
    launched plainly and with the attribute, each with its ratio to the fastest cuBLAS of the same rounds, and what
    the attribute saved per launch against rung 10."""
    rec = rec or record()
    if not _ran(rec, "time"):
        return
    env = rec["env"]["time"]
    print(f"experiments/pdl, {env['name']}, {env['date']}, outside the book's run; µs per launch back to back "
          f"(/ cuBLAS's time: its ratio)")
    print(f"{'M x N x K':<18}" + "".join(f"{x:>29}" for x in NAMES) + f"{'cuBLAS':>9}{'saved':>9}")
    for row in rec["time"]:
        print(f"{'x'.join(map(str, row['shape'])):<18}"
              + "".join(f"{row[x]['us']:>21.2f} ({row[x]['ratio']:.3f})" for x in NAMES)
              + f"{row['cublas_best']['us']:>9.2f}{row[RUNG]['us'] - row[ATTRIBUTE]['us']:>9.2f}")


def checks(rec: dict | None = None) -> None:
    """Print the record's checks: single launches, launches back to back, and the no-wait control."""
    rec = rec or record()
    if not _ran(rec, "check"):
        return
    c = rec["check"]
    bad = [x for x in c["single"] if not x["ok"]]
    print(f"single launches: {len(c['single']) - len(bad)} of {len(c['single'])} correct")
    for x in c["back_to_back"]:
        print(f"back to back at {'x'.join(map(str, x['shape']))}: {sum(x['chain_ok'])} of {x['launches']} chained "
              f"launches correct, {x['launches']} into one C {'correct' if x['into_one_ok'] else 'WRONG'}")
    for x in c["control"]:
        print(f"control (no wait) at {'x'.join(map(str, x['shape']))}: "
              f"{'a wrong C: launches overlapped' if x['caught'] else 'every C right'}")


def both_table(rec: dict | None = None) -> None:
    """Print part `both`: per shape of the targets, µs per launch back to back of rung 10, the PDL build, OVERLAP = 2
    and the two together (each with its ratio to the fastest cuBLAS of the same rounds), and its checks."""
    rec = rec or record()
    if not _ran(rec, "both"):
        return
    env, part = rec["env"]["both"], rec["both"]
    print(f"experiments/pdl (both), {env['name']}, {env['date']}, outside the book's run; µs per launch back to back "
          f"(/ cuBLAS's time: its ratio)")
    print(f"{'M x N x K':<18}" + "".join(f"{x:>30}" for x in BOTH_NAMES) + f"{'cuBLAS':>9}")
    for row in part["time"]:
        print(f"{'x'.join(map(str, row['shape'])):<18}"
              + "".join(f"{row[x]['us']:>22.2f} ({row[x]['ratio']:.3f})" for x in BOTH_NAMES)
              + f"{row['cublas_best']['us']:>9.2f}")
    c = part["check"]
    print(f"{BOTH}: {sum(x['ok'] for x in c['single'])} of {len(c['single'])} single launches correct; back to back "
          + ", ".join(f"{'x'.join(map(str, x['shape']))} {sum(x['chain_ok'])} of {x['launches']}"
                      + ("" if x["into_one_ok"] else " (into one C WRONG)") for x in c["back_to_back"]))

