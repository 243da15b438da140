"""The house rules of helpers/ (no import cycle, every import runs down the declared layers, no module grows past
500 lines) and behaviour no other file tests: the tile policy, the headers a kernel pulls in, obtain()'s reuse within
a run and its in-memory fallback, the bench's dry-queue sampler, and show_diff on config-built rungs. CPU only: the
GPU and CuPy are faked."""
import ast
import importlib
import json
import sys
from pathlib import Path

import pytest

from helpers.registry import MID_RATE, NARROW_RATE, ROOT, RUNGS, rung

HELPERS = ROOT / "helpers"
FINAL = "10_chip"


# ---- imports flow one way ----------------------------------------------------------------------------------------

def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """helpers module -> the helpers modules it imports, at module level or inside a function (a function-level
    import only defers the cycle to the first call). `from . import x` names the submodule x when there is one,
    else the package itself; `from .a import b` the module a (and a.b if b is a submodule of package a)."""
    paths = {_module_name(p): p for p in HELPERS.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{base}.{node.module}" if node.module else base
                else:
                    base = node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names]
            else:
                continue
            edges |= {t for t in targets if t in paths and t != name}
        graph[name] = edges
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path (first module repeated at the end), or None. Depth-first, three colours."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle_and_resolves_relative_imports(tmp_path, monkeypatch):
    # The check below can only pass if it can also fail: a tiny package with a cycle through a function-level
    # import (a -> b at module level, b -> a inside a function) and a `from . import` of a submodule.
    pkg = tmp_path / "helpers"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from . import b\n\ndef f():\n    return b\n")
    (pkg / "b.py").write_text("def g():\n    from .a import f\n    return f\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("from ..registry import x\nfrom .. import a\n")
    (pkg / "registry.py").write_text("x = 1\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "HELPERS", pkg)
    graph = _import_graph()
    assert graph == {"helpers": {"helpers.a"}, "helpers.a": {"helpers.b"}, "helpers.b": {"helpers.a"},
                     "helpers.sub": set(), "helpers.sub.c": {"helpers.registry", "helpers.a"},
                     "helpers.registry": set()}
    assert _cycle(graph) == ["helpers.a", "helpers.b", "helpers.a"]
    assert _cycle({**graph, "helpers.b": set()}) is None


def test_helpers_have_no_import_cycle():
    graph = _import_graph()
    assert {"helpers.registry", "helpers.ladder", "helpers.timing", "helpers.tiles"} <= set(graph)
    assert graph["helpers.registry"] == set()  # the leaf every other module imports
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


# ---- the layers: every import runs down (README.md, "How a rung becomes a plotted number", lists the same) ---------

# Lowest first. A module imports from its own layer or the layers before it, never from a later one. Names are
# relative to helpers/; "figures" places the package and every module in it; "__init__" is the package helpers.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("data", ("registry", "formats", "hardware")),                      # leaves: what every layer reads
    ("source", ("csource", "facts")),                                     # the kernels' C text, no compile
    ("build", ("compiler",)),                                             # NVRTC, ptxas, SASS
    ("run", ("gpu", "tma", "kernel", "pdl", "tiles", "launch")),          # the device, a kernel, one launch
    ("measure", ("correctness", "cublas", "timing", "probes", "ncu", "sites")),  # check, time, profile a launch
    ("store", ("results", "store")),                                      # the results file and obtain()
    ("models", ("models", "fp8")),                                        # CPU models the chapters teach with
    ("text", ("tables", "status", "listing", "prose")),                   # what a reader reads: tables, banner, code, sentences
    ("rows", ("ladder", "ceilings", "demos", "profile", "numba_simt", "timeline")),  # the verbs that give numbers
    ("pictures", ("plot", "figures", "explore", "exercises", "ptxas_exercises", "kernel_exercises",
                  "playground")),  # plots, figures, widgets
    ("entry", ("__init__", "__main__")),                                  # the package's verbs and the CLI
)
EXPECTED: set[str] = set()  # names placed before the module exists (a change under way adds it); normally empty


def _layer_index(layers) -> dict[str, int]:
    return {name: i for i, (_, names) in enumerate(layers) for name in names}


def _placed(module: str, index: dict[str, int]) -> int | None:
    """The layer of a helpers module: its own entry, else its package's (helpers.figures.ch01 -> figures)."""
    rel = "__init__" if module == "helpers" else module.removeprefix("helpers.")
    while rel:
        if rel in index:
            return index[rel]
        rel = rel.rpartition(".")[0]
    return None


def _violations(graph: dict[str, set[str]], layers) -> tuple[list[str], list[str]]:
    """(modules no layer places, imports that run up a layer as 'a (layer) imports b (later layer)')."""
    index = _layer_index(layers)
    where = {m: _placed(m, index) for m in graph}
    unplaced = sorted(m for m, i in where.items() if i is None)
    upward = sorted(f"{m} ({layers[where[m]][0]}) imports {t} ({layers[where[t]][0]})"
                    for m, targets in graph.items() for t in targets
                    if where[m] is not None and where[t] is not None and where[t] > where[m])
    return unplaced, upward


def test_the_layers_check_finds_an_upward_import_and_an_unplaced_module(tmp_path, monkeypatch):
    # The check below can only pass if it can also fail: an import that runs up from inside a function, a
    # subpackage placed by its package's name, and a module nobody placed.
    pkg = tmp_path / "helpers"
    (pkg / "pics").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .low import x\n")
    (pkg / "low.py").write_text("x = 1\n\ndef f():\n    from .pics.draw import g\n    return g\n")
    (pkg / "pics" / "__init__.py").write_text("")
    (pkg / "pics" / "draw.py").write_text("from ..low import x\n\ndef g():\n    return x\n")
    (pkg / "stray.py").write_text("from . import low\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "HELPERS", pkg)
    layers = (("base", ("low",)), ("top", ("pics", "__init__")))
    unplaced, upward = _violations(_import_graph(), layers)
    assert unplaced == ["helpers.stray"]
    assert upward == ["helpers.low (base) imports helpers.pics.draw (top)"]
    assert _violations(_import_graph(), (("base", ("low", "pics", "stray")), ("top", ("__init__",)))) == ([], [])


def test_every_helpers_module_has_a_layer_and_imports_only_down():
    unplaced, upward = _violations(_import_graph(), LAYERS)
    assert not unplaced, (f"{', '.join(unplaced)} has no layer: place it in LAYERS (tests/test_house.py) and in "
                          f"README.md's list of layers")
    assert not upward, "imports that run up a layer:\n" + "\n".join(upward)


def test_the_layers_name_modules_that_exist_once_each():
    names = [name for _, names in LAYERS for name in names]
    assert len(names) == len(set(names))
    existing = {"__init__" if m == "helpers" else m.removeprefix("helpers.") for m in _import_graph()}
    assert set(names) - existing == EXPECTED, "LAYERS names a module that is not in helpers/"


def test_the_readme_lists_the_same_layers():
    # README.md's "How a rung becomes a plotted number": one numbered item per layer, "N. **layer**: **`module`**,
    # ...", in LAYERS' order, naming the same modules.
    import re
    text = (ROOT / "README.md").read_text().split("## How a rung becomes a plotted number", 1)[1].split("\n## ", 1)[0]
    items = re.findall(r"^\d+\. \*\*(\w+)\*\*:(.*?)(?=^\d+\. |\Z)", text, re.M | re.S)
    listed = [(layer, tuple(n.removeprefix("helpers/").removesuffix(".py").rstrip("/")
                            for n in re.findall(r"\*\*`([\w/.]+)`\*\*", body))) for layer, body in items]
    assert listed == list(LAYERS)


def test_no_helpers_module_exceeds_500_lines():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in HELPERS.rglob("*.py")}
    assert {p: n for p, n in sizes.items() if n > 500} == {}


# ---- the experiments wing: each experiment a folder of its own, which helpers/ never names -----------------------

EXPERIMENTS = ROOT / "experiments"


def _experiments() -> list[str]:
    return sorted(p.name for p in EXPERIMENTS.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def test_every_experiment_has_a_readme_and_a_record_and_the_wing_lists_it():
    names = _experiments()
    assert {"pingpong", "splitk", "clusters", "ladder_orders", "fp8_promoted", "bf16_stores"} <= set(names)
    listed = (EXPERIMENTS / "README.md").read_text()
    for name in names:
        assert (EXPERIMENTS / name / "README.md").is_file(), f"experiments/{name} has no README.md"
        assert json.loads((EXPERIMENTS / name / "record.json").read_text()), f"experiments/{name}'s record is empty"
        assert f"[{name}]({name}/)" in listed, f"experiments/README.md does not list {name}"
    assert not [p.name for p in (ROOT / "results").glob("*.log")]  # the experiments' logs are their JSON records


def _names_an_experiment(path: Path, names: list[str]) -> list[str]:
    """Where a helpers module names an experiment: in its code (not its comments or docstrings), an import of
    experiments, a string holding an experiment's folder, record or runner, or a public definition named after one
    (pingpong_table, CLUSTERS_RECORD, fig_pingpong_trace); anywhere in its text, a record moved out of results/ or a
    runner no longer in ci/. A docstring may cite `experiments/<name>` as the source of a measured rule."""
    import re
    text = path.read_text()
    tree = ast.parse(text, str(path))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    either = "|".join(names)
    in_code = re.compile(rf"experiments[/.]|\b({either})\.(json|log|py)\b")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "experiments"]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "experiments":
            found.append(node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found += [node.value[:60] for _ in in_code.finditer(node.value)][:1]
    defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    defined += [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    found += [d for d in defined if re.match(rf"(fig_)?({either})(_|$)", d.lower())]
    found += [m.group(0) for m in re.finditer(rf"results/({either})\.json|results/\w+\.log|ci/({either})\.py", text)
              if not (m.group(0).startswith("ci/") and (ROOT / m.group(0)).exists())]
    return found


def test_no_helpers_module_names_an_experiment(tmp_path):
    names = _experiments()
    named = {str(p.relative_to(ROOT)): found for p in sorted(HELPERS.rglob("*.py"))
             if (found := _names_an_experiment(p, names))}
    assert named == {}
    # the check can fail: each way of naming one is seen, and a docstring's citation of the folder is not
    bad = tmp_path / "bad.py"
    bad.write_text('"""Measured in experiments/splitk."""\nfrom experiments.splitk import table\n'
                   'RECORD = "experiments/clusters/record.json"\n\n\ndef pingpong_table():\n    """experiments/x."""\n'
                   '    # the record was results/splitk.json\n')
    assert _names_an_experiment(bad, names) == ["experiments.splitk", "experiments/clusters/record.json",
                                                "pingpong_table", "results/splitk.json"]


# ---- the tile policy (helpers.tiles) -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def clusters():
    """Rung 10's persistent grid on the recorded H100: 66 clusters of 2 (132 SMs)."""
    from helpers import results
    return results.load(results.path_for())["grids"][FINAL]["clusters"]


def test_tile_candidates_are_the_rungs_own_tile_then_its_choices():
    # Rows are what M must divide into: a cluster tile (CLUSTER_BM = BM x CLUSTER), read here from the .cu.
    from helpers.csource import read_consts
    from helpers.tiles import tile_candidates
    c = read_consts(rung(FINAL).path.read_text())
    rows = c["BM"] * c["CLUSTER"]
    assert rows == c["CLUSTER_BM"] == 256
    assert tile_candidates(rung(FINAL)) == [({}, rows, 256, 1.0), ({"BN": 192, "WGMMA_N": 192}, rows, 192, MID_RATE),
                                             ({"BN": 128, "WGMMA_N": 128}, rows, 128, NARROW_RATE)]


@pytest.mark.parametrize("n, picked, costs", [
    # cost = busiest cluster's tiles x tile area / 256 x 256 / steady rate, worked out by hand for 66 clusters:
    # 3072: 144 tiles of 256 -> 3 each; 192 tiles of 192 -> 3 x 0.75 / 0.97; 288 tiles of 128 -> 5 x 0.5 / 0.87
    (3072, (256, 192), {256: 3.0, 192: 3 * 0.75 / MID_RATE, 128: 5 * 0.5 / NARROW_RATE}),
    # 4096 and 8192: 192 does not divide N; 256 x 256 fills its waves better than the narrow tile pays back
    (4096, (256, 256), {256: 4.0, 128: 8 * 0.5 / NARROW_RATE}),
    (8192, (256, 256), {256: 16.0, 128: 32 * 0.5 / NARROW_RATE}),
])
def test_choose_tile_prices_each_tile_on_the_wave_napkin(clusters, n, picked, costs):
    from helpers.tiles import choose_tile
    assert clusters == 66
    rows = choose_tile(rung(FINAL), n, n, n, clusters)
    assert {row["tile"][1]: row["cost"] for row in rows} == pytest.approx(costs)
    assert [row["tile"] for row in rows if row["picked"]] == [picked]
    assert all(row["workers"] == clusters and row["tiles"] == (n // 256) * (n // row["tile"][1]) for row in rows)


def test_a_shape_no_tile_divides_gets_a_tile_only_where_the_kernel_is_ragged(clusters):
    from helpers.tiles import choose_tile, pick_tile, tile_candidates
    # N = 4160 = 16 x 256 + 64: no multiple of 256, 192 or 128, but of 8 (whole 16-byte rows of bf16 C).
    # K = 4100: no multiple of 8, so no row of A is.
    assert rung(FINAL).ragged
    assert pick_tile(4096, 4160, tile_candidates(rung(FINAL)), clusters) == []
    rows = choose_tile(rung(FINAL), 4096, 4160, 4096, clusters)
    assert [row["tile"] for row in rows] == [(256, 256), (256, 192), (256, 128)] and sum(r["picked"] for r in rows) == 1
    assert [row["tiles"] for row in rows] == [16 * 17, 16 * 22, 16 * 33]  # edge tiles counted whole
    assert choose_tile(rung(FINAL), 4096, 4096, 4100, clusters) == []
    # a shape some tile divides keeps that tile's pick, ragged or not: the narrower tiles do not enter
    assert [row["tile"] for row in choose_tile(rung(FINAL), 4096, 4096, 4096, clusters)] == [(256, 256), (256, 128)]


def test_pick_tile_breaks_a_tie_for_the_first_candidate():
    from helpers.tiles import pick_tile
    # 128 x 384 on 3 workers: three 128 x 128 tiles, one each, or one 128 x 384 tile of three times the area at three
    # times the rate: the same cost. With this rate the wide one computes 0.9999999999999999 against the square
    # one's 1.0; the tie still goes to whichever is listed first.
    square, wide = ({"a": 1}, 128, 128, 1.0), ({"b": 1}, 128, 384, (0.1 + 0.2) * 10)
    for first, second in ((square, wide), (wide, square)):
        rows = pick_tile(128, 384, [first, second], 3)
        assert rows[0]["cost"] == pytest.approx(rows[1]["cost"], rel=1e-12)  # in units of the first one's area
        assert [r["picked"] for r in rows] == [True, False] and rows[0]["config"] == first[0]
    # and a strictly cheaper later candidate still wins
    rows = pick_tile(128, 384, [square, ({"c": 1}, 128, 384, 6.0)], 3)
    assert [r["picked"] for r in rows] == [False, True]



# ---- one pass through a launch: facts, tile choice, the one build, its geometry (helpers.launch) -----------------

def _persistent_builds():
    """(rung, overrides) of every build a persistent or tile-list launch may use: the rung's own, each tile choice,
    and each of those as clusters of one where the rung has solo_clusters (with its epilogue stored first: OVERLAP
    = 0, where the rung's build stores some of it under the next tile)."""
    for r in RUNGS:
        if r.grid in ("persistent", "tile_list"):
            for overrides in ({}, *(o for o, _ in r.tile_choices)):
                yield r, overrides
                if r.solo_clusters:
                    yield r, {**overrides, "CLUSTER": 1, **({"OVERLAP": 0} if r.config.get("OVERLAP") else {})}


@pytest.mark.parametrize("r, overrides", list(_persistent_builds()), ids=lambda x: getattr(x, "id", str(x)))
def test_the_main_rungs_geometry_is_the_contracts_default(r, overrides, monkeypatch):
    """The main rungs declare none of the optional geometry constexprs (helpers.kernel's docstring), and their
    defaults give what the launch gave before the contract: one unit of work per cluster tile of BM x CLUSTER rows
    and BN columns, a persistent grid of min(resident clusters, units) clusters, and TMA boxes of BM rows of A and
    B_BOX_ROWS rows of Bt (BN / CLUSTER: each CTA of a pair fetches half the shared B tile). The resident-cluster
    count (the driver's, which needs the GPU) is faked; the build is compiled on the CPU."""
    from helpers.kernel import variant
    kern = variant(r, overrides)
    c = kern.consts
    assert not {"UNIT_M", "UNIT_N", "UNITS_PER_TILE", "A_BOX_ROWS"} & set(c)
    bm, bn, cluster = c["BM"], c["BN"], c.get("CLUSTER", 1)
    assert kern.boxes == (bm, bn // cluster, c["BK"]) and c["B_BOX_ROWS"] == bn // cluster
    for resident in (60, 66, 132):
        monkeypatch.setattr(kern, "_resident", resident)
        for m, n in ((1024, 1024), (2048, 4096), (4096, 4096), (8192, 8192), (8192, 3072)):
            units = -(-m // (bm * cluster)) * -(-n // bn)  # edge tiles are units too
            workers = units if r.grid == "tile_list" else min(resident, units)
            assert kern.geometry(m, n) == ((workers * cluster, 1, 1), (c["THREADS"], 1, 1), c["SMEM_BYTES"])
    if r.id == FINAL and not overrides:  # the numbers themselves, for the final rung on the recorded H100's 66
        monkeypatch.setattr(kern, "_resident", 66)
        assert [kern.geometry(n, n)[0][0] for n in (1024, 2048, 4096, 8192)] == [32, 128, 132, 132]
        assert kern.boxes == (128, 128, 64)


@pytest.mark.parametrize("n, tile, cluster", [(1024, (128, 128), 1), (2048, (128, 256), 1), (3072, (128, 192), 2),
                                              (4096, (128, 256), 2), (6144, (128, 256), 2), (8192, (128, 256), 2)])
def test_prepare_picks_from_facts_then_builds_the_one_variant(n, tile, cluster, monkeypatch):
    """prepare on a faked H100 (132 SMs, 66 resident pairs): the tile the wave napkin picks, clusters of one where no
    CTA gets a second tile, and the resident-cluster count asked of the rung's own build for the choice and of the
    launched build for its grid, nothing else."""
    from helpers import launch
    from helpers.kernel import Kernel
    asked = []

    def resident(self):
        asked.append((self.source is None, self.consts.get("CLUSTER")))
        return 66 if self.consts.get("CLUSTER") == 2 else 132
    monkeypatch.setattr(launch, "require_live", lambda *a, **k: type("H100", (), {"sms": 132})())
    monkeypatch.setattr(Kernel, "resident_clusters", resident)
    monkeypatch.setattr(Kernel, "function", lambda self: None)
    lau = launch.prepare(FINAL, n)
    assert (lau.kernel.tile, lau.kernel.consts["CLUSTER"]) == (tile, cluster)
    own_picked = tile == (128, 256) and cluster == 2
    assert asked == [(True, 2)] + ([(True, 2)] if own_picked else [(False, cluster)])


def test_the_tile_policy_reads_facts_not_builds():
    """helpers.tiles chooses from the sources' constants (helpers.facts): it imports no kernel, so choosing builds
    nothing, and the facts it reads are the constants the build reports."""
    from helpers.facts import facts, variant_source
    from helpers.kernel import variant
    assert "helpers.kernel" not in _import_graph()["helpers.tiles"]
    r = rung(FINAL)
    for overrides in ({}, *(o for o, _ in r.tile_choices), {"CLUSTER": 1}):
        assert facts(r, variant_source(r, overrides)).consts == variant(r, overrides).consts

# ---- the headers a kernel pulls from kernels/ (helpers.csource.local_headers) --------------------------------------

def test_local_headers_follow_nested_includes_and_skip_system_headers(tmp_path, monkeypatch):
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "a.cuh").write_text('#pragma once\n#include <cuda_bf16.h>\n#include "common/b.cuh"\n')
    (tmp_path / "common" / "b.cuh").write_text('  #include "common/c.cuh"  // indented, commented\n')
    (tmp_path / "common" / "c.cuh").write_text('#include "common/a.cuh"\n')  # a cycle must end
    (tmp_path / "common" / "unused.cuh").write_text("int never_included;\n")
    monkeypatch.setattr(importlib.import_module("helpers.csource"), "KERNELS", tmp_path)  # the module, not source()
    from helpers.csource import local_headers
    source = ('#include <cuda_bf16.h>\n#include <mma.h>\n#include "common/a.cuh"\n#include "not_in_kernels.h"\n'
              '// #include "common/unused.cuh" is a comment, not an include\n')
    got = local_headers(source)
    assert got == {name: (tmp_path / name).read_text() for name in ("common/a.cuh", "common/b.cuh", "common/c.cuh")}
    assert local_headers("#include <cuda.h>\n") == {}


def test_local_headers_of_a_real_rung_include_the_nested_ones():
    # 07_tma.cu includes common/mbarrier.cuh, which includes common/globaltimer.cuh (not named by the rung).
    from helpers.csource import local_headers
    src = rung("07_tma").path.read_text()
    got = local_headers(src)
    assert "common/globaltimer.cuh" in got and '"common/globaltimer.cuh"' not in src
    assert set(got) == {"common/mbarrier.cuh", "common/globaltimer.cuh", "common/smem.cuh", "common/tma.cuh",
                        "common/wgmma.cuh"}


# ---- obtain(): one measurement per run, kept in memory when it cannot be written ---------------------------------

H100 = dict(name="NVIDIA H100 80GB HBM3", cc=(9, 0), sms=132, l2_bytes=50 << 20, smem_optin_bytes=227 << 10,
            sm_clock_max_mhz=1980, mem_clock_max_mhz=2619, driver="580", cuda_driver_api="13.0",
            cuda_runtime="13.0", cupy="14.2.0", nvrtc="13.0")


@pytest.fixture
def live_h100(tmp_results, monkeypatch):
    """A faked live H100 (no CuPy call is made: obtain() only asks for the device and its environment), a scratch
    results file, a fixed run id, and obtain()'s in-memory store emptied."""
    from helpers import gpu, store
    dev = gpu.Device(**H100)
    monkeypatch.delenv("GEMM_LADDER_REPLAY", raising=False)
    monkeypatch.setattr(gpu, "device", lambda: dev)
    monkeypatch.setattr(store, "device", lambda: dev)
    monkeypatch.setattr(store, "_MEMORY", {})
    monkeypatch.setenv("GEMM_LADDER_RUN", "run-A")
    store.run_id.cache_clear()  # run_id() is cached per process
    yield tmp_results
    store.run_id.cache_clear()


class _Counting:
    """A measurement: returns a new number each call and counts the calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self) -> dict:
        self.calls += 1
        return {"value": 100.0 + self.calls}


def test_obtain_measures_once_per_run_and_reuses_it(live_h100, monkeypatch):
    from helpers import results, store
    how = _Counting()
    first, source = store.obtain("demos", "x@1", how)
    assert source == "live" and how.calls == 1 and first["value"] == 101.0 and first["run"] == "run-A"
    on_disk = json.loads(live_h100.read_text())["demos"]["x@1"]
    assert on_disk["value"] == 101.0 and on_disk["run"] == "run-A" and on_disk["env"]["name"] == H100["name"]
    again, source = store.obtain("demos", "x@1", how)  # same process: from memory
    assert (source, how.calls, again["value"]) == ("this run", 1, 101.0)
    monkeypatch.setattr(store, "_MEMORY", {})  # another process of the same run (the next chapter): from the file
    again, source = store.obtain("demos", "x@1", how)
    assert (source, how.calls, again["value"]) == ("this run", 1, 101.0) and "env" not in again
    monkeypatch.setenv("GEMM_LADDER_RUN", "run-B")  # a new run measures again, and records over the old entry
    store.run_id.cache_clear()
    newer, source = store.obtain("demos", "x@1", how)
    assert (source, how.calls, newer["value"], newer["run"]) == ("live", 2, 102.0, "run-B")
    assert json.loads(live_h100.read_text())["demos"]["x@1"]["run"] == "run-B"


def test_obtain_keeps_an_unwritable_measurement_in_memory_with_a_warning(live_h100, monkeypatch, capsys):
    from helpers import results, store

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(results, "record", full_disk)
    how = _Counting()
    entry, source = store.obtain("demos", "y@1", how)
    assert (source, how.calls, entry["value"]) == ("live", 1, 101.0) and not live_h100.exists()
    err = capsys.readouterr().err
    assert "warning: demos y@1 was measured but could not be written to" in err and "No space left" in err
    assert "kept in memory for this session only" in err
    again, source = store.obtain("demos", "y@1", how)  # reused, not measured again, and no second warning
    assert (source, how.calls, again["value"]) == ("this run", 1, 101.0) and capsys.readouterr().err == ""


def test_obtain_refuses_a_broken_results_file_before_measuring(live_h100):
    from helpers import results, store
    live_h100.write_text("[1, 2")
    how = _Counting()
    with pytest.raises(results.ResultsError, match="not valid JSON"):
        store.obtain("demos", "z@1", how)
    assert how.calls == 0 and live_h100.read_text() == "[1, 2"


# ---- the dry-queue sampler (helpers.timing._Sampler) ---------------------------------------------------------------

class _FakeGPU:
    """Just enough of CuPy for _Sampler, on a simulated clock: the host's time advances by what each queued launch
    costs it (and by its sleeps); the GPU runs queued work in order, each item no earlier than it was queued. An
    event is done once the host's clock has passed the moment the GPU reached it."""

    def __init__(self, kernel_ns: float, host_ns_per_launch):
        self.now = 0.0
        self.gpu_free = 0.0
        self.kernel_ns = kernel_ns
        self.host_ns = host_ns_per_launch  # a number, or a function of the attempt (0, 1, ...)
        self.spins: list[int] = []
        gpu = self

        class Event:
            def __init__(self):
                self.at = None

            def record(self):
                gpu.gpu_free = self.at = max(gpu.gpu_free, gpu.now)

            @property
            def done(self):
                return self.at is not None and gpu.now >= self.at

            def synchronize(self):
                gpu.now = max(gpu.now, self.at)

        self.cuda = type("cuda", (), {"Event": Event,
                                      "get_elapsed_time": staticmethod(lambda a, b: (b.at - a.at) / 1e6)})
        self.time = type("time", (), {"perf_counter": staticmethod(lambda: gpu.now / 1e9),
                                      "sleep": staticmethod(lambda s: setattr(gpu, "now", gpu.now + s * 1e9))})

    def spin(self, grid, block, args):
        (ns,) = args
        self.spins.append(int(ns))
        self.gpu_free = max(self.gpu_free, self.now) + int(ns)

    def enqueue(self):
        cost = self.host_ns(len(self.spins) - 1) if callable(self.host_ns) else self.host_ns
        self.now += cost
        self.gpu_free = max(self.gpu_free, self.now) + self.kernel_ns


@pytest.fixture
def sampler(monkeypatch):
    """_Sampler with CuPy, the spin kernel, NVML and the clock replaced by a _FakeGPU (make(...) builds one)."""
    bench = importlib.import_module("helpers.timing")  # the module: `from helpers import bench` is the function

    def make(kernel_ns, host_ns_per_launch, nvml=None):
        gpu = _FakeGPU(kernel_ns, host_ns_per_launch)
        monkeypatch.setattr(bench, "_spin", lambda: gpu.spin)
        monkeypatch.setattr(bench, "time", gpu.time)
        monkeypatch.setattr(bench, "sample_clock_power", nvml or (lambda: (1755.0, 690.0)))
        s = bench._Sampler.__new__(bench._Sampler)  # __init__ only imports CuPy and sets the first spin
        s.cp, s.spin_ns = gpu, 200_000
        return s, gpu
    return make


def test_a_batch_queued_behind_the_spin_is_timed_once(sampler):
    # 8 launches at 10 us of host time each (80 us) behind a 200 us spin: the queue never runs dry.
    s, gpu = sampler(kernel_ns=50_000, host_ns_per_launch=10_000)
    samples, host = [], []
    ms = s.batch_ms(gpu.enqueue, 8, samples, host)
    assert ms == pytest.approx(8 * 0.050)          # the GPU's time only: 8 kernels of 50 us
    assert gpu.spins == [200_000] and host == [pytest.approx(10.0)]  # host us per launch, stated apart
    assert s.spin_ns == 2 * 80_000 + 100_000       # the next spin covers twice this batch's queueing, plus 100 us
    assert samples and all(x == (1755.0, 690.0) for x in samples)  # NVML read while the batch ran


def test_a_dry_queue_is_sampled_again_behind_a_longer_spin(sampler):
    # 8 launches at 100 us of host time each (800 us) outlast the 200 us spin: the start event fires before the
    # batch is queued, so host time would land between the events. That sample is dropped, the spin grows to
    # twice the host's queueing time plus 100 us, and the retaken sample is covered.
    s, gpu = sampler(kernel_ns=50_000, host_ns_per_launch=100_000)
    host = []
    ms = s.batch_ms(gpu.enqueue, 8, [], host)
    assert gpu.spins == [200_000, 2 * 800_000 + 100_000]
    assert ms == pytest.approx(8 * 0.050) and host == [pytest.approx(100.0)]  # only the covered sample counts
    assert s.spin_ns == 1_700_000                  # and the next batch starts behind the longer spin
    s.batch_ms(gpu.enqueue, 8)
    assert gpu.spins[-1] == 1_700_000 and len(gpu.spins) == 3


def test_a_queue_that_keeps_running_dry_is_refused_in_one_sentence(sampler):
    # Host time per launch that triples with every attempt outruns any spin sized from the attempt before.
    s, gpu = sampler(kernel_ns=50_000, host_ns_per_launch=lambda attempt: 100_000 * 3**attempt)
    with pytest.raises(RuntimeError, match="could not queue a batch faster than the GPU ran it"):
        s.batch_ms(gpu.enqueue, 8)
    assert len(gpu.spins) == 6 and gpu.spins == sorted(gpu.spins)


# ---- show_diff on config-built rungs (helpers.listing) ------------------------------------------------------------

def _diff(capsys, before: str, after: str) -> list[str]:
    from helpers import listing
    listing.show_diff(before, after)  # no IPython kernel here: it prints the plain diff
    return capsys.readouterr().out.splitlines()


def test_show_diff_diffs_the_sources_each_rung_builds(capsys):
    # 06_wgmma_wide is 06_wgmma.cu with WGMMA_N = 256, BN = 256, STAGES = 3; the raw file says 64, 128 and 4. The
    # lesson of rung 07 is TMA, not a wider wgmma: the diff must show the constants 06_wgmma_wide runs with.
    lines = _diff(capsys, "06_wgmma_wide", "07_tma")
    assert lines[0].startswith("--- kernels/06_wgmma.cu") and "WGMMA_N=256" in lines[0]
    assert lines[1].startswith("+++ kernels/07_tma.cu")
    removed = [x for x in lines[2:] if x.startswith("-")]
    assert not any("WGMMA_N = 64" in x or "STAGES = 4" in x or "BN = 128" in x for x in removed), removed
    wgmma_n = [x for x in lines[2:] if "constexpr int WGMMA_N =" in x]
    assert all(x.startswith(" ") and "WGMMA_N = 256;" in x for x in wgmma_n), wgmma_n  # unchanged, if shown at all
    # both rungs run a 3-stage ring: with the config applied the STAGES lines are the same text, not a change
    assert not any("constexpr int STAGES" in x for x in lines[2:] if x[:1] in "+-"), lines


def test_show_diff_shows_an_unchanged_constexpr_as_context(capsys):
    # With the config applied the two WGMMA_N lines are the same text, so the line is not a change: it is absent
    # from the diff or shown as context. Against the raw 06_wgmma.cu (WGMMA_N = 64) it would be a change.
    lines = _diff(capsys, "06_wgmma_wide", "07_tma")
    assert not any(x[:1] in "+-" and "constexpr int WGMMA_N" in x for x in lines[2:]), lines
    from helpers.registry import rung
    assert "constexpr int WGMMA_N = 64;" in rung("06_wgmma_wide").path.read_text()


def test_a_tile_list_is_one_block_per_tile_on_a_1d_grid_and_needs_no_gpu():
    # 10_bf16_c_per_tile runs chapter 10's kernel unpersisted: its loop over tiles (stride gridDim.x) then runs once
    # per block
    from helpers.kernel import kernel
    k = kernel("10_bf16_c_per_tile")
    assert k.tile == (128, 256) and k.consts["CLUSTER"] == 1
    assert k.geometry(4096, 8192)[0] == (4096 // 128 * (8192 // 256), 1, 1)
    assert k.geometry(256, 512)[0] == (4, 1, 1)


@pytest.mark.parametrize("n, tile, sms, alone", [
    (2048, (128, 256), 132, True),    # 16 x 8 = 128 CTA tiles: none takes a second
    (1024, (128, 128), 132, True),    # 64
    (3072, (128, 192), 132, False),   # 24 x 16 = 384
    (4096, (128, 256), 132, False),   # 512: pairs share B across four tiles each
    (2048, (128, 128), 132, False),   # 256
])
def test_clusters_of_one_where_no_cta_takes_a_second_tile(n, tile, sms, alone):
    from helpers.tiles import solo
    assert solo(n, n, *tile, sms) is alone
    launched = (FINAL, "10_pdl", "10_overlap", "12_fp8")
    assert all(rung(x).solo_clusters for x in launched)
    assert not any(r.solo_clusters for r in RUNGS if r.id not in launched)


def test_resolve_switches_keeps_the_branch_the_compiler_keeps():
    # Chapter 10's rungs are switches of one file: a rung's diff shows the branch its constants select. A chain of
    # if constexpr / else if constexpr / else resolves to one body, one level out; a braceless branch and a condition
    # on anything but the file's constants stay as written.
    from helpers.csource import resolve_switches
    src = ("constexpr int MODE = 1;\n"
           "void f(int t) {\n"
           "    if constexpr (MODE == 0) {\n        a();\n    } else if constexpr (MODE == 1) {\n        b();  // why\n"
           "#pragma unroll\n        c();\n    } else {\n        d();\n    }\n"
           "    if constexpr (MODE > 1 && MODE < 4) {\n        e();\n    }\n"
           "    if constexpr (MODE) g(); else h();\n"
           "    if constexpr (sizeof(int) == t) {\n        k();\n    }\n"
           "}\n")
    out = resolve_switches(src)
    assert "    b();  // why\n#pragma unroll\n    c();\n" in out
    assert not any(x in out for x in ("a();", "d();", "e();", "MODE == 0", "MODE > 1"))
    assert "    if constexpr (MODE) g(); else h();\n" in out and "if constexpr (sizeof(int) == t) {" in out
    from helpers.registry import rung
    from helpers.csource import built_source
    built = built_source(rung("10_persistent"))[1]  # C_BF16 = 0, CLUSTER = 1, EPILOGUE = 0: no multicast, no TMA store
    assert "tma_load_2d_multicast(" not in built and "tma_store_2d(" not in built and "if constexpr (" not in built
    assert "tma_load_2d(sB, &tmB" in built and "store_accumulators<WGMMA_N>(" in built
    assert "store_accumulators_paired" not in built
    assert "store_accumulators_paired<WGMMA_N>(" in built_source(rung("10_bf16_c"))[1]


def test_ragged_rungs_refuse_only_rows_that_tma_cannot_step_in_one_sentence():
    """A ragged rung takes any M and any N, K whose rows are whole 16-byte units; anything else is refused before a
    launch, naming the dimension, its value, the multiple and the padded size. The other rungs keep their tiles' rule."""
    from helpers import ShapeError
    from helpers.launch import takes, validate
    assert [r.id for r in RUNGS if r.ragged] == ["10_chip", "10_pdl", "10_overlap", "12_fp8", "12_fp8_promoted"]
    for shape in ((1, 8, 8), (127, 4096, 4096), (4095, 4104, 4104), (255, 264, 208)):
        assert takes(rung("10_chip"), *shape), shape
    assert takes(rung("12_fp8"), 4095, 4104, 4112) and not takes(rung("12_fp8"), 4095, 4104, 4104)
    cases = (("10_chip", (4096, 4100, 4096), ("N=4100", "multiple of 8 (bf16)", "pad to 4104")),
             ("10_chip", (4096, 4096, 4100), ("K=4100", "multiple of 8 (bf16)", "pad to 4104")),
             ("12_fp8", (4096, 4096, 4104), ("K=4104", "multiple of 16 (e4m3)", "pad to 4112")),
             ("12_fp8", (4096, 4100, 4096), ("N=4100", "multiple of 8 (bf16)", "pad to 4104")))
    for rid, shape, parts in cases:
        with pytest.raises(ShapeError) as e:
            validate(rung(rid), *shape)
        assert str(e.value).startswith(rid) and all(p in str(e.value) for p in parts), str(e.value)
    assert not takes(rung("10_grouped_order"), 4095, 4096, 4096)  # an ablation of the same file keeps the tile rule
