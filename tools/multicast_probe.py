"""Run chapter 00's TMA multicast probe once at a small size: the workload compute-sanitizer inspects (ci/gpu.sh
probes). The probe is no rung, so tools.small_shapes does not reach it; 1% of L2 and 0.05 ms batches keep it short
under the sanitizers.

    python3 -m tools.multicast_probe     (on the GPU host, under compute-sanitizer)
"""
from __future__ import annotations

import argparse
import sys

from helpers.probes import measure_tma_multicast


def main(argv=None) -> int:
    argparse.ArgumentParser(prog="python3 -m tools.multicast_probe", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    print(measure_tma_multicast(fraction_of_l2=0.01, batch_ms=0.05))
    return 0


if __name__ == "__main__":
    sys.exit(main())
