"""CPU-side unit tests of the helpers: registry, shape refusal, results file, replay, CLI."""
import ast
import json
import multiprocessing as mp
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from helpers import RUNGS, ShapeError, build, intensity, rung, sass_claims
from helpers import results
from helpers.correctness import CheckResult
from helpers.launch import validate
from helpers.registry import ROOT

from conftest import refusal


def test_registry_ids_and_files():
    ids = [r.id for r in RUNGS]
    assert len(ids) == len(set(ids))
    for r in RUNGS:
        assert r.id[:2].isdigit() and r.id[2] == "_", r.id
        assert r.path.exists(), r.path
        assert f'extern "C" __global__' in r.path.read_text() and r.entry in r.path.read_text()
    with pytest.raises(KeyError, match="01_naive"):
        rung("01_nope")


def test_every_rung_header_names_its_rung():
    for r in RUNGS:
        assert r.path.read_text().startswith(f"// Rung {r.file or r.id}:"), r.id


@pytest.mark.parametrize("rid", ["01_warptiled", "02_wmma_naive", "10_chip", "12_fp8"])
@pytest.mark.parametrize("shape", [(4097, 4096, 4096), (4096, 100, 4096), (128, 128, 12), (256, 576, 64),
                                   (512, 512, 128)])
def test_tiled_rungs_refuse_shapes_before_launch(rid, shape):
    # One sentence, before anything runs: the rung, the dimension and its size, the multiple it needs, the padded
    # size and the way out (conftest.refusal works them out from the constexprs). A shape one of the rung's tiles
    # divides passes: N = 576 is 3 x 192, so rung 10 takes it with its 128 x 192 tile while the others refuse it.
    r = rung(rid)
    want = refusal(r, *shape)
    if want is None:
        validate(r, *shape)
        return
    with pytest.raises(ShapeError) as refused:
        validate(r, *shape)
    assert all(part in str(refused.value) for part in want), (want, str(refused.value))


def test_untiled_rungs_accept_any_shape():
    validate(rung("01_naive"), 4097, 3, 1)
    with pytest.raises(ShapeError, match="positive"):
        validate(rung("01_naive"), 0, 3, 1)
    with pytest.raises(ShapeError, match="2\\^31"):
        validate(rung("01_naive"), 1 << 16, 1 << 16, 8)


def test_check_result_never_passes_nan():
    assert not CheckResult("x", 1, 1, 1, float("nan"), 1e-4, True).ok  # NaN compares false both ways
    assert not CheckResult("x", 1, 1, 1, float("inf"), 1e-4, False).ok
    assert not CheckResult("x", 1, 1, 1, 1e-6, 1e-4, False).ok
    assert not CheckResult("x", 1, 1, 1, 2e-4, 1e-4, True).ok
    assert CheckResult("x", 1, 1, 1, 1e-6, 1e-4, True).ok


def test_intensity_grows_with_the_tile():
    assert intensity(rung("01_naive")) == pytest.approx(0.25)           # 2 FLOP / (2 * 4 bytes)
    assert intensity(rung("01_smem_tiled")) == pytest.approx(8.0)       # 2*32*32 / (4*64)
    assert intensity(rung("01_warptiled")) == pytest.approx(32.0)       # 2*128*128 / (4*256)
    assert intensity(rung("02_wmma_naive")) == pytest.approx(8.0)       # bf16 16x16 fragments: 2*16*16 / (2*32)


def test_registry_depends_on_no_other_helpers_module():
    # registry.py is pure data that every other helper imports: any import back into helpers makes a cycle.
    tree = ast.parse((ROOT / "helpers" / "registry.py").read_text())
    names = [(n.level, n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    names += [(0, a.name) for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert [(level, m) for level, m in names if level > 0 or m.split(".")[0] == "helpers"] == []


def test_explore_module_does_not_shadow_the_explore_ladder_widget():
    # Importing the submodule helpers.explore rebinds the package attribute `explore`; the widget has its own name.
    import helpers
    import helpers.explore
    from helpers import explore_ladder
    assert isinstance(explore_ladder, types.FunctionType) and explore_ladder.__module__ == "helpers.plot"
    assert isinstance(helpers.explore, types.ModuleType) and hasattr(helpers.explore, "plot_bank_map")


def test_an_explorer_shows_its_first_state_without_a_click_and_redraws_in_place():
    # The built book and a notebook opened without a kernel show only plain outputs: the first state must be one
    # (a PNG), and the widget's own fallback must read as a sentence, not as ipywidgets' `VBox(children=(...` repr.
    import base64
    import ipywidgets as w
    from helpers.explore import explorer, plot_bank_map
    from helpers.models import LAYOUTS
    x = explorer(lambda layout: plot_bank_map("A", layout), layout=w.Dropdown(options=LAYOUTS, description="layout"))
    [first] = x.first_state()
    assert base64.b64decode(first["image/png"]).startswith(b"\x89PNG") and "4 wavefront(s)" in first["text/plain"]
    controls = x.controls_bundle()
    assert "application/vnd.jupyter.widget-view+json" in controls and x.out.outputs == ()
    assert controls["text/plain"].startswith("Controls: layout = row-major") and "children" not in controls["text/html"]
    x.controls["layout"].value = "swizzled"  # a reader moves the control: the redraw lands inside the widget
    [drawn] = x.out.outputs
    assert "1 wavefront(s)" in drawn["data"]["text/plain"] and "image/png" in drawn["data"]


def test_explore_ladder_draws_its_first_state_and_names_what_was_not_measured():
    from helpers import Row, explore_ladder
    from helpers.ceilings import Ceiling
    row = dict(m=4096, k=4096, dtype="fp32", cublas_tflops=50.0, ratio=0.2, correct=True, rel_err=0.0,
               source="recorded", gpu="H100", date="2026-01-01")
    rows = [Row(rung="01_naive", n=4096, tflops=10.0, **row), Row(rung="01_warptiled", n=8192, tflops=12.0, **row)]
    ceilings = {"ffma_peak": Ceiling("ffma_peak", "FFMA peak", 60.0, "TFLOP/s", "recorded", "H100", "2026-01-01")}
    x = explore_ladder(rows, ceilings)
    text, figure = x.first_state()
    assert text["text/plain"] == "not measured at N=4096: 01_warptiled" and "image/png" in figure
    x.controls["n"].value = 8192
    assert x.out.outputs[0]["text"] == "not measured at N=8192: 01_naive\n" and "image/png" in x.out.outputs[1]["data"]


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# Chapters whose widget cell still shows only the widget when saved: re-execute them once they use
# helpers.explore.explorer (or show a plain first state of their own), then drop them from here (strict: a stale
# entry fails).
WIDGETS_WITHOUT_A_FIRST_STATE: set = set()


@pytest.mark.parametrize("path", sorted((ROOT / "chapters").glob("*.ipynb")), ids=lambda p: p.stem)
def test_saved_widgets_show_a_first_state_to_a_reader_without_a_kernel(request, path):
    # The built book and a notebook opened without a kernel cannot draw a widget: beside each one the saved cell
    # must hold a plain output (its first state), and the widget's own fallback must not be its Python repr.
    import re
    import nbformat
    if path.stem in WIDGETS_WITHOUT_A_FIRST_STATE:
        request.applymarker(pytest.mark.xfail(strict=True, reason="its widget cell is not re-executed yet"))
    for cell in nbformat.read(path, as_version=4).cells:
        outputs = cell.get("outputs", [])
        for o in (o for o in outputs if WIDGET_VIEW in o.get("data", {})):
            assert not re.match(r"\w+\(", o["data"].get("text/plain", "")), f"{path.name}: {o['data']['text/plain']}"
            assert any(WIDGET_VIEW not in x.get("data", {}) for x in outputs), f"{path.name}: a widget alone"


def test_record_roundtrip_and_unreadable_file_is_kept(tmp_results):
    results.record("gemm", "01_naive@8x8x8", {"tflops": 1.0})
    results.record("ceilings", "hbm_copy", {"value": 3.0})
    data = json.loads(tmp_results.read_text())
    assert data["gemm"]["01_naive@8x8x8"] == {"tflops": 1.0} and data["ceilings"]["hbm_copy"]["value"] == 3.0
    tmp_results.write_text("{ not json")
    with pytest.raises(results.ResultsError, match="not valid JSON"):
        results.record("gemm", "x", {})
    assert tmp_results.read_text() == "{ not json"  # never overwritten silently


def _writer(path, worker, count):
    os.environ["GEMM_LADDER_RESULTS"] = path
    for i in range(count):
        results.record("gemm", f"w{worker}-{i}", {"i": i})


def test_concurrent_writers_lose_nothing(tmp_results):
    procs = [mp.Process(target=_writer, args=(str(tmp_results), w, 25)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    data = json.loads(tmp_results.read_text())
    assert len(data["gemm"]) == 75


def _cli(*args, env_extra=None):
    env = {**os.environ, "GEMM_LADDER_REPLAY": "1", **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "helpers", "ladder", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # a Python start-up, every helper's import and a plot
def test_cli_replays_recorded_results_as_json(tmp_path):
    out = _cli("--json", "--plot", str(tmp_path / "climb.png"))
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    from helpers.registry import MAIN
    assert [r["rung"] for r in rows] == list(MAIN)  # the main path by default; --all adds the ablations
    every = _cli("--json", "--all", "--plot", "")
    assert every.returncode == 0, every.stderr  # --all skips the rungs a size does not fit, and says so
    takes = [r.id for r in RUNGS if r.config.get("BN") != 320]  # chapter 09's 128 x 320 tile: no multiple of 4096
    assert [r["rung"] for r in json.loads(every.stdout)] == takes
    assert "skipped: N=4096 for 2 of" in every.stderr and "09_wide_spill, 09_wide" in every.stderr
    old = {"rung", "n", "dtype", "tflops", "cublas_tflops", "ratio", "correct", "source", "gpu"}
    new = {"run", "method", "tflops_iqr", "cublas_iqr", "cublas_ref", "sm_clock_mhz"}
    for row in rows:
        assert old | new <= set(row), sorted((old | new) - set(row))
        if row["source"] == "not measured":  # a rung added after the recorded run: a line with no number
            assert results.recorded_gemm(row["rung"], 4096, 4096, 4096) is None and row["tflops"] is None, row
            assert f"not measured: gemm {row['rung']}@4096x4096x4096 was never recorded" in out.stderr
            continue
        assert row["source"] == "recorded" and row["n"] == 4096 and 0 < row["ratio"] < 5
    assert sum(row["source"] == "recorded" for row in rows) >= len(rows) // 2, "most rungs have a recorded row"
    assert "REPLAY" in out.stderr and (tmp_path / "climb.png").stat().st_size > 10_000


def test_replay_shows_a_rung_never_recorded_as_not_measured(tmp_results):
    from helpers import NotRecorded, Row, climb, measure, replay, table
    with pytest.raises(NotRecorded, match="never recorded"):
        replay("05_one_stage", 4096)
    gaps = [replay("05_one_stage", 4096, missing_ok=True), measure("05_warp_64x64", 4096, missing_ok=True)]
    assert [r.has_number for r in gaps] == [False, False] and gaps[0].source == "not measured"
    assert "05_one_stage         4096  bf16     not measured" in table(gaps)
    row = Row("04_swizzle", 4096, 4096, 4096, "bf16", 190.0, 730.0, 0.26, True, 1e-3, "recorded", "H100", "2026-01-01")
    assert max(map(len, table([row, *gaps]).splitlines())) <= 109  # the book's column holds 109 characters
    ax = climb([row, *gaps])  # one bar: the lines with no number are left out, not drawn as zero
    assert [t.get_text() for t in ax.get_xticklabels()] == ["04_swizzle"]


def _main(capsys, *args) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `python -m helpers ladder ARGS`, run in this process: the CLI's whole logic is
    main(), and `python -m helpers` itself is exercised by the subprocess test above."""
    return _cli_main(capsys, "ladder", *args)


def test_cli_table_and_clear_errors(capsys, monkeypatch):
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    code, out, err = _main(capsys, "--rungs", "01_warptiled", "--plot", "")
    assert code == 0 and "01_warptiled" in out and "REPLAY" in err
    assert "cuBLAS (a): " in out  # the table names what its cuBLAS column timed
    code, out, err = _main(capsys, "--rungs", "01_nope")
    assert code == 2 and "no rung named '01_nope'" in err
    code, out, err = _main(capsys, "--n", "123", "--plot", "")
    assert code == 1 and "never recorded" in err
    # a size some rungs refuse is said once, before anything runs, naming them and one reason
    refused = [line for line in err.splitlines() if line.startswith("skipped: N=123")]
    assert len(refused) == 1 and err.count("ShapeError") == 0, err
    assert "01_warptiled" in refused[0] and "handles M only in multiples of 128" in refused[0]


def test_broken_results_file_gives_one_clear_error(tmp_path, capsys, monkeypatch):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    monkeypatch.setenv("GEMM_LADDER_RESULTS", str(bad))
    code, out, err = _main(capsys, "--plot", "")
    assert code == 2 and bad.read_text() == "[1, 2"  # nothing could be shown, and the file was left as it was
    assert f"{bad} is not valid JSON" in err and "fix or move it away. It was not changed." in err
    assert err.count("is not valid JSON") == 1, err  # said once, before any rung, not once per rung


def test_banner_on_an_older_gpu_names_the_kernels_it_replays_and_why(monkeypatch):
    from helpers import gpu, status
    a100 = gpu.Device("NVIDIA A100-SXM4-40GB", (8, 0), 108, 40 << 20, 164 << 10, 1410, 1215, "550.54", "12.4",
                      "12.4", "14.2.0", "12.4")
    monkeypatch.setattr(status, "live", lambda: True)
    monkeypatch.setattr(status, "device", lambda: a100)
    assert "cannot run" not in status.banner_text("05")  # an A100 runs the sm_80 rungs live
    text = status.banner_text("06")
    assert "This GPU cannot run everything here (06_wgmma_m64n64, 06_wgmma_wide need a Hopper GPU (sm_90a))" in text
    ladder = status.banner_text()
    assert "the rungs of chapters 06-12 need a Hopper GPU" in ladder and "01-05" not in ladder
    t4 = gpu.Device("Tesla T4", (7, 5), 40, 4 << 20, 64 << 10, 1590, 5001, "535", "12.2", "12.2", "14.2.0", "12.2")
    monkeypatch.setattr(status, "device", lambda: t4)
    assert "(02_wmma_naive, 02_wmma_smem need sm_80 or newer)" in status.banner_text("02")


def test_a_saved_measured_banner_tells_a_later_reader_what_running_will_do(monkeypatch):
    """The banner an H100 run saves is read later, on any machine, before anything runs: it says when the outputs were
    measured, never that they are live, and what running the cells again will do."""
    from helpers import gpu, status
    h100 = gpu.Device("NVIDIA H100 80GB HBM3", (9, 0), 132, 50 << 20, 227 << 10, 1980, 2619, "580.159.04", "13.0",
                      "13.0", "14.2.0", "13.0")
    monkeypatch.setattr(status, "live", lambda: True)
    monkeypatch.setattr(status, "device", lambda: h100)
    text = status.banner_text("07")
    assert text.startswith("MEASURED: these outputs were measured on NVIDIA H100 80GB HBM3 on ")
    assert ", when the cells ran (run " in text
    assert "Running the cells again replays the recorded numbers, or measures anew on a GPU that can run them" in text
    assert "saved from an H100" not in text  # the device is the one that ran, never typed
    assert "LIVE" not in text and "cannot run" not in text


def test_why_not_live_is_one_sentence_for_an_old_gpu(monkeypatch):
    from helpers import gpu
    monkeypatch.delenv("GEMM_LADDER_REPLAY", raising=False)
    monkeypatch.setattr(gpu, "device", lambda: gpu.Device("Tesla T4", (7, 5), 40, 4 << 20, 64 << 10, 1590, 5001,
                                                          "535", "12.2", "12.2", "14.2.0", "12.2"))
    msg = gpu.why_not_live((9, 0), "sm_90a")
    assert msg.startswith("It needs sm_90a, which the Tesla T4") and msg.endswith(".") and ". " not in msg


def _device(name, cc):
    from helpers import gpu
    return gpu.Device(name, cc, 100, 40 << 20, 164 << 10, 1500, 1500, "580", "13.0", "13.0", "14.2.0", "13.0")


def test_launch_arch_rebuilds_sm80_rungs_for_the_gpu_at_hand(monkeypatch):
    from helpers import gpu
    for name, cc, want in (("NVIDIA A100", (8, 0), "sm_80"), ("NVIDIA L4", (8, 9), "sm_89"),
                           ("NVIDIA H100", (9, 0), "sm_90a")):
        monkeypatch.setattr(gpu, "device", lambda n=name, c=cc: _device(n, c))
        assert gpu.launch_arch("sm_90a") == want


def test_sm90a_rungs_do_not_claim_to_run_on_a_later_gpu(monkeypatch):
    # wgmma and setmaxnreg are sm_90a only: a Blackwell GPU (10.0) must replay them, not try to load the cubin.
    from helpers import gpu, status
    b200 = _device("NVIDIA B200", (10, 0))
    assert not gpu.can_run(b200, (9, 0), "sm_90a") and gpu.can_run(b200, (8, 0), "sm_90a")
    monkeypatch.delenv("GEMM_LADDER_REPLAY", raising=False)
    monkeypatch.setattr(gpu, "device", lambda: b200)
    assert gpu.why_not_live((9, 0), "sm_90a").startswith("It needs sm_90a, which the NVIDIA B200")
    monkeypatch.setattr(status, "live", lambda: True)
    monkeypatch.setattr(status, "device", lambda: b200)
    assert "(07_tma, 07_four_stages need a Hopper GPU (sm_90a))" in status.banner_text("07")


def test_each_chapter_says_which_of_its_kernels_need_an_h100():
    from helpers import RUNGS, status
    from helpers.registry import chapter_rungs
    for r in RUNGS:
        text = status.needs_text(r.chapter)
        assert r.id in text or f"all {len(chapter_rungs(r.chapter))} of its rungs" in text, (r.id, text)
        assert ("need a Hopper GPU" in text or "needs a Hopper GPU" in text) == (tuple(r.needs_cc) >= (9, 0)), text
    assert "hgmma_peak, qgmma_peak, hgmma_n128, hgmma_n64, tma_l2_read, tma_multicast, read_tma need a Hopper GPU" in \
        status.needs_text("00")
    mixed = status.needs_text("11")
    assert "chapters 06-12 need a Hopper GPU" in mixed and "chapters 01-05 run live on any GPU from sm_80" in mixed


# ---- chapter 01 figures: the models they draw are the kernels' own index arithmetic ----------------------------

@pytest.mark.parametrize("size", [8, 4096])
def test_ch01_naive_warp_wastes_seven_eighths_of_each_sector_and_coalesced_none(size):
    from helpers.figures.ch01 import warp_sectors
    from helpers.hardware import SECTOR_BYTES
    naive, coal = warp_sectors("01_naive", size=size), warp_sectors("01_coalesced", size=size)
    assert sorted(naive["row"].tolist()) == list(range(32)) and set(naive["col"].tolist()) == {0}  # down a column
    assert set(coal["row"].tolist()) == {0} and coal["col"].tolist() == list(range(32))             # along a row
    sectors = {op: (len(naive[op]["sectors"]), len(coal[op]["sectors"])) for op in "ABC"}
    assert sectors == {"A": (32, 1), "B": (1, 4), "C": (32, 4)}
    assert naive["A"]["used"] / naive["A"]["moved"] == pytest.approx(1 / 8)
    assert coal["B"]["used"] == coal["B"]["moved"] == 4 * SECTOR_BYTES


@pytest.mark.parametrize("rid", ["01_blocktile_2d", "01_vectorized", "01_warptiled"])
def test_ch01_owner_map_gives_every_thread_tm_by_tn_elements_once(rid):
    import numpy as np
    from helpers import build
    from helpers.figures.ch01 import thread_owner
    c = build(rid).consts
    owner = thread_owner(rid)
    assert owner.shape == (c["BM"], c["BN"]) and owner.min() == 0
    assert (np.bincount(owner.ravel(), minlength=c["THREADS"]) == c["TM"] * c["TN"]).all()
    warp = owner // 32
    if rid == "01_warptiled":  # warp w owns the WM x WN tile at (w / WARPS_N, w % WARPS_N)
        tiles = warp.reshape(c["BM"] // c["WM"], c["WM"], c["BN"] // c["WN"], c["WN"])
        for i in range(c["BM"] // c["WM"]):
            for j in range(c["WARPS_N"]):
                assert (tiles[i, :, j, :] == i * c["WARPS_N"] + j).all()
        lane0 = np.argwhere(owner == 0)  # lane 0: 2 x 2 patches of 4 x 4, half a warp tile apart
        assert sorted({int(r) for r in lane0[:, 0]}) == [0, 1, 2, 3, 16, 17, 18, 19]
        assert sorted({int(col) for col in lane0[:, 1]}) == [0, 1, 2, 3, 32, 33, 34, 35]
    else:                      # warp w owns full-width strips of 32 * TM * TN / BN rows
        rows = 32 * c["TM"] * c["TN"] // c["BN"]
        assert (warp == np.arange(c["BM"])[:, None] // rows).all()


def test_ch01_lds128_model_matches_the_sass_and_the_two_way_conflict():
    from helpers import build
    from helpers.figures.ch01 import lds128
    for rid in ("01_vectorized", "01_warptiled"):
        r, b = rung(rid), build(rid)
        assert len(lds128(rid)) * b.consts["BK"] == b.inventory(r.entry)["LDS.128"]  # one k tile, unrolled
    vec, warp = lds128("01_vectorized"), lds128("01_warptiled")
    assert [(ld["operand"], ld["wavefronts"], ld["ideal"]) for ld in vec] == [("A", 1, 1), ("A", 1, 1),
                                                                               ("B", 4, 2), ("B", 4, 2)]
    assert [(ld["wavefronts"], ld["ideal"]) for ld in warp] == [(1, 1)] * 4


@pytest.mark.parametrize("name, says", [
    ("fig_simt_warp_sectors", "32 addresses in 32 sectors -> 1,024 B moved, 128 B used (12.5%)"),
    ("fig_simt_thread_tiles", "= 32 FLOP per byte"),
    ("fig_simt_warp_tiles", "= 16,384 = 128 x 128."),
    ("fig_simt_lds_banks", "1 + 1 + 4 + 4 = 10 wavefronts (ideal 6)"),
])
def test_ch01_figures_draw_what_the_models_count(name, says):
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure
    from helpers import build, figures
    ax = getattr(figures, name)()
    try:
        assert isinstance(ax.figure, Figure)
        texts = [t.get_text() for t in ax.texts]
        assert any(says in t for t in texts), texts
        numbers = [int(t) for t in texts if t.isdigit()]
        if name == "fig_simt_thread_tiles":  # one labelled patch per thread
            assert sorted(numbers) == list(range(build("01_blocktile_2d").consts["THREADS"]))
        if name == "fig_simt_warp_tiles":    # warp 0's tile: each of its 32 lanes labels 4 patches
            assert sorted(numbers) == sorted(list(range(32)) * 4)
        if name == "fig_simt_warp_sectors":  # one outlined box per sector the model counts, both rungs
            outlines = [p for p in ax.patches if p.get_facecolor()[3] == 0]
            s = [figures.ch01.warp_sectors(rid) for rid in ("01_naive", "01_coalesced")]
            assert len(outlines) == sum(len(d[op]["sectors"]) for d in s for op in "ABC") == 74
    finally:
        plt.close(ax.figure)


def _cli_main(capsys, *args) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `python -m helpers ARGS`, in this process."""
    from helpers.__main__ import main
    try:
        code = main(list(args))
    except SystemExit as e:  # argparse refusing the arguments
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("args, says", [
    (["--n", "0"], "argument --n: sizes are positive; got 0"),
    (["--n", "-128"], "argument --n: sizes are positive; got -128"),
    (["--plot", "/proc/nope/climb.png"], "the folder /proc/nope does not exist"),
    (["--plot", "climb.xyz"], ".xyz is not a format matplotlib writes; use one of"),
    (["--plot", "/tmp"], "/tmp is a folder; name a file in it, e.g. /tmp/climb.png"),
])
def test_the_cli_refuses_bad_arguments_in_one_sentence_before_anything_runs(capsys, monkeypatch, args, says):
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    code, out, err = _cli_main(capsys, "ladder", *args)
    assert code == 2 and says in err and "Traceback" not in err and "skipped" not in err and out == "", err


@pytest.mark.parametrize("env, says", [
    ({"GEMM_LADDER_RESULTS": "/tmp"}, "/tmp is a directory, not a results file"),
    ({"GEMM_LADDER_RESULTS": "/nonexistent/x.json"}, "/nonexistent/x.json does not exist, so there is nothing to "
                                                     "replay"),
    ({"GEMM_LADDER_REPLAY": "garbage"}, "GEMM_LADDER_REPLAY='garbage' is neither yes"),
])
def test_the_cli_refuses_a_bad_environment_in_one_sentence(capsys, monkeypatch, env, says):
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    code, out, err = _cli_main(capsys, "ladder", "--plot", "")
    assert code == 2 and says in err and "Traceback" not in err and err.count("\n") <= 2, err
    assert not Path("/nonexistent").exists()


def test_the_cli_prints_each_rung_and_size_once(capsys, monkeypatch):
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    code, out, err = _cli_main(capsys, "ladder", "--json", "--plot", "", "--n", "4096", "4096",
                               "--rungs", "10_chip", "10_chip")
    rows = json.loads(out)
    assert code == 0 and [(r["rung"], r["n"]) for r in rows] == [("10_chip", 4096)]
    assert "[" not in err.replace("[NVIDIA", "")  # replay draws no progress lines


def test_the_sass_subcommand_reports_the_build_without_a_gpu(capsys, monkeypatch):
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    code, out, err = _cli_main(capsys, "sass", "04_swizzle")
    r, b = rung("04_swizzle"), build("04_swizzle")
    assert code == 0 and f"{b.resources[r.entry].registers} registers" in out
    assert sass_claims(r) in out and "MISSING" not in out
    code, out, _ = _cli_main(capsys, "sass", "04_swizzle", "--listing")
    assert code == 0 and ".text.gemm_swizzle" in out and "HMMA.16816.F32.BF16" in out


def test_the_check_subcommand_says_why_it_cannot_run_here(capsys, monkeypatch):
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    code, out, err = _cli_main(capsys, "check", "04_swizzle", "--n", "1000")
    assert code == 2 and "04_swizzle handles M only in multiples of 128 (BM); got M=1000" in err
    code, out, err = _cli_main(capsys, "check", "04_swizzle", "--n", "1024")
    assert code == 2 and err.strip() == ("error: GEMM_LADDER_REPLAY is set, so nothing can be checked here; the recorded "
                                         "check of 04_swizzle is the 'correct' column of `python -m helpers ladder "
                                         "--replay --rungs 04_swizzle`.")


@pytest.mark.parametrize("cmd", ["ladder", "profile", "sass", "check"])
def test_every_subcommand_explains_itself(capsys, cmd):
    code, out, _ = _cli_main(capsys, cmd, "--help")
    assert code == 0 and len(out.splitlines()) > 8 and "usage: python -m helpers " + cmd in out


def test_a_rerun_that_only_replays_its_run_is_told_apart_from_a_cold_execution(tmp_results, monkeypatch):
    """tools.execute keeps a chapter's cold time when the chapter wrote nothing to its run: _run_entries is the
    run's own entries, and empty without a run id."""
    from tools import execute
    results.record("gemm", "01_naive@8x8x8", {"tflops": 1.0, "run": "R1"})
    results.record("gemm", "01_naive@16x16x16", {"tflops": 2.0, "run": "R0"})
    monkeypatch.delenv("GEMM_LADDER_RUN", raising=False)
    assert execute._run_entries() == ""
    monkeypatch.setenv("GEMM_LADDER_RUN", "R1")
    before = execute._run_entries()
    assert "01_naive@8x8x8" in before and "16x16x16" not in before
    results.record("gemm", "01_naive@16x16x16", {"tflops": 3.0, "run": "R0"})  # another run's entry: still a replay
    assert execute._run_entries() == before
    results.record("gemm", "02_wmma_naive@8x8x8", {"tflops": 4.0, "run": "R1"})  # measured now: a cold execution
    assert execute._run_entries() != before


def test_the_widest_tables_fit_the_books_column(monkeypatch):
    # Non-square shapes make the widest size column; the rows and the folded cuBLAS notes still fit the 109
    # characters the book's 948 px column holds (ci/test_book.py measures the same in the built pages).
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    from helpers import replay, table
    from helpers.tables import BOOK_COLUMNS
    rows = [replay(r, *shape) for shape in ((8192, 8192, 1024), (12288, 12288, 4096)) for r in ("09_setmaxnreg", "10_chip")]
    lines = table(rows).splitlines()
    assert any("12288x12288x4096" in x for x in lines)
    assert max(map(len, lines)) <= BOOK_COLUMNS == 109
    from helpers.ladder import recorded_entry
    from helpers.profile import table as profiles
    from helpers.registry import MAIN
    lines = profiles([recorded_entry("profiles", f"{r}@8192") for r in MAIN]).splitlines()
    assert len(lines) > 2 * len(MAIN) and max(map(len, lines)) <= BOOK_COLUMNS  # the stalls go on a line of their own


def test_record_part_keeps_other_parts_and_says_where_each_ran(tmp_path, monkeypatch):
    # the experiments' records (ci/pingpong.py, clusters.py, fp8_promoted.py) are written one part at a time, each
    # part from its own lease: a new part must not drop the others, and each keeps its own env
    import json
    from helpers import gpu, results

    class Card:
        def __init__(self, date):
            self.date = date

        def env(self):
            return {"name": "a card", "date": self.date}
    path = tmp_path / "experiment.json"
    monkeypatch.setattr(gpu, "device", lambda: Card("first"))
    results.record_part(path, "time", [1, 2])
    monkeypatch.setattr(gpu, "device", lambda: Card("second"))
    results.record_part(path, "profile", {"x": 3})
    data = json.loads(path.read_text())
    assert data["time"] == [1, 2] and data["profile"] == {"x": 3}
    assert data["env"] == {"time": {"name": "a card", "date": "first"}, "profile": {"name": "a card", "date": "second"}}


def test_the_status_page_sets_the_recorded_gpus_side_by_side(tmp_path, monkeypatch):
    """Two GPUs' run files: each main-path rung both measured by GPU time, with its TFLOP/s and ratio on each, the
    book's run first; a GPU without such rows is named, not compared."""
    from helpers import results, status
    from helpers.registry import MAIN

    def run(slug, name, tflops, method="gpu-time"):
        rows = {results.gemm_key(r, 4096, 4096, 4096): {"rung": r, "tflops": tflops, "ratio": tflops / 800,
                                                         "method": method, "env": {"name": name, "date": "2026-11-29"}}
                for r in MAIN[-2:]}
        (tmp_path / slug).mkdir()
        (tmp_path / slug / results.RUN_FILE).write_text(json.dumps({"gemm": rows}))

    monkeypatch.setattr(results, "RESULTS", tmp_path)
    monkeypatch.setattr(results, "REFERENCE", "nvidia-h200")  # the book's run, whichever board the book names
    run(results.REFERENCE, "NVIDIA H200", 780.0)
    run("nvidia-h100-80gb-hbm3", "NVIDIA H100 80GB HBM3", 800.0)
    text = status.runs_side_by_side(sizes=(4096,))
    head, _, *rows = text.splitlines()
    assert head.index("NVIDIA H200") < head.index("NVIDIA H100"), head
    assert len(rows) == 2 and all("780.0" in r and "97.5%" in r and "800.0" in r and "100.0%" in r for r in rows), rows
    run("nvidia-b200", "NVIDIA B200", 900.0, method="events")  # no GPU-time rows: named, left out of the table
    assert "NVIDIA B200: no rows measured by GPU time" in status.runs_side_by_side(sizes=(4096,))


def test_render_prose_converts_a_paragraph_into_a_rendered_cell(tmp_path):
    """tools.render_prose --convert: the markdown cell keeps its id and place and becomes a hidden-input code cell
    whose output nbval checks; a missing id is refused in one sentence."""
    from tools.render_prose import convert
    nb = {"cells": [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["# Title\n"]},
                    {"cell_type": "markdown", "id": "b", "metadata": {}, "source": ["It ran at 1.15.\n"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "ch.ipynb"
    path.write_text(json.dumps(nb))
    convert(path, "b", 'say(f"It ran at {x(1.15)}.")\n')
    cells = json.loads(path.read_text())["cells"]
    assert [c["id"] for c in cells] == ["a", "b"] and cells[0]["cell_type"] == "markdown"
    assert cells[1]["cell_type"] == "code" and cells[1]["source"] == ['say(f"It ran at {x(1.15)}.")']
    assert cells[1]["metadata"] == {"jupyter": {"source_hidden": True}, "tags": ["remove-input", "nbval-check-output"]}
    with pytest.raises(SystemExit, match="has no cell with id 'zz'"):
        convert(path, "zz", "")


def test_a_table_marks_each_cublas_reference_once_however_many():
    """Chapter 11's sweep names 21 cuBLAS kernels: each gets its own mark (a to u), none is reused."""
    import re
    from types import SimpleNamespace
    from helpers.tables import table
    rows = [SimpleNamespace(rung="10_chip", m=n, n=n, k=n, dtype="bf16", tflops=700.0, tflops_iqr=[699, 701],
                            cublas_tflops=720.0, cublas_ref=f"kernel {i}", ratio=0.97, correct=True,
                            date="2026-11-29 01:00", has_number=True) for i, n in enumerate(range(1024, 1024 + 28 * 8, 8))]
    text = table(rows)
    marks = re.findall(r"^cuBLAS \((\w+)\): kernel (\d+)$", text, re.M)
    assert len(marks) == 28 and len({m for m, _ in marks}) == 28, marks
    assert marks[0] == ("a", "0") and marks[25] == ("z", "25") and marks[26] == ("a2", "26")
    assert len({len(line) for line in text.splitlines()[1:29]}) == 1  # the rows stay aligned


def test_pdl_packs_each_argument_by_address_and_only_pdl_builds_launch_with_the_attribute():
    # helpers.pdl.Packed is what cuLaunchKernelEx reads: one pointer per kernel parameter, each to that parameter's
    # bytes (a device pointer's 8, a tensor map's 128, an int's 4). Read back through ctypes, which tests may use and
    # helpers may not.
    import ctypes
    from types import SimpleNamespace

    import numpy as np
    from helpers.facts import facts
    from helpers.pdl import Packed
    from helpers.registry import RUNGS
    array = SimpleNamespace(data=SimpleNamespace(ptr=0x7F0012345600))    # what Packed reads of a CuPy array
    tmap = np.frombuffer(bytes(range(128)), dtype=np.dtype((np.void, 128)))[0]
    p = Packed((array, tmap, np.int32(-7), np.float32(0.25)))
    slots = [ctypes.c_uint64.from_address(p.address + 8 * i).value for i in range(4)]
    assert ctypes.c_uint64.from_address(slots[0]).value == 0x7F0012345600
    assert ctypes.string_at(slots[1], 128) == bytes(range(128))
    assert ctypes.c_int32.from_address(slots[2]).value == -7 and ctypes.c_float.from_address(slots[3]).value == 0.25
    with pytest.raises(TypeError, match="cannot pass a int"):
        Packed((3,))
    # prepare() launches with programmatic stream serialization exactly the builds whose PDL constexpr is set
    assert {r.id for r in RUNGS if facts(r).consts.get("PDL", 0) > 0} == {"10_pdl", "10_overlap", "12_fp8"}


def test_launch_timeline_hides_placement_and_prologue_and_never_loads_early():
    # chapter 10's step 6 figure draws this model: with PDL a launch saves its placement and prologue, and its first
    # load never comes before the previous grid has completed and drained; a prologue longer than the previous
    # launch's work is hidden only in part.
    from helpers.models import launch_timeline
    plain, pdl = launch_timeline(4), launch_timeline(4, pdl=True)
    period = lambda t: t[-1]["done"] - t[-2]["done"]  # noqa: E731
    assert period(plain) - period(pdl) == pytest.approx(0.8 + 1.0)  # place + prologue (the defaults)
    for a, b in zip(pdl, pdl[1:]):
        assert b["start"] == a["go"] and b["go"] >= a["drained"]
    for a, b in zip(plain, plain[1:]):
        assert b["start"] == a["drained"]
    slow = launch_timeline(3, pdl=True, prologue=9.0)
    assert slow[1]["go"] == slow[1]["ready"] > slow[0]["drained"]
