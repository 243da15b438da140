"""Run every rung once at small shapes: the workload compute-sanitizer inspects (ci/gpu.sh sanitize)."""
from helpers import RUNGS, ShapeError, check

for r in RUNGS:
    for shape in ((128, 128, 32), (256, 128, 64), (128, 256, 96), (256, 256, 128), (33, 17, 9)):
        try:
            res = check(r, *shape)
        except ShapeError:
            continue
        print(res)
        assert res.ok, res
