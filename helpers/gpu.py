"""Which mode are we in? Live (a CUDA GPU that can run the rung) or replay (recorded H100 results)."""
from __future__ import annotations

import datetime as _dt
import functools
import os
import subprocess
from dataclasses import asdict, dataclass

REPLAY_ENV = "GEMM_LADDER_REPLAY"  # set to 1 to replay even where a GPU is present


class NoGPU(RuntimeError):
    """Live work was asked for where no usable CUDA GPU is present."""


@dataclass(frozen=True)
class Device:
    name: str
    cc: tuple
    sms: int
    l2_bytes: int
    smem_optin_bytes: int
    sm_clock_max_mhz: int | None
    mem_clock_max_mhz: int | None
    driver: str
    cuda_driver_api: str
    cuda_runtime: str
    cupy: str
    nvrtc: str

    @property
    def slug(self) -> str:
        return "-".join("".join(c if c.isalnum() else " " for c in self.name.lower()).split())

    def env(self) -> dict:
        """Everything a recorded number must carry so a reader can tell where it came from."""
        return {**asdict(self), "cc": f"{self.cc[0]}.{self.cc[1]}",
                "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def _smi(query: str) -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


@functools.lru_cache(maxsize=1)
def device() -> Device | None:
    """The first CUDA device, or None when there is none (or CuPy cannot reach one)."""
    try:
        import cupy
        from cupy.cuda import nvrtc, runtime
        if runtime.getDeviceCount() < 1:
            return None
        props = runtime.getDeviceProperties(0)
        attr = runtime.deviceGetAttribute
    except Exception:  # noqa: BLE001 - no driver, no device, no CuPy: all mean "no GPU here"
        return None
    smi = (_smi("driver_version,clocks.max.sm,clocks.max.mem") or ",,").split(",")
    ver = lambda v: f"{v // 1000}.{v % 1000 // 10}"  # noqa: E731  12040 -> "12.4"
    return Device(
        name=props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
        cc=(props["major"], props["minor"]),
        sms=props["multiProcessorCount"],
        l2_bytes=props["l2CacheSize"],
        smem_optin_bytes=attr(97, 0),  # cudaDevAttrMaxSharedMemoryPerBlockOptin
        sm_clock_max_mhz=int(smi[1]) if smi[1].strip().isdigit() else None,
        mem_clock_max_mhz=int(smi[2]) if smi[2].strip().isdigit() else None,
        driver=smi[0].strip() or "unknown",
        cuda_driver_api=ver(runtime.driverGetVersion()),
        cuda_runtime=ver(runtime.runtimeGetVersion()),
        cupy=cupy.__version__,
        nvrtc=".".join(map(str, nvrtc.getVersion())),
    )


def live() -> bool:
    """True when numbers can be measured now: a GPU is present and replay was not forced."""
    return os.environ.get(REPLAY_ENV, "") not in ("1", "true", "yes") and device() is not None


def can_run(dev: Device, needs_cc: tuple, arch: str = "") -> bool:
    """Whether `dev` runs work that needs `needs_cc`. An arch-specific target (sm_90a: wgmma, setmaxnreg) runs on
    that one architecture only, not on later ones."""
    if arch.endswith("a") and tuple(needs_cc) >= (9, 0):
        return dev.cc == tuple(needs_cc)
    return dev.cc >= tuple(needs_cc)


def missing(needs_cc: tuple = (8, 0), feature: str = "") -> str | None:
    """What is missing to run this here, as a clause ('no CUDA GPU is visible'), or None."""
    if os.environ.get(REPLAY_ENV, "") in ("1", "true", "yes"):
        return f"{REPLAY_ENV} is set"
    dev = device()
    if dev is None:
        return "no CUDA GPU is visible"
    if not can_run(dev, needs_cc, feature):
        what = feature or f"compute capability {needs_cc[0]}.{needs_cc[1]}"
        return f"it needs {what}, which the {dev.name} (compute capability {dev.cc[0]}.{dev.cc[1]}) does not have"
    return None


def launch_arch(arch: str) -> str:
    """What to compile a launchable cubin for on this GPU. An sm_90a cubin loads only on sm_90, so a rung that
    needs no more than sm_80 is rebuilt for an A100's or L4's own architecture; SASS listings stay `arch`'s."""
    dev = device()
    own = f"sm_{dev.cc[0]}{dev.cc[1]}" if dev else arch
    return arch if arch.rstrip("a") == own else own


def why_not_live(needs_cc: tuple = (8, 0), feature: str = "") -> str | None:
    """One sentence saying why this work cannot run live here, or None when it can."""
    gap = missing(needs_cc, feature)
    if gap is None:
        return None
    return f"{gap[0].upper()}{gap[1:]}, so recorded results are shown instead of measuring."


def require_live(needs_cc: tuple = (8, 0), feature: str = "") -> Device:
    reason = why_not_live(needs_cc, feature)
    if reason:
        raise NoGPU(reason)
    return device()


@functools.lru_cache(maxsize=1)
def _nvml():
    """NVML's handle of GPU 0, or None where nvidia-ml-py or the driver's NVML is missing."""
    try:
        import pynvml
        pynvml.nvmlInit()
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:  # noqa: BLE001 - no NVML means no clock and power columns, never a failed measurement
        return None


def sample_clock_power() -> tuple[float, float | None] | None:
    """(SM clock in MHz, board power in W) right now, from NVML; power is the instantaneous reading where the
    driver has one (Hopper does), else NVML's 1-second average. None where NVML is not available. Reads only."""
    got = _nvml()
    if got is None:
        return None
    nv, h = got
    try:
        clock = float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
    except Exception:  # noqa: BLE001
        return None
    power = None
    try:
        field = nv.nvmlDeviceGetFieldValues(h, [nv.NVML_FI_DEV_POWER_INSTANT])[0]
        if field.nvmlReturn == 0:
            power = field.value.uiVal / 1e3
    except Exception:  # noqa: BLE001
        pass
    if power is None:
        try:
            power = nv.nvmlDeviceGetPowerUsage(h) / 1e3
        except Exception:  # noqa: BLE001
            pass
    return clock, power
