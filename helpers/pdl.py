"""Programmatic dependent launch: a rung whose build has PDL > 0 (its kernel ends its prologue with
griddepcontrol.wait and lets the next kernel start with griddepcontrol.launch_dependents) is queued through the
driver's cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION set, which CuPy's RawKernel
cannot pass. helpers.launch.Launch does it for such a build, so timing, checks, profiles and the cross-check all
launch it the same way:

    lau = prepare("10_pdl", 1024)      # lau.programmatic is True: the build has PDL = 1
    lau(a, b, c)                       # checked arrays, then one launch with the attribute

With the attribute, the launch may start on the current CuPy stream while the previous kernel of that stream still
runs, as far as that kernel's launch_dependents lets it; its own griddepcontrol.wait decides what waits for that
kernel's memory. Without it, both instructions do nothing.

No cluster attribute: the kernel's __cluster_dims__ is a function attribute (CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
"set during compile time, it cannot be set at runtime"), and a launch without CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
forms those clusters, as CuPy's plain cuLaunchKernel does. `config` reads the attribute back and refuses a kernel
whose compiled cluster width is not its CLUSTER.
"""
from __future__ import annotations

import numpy as np


def _address(x: np.ndarray) -> int:
    return x.__array_interface__["data"][0]


class Packed:
    """A launch's arguments as cuLaunchKernelEx reads them: an array of pointers, one per parameter, each to a copy
    of its value held here in a NumPy array (and the arrays it points into, so that nothing is freed while launches
    are queued)."""

    def __init__(self, args: tuple):
        self.keep, self.values = args, []
        for x in args:
            if hasattr(x, "data") and hasattr(x.data, "ptr"):          # a CuPy array: its device pointer
                self.values.append(np.array(x.data.ptr, dtype=np.uint64))
            elif isinstance(x, (np.void, np.integer, np.floating)):     # a tensor map (128 bytes by value), M, N, K
                self.values.append(np.array(x))                         # and an FP8 scale
            else:
                raise TypeError(f"cannot pass a {type(x).__name__} to cuLaunchKernelEx; the kernels take CuPy "
                                f"arrays, tensor maps and NumPy scalars.")
        self.pointers = np.array([_address(v) for v in self.values], dtype=np.uint64)
        self.address = _address(self.pointers)


def _check(err, what: str) -> None:
    from cuda.bindings import driver
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{what} returned {err.name}.")


def config(kern, grid: tuple, block: tuple, smem: int) -> tuple:
    """(function, launch config) for cuLaunchKernelEx: the loaded kernel of a helpers.kernel.Kernel, its geometry and
    the programmatic stream serialization attribute (the stream is filled in per launch)."""
    from cuda.bindings import driver
    fn = driver.CUfunction(kern.function().kernel.ptr)
    err, width = driver.cuFuncGetAttribute(driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, fn)
    _check(err, "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)")
    cluster = kern.consts.get("CLUSTER", 1)
    if max(width, 1) != cluster:
        raise RuntimeError(f"{kern.item.id}'s build runs clusters of {max(width, 1)} CTAs, not its CLUSTER = {cluster}: "
                           f"a launch without a cluster attribute would not pair its CTAs as the kernel's multicast "
                           f"expects.")
    attr = driver.CUlaunchAttribute()
    attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attr.value.programmaticStreamSerializationAllowed = 1
    cfg = driver.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
    cfg.sharedMemBytes = smem
    cfg.attrs, cfg.numAttrs = [attr], 1
    return fn, cfg


def enqueue(fn, cfg, args: Packed, what: str) -> None:
    """Queue one launch on CuPy's current stream (`what` names it in the error)."""
    import cupy as cp
    from cuda.bindings import driver
    cfg.hStream = driver.CUstream(cp.cuda.get_current_stream().ptr)
    err, = driver.cuLaunchKernelEx(cfg, fn, args.address, 0)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuLaunchKernelEx refused {what} ({err.name}) with grid {cfg.gridDimX}x{cfg.gridDimY}, "
                           f"block {cfg.blockDimX}, {cfg.sharedMemBytes} bytes of shared memory and programmatic "
                           f"stream serialization.")
