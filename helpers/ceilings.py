"""The machine's ceilings (chapter 00): each measured once per run by a probe or cuBLAS (helpers.probes), through
the run store, and reused by every chapter of that run; the recorded value where this machine cannot measure it.

    ceiling("hbm_copy")      # Ceiling: value, unit, source (live, this run, recorded), GPU, date, clock and power
    recorded_ceilings()      # every ceiling of the results file, labelled recorded
"""
from __future__ import annotations

from dataclasses import dataclass

from . import results
from .probes import (READ_SETS, Reading, back_to_back, measure_cublas, measure_ffma_peak, measure_hbm_copy,
                     measure_hbm_read, measure_hgmma_peak, measure_hmma_peak, measure_l2_read, measure_read,
                     measure_tma_l2_curve, measure_tma_l2_read, measure_tma_multicast, sm_clock_under_load)
from .registry import PROBES
from .store import obtain

CEILINGS = {
    # id: (what it is, unit, how to measure it live)
    "hbm_copy": ("HBM copy bandwidth (read + write)", "TB/s", measure_hbm_copy),
    "l2_read": ("L2 read bandwidth through LDG (.cg), 40% of L2 walked grid-stride, one load in flight a thread: the "
                "load path of rungs 01-06", "TB/s", measure_l2_read),
    "tma_l2_read": ("L2 -> shared memory through TMA over 40% of L2 (as l2_read's)", "TB/s", measure_tma_l2_read),
    "tma_l2_gemm": ("L2 -> shared memory through TMA at a GEMM's working set (5% of L2, CTAs sharing boxes): the load "
                    "path of rungs 07 on",
                    "TB/s", measure_tma_l2_curve),
    # The same path multicast to 2-CTA clusters (rung 10's B tile): bytes landed in shared memory, both CTAs counted;
    # L2 supplies half of them (the detail).
    "tma_multicast": ("L2 -> shared memory through TMA multicast to 2-CTA clusters at a GEMM's working set (5% of L2), "
                      "bytes landed in both CTAs", "TB/s", measure_tma_multicast),
    "ffma_peak": ("FP32 FFMA peak (probe)", "TFLOP/s", measure_ffma_peak),
    "hmma_peak": ("BF16 mma.sync (HMMA) peak (probe)", "TFLOP/s", measure_hmma_peak),
    "hgmma_peak": ("BF16 wgmma (HGMMA) peak, zero operands (probe)", "TFLOP/s", measure_hgmma_peak),
    "hgmma_peak_random": ("BF16 wgmma (HGMMA) peak, random operands, sustained: the power-limited ceiling",
                          "TFLOP/s", lambda: measure_hgmma_peak(random_operands=True)),
    # The shared-memory operand path: the same A bytes per wgmma for a half and a quarter of the FLOP.
    "hgmma_n128_random": ("BF16 wgmma m64n128k16 from shared memory, random operands, sustained", "TFLOP/s",
                          lambda: measure_hgmma_peak(random_operands=True, n=128)),
    "hgmma_n64_random": ("BF16 wgmma m64n64k16 from shared memory, random operands, sustained", "TFLOP/s",
                         lambda: measure_hgmma_peak(random_operands=True, n=64)),
    "qgmma_peak": ("FP8 e4m3 wgmma (QGMMA) peak, zero operands (probe)", "TFLOP/s",
                   lambda: measure_hgmma_peak(dtype="e4m3")),
    "qgmma_peak_random": ("FP8 e4m3 wgmma (QGMMA) peak, random operands, sustained: chapter 12's ceiling", "TFLOP/s",
                          lambda: measure_hgmma_peak(random_operands=True, dtype="e4m3")),
    **{f"cublas_{dt}_{n}": (f"strongest cuBLAS {dt.upper()} at N={n}", "TFLOP/s",
                            (lambda dt=dt, n=n: measure_cublas(dt, n)))
       for dt in ("fp32", "fp16", "bf16") for n in (4096, 8192)},
    "cublas_bf16_8192_back_to_back": ("cupy.matmul BF16 at N=8192, back to back for 1.5 s (power-limited)",
                                      "TFLOP/s", lambda: back_to_back("bf16", 8192)),
    # The clock of that same back-to-back run, not a second 1.5 s of load.
    "sm_clock_bf16_load": ("SM clock under cuBLAS BF16 load", "MHz", lambda: _clock_of("cublas_bf16_8192_back_to_back")),
    "sm_clock_fp32_load": ("SM clock under cuBLAS FP32 load", "MHz", lambda: sm_clock_under_load("fp32")),
    "hbm_read": ("HBM read bandwidth (read only, 2 GiB a launch)", "TB/s", measure_hbm_read),
}
# The like-for-like read roofs (helpers.probes.READ_SETS): each load path over the same working sets, each CTA its own
# slice, so no two CTAs load one line; `read_tma_shared@2.7MB` is TMA at the small set in probe_tma_l2's walk, where
# CTAs share boxes, as tma_l2_gemm measured. `read_<path>@<set>`: the set as it is on 132 SMs; `detail` gives this GPU's
# set in bytes, the sharing, and every schedule's rate.
_PATHS = {"ldg": "L2 read through LDG (.cg)", "cp_async": "L2 -> shared memory through cp.async.cg (16 B)",
          "tma": "L2 -> shared memory through TMA"}
READ_ROOFS = {
    **{f"read_{path}@{name}": (path, name, False) for path in _PATHS for name in READ_SETS},
    "read_tma_shared@2.7MB": ("tma", "2.7MB", True),
}


def _read_label(path: str, name: str, shared: bool) -> str:
    mb = name.removesuffix("MB")
    return (f"{_PATHS[path]} over {'an' if mb.startswith('8') else 'a'} {mb} MB working set ({READ_SETS[name] // 1024} "
            f"KiB per SM on 132 SMs), " + ("in probe_tma_l2's walk: CTAs outnumbering its boxes share them" if shared
                                           else "each CTA its own slice"))


CEILINGS.update({cid: (_read_label(*how), "TB/s", (lambda how=how: measure_read(*how)))
                 for cid, how in READ_ROOFS.items()})

# Ceilings measured under load held for a second or more (helpers.probes: hold, the wgmma probes' long batches): NVML's
# clock and power, sampled meanwhile, describe that run. Every other ceiling is timed in ~2 ms bursts, where NVML's
# clock is a stale sample (Nsight Compute's elapsed-cycle rate read up to 10% lower on such kernels), so it is shown
# as a sample.
HELD = {"hgmma_peak", "hgmma_peak_random", "hgmma_n128_random", "hgmma_n64_random", "qgmma_peak", "qgmma_peak_random",
        "cublas_bf16_8192_back_to_back", "sm_clock_bf16_load", "sm_clock_fp32_load"}
# Which probe a ceiling needs (for the GPU it can run on); cuBLAS runs anywhere.
_PROBE_OF = {"tma_l2_gemm": "tma_l2_read", "hgmma_peak_random": "hgmma_peak", "qgmma_peak_random": "qgmma_peak", "hgmma_n128_random": "hgmma_n128",
             "hgmma_n64_random": "hgmma_n64", "hbm_read": "read_ldg",
             **{cid: f"read_{path}" for cid, (path, _, _) in READ_ROOFS.items()}}


@dataclass(frozen=True)
class Ceiling:
    id: str
    label: str
    value: float
    unit: str
    source: str
    gpu: str
    date: str
    sm_clock_mhz: float | None = None
    power_w: float | None = None

    def __str__(self) -> str:
        clock = "SM clock" if self.id in HELD else "NVML sample"
        held = (f", {clock} {self.sm_clock_mhz:,.0f} MHz" if self.sm_clock_mhz and self.unit != "MHz" else "") + \
               (f", {self.power_w:,.0f} W" if self.power_w else "")
        return f"{self.label}: {self.value:,.2f} {self.unit}  [{self.gpu}, {self.date}{held}]"


def _clock_of(cid: str) -> Reading:
    """A clock ceiling read off another ceiling's run (measured once in the run, or reused)."""
    c = ceiling(cid)
    if not c.sm_clock_mhz:
        raise RuntimeError(f"{cid} carries no SM clock (is nvidia-ml-py installed?)")
    return Reading(c.sm_clock_mhz, c.sm_clock_mhz, c.power_w)


def ceiling(cid: str, save: bool = True) -> Ceiling:
    """One of the machine's ceilings, measured once per run (the median of interleaved rounds) and reused by every
    chapter of that run; the recorded value where this machine cannot measure it."""
    label, unit, how = CEILINGS[cid]
    pid = _PROBE_OF.get(cid, cid)
    needs = next((p.needs_cc for p in PROBES if p.id == pid), (8, 0))

    def measure_it() -> dict:
        got = how()
        got = got if isinstance(got, Reading) else Reading(float(got))
        return {"label": label, "value": got.value, "unit": unit, "sm_clock_mhz": got.sm_clock_mhz,
                "power_w": got.power_w, "iqr": list(got.iqr) if got.iqr else None,
                **({"detail": got.detail} if got.detail else {})}

    e, source = obtain("ceilings", cid, measure_it, needs, "sm_90a" if needs >= (9, 0) else "", save)
    return Ceiling(cid, label, e["value"], unit, source, e["gpu"], e["date"], e.get("sm_clock_mhz"), e.get("power_w"))


def recorded_ceilings() -> dict[str, Ceiling]:
    """All ceilings from the results file, labelled as recorded."""
    data = results.load()["ceilings"]
    return {cid: Ceiling(cid, CEILINGS[cid][0] if cid in CEILINGS else e.get("label", cid), e["value"],
                         e["unit"], "recorded", e["gpu"], e["date"], e.get("sm_clock_mhz"), e.get("power_w"))
            for cid, e in data.items()}
