"""Nsight Compute profiles: why each rung runs at the speed it does, measured (issue "evidence", item 2).

    p = profile("10_chip", 4096)   # live (a Hopper GPU with ncu): profiled once per run and recorded
                                            # elsewhere: the recorded entry, or NotRecorded in one sentence
    python -m helpers profile [--replay] [--json] [--rungs ID ...] [--n N ...]

How a profile is taken (the ncu command line, the child process, the metric tiers, the CSV page read) is
helpers.ncu's. Here: the keys derived from the raw metrics (METRICS says which metric is behind each, KEYS what each
means, also printed by `python -m helpers profile --help`), the recorded entry, and the table. A recorded entry's
raw metrics live in their own file (helpers.results.metrics); `profile` reads them back with the entry.
"""
from __future__ import annotations

import re
import shutil

from . import results
from .gpu import device
from .hardware import SMEM_BYTES_PER_CLK
from .kernel import kernel
from .launch import validate
from .ncu import (CHILD, TIERS, TIMEOUT_S, child_info, command, ncu_version, numbers, parse_raw_csv, run_ncu,
                  tail_of, to_si)
from .registry import Rung, rung as _rung
from .store import NotRecorded, obtain

SECTION = "profiles"  # the results file's section; keys are "<rung>@<N>"

METRICS: dict[str, tuple[str, ...]] = {
    "duration": ("gpu__time_duration.sum",),
    # SM clock while the kernel ran ("SM Frequency" of SpeedOfLight and of NVIDIA's roofline section)
    "sm_clock": ("sm__cycles_elapsed.avg.per_second", "smsp__cycles_elapsed.avg.per_second",
                 "gpc__cycles_elapsed.avg.per_second"),
    "sm_cycles": ("sm__cycles_elapsed.avg", "gpc__cycles_elapsed.max"),  # clock fallback: cycles / duration
    # Tensor pipe busy over the kernel's duration. On Hopper this counter counts wgmma (HGMMA and QGMMA) too: rungs 10
    # and 12 read near 90% of it in tools/l2_schedule.py's records, the FP8 rung doing twice the FLOPs per busy cycle.
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
    "smem_tbps, smem_pipe_pct": "bytes moved by shared-memory instructions (LDS/STS/LDSM/STSM, TB/s); the LSU "
                                "data pipe's shared-memory wavefronts, % of one a clock: these count wgmma's operand "
                                "reads too (a fixed fraction of the tensor pipe in every wgmma build)",
    "smem_read_pct, smem_fill_pct, smem_port_pct": "shared memory's load, % of 128 B per SM clock: its reads "
                                                   "(smem_pipe_pct; a roof), TMA's fills (TMA bytes per SM clock / "
                                                   "128) and the two together (a load, not a roof)",
    "stall_sites, stall_sites_run": "the top SASS instructions the warps were stalled at (tools/stall_sites.py: "
                                    "address, opcode, kind, share of all stall samples, leading reasons), and "
                                    "the run that took them; None where never recorded",
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


def _build_info(r: Rung) -> dict:
    """ptxas's registers and spills of the rung's own build, where the child did not say (its tile choice aside)."""
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
        child = child_info(out) or _build_info(r)
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
                       f"of its output: {tail_of(out + err)}")


# ---- the recorded entry ----------------------------------------------------------------------------------------

def key(rung_id: str, n: int) -> str:
    return f"{rung_id}@{n}"


def profile(r: Rung | str, n: int, save: bool = True) -> dict:
    """The Nsight Compute profile of rung r at N x N x N (KEYS), labelled with its source: taken now and recorded
    (live: a Hopper GPU with ncu), reused (this run already took it), or recorded (replay; never recorded: NotRecorded,
    in one sentence). A recorded entry comes back whole: its raw metrics are read from their own file."""
    r = _rung(r) if isinstance(r, str) else r

    def how() -> dict:
        validate(r, n, n, n)  # a shape the rung cannot take: one sentence before ncu starts
        return collect(r, n)

    blocked = None if shutil.which("ncu") else "Nsight Compute's ncu is not on PATH, so no profile can be taken here"
    try:
        entry, source = obtain(SECTION, key(r.id, n), how, r.needs_cc, r.arch, save, blocked)
    except NotRecorded:
        raise NotRecorded(f"The profile of {r.id} at N={n} was never recorded in {results.path_for()}; take it on "
                          f"a Hopper GPU with Nsight Compute (python -m helpers profile --rungs {r.id} --n {n}).") from None
    path = results.path_for() if source == "recorded" else results.path_for(device().slug)
    if "raw" not in entry:  # read from a run file, which keeps the raw metrics apart; its keys are sorted
        entry = dict(sorted({**entry, **results.metrics(SECTION, key(r.id, n), path)}.items()))
    sites = results.load(path).get(SITES, {}).get(key(r.id, n)) if path.exists() else None
    return {**entry, **port(entry), "stall_sites": sites["sites"] if sites else None,
            "stall_sites_run": sites["run"] if sites else None, "source": source}


SITES = "stall_sites"  # the section tools/stall_sites.py records (helpers.sites): where the warps wait


def port(entry: dict) -> dict:
    """Shared memory's load in one SM, in % of 128 B a clock (one wavefront): what reads it and what fills it.
    Reads against 128 B a clock are a roof (chapter 00's m64n64 wgmma probe reads that much at 97% of the m64n256
    rate); reads plus fills are not: a probe of wgmmas beside TMA fills (chapter 07 quotes it) moved more than 128 B
    a clock of the two through one SM, the fills costing the tensor pipe a few points whatever the operand reads.
    - smem_read_pct: the LSU data pipe's shared-memory wavefronts (smem_pipe_pct). It counts wgmma's operand reads
      besides LDS/STS/LDSM/STSM and cp.async's writes: in every wgmma build it is a fixed fraction of the tensor pipe
      (0.625 for m64n256k16 with A and B from shared memory: 80 of 128 B a clock at full tensor rate).
    - smem_fill_pct: TMA bytes that landed in this SM's shared memory (L2 -> SM, op_tma_ld: a multicast box counts
      at each receiver) per SM clock, of 128 B: (bytes per SM) / (duration x SM clock) / 128.
    - smem_port_pct: the two together (a load, not a roof: see above). None where a metric was not collected."""
    raw = entry.get("raw") or {}
    read = entry.get("smem_pipe_pct")
    tma = raw.get("l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.avg")
    hz = raw.get("sm__cycles_elapsed.avg.per_second")
    us = entry.get("duration_us")
    fill = 100 * tma / (hz * us * 1e-6 * SMEM_BYTES_PER_CLK) if tma is not None and hz and us else None
    return {"smem_read_pct": read, "smem_fill_pct": round(fill, 2) if fill is not None else None,
            "smem_port_pct": round(read + fill, 2) if read is not None and fill is not None else None}


def _fmt(value, spec: str) -> str:
    """format(value, spec), or "-" in the same width for a value not collected."""
    width = re.match(r"\d*", spec).group()
    return "-".rjust(int(width or 0)) if value is None else format(value, spec)


def table(entries) -> str:
    """Profiles as fixed-width text: a line of numbers per rung and size, and under it that profile's top three stall
    reasons, so that no line is wider than the book's column holds (helpers.tables.BOOK_COLUMNS)."""
    import textwrap
    from .tables import BOOK_COLUMNS
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
