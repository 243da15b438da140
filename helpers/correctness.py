"""Prove a rung right: fresh random inputs, a NaN-poisoned output, a reference in higher precision, and two
verdicts that must both pass: the relative error of the whole matrix, and an element-wise bound."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .formats import BOUND_C, EPS_ACC, EPS_ACC_OF, FP8, FP8_INPUT_SCALE, ROUND_OUT, upcast, xp_of
from .kernel import faults_explained
from .launch import Launch, as_kn, prepare
from .registry import Rung

# ||C - ref||_F / ||ref||_F allowed per input dtype (accumulation is fp32 everywhere).
# The 16-bit references are exact up-casts multiplied in fp32, so the only difference left is fp32 summation order.
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-3, "bf16": 1e-3, "e4m3": 1e-3}
# A bf16 C (chapter 10, as cuBLAS writes it) is rounded to 8 significant bits: that alone gives ~1.6e-3.
OUT_TOLERANCE = {"fp32": 0.0, "bf16": 4e-3}

# Element-wise: |C - ref| <= BOUND_C * sqrt(K) * EPS_ACC * (|A| @ |B|) + ROUND_OUT * |ref| (helpers.formats says why).


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


def reference(a, b, b_layout: str = "kn", scale: float = 1.0):
    """cuBLAS in higher precision: fp64 for fp32 inputs and for FP8 codes (decoded exactly, times `scale`, the
    product of the two tensors' scales); fp32 on exact up-casts of 16-bit inputs."""
    xp = xp_of(a)
    if a.dtype in (np.float32, np.uint8):
        return scale * xp.matmul(upcast(a).astype(np.float64), as_kn(upcast(b), b_layout).astype(np.float64))
    return xp.matmul(upcast(a), as_kn(upcast(b), b_layout))


def element_bound(a, b, b_layout: str, ref, out_dtype: str, scale: float = 1.0, eps_acc: float = EPS_ACC):
    """The largest error each element of C may carry: accumulation with machine epsilon `eps_acc` plus rounding C
    to its dtype."""
    xp = xp_of(a)
    k = a.shape[1]
    magnitude = scale * xp.matmul(xp.abs(upcast(a)), as_kn(xp.abs(upcast(b)), b_layout)).astype(np.float64)
    return BOUND_C * k**0.5 * eps_acc * magnitude + ROUND_OUT[out_dtype] * xp.abs(ref)


def verdict(r: Rung, m: int, n: int, k: int, a, b, c, scale: float = 1.0) -> CheckResult:
    """Compare C with the reference of A @ B (times `scale` for an FP8 rung): relative error, finiteness and the
    element-wise bound."""
    xp = xp_of(a)
    ref = reference(a, b, r.b_layout, scale).astype(np.float64)
    c = upcast(c).astype(np.float64)
    finite = bool(xp.isfinite(c).all())
    if not finite:
        return CheckResult(r.id, m, n, k, float("inf"), _tolerance(r), False)
    err = float(xp.linalg.norm(c - ref) / xp.linalg.norm(ref))
    bound = element_bound(a, b, r.b_layout, ref, r.out_dtype, scale, EPS_ACC_OF.get(r.dtype, EPS_ACC))
    excess = xp.abs(c - ref) / bound
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
    scale = fresh_scale() if lau.rung.dtype in FP8 else 1.0
    with faults_explained(lau.rung):
        lau(a, b, c, scale)
        cp.cuda.runtime.deviceSynchronize()
    return verdict(lau.rung, lau.m, lau.n, lau.k, a, b, c, scale)


def fresh_scale() -> float:
    """scale_a * scale_b for an FP8 check: the inputs' 1/16 each, times a fresh factor in [1, 2) that is almost
    never a power of two, so a kernel that ignores the scale, or applies it twice, fails."""
    return FP8_INPUT_SCALE**2 * (1 + int.from_bytes(os.urandom(4), "little") / 2**32)
