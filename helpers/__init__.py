"""The GEMM ladder's helpers: every chapter, test and the CLI go through these verbs.

    build(rung)            compile with NVRTC (cached), registers/spills/smem, SASS inventory (no GPU needed)
    kernel(rung)           the rung compiled once: constants, the loaded function, geometry, argument convention
    prepare(rung, m, n, k) one validated launch (shape refused in one sentence before anything runs)
    gemm(rung, a, b, c)    C = A @ B with a rung, the arrays checked first
    check(rung, m, n, k)   fresh random inputs, NaN-poisoned C, compared with cuBLAS in higher precision
    bench(rung, m, n, k)   GPU time against the strongest cuBLAS, interleaved in the same rounds
    measure(rung, n)       check + bench + record when live (once per run); the recorded row when replaying
    ceiling(id)            a machine ceiling from chapter 00, measured once per run, or recorded
    roofline / climb       the two plots; explore_ladder() adds widgets; sweep() plots TFLOP/s against N
    banner()               says MEASURED (and when) or REPLAY, and where replayed numbers came from

The verbs are functions; the modules they live in have other names (compiler, correctness, timing, launch), so
`import helpers.compiler` is always the module. README.md ("How a rung becomes a plotted number") walks the layers.
"""
from .timing import bench, time_gpu
from .compiler import Build, build, intensity
from .csource import CompileError
from .correctness import check
from .kernel import Kernel, KernelFault, ShapeError, kernel
from .launch import Launch, gemm, prepare, random_inputs, takes, validate
from .gpu import NoGPU, device, live, why_not_live
from .store import NotRecorded, obtain
from .ladder import NotMeasured, Row, measure, recorded_entry, replay
from .ceilings import CEILINGS, ceiling, recorded_ceilings
from .demos import demo_check, demo_fault, persistent_grid
from .plot import climb, explore_ladder, roofline, sweep
from .registry import PROBES, RUNGS, chapter_rungs, probe, rung
from .listing import opcode_families, sass_claims, show_diff, show_file, show_python, show_source
from .status import banner, banner_text
from .tables import build_summary, table
from .results import ResultsError
from .figures.common import watch_cells as _watch_cells

_watch_cells()  # a no-op unless ci/test.sh asks for every shown figure to be checked

__all__ = [name for name in dir() if not name.startswith("_")]
