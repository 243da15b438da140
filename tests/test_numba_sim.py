"""The numba twins run under the CUDA simulator (no GPU): proves their indexing, edges included."""
import json
import os
import subprocess
import sys

import pytest

from helpers.registry import ROOT

SCRIPT = r"""
import json, sys, numpy as np
from helpers.numba_simt import TWINS, run
name, shapes = sys.argv[1], json.loads(sys.argv[2])
rng = np.random.default_rng()
got = []
for m, n, k in shapes:
    A = rng.standard_normal((m, k), dtype=np.float32)
    B = rng.standard_normal((k, n), dtype=np.float32)
    C = np.full((m, n), np.nan, np.float32)
    run(TWINS[name], A, B, C)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    got.append({"shape": [m, n, k], "finite": bool(np.isfinite(C).all()),
                "err": float(np.linalg.norm(C - ref) / np.linalg.norm(ref))})
print(json.dumps(got))
"""


@pytest.mark.slow  # the simulator runs each GPU thread as a Python thread
@pytest.mark.parametrize("name, shapes", [
    # Edges in every dimension across two blocks (the naive twin's grid x runs along rows of C), and K = 1.
    ("01_naive", [(37, 29, 23), (32, 64, 1)]),
    # A 2 x 2 grid of 32 x 32 blocks with a partial block in M and in N, and two k tiles, the second partial: every
    # guard, both block offsets and the tile loop at once. The simulator runs each of a block's 1,024 threads as a
    # Python thread, about a second per block and k tile, so this shape alone is the test; the exact single tile
    # (32, 32, 32) it used to add again is this grid's first block on its first k tile.
    ("01_smem_tiled", [(40, 33, 50)]),
])
def test_numba_twin_under_simulator(name, shapes):
    # A subprocess, because the simulator must be switched on before numba.cuda is first imported; one per twin, so
    # numba's start-up (over a second) is paid once for all of the twin's shapes.
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", SCRIPT, name, json.dumps(shapes)], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert [tuple(g["shape"]) for g in got] == [tuple(s) for s in shapes]
    for g in got:
        assert g["finite"], f"{name} at {g['shape']}: some element of C was never written"
        assert g["err"] < 1e-5, f"{name} at {g['shape']}: relative error {g['err']:.2e}"
