"""Compile a rung with NVRTC (through cuda.bindings), cache the cubin on disk, and read what the compiler made of it.

Works with no GPU: NVRTC compiles for a named architecture (sm_90a) without asking a device, and nvdisasm
reads the cubin. So registers, spills, shared memory and the SASS inventory are real in replay mode too.
The text it compiles (a rung's config applied, its common/ headers, its constants) comes from helpers.csource.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .csource import CompileError, apply_config, local_headers, read_consts
from .registry import Probe, Rung

CACHE = Path(os.environ.get("GEMM_LADDER_CACHE", Path.home() / ".cache" / "gemm-ladder"))
BASE_OPTIONS = ("-std=c++17", "-lineinfo", "--ptxas-options=-v")


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
    """Find a CUDA binary: cuda.pathfinder (pip wheels, conda, CUDA_HOME), then PATH, then /usr/local/cuda."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
        found = find_nvidia_binary_utility(name)
    except ImportError:  # an older cuda-pathfinder, without binary search
        found = None
    fallback = Path("/usr/local/cuda/bin") / name
    found = found or shutil.which(name) or (str(fallback) if fallback.exists() else None)
    if found is None:
        raise ToolMissing(f"{name} was not found; install it with `pip install nvidia-cuda-{name}` "
                          f"or put a CUDA toolkit's bin/ on PATH.")
    return found


def _include_dirs() -> list[str]:
    """CUDA headers for NVRTC: cuda.pathfinder's (pip wheels first), else a system toolkit's."""
    try:
        from cuda.pathfinder import find_nvidia_header_directory
        found = find_nvidia_header_directory("cudart")
    except (ImportError, RuntimeError):  # older cuda-pathfinder: no such function, or no "cudart" entry
        found = None
    # pathfinder names one directory, but WMMA's <mma.h> includes crt/mma.h, which pip ships apart
    # (nvidia-cuda-crt): when the wheels' tree lacks it, a toolkit's complete tree is preferred.
    toolkits = (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda")
    dirs = [Path(d) for d in (found, *(t and f"{t}/include" for t in toolkits)) if d]
    dirs = [d for d in dirs if (d / "cuda_runtime_api.h").exists()]
    complete = [d for d in dirs if (d / "crt" / "mma.h").exists()]
    return [str(d) for d in (complete or dirs)[:1]]


@functools.lru_cache(maxsize=1)
def _nvrtc():
    """cuda.bindings' NVRTC module, with libnvrtc loaded."""
    try:
        from cuda.bindings import nvrtc
        _call(nvrtc.nvrtcVersion)
    except Exception as e:  # noqa: BLE001 - no bindings, no libnvrtc: the same missing piece to the reader
        raise ToolMissing(f"NVRTC could not be loaded ({e}); install the requirements (`pip install -r "
                          f"requirements.txt` brings cuda-bindings and the nvidia-cuda-nvrtc wheel).") from e
    return nvrtc


def _call(fn, *args):
    """Run an NVRTC function, returning its outputs; a result other than success raises RuntimeError."""
    err, *out = fn(*args)
    if err.value:
        raise RuntimeError(f"{fn.__name__} returned {err.name}")
    return out[0] if len(out) == 1 else out


def nvrtc_version() -> tuple[int, int]:
    """NVRTC's (major, minor): part of every cache key, and recorded beside measurements."""
    return tuple(_call(_nvrtc().nvrtcVersion))


def _fetch(prog, size_fn, get_fn) -> bytes:
    """An NVRTC output (cubin, log) of the size NVRTC reports, every byte of it."""
    buf = bytearray(_call(size_fn, prog))
    _call(get_fn, prog, buf)
    return bytes(buf)


def _log(prog) -> str:
    """The program's compile log, without the C string's terminator."""
    nvrtc = _nvrtc()
    return _fetch(prog, nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog).rstrip(b"\0").decode(errors="replace")


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


def _errors_only(log: str) -> str:
    """NVRTC's log without its warnings and remarks: the error blocks (message, source line, caret) and the count."""
    blocks = [b for b in re.split(r"\n\s*\n", log.strip()) if b.strip()]
    keep = [b for b in blocks if re.match(r"^.*?\(\d+\): (?:catastrophic )?error", b) or " detected in the " in b]
    return "\n\n".join(keep) or log.strip()


def _not_code(lines: list[str]) -> list[bool]:
    """Per line, whether it holds no C++ token: blank, a comment, or a preprocessor line (a `#pragma unroll` before
    a loop, a `#define` and its `\\` continuations). A missing ';' belongs before such lines, not on them."""
    out, directive, comment = [], False, False
    for raw in lines:
        text = raw.strip()
        if comment:  # inside a /* ... */ that opened on an earlier line
            comment = "*/" not in text
            quiet = comment or text.endswith("*/")
        elif directive or text.startswith("#"):
            directive, quiet = True, True
        else:
            opens = text.startswith("/*")
            comment = opens and "*/" not in text
            quiet = not text or text.startswith("//") or comment or (opens and text.endswith("*/"))
        out.append(quiet)
        directive = directive and text.endswith("\\")  # a continued directive runs on to the next line
    return out


def _error_with_line(log: str, files: dict[str, str], name: str) -> str:
    """Turn NVRTC's first error into 'file line N: message', the numbered lines around it (the culprit marked), and
    the compiler's errors without its warnings. A missing ';' is reported at the next token, often the next line:
    when the caret sits on a line's first token, the line named is the code line before it (past blank, comment and
    preprocessor lines: most loops here open with `#pragma unroll`), where the ';' belongs."""
    m = re.search(r"^(.*?)\((\d+)\): (?:catastrophic )?error:?\s*(.*)$", log, re.M)
    if not m:
        return f"{name} failed to compile:\n{log.strip()}"
    where, line, what = m.group(1).strip(), int(m.group(2)), m.group(3).strip()
    where = next((f for f in files if where.endswith(f)), where)  # ours (the kernel, a common/ header) or a system header
    lines = files.get(where, "").splitlines()
    shown = where if where == name or where not in files else f"kernels/{where}"
    if what.startswith('expected a ";"') and 0 < line <= len(lines):
        after = log[m.end():].split("\n")[1:3]                  # NVRTC echoes the line, then a caret under the token
        caret = after[1].index("^") - 2 if len(after) == 2 and "^" in after[1] else None  # both indented by 2
        text = lines[line - 1]
        if caret is None or caret <= len(text) - len(text.lstrip()):
            quiet = _not_code(lines)
            before = line - 1
            while before >= 1 and quiet[before - 1]:
                before -= 1
            if before >= 1:
                what = f'expected a ";" at the end of this line (the compiler noticed at line {line}, the next token)'
                line = before
    window = [f"{'>' if i == line else ' '}{i:>5} | {lines[i - 1]}" for i in range(max(1, line - 2), min(len(lines), line + 2) + 1)]
    return (f"{shown} line {line}: {what}\n" + "\n".join(window) +
            f"\n(the compiler's errors below; its warnings are left out while there are errors)\n{_errors_only(log)}")


def compile_source(source: str, name: str, arch: str = "sm_90a", options: tuple = ()) -> Build:
    """Compile CUDA source to a cubin for `arch`, cached on disk by source, options and NVRTC version."""
    nvrtc, version = _nvrtc(), nvrtc_version()
    opts = (f"-arch={arch}", *BASE_OPTIONS, *options, *(f"-I{d}" for d in _include_dirs()))
    headers = local_headers(source)  # handed to NVRTC by name, and part of the cache key
    key = hashlib.sha256(repr((source, sorted(headers.items()), opts, version)).encode()).hexdigest()[:24]
    cubin = CACHE / f"{Path(name).stem}-{arch}-{key}.cubin"
    logfile = cubin.with_suffix(".log")
    if not (cubin.exists() and logfile.exists()):
        prog = _call(nvrtc.nvrtcCreateProgram, source.encode(), name.encode(), len(headers),
                     [h.encode() for h in headers.values()], [n.encode() for n in headers])
        try:
            # NVRTC 12.9+ keeps a cache of its own (where a driver is installed); a hit skips ptxas, and with it
            # the `-v` report the resources come from. Ours is the cache that counts: NVRTC's is turned off,
            # outside the key, since it changes no output.
            own = (*opts, "--no-cache") if version >= (12, 9) else opts
            err, = nvrtc.nvrtcCompileProgram(prog, len(own), [o.encode() for o in own])
            if err.value:
                raise CompileError(_error_with_line(_log(prog) or err.name, {name: source, **headers}, name))
            data, log = _fetch(prog, nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN), _log(prog)
        finally:
            nvrtc.nvrtcDestroyProgram(prog)
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
