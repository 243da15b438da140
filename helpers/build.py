"""Compile a rung with NVRTC (through CuPy), cache the cubin on disk, and read what the compiler made of it.

Works with no GPU: NVRTC compiles for a named architecture (sm_90a) without asking a device, and nvdisasm
reads the cubin. So registers, spills, shared memory and the SASS inventory are real in replay mode too.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sysconfig
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .registry import KERNELS, Probe, Rung

CACHE = Path(os.environ.get("GEMM_LADDER_CACHE", Path.home() / ".cache" / "gemm-ladder"))
BASE_OPTIONS = ("-std=c++17", "-lineinfo", "--ptxas-options=-v")


class CompileError(RuntimeError):
    """NVRTC refused the source; the message names the file, the line and shows it."""


class ToolMissing(RuntimeError):
    """A CUDA tool (NVRTC, nvdisasm) is not installed."""


@dataclass(frozen=True)
class Resources:
    """What ptxas reports for one kernel (from `--ptxas-options=-v`)."""
    registers: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int
    smem_static: int
    barriers: int


@dataclass
class Build:
    name: str
    arch: str
    cubin: Path
    log: str
    consts: dict[str, int]
    resources: dict[str, Resources]
    _sass: str | None = field(default=None, repr=False)

    def sass(self) -> str:
        """The whole cubin disassembled by nvdisasm (cached on disk next to the cubin)."""
        if self._sass is None:
            cached = self.cubin.with_suffix(".sass")
            if not cached.exists():
                out = subprocess.run([_tool("nvdisasm"), "-c", str(self.cubin)], capture_output=True, text=True)
                if out.returncode:
                    raise RuntimeError(f"nvdisasm could not read {self.cubin}: {out.stderr.strip()}")
                _atomic_write(cached, out.stdout.encode())
            self._sass = cached.read_text()
        return self._sass

    def inventory(self, entry: str | None = None) -> Counter:
        """Opcode counts (with modifiers, e.g. 'LDS.128') of one kernel, or of the whole cubin."""
        return sass_inventory(self.sass(), entry)

    def count(self, prefix: str, entry: str | None = None) -> int:
        """How many instructions start with `prefix` ('FFMA', 'LDS.128', 'HMMA.16816')."""
        return sum(n for op, n in self.inventory(entry).items() if op.startswith(prefix))


def _tool(name: str) -> str:
    """Find a CUDA binary: PATH, then the pip wheels (nvidia-cuda-nvdisasm), then CUDA_HOME."""
    found = shutil.which(name)
    if found:
        return found
    site = Path(sysconfig.get_paths()["purelib"]) / "nvidia"
    roots = [*site.glob("*/bin"), *site.glob("*/*/bin")]
    roots += [Path(os.environ[v]) / "bin" for v in ("CUDA_HOME", "CUDA_PATH") if v in os.environ]
    roots.append(Path("/usr/local/cuda/bin"))
    for root in roots:
        if (root / name).exists():
            return str(root / name)
    raise ToolMissing(f"{name} was not found; install it with `pip install nvidia-cuda-{name}` "
                      f"or put a CUDA toolkit's bin/ on PATH.")


def _include_dirs() -> list[str]:
    """CUDA headers for NVRTC: the pip toolkit wheels first, then a system toolkit."""
    site = Path(sysconfig.get_paths()["purelib"]) / "nvidia"
    dirs = [site / "cu13" / "include", site / "cuda_runtime" / "include"]
    dirs += [Path(os.environ[v]) / "include" for v in ("CUDA_HOME", "CUDA_PATH") if v in os.environ]
    dirs.append(Path("/usr/local/cuda/include"))
    # WMMA's <mma.h> includes crt/mma.h, which pip ships separately (nvidia-cuda-crt): prefer a complete tree.
    complete = [d for d in dirs if (d / "cuda_runtime_api.h").exists() and (d / "crt" / "mma.h").exists()]
    return [str(d) for d in complete[:1] or [d for d in dirs if (d / "cuda_runtime_api.h").exists()][:1]]


@functools.lru_cache(maxsize=1)
def _nvrtc():
    try:
        from cupy.cuda import nvrtc
        version = nvrtc.getVersion()  # also loads libnvrtc, so its path shows in /proc/self/maps
    except Exception as e:  # noqa: BLE001 - any failure here means the same thing to the reader
        raise ToolMissing(f"NVRTC is not available through CuPy ({e}); install the requirements "
                          f"(`pip install -r requirements.txt`).") from e
    return nvrtc, version


@functools.lru_cache(maxsize=1)
def _libnvrtc() -> ctypes.CDLL:
    # CuPy 14.2's nvrtc.getCUBIN drops the cubin's last byte (nvdisasm then rejects the ELF), so the
    # cubin itself is fetched with the C API, from the same library CuPy loaded, on CuPy's program handle.
    _nvrtc()
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libnvrtc.so" in line and "builtins" not in line}
    for path in sorted(paths) or ["libnvrtc.so.13", "libnvrtc.so.12"]:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    raise ToolMissing("libnvrtc could not be loaded with ctypes")


def _cubin_bytes(prog: int) -> bytes:
    lib = _libnvrtc()
    size = ctypes.c_size_t()
    if lib.nvrtcGetCUBINSize(ctypes.c_void_p(prog), ctypes.byref(size)):
        raise RuntimeError("nvrtcGetCUBINSize failed: was a real architecture (sm_XX) given?")
    buf = ctypes.create_string_buffer(size.value)
    if lib.nvrtcGetCUBIN(ctypes.c_void_p(prog), buf):
        raise RuntimeError("nvrtcGetCUBIN failed")
    return buf.raw


def read_consts(source: str) -> dict[str, int]:
    """The `constexpr int NAME = <expr>;` lines of a kernel, evaluated in order (tile sizes, thread counts)."""
    consts: dict[str, int] = {}
    for name, expr in re.findall(r"^constexpr\s+int\s+(\w+)\s*=\s*([^;]+);", source, re.M):
        expr = re.sub(r"//.*", "", expr)
        try:
            consts[name] = int(eval(expr.replace("/", "//"), {"__builtins__": {}}, dict(consts)))
        except Exception:  # noqa: BLE001 - a constant we cannot evaluate is simply not reported
            pass
    return consts


def parse_ptxas(log: str) -> dict[str, Resources]:
    """Per-kernel registers, spills, stack, static smem and barriers from a `ptxas -v` log."""
    out: dict[str, Resources] = {}
    for block in re.split(r"Compiling entry function '", log)[1:]:
        name = block.split("'", 1)[0]
        num = lambda pat: int(m.group(1)) if (m := re.search(pat, block)) else 0  # noqa: E731
        out[name] = Resources(
            registers=num(r"Used (\d+) registers"),
            spill_stores=num(r"(\d+) bytes spill stores"),
            spill_loads=num(r"(\d+) bytes spill loads"),
            stack_bytes=num(r"(\d+) bytes stack frame"),
            smem_static=num(r"(\d+) bytes smem"),
            barriers=num(r"used (\d+) barriers"),
        )
    return out


_SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Za-z0-9_.]*)")  # HGMMA.64x64x16...


def sass_inventory(sass: str, entry: str | None = None) -> Counter:
    if entry is not None:
        sections = re.split(r"\.section\s+\.text\.", sass)
        sass = next((s for s in sections[1:] if s.startswith(entry + ",") or s.startswith(entry + "\n")), "")
    return Counter(m.group(1) for m in _SASS_LINE.finditer(sass))


def local_headers(source: str) -> dict[str, str]:
    """The `#include "common/..."` files a kernel pulls from kernels/, recursively: name -> text."""
    found: dict[str, str] = {}
    todo = re.findall(r'^\s*#include\s+"([^"]+)"', source, re.M)
    while todo:
        name = todo.pop()
        if name not in found and (KERNELS / name).exists():
            found[name] = (KERNELS / name).read_text()
            todo += re.findall(r'^\s*#include\s+"([^"]+)"', found[name], re.M)
    return found


def apply_config(source: str, config: dict) -> str:
    """Set `constexpr int NAME = value;` lines to new values (a rung variant, a tuning experiment)."""
    for name, value in config.items():
        source, n = re.subn(rf"^(constexpr\s+int\s+{name}\s*=\s*)[^;]+;", rf"\g<1>{value};", source, flags=re.M)
        if n != 1:
            raise KeyError(f"no `constexpr int {name} = ...;` line to configure")
    return source


def _error_with_line(log: str, files: dict[str, str], name: str) -> str:
    """Turn NVRTC's first error into 'file line N: message' plus the offending source line."""
    m = re.search(r"^(.*?)\((\d+)\): (?:catastrophic )?error:?\s*(.*)", log, re.M)
    if not m:
        return f"{name} failed to compile:\n{log.strip()}"
    where, line = m.group(1).strip(), int(m.group(2))
    where = next((f for f in files if where.endswith(f)), where)  # ours (the kernel, a common/ header) or a system header
    lines = files.get(where, "").splitlines()
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    shown = where if where == name or where not in files else f"kernels/{where}"
    return f"{shown} line {line}: {m.group(3).strip()}\n    {line} | {text.strip()}\n(full log below)\n{log.strip()}"


def compile_source(source: str, name: str, arch: str = "sm_90a", options: tuple = ()) -> Build:
    """Compile CUDA source to a cubin for `arch`, cached on disk by source, options and NVRTC version."""
    nvrtc, version = _nvrtc()
    opts = (f"-arch={arch}", *BASE_OPTIONS, *options, *(f"-I{d}" for d in _include_dirs()))
    headers = local_headers(source)  # handed to NVRTC by name, and part of the cache key
    key = hashlib.sha256(repr((source, sorted(headers.items()), opts, version)).encode()).hexdigest()[:24]
    cubin = CACHE / f"{Path(name).stem}-{arch}-{key}.cubin"
    logfile = cubin.with_suffix(".log")
    if not (cubin.exists() and logfile.exists()):
        prog = nvrtc.createProgram(source, name, [h.encode() for h in headers.values()], [n.encode() for n in headers])
        try:
            try:
                nvrtc.compileProgram(prog, list(opts))
            except nvrtc.NVRTCError:
                log = nvrtc.getProgramLog(prog)
                raise CompileError(_error_with_line(log, {name: source, **headers}, name)) from None
            data, log = _cubin_bytes(prog), nvrtc.getProgramLog(prog)
        finally:
            nvrtc.destroyProgram(prog)
        CACHE.mkdir(parents=True, exist_ok=True)
        _atomic_write(cubin, data)
        _atomic_write(logfile, log.encode())
    log = logfile.read_text()
    return Build(name=name, arch=arch, cubin=cubin, log=log, consts=read_consts(source),
                 resources=parse_ptxas(log))


def build(item: Rung | Probe | str, source: str | None = None, options: tuple = (), arch: str | None = None) -> Build:
    """Compile a rung or probe (by object or id) for its `arch`, or for `arch` when given. `source` replaces the
    file's text (a learner's variant); a rung's `config` (its constexpr overrides) applies either way."""
    if isinstance(item, str):
        from .registry import probe, rung
        item = rung(item) if item[:2].isdigit() else probe(item)
    text = item.path.read_text() if source is None else source
    text = apply_config(text, getattr(item, "config", {}))
    return compile_source(text, f"kernels/{item.path.name}", arch or item.arch, options)


def intensity(r: Rung) -> float:
    """FLOP per byte of global loads implied by the tile shape (cache hits ignored).

    A block that loads a [BM, K] slab of A and a [K, BN] slab of B once does 2*BM*BN*K FLOP on
    (BM + BN)*K elements; without reuse every FMA loads its own two operands.
    """
    size = {"fp32": 4, "fp16": 2, "bf16": 2, "e4m3": 1}[r.dtype]
    if r.reuse is None:
        return 2 / (2 * size)
    c = build(r).consts
    bm, bn = c[r.reuse[0]], c[r.reuse[1]]
    return 2 * bm * bn / (size * (bm + bn))


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
