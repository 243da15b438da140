"""Run every rung once at small shapes: the workload compute-sanitizer inspects (ci/gpu.sh sanitize).
2304 x 2048 gives chapter 10's persistent clusters more than one tile each (72 tiles for 66 clusters)."""
from helpers import RUNGS, ShapeError, check

for r in RUNGS:
    for shape in ((128, 128, 32), (256, 128, 64), (128, 256, 96), (256, 256, 128), (33, 17, 9), (2304, 2048, 64)):
        if shape == (2304, 2048, 64) and r.grid != "persistent":
            continue  # large for the sanitizers; only the persistent rungs need it
        try:
            res = check(r, *shape)
        except ShapeError:
            continue
        print(res)
        assert res.ok, res
