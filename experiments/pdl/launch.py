"""A launch with programmatic stream serialization: the same kernel, grid, block, shared memory and arguments as a
helpers.launch.Launch, queued through the driver's cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_
SERIALIZATION set, which CuPy's RawKernel cannot pass. helpers.check and helpers.timing.bench_launches take it as they
take any Launch: `args` packs the arguments once, `enqueue` queues one launch.

    lau = AttributedLaunch.of(prepare("10_chip", 1024, source=pdl_source))
    lau(a, b, c)                                  # checked arrays, then one launch with the attribute

No cluster attribute: the kernel's __cluster_dims__ is a function attribute (CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
"set during compile time, it cannot be set at runtime"), and a launch without CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
forms those clusters, as CuPy's plain cuLaunchKernel does. `of` reads the attribute back and refuses a kernel whose
compiled cluster width is not its CLUSTER.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, fields

import numpy as np
from cuda.bindings import driver

from helpers.launch import Launch

SERIALIZATION = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION


class Packed:
    """A launch's arguments as cuLaunchKernelEx reads them: an array of pointers, one per parameter, each to a copy
    of its value held here (and the arrays it points into, so that nothing is freed while launches are queued)."""

    def __init__(self, args: tuple):
        self.keep, self.values = args, []
        for x in args:
            if hasattr(x, "data") and hasattr(x.data, "ptr"):          # a CuPy array: its device pointer
                self.values.append(ctypes.c_void_p(x.data.ptr))
            elif isinstance(x, np.void):                                # a tensor map: 128 bytes by value
                self.values.append(np.array(x))
            elif isinstance(x, (np.integer, np.floating)):              # M, N, K (and an FP8 scale)
                self.values.append(np.array(x))
            else:
                raise TypeError(f"cannot pass a {type(x).__name__} to cuLaunchKernelEx; the kernels take CuPy "
                                f"arrays, tensor maps and NumPy scalars.")
        addresses = [v.ctypes.data if isinstance(v, np.ndarray) else ctypes.addressof(v) for v in self.values]
        self.pointers = (ctypes.c_void_p * len(addresses))(*addresses)
        self.address = ctypes.addressof(self.pointers)


def _check(err, what: str) -> None:
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{what} returned {err.name}.")


@dataclass(frozen=True)
class AttributedLaunch(Launch):
    """A prepared Launch, queued with programmatic stream serialization: on the current CuPy stream it may start
    while the previous kernel of that stream still runs, as far as that kernel's griddepcontrol.launch_dependents
    lets it; its own griddepcontrol.wait decides what waits for that kernel's memory."""

    @classmethod
    def of(cls, lau: Launch) -> "AttributedLaunch":
        out = cls(**{f.name: getattr(lau, f.name) for f in fields(Launch)})
        fn = driver.CUfunction(lau.kernel.function().kernel.ptr)
        err, width = driver.cuFuncGetAttribute(
            driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, fn)
        _check(err, "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)")
        cluster = lau.kernel.consts.get("CLUSTER", 1)
        if max(width, 1) != cluster:
            raise RuntimeError(f"{lau.rung.id}'s build runs clusters of {max(width, 1)} CTAs, not its CLUSTER = "
                               f"{cluster}: a launch without a cluster attribute would not pair its CTAs as the "
                               f"kernel's multicast expects.")
        attr = driver.CUlaunchAttribute()
        attr.id = SERIALIZATION
        attr.value.programmaticStreamSerializationAllowed = 1
        cfg = driver.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = lau.grid
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = lau.block
        cfg.sharedMemBytes = lau.smem
        cfg.attrs, cfg.numAttrs = [attr], 1
        object.__setattr__(out, "_driver", (fn, cfg))  # not a field: equality and repr stay Launch's
        return out

    def args(self, a, b, c, scale: float = 1.0) -> Packed:
        return Packed(super().args(a, b, c, scale))

    def enqueue(self, args: Packed) -> None:
        import cupy as cp
        fn, cfg = self._driver
        cfg.hStream = driver.CUstream(cp.cuda.get_current_stream().ptr)
        err, = driver.cuLaunchKernelEx(cfg, fn, args.address, 0)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuLaunchKernelEx refused {self.rung.id} at {self.m}x{self.n}x{self.k} ({err.name}) "
                               f"with grid {self.grid}, block {self.block}, {self.smem} bytes of shared memory and "
                               f"programmatic stream serialization.")
