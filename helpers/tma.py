"""Tensor maps for the TMA rungs, built on the host with cuTensorMapEncodeTiled (driver API, through ctypes).

A tensor map is 128 opaque bytes describing a global tensor (address, shape, strides), the box one copy moves,
and the shared-memory swizzle. The kernel takes it by value as a `const __grid_constant__ TensorMap`; CuPy
passes it as a NumPy structured scalar of sixteen 64-bit words.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np

DTYPES = {"bf16": 9, "fp16": 6, "fp32": 7, "e4m3": 0}  # CU_TENSOR_MAP_DATA_TYPE_* (FP8 travels as UINT8)
SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}             # CU_TENSOR_MAP_SWIZZLE_* by bytes
L2_PROMOTION_128B = 2
MAP_TYPE = np.dtype([("w", np.uint64, (16,))], align=True)


@functools.lru_cache(maxsize=1)
def _encode():
    fn = ctypes.CDLL("libcuda.so.1").cuTensorMapEncodeTiled
    u32p, u64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p, u32p, u32p,
                   ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def tensor_map_2d(array, box_rows: int, box_cols: int = 64, dtype: str = "bf16", swizzle_bytes: int = 128):
    """Tensor map of a row-major [rows, cols] CuPy array, copied in boxes of [box_rows, box_cols]."""
    rows, cols = array.shape
    itemsize = array.dtype.itemsize
    if box_cols * itemsize > swizzle_bytes > 0:
        raise ValueError(f"a {swizzle_bytes}-byte swizzle allows boxes at most {swizzle_bytes} bytes wide; "
                         f"got {box_cols} x {itemsize} bytes")
    buf = ctypes.create_string_buffer(128 + 64)
    out = (ctypes.addressof(buf) + 63) & ~63  # CUtensorMap must be 64-byte aligned
    res = _encode()(out, DTYPES[dtype], 2, array.data.ptr,
                    (ctypes.c_uint64 * 2)(cols, rows), (ctypes.c_uint64 * 1)(cols * itemsize),
                    (ctypes.c_uint32 * 2)(box_cols, box_rows), (ctypes.c_uint32 * 2)(1, 1),
                    0, SWIZZLE[swizzle_bytes], L2_PROMOTION_128B, 0)
    if res != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled returned CUresult {res} for a {rows} x {cols} {dtype} tensor "
                           f"with a {box_rows} x {box_cols} box and a {swizzle_bytes}-byte swizzle.")
    m = np.zeros((), MAP_TYPE)
    m["w"] = np.frombuffer(ctypes.string_at(out, 128), np.uint64)
    return m[()]
