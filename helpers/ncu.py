"""Nsight Compute, run and read: the command line that profiles one launch of a rung, the child process it
profiles, and the parsing of its CSV pages into numbers. helpers.profile turns those numbers into a profile's keys
and records it; tools/crosscheck.py and tools/bank_conflicts.py collect their counters through `ncu_rows`.

How a profile is taken, the same way for every rung and size:
- Nsight Compute runs a child Python process (CHILD) that prepares the launch exactly as check() and bench() do,
  launches it twice unprofiled (the first pays for loading and cold caches; the second is timed to decide how many
  to profile), then launches it LAUNCHES times (once for a rung slower than SLOW_MS a launch: every profiled launch
  is replayed once per collection pass) inside the NVTX range RANGE. Only those launches are profiled
  (`--nvtx --nvtx-include RANGE/`), and every number is the median over them.
- `--clock-control none`: the card at its own clocks, as the harness measures it (ncu would otherwise lock them to
  base). `--cache-control none`: no cache flush before each replay pass; the harness does not flush either, so the
  two compare like with like (issue "evidence", item 4: the flush alone moved the FP8 crosscheck by 2 points).
- What is collected: Nsight Compute's own sections (SECTIONS), whose metric names are by construction right for the
  installed version and chip, plus explicit metrics (TIERS) for what those sections do not carry: bytes from L2
  into the SMs, shared-memory bytes, DRAM bytes written, the FMA and tensor pipes, the sampled stall reasons.
- What is read: `--csv --page raw --print-units base`: one row per profiled launch with EVERY collected metric
  under its real name (the details page shows display labels instead, and no stall breakdown at all), under a header
  row and a units row. Every numeric metric is kept in the entry under "raw" (median over the launches, in ncu's
  base units: nanoseconds, bytes, cycles, per second, %), so nothing collected is lost; helpers.profile derives its
  keys (KEYS) from it, and "metric_source" names the metric (or formula) behind each.
- Tiers: one explicit metric this ncu does not know makes it profile nothing, so the explicit list is tried in TIERS,
  each a subset of the one before; the first tier that profiles is used for the rest of the process and recorded.
"""
from __future__ import annotations

import csv
import functools
import io
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys

from .registry import ROOT, Rung

RANGE = "gemm_ladder_profile"
LAUNCHES = 3
SLOW_MS = 50.0        # 01_naive at 8192 takes 2.2 s a launch: profiled once, not three times
TIMEOUT_S = 300       # one ncu run; 01_naive at 8192 is the longest (2.2 s x one replay per pass)

SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis", "WarpStateStats", "Occupancy", "LaunchStats",
            "ComputeWorkloadAnalysis")

# Explicit metrics, in three tiers of confidence that the installed ncu knows the name on sm_90.
# Recorded in the book's run already (tools.bank_conflicts, tools.l2_schedule, tools.crosscheck put them in results/):
RECORDED_HERE = (
    "gpu__time_duration.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram__bytes_read.sum",
    "lts__t_sector_hit_rate.pct",
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
)
# Named verbatim in Nsight Compute's own section files (SpeedOfLight_HierarchicalSingleRooflineChart: "SM
# Frequency", "L2 Cache Bandwidth", its peak and the L2 clock) or in wide use on Ampere and Hopper:
FROM_SECTION_FILES = (
    "sm__cycles_elapsed.avg.per_second",
    "l1tex__m_xbar2l1tex_read_bytes.sum",                 # L2 -> L1TEX/shared memory over the crossbar, TMA included
    "l1tex__m_xbar2l1tex_read_bytes.sum.peak_sustained",  # its peak, bytes per L2 cycle (the roofline's L2 roof)
    "lts__cycles_elapsed.avg.per_second",
    "lts__t_bytes.sum",                                   # everything the L2 slices served, reads and writes
    "lts__t_sectors_srcunit_tex_op_read.sum",             # sectors the SMs read from L2 (a cross-check of the above)
    "dram__bytes_write.sum",
    "sm__sass_data_bytes_mem_shared.sum",                 # bytes moved by shared-memory instructions (LSU path)
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
)
# Least certain: the PC-sampling stall counters (a regex, so a reason this chip lacks is no error) and the TMA
# share of the L2 -> SM bytes.
SAMPLED = (
    "regex:smsp__pcsamp_warps_issue_stalled_.*",
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",      # local memory: what a spill costs at run time
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
)
TIERS = (RECORDED_HERE + FROM_SECTION_FILES + SAMPLED, RECORDED_HERE + FROM_SECTION_FILES, RECORDED_HERE)

# Where each derived number comes from: candidate metrics in order of preference (the first one collected wins).

CHILD = r"""
import json, sys
import cupy as cp
from helpers.formats import FP8, FP8_INPUT_SCALE
from helpers.csource import apply_config
from helpers.launch import prepare
from helpers.csource import source
from helpers.kernel import overriding
from helpers.registry import rung
rung_id, n, launches, slow_ms, nvtx_range, config = sys.argv[1:7]
config = json.loads(config)  # constexpr overrides: a variant of the rung (an experiment), or {} for the rung;
text = open(config.pop("source_file")).read() if "source_file" in config else source(rung_id)  # or another source
lau = prepare(overriding(rung(rung_id), config), int(n),  # an override beats the registry's config, as in variant()
              source=apply_config(text, config) if config or text != source(rung_id) else None)
r = lau.rung
a, b = lau.inputs()
c = lau.output()
args = lau.args(a, b, c, FP8_INPUT_SCALE**2 if r.dtype in FP8 else 1.0)  # bench()'s scale for an FP8 rung
lau.enqueue(args)  # unprofiled: loading, cold caches
start, stop = cp.cuda.Event(), cp.cuda.Event()
start.record()
lau.enqueue(args)
stop.record()
stop.synchronize()
ms = cp.cuda.get_elapsed_time(start, stop)
launches = int(launches) if ms < float(slow_ms) else 1
cp.cuda.nvtx.RangePush(nvtx_range)
for _ in range(launches):
    lau.enqueue(args)
cp.cuda.runtime.deviceSynchronize()
cp.cuda.nvtx.RangePop()
res = lau.kernel.build.resources.get(r.entry)
print("PROFILE-CHILD " + json.dumps({
    "entry": r.entry, "tile": list(lau.kernel.tile), "cluster": lau.kernel.consts.get("CLUSTER"),
    "grid": list(lau.grid), "block": list(lau.block),
    "smem_bytes": lau.smem, "launches": launches, "unprofiled_ms": ms,
    "ptxas_registers": res.registers if res else None, "spill_store_bytes": res.spill_stores if res else None,
    "spill_load_bytes": res.spill_loads if res else None}), flush=True)
"""
CHILD_MARK = "PROFILE-CHILD "


def ncu_path() -> str:
    found = shutil.which("ncu")
    if found is None:
        raise RuntimeError("Nsight Compute's `ncu` is not on PATH; install Nsight Compute (it ships with the CUDA "
                           "toolkit) or put its folder on PATH.")
    return found


def tail_of(text: str, chars: int = 2000) -> str:
    return text.strip()[-chars:]


def run_ncu(cmd: list, timeout: int) -> tuple[str, str]:
    """(stdout, stderr) of an ncu command run from the repository root (so its child imports helpers). Past
    `timeout` seconds ncu and the process it profiles (the process group this call started) are killed and the
    failure is one sentence with the tail of their output."""
    proc = subprocess.Popen([str(x) for x in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # ncu's session: ncu and the program it profiles, nothing else
        except ProcessLookupError:
            pass
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # something outside the group still holds the pipes: give up reading
            out, err = "", ""
        raise RuntimeError(f"Nsight Compute did not finish within {timeout} s and was stopped; the end of its "
                           f"output: {tail_of(out + err)}") from None
    return out, err


def parse_ncu_csv(stdout: str) -> list[dict]:
    """The metric rows of `ncu --csv` output (its details page) as dicts (column name -> text), from its header line
    on: the program's own prints and ncu's ==PROF== lines before it are skipped."""
    rows = [r for r in csv.reader(io.StringIO(stdout)) if len(r) > 5]
    first = next((i for i, r in enumerate(rows) if "Kernel Name" in r and "Metric Value" in r), None)
    return [] if first is None else [dict(zip(rows[first], r)) for r in rows[first + 1:]]


def ncu_rows(args: list, script: str, *script_args: str, timeout: int = 600) -> tuple[list[dict], str]:
    """Run `python -c script script_args...` under Nsight Compute (the card's own clocks) with extra ncu `args`;
    return its metric rows (details page) and the program's stdout. Fails in one sentence, with ncu's output, if
    there are none. (tools/bank_conflicts.py, tools/l2_schedule.py and tools/crosscheck.py collect through this.)"""
    out, err = run_ncu([ncu_path(), "--csv", "--clock-control", "none", *args, sys.executable, "-c", script,
                        *script_args], timeout)
    rows = parse_ncu_csv(out)
    if not rows:
        raise RuntimeError(f"ncu gave no metrics for {script_args}:\n{out[-2000:]}\n{err[-2000:]}")
    return rows, out


def parse_raw_csv(stdout: str) -> tuple[list[dict], dict]:
    """(rows, units) of `ncu --csv --page raw` output: one dict per profiled launch (column -> text) and the units
    row (metric -> unit). ncu quotes every CSV field, so only lines that start with a quote are read (the child's
    own prints and ncu's ==PROF== lines are not CSV); should a version quote less, every line but those is read."""
    lines = stdout.splitlines()
    for keep in (lambda x: x.startswith('"'), lambda x: not x.startswith(("==", CHILD_MARK))):
        table = list(csv.reader(io.StringIO("\n".join(x for x in lines if keep(x)))))
        first = next((i for i, r in enumerate(table) if "ID" in r and "Kernel Name" in r and "Metric Value" not in r),
                     None)
        if first is not None:
            break
    else:
        return [], {}
    header, rows, units = table[first], [], {}
    for r in table[first + 1:]:
        if len(r) != len(header):
            continue
        row = dict(zip(header, r))
        if row["ID"].strip().isdigit():
            rows.append(row)
        elif not row["ID"].strip() and not units and not rows:  # the units row, right under the header
            units = {k: v for k, v in row.items() if v}
    return rows, units


def numbers(rows: list[dict]) -> dict[str, float]:
    """Every numeric metric of the rows (metric names all have a double underscore; ID, Kernel Name and the like do
    not), median over the rows; ncu prints thousands with commas. device__attribute_* are the same for every
    kernel (the entry's env has the device) and are left out."""
    got: dict[str, list] = {}
    for row in rows:
        for name, text in row.items():
            if "__" not in name or name.startswith("device__attribute_"):
                continue
            try:
                value = float(text.replace(",", ""))
            except ValueError:  # n/a, or a text-valued metric
                continue
            if math.isfinite(value):
                got.setdefault(name, []).append(value)
    return {name: statistics.median(v) for name, v in got.items()}


_PREFIX = {"": 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_WORDS = ("second", "byte", "hz", "Hz", "cycle", "sector", "inst", "warp", "request", "wavefront", "thread", "block")


_TIME = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}  # ncu 2025.3's raw page writes durations as "ns"


def _factor(part: str) -> float:
    part = part.strip()
    if part in _TIME:
        return _TIME[part]
    for word in _WORDS:
        if part.endswith(word) and part[: -len(word)] in _PREFIX:
            return _PREFIX[part[: -len(word)]]
    return 1.0  # %, ratios, plain counts


def to_si(value: float, unit: str) -> float:
    """A value in ncu's unit ("nsecond", "Gbyte/second", "cycle/nsecond", "Mhz", "%") in seconds, bytes, per second,
    hertz; anything else unchanged."""
    num, _, den = unit.partition("/")
    return value * _factor(num) / (_factor(den) if den else 1.0)


@functools.lru_cache(maxsize=1)
def ncu_version() -> str | None:
    try:
        out = subprocess.run([ncu_path(), "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, RuntimeError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"Version\s+(\S+)", out)
    return found.group(1) if found else (out.strip().splitlines() or [None])[-1]


def command(r: Rung, n: int, tier: int, config: dict | None = None) -> list[str]:
    """The ncu command line that profiles rung r (built with the constexpr overrides `config`, if any) at N x N x N
    with the explicit metrics of `tier`."""
    return [ncu_path(), "--csv", "--page", "raw", "--print-units", "base",
            "--clock-control", "none", "--cache-control", "none",
            "--nvtx", "--nvtx-include", f"{RANGE}/", "--launch-count", str(LAUNCHES),
            *[arg for s in SECTIONS for arg in ("--section", s)],
            "--metrics", ",".join(TIERS[tier]),
            sys.executable, "-c", CHILD, r.id, str(n), str(LAUNCHES), str(SLOW_MS), RANGE,
            json.dumps(config or {})]


def child_info(stdout: str) -> dict | None:
    """What the child printed about its launch (tile, geometry, ptxas resources), or None."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(CHILD_MARK):
            try:
                return json.loads(line[len(CHILD_MARK):])
            except json.JSONDecodeError:
                return None
    return None
