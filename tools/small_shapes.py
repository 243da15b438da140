"""Run every rung once at small shapes: the workload compute-sanitizer inspects (ci/gpu.sh sanitize).
2304 x 2048 gives chapter 10's persistent clusters more than one tile each (72 tiles for 66 clusters);
256 x 384 takes rung 10's narrow tile (N is no multiple of 256); 128 x 640 chapter 09's 128 x 320 tile, and only it;
256 x 256 x 512 four FP8 k tiles. The ragged rungs also take 255 x 264 x 208 and 300 x 520 x 1040 (edge tiles that
read zeros past M, N and K, and clipped stores) and 100 x 35840 x 64, where pairs run and every second CTA's A box
lies wholly past M.

    python3 -m tools.small_shapes [RUNG_ID_PREFIX ...]     (default: every rung)
"""
from __future__ import annotations

import argparse
import sys

from helpers import RUNGS, ShapeError, check

SHAPES = ((128, 128, 32), (256, 128, 64), (128, 256, 96), (256, 256, 128), (33, 17, 9), (256, 384, 192),
          (2304, 2048, 128), (128, 640, 128), (256, 256, 512), (255, 264, 208), (300, 520, 1040), (100, 35840, 64))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tools.small_shapes", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prefixes", nargs="*", metavar="RUNG_ID_PREFIX", help="only rungs whose ids start so")
    prefixes = tuple(ap.parse_args(argv).prefixes)
    for r in RUNGS:
        if prefixes and not r.id.startswith(prefixes):
            continue
        for shape in SHAPES:
            if shape == (256, 256, 512) and r.dtype != "e4m3":
                continue  # FP8's k tile is 128 deep: this gives it four, so 12_fp8_promoted adds partial sums
            if shape == (2304, 2048, 128) and r.grid != "persistent":
                continue  # large for the sanitizers; only the persistent rungs need it
            if shape == (100, 35840, 64) and not r.ragged:
                continue  # wide for the untiled rungs; the tiled ones refuse it anyway
            if shape == (128, 640, 128) and r.config.get("BN") != 320:
                continue  # the only shape that tile divides; the others take their own
            try:
                res = check(r, *shape)
            except ShapeError:
                continue
            print(res)
            assert res.ok, res
    return 0


if __name__ == "__main__":
    sys.exit(main())
