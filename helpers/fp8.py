"""FP8 above the codec (helpers.formats), for chapter 12: how much error FP8 costs, what a ring stage carries, and
how many bits a tensor-core sum keeps, as small NumPy functions the tests check.

    gemm(a8, b8, sa, sb)         a NumPy model of the kernel: exact products, float32 sums per k-block, bf16 C
    matmul_error_bound(k)        what an FP8 GEMM may differ from an exact matmul of its own (dequantized) inputs
    quantization_error(k)        what FP8 costs against the original data, per value and per K-long dot product
    scaling_demo(rng)            flushed, saturated and dot-product error of outlier-heavy data, scaled or not
    accuracy_demo(rng)           one activation-by-weight GEMM in bf16, scaled FP8 and unscaled FP8, against exact
    stage(bm, bn, bk, itemsize)  bytes and FLOP of one ring stage, for bf16 against FP8 tiles
    accumulation_probe / kept_binades / probe_accumulator
                                 how many bits a tensor-core sum keeps (the last runs a rung's kernel: GPU)

Only probe_accumulator needs a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .formats import BOUND_C, EPS_ACC, FP32, ROUND_OUT, Format, decode, encode, per_tensor_scale, quantize, spec, to_bf16, upcast
from .launch import prepare


# ---- error models -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GemmBound:
    """|C - ref| <= magnitude * (|A| @ |B|) + relative * |ref|, element by element, where A and B are the
    dequantized inputs (code x scale, exactly) and ref = A @ B in exact arithmetic."""
    k: int
    model: str          # "worst" (holds for every input and order) or "typical" (the course's check.py rule)
    magnitude: float
    relative: float

    def __call__(self, magnitude, ref) -> np.ndarray:
        return self.magnitude * np.asarray(magnitude, np.float64) + self.relative * np.abs(np.asarray(ref))


def _gamma(n: int, u: float) -> float:
    """Higham's gamma_n = n u / (1 - n u): the relative error bound of n successive roundings."""
    if n * u >= 1:
        raise ValueError(f"{n} roundings of unit roundoff {u:g} admit no bound; K is too large for this model")
    return n * u / (1 - n * u)


def matmul_error_bound(k: int, fmt: str = "e4m3", out: str = "bf16", model: str = "typical",
                       acc_u: float = 2.0**-24) -> GemmBound:
    """The element-wise bound to test an FP8 GEMM (FP8 A and B, scales scale_a and scale_b, FP32 accumulator,
    C rounded to `out`) against ref = exact matmul of the dequantized inputs.

    Derivation. Every product of two FP8 values is exact in FP32: its significand has at most 2 x 4 = 8 bits (e4m3;
    6 for e5m2) and its exponent stays inside FP32's normal range (e4m3: 2^-18 to 448^2; e5m2: 2^-32 to 57344^2).
    This function refuses a format for which that fails. So the reference and the kernel agree on every product
    p_k, and only three roundings remain:
      1. the K-term sum S = sum p_k in FP32, any order:  |S - R| <= gamma_{K-1} sum |p_k|   (R = exact sum);
      2. the epilogue D = fl(fl(scale_a scale_b) S): two FP32 roundings, (1 + d1)(1 + d2), |d| <= 2^-24;
      3. the store C = round_to_out(D): (1 + d3), |d3| <= u_out (2^-8 for bf16, round to nearest).
    With s = scale_a scale_b, s sum|p_k| = (|A| @ |B|) and s R = ref; writing theta = (1 + 2^-24)^2 (1 + u_out) - 1,
        |C - ref| <= gamma_{K-1} (1 + theta) (|A| @ |B|) + theta |ref|          (model="worst").
    That holds for every input and summation order, but at K = 4096 it allows 2.4e-4 of |A| @ |B|, as much as one
    whole missing product: too loose to catch a dropped k-slice. Rounding errors of random sign add like a random
    walk, so model="typical" uses sqrt(K) instead of K with the constants helpers/correctness.py applies to every bf16
    rung (BOUND_C sqrt(K) EPS_ACC on the magnitude, ROUND_OUT[out] on |ref|, plus the two epilogue roundings).

    Which reference. "An FP32 matmul of the dequantized inputs" has exact products only when the dequantized
    values are exact in FP32, i.e. with power-of-two scales (per_tensor_scale(..., power_of_two=True)); with any
    other scale, compute ref = scale_a scale_b (decode(A8) @ decode(B8)) instead, as the kernel does. And a
    reference that is itself summed in FP32 (cuBLAS, np.matmul in float32) carries a summation error of the same
    kind as the kernel's: allow the magnitude term twice.

    acc_u is the accumulator's unit roundoff: 2^-24 for a true FP32 sum. FP8 wgmma on Hopper has been reported
    to keep fewer bits inside the tensor core (about 14 significant bits, truncated) before the partial sum
    reaches the FP32 registers; a kernel that does not promote partial sums into a separate FP32 accumulator every
    few k-blocks should be tested with a larger acc_u (2^-13 for 14 bits truncated), or measured first.
    """
    f, o = spec(fmt), spec(out)
    product_bits = 2 * (f.man_bits + 1)
    if product_bits > FP32.man_bits + 1 or f.min_subnormal**2 < FP32.min_normal or f.max_finite**2 > FP32.max_finite:
        raise ValueError(f"products of two {f.name} values are not exact in FP32, so this bound does not apply")
    epilogue = 2 * FP32.unit_roundoff          # the scale product and the multiply, in FP32 registers
    if model == "worst":
        theta = (1 + FP32.unit_roundoff) ** 2 * (1 + o.unit_roundoff) - 1
        return GemmBound(k, model, _gamma(max(k - 1, 0), acc_u) * (1 + theta), theta)
    if model == "typical":
        round_out = ROUND_OUT.get(o.name, 2 * o.unit_roundoff)
        # EPS_ACC is twice FP32's unit roundoff; scale it by how much coarser this accumulator is
        return GemmBound(k, model, float(BOUND_C * np.sqrt(k) * EPS_ACC * (acc_u / FP32.unit_roundoff)),
                         round_out + epilogue)
    raise ValueError(f"model must be 'worst' or 'typical', not {model!r}")


def _chop(x: np.ndarray, bits: int) -> np.ndarray:
    """x (float32) with only its `bits` leading significant bits kept, the rest cut off (rounding toward zero)."""
    frac, exp = np.frexp(x.astype(np.float64))
    return np.ldexp(np.trunc(np.ldexp(frac, bits)), exp - bits).astype(np.float32)


def gemm(a_codes, b_codes, scale_a: float, scale_b: float, fmt: str = "e4m3", out: str = "bf16",
         k_block: int = 32, acc_bits: int | None = None) -> np.ndarray:
    """A NumPy model of what an FP8 GEMM kernel computes: C = round_out(scale_a scale_b (A8 @ B8)) for A8 [M, K]
    and B8 [K, N] given as codes. The products of FP8 values are exact in float32; each k_block of them is summed
    in float32 (np.matmul) and added to a float32 accumulator in k order, the way a kernel adds one wgmma's
    k-slice after another; the epilogue multiplies by the scales in float32 and rounds to `out`.

    acc_bits=None keeps a true float32 accumulator. acc_bits=14 chops the accumulator to 14 significant bits after
    every k_block: a rough stand-in for the narrower accumulation reported for Hopper's FP8 tensor cores, for
    seeing what it does to the error bound, not a description of the hardware's exact arithmetic."""
    a = decode(a_codes, fmt)
    b = decode(b_codes, fmt)
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"A is {a.shape} and B is {b.shape}: A's columns must match B's rows (K)")
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k0 in range(0, a.shape[1], k_block):
        acc = acc + a[:, k0:k0 + k_block] @ b[k0:k0 + k_block]
        if acc_bits is not None:
            acc = _chop(acc, acc_bits)
    c = (np.float32(scale_a) * np.float32(scale_b)) * acc
    return c if out == "fp32" else decode(encode(c, out), out)


@dataclass(frozen=True)
class QuantizationError:
    """What rounding the inputs to FP8 costs against the original data (products and sums exact, no saturation,
    values in the normal range after scaling).

    value:    bound on |x8 - x| / |x| for one value: half the relative step, 2^-4 for e4m3, 2^-3 for e5m2.
    rms_value: the root-mean-square of that relative error when the significands spread evenly on a log scale
              (Benford-like data, e.g. Gaussian over several binades): 2^-m / sqrt(32 ln 2), about 0.21 x 2^-m.
    worst:    |sum a8 b8 - sum a b| <= worst * sum |a b|  for `operands` quantized inputs: (1 + value)^n - 1.
    rms:      the expected RMS of that error in units of rms(a_k b_k), for independent errors of random sign:
              sqrt(operands K) x rms_value. It grows as sqrt(K), while the worst case grows as K.
    relative: rms error over the rms of the dot product itself, for zero-mean independent a and b (whose dot
              product has rms sqrt(K) rms(a b)): sqrt(operands) x rms_value, the same at every K."""
    k: int
    operands: int
    value: float
    rms_value: float

    @property
    def worst(self) -> float:
        return (1 + self.value) ** self.operands - 1

    @property
    def rms(self) -> float:
        return float(np.sqrt(self.operands * self.k) * self.rms_value)

    @property
    def relative(self) -> float:
        return float(np.sqrt(self.operands) * self.rms_value)


def quantization_error(k: int, fmt: str = "e4m3", operands: int = 2) -> QuantizationError:
    """The error model of FP8 against unquantized data, for a dot product of length k with `operands` (1 or 2)
    of its inputs rounded to the format (see QuantizationError for each number and where it comes from).

    Where rms_value comes from: rounding to nearest leaves an absolute error spread evenly over half a step either
    side, so its mean square is step^2 / 12 with step = 2^(e-m) in the binade [2^e, 2^(e+1)). Divided by x^2 and
    averaged over x with density 1 / (x ln 2) across the binade, E[(2^e / x)^2] = 3 / (8 ln 2); together that is
    2^-2m / (32 ln 2)."""
    if operands not in (1, 2):
        raise ValueError(f"a dot product has one or two quantized operands, not {operands}")
    f = spec(fmt)
    return QuantizationError(k, operands, f.unit_roundoff, float(f.eps / np.sqrt(32 * np.log(2))))


# ---- what scaling buys ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class QuantStats:
    """One way of storing a tensor in FP8, counted: fractions of the non-zero values that became zero (flushed),
    that met the format's max (saturated) or fell among the subnormals (kept with fewer significant bits), and
    the relative error ||x8 @ w - x @ w|| / ||x @ w|| of K-long dot products with an exact random vector w."""
    scale: float
    flushed: float
    saturated: float
    subnormal: float
    dot_rel_err: float


@dataclass(frozen=True)
class ScalingDemo:
    data: np.ndarray      # [rows, K] float32, the tensor before quantization
    fmt: str
    unscaled: QuantStats  # stored as is (scale 1)
    scaled: QuantStats    # per-tensor amax scaling


def _stats(x: np.ndarray, w: np.ndarray, scale: float, f: Format) -> QuantStats:
    _, x8 = quantize(x, scale, f.name)
    stored = x.astype(np.float64)[x != 0] / scale
    # saturated: what rounding alone would have carried past the largest finite value (inf or NaN without .satfinite)
    overflowed = ~np.isfinite(decode(encode(stored, f.name, saturate=False), f.name))
    kept = np.abs(decode(encode(stored, f.name), f.name))
    ref, got = x.astype(np.float64) @ w, x8.astype(np.float64) @ w
    return QuantStats(scale=scale,
                      flushed=float(np.mean(kept == 0)),
                      saturated=float(np.mean(overflowed)),
                      subnormal=float(np.mean((kept > 0) & (kept < f.min_normal))),
                      dot_rel_err=float(np.linalg.norm(got - ref) / np.linalg.norm(ref)))


def scaling_demo(rng: np.random.Generator, shape=(256, 4096), sigma: float = 1.0, outlier: float = 2000.0,
                 outlier_fraction: float = 2e-4, fmt: str = "e4m3") -> ScalingDemo:
    """Activation-like data stored in FP8 with and without per-tensor scaling.

    The data: a Gaussian body of standard deviation `sigma`, plus a small fraction of entries (outlier_fraction)
    around +-outlier, the way a few channels of a transformer's activations run hundreds of times larger than
    the rest. Stored as is, everything above 448 saturates (and, for a small sigma, the bottom of the body flushes
    to zero); scaled by amax / 448 nothing saturates, at the price of pushing the body down towards the
    subnormals. Both are counted (QuantStats) on the same data and the same random w."""
    f = spec(fmt)
    x = sigma * rng.standard_normal(shape)
    wild = rng.random(shape) < outlier_fraction
    x[wild] = rng.choice([-1.0, 1.0], size=int(wild.sum())) * outlier * (1 + 0.25 * rng.random(int(wild.sum())))
    x = x.astype(np.float32)
    w = rng.standard_normal(shape[-1])
    return ScalingDemo(x, f.name, _stats(x, w, 1.0, f), _stats(x, w, per_tensor_scale(x, f.name), f))


# ---- FP8 against the original data, on a GEMM ------------------------------------------------------------------------

@dataclass(frozen=True)
class AccuracyDemo:
    """Relative Frobenius errors of one activation-by-weight GEMM, each against the exact product of the original
    float32 data (float64 sums): what storing the operands in a narrower format costs before C is rounded."""
    shape: tuple          # (M, K, N)
    errors: dict          # label -> ||C - exact|| / ||exact||
    scales: tuple         # (scale_x, scale_w) of the per-tensor scaled FP8 version
    flushed_unscaled: float  # share of the weights that became zero when stored in e4m3 unscaled


def accuracy_demo(rng: np.random.Generator, m: int = 256, k: int = 4096, n: int = 256, w_sigma: float = 0.02,
                  fmt: str = "e4m3") -> AccuracyDemo:
    """Activations X [M, K] with a few large outliers (scaling_demo's data) times weights W [K, N] ~ N(0, w_sigma^2),
    the sizes a transformer's layers have. The product is computed from:
      - bf16 copies of X and W, summed in float64 (what the BF16 ladder feeds its tensor cores);
      - FP8 codes with per-tensor amax scales, summed exactly per k32 step in float32 (the `gemm` model);
      - the same, with the accumulator chopped to 14 significant bits after every k32 step, as chapter 12's probe
        measured FP8 wgmma to keep;
      - FP8 codes of the raw values (no scaling): large activations saturate at 448 and small weights fall among
        the subnormals or flush to zero.
    Errors are before C's own rounding (bf16 C adds about 2^-9 relative to every one of them)."""
    x = scaling_demo(rng, shape=(m, k)).data.astype(np.float64)
    w = w_sigma * rng.standard_normal((k, n))
    exact = x @ w
    rel = lambda c: float(np.linalg.norm(c - exact) / np.linalg.norm(exact))  # noqa: E731
    _, xb = quantize(x, 1.0, "bf16")
    _, wb = quantize(w, 1.0, "bf16")
    sx, sw = per_tensor_scale(x, fmt), per_tensor_scale(w, fmt)
    x8, w8 = encode(x / sx, fmt), encode(w / sw, fmt)
    raw_x, raw_w = encode(x, fmt), encode(w, fmt)
    errors = {"bf16 inputs": rel(xb.astype(np.float64) @ wb.astype(np.float64)),
              f"{fmt}, per-tensor scales": rel(gemm(x8, w8, sx, sw, fmt, out="fp32")),
              f"{fmt}, per-tensor scales, 14-bit sum": rel(gemm(x8, w8, sx, sw, fmt, out="fp32", acc_bits=14)),
              f"{fmt}, no scaling": rel(gemm(raw_x, raw_w, 1.0, 1.0, fmt, out="fp32"))}
    flushed = float(np.mean(decode(raw_w, fmt) == 0))
    return AccuracyDemo((m, k, n), errors, (sx, sw), flushed)


# ---- what a ring stage carries ------------------------------------------------------------------------------------



def stage(bm: int, bn: int, bk: int, itemsize: int) -> dict:
    """One k-tile of a [BM, BN] block: bytes of A [BM, BK] and B [BN, BK] (both K-major, as FP8 wgmma requires),
    the FLOP they feed (2 BM BN BK), FLOP per byte, and the bytes in one K-row of the box (what the 128-byte
    swizzle caps)."""
    a, b = bm * bk * itemsize, bn * bk * itemsize
    flop = 2 * bm * bn * bk
    return {"bk": bk, "a_bytes": a, "b_bytes": b, "bytes": a + b, "flop": flop, "flop_per_byte": flop / (a + b),
            "row_bytes": bk * itemsize}


# ---- how many bits does the tensor core keep? ----------------------------------------------------------------------

# Where the three products of a probe row sit along k (+big, -big, tiny), per placement. A wgmma reads 32 values
# of k in FP8 (16 in bf16), so "one instruction" keeps all three inside the first k32 step, "tiny in between" puts
# the tiny product in a later instruction than +big and -big in a later one still, and "tiny first" starts the sum
# with it. "across k tiles" puts the three in three different 128-deep k tiles (an FP8 stage), so a kernel that
# adds each k tile's partial sum into fp32 (12_fp8_promoted) adds big + tiny in fp32, not in the tensor core.
# Every row's terms are exact in e4m3 and in bf16, and so is the true sum: the tiny product alone.
PROBE_PLACEMENTS = {"one instruction": (0, 1, 2), "tiny in between": (3, 67, 35), "tiny first": (36, 68, 4),
                    "across k tiles": (0, 260, 130)}
PROBE_K = 384     # three FP8 k tiles
PROBE_TINY = 18   # tiny products 2^8 .. 2^-9, one per column (mod 18)


@dataclass(frozen=True)
class AccumulationProbe:
    """Inputs of the accumulator probe: C = A @ Bt^T where row m adds +big, -big and a tiny product, in the k order
    of its placement. big = 2^(16 - shift) with shift 0 or 8 (per row), tiny = 2^(8 - j) with j = column mod 18,
    so the tiny product sits d = 8 - shift + j binades below big: d = 0 .. 25. An accumulator that keeps p bits
    below the largest term it adds keeps the tiny product while d < p and loses it beyond."""
    a: np.ndarray          # [M, K] float32, exact in e4m3 and bf16
    bt: np.ndarray         # [N, K] float32
    expected: np.ndarray   # [M, N] the exact sum: the tiny product
    d: np.ndarray          # [M, N] binades between big and tiny
    placement: np.ndarray  # [M] index into PROBE_PLACEMENTS


def accumulation_probe(m: int = 256, n: int = 256, k: int = PROBE_K) -> AccumulationProbe:
    """The probe's operands for an M x N x K GEMM (every placement and shift on many rows)."""
    deepest = max(max(x) for x in PROBE_PLACEMENTS.values())
    if k <= deepest or n < PROBE_TINY or m < 2 * len(PROBE_PLACEMENTS):
        raise ValueError(f"the probe needs K > {deepest}, N >= {PROBE_TINY} and M >= {2 * len(PROBE_PLACEMENTS)}")
    a, bt = np.zeros((m, k), np.float32), np.zeros((n, k), np.float32)
    rows = np.arange(m)
    placement = rows % len(PROBE_PLACEMENTS)
    shift = 8 * ((rows // len(PROBE_PLACEMENTS)) % 2)
    j = np.arange(n) % PROBE_TINY
    for p, (plus, minus, tiny) in enumerate(PROBE_PLACEMENTS.values()):
        mine = placement == p
        a[mine, plus], a[mine, minus], a[mine, tiny] = 2.0 ** (8 - shift[mine]), -(2.0 ** (8 - shift[mine])), 1.0
        bt[:, plus], bt[:, minus], bt[:, tiny] = 2.0**8, 2.0**8, np.ldexp(1.0, 8 - j)
    expected = np.broadcast_to(np.ldexp(1.0, 8 - j), (m, n)).astype(np.float32)
    d = (8 - shift)[:, None] + j[None, :]
    return AccumulationProbe(a, bt, expected, d, placement)


def kept_binades(probe: AccumulationProbe, c) -> dict:
    """Per placement: the largest d such that every tiny product at d or fewer binades below big came out exact
    (-1 if even d = 0 failed), and the smallest d at which one was lost (None if none was)."""
    c = np.asarray(c, np.float32)
    out = {}
    for p, name in enumerate(PROBE_PLACEMENTS):
        rows = probe.placement == p
        exact, d = (c[rows] == probe.expected[rows]), probe.d[rows]
        lost = d[~exact]
        first_lost = int(lost.min()) if lost.size else None
        out[name] = {"kept": (first_lost - 1) if first_lost is not None else int(d.max()), "first_lost": first_lost}
    return out


def probe_accumulator(rung_id: str = "12_fp8", source: str | None = None) -> dict:
    """Run the accumulator probe through a rung's own kernel on the GPU (256 x 256 x 384, scale 1) and return
    kept_binades of its C. An fp32 sum keeps 23 binades below big (big + tiny needs d + 1 <= 24 significant bits);
    fewer means the tensor core drops bits before the sum reaches the fp32 registers."""
    import cupy as cp
    lau = prepare(rung_id, 256, 256, PROBE_K, source)  # source: a variant of the rung (its .cu text, config applied)
    probe = accumulation_probe(lau.m, lau.n, lau.k)
    a, bt = cp.asarray(probe.a), cp.asarray(probe.bt)
    if lau.rung.dtype == "bf16":
        a, bt = to_bf16(a), to_bf16(bt)
    else:
        a, bt = encode(a, lau.rung.dtype), encode(bt, lau.rung.dtype)
    c = lau.output()
    lau(a, bt, c)
    cp.cuda.runtime.deviceSynchronize()
    return kept_binades(probe, cp.asnumpy(upcast(c)))
