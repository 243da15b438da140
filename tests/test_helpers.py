"""CPU-side unit tests of the helpers: registry, shape refusal, results file, replay, CLI."""
import ast
import json
import multiprocessing as mp
import os
import subprocess
import sys
import types

import pytest

from helpers import RUNGS, ShapeError, intensity, rung
from helpers import results
from helpers.check import CheckResult
from helpers.launch import validate
from helpers.registry import ROOT


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


@pytest.mark.parametrize("shape", [(4097, 4096, 4096), (4096, 100, 4096), (128, 128, 12)])
def test_tiled_rungs_refuse_shapes_before_launch(shape):
    with pytest.raises(ShapeError, match="multiples of"):
        validate(rung("01_warptiled"), *shape)


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
    assert isinstance(helpers.explore, types.ModuleType) and hasattr(helpers.explore, "conflict_degree")


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


def test_cli_replays_recorded_results_as_json(tmp_path):
    out = _cli("--json", "--plot", str(tmp_path / "climb.png"))
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["rung"] for r in rows] == [r.id for r in RUNGS]
    old = {"rung", "n", "dtype", "tflops", "cublas_tflops", "ratio", "correct", "source", "gpu"}
    new = {"run", "method", "tflops_iqr", "cublas_iqr", "cublas_ref", "sm_clock_mhz"}
    for row in rows:
        assert old | new <= set(row), sorted((old | new) - set(row))
        assert row["source"] == "recorded" and row["n"] == 4096 and 0 < row["ratio"] < 5
    assert "REPLAY" in out.stderr and (tmp_path / "climb.png").stat().st_size > 10_000


def test_cli_table_and_clear_errors(tmp_path):
    out = _cli("--rungs", "01_warptiled", "--plot", "")
    assert out.returncode == 0 and "01_warptiled" in out.stdout and "REPLAY" in out.stderr
    assert "cuBLAS (a): " in out.stdout  # the table names what its cuBLAS column timed
    bad = _cli("--rungs", "01_nope")
    assert bad.returncode != 0 and "no rung named '01_nope'" in bad.stderr
    missing = _cli("--n", "123", "--plot", "")
    assert missing.returncode == 1 and "never recorded" in missing.stderr


def test_broken_results_file_gives_one_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    out = _cli("--plot", "", env_extra={"GEMM_LADDER_RESULTS": str(bad)})
    assert out.returncode != 0 and "not valid JSON" in out.stderr and bad.read_text() == "[1, 2"


def test_banner_on_an_older_gpu_names_the_kernels_it_replays_and_why(monkeypatch):
    from helpers import gpu, report
    a100 = gpu.Device("NVIDIA A100-SXM4-40GB", (8, 0), 108, 40 << 20, 164 << 10, 1410, 1215, "550.54", "12.4",
                      "12.4", "14.2.0", "12.4")
    monkeypatch.setattr(report, "live", lambda: True)
    monkeypatch.setattr(report, "device", lambda: a100)
    assert "cannot run" not in report.banner_text("05")  # an A100 runs the sm_80 rungs live
    text = report.banner_text("06")
    assert "This GPU cannot run everything here (06_wgmma_m64n64, 06_wgmma_wide need an H100 (sm_90a))" in text
    ladder = report.banner_text()
    assert "the rungs of chapters 06-10 need an H100" in ladder and "01-05" not in ladder
    t4 = gpu.Device("Tesla T4", (7, 5), 40, 4 << 20, 64 << 10, 1590, 5001, "535", "12.2", "12.2", "14.2.0", "12.2")
    monkeypatch.setattr(report, "device", lambda: t4)
    assert "(02_wmma_naive, 02_wmma_smem need sm_80 or newer)" in report.banner_text("02")


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
    from helpers import gpu, report
    b200 = _device("NVIDIA B200", (10, 0))
    assert not gpu.can_run(b200, (9, 0), "sm_90a") and gpu.can_run(b200, (8, 0), "sm_90a")
    monkeypatch.delenv("GEMM_LADDER_REPLAY", raising=False)
    monkeypatch.setattr(gpu, "device", lambda: b200)
    assert gpu.why_not_live((9, 0), "sm_90a").startswith("It needs sm_90a, which the NVIDIA B200")
    monkeypatch.setattr(report, "live", lambda: True)
    monkeypatch.setattr(report, "device", lambda: b200)
    assert "(07_tma need an H100 (sm_90a))" in report.banner_text("07")


def test_each_chapter_says_which_of_its_kernels_need_an_h100():
    from helpers import RUNGS, report
    for r in RUNGS:
        text = report.needs_text(r.chapter)
        assert r.id in text or "all 6 of its rungs" in text, (r.id, text)
        assert ("need an H100" in text or "needs an H100" in text) == (tuple(r.needs_cc) >= (9, 0)), text
    assert "hgmma_peak needs an H100" in report.needs_text("00")
    mixed = report.needs_text("11")
    assert "chapters 06-10 need an H100" in mixed and "chapters 01-05 run live on any GPU from sm_80" in mixed
