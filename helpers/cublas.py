"""The strongest cuBLAS for a rung: the contenders bench() times in the same rounds as the kernel.

cupy.matmul (what a CuPy user gets) and cuBLASLt through nvmath-python (the heuristic's first candidate algorithms,
and autotune's pick), each with the rung's layout, input dtype and output dtype; for FP8, cuBLASLt's FP8 GEMM with
fast accumulation off and on. Each contender is a closure that queues one launch on input set i.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .formats import FP8, FP8_INPUT_SCALE, cp_dtype
from .launch import as_kn
from .registry import Rung

CUPY = "cupy.matmul"
LT_HEURISTIC = "cuBLASLt heuristic"
LT_AUTOTUNED = "cuBLASLt autotuned"


@dataclass(frozen=True)
class Contender:
    name: str
    label: str        # what was timed, in words (the `cublas_ref` of a row)
    run: object       # fn(i): queue one launch on input set i
    same_out: bool    # writes C in the rung's output dtype: only those may be the reference
    group: str | None = None  # cuBLASLt candidates of one Matmul share it: the stable name of the fastest of them


def layout_name(b_layout: str) -> str:
    """Row-major C = A @ B with B stored [K, N] ("NN"), or stored K-major [N, K] ("TN", as cuBLAS users say)."""
    return "TN" if b_layout == "nk" else "NN"


# cuBLASLt algorithms timed per Matmul: None, every candidate the heuristic offers (nvmath-python plans eight). Runs up
# to 2026-11-29 timed the first six (each row's label says how many): an outside check on the H200 found the fastest
# algorithm at 8192 in seventh place, so a reference from the first six could be weaker than cuBLAS is.
LT_CANDIDATES: int | None = None


def _algo_words(algo) -> str:
    """An nvmath-python Algorithm in words: its id, tile and cluster shape (whichever this version reports)."""
    words = [f"algorithm {algo.algorithm_id}"]
    for what, attr in (("tile", "tile"), ("cluster", "cluster_shape")):
        try:
            v = getattr(algo, attr)
        except Exception:  # noqa: BLE001 - an attribute this cuBLASLt does not report for this algorithm
            continue
        if isinstance(v, (tuple, list)) and v and all(isinstance(x, int) for x in v):
            words.append(f"{what} {'x'.join(str(x) for x in v)}")
    return ", ".join(words)


def _planned(mm, operands: list, what: str, heuristic_name: str, tuned_name: str,
             limit: int | None = LT_CANDIDATES) -> list:
    """Plan an nvmath-python Matmul and return one contender per candidate algorithm over `operands` (the (a, b)
    pairs it takes, rotated per launch): the heuristic's first `limit` algorithms (None: all of them), plus
    autotune's pick when it is not among them. The harness times them all in its own interleaved GPU-time rounds
    and the fastest median wins (bench): autotune's pick alone moved between runs (a 128x128 tile one run, 256x128
    the next) and with it the ratio. The heuristic's first is named `heuristic_name` as before; the others `heuristic_name #i` (i: the
    heuristic's rank); all carry `tuned_name` as their group, the name bench gives the fastest of them. Each extra
    contender costs about ROUNDS x BATCH_MS (15 x 2 ms) of GPU time per shape, plus its warm-up. `what` opens the
    label, e.g. "(bf16 in, bf16 out, TN, nvmath-python Matmul"."""
    algos = list(mm.plan())
    mm.autotune(iterations=5)  # reorders mm.algorithms (the same objects) by nvmath's own timing
    pick = mm.algorithms[0]
    chosen = list(range(len(algos) if limit is None else min(limit, len(algos))))
    chosen += [i for i, a in enumerate(algos) if a is pick and i not in chosen]

    def lt(algo):
        def run(i):
            a, b = operands[i % len(operands)]
            mm.reset_operands(a=a, b=b)
            mm.execute(algorithm=algo)
        return run
    out = []
    for i in chosen:
        algo = algos[i]
        why = f"the heuristic's #{i + 1} of {len(algos)}" + (", autotune's pick" if algo is pick else "")
        out.append(Contender(heuristic_name if i == 0 else f"{heuristic_name} #{i + 1}",
                             f"cuBLASLt {what}, {_algo_words(algo)}; {why})", lt(algo), True, tuned_name))
    return out


def _refuse_in_a_run(e: ImportError) -> None:
    """Without nvmath-python only cuBLAS's default heuristic is timed: a reader's run says so in its label, but a row of
    a named run (GEMM_LADDER_RUN, as ci/gpu.sh sets) would then share a weaker baseline with every row of its shape."""
    run_env = "GEMM_LADDER_RUN"  # helpers.store.RUN_ENV, a layer above this module
    if os.environ.get(run_env):
        raise RuntimeError(f"nvmath-python cannot be imported ({e}), so cuBLASLt cannot be timed, and run "
                           f"{os.environ[run_env]} ({run_env}) must time every row against the strongest cuBLAS: "
                           f"install it (ci/gpu.sh installs .whl/) or unset {run_env}.") from e


def cublas_set(r: Rung, m: int, n: int, k: int, inputs: list) -> tuple[list, str | None]:
    """(contenders, why cuBLASLt is missing or None): cupy.matmul (what a CuPy user gets) and cuBLASLt through
    nvmath-python (the heuristic's candidate algorithms, see _planned), on the rung's layout, input dtype and
    output dtype, over `inputs`.
    The closures hold their output arrays and the planned Matmul. FP8 rungs get cuBLASLt's FP8 path instead."""
    import cupy as cp
    if r.dtype in FP8:
        return fp8_cublaslt_set(r, m, n, k, inputs)
    in_dt, out_dt = cp_dtype(r.dtype), cp_dtype(r.out_dtype)
    c_cupy = cp.empty((m, n), dtype=in_dt)  # cupy.matmul writes the inputs' dtype
    same = np.dtype(in_dt) == np.dtype(out_dt)
    lay = layout_name(r.b_layout)
    contenders = [Contender(CUPY, f"cupy.matmul ({r.dtype} in, {r.dtype} out, {lay}; cuBLAS's default heuristic)",
                            lambda i: cp.matmul(inputs[i % len(inputs)][0], as_kn(inputs[i % len(inputs)][1], r.b_layout),
                                                out=c_cupy), same)]
    why = None
    try:
        from nvmath.linalg.advanced import Matmul
    except ImportError as e:
        _refuse_in_a_run(e)
        return contenders, f"cuBLASLt through nvmath-python was not timed ({type(e).__name__}: {str(e)[:160]})"
    try:
        c_lt = cp.empty((m, n), dtype=out_dt)
        operands = [(a, as_kn(b, r.b_layout)) for a, b in inputs]
        mm = Matmul(*operands[0], c=c_lt, beta=0.0, options={"inplace": True})
        contenders += _planned(mm, operands, f"({r.dtype} in, {r.out_dtype} out, {lay}, nvmath-python Matmul",
                               LT_HEURISTIC, LT_AUTOTUNED)
    except Exception as e:  # noqa: BLE001 - not installed, or this dtype combination unsupported: say which
        why = f"cuBLASLt through nvmath-python was not timed ({type(e).__name__}: {str(e)[:160]})"
    return contenders, why


LT_FP8 = "cuBLASLt FP8"


def fp8_cublaslt_set(r: Rung, m: int, n: int, k: int, inputs: list) -> tuple[list, str | None]:
    """cuBLASLt's FP8 GEMM (e4m3 A and B, K-major both: "TN"; per-tensor scales; bf16 D) through nvmath-python,
    the heuristic's candidate algorithms (see _planned), each with FP8 fast accumulation off (cuBLASLt's default: it promotes partial sums
    into fp32 registers every few k-blocks) and on (partial sums stay in the tensor core's accumulator, as in
    rung 12). CuPy has no FP8 dtype, so the operands reach cuBLASLt as PyTorch FP8 views of the same memory
    (DLPack, no copy); without PyTorch there is no contender, and the reason says so."""
    try:
        import torch
        from nvmath import CudaDataType
        from nvmath.linalg.advanced import Matmul
    except ImportError as e:
        _refuse_in_a_run(e)
        return [], (f"cuBLASLt FP8 was not timed: it is reached through PyTorch's FP8 tensors (CuPy has none) and "
                    f"nvmath-python ({e}); install both to compare")
    fp8 = {"e4m3": torch.float8_e4m3fn}[r.dtype]
    views = [(torch.from_dlpack(a).view(fp8), torch.from_dlpack(b).view(fp8).t()) for a, b in inputs]  # B = Bt^T
    contenders, why = [], None
    for fast in (False, True):
        acc, tag = ("fast accumulation", " fast") if fast else ("promoted accumulation", "")
        try:
            mm = Matmul(*views[0], quantization_scales={"a": FP8_INPUT_SCALE, "b": FP8_INPUT_SCALE},
                        options={"result_type": CudaDataType.CUDA_R_16BF, "fast_accumulation": fast})
            contenders += _planned(mm, views, f"(e4m3 in, bf16 out, TN, per-tensor scales, {acc}, nvmath-python Matmul",
                                   f"{LT_FP8}{tag} heuristic", f"{LT_FP8}{tag} autotuned")
        except Exception as e:  # noqa: BLE001 - this combination unsupported here: say which
            why = f"cuBLASLt FP8 (fast_accumulation={fast}) was not timed ({type(e).__name__}: {str(e)[:160]})"
    return contenders, why
