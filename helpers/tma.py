"""Tensor maps for the TMA rungs, built on the host with cuTensorMapEncodeTiled (driver API, through cuda.bindings).

A tensor map is 128 opaque bytes describing a global tensor (address, shape, strides), the box one copy moves,
and the shared-memory swizzle. The kernel takes it by value as a `const __grid_constant__ TensorMap`; CuPy
passes it as a NumPy structured scalar of sixteen 64-bit words.
"""
from __future__ import annotations

import numpy as np
from cuda.bindings import driver

_T = driver.CUtensorMapDataType
DTYPES = {"bf16": _T.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, "fp16": _T.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
          "fp32": _T.CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
          "e4m3": _T.CU_TENSOR_MAP_DATA_TYPE_UINT8}  # TMA has no FP8 type: it moves the codes as bytes
_S = driver.CUtensorMapSwizzle
SWIZZLE = {0: _S.CU_TENSOR_MAP_SWIZZLE_NONE, 32: _S.CU_TENSOR_MAP_SWIZZLE_32B, 64: _S.CU_TENSOR_MAP_SWIZZLE_64B,
           128: _S.CU_TENSOR_MAP_SWIZZLE_128B}
MAP_TYPE = np.dtype([("w", np.uint64, (16,))], align=True)


def tensor_map_2d(array, box_rows: int, box_cols: int = 64, dtype: str = "bf16", swizzle_bytes: int = 128):
    """Tensor map of a row-major [rows, cols] CuPy array, copied in boxes of [box_rows, box_cols]."""
    rows, cols = array.shape
    itemsize = array.dtype.itemsize
    if box_cols * itemsize > swizzle_bytes > 0:
        raise ValueError(f"a {swizzle_bytes}-byte swizzle allows boxes at most {swizzle_bytes} bytes wide; "
                         f"got {box_cols} x {itemsize} bytes")
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t  # cuda-bindings 13.3 (the H100 image's) takes no plain ints here
    err, tmap = driver.cuTensorMapEncodeTiled(
        DTYPES[dtype], 2, array.data.ptr, [u64(cols), u64(rows)], [u64(cols * itemsize)],
        [u32(box_cols), u32(box_rows)], [u32(1), u32(1)],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, SWIZZLE[swizzle_bytes],
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled returned {err.name} for a {rows} x {cols} {dtype} tensor "
                           f"with a {box_rows} x {box_cols} box and a {swizzle_bytes}-byte swizzle.")
    m = np.zeros((), MAP_TYPE)
    m["w"] = [int(w) for w in tmap.opaque]
    return m[()]
