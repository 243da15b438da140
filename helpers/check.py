"""Prove a rung right: fresh random inputs, a NaN-poisoned output, a reference in higher precision, and two
verdicts that must both pass: the relative error of the whole matrix, and an element-wise bound."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .launch import (KernelFault, Launch, ShapeError, as_kn, faults_explained, launch, prepare, random_inputs,  # noqa: F401
                     upcast, validate)
from .registry import Rung

# ||C - ref||_F / ||ref||_F allowed per input dtype (accumulation is fp32 everywhere).
# The 16-bit references are exact up-casts multiplied in fp32, so the only difference left is fp32 summation order.
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-3, "bf16": 1e-3}
# A bf16 C (chapter 10, as cuBLAS writes it) is rounded to 8 significant bits: that alone gives ~1.6e-3.
OUT_TOLERANCE = {"fp32": 0.0, "bf16": 4e-3}

# Element-wise: |C - ref| <= BOUND_C * sqrt(K) * EPS_ACC * (|A| @ |B|) + ROUND_OUT * |ref|.
# Summing K products in fp32 in any order errs by at most K * eps * (|A| @ |B|) and, for random signs, typically
# sqrt(K) * eps; BOUND_C = 4 covers the tail of sixteen million elements. A single wrong element (a missed
# k-slice, a swapped index) is off by a whole product or more, hundreds of times this bound at K = 4096.
EPS_ACC = 2.0**-23          # fp32 machine epsilon: the accumulators of every rung (FFMA, HMMA, HGMMA) are fp32
BOUND_C = 4.0
# Rounding C to its dtype errs by half a unit in the last place: up to 2^-8 of |C| for bf16 (8 significant bits),
# 2^-24 for fp32. Twice that, so that an accumulator a hair away from the reference may round the other way.
ROUND_OUT = {"fp32": 2.0**-23, "bf16": 2.0**-7}


@dataclass(frozen=True)
class CheckResult:
    rung: str
    m: int
    n: int
    k: int
    rel_err: float
    tolerance: float
    all_finite: bool
    bad_elements: int = 0        # elements outside the element-wise bound
    worst_excess: float = 0.0    # max |C - ref| / bound (<= 1 passes)

    @property
    def ok(self) -> bool:
        return self.all_finite and self.rel_err <= self.tolerance and self.bad_elements == 0

    def __str__(self) -> str:
        if not self.all_finite:
            verdict = "WRONG: NaN/Inf in C"
        elif self.bad_elements:
            verdict = f"WRONG: {self.bad_elements} element(s) outside the element-wise bound"
        else:
            verdict = "correct" if self.ok else "WRONG"
        return (f"{self.rung} {self.m}x{self.n}x{self.k}: rel. error {self.rel_err:.2e} "
                f"(tolerance {self.tolerance:.0e}), worst element {self.worst_excess:.2f} of its bound -> {verdict}")


def _xp(x):
    """cupy for GPU arrays, numpy for host arrays: the verdict is the same arithmetic on either."""
    import cupy
    return cupy.get_array_module(x)


def reference(a, b, b_layout: str = "kn"):
    """cuBLAS in higher precision: fp64 for fp32 inputs; fp32 on exact up-casts of 16-bit inputs."""
    xp = _xp(a)
    if a.dtype == np.float32:
        return xp.matmul(a.astype(np.float64), as_kn(b, b_layout).astype(np.float64))
    return xp.matmul(upcast(a), as_kn(upcast(b), b_layout))


def element_bound(a, b, b_layout: str, ref, out_dtype: str):
    """The largest error each element of C may carry: accumulation in fp32 plus rounding C to its dtype."""
    xp = _xp(a)
    k = a.shape[1]
    magnitude = xp.matmul(xp.abs(upcast(a)), as_kn(xp.abs(upcast(b)), b_layout)).astype(np.float64)
    return BOUND_C * k**0.5 * EPS_ACC * magnitude + ROUND_OUT[out_dtype] * xp.abs(ref)


def verdict(r: Rung, m: int, n: int, k: int, a, b, c) -> CheckResult:
    """Compare C with the reference of A @ B: relative error, finiteness and the element-wise bound."""
    xp = _xp(a)
    ref = reference(a, b, r.b_layout).astype(np.float64)
    c = upcast(c).astype(np.float64)
    finite = bool(xp.isfinite(c).all())
    if not finite:
        return CheckResult(r.id, m, n, k, float("inf"), _tolerance(r), False)
    err = float(xp.linalg.norm(c - ref) / xp.linalg.norm(ref))
    excess = xp.abs(c - ref) / element_bound(a, b, r.b_layout, ref, r.out_dtype)
    return CheckResult(r.id, m, n, k, err, _tolerance(r), True, int((excess > 1).sum()), float(excess.max()))


def _tolerance(r: Rung) -> float:
    return max(TOLERANCE[r.dtype], OUT_TOLERANCE[r.out_dtype])


def check(r: Rung | str | Launch, m: int | None = None, n: int | None = None, k: int | None = None,
          source: str | None = None) -> CheckResult:
    """Run rung r (or its variant `source`, or a prepared Launch) once on fresh random data with C poisoned by
    NaN; compare with cuBLAS in higher precision."""
    import cupy as cp
    lau = r if isinstance(r, Launch) else prepare(r, m, n, k, source)
    a, b = lau.inputs()
    c = lau.output()
    with faults_explained(lau.rung):
        lau(a, b, c)
        cp.cuda.runtime.deviceSynchronize()
    return verdict(lau.rung, lau.m, lau.n, lau.k, a, b, c)
