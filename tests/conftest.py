import functools
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
    config.addinivalue_line("markers", "sweep: draws and checks many figures, seconds each on a CPU; ci/test.sh runs "
                                       "these in a pass of their own (-m sweep), after the tests-and-nbval pass")


@functools.lru_cache(maxsize=1)
def _why_no_gpu() -> str | None:
    """Why the GPU tests cannot run in this process (None where they can), asked once."""
    from helpers.gpu import why_not_live
    return why_not_live()


_UNEXPANDED: dict[str, int] = {}  # a GPU test's node id -> how many parametrized cases it stands for here


@pytest.hookimpl(tryfirst=True)  # before pytest's own hook expands the parametrize marks
def pytest_generate_tests(metafunc):
    """Where the GPU tests are skipped, a parametrized GPU test is collected as one item, not one per case (its
    cases were most of the collected items, each expanded only to be skipped); pytest_collection_modifyitems skips
    it with the reason and the number of cases. Where a GPU can run them, nothing changes: every case is an item."""
    definition = metafunc.definition
    marks = list(definition.iter_markers("parametrize"))
    if not marks or definition.get_closest_marker("gpu") is None or not _why_no_gpu():
        return
    if any(m not in definition.own_markers for m in marks):  # a class or module parametrizes it: leave it whole
        return
    names, cases = [], 1
    for m in marks:
        argnames = m.args[0] if m.args else m.kwargs["argnames"]
        argvalues = m.args[1] if len(m.args) > 1 else m.kwargs["argvalues"]
        names += [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
        cases *= len(list(argvalues))
    definition.own_markers = [m for m in definition.own_markers if m.name != "parametrize"]
    metafunc.parametrize(names, [(None,) * len(names)], ids=[f"{cases}-cases"])
    _UNEXPANDED[definition.nodeid] = cases


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the xdist_group marks added here
def pytest_collection_modifyitems(config, items):
    reason = _why_no_gpu()
    if reason:
        for item in items:
            if "gpu" in item.keywords:
                cases = _UNEXPANDED.get(item.nodeid.split("[")[0])
                also = f" ({cases} parametrized cases, expanded only where a GPU runs them)" if cases else ""
                item.add_marker(pytest.mark.skip(reason=f"GPU test: {reason}{also}"))
    items.sort(key=lambda item: "slow" not in item.keywords)  # stable: otherwise in collection order


@pytest.fixture
def tmp_results(tmp_path, monkeypatch):
    """Point recording at a scratch file so tests never touch results/."""
    path = tmp_path / "results.json"
    monkeypatch.setenv("GEMM_LADDER_RESULTS", str(path))
    return path


def refusal(r, m: int, n: int, k: int) -> list[str] | None:
    """What validate() must say about M x N x K for rung r, worked out here from the rung's own constexprs: None
    where one of its tiles divides the shape, else the parts its one sentence must hold: the rung, the first
    dimension no tile divides with its value, the multiple it needs, the padded size, and the way out. A rung with
    tile choices (rung 10) needs the multiple of its most permissive tile; a ragged one (Rung.ragged) takes any M
    and needs only rows of whole 16-byte units."""
    from helpers.csource import apply_config, read_consts
    if r.ragged:  # any M; K (rows of A and Bt) and N (rows of C) in whole 16-byte units
        from helpers.formats import ITEMSIZE
        for dim, value, dtype in (("K", k, r.dtype), ("N", n, r.out_dtype)):
            step = 16 // ITEMSIZE[dtype]
            if value % step:
                return [f"{r.id} ", f"{dim}={value}", f"multiple of {step} ({dtype})", f"pad to {-(-value // step) * step}"]
        return None
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


@pytest.fixture
def book_results(monkeypatch):
    """The book's recorded run file (results.REFERENCE), whatever GEMM_LADDER_RESULTS says; no figure outlives the
    test. A figure module pins it for every test with `pytestmark = pytest.mark.usefixtures("book_results")`."""
    import matplotlib.pyplot as plt
    from helpers import results
    monkeypatch.setenv(results.RESULTS_ENV, str(results.RESULTS / results.REFERENCE / results.RUN_FILE))
    yield
    plt.close("all")
