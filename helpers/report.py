"""What a reader sees: the live/replay banner, the build summary, the ladder table."""
from __future__ import annotations

from . import results
from .build import Build
from .gpu import device, live, why_not_live

WATCH = ("FFMA", "HMMA", "HGMMA", "LDS", "LDSM", "LDG", "LDGSTS", "STG", "STS", "UTMALDG", "SYNCS",
         "BAR", "LDL", "STL")  # the opcode families a GEMM chapter talks about


def recorded_env() -> dict | None:
    """The environment of the newest entry in the results file (the GPU the book was recorded on)."""
    data = results.load()
    envs = [e["env"] for section in ("gemm", "ceilings") for e in data[section].values() if "env" in e]
    return max(envs, key=lambda e: e["date"]) if envs else None


def banner_text() -> str:
    if live():
        d = device()
        text = (f"LIVE: numbers below are measured when each cell runs, here on {d.name} (driver {d.driver}, "
                f"CUDA {d.cuda_driver_api}, CuPy {d.cupy}); this run started {d.env()['date']}.")
        from .registry import RUNGS
        lacking = [r.id for r in RUNGS if d.cc < tuple(r.needs_cc)]
        if lacking:  # e.g. a Colab T4 or A100: the Hopper rungs cannot run there
            text += (f" This GPU lacks what {', '.join(lacking)} need (an H100: sm_90a); their numbers are the "
                     f"recorded ones.")
        return text
    env = recorded_env()
    where = (f"{env['name']} on {env['date']} (driver {env['driver']}, CUDA {env['cuda_driver_api']}, "
             f"CuPy {env['cupy']})") if env else "nowhere yet (the results file is empty)"
    return f"REPLAY: {why_not_live()} Numbers and plots below were recorded on {where}; none is measured now."


def banner() -> None:
    """Show the mode at the top of a chapter: a coloured box in Jupyter, a plain line elsewhere."""
    text = banner_text()
    try:
        from IPython.display import HTML, display
        colour = "#e6f4ea" if text.startswith("LIVE") else "#fff4e5"
        display(HTML(f'<div style="background:{colour};padding:8px;border-left:4px solid #888">'
                     f"<b>{text.split(':', 1)[0]}</b>:{text.split(':', 1)[1]}</div>"))
    except ImportError:
        print(text)


def opcode_families(b: Build, entry: str | None = None) -> dict[str, int]:
    """SASS counts grouped by the families in WATCH ('LDS' counts LDS and LDS.128, not LDSM)."""
    inv = b.inventory(entry)
    fam = lambda op: op.split(".")[0]  # noqa: E731
    return {w: sum(n for op, n in inv.items() if fam(op) == w) for w in WATCH if any(fam(op) == w for op in inv)}


def build_summary(b: Build, entry: str) -> str:
    r = b.resources[entry]
    fams = ", ".join(f"{k} {v}" for k, v in opcode_families(b, entry).items())
    return (f"{entry} ({b.arch}): {r.registers} registers, {r.spill_stores + r.spill_loads} bytes spilled, "
            f"{r.smem_static} B static shared memory, {r.barriers} barrier(s)\n  SASS: {fams}")


HEADER = ("rung", "N", "dtype", "TFLOP/s", "cuBLAS", "ratio", "correct", "source")


def table(rows) -> str:
    """The ladder table as fixed-width text (same in a terminal, a notebook and the built book)."""
    lines = ["{:<18} {:>6} {:>5} {:>8} {:>8} {:>7} {:>8}  {}".format(*HEADER)]
    for r in rows:
        n = str(r.n) if r.m == r.n == r.k else f"{r.m}x{r.n}x{r.k}"
        src = f"{'live' if r.source == 'live' else 'recorded'} {r.date[:16]}"
        lines.append(f"{r.rung:<18} {n:>6} {r.dtype:>5} {r.tflops:8.2f} {r.cublas_tflops:8.2f} "
                     f"{r.ratio:7.1%} {('yes' if r.correct else 'NO'):>8}  {src}")
    return "\n".join(lines)


def _display_code(text: str, language: str) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import Code, display
        if get_ipython() is not None:
            display(Code(text, language=language))
            return
    except ImportError:
        pass
    print(text)


def _function_text(source: str, entry: str) -> str:
    """From `extern "C" __global__ ... entry(` to the closing brace at column 0."""
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if f" {entry}(" in line or line.startswith(f"{entry}("))
    while start > 0 and lines[start - 1].strip() and not lines[start - 1].startswith("}"):
        start -= 1
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return "\n".join(lines[start:end + 1])


def show_source(item, entry: str | None = None) -> None:
    """Show a rung's or probe's .cu file, or just one kernel of it, highlighted."""
    from .registry import probe, rung
    if isinstance(item, str):
        item = rung(item) if item[:2].isdigit() else probe(item)
    text = item.path.read_text()
    _display_code(_function_text(text, entry) if entry else text, "cuda")


def show_file(relpath: str) -> None:
    """Show a file under kernels/, e.g. the PTX wrappers in 'common/mma_sync.cuh'."""
    from .registry import KERNELS
    _display_code((KERNELS / relpath).read_text(), "cuda")


def show_diff(before: str, after: str) -> None:
    """The lesson of a rung: the unified diff of its .cu against the previous rung's."""
    import difflib
    from .registry import rung
    a, b = rung(before), rung(after)
    diff = difflib.unified_diff(a.path.read_text().splitlines(), b.path.read_text().splitlines(),
                                f"kernels/{a.path.name}", f"kernels/{b.path.name}", n=2, lineterm="")
    _display_code("\n".join(diff), "diff")


def sass_claims(r) -> str:
    """The registry's SASS claims for a rung, checked against the cubin: stable across compiler versions."""
    from .build import build as _build
    b = _build(r)
    parts = [f"{op} {'yes' if b.count(op, r.entry) else 'MISSING'}" for op in r.sass_has]
    parts += [f"no {op} {'yes' if not b.count(op, r.entry) else 'FOUND'}" for op in r.sass_lacks]
    res = b.resources[r.entry]
    parts.append(f"spills {res.spill_stores + res.spill_loads} B")
    return f"{r.id}: " + ", ".join(parts)


def status_text() -> str:
    """The recording environment and each chapter's last execution time (results/execution.json)."""
    import json
    env = recorded_env()
    lines = []
    if env:
        lines += [f"recorded on     {env['name']} ({env['sms']} SMs, compute capability {env['cc']}, "
                  f"{env['l2_bytes'] // 2**20} MiB L2, SM clock up to {env['sm_clock_max_mhz']} MHz)",
                  f"software        driver {env['driver']}, CUDA {env['cuda_driver_api']} (runtime "
                  f"{env['cuda_runtime']}), CuPy {env['cupy']}, NVRTC {env['nvrtc']}",
                  f"latest record   {env['date']}"]
    timings = results.RESULTS / "execution.json"
    if timings.exists():
        lines.append("\nchapter                        executed cold in   on")
        for name, t in sorted(json.loads(timings.read_text()).items()):
            lines.append(f"{name:<30} {t['seconds']:>8.1f} s        {t['date']}")
    return "\n".join(lines)
