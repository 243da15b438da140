"""Nsight Compute profiles: why each rung runs at the speed it does, measured (issue "evidence", item 2).

    p = profile("10_beyond_cublas", 4096)   # live (an H100 with ncu): profiled once per run and recorded
                                            # elsewhere: the recorded entry, or NotRecorded in one sentence
    python -m helpers profile [--replay] [--json] [--rungs ID ...] [--n N ...]

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
  base units: nanoseconds, bytes, cycles, per second, %), so nothing collected is lost; the keys in KEYS are
  derived from it, and "metric_source" names the metric (or formula) behind each.
- Tiers: one explicit metric this ncu does not know makes it profile nothing, so the explicit list is tried in TIERS,
  each a subset of the one before; the first tier that profiles is used for the rest of the process and recorded.

What each key of an entry means: KEYS (also printed by `python -m helpers profile --help`).
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

from .registry import ROOT, Rung, rung as _rung

SECTION = "profiles"  # results/<gpu>.json section; keys are "<rung>@<N>"
RANGE = "gemm_ladder_profile"
LAUNCHES = 3
SLOW_MS = 50.0        # 01_naive at 8192 takes 2.2 s a launch: profiled once, not three times
TIMEOUT_S = 300       # one ncu run; 01_naive at 8192 is the longest (2.2 s x one replay per pass)

SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis", "WarpStateStats", "Occupancy", "LaunchStats",
            "ComputeWorkloadAnalysis")

# Explicit metrics, in three tiers of confidence that the installed ncu knows the name on sm_90.
# Recorded on this H100 already (ci/bank_conflicts.py, ci/l2_schedule.py, ci/crosscheck.py put them in results/):
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
METRICS: dict[str, tuple[str, ...]] = {
    "duration": ("gpu__time_duration.sum",),
    # SM clock while the kernel ran ("SM Frequency" of SpeedOfLight and of NVIDIA's roofline section)
    "sm_clock": ("sm__cycles_elapsed.avg.per_second", "smsp__cycles_elapsed.avg.per_second",
                 "gpc__cycles_elapsed.avg.per_second"),
    "sm_cycles": ("sm__cycles_elapsed.avg", "gpc__cycles_elapsed.max"),  # clock fallback: cycles / duration
    # Tensor pipe busy over the kernel's duration. On Hopper this counter counts wgmma (HGMMA and QGMMA) too: this
    # H100 recorded 89% for rung 10 and 83% for the FP8 rung at 4096 (ci/l2_schedule.py), the FP8 rung doing twice
    # the FLOPs per busy cycle.
    "tensor_pipe": ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
                    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"),
    # FP32 FFMA pipe: the SIMT rungs' equivalent of the tensor pipe
    "fma_pipe": ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
                 "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
                 "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"),
    # L2 -> SM: what the crossbar delivered into L1TEX/shared memory (LDG, cp.async and TMA loads alike). A multicast
    # TMA load is served once by L2 and received by each SM of the cluster; whether each receiver counts it here is
    # not verified: raw keeps lts__t_sectors_srcunit_tex_op_read (what L2 served to the SMs) to compare.
    "l2_to_sm_bytes": ("l1tex__m_xbar2l1tex_read_bytes.sum",),
    "l2_to_sm_peak": ("l1tex__m_xbar2l1tex_read_bytes.sum.peak_sustained",),
    "l2_clock": ("lts__cycles_elapsed.avg.per_second",),
    "l2_read_sectors_by_sm": ("lts__t_sectors_srcunit_tex_op_read.sum",),  # fallback for the bytes, 32 B a sector
    "tma_bytes": ("l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",),
    "l2_bytes": ("lts__t_bytes.sum",),
    "l2_throughput_pct": ("lts__throughput.avg.pct_of_peak_sustained_elapsed",),  # SpeedOfLight "L2 Cache Throughput"
    "l2_hit_pct": ("lts__t_sector_hit_rate.pct",),
    # Shared memory through the LSU pipe: LDS/STS/LDSM/STSM (and cp.async's writes, which ncu breaks out as
    # op_ldgsts). Not counted: TMA's writes into shared memory (the async proxy: see the L2 -> SM bytes) and wgmma's
    # operand reads from shared memory, which go straight to the tensor cores (chapter 00's probes measure that path).
    "smem_bytes": ("sm__sass_data_bytes_mem_shared.sum", "smsp__sass_data_bytes_mem_shared.sum"),
    "smem_pipe_pct": ("l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",),
    "dram_read": ("dram__bytes_read.sum",),
    "dram_write": ("dram__bytes_write.sum",),
    "local_load_sectors": ("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",),
    "local_store_sectors": ("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",),
    "dram_throughput_pct": ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                            "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    "registers": ("launch__registers_per_thread",),                               # LaunchStats
    "occupancy": ("sm__warps_active.avg.pct_of_peak_sustained_active",),          # Occupancy "Achieved Occupancy"
    "theoretical_occupancy": ("sm__maximum_warps_per_active_cycle_pct",),         # Occupancy "Theoretical"
    "sm_busy": ("sm__cycles_active.avg.pct_of_peak_sustained_elapsed",),
    "sm_throughput": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),       # SpeedOfLight "Compute (SM)"
}

# Warp-state families, in order of preference; the first one collected gives the shares. The sampled family is
# what the issue asks for (and what ncu's source view shows); the counted families are what the WarpStateStats
# section is expected to bring whatever the metric tier (which of the two depends on the ncu version).
STALL_FAMILIES = (
    ("sampled: smsp__pcsamp_warps_issue_stalled_<reason>",
     re.compile(r"^smsp__pcsamp_warps_issue_stalled_([a-z0-9_]+)$")),
    ("cycles per issued instruction: smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio",
     re.compile(r"^smsp__average_warps_issue_stalled_([a-z0-9_]+)_per_issue_active\.ratio$")),
    ("warp latency: smsp__average_warp_latency_issue_stalled_<reason>",
     re.compile(r"^smsp__average_warp_latency_issue_stalled_([a-z0-9_]+)(?:\.ratio)?$")),
)
ISSUING = "selected"  # the warp issued: not a stall, reported apart as issuing_share

KEYS = {
    "rung, n": "the rung and the square size N (M = N = K)",
    "run, gpu, date, source": "the run that measured it; source is live, this run, or recorded (replayed)",
    "duration_us": "kernel duration (gpu__time_duration), median over the profiled launches, in microseconds",
    "sm_clock_mhz": "SM clock while it ran (ncu's SM Frequency), the card's own clock, not locked",
    "tensor_active_pct": "the rung's math pipe busy, % of peak over the duration: the tensor pipe (HMMA, HGMMA, "
                         "QGMMA) for the tensor-core rungs, the FP32 FMA pipe for the SIMT rungs; `pipe` says which",
    "pipe, tensor_pipe_pct, fma_pipe_pct": "which pipe tensor_active_pct is, and both pipes apart",
    "stall_reasons": "warp-state stall reason -> share of all stalled samples (sums to 1; issuing excluded)",
    "stall_family, issuing_share": "which counters gave the shares; share of samples where the warp was issuing",
    "l2_tbps, l2_pct": "L2 -> SM bytes (L1TEX/shared memory, TMA included) per second, TB/s, and % of that path's "
                       "peak (NVIDIA's L2 roof: peak bytes per L2 cycle x L2 clock)",
    "tma_tbps": "the TMA loads' part of l2_tbps (where collected)",
    "l2_total_tbps, l2_throughput_pct, l2_hit_pct": "all L2 traffic (reads and writes), TB/s; L2 throughput, % of "
                                                    "peak (SpeedOfLight); L2 hit rate",
    "smem_tbps, smem_pipe_pct": "bytes moved by shared-memory instructions (LSU path: not TMA's writes, not "
                                "wgmma's operand reads), TB/s; LSU shared-memory pipe busy, % of peak",
    "dram_bytes": "bytes read plus written in DRAM (dram_read_bytes, dram_write_bytes apart)",
    "registers, ptxas_registers": "registers per thread at launch (ncu) and as ptxas allocated them",
    "spill_bytes": "ptxas spill stores plus loads, bytes (spill_store_bytes, spill_load_bytes apart)",
    "local_bytes": "bytes the launch moved through local memory (spills at run time): 32-byte sectors of local loads "
                   "plus stores at L1TEX (local_load_bytes, local_store_bytes apart)",
    "occupancy_pct, theoretical_occupancy_pct": "achieved and theoretical occupancy, % of the SM's warp slots",
    "kernel, tile, cluster, grid, block, launches": "what was profiled: kernel name, tile, CTAs per cluster (where the "
                                                    "kernel has clusters), launch geometry, how many launches",
    "metric_source": "the metric or formula behind each key",
    "raw": "every numeric metric ncu collected (median over the launches, ncu's base units: ns, bytes, /s, %)",
    "ncu": "Nsight Compute's version, the metric tier used and the command line",
}

CHILD = r"""
import json, sys
import cupy as cp
from helpers.formats import FP8, FP8_INPUT_SCALE
from helpers.compiler import apply_config
from helpers.launch import prepare
from helpers.playground import source
rung_id, n, launches, slow_ms, nvtx_range, config = sys.argv[1:7]
config = json.loads(config)  # constexpr overrides: a variant of the rung (ci/pingpong.py), or {} for the rung;
text = open(config.pop("source_file")).read() if "source_file" in config else source(rung_id)  # or another source
lau = prepare(rung_id, int(n), source=apply_config(text, config) if config or text != source(rung_id) else None)
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


# ---- running Nsight Compute --------------------------------------------------------------------------------------

def ncu_path() -> str:
    found = shutil.which("ncu")
    if found is None:
        raise RuntimeError("Nsight Compute's `ncu` is not on PATH; install Nsight Compute (it ships with the CUDA "
                           "toolkit) or put its folder on PATH.")
    return found


def _tail(text: str, chars: int = 2000) -> str:
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
                           f"output: {_tail(out + err)}") from None
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
    there are none. (ci/bank_conflicts.py, ci/l2_schedule.py and ci/crosscheck.py collect through this.)"""
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


def stall_shares(raw: dict[str, float]) -> tuple[dict[str, float], str | None, float | None]:
    """(reason -> share of the stalled samples, the family used, share of samples where the warp was issuing) from
    the first stall family present. Left out: the "_not_issued" subsets, sub-breakdowns of another reason
    (long_scoreboard_pipe_l1tex inside long_scoreboard), and "selected" (issuing, not stalled)."""
    for family, pattern in STALL_FAMILIES:
        got = {m.group(1): v for name, v in raw.items() if (m := pattern.match(name))}
        got = {k: v for k, v in got.items() if not k.endswith("_not_issued")}
        got = {k: v for k, v in got.items() if not any(k.startswith(q + "_") for q in got if q != k)}
        stalls = {k: v for k, v in got.items() if k != ISSUING and v > 0}
        total = sum(stalls.values())
        if total > 0:
            issuing = got.get(ISSUING)
            shares = {k: round(v / total, 4) for k, v in sorted(stalls.items(), key=lambda kv: -kv[1])}
            return shares, family, (round(issuing / (issuing + total), 4) if issuing is not None else None)
    return {}, None, None


def summarize(raw: dict[str, float], units: dict[str, str], r: Rung, child: dict | None) -> dict:
    """The entry's derived keys (KEYS) from the raw metrics, with the metric behind each in metric_source."""
    child = child or {}
    source: dict[str, str] = {}

    def pick(what: str, key: str | None = None, default_unit: str = "") -> float | None:
        for name in METRICS[what]:
            if name in raw:
                if key:
                    source[key] = f"{name} [{units.get(name) or default_unit or '-'}]"
                return to_si(raw[name], units.get(name) or default_unit)
        return None

    def per_second(value, seconds):
        return value / seconds if value is not None and seconds else None

    def tb(value):
        return round(value / 1e12, 4) if value is not None else None

    seconds = pick("duration", "duration_us", "nsecond")
    hz = pick("sm_clock", "sm_clock_mhz", "cycle/second")
    if hz is None and seconds:
        cycles = pick("sm_cycles")
        hz = cycles / seconds if cycles else None
        source["sm_clock_mhz"] = f"{METRICS['sm_cycles']} / duration" if hz else "not collected"
    tensor, fma = pick("tensor_pipe", "tensor_pipe_pct"), pick("fma_pipe", "fma_pipe_pct")
    pipe = "fma" if r.dtype == "fp32" else "tensor"
    source["tensor_active_pct"] = source.get(f"{pipe}_pipe_pct", "not collected")

    l2 = pick("l2_to_sm_bytes", "l2_tbps", "byte")
    if l2 is None:
        sectors = pick("l2_read_sectors_by_sm")
        l2 = sectors * 32 if sectors is not None else None
        source["l2_tbps"] = f"{METRICS['l2_read_sectors_by_sm'][0]} x 32 B / duration" if l2 is not None else \
            "not collected"
    else:
        source["l2_tbps"] += " / duration"
    peak, l2_hz = pick("l2_to_sm_peak"), pick("l2_clock", default_unit="cycle/second")
    l2_rate = per_second(l2, seconds)
    l2_pct = 100 * l2_rate / (peak * l2_hz) if l2_rate and peak and l2_hz else None
    source["l2_pct"] = (f"l2 bytes per second / ({METRICS['l2_to_sm_peak'][0]} x {METRICS['l2_clock'][0]})"
                        if l2_pct is not None else "not collected")
    tma = pick("tma_bytes", "tma_tbps", "byte")
    l2_all = pick("l2_bytes", "l2_total_tbps", "byte")
    smem = pick("smem_bytes", "smem_tbps", "byte")
    read, write = pick("dram_read", "dram_read_bytes", "byte"), pick("dram_write", "dram_write_bytes", "byte")
    source["dram_bytes"] = "dram_read_bytes + dram_write_bytes" if write is not None else "dram_read_bytes only"
    registers = pick("registers", "registers")
    if registers is None and child.get("ptxas_registers") is not None:
        registers, source["registers"] = child["ptxas_registers"], "ptxas -v of the launched build"
    spills = [child.get("spill_store_bytes"), child.get("spill_load_bytes")]
    source["spill_bytes"] = "ptxas -v of the launched build (spill stores + spill loads)"
    local = [pick(f"local_{op}_sectors", f"local_{op}_bytes") for op in ("load", "store")]
    local = [x * 32 if x is not None else None for x in local]
    source["local_bytes"] = "32 B x (local load sectors + local store sectors)"
    stalls, family, issuing = stall_shares(raw)
    source["stall_reasons"] = family or "not collected"

    def rnd(x, digits=2):
        return round(x, digits) if x is not None else None

    return {
        "rung": r.id, "n": None, "dtype": r.dtype, "kernel": None,
        "tile": child.get("tile"), "cluster": child.get("cluster"), "grid": child.get("grid"), "block": child.get("block"),
        "smem_bytes": child.get("smem_bytes"), "launches": None,
        "duration_us": rnd(seconds * 1e6 if seconds else None, 3),
        "sm_clock_mhz": rnd(hz / 1e6 if hz else None, 1),
        "pipe": pipe, "tensor_active_pct": rnd(fma if pipe == "fma" else tensor),
        "tensor_pipe_pct": rnd(tensor), "fma_pipe_pct": rnd(fma),
        "stall_reasons": stalls, "stall_family": family, "issuing_share": issuing,
        "l2_tbps": tb(l2_rate), "l2_pct": rnd(l2_pct), "tma_tbps": tb(per_second(tma, seconds)),
        "l2_total_tbps": tb(per_second(l2_all, seconds)),
        "l2_throughput_pct": rnd(pick("l2_throughput_pct", "l2_throughput_pct")),
        "l2_hit_pct": rnd(pick("l2_hit_pct", "l2_hit_pct")),
        "smem_tbps": tb(per_second(smem, seconds)), "smem_pipe_pct": rnd(pick("smem_pipe_pct", "smem_pipe_pct")),
        "dram_bytes": (read or 0) + (write or 0) if read is not None or write is not None else None,
        "dram_read_bytes": read, "dram_write_bytes": write,
        "dram_throughput_pct": rnd(pick("dram_throughput_pct", "dram_throughput_pct")),
        "registers": int(registers) if registers is not None else None,
        "ptxas_registers": child.get("ptxas_registers"),
        "spill_bytes": sum(spills) if None not in spills else None,
        "spill_store_bytes": spills[0], "spill_load_bytes": spills[1],
        "local_bytes": sum(local) if None not in local else None,
        "local_load_bytes": local[0], "local_store_bytes": local[1],
        "occupancy_pct": rnd(pick("occupancy", "occupancy_pct")),
        "theoretical_occupancy_pct": rnd(pick("theoretical_occupancy", "theoretical_occupancy_pct")),
        "sm_busy_pct": rnd(pick("sm_busy", "sm_busy_pct")),
        "sm_throughput_pct": rnd(pick("sm_throughput", "sm_throughput_pct")),
        "metric_source": source,
        "raw": {name: float(f"{v:.6g}") for name, v in sorted(raw.items())},
    }


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


def _child_info(stdout: str) -> dict | None:
    """What the child printed about its launch (tile, geometry, ptxas resources), or None."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(CHILD_MARK):
            try:
                return json.loads(line[len(CHILD_MARK):])
            except json.JSONDecodeError:
                return None
    return None


def _build_info(r: Rung) -> dict:
    """ptxas's registers and spills of the rung's own build, where the child did not say (its tile choice aside)."""
    from .kernel import kernel
    kern = kernel(r)
    res = kern.build.resources.get(r.entry)
    return {"tile": list(kern.tile), "ptxas_registers": res.registers if res else None,
            "spill_store_bytes": res.spill_stores if res else None, "spill_load_bytes": res.spill_loads if res else None}


_FIRST_TIER = [0]  # the first tier worth trying in this process: a tier that profiled nothing is not tried again


def collect(r: Rung, n: int, timeout: int = TIMEOUT_S, config: dict | None = None) -> dict:
    """Profile rung r at N x N x N under Nsight Compute now (needs the GPU and ncu): the entry without the run id.
    `config`: constexpr overrides, to profile a variant of the rung instead (not recorded by `profile`); with a
    "source_file" key, the overrides apply to that file's text instead of the rung's (an experiment's patched source)."""
    tried, out, err = [], "", ""
    for tier in range(_FIRST_TIER[0], len(TIERS)):
        cmd = command(r, n, tier, config)
        out, err = run_ncu(cmd, timeout)
        rows, units = parse_raw_csv(out)
        mine = [row for row in rows if row.get("Kernel Name", "").startswith(r.entry)] or rows
        child = _child_info(out) or _build_info(r)
        if mine:
            _FIRST_TIER[0] = tier
            entry = summarize(numbers(mine), units, r, child)
            shown = ["<CHILD>" if x == CHILD else x for x in cmd]
            entry.update(n=n, kernel=mine[0].get("Kernel Name"), launches=len(mine),
                         units={k: v for k, v in units.items() if k in entry["raw"]},  # to re-derive the keys later
                         ncu={"version": ncu_version(), "tier": tier, "tiers_failed": tried, "command": shown})
            return entry
        tried.append(tier)
        if "Traceback (most recent call last)" in out + err:
            break  # the child failed, not the metric list: another tier would fail the same way
    raise RuntimeError(f"Nsight Compute profiled no launch of {r.id} at N={n} (metric tiers {tried} tried); the end "
                       f"of its output: {_tail(out + err)}")


# ---- the recorded entry ----------------------------------------------------------------------------------------

def key(rung_id: str, n: int) -> str:
    return f"{rung_id}@{n}"


def profile(r: Rung | str, n: int, save: bool = True) -> dict:
    """The Nsight Compute profile of rung r at N x N x N (KEYS), labelled with its source: taken now and recorded
    (live: an H100 with ncu), reused (this run already took it), or recorded (replay; never recorded: NotRecorded,
    in one sentence)."""
    from . import results
    from .ladder import NotRecorded, obtain
    from .launch import validate
    r = _rung(r) if isinstance(r, str) else r

    def how() -> dict:
        validate(r, n, n, n)  # a shape the rung cannot take: one sentence before ncu starts
        return collect(r, n)

    blocked = None if shutil.which("ncu") else "Nsight Compute's ncu is not on PATH, so no profile can be taken here"
    try:
        entry, source = obtain(SECTION, key(r.id, n), how, r.needs_cc, r.arch, save, blocked)
    except NotRecorded:
        raise NotRecorded(f"The profile of {r.id} at N={n} was never recorded in {results.path_for()}; take it on "
                          f"an H100 with Nsight Compute (python -m helpers profile --rungs {r.id} --n {n}).") from None
    return {**entry, "source": source}


def _fmt(value, spec: str) -> str:
    """format(value, spec), or "-" in the same width for a value not collected."""
    width = re.match(r"\d*", spec).group()
    return "-".rjust(int(width or 0)) if value is None else format(value, spec)


def table(entries) -> str:
    """Profiles as fixed-width text: a line of numbers per rung and size, and under it that profile's top three stall
    reasons, so that no line is wider than the book's column holds (helpers.report.BOOK_COLUMNS)."""
    import textwrap
    from .report import BOOK_COLUMNS
    lines = ["{:<20} {:>5} {:>9} {:>5} {:>9} {:>7} {:>9} {:>7} {:>4} {:>5}".format(
        "rung", "N", "time µs", "MHz", "pipe %", "L2 TB/s", "smem TB/s", "DRAM GB", "regs", "occ %")]
    runs = {}
    for e in entries:
        pipe = f"{_fmt(e.get('tensor_active_pct'), '.1f')} {'fma' if e.get('pipe') == 'fma' else 'tc'}"
        top = sorted((e.get("stall_reasons") or {}).items(), key=lambda kv: -kv[1])[:3]
        stalls = ", ".join(f"{k} {v:.0%}" for k, v in top) or "-"
        dram = e["dram_bytes"] / 1e9 if e.get("dram_bytes") is not None else None
        lines.append(f"{e['rung']:<20} {e['n']:>5} {_fmt(e.get('duration_us'), '9.1f')} "
                     f"{_fmt(e.get('sm_clock_mhz'), '5.0f')} {pipe:>9} {_fmt(e.get('l2_tbps'), '7.2f')} "
                     f"{_fmt(e.get('smem_tbps'), '9.2f')} {_fmt(dram, '7.2f')} {_fmt(e.get('registers'), '4d')} "
                     f"{_fmt(e.get('occupancy_pct'), '5.1f')}")
        lines.append(f"    top stalls: {stalls}")
        runs.setdefault((e.get("source"), e.get("run"), e.get("gpu")), None)
    notes = ["pipe %: tc = tensor pipe (HMMA/HGMMA/QGMMA), fma = FP32 FMA pipe; L2 TB/s: L2 -> SM; smem TB/s: "
             "shared-memory instructions only (not TMA, not wgmma operands); top stalls: shares of the stalled samples"]
    notes += [f"{src}: run {run} on {gpu}" for src, run, gpu in runs]
    lines += [textwrap.fill(note, BOOK_COLUMNS, subsequent_indent="    ") for note in notes]
    return "\n".join(lines)
