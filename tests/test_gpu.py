"""GPU tests: every rung on many shapes, numba twins on CuPy arrays, and the probes. Skipped without a GPU."""
import numpy as np
import pytest

from helpers import RUNGS, ShapeError, check, rung
from helpers.launch import validate
from helpers.registry import MAIN

from conftest import refusal

pytestmark = pytest.mark.gpu

# Square and non-square; exactly one tile (128x128x32); tall, wide and deep; off-tile sizes (129, odd, 1x1x1)
# that the tiled rungs must refuse before launch and the untiled ones must get right.
SHAPES = [(128, 128, 32), (256, 128, 64), (128, 256, 96), (384, 128, 160), (256, 512, 1024), (1024, 1024, 1024),
          (1152, 640, 288), (768, 1280, 2048), (4096, 128, 256), (2048, 2048, 2048), (128, 384, 136),
          (128, 256, 64), (256, 256, 128), (384, 512, 192), (128, 768, 320), (640, 256, 448), (512, 1024, 64),
          (129, 130, 131), (1, 1, 1), (33, 65, 17), (640, 1152, 72), (127, 255, 9),
          # multiples of chapter 10's 256 x 256 cluster tile; the first two give some clusters several tiles
          (4096, 4096, 128), (2304, 4352, 192), (512, 768, 576), (1280, 512, 320), (256, 2560, 64),
          # K in multiples of 128 too, for chapter 12's FP8 rung (a stage holds k = 128)
          (512, 768, 384), (2304, 4352, 256), (1280, 512, 640), (256, 2560, 1152), (768, 256, 4096),
          # N in multiples of 320, for chapter 09's 128 x 320 tile
          (128, 320, 64), (256, 640, 128), (384, 960, 192), (128, 1280, 512), (512, 1920, 256), (1024, 3200, 128),
          (640, 320, 1024), (2048, 2560, 320),
          # ragged: no tile divides them; the ragged rungs (any M, rows of 16 bytes) take them, the others refuse
          (4095, 4104, 4112), (1, 8, 16), (255, 264, 80), (129, 136, 48), (300, 520, 1040)]

# Ragged rungs at the edges TMA must zero-fill and clip: M from 1 to 255 (one cluster tile, whose second CTA reads
# rows partly or wholly past M), a K shorter than one k tile, N one 16-byte unit; and M = 100 with 187 tiles of
# 128 x 192, so that pairs run and every second CTA's A box lies wholly past M.
RAGGED = [(m, 264, 208) for m in (1, 2, 7, 63, 64, 65, 127, 128, 129, 200, 255)] + [
    (4095, 4104, 4112), (100, 35840, 64), (513, 8, 16), (3000, 2056, 4112), (130, 4104, 32)]


@pytest.mark.parametrize("r", RUNGS, ids=lambda r: r.id)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_rung_correct_or_refused(r, shape):
    try:
        validate(r, *shape)
    except ShapeError as e:
        # The sentence names the rung, the dimension and its size, the multiple it needs and what to do about it.
        assert r.divides, "only tiled rungs may refuse shapes"
        want = refusal(r, *shape)
        assert want is not None, f"{r.id} refused {shape}, which one of its tiles divides: {e}"
        assert all(part in str(e) for part in want), (want, str(e))
        with pytest.raises(ShapeError):
            check(r, *shape)  # refused again before any launch
        return
    assert refusal(r, *shape) is None, f"{r.id} took {shape}, which none of its tiles divides"
    res = check(r, *shape)
    assert res.all_finite, f"{res}: NaN left in C (an element was never written)"
    assert res.ok, str(res)


@pytest.mark.parametrize("r", [r for r in RUNGS if r.ragged], ids=lambda r: r.id)
@pytest.mark.parametrize("shape", RAGGED, ids=lambda s: "x".join(map(str, s)))
def test_ragged_rung_correct_at_edges(r, shape):
    # C is the first M rows of a NaN-poisoned buffer 256 rows longer: a store the TMA failed to clip (a row past M,
    # or columns past N in the last row) would land in those rows, which must come back bit for bit.
    import cupy as cp
    from helpers import prepare
    from helpers.correctness import fresh_scale, verdict
    from helpers.formats import FP8, to_bf16
    m, n, k = shape
    lau = prepare(r, m, n, k)  # every shape here has rows of whole 16-byte units in bf16 and in e4m3
    a, b = lau.inputs()
    buf = to_bf16(cp.full((m + 256, n), cp.nan, dtype=cp.float32))
    c, guard = buf[:m], buf[m:].view(cp.uint16).copy()
    scale = fresh_scale() if r.dtype in FP8 else 1.0
    lau(a, b, c, scale)
    cp.cuda.runtime.deviceSynchronize()
    assert bool((buf[m:].view(cp.uint16) == guard).all()), f"{r.id} at {shape} wrote past row M-1"
    res = verdict(r, m, n, k, a, b, c, scale)
    assert res.all_finite, f"{res}: NaN left in C (an element was never written)"
    assert res.ok, str(res)


def test_every_rung_accepts_at_least_ten_shapes():
    for r in RUNGS:
        ok = 0
        for shape in SHAPES:
            try:
                validate(r, *shape)
                ok += 1
            except ShapeError:
                pass
        assert ok >= 10, (r.id, ok)


def test_fp8_wgmma_sums_with_14_significant_bits_and_bf16_wgmma_with_fp32():
    # The element-wise bound of the FP8 rung (helpers.correctness.EPS_ACC_OF) assumes this: a product 2^-14 below the
    # largest term is lost, 2^-13 is kept, wherever it sits along k. bf16 wgmma keeps all 24 bits of fp32.
    from helpers.fp8 import probe_accumulator
    fp8, bf16 = probe_accumulator("12_fp8"), probe_accumulator("10_chip")
    assert all(p == {"kept": 13, "first_lost": 14} for p in fp8.values()), fp8
    assert bf16["one instruction"]["kept"] >= 23 and bf16["tiny first"] == {"kept": 23, "first_lost": 24}, bf16


def test_promoted_fp8_keeps_fp32_bits_across_k_tiles_only():
    # 12_fp8_promoted adds each 128-deep k tile's partial sum into fp32: inside a k tile the tensor core's 14 bits
    # remain, across k tiles big + tiny is an fp32 sum (24 bits), as in the bf16 rungs.
    from helpers.fp8 import probe_accumulator
    got = probe_accumulator("12_fp8_promoted")
    assert got.pop("across k tiles") == {"kept": 23, "first_lost": 24}, got
    assert all(p == {"kept": 13, "first_lost": 14} for p in got.values()), got


def test_fp8_scale_is_applied_once_and_refused_when_zero():
    import cupy as cp
    from helpers import prepare
    from helpers.correctness import verdict
    lau = prepare("12_fp8", 256, 256, 256)
    a, b = lau.inputs()
    c = lau.output()
    lau(a, b, c, 3.0)
    cp.cuda.runtime.deviceSynchronize()
    assert verdict(lau.rung, 256, 256, 256, a, b, c, 3.0).ok
    assert not verdict(lau.rung, 256, 256, 256, a, b, c, 1.0).ok  # the check notices a missing scale
    with pytest.raises(ShapeError, match="scale"):
        lau(a, b, c, 0.0)


def test_wrong_dtype_is_refused_before_launch():
    import cupy as cp
    from helpers import gemm
    a = cp.ones((128, 128), cp.float64)
    with pytest.raises(ShapeError, match="fp32"):
        gemm("01_warptiled", a, a, cp.empty((128, 128), cp.float32))


def test_fp32_c_is_refused_where_the_rung_writes_bf16():
    import cupy as cp
    from helpers import gemm
    from helpers.launch import random_inputs
    a, b = random_inputs("bf16", 256, 256, 64, b_layout="nk")
    with pytest.raises(ShapeError, match="bf16 C"):
        gemm("10_chip", a, b, cp.empty((256, 256), cp.float32))


@pytest.mark.parametrize("name", ["01_naive", "01_smem_tiled"])
@pytest.mark.parametrize("shape", [(256, 192, 160), (97, 33, 65)])
def test_numba_twin_on_cupy_arrays(name, shape):
    import cupy as cp
    from helpers.numba_simt import TWINS, run
    m, n, k = shape
    a = cp.random.standard_normal((m, k), dtype=cp.float32)
    b = cp.random.standard_normal((k, n), dtype=cp.float32)
    c = cp.full((m, n), cp.nan, cp.float32)
    run(TWINS[name], a, b, c)
    ref = a.astype(cp.float64) @ b.astype(cp.float64)
    assert bool(cp.isfinite(c).all())
    assert float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref)) < 1e-5


def test_probes_measure_plausible_ceilings():
    from helpers import device
    from helpers.probes import measure_ffma_peak, measure_hbm_copy, measure_l2_read
    hbm, l2, ffma = measure_hbm_copy(0.5).value, measure_l2_read().value, measure_ffma_peak(1 << 12).value
    assert 0.5 < hbm < l2, (hbm, l2)  # L2 must beat HBM, or the L2 probe is measuring HBM
    # 128 FP32 lanes per SM, 2 FLOP per FFMA: the probe can neither beat the clock nor fall far below it,
    # unless it counts its FLOPs wrong.
    dev = device()
    from helpers.hardware import FFMA_FLOP_PER_CLK
    paper = dev.sms * FFMA_FLOP_PER_CLK * dev.sm_clock_max_mhz * 1e6 / 1e12
    assert 0.5 * paper < ffma <= 1.02 * paper, (ffma, paper)


def test_tma_multicast_lands_each_box_in_both_ctas_from_one_l2_read():
    # measure_tma_multicast raises unless every CTA holds both halves of its pair's last box (the sink words name the
    # rows they came from); here: a positive rate, and L2 supplying exactly half of what lands in shared memory.
    from helpers.gpu import why_not_live
    from helpers.probes import measure_tma_multicast
    reason = why_not_live((9, 0), "sm_90a")  # .multicast::cluster is an sm_90a instruction
    if reason:
        pytest.skip(reason)
    got = measure_tma_multicast(batch_ms=0.5)
    d = got.detail
    assert got.value > 0 and d["landed in shared memory, TB/s"] > 0, d
    assert d["landed in shared memory, TB/s"] == 2 * d["supplied by L2, TB/s"], d
    assert d["landed per launch, bytes"] == 2 * d["supplied by L2 per launch, bytes"] > 0, d


def test_wrong_expect_tx_ends_in_a_timeout_with_a_message():
    # Announce 1 KiB more than the TMA delivers: the barrier never completes. The bounded wait must trap
    # (4 s), and check() must say why in one sentence. In a subprocess: a trap ends that CUDA context.
    import subprocess
    import sys
    script = (
        "from helpers import check, rung\n"
        "from helpers.csource import apply_config\n"
        "from helpers.kernel import KernelFault\n"
        "r = rung('07_tma')\n"
        "src = apply_config(r.path.read_text(), {'TX_BYTES': '(A_TILE + B_TILE) * 2 + 1024'})\n"
        "try:\n"
        "    check(r, 256, 256, 128, source=src)\n"
        "except KernelFault as e:\n"
        "    print('FAULT', e)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "FAULT 07_tma did not finish" in out.stdout, out.stdout + out.stderr
    assert "expect_tx" in out.stdout


# Launches that overlap (10_pdl on: PDL = 1, launched with programmatic stream serialization, helpers.pdl): eight
# launches of the last BF16 rung queued back to back behind a spin kernel, so that the host has queued them all before
# the first starts; each launch's A is the C the launch before wrote (N = K; B scaled by 1/sqrt(K) so values stay near
# 1), each C its own buffer poisoned with NaN. A launch that read its A before its predecessor had written all of it
# is wrong. Clusters of one on 128 x 128 tiles (10_pdl's build), a ragged M, a ragged N, and pairs whose CTAs take a
# second tile, so that the epilogue runs under the next tile's first k step (OVERLAP = 2) at every launch's end.
@pytest.mark.parametrize("shape", [(1024, 1024, 1024), (127, 4096, 4096), (300, 200, 200), (2304, 2048, 2048)],
                         ids=lambda s: "x".join(map(str, s)))
def test_pdl_launches_back_to_back_read_what_the_one_before_wrote(shape):
    import cupy as cp
    from helpers.correctness import verdict
    from helpers.formats import to_bf16, upcast
    from helpers.kernel import kernel
    from helpers.launch import prepare
    lau, (m, n, k), length = prepare(MAIN[-2], *shape), shape, 8
    assert lau.programmatic, f"{MAIN[-2]} is not launched with programmatic stream serialization"
    late = shape == (2304, 2048, 2048)  # the one shape here where a CTA takes a second tile
    assert lau.kernel.consts["OVERLAP"] == (2 if late else 0), "not the build the tile policy picks"
    a0 = lau.inputs()[0]
    bs = [to_bf16(upcast(lau.inputs()[1]) / np.float32(k**0.5)) for _ in range(length)]
    cs = [lau.output() for _ in range(length)]
    ins = [(a0 if i == 0 else cs[i - 1], bs[i], cs[i]) for i in range(length)]
    args = [lau.args(*x) for x in ins]
    with cp.cuda.Stream(non_blocking=True) as stream:
        kernel("hbm_copy").module().get_function("probe_spin")((1,), (32,), (np.uint64(20_000_000),))  # 20 ms
        for x in args:
            lau.enqueue(x)
        stream.synchronize()
    for i, x in enumerate(ins):
        got = verdict(lau.rung, m, n, k, *x)
        assert got.ok, f"launch {i} of {length} back to back: {got}"


# The ping-pong experiment (experiments/pingpong): each consumer on every other tile of its CTA, taking
# turns at the ring. Correct wherever 10_grouped_order takes a shape: one tile a CTA, odd and even counts, k tiles fewer
# than stages. A consumer that waited a ring lap early would read the other's bytes, and C would be wrong.
@pytest.mark.parametrize("name", ("ping-pong", "ping-pong, 5 stages", "ping-pong, 128 x 128",
                                  "one consumer, two groups", "cooperative, two groups",
                                  "ping-pong, 5 stages, two groups"))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_pingpong_correct(shape, name):
    from experiments.pingpong.build import source_of
    src = source_of(name)
    try:
        validate(rung("10_grouped_order"), *shape, src)
    except ShapeError:
        return
    res = check("10_grouped_order", *shape, source=src)
    assert res.ok, str(res)


# The split-K experiment (experiments/splitk): each tile's K range cut into SPLITS pieces on different CTAs, the
# partial sums added by the
# tile's owner in split order. Correct wherever it takes a shape (ragged splits included), and the same bits on every
# launch: the fix-up adds the pieces in one fixed order, whatever order the CTAs finish in.
@pytest.mark.parametrize("splits", (2, 3, 4))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_splitk_correct_and_deterministic(shape, splits):
    import cupy as cp
    from experiments.splitk import build as sk
    from helpers.launch import prepare
    src = sk.split_source(splits)
    try:
        validate(rung("10_grouped_order"), *shape, src)
    except ShapeError:
        return
    if not sk.fits(*shape, splits):
        return
    res = check("10_grouped_order", *shape, source=src)
    assert res.ok, str(res)
    lau = prepare("10_grouped_order", *shape, source=src)
    a, b = lau.inputs()
    first, again = lau.output(), lau.output()
    lau(a, b, first)
    lau(a, b, again)
    cp.cuda.runtime.deviceSynchronize()
    assert cp.asnumpy(first).tobytes() == cp.asnumpy(again).tobytes(), "two launches on the same inputs differ"


# The cluster-shape experiment's builds (experiments/clusters): clusters of M x N CTAs, A multicast along a row, B
# along a column. Correct wherever the cluster tile divides the shape (validate knows BN, not CLUSTER_N x BN, so
# the test skips the rest itself).
@pytest.mark.parametrize("name", ("1 x 2", "2 x 2", "2 x 1", "1 x 1"))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_cluster_shapes_correct(shape, name):
    from experiments.clusters import build as cl
    from helpers.csource import read_consts
    src = cl.cluster_source(*cl.SHAPES_OF[name])
    c = read_consts(src)
    try:
        validate(rung("10_grouped_order"), *shape, src)
    except ShapeError:
        return
    if shape[1] % (c["BN"] * c["CLUSTER_N"]):
        return
    res = check("10_grouped_order", *shape, source=src)
    assert res.ok, str(res)


# experiments/fp8_promoted's every-256-k build (PROMOTE = 2) and its promoted 128 x 128 and 128 x 192 tiles,
# small_tiles' one-consumer tiles and ladder_orders' lattice corners: constexpr variants of rung files, correct
# wherever they take a shape.
@pytest.mark.parametrize("which", ("every 256 k", "promoted, 128 x 128", "promoted, 128 x 192",
                                   "64 x 128, clusters of one", "64 x 128, pairs", "64 x 256, pairs",
                                   "lattice -----", "lattice -CS-F", "lattice P--E-"))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_experiment_variants_correct(shape, which):
    from experiments.fp8_promoted.build import EVERY_256_RUNG, TILE_RUNGS, every_256, tile_source
    from experiments.ladder_orders.build import build
    from experiments.small_tiles.build import build_source
    if which == "every 256 k":
        r, src = EVERY_256_RUNG, every_256()
    elif which in TILE_RUNGS:
        r, src = TILE_RUNGS[which], tile_source(which)
    elif which.startswith("lattice"):
        r, src = build(which.split()[1].replace("-", ""))
    else:
        r, src = rung("10_grouped_order"), build_source(which)
    try:
        validate(r, *shape, src)
    except ShapeError:
        return
    res = check(r, *shape, source=src)
    assert res.ok, str(res)
