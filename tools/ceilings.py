"""Measure every machine ceiling of chapter 00 once in this run (GEMM_LADDER_RUN) and print each: the peaks, the
copy rates and the probes the roofline draws (ci/gpu.sh ceilings). A ceiling this run already measured is reused.

    python3 -m tools.ceilings                              (on the GPU host: every ceiling)
    python3 -m tools.ceilings hbm_read 'read_*'            (only these ids; shell-style patterns match several)
    python3 -m tools.ceilings --list                       (the ids, measuring nothing)
"""
from __future__ import annotations

import argparse
import fnmatch
import sys

from helpers import CEILINGS, ceiling


def chosen(patterns: list[str]) -> list[str]:
    """The ceiling ids the patterns name, in CEILINGS' order; every ceiling when there are none. A pattern that names
    none raises, listing the ids."""
    if not patterns:
        return list(CEILINGS)
    for p in patterns:
        if not fnmatch.filter(CEILINGS, p):
            raise KeyError(f"no ceiling matches {p!r}; the ceilings are: {', '.join(CEILINGS)}")
    return [cid for cid in CEILINGS if any(fnmatch.fnmatchcase(cid, p) for p in patterns)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tools.ceilings", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ids", nargs="*", help="ceiling ids or shell-style patterns (default: every ceiling)")
    parser.add_argument("--list", action="store_true", help="print the chosen ids and measure nothing")
    args = parser.parse_args(argv)
    try:
        ids = chosen(args.ids)
    except KeyError as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
        return 2
    for cid in ids:
        print(cid if args.list else ceiling(cid))
    return 0


if __name__ == "__main__":
    sys.exit(main())
