import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# One BLAS thread per test process. Under pytest-xdist every core already runs a worker, and OpenBLAS's own threads
# on top of that spin against each other (the chapter-12 accuracy demo, 128 small matmuls per GEMM, took 8 s
# instead of 2 on two busy cores). Set here, before the workers and the CLI subprocesses start, so they inherit it;
# this process keeps OpenBLAS's default if a plugin imported NumPy before this file (hypothesis's does).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def prose(text: str) -> str:
    """Text with every run of whitespace (a re-wrapped line, a markdown cell's newline, an indent) as one space."""
    return " ".join(text.split())


def says(text: str, phrase: str) -> bool:
    """Whether `text` contains `phrase`, wherever either is line-wrapped: the prose tests match what a chapter says,
    not how its paragraph happens to be filled."""
    return prose(phrase) in prose(text)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped with the reason when none is present")
    config.addinivalue_line("markers", "slow: takes seconds on a CPU; run first, so that under pytest-xdist the "
                                       "other workers fill in around it instead of waiting for it at the end")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the xdist_group marks added here
def pytest_collection_modifyitems(config, items):
    from helpers.gpu import why_not_live
    reason = why_not_live()
    if reason:
        skip = pytest.mark.skip(reason=f"GPU test: {reason}")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
    items.sort(key=lambda item: "slow" not in item.keywords)  # stable: otherwise in collection order


@pytest.fixture
def tmp_results(tmp_path, monkeypatch):
    """Point recording at a scratch file so tests never touch results/."""
    path = tmp_path / "results.json"
    monkeypatch.setenv("GEMM_LADDER_RESULTS", str(path))
    return path


@pytest.fixture
def ci_script(monkeypatch):
    """Load one of ci/'s experiment scripts as a module: ci_script("pingpong"). Imported, a script points recording
    at a scratch file of its own; this keeps the test session's results where they were."""
    import importlib.util
    from helpers import results
    from helpers.registry import ROOT
    monkeypatch.setenv(results.RESULTS_ENV, str(results.path_for()))

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, ROOT / "ci" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load


def refusal(r, m: int, n: int, k: int) -> list[str] | None:
    """What validate() must say about M x N x K for rung r, worked out here from the rung's own constexprs: None
    where one of its tiles divides the shape, else the parts its one sentence must hold: the rung, the first
    dimension no tile divides with its value, the multiple it needs, the padded size, and the way out. A rung with
    tile choices (rung 10) needs the multiple of its most permissive tile."""
    from helpers.compiler import apply_config, read_consts
    text = r.path.read_text()
    tiles = [read_consts(apply_config(text, {**r.config, **extra})) for extra, _ in (({}, 1.0), *r.tile_choices)]
    dims = [(dim, value) for dim, value in (("M", m), ("N", n), ("K", k)) if dim in r.divides]
    if any(all(value % c[r.divides[dim]] == 0 for dim, value in dims) for c in tiles):
        return None
    for dim, value in dims:
        step = min(c[r.divides[dim]] for c in tiles)
        if value % step:
            return [f"{r.id} ", f"{dim}={value}", f"multiples of {step} ({r.divides[dim]})",
                    f"pad to {-(-value // step) * step}", "or pick an earlier rung"]
    raise AssertionError(f"no tile of {r.id} fits {m}x{n}x{k}, yet each dimension is a multiple of its smallest step")
