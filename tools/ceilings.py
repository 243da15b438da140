"""Measure every machine ceiling of chapter 00 once in this run (GEMM_LADDER_RUN) and print each: the peaks, the
copy rates and the probes the roofline draws (ci/gpu.sh ceilings). A ceiling this run already measured is reused.

    python3 -m tools.ceilings            (on the GPU host)
"""
from __future__ import annotations

import argparse
import sys

from helpers import CEILINGS, ceiling


def main(argv=None) -> int:
    argparse.ArgumentParser(prog="python3 -m tools.ceilings", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    for cid in CEILINGS:
        print(ceiling(cid))
    return 0


if __name__ == "__main__":
    sys.exit(main())
