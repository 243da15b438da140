"""python -m helpers ladder [--n N ...] [--shape M N K ...] [--rungs ID ...] [--replay] [--json] [--plot PATH]"""
from __future__ import annotations

import argparse
import json
import os
import sys

from .gpu import REPLAY_ENV


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m helpers", description="Climb the GEMM ladder.")
    sub = p.add_subparsers(dest="cmd", required=True)
    lad = sub.add_parser("ladder", help="run (or replay) every registered rung against cuBLAS")
    lad.add_argument("--n", type=int, nargs="+", help="square sizes N (default 4096, unless --shape is given)")
    lad.add_argument("--shape", type=int, nargs=3, action="append", metavar=("M", "N", "K"), default=[],
                     help="a non-square M N K (repeat the option for several)")
    lad.add_argument("--rungs", nargs="+", help="rung ids (default: all registered rungs)")
    lad.add_argument("--replay", action="store_true", help="show recorded results even if a GPU is present")
    lad.add_argument("--json", action="store_true", help="print rows as JSON instead of a table")
    lad.add_argument("--plot", default="climb.png", help="where to write the climb plot ('' for none)")
    args = p.parse_args(argv)

    if args.replay:
        os.environ[REPLAY_ENV] = "1"
    from . import ladder, registry, report  # after the env var, so mode detection sees it

    try:
        chosen = [registry.rung(x) for x in args.rungs] if args.rungs else list(registry.RUNGS)
    except KeyError as e:
        p.error(e.args[0])
    from .results import ResultsError
    try:
        print(report.banner_text(), file=sys.stderr)
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    from .report import progress
    rows, missing = [], []
    sizes = args.n if args.n or args.shape else [4096]
    shapes = [(n, n, n) for n in sizes or []] + [tuple(s) for s in args.shape]
    for r, shape in progress([(r, shape) for shape in shapes for r in chosen], "the ladder"):
        label = f"N={shape[0]}" if len(set(shape)) == 1 else "x".join(map(str, shape))
        try:
            rows.append(ladder.measure(r, *shape, missing_ok=True))  # never recorded: a "not measured" line
        except ResultsError as e:
            missing.append(str(e))
        except Exception as e:  # noqa: BLE001 - one broken rung must not lose the others' results
            missing.append(f"{r.id} {label} failed: {type(e).__name__}: {e}")
    for m in missing:
        print(f"skipped: {m}", file=sys.stderr)
    for r in rows:
        if not r.has_number:
            print(f"not measured: {r.why}", file=sys.stderr)

    if args.json:
        print(json.dumps([r.json() for r in rows], indent=1))
    else:
        print(report.table(rows))
    numbers = [r for r in rows if r.has_number]
    if args.plot and numbers:
        from .plot import save_climb
        ceilings = ladder.recorded_ceilings() if numbers[0].source == "recorded" else {}
        save_climb(numbers, ceilings, args.plot)
        print(f"climb plot written to {args.plot}", file=sys.stderr)
    return 0 if numbers and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
