"""NVRTC, the driver API and NVML through maintained bindings (cuda.bindings, cuda.pathfinder, pynvml): no ctypes."""
import os
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from cuda.bindings import driver

from helpers import CompileError, build
from helpers import gpu, tma
from helpers.compiler import compile_source, nvrtc_version

build_module = sys.modules["helpers.compiler"]
HELPERS = Path(__file__).resolve().parent.parent / "helpers"


def test_a_rung_builds_to_a_cubin_nvdisasm_reads():
    assert build("04_swizzle").count("HMMA") > 0


def test_a_syntax_error_names_the_kernel_line():
    source = 'extern "C" __global__ void k(float* x) {\n    x[0] = 1.0f +;\n}\n'
    with pytest.raises(CompileError) as e:
        compile_source(source, "kernels/broken.cu")
    first = str(e.value).splitlines()
    assert first[0].startswith("kernels/broken.cu line 2:"), first[0]
    assert [x for x in first if x.startswith(">")] == [">    2 |     x[0] = 1.0f +;"]  # numbered, in its context


def test_a_second_compile_still_reports_resources(tmp_path, monkeypatch):
    # NVRTC's own cache (12.9+, with a driver) would skip ptxas and its report on the second compile
    source = 'extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n'
    for cache in ("first", "second"):
        monkeypatch.setattr(build_module, "CACHE", tmp_path / cache)
        assert compile_source(source, "twice.cu").resources["twice"].registers > 0


def test_nvrtc_version_is_major_minor():
    version = nvrtc_version()
    assert isinstance(version, tuple) and len(version) == 2 and all(isinstance(v, int) for v in version)
    assert version >= (12, 0)


def test_headers_come_from_one_directory_with_the_runtime_and_wmma_headers():
    dirs = build_module._include_dirs()
    assert len(dirs) == 1 and (Path(dirs[0]) / "cuda_runtime_api.h").exists()


def _fake_toolkit(root: Path, complete: bool) -> Path:
    (root / "crt").mkdir(parents=True)
    (root / "cuda_runtime_api.h").touch()
    if complete:
        (root / "crt" / "mma.h").touch()
    return root


def test_a_toolkit_with_crt_mma_wins_over_an_incomplete_wheel_tree(tmp_path, monkeypatch):
    import cuda.pathfinder
    wheel = _fake_toolkit(tmp_path / "wheel" / "include", complete=False)
    toolkit = _fake_toolkit(tmp_path / "toolkit" / "include", complete=True)
    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_header_directory", lambda name: str(wheel))
    monkeypatch.setenv("CUDA_HOME", str(toolkit.parent))
    assert build_module._include_dirs() == [str(toolkit)]


def test_an_older_pathfinder_falls_back_to_the_toolkit(tmp_path, monkeypatch):
    import cuda.pathfinder
    toolkit = _fake_toolkit(tmp_path / "toolkit" / "include", complete=True)
    monkeypatch.delattr(cuda.pathfinder, "find_nvidia_header_directory")
    monkeypatch.delattr(cuda.pathfinder, "find_nvidia_binary_utility")
    monkeypatch.setenv("CUDA_HOME", str(toolkit.parent))
    assert build_module._include_dirs() == [str(toolkit)]
    tool = tmp_path / "bin" / "nvdisasm"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    assert build_module._tool("nvdisasm") == str(tool)


def test_tensor_map_dtypes_are_the_drivers_named_enums():
    t = driver.CUtensorMapDataType
    assert tma.DTYPES == {"bf16": t.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, "fp16": t.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                          "fp32": t.CU_TENSOR_MAP_DATA_TYPE_FLOAT32, "e4m3": t.CU_TENSOR_MAP_DATA_TYPE_UINT8}
    # the numbers the hand-written ctypes call used to pass
    assert {k: int(v) for k, v in tma.DTYPES.items()} == {"bf16": 9, "fp16": 6, "fp32": 7, "e4m3": 0}
    assert {k: int(v) for k, v in tma.SWIZZLE.items()} == {0: 0, 32: 1, 64: 2, 128: 3}


def _fake_array(rows, cols, itemsize, ptr=0x7F0000000000):
    return SimpleNamespace(shape=(rows, cols), dtype=np.dtype(f"u{itemsize}"), data=SimpleNamespace(ptr=ptr))


def test_tensor_map_passes_the_box_and_returns_the_16_words(monkeypatch):
    words = [2**64 - 1, *range(1, 16)]
    seen = {}

    def encode(*args):
        seen["args"] = args
        out = driver.CUtensorMap()
        out.opaque = words
        return driver.CUresult.CUDA_SUCCESS, out

    monkeypatch.setattr(tma.driver, "cuTensorMapEncodeTiled", encode)
    m = tma.tensor_map_2d(_fake_array(256, 512, 1), box_rows=128, box_cols=128, dtype="e4m3")
    assert m.dtype == tma.MAP_TYPE and m.dtype.itemsize == 128
    assert m["w"].tolist() == words
    dtype, rank, ptr, dims, strides, box, elem, interleave, swizzle, l2, oob = seen["args"]
    assert (dtype, rank, ptr) == (driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, 0x7F0000000000)
    assert [[int(v) for v in x] for x in (dims, strides, box, elem)] == [[512, 256], [512], [128, 128], [1, 1]]
    assert swizzle == driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B
    assert l2 == driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B
    assert interleave == driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE
    assert oob == driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE


def test_a_refused_tensor_map_names_the_cuda_result(monkeypatch):
    monkeypatch.setattr(tma.driver, "cuTensorMapEncodeTiled",
                        lambda *args: (driver.CUresult.CUDA_ERROR_INVALID_VALUE, None))
    with pytest.raises(RuntimeError, match="returned CUDA_ERROR_INVALID_VALUE for a 64 x 64 bf16 tensor"):
        tma.tensor_map_2d(_fake_array(64, 64, 2), box_rows=64)


def test_nvml_gives_the_driver_string_and_max_clocks(monkeypatch):
    nv = SimpleNamespace(NVML_CLOCK_SM=0, NVML_CLOCK_MEM=2, nvmlSystemGetDriverVersion=lambda: b"580.159.04",
                         nvmlDeviceGetMaxClockInfo=lambda h, clock: {0: 1980, 2: 2619}[clock])
    monkeypatch.setattr(gpu, "_nvml", lambda: (nv, "handle"))
    assert gpu._driver_and_clocks() == ("580.159.04", 1980, 2619)
    monkeypatch.setattr(gpu, "_nvml", lambda: None)
    assert gpu._driver_and_clocks() == ("unknown", None, None)


def test_no_ctypes_and_no_nvidia_smi_left():
    # The house rule: the CUDA Python bindings and NVML, never ctypes or an nvidia-smi subprocess, anywhere in helpers.
    for path in sorted(HELPERS.rglob("*.py")):
        text = path.read_text()
        assert not re.search(r"^\s*(import|from)\s+ctypes\b", text, re.M) and "ctypes." not in text, path.name
        assert '"nvidia-smi"' not in text and "'nvidia-smi'" not in text, path.name


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, np_dtype, box_cols", [("bf16", np.uint16, 64), ("fp16", np.float16, 64),
                                                       ("fp32", np.float32, 32), ("e4m3", np.uint8, 128)])
def test_tensor_map_of_a_real_array(dtype, np_dtype, box_cols):
    import cupy as cp
    a = cp.zeros((256, 512), dtype=np_dtype)
    m = tma.tensor_map_2d(a, box_rows=64, box_cols=box_cols, dtype=dtype)
    assert m.dtype == tma.MAP_TYPE and m["w"].any()
    with pytest.raises(RuntimeError, match="CUDA_ERROR_INVALID_VALUE"):
        tma.tensor_map_2d(a[:, 1:], box_rows=64, box_cols=box_cols, dtype=dtype)  # not 16-byte aligned


CLUSTER_KERNEL = ('extern "C" __global__ void __cluster_dims__(2, 1, 1) pair(float* x) {\n'
                  '    extern __shared__ float s[];\n    s[threadIdx.x] = 1.0f;\n    if (x) x[0] = s[0];\n}\n')


@pytest.mark.gpu
def test_max_active_clusters_counts_pairs():
    import cupy as cp
    sms = gpu.device().sms
    smem = 200 * 1024  # one CTA per SM, so at most one pair per two SMs
    fn = cp.RawModule(path=str(compile_source(CLUSTER_KERNEL, "pair.cu").cubin)).get_function("pair")
    fn.max_dynamic_shared_size_bytes = smem
    n = gpu.max_active_clusters(fn.kernel.ptr, sms // 2 * 2, 128, smem)
    assert 1 <= n <= sms // 2
    with pytest.raises(RuntimeError, match="cuOccupancyMaxActiveClusters"):
        gpu.max_active_clusters(fn.kernel.ptr, sms // 2 * 2, 128, 300 * 1024)  # more than an SM has
