"""Prove a rung right: fresh random inputs, a NaN-poisoned output, a reference in higher precision, and two
verdicts that must both pass: the relative error of the whole matrix, and an element-wise bound."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .launch import (FP8, FP8_INPUT_SCALE, KernelFault, Launch, ShapeError, as_kn, faults_explained, launch,  # noqa: F401
                     prepare, random_inputs, upcast, validate)
from .registry import Rung

# ||C - ref||_F / ||ref||_F allowed per input dtype (accumulation is fp32 everywhere).
# The 16-bit references are exact up-casts multiplied in fp32, so the only difference left is fp32 summation order.
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-3, "bf16": 1e-3, "e4m3": 1e-3}
# A bf16 C (chapter 10, as cuBLAS writes it) is rounded to 8 significant bits: that alone gives ~1.6e-3.
OUT_TOLERANCE = {"fp32": 0.0, "bf16": 4e-3}

# Element-wise: |C - ref| <= BOUND_C * sqrt(K) * EPS_ACC * (|A| @ |B|) + ROUND_OUT * |ref|.
# Summing K products in fp32 in any order errs by at most K * eps * (|A| @ |B|) and, for random signs, typically
# sqrt(K) * eps; BOUND_C = 4 covers the tail of sixteen million elements. A single wrong element (a missed
# k-slice, a swapped index) is off by a whole product or more, hundreds of times this bound at K = 4096.
EPS_ACC = 2.0**-23          # fp32 machine epsilon: the accumulators of every rung (FFMA, HMMA, HGMMA) are fp32
BOUND_C = 4.0
# FP8 wgmma does not sum in fp32. Chapter 12's probe (helpers.fp8.probe_accumulator) measured on the H100 that each
# m64nNk32 step adds its 32 products and the incoming accumulator keeping about 14 significant bits below the
# largest of them: a term 2^-14 below it is lost, inside one instruction and across instructions alike (bf16 wgmma
# keeps 24, fp32's own). So K/32 roundings of relative size 2^-13, each at most 2^-13 of (|A| @ |B|); for random
# signs they add as sqrt(K/32). Written as check.py's sqrt(K) * eps rule: eps = 2^-13 / sqrt(32).
EPS_ACC_OF = {"e4m3": 2.0**-13 / 32**0.5}
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


def reference(a, b, b_layout: str = "kn", scale: float = 1.0):
    """cuBLAS in higher precision: fp64 for fp32 inputs and for FP8 codes (decoded exactly, times `scale`, the
    product of the two tensors' scales); fp32 on exact up-casts of 16-bit inputs."""
    xp = _xp(a)
    if a.dtype in (np.float32, np.uint8):
        return scale * xp.matmul(upcast(a).astype(np.float64), as_kn(upcast(b), b_layout).astype(np.float64))
    return xp.matmul(upcast(a), as_kn(upcast(b), b_layout))


def element_bound(a, b, b_layout: str, ref, out_dtype: str, scale: float = 1.0, eps_acc: float = EPS_ACC):
    """The largest error each element of C may carry: accumulation with machine epsilon `eps_acc` plus rounding C
    to its dtype."""
    xp = _xp(a)
    k = a.shape[1]
    magnitude = scale * xp.matmul(xp.abs(upcast(a)), as_kn(xp.abs(upcast(b)), b_layout)).astype(np.float64)
    return BOUND_C * k**0.5 * eps_acc * magnitude + ROUND_OUT[out_dtype] * xp.abs(ref)


def verdict(r: Rung, m: int, n: int, k: int, a, b, c, scale: float = 1.0) -> CheckResult:
    """Compare C with the reference of A @ B (times `scale` for an FP8 rung): relative error, finiteness and the
    element-wise bound."""
    xp = _xp(a)
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
    import os
    return FP8_INPUT_SCALE**2 * (1 + int.from_bytes(os.urandom(4), "little") / 2**32)
