"""Run every rung once at small shapes: the workload compute-sanitizer inspects (ci/gpu.sh sanitize)."""
from helpers import RUNGS, ShapeError, check

for r in RUNGS:
    for shape in ((128, 128, 16), (256, 128, 24), (33, 17, 9)):
        try:
            res = check(r, *shape)
        except ShapeError:
            continue
        print(res)
        assert res.ok, res
