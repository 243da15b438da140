"""Number formats, the leaf every other helper may import: the dtypes a rung reads and writes, the e4m3/e5m2 codec,
and the constants a correctness check is built from. NumPy and CuPy arrays alike; no GPU and no other helper needed.

    cp_dtype / to_bf16 / upcast  a rung's dtype name as an array dtype, float32 -> bf16 (RNE, on the bits), and back
    FORMATS / spec(name)         the bit layout of e4m3, e5m2 (and bf16, for comparison): bias, range, precision
    encode(x, fmt) / decode(c)   float -> 8-bit code (round to nearest even, saturating like PTX cvt) and back
    grid(fmt) / spacing(x, fmt)  every finite value, and the gap from x to the next one up
    per_tensor_scale / quantize  amax scaling, and the codes plus dequantized values it gives
    EPS_ACC, EPS_ACC_OF, BOUND_C, ROUND_OUT   the element-wise error bound of helpers.correctness

Vocabulary: a *code* is the raw bit pattern (uint8; uint16 for bf16); its *value* is what it decodes to.
ml_dtypes (float8_e4m3fn, float8_e5m2, bfloat16) is the independent check in tests/test_fp8.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def xp_of(x):
    """numpy for host arrays and scalars, cupy for GPU arrays: the same arithmetic runs on either."""
    if isinstance(x, (np.ndarray, np.generic, float, int)):
        return np
    import cupy
    return cupy.get_array_module(x)


# ---- the dtypes a rung reads and writes ---------------------------------------------------------------------------

# FP8 operands travel as their uint8 codes: CuPy has no FP8 dtype. Random ones are standard-normal data stored with a
# per-tensor scale of 1/16, so they reach about +-90 of e4m3's +-448 and the scale is exact; an FP8 rung multiplies
# its accumulators by the product of the two tensors' scales.
FP8 = ("e4m3",)
FP8_INPUT_SCALE = 2.0**-4
ITEMSIZE = {"fp32": 4, "fp16": 2, "bf16": 2, "e4m3": 1}


def cp_dtype(dtype: str):
    """The array dtype of a rung dtype name (CuPy has no bfloat16 of its own: ml_dtypes provides it; e4m3 is held
    as uint8 codes)."""
    if dtype == "bf16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return {"fp32": np.float32, "fp16": np.float16, "e4m3": np.uint8}[dtype]


def to_bf16(x):
    """float32 -> bfloat16 with round-to-nearest-even, done on the bits (CuPy has no bfloat16 cast)."""
    xp = xp_of(x)
    bits = x.view(xp.uint32)
    rounded = (bits + xp.uint32(0x7FFF) + ((bits >> 16) & xp.uint32(1))) >> 16
    return rounded.astype(xp.uint16).view(cp_dtype("bf16"))


def upcast(x):
    """fp32 copy of an fp32, fp16, bf16 or e4m3 array (exact for all four); bf16 goes through its bits (CuPy cannot
    cast it), e4m3 codes (uint8) through decode."""
    if x.dtype == np.dtype(cp_dtype("bf16")):  # methods only, so NumPy arrays work too (CPU tests)
        return (x.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    if x.dtype == np.uint8:
        return decode(x, "e4m3")
    return x.astype(np.float32)


# ---- the element-wise error bound of a check -------------------------------------------------------------------------

# |C - ref| <= BOUND_C * sqrt(K) * EPS_ACC * (|A| @ |B|) + ROUND_OUT * |ref|.
# Summing K products in fp32 in any order errs by at most K * eps * (|A| @ |B|) and, for random signs, typically
# sqrt(K) * eps; BOUND_C = 4 covers the tail of sixteen million elements. A single wrong element (a missed
# k-slice, a swapped index) is off by a whole product or more, hundreds of times this bound at K = 4096.
EPS_ACC = 2.0**-23          # fp32 machine epsilon: the accumulators of every rung (FFMA, HMMA, HGMMA) are fp32
BOUND_C = 4.0
# FP8 wgmma does not sum in fp32. Chapter 12's probe (helpers.fp8.probe_accumulator) measured on the H100 that each
# m64nNk32 step adds its 32 products and the incoming accumulator keeping about 14 significant bits below the
# largest of them: a term 2^-14 below it is lost, inside one instruction and across instructions alike (bf16 wgmma
# keeps 24, fp32's own). So K/32 roundings of relative size 2^-13, each at most 2^-13 of (|A| @ |B|); for random
# signs they add as sqrt(K/32). Written as the sqrt(K) * eps rule: eps = 2^-13 / sqrt(32).
EPS_ACC_OF = {"e4m3": 2.0**-13 / 32**0.5}
# Rounding C to its dtype errs by half a unit in the last place: up to 2^-8 of |C| for bf16 (8 significant bits),
# 2^-24 for fp32. Twice that, so that an accumulator a hair away from the reference may round the other way.
ROUND_OUT = {"fp32": 2.0**-23, "bf16": 2.0**-7}


# ---- the formats --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Format:
    """A binary floating-point format with a sign bit, `exp_bits` of biased exponent and `man_bits` of fraction.

    `ieee` says what the all-ones exponent means. True (e5m2, bf16): infinities (fraction 0) and NaNs, as in
    IEEE 754. False (e4m3, NVIDIA's and OCP's "e4m3fn"): ordinary numbers, except S.1111.111, the only NaN; there is
    no infinity, which buys e4m3 one more binade (256 to 448). `nan_code` is the positive NaN pattern an encoder
    writes (ml_dtypes' choice; the sign bit of the input is kept)."""
    name: str
    exp_bits: int
    man_bits: int
    bias: int
    ieee: bool
    nan_code: int

    @property
    def bits(self) -> int:
        return 1 + self.exp_bits + self.man_bits

    @property
    def top_exponent(self) -> int:
        """The largest biased exponent that holds finite numbers."""
        return 2**self.exp_bits - (2 if self.ieee else 1)

    @property
    def max_finite(self) -> float:
        # e4m3 loses only its all-ones fraction (the NaN) in the top binade: 1.110b x 2^8 = 448
        fraction = 2**self.man_bits - (1 if self.ieee else 2)
        return float(np.ldexp(1.0 + fraction / 2**self.man_bits, self.top_exponent - self.bias))

    @property
    def min_normal(self) -> float:
        return float(np.ldexp(1.0, 1 - self.bias))

    @property
    def min_subnormal(self) -> float:
        return float(np.ldexp(1.0, 1 - self.bias - self.man_bits))

    @property
    def eps(self) -> float:
        """The relative step in the normal range: the gap above 1.0 is 2^-man_bits."""
        return 2.0**-self.man_bits

    @property
    def unit_roundoff(self) -> float:
        """The largest relative error of rounding to nearest in the normal range: half the relative step."""
        return 2.0**-(self.man_bits + 1)

    @property
    def code_dtype(self):
        return np.uint8 if self.bits == 8 else np.uint16


FORMATS = {
    "e4m3": Format("e4m3", exp_bits=4, man_bits=3, bias=7, ieee=False, nan_code=0x7F),
    "e5m2": Format("e5m2", exp_bits=5, man_bits=2, bias=15, ieee=True, nan_code=0x7E),
    "bf16": Format("bf16", exp_bits=8, man_bits=7, bias=127, ieee=True, nan_code=0x7FC0),
}
FP32 = Format("fp32", exp_bits=8, man_bits=23, bias=127, ieee=True, nan_code=0x7FC00000)


def spec(name: str | Format) -> Format:
    """The Format called `name` ("e4m3", "e5m2", "bf16"; "fp32" for the accumulator's and C's parameters)."""
    if isinstance(name, Format):
        return name
    if name == "fp32":
        return FP32
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}: use one of {sorted(FORMATS)} or 'fp32'") from None


# ---- codes and values ---------------------------------------------------------------------------------------------

def _step(mag, f: Format):
    """The step between neighbouring values in the binade holding each finite magnitude: 2^(e - man_bits) for
    mag in [2^e, 2^(e+1)), and the subnormal step (= the smallest subnormal) below the smallest normal."""
    xp = xp_of(mag)
    exponent = xp.where(mag < f.min_normal, 1 - f.bias, xp.frexp(mag)[1] - 1)
    return xp.ldexp(xp.ones_like(mag), (exponent - f.man_bits).astype(xp.int32))


def encode(x, fmt: str = "e4m3", saturate: bool = True) -> np.ndarray:
    """The codes of `x` (any float array, NumPy or CuPy) in the format: rounded to nearest, ties to even.

    saturate=True is what the GPU does. Every PTX conversion into FP8 (`cvt.rn.satfinite.e4m3x2.f32`, its .e5m2x2
    and .f16x2 forms) carries `.satfinite`, which their syntax does not make optional. The PTX ISA's cvt instruction
    (its "Saturation modifier" paragraph, .satfinite) defines it: a NaN input gives a NaN of the destination
    format, and an input whose magnitude exceeds the destination's MAX_NORM gives MAX_NORM with the input's sign.
    So 1e6 and +inf become 448 in e4m3 and 57,344 in e5m2, never NaN or inf. Rounding first and clamping after
    gives the same codes as clamping first: an input just above MAX_NORM rounds back to it. A NaN input gets
    `nan_code` with its sign, like ml_dtypes; which NaN bits the hardware writes is not asserted here.

    saturate=False is the IEEE/OCP rule that ml_dtypes follows: what rounds above the largest finite value becomes
    inf in e5m2 (and bf16) and NaN in e4m3, which has no infinity. tests/test_fp8.py checks this mode against
    ml_dtypes bit for bit, and the saturating mode against ml_dtypes on inputs clipped to +-max first.

    Why saturate: one activation of 500 that became NaN would poison every dot product it enters, while 448 is
    a bounded error; per-tensor scaling (per_tensor_scale) is what keeps values from reaching the limit at all.
    """
    f = spec(fmt)
    xp = xp_of(x)                               # NumPy or CuPy arrays alike (random FP8 inputs are made on the GPU)
    x = xp.asarray(x, dtype=xp.float64)       # float16/32/64 inputs are exact in float64
    negative = xp.signbit(x)
    nan = xp.isnan(x)
    mag = xp.where(xp.isfinite(x), xp.abs(x), 0.0)
    # Dividing by the step (a power of two) is exact, so xp.rint (ties to even) rounds the true value.
    step = _step(mag, f)
    rounded = xp.rint(mag / step) * step
    over = (rounded > f.max_finite) | xp.isinf(x)
    rounded = xp.where(over, f.max_finite, rounded)
    # fields of the rounded magnitude (it may have carried into the next binade, so take its exponent again)
    e = xp.frexp(rounded)[1] - 1
    normal = rounded >= f.min_normal
    biased = xp.where(normal, e + f.bias, 0)
    fraction = xp.where(normal, xp.ldexp(rounded, (f.man_bits - e).astype(xp.int32)) - 2**f.man_bits,
                        rounded / f.min_subnormal)
    code = (biased.astype(xp.int64) << f.man_bits) | fraction.astype(xp.int64)
    if not saturate:
        overflow_code = (2**f.exp_bits - 1) << f.man_bits if f.ieee else f.nan_code
        code = xp.where(over, overflow_code, code)
    code = xp.where(nan, f.nan_code, code)
    code = code | (negative.astype(xp.int64) << (f.bits - 1))
    return code.astype(f.code_dtype)


def decode(bits, fmt: str = "e4m3") -> np.ndarray:
    """The values (float32, which holds every e4m3, e5m2 and bf16 value exactly) of an array of codes (NumPy or
    CuPy)."""
    f = spec(fmt)
    xp = xp_of(bits)
    c = xp.asarray(bits).astype(xp.int64)
    if c.size and (c.min() < 0 or c.max() >= 2**f.bits):
        raise ValueError(f"{f.name} codes are {f.bits}-bit integers (0 to {2**f.bits - 1}); "
                         f"got {c.min()} to {c.max()}")
    negative = (c >> (f.bits - 1)) & 1
    biased = (c >> f.man_bits) & (2**f.exp_bits - 1)
    fraction = c & (2**f.man_bits - 1)
    mag = xp.where(biased == 0, fraction * f.min_subnormal,
                   xp.ldexp(1.0 + fraction / 2**f.man_bits, (biased - f.bias).astype(xp.int32)))
    all_ones = biased == 2**f.exp_bits - 1
    if f.ieee:
        mag = xp.where(all_ones, xp.where(fraction == 0, xp.inf, xp.nan), mag)
    else:
        mag = xp.where(all_ones & (fraction == 2**f.man_bits - 1), xp.nan, mag)
    return xp.where(negative == 1, -mag, mag).astype(xp.float32)


def grid(fmt: str = "e4m3") -> np.ndarray:
    """Every finite value of the format, ascending, zero once: 253 for e4m3, 247 for e5m2 (float64)."""
    f = spec(fmt)
    values = decode(np.arange(2**f.bits), f).astype(np.float64)
    return np.unique(values[np.isfinite(values)]) + 0.0       # + 0.0 turns the -0.0 np.unique kept into 0.0


def spacing(x, fmt: str = "e4m3") -> np.ndarray:
    """The gap from |x| to the next representable magnitude above it: 2^(e - man_bits) in the binade
    [2^e, 2^(e+1)), so the relative gap stays between 2^-man_bits and half that (2^-3 for e4m3, 2^-2 for e5m2);
    below the smallest normal it is the constant subnormal step. At the largest finite value it is that binade's
    step (the gap below it); beyond it, or for inf and NaN, NaN."""
    f = spec(fmt)
    mag = np.abs(np.asarray(x, dtype=np.float64))
    inside = mag <= f.max_finite
    return np.where(inside, _step(np.where(inside, mag, 0.0), f), np.nan)


# ---- scaling a tensor into FP8 ------------------------------------------------------------------------------------

def per_tensor_scale(x, fmt: str = "e4m3", margin: float = 1.0, power_of_two: bool = False) -> float:
    """The dequantization scale of "amax scaling": x is stored as x / scale, so the largest magnitude maps onto
    the format's largest finite value (448 for e4m3). margin > 1 leaves headroom: amax maps to max / margin, room
    for a later tensor that grows a little (Transformer Engine uses powers of two for this). power_of_two=True
    rounds the scale up to 2^n (amax then lands in (max/2, max] / margin): dividing by it and multiplying back are
    exact, so a dequantized value is exactly code x scale in float32. An all-zero tensor gets scale 1.

    The GEMM takes scale_a and scale_b (float32 in cuBLASLt) and computes C = scale_a * scale_b * (A8 @ B8)."""
    f = spec(fmt)
    if margin < 1:
        raise ValueError(f"margin {margin} would map amax above the format's max; use margin >= 1")
    x = np.asarray(x)
    if not np.isfinite(x).all():
        raise ValueError("the tensor holds inf or NaN, so its amax means nothing: clean it before scaling")
    amax = float(np.abs(x).max()) if x.size else 0.0
    if amax == 0.0:
        return 1.0
    scale = amax * margin / f.max_finite
    if power_of_two:
        scale = float(np.ldexp(1.0, int(np.ceil(np.log2(scale)))))
    return float(np.float32(scale))


def quantize(x, scale: float = 1.0, fmt: str = "e4m3", saturate: bool = True):
    """(codes, dequantized): the codes of x / scale and their values times scale, as float32. With a scale that
    is not a power of two the float32 product rounds (by at most 2^-24); the exact dequantized value is
    decode(codes) * scale in float64, which is what an FP8 GEMM's epilogue computes."""
    codes = encode(np.asarray(x, dtype=np.float64) / scale, fmt, saturate)
    return codes, (decode(codes, fmt).astype(np.float64) * scale).astype(np.float32)
