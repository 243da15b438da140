"""helpers.profile: Nsight Compute's CSV read right, stall shares that sum to 1, the metric tiers, the recorded entry
replayed through obtain(), and `python -m helpers profile` (needs no GPU; the one live test is marked gpu)."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from helpers import ncu
from helpers import profile as prof
from helpers.registry import MAIN, ROOT, rung

# `ncu --csv --page raw --print-units base` as Nsight Compute 2025 prints it: the profiled program's own lines and
# ==PROF== lines, then a header row (identity columns, then every collected metric by name), a units row, one row
# per profiled launch. Values of rung 10 at 4096 on an H100, made up but of the right size.
IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
            "Grid Size", "Device", "CC")
METRIC_ROWS = [  # name, unit, value of each of the three profiled launches
    ("device__attribute_max_threads_per_block", "", ("1,024",) * 3),
    ("dram__bytes_read.sum", "byte", ("170,345,472", "170,411,008", "170,280,960")),
    ("dram__bytes_write.sum", "byte", ("33,554,432",) * 3),
    ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "%", ("33.21", "33.18", "33.25")),
    ("gpu__time_duration.sum", "nsecond", ("181,152", "180,960", "181,408")),
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed", "%", ("1.21", "1.20", "1.22")),
    ("l1tex__m_xbar2l1tex_read_bytes.sum", "byte", ("1,610,612,736",) * 3),
    ("l1tex__m_xbar2l1tex_read_bytes.sum.peak_sustained", "byte/cycle", ("7,680",) * 3),
    ("l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum", "byte", ("1,577,058,304",) * 3),
    ("launch__func_cache_config", "", ("CachePreferNone",) * 3),  # text-valued
    ("launch__grid_size", "", ("132",) * 3),
    ("lts__average_gcomp_input_sector_success_rate.pct", "%", ("n/a",) * 3),
    ("launch__registers_per_thread", "register/thread", ("168",) * 3),
    ("lts__cycles_elapsed.avg.per_second", "cycle/second", ("1,600,000,000",) * 3),
    ("lts__t_bytes.sum", "byte", ("1,932,735,283",) * 3),
    ("lts__t_sector_hit_rate.pct", "%", ("80.13", "80.10", "80.16")),
    ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "%", ("61.32", "61.30", "61.35")),
    ("sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "%", ("94.85", "94.80", "94.90")),
    ("sm__cycles_elapsed.avg.per_second", "cycle/second", ("1,755,000,000", "1,750,000,000", "1,760,000,000")),
    ("sm__maximum_warps_per_active_cycle_pct", "%", ("18.75",) * 3),
    ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed", "%", ("0.41",) * 3),
    ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed", "%", ("89.26", "89.20", "89.30")),
    ("sm__sass_data_bytes_mem_shared.sum", "byte", ("33,554,432",) * 3),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", ("89.51",) * 3),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "%", ("18.70", "18.71", "18.69")),
    ("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "inst", ("0.5",) * 3),
    ("smsp__average_warps_issue_stalled_selected_per_issue_active.ratio", "inst", ("1",) * 3),
    ("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", "inst", ("1.5",) * 3),
    ("smsp__pcsamp_warps_issue_stalled_barrier", "", ("40",) * 3),
    ("smsp__pcsamp_warps_issue_stalled_long_scoreboard", "", ("120",) * 3),
    ("smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued", "", ("110",) * 3),
    ("smsp__pcsamp_warps_issue_stalled_math_pipe_throttle", "", ("0",) * 3),
    ("smsp__pcsamp_warps_issue_stalled_selected", "", ("40",) * 3),
    ("smsp__pcsamp_warps_issue_stalled_sleeping", "", ("640",) * 3),
    ("smsp__pcsamp_warps_issue_stalled_wait", "", ("200",) * 3),
]
CHILD_LINE = ('PROFILE-CHILD {"entry": "gemm_chip", "tile": [128, 256], "grid": [132, 1, 1], "block": [384, '
              '1, 1], "smem_bytes": 213504, "launches": 3, "unprofiled_ms": 0.19, "ptxas_registers": 168, '
              '"spill_store_bytes": 0, "spill_load_bytes": 0}')


def _q(cells) -> str:
    return ",".join(f'"{c}"' for c in cells)


def raw_csv(metric_rows=METRIC_ROWS, kernel="gemm_chip") -> str:
    lines = ["==PROF== Connected to process 4242 (/usr/bin/python3.12)",
             *[f'==PROF== Profiling "{kernel}" - {i}: 0%....50%....100% - 31 passes' for i in range(3)],
             CHILD_LINE, "==PROF== Disconnected from process 4242",
             _q([*IDENTITY, *(m for m, _, _ in metric_rows)]),
             _q([""] * len(IDENTITY) + [u for _, u, _ in metric_rows])]
    for i in range(3):
        ident = [str(i), "4242", "python3.12", "127.0.0.1", kernel, "1", "7", "(384, 1, 1)", "(132, 1, 1)", "0", "9.0"]
        lines.append(_q(ident + [v[i] for _, _, v in metric_rows]))
    return "\n".join(lines) + "\n"


def test_details_page_csv_is_read_from_its_header_on():
    # the details page (ncu_rows: tools.bank_conflicts, tools.l2_schedule, tools.crosscheck), as ncu 2025 prints it
    text = textwrap.dedent('''\
        HARNESS {"ratio": 0.98}
        ==PROF== Disconnected from process 4242
        "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
        "0","4242","python3.12","127.0.0.1","gemm_chip","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","181,152"
        "1","4242","python3.12","127.0.0.1","nvjet_sm90_tst_256x128","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","178,912"
        ''')
    rows = ncu.parse_ncu_csv(text)
    assert [(r["Kernel Name"], r["Section Name"], r["Metric Unit"], r["Metric Value"]) for r in rows] == [
        ("gemm_chip", "Command line profiler metrics", "nsecond", "181,152"),
        ("nvjet_sm90_tst_256x128", "Command line profiler metrics", "nsecond", "178,912")]
    assert ncu.parse_ncu_csv("==PROF== no table here\n") == []
    from tools import bank_conflicts, crosscheck, l2_schedule  # the tools share this one runner and its parser
    assert bank_conflicts.ncu_rows is ncu.ncu_rows and crosscheck.ncu_rows is ncu.ncu_rows
    assert l2_schedule.ncu is bank_conflicts.ncu


def test_raw_page_csv_gives_one_row_per_launch_and_the_units():
    rows, units = ncu.parse_raw_csv(raw_csv())
    assert len(rows) == 3 and [r["ID"] for r in rows] == ["0", "1", "2"]
    assert rows[1]["gpu__time_duration.sum"] == "180,960" and rows[0]["Kernel Name"] == "gemm_chip"
    assert units["gpu__time_duration.sum"] == "nsecond" and units["launch__registers_per_thread"] == "register/thread"
    raw = ncu.numbers(rows)
    assert raw["gpu__time_duration.sum"] == 181152  # the median of the three launches, thousands commas dropped
    assert raw["dram__bytes_read.sum"] == 170345472
    assert "ID" not in raw and "Kernel Name" not in raw and "device__attribute_max_threads_per_block" not in raw
    assert "launch__func_cache_config" not in raw and "lts__average_gcomp_input_sector_success_rate.pct" not in raw
    assert ncu.parse_raw_csv("==PROF== nothing profiled\n") == ([], {})


def test_units_convert_to_seconds_bytes_and_hertz():
    assert ncu.to_si(181152, "nsecond") == pytest.approx(181.152e-6)
    assert ncu.to_si(181.152, "usecond") == pytest.approx(181.152e-6)
    assert ncu.to_si(1.75, "cycle/nsecond") == pytest.approx(1.75e9)
    assert ncu.to_si(1755, "Mhz") == pytest.approx(1.755e9)
    assert ncu.to_si(3.2, "Gbyte") == pytest.approx(3.2e9)
    assert ncu.to_si(8.9, "Tbyte/second") == pytest.approx(8.9e12)
    assert ncu.to_si(42.0, "%") == 42.0 and ncu.to_si(168, "register/thread") == 168


def test_entry_derived_from_the_raw_metrics():
    rows, units = ncu.parse_raw_csv(raw_csv())
    e = prof.summarize(ncu.numbers(rows), units, rung("10_chip"), json.loads(CHILD_LINE.split(" ", 1)[1]))
    seconds = 181152e-9
    assert e["duration_us"] == pytest.approx(181.152) and e["sm_clock_mhz"] == pytest.approx(1755.0)
    assert e["pipe"] == "tensor" and e["tensor_active_pct"] == pytest.approx(89.26) and e["fma_pipe_pct"] == 0.41
    assert e["l2_tbps"] == pytest.approx(1610612736 / seconds / 1e12, abs=1e-4)
    assert e["l2_pct"] == pytest.approx(100 * 1610612736 / seconds / (7680 * 1.6e9), abs=0.01)
    assert e["tma_tbps"] == pytest.approx(1577058304 / seconds / 1e12, abs=1e-4)
    assert e["smem_tbps"] == pytest.approx(33554432 / seconds / 1e12, abs=1e-4)
    assert e["dram_bytes"] == 170345472 + 33554432
    assert (e["registers"], e["ptxas_registers"], e["spill_bytes"]) == (168, 168, 0)
    assert e["occupancy_pct"] == pytest.approx(18.7) and e["theoretical_occupancy_pct"] == 18.75
    assert e["l2_hit_pct"] == pytest.approx(80.13) and e["tile"] == [128, 256]
    assert e["stall_family"].startswith("sampled")
    assert e["metric_source"]["duration_us"] == "gpu__time_duration.sum [nsecond]"
    assert e["metric_source"]["tensor_active_pct"].startswith("sm__pipe_tensor_op_hmma_cycles_active")
    assert e["raw"]["gpu__time_duration.sum"] == 181152 and "launch__grid_size" in e["raw"]
    json.dumps(e)  # recordable as it is


def test_simt_rungs_report_the_fma_pipe():
    rows, units = ncu.parse_raw_csv(raw_csv())
    e = prof.summarize(ncu.numbers(rows), units, rung("01_warptiled"), None)
    assert e["pipe"] == "fma" and e["tensor_active_pct"] == 0.41 and e["tensor_pipe_pct"] == pytest.approx(89.26)
    assert e["metric_source"]["tensor_active_pct"].startswith("sm__pipe_fma_cycles_active")
    assert e["spill_bytes"] is None  # no child line: unknown, not zero


def test_stall_shares_sum_to_one_without_issuing_subsets_or_breakdowns():
    rows, _ = ncu.parse_raw_csv(raw_csv())
    shares, family, issuing = prof.stall_shares(ncu.numbers(rows))
    assert family.startswith("sampled")
    assert shares == {"sleeping": 0.64, "wait": 0.2, "long_scoreboard": 0.12, "barrier": 0.04}
    assert list(shares) == ["sleeping", "wait", "long_scoreboard", "barrier"]  # largest first
    assert sum(shares.values()) == pytest.approx(1.0)
    assert issuing == pytest.approx(40 / 1040, abs=1e-4)
    # without the sampled counters (a lower metric tier), WarpStateStats' own family gives the shares
    per_issue = {"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": 3.0,
                 "smsp__average_warps_issue_stalled_long_scoreboard_pipe_l1tex_per_issue_active.ratio": 2.5,
                 "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio": 0.5,
                 "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio": 0.5,
                 "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio": 1.0,
                 "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": 1.0}
    shares, family, issuing = prof.stall_shares(per_issue)
    assert family.startswith("cycles per issued instruction")
    assert shares == {"long_scoreboard": 0.6, "wait": 0.2, "math_pipe_throttle": 0.1, "not_selected": 0.1}
    assert sum(shares.values()) == pytest.approx(1.0) and issuing == pytest.approx(1 / 6, abs=1e-4)
    assert prof.stall_shares({"gpu__time_duration.sum": 1.0}) == ({}, None, None)


def test_child_script_names_what_exists_and_tiers_nest():
    """The child only runs on the GPU host: at least its syntax and the attributes it reads are checked here."""
    from dataclasses import fields

    from helpers.compiler import Build, Resources
    from helpers.kernel import Kernel
    from helpers.launch import Launch
    compile(ncu.CHILD, "<child>", "exec")
    assert {"grid", "block", "smem", "kernel"} <= {f.name for f in fields(Launch)} and hasattr(Launch, "rung")
    assert isinstance(Kernel.tile, property) and "build" in {f.name for f in fields(Kernel)}
    assert "resources" in {f.name for f in fields(Build)}
    assert {"registers", "spill_stores", "spill_loads"} <= {f.name for f in fields(Resources)}
    assert set(ncu.TIERS[2]) <= set(ncu.TIERS[1]) <= set(ncu.TIERS[0])
    assert all(m in ncu.TIERS[2] for m in ("gpu__time_duration.sum", "dram__bytes_read.sum"))


# ---- the runner, against a stand-in for ncu -----------------------------------------------------------------------

FAKE_NCU = """#!{python}
import os, sys, time
args = sys.argv[1:]
with open(os.environ["FAKE_NCU_LOG"], "a") as log:
    log.write(repr(args) + "\\n")
if "--version" in args:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2025.3.0.0 (build 36273991) (public-release)")
    sys.exit(0)
mode = os.environ["FAKE_NCU_MODE"]
metrics = args[args.index("--metrics") + 1]
if mode == "sleep":
    time.sleep(60)
if mode == "traceback":
    print("Traceback (most recent call last):\\n  File \\"<string>\\", line 6\\nShapeError: no")
    sys.exit(1)
if mode == "no-regex" and "regex:" in metrics:
    print("==ERROR== Failed to find metric regex:smsp__pcsamp_warps_issue_stalled_.*", file=sys.stderr)
    sys.exit(1)
sys.stdout.write(open(os.environ["FAKE_NCU_CSV"]).read())
"""


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    """`ncu` on PATH is a script that logs its arguments and prints a canned raw-page CSV (FAKE_NCU_MODE changes
    that); the tier memo and the version cache start fresh."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable))
    fake.chmod(0o755)
    (tmp_path / "raw.csv").write_text(raw_csv())
    log = tmp_path / "calls.log"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_CSV", str(tmp_path / "raw.csv"))
    monkeypatch.setenv("FAKE_NCU_LOG", str(log))
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setattr(prof, "_FIRST_TIER", [0])
    ncu.ncu_version.cache_clear()
    yield monkeypatch, log
    ncu.ncu_version.cache_clear()


def _calls(log) -> list[list[str]]:
    import ast
    return [ast.literal_eval(x) for x in log.read_text().splitlines()]


def test_collect_runs_ncu_as_documented(fake_ncu):
    _, log = fake_ncu
    e = prof.collect(rung("10_chip"), 4096)
    assert e["n"] == 4096 and e["kernel"] == "gemm_chip" and e["launches"] == 3
    assert e["ncu"]["version"] == "2025.3.0.0" and e["ncu"]["tier"] == 0 and e["ncu"]["tiers_failed"] == []
    assert e["duration_us"] == pytest.approx(181.152) and sum(e["stall_reasons"].values()) == pytest.approx(1)
    args = next(c for c in _calls(log) if "--version" not in c)
    text = " ".join(args)
    for want in ("--csv --page raw --print-units base", "--clock-control none", "--cache-control none",
                 f"--nvtx --nvtx-include {ncu.RANGE}/", f"--launch-count {ncu.LAUNCHES}",
                 "--section SpeedOfLight", "--section WarpStateStats", "--section LaunchStats"):
        assert want in text, want
    assert args[args.index("--metrics") + 1] == ",".join(ncu.TIERS[0])
    assert args[-7:] == [ncu.CHILD, "10_chip", "4096", str(ncu.LAUNCHES), str(ncu.SLOW_MS), ncu.RANGE,
                         "{}"]  # no constexpr overrides: the rung as built
    assert e["ncu"]["command"][-7] == "<CHILD>"


def test_an_unknown_metric_falls_back_to_the_next_tier_once(fake_ncu):
    monkeypatch, log = fake_ncu
    monkeypatch.setenv("FAKE_NCU_MODE", "no-regex")
    e = prof.collect(rung("10_chip"), 4096)
    assert e["ncu"]["tier"] == 1 and e["ncu"]["tiers_failed"] == [0]
    assert e["stall_family"].startswith("sampled")  # the canned CSV still has them; a real tier 1 would not
    prof.collect(rung("12_fp8"), 4096)  # the next rung starts at the tier that worked
    profiled = [c for c in _calls(log) if "--version" not in c]
    assert ["regex:" in c[c.index("--metrics") + 1] for c in profiled] == [True, False, False]


def test_without_the_childs_line_the_build_gives_registers_and_spills(fake_ncu, tmp_path):
    monkeypatch, _ = fake_ncu
    (tmp_path / "bare.csv").write_text(raw_csv().replace(CHILD_LINE + "\n", ""))
    monkeypatch.setenv("FAKE_NCU_CSV", str(tmp_path / "bare.csv"))
    e = prof.collect(rung("09_setmaxnreg"), 4096)
    assert e["spill_bytes"] == 0 and e["ptxas_registers"] > 0 and e["tile"] == [128, 256]


def test_a_failing_child_is_one_sentence_and_not_retried(fake_ncu):
    monkeypatch, log = fake_ncu
    monkeypatch.setenv("FAKE_NCU_MODE", "traceback")
    with pytest.raises(RuntimeError, match=r"(?s)profiled no launch of 05_cp_async at N=4096 .*ShapeError: no"):
        prof.collect(rung("05_cp_async"), 4096)
    assert len(_calls(log)) == 1


def test_a_hung_ncu_is_stopped_at_its_timeout(fake_ncu):
    monkeypatch, _ = fake_ncu
    monkeypatch.setenv("FAKE_NCU_MODE", "sleep")
    with pytest.raises(RuntimeError, match="did not finish within 2 s"):
        prof.collect(rung("05_cp_async"), 4096, timeout=2)


# ---- replay through obtain() and the CLI --------------------------------------------------------------------------

FAKE_ENTRY = {"rung": "10_chip", "n": 4096, "run": "2026-12-01T10:00Z-test", "gpu": "NVIDIA H100 80GB HBM3",
              "date": "2026-12-01 10:05 UTC", "env": {"name": "NVIDIA H100 80GB HBM3"}, "duration_us": 181.152,
              "sm_clock_mhz": 1755.0, "pipe": "tensor", "tensor_active_pct": 89.26, "tensor_pipe_pct": 89.26,
              "fma_pipe_pct": 0.41, "stall_reasons": {"barrier": 0.04, "long_scoreboard": 0.12, "sleeping": 0.64,
                                                      "wait": 0.2},
              "l2_tbps": 8.8909, "l2_pct": 72.35, "smem_tbps": 0.1852, "dram_bytes": 203899904, "registers": 168,
              "spill_bytes": 0, "occupancy_pct": 18.7, "metric_source": {"duration_us": "gpu__time_duration.sum"},
              "raw": {"gpu__time_duration.sum": 181152.0}}
REQUIRED = {"rung", "n", "run", "duration_us", "sm_clock_mhz", "tensor_active_pct", "stall_reasons", "l2_tbps",
            "l2_pct", "smem_tbps", "dram_bytes", "registers", "spill_bytes", "occupancy_pct", "metric_source", "raw"}


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """A copy of the recorded results with one profile in it, replayed (GEMM_LADDER_REPLAY=1)."""
    path = tmp_path / "results.json"
    shutil.copy(ROOT / "results" / "nvidia-h100-80gb-hbm3" / "run.json", path)
    data = json.loads(path.read_text())
    data["profiles"] = {"10_chip@4096": FAKE_ENTRY}
    path.write_text(json.dumps(data))
    monkeypatch.setenv("GEMM_LADDER_RESULTS", str(path))
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    return path


def test_replay_returns_the_recorded_entry(recorded):
    from helpers.store import NotRecorded
    e = prof.profile("10_chip", 4096)
    assert e["source"] == "recorded" and "env" not in e and REQUIRED <= set(e)
    assert e["stall_reasons"] == FAKE_ENTRY["stall_reasons"] and e["run"] == FAKE_ENTRY["run"]
    with pytest.raises(NotRecorded, match=r"^The profile of 10_chip at N=8192 was never recorded in .*\.$"):
        prof.profile("10_chip", 8192)


def _cli(*args, env):
    return subprocess.run([sys.executable, "-m", "helpers", "profile", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "MPLBACKEND": "Agg", **env})


def test_cli_json_has_the_keys(recorded):
    env = {"GEMM_LADDER_RESULTS": str(recorded), "GEMM_LADDER_REPLAY": "1"}
    out = _cli("--json", "--rungs", "10_chip", "--n", "4096", env=env)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert len(got) == 1 and REQUIRED <= set(got[0]) and got[0]["source"] == "recorded"
    assert sum(got[0]["stall_reasons"].values()) == pytest.approx(1)
    table = _cli("--rungs", "10_chip", "--n", "4096", env=env)
    assert table.returncode == 0 and "10_chip" in table.stdout and "sleeping 64%" in table.stdout
    # one size recorded, one not: the recorded one is printed, the other is one line, and the exit code says so
    both = _cli("--json", "--rungs", "10_chip", "--n", "4096", "8192", env=env)
    assert both.returncode == 1 and len(json.loads(both.stdout)) == 1
    assert both.stderr.strip().splitlines() == [next(x for x in both.stderr.splitlines() if "N=8192" in x)]


def test_cli_never_recorded_is_one_line_and_exit_1(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"ceilings": {}, "gemm": {}}))
    out = _cli("--json", "--rungs", "10_chip", "--n", "4096",
               env={"GEMM_LADDER_RESULTS": str(path), "GEMM_LADDER_REPLAY": "1"})
    assert out.returncode == 1 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "10_chip at N=4096 was never recorded" in lines[0]


def test_cli_refuses_an_unknown_rung_in_one_line(tmp_path):
    out = _cli("--rungs", "99_nope", env={"GEMM_LADDER_REPLAY": "1"})
    assert out.returncode == 2 and "no rung named '99_nope'" in out.stderr and "Traceback" not in out.stderr


def test_profiles_survive_pruning_and_main_is_the_default():
    from tools import prune_results
    assert "profiles" in prune_results.NCU and "profiles" not in prune_results.TIMED
    assert MAIN[0] == "01_naive" and MAIN[-1] == "12_fp8"


def test_pruning_keeps_every_section_the_book_reads(tmp_path, monkeypatch):
    """tools.prune_results drops a section it does not know as unread: every section of the recorded runs must be
    one it knows (stall_sites was once dropped that way, at the end of a run that had just recorded it)."""
    import json
    from helpers import results
    from tools import prune_results
    for path in results.RESULTS.glob("*/" + results.RUN_FILE):
        sections = set(json.loads(path.read_text()))
        assert sections <= set(prune_results.TIMED) | set(prune_results.NCU), (path, sections)
    # and pruning a copy of the reference run keeps every section whole that is not timed
    run = json.loads(results.path_for().read_text())
    copy = tmp_path / "run.json"
    copy.write_text(json.dumps(run))
    monkeypatch.setattr(results, "path_for", lambda slug=None: copy)
    monkeypatch.setattr(prune_results, "device", lambda: type("D", (), {"slug": "x"})())
    prune_results.prune("no such run")
    kept = json.loads(copy.read_text())
    assert set(kept) == set(run) and all(kept[s] == run[s] for s in prune_results.NCU if s in run)


@pytest.mark.gpu
def test_live_profile_of_a_small_launch(tmp_results):
    """On the GPU host: rung 05 at 1024 profiled under the real ncu, nothing recorded in results/."""
    if shutil.which("ncu") is None:
        pytest.skip("Nsight Compute's ncu is not on PATH")
    e = prof.profile("05_cp_async", 1024, save=False)
    print({k: v for k, v in e.items() if k != "raw"})  # what the real ncu gave, in the test log
    assert e["source"] in ("live", "this run") and e["kernel"].startswith("gemm_cp_async")
    assert 0 < e["duration_us"] < 10_000 and e["launches"] == ncu.LAUNCHES
    assert 0 < e["tensor_active_pct"] <= 100 and e["registers"] > 0 and e["spill_bytes"] == 0
    assert e["stall_reasons"] and sum(e["stall_reasons"].values()) == pytest.approx(1, abs=0.01)
    # 1024^2 bf16 operands (4 MB) stay in the 50 MB L2 between launches when ncu does not flush (--cache-control
    # none): DRAM may read nothing at all (run 2026-11-26T18:01Z-h100 saw 0 bytes), so only its presence is asserted
    assert e["occupancy_pct"] > 0 and e["dram_bytes"] >= 0 and len(e["raw"]) > 50
    if e["ncu"]["tier"] < 2:  # the lowest tier has only the metrics this H100 recorded before
        assert 500 < e["sm_clock_mhz"] < 2500 and e["l2_tbps"] > 0 and e["smem_tbps"] > 0


def test_stall_sites_read_the_source_page_and_name_the_waits():
    """helpers.sites: the source page's SASS rows are summed per address over the profiled launches (one header per
    launch), ranked by samples; a WARPGROUP.DEPBAR is wgmma.wait_group, not __syncthreads; a branch right after an
    mbarrier try_wait is that wait loop; barrier samples on the instruction after a BAR.SYNC are the barrier's; shares
    sum over all samples."""
    from helpers.sites import by_kind, parse_source_csv, stall_sites
    head = '"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)","stall_barrier",' \
        '"Instructions Executed"\n'
    body = ('"00007ef0","HGMMA.64x256x16.F32.BF16 R24, gdesc[UR12], R24","0","0","0","16"\n'
            '"00007f00","WARPGROUP.DEPBAR.LE gsb0, 0x0","30","20","30","16"\n'
            '"00007f10","SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x8], R3","5","5","0","16"\n'
            '"00007f20","@!P0 BRA 0x7f10","10","9","0","16"\n'
            '"00007f30","BAR.SYNC.DEFER_BLOCKING 0x0","1","1","1","2"\n'
            '"00007f40","BSSY B0, 0x7f90","4","4","4","2"\n')
    launch = '"Kernel Name","gemm"\n' + head + body
    rows = parse_source_csv("==PROF== noise\n" + launch + launch)
    assert [r["samples"] for r in rows] == [0, 60, 10, 20, 2, 8]
    got = stall_sites(rows)
    assert got["total_samples"] == 100
    kinds = [(s["opcode"], s["kind"].split(",")[0], s["share"]) for s in got["sites"]]
    assert kinds[0] == ("WARPGROUP.DEPBAR.LE", "wgmma.wait_group", 0.6), kinds
    assert kinds[1][0] == "BRA" and kinds[1][1].startswith("mbarrier.try_wait loop"), kinds
    assert got["mma_executed"] == 32 and got["sites"][1]["executed"] == 32  # the loop runs once per k step
    assert got["sites"][0]["reasons"] == {"barrier": 1.0}
    bssy = next(s for s in got["sites"] if s["opcode"] == "BSSY")
    assert bssy["kind"].startswith("bar.sync") and "after it" in bssy["kind"], bssy
    assert abs(sum(by_kind(got).values()) - 1) < 1e-9
    assert stall_sites([]) == {"total_samples": 0, "mma_executed": None, "sites": []}


def test_the_shared_memory_port_adds_operand_reads_and_tma_fills():
    """helpers.profile.port: reads are the LSU shared-memory wavefronts (% of one a clock), fills the TMA bytes per SM
    per clock over 128 B; a profile without the TMA counter has no port figure rather than a wrong one."""
    from helpers.profile import port
    e = {"duration_us": 1000.0, "smem_pipe_pct": 60.0,
         "raw": {"l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.avg": 0.35 * 128 * 1.5e6,
                 "sm__cycles_elapsed.avg.per_second": 1.5e9}}
    got = port(e)
    assert got["smem_fill_pct"] == 35.0 and got["smem_port_pct"] == 95.0
    assert port({"duration_us": 1.0, "smem_pipe_pct": 60.0, "raw": {}})["smem_port_pct"] is None
