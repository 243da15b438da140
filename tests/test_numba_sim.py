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
name, m, n, k = sys.argv[1], *map(int, sys.argv[2:5])
rng = np.random.default_rng()
A = rng.standard_normal((m, k), dtype=np.float32)
B = rng.standard_normal((k, n), dtype=np.float32)
C = np.full((m, n), np.nan, np.float32)
run(TWINS[name], A, B, C)
ref = A.astype(np.float64) @ B.astype(np.float64)
print(json.dumps({"finite": bool(np.isfinite(C).all()),
                  "err": float(np.linalg.norm(C - ref) / np.linalg.norm(ref))}))
"""


@pytest.mark.parametrize("name,shape", [("01_naive", (37, 29, 23)), ("01_naive", (32, 64, 1)),
                                        ("01_smem_tiled", (40, 33, 50)), ("01_smem_tiled", (32, 32, 32))])
def test_numba_twin_under_simulator(name, shape):
    # A subprocess, because the simulator must be switched on before numba.cuda is first imported.
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", SCRIPT, name, *map(str, shape)], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["finite"], "some element of C was never written"
    assert res["err"] < 1e-5
