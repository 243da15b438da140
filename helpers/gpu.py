"""Which mode are we in? Live (a CUDA GPU that can run the rung) or replay (the book's recorded run)."""
from __future__ import annotations

import datetime as _dt
import functools
import os
from dataclasses import asdict, dataclass

from .compiler import nvrtc_version

REPLAY_ENV = "GEMM_LADDER_REPLAY"  # set to 1 to replay even where a GPU is present
REPLAY_FLAG: str | None = None     # the command-line flag that set it (`python -m helpers ladder --replay`), if one did
_YES, _NO = ("1", "true", "yes"), ("", "0", "false", "no")


def replay_forced() -> bool:
    """Whether GEMM_LADDER_REPLAY asks for replay; a value that says neither yes nor no is refused in one sentence
    (silently ignoring a typo would measure, and record, what the reader meant to replay)."""
    value = os.environ.get(REPLAY_ENV, "").strip().lower()
    if value not in _YES + _NO:
        raise ValueError(f"{REPLAY_ENV}={os.environ[REPLAY_ENV]!r} is neither yes (1, true, yes) nor no (0, false, "
                         f"no, or unset); set it to 1 to replay the recorded results.")
    return value in _YES


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


def _nvml_read(fn, *args):
    """One NVML query, as str or int, or None where NVML or the query is not available."""
    try:
        value = fn(*args)
    except Exception:  # noqa: BLE001 - a field we cannot read is recorded as unknown
        return None
    return value.decode() if isinstance(value, bytes) else value  # older nvidia-ml-py returns bytes


def _driver_and_clocks() -> tuple[str, int | None, int | None]:
    """Driver version ("580.159.04"), max SM clock and max memory clock (MHz) from NVML."""
    got = _nvml()
    if got is None:
        return "unknown", None, None
    nv, h = got
    return (_nvml_read(nv.nvmlSystemGetDriverVersion) or "unknown",
            _nvml_read(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
            _nvml_read(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM))


@functools.lru_cache(maxsize=1)
def device() -> Device | None:
    """The first CUDA device, or None when there is none (or CuPy cannot reach one)."""
    try:
        import cupy
        from cupy.cuda import runtime
        if runtime.getDeviceCount() < 1:
            return None
        props = runtime.getDeviceProperties(0)
        attr = runtime.deviceGetAttribute
    except Exception:  # noqa: BLE001 - no driver, no device, no CuPy: all mean "no GPU here"
        return None
    driver, sm_clock, mem_clock = _driver_and_clocks()
    ver = lambda v: f"{v // 1000}.{v % 1000 // 10}"  # noqa: E731  12040 -> "12.4"
    return Device(
        name=props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
        cc=(props["major"], props["minor"]),
        sms=props["multiProcessorCount"],
        l2_bytes=props["l2CacheSize"],
        smem_optin_bytes=attr(runtime.cudaDevAttrMaxSharedMemoryPerBlockOptin, 0),
        sm_clock_max_mhz=sm_clock,
        mem_clock_max_mhz=mem_clock,
        driver=driver,
        cuda_driver_api=ver(runtime.driverGetVersion()),
        cuda_runtime=ver(runtime.runtimeGetVersion()),
        cupy=cupy.__version__,
        nvrtc=".".join(map(str, nvrtc_version())),
    )


def live() -> bool:
    """True when numbers can be measured now: a GPU is present and replay was not forced."""
    return not replay_forced() and device() is not None


def can_run(dev: Device, needs_cc: tuple, arch: str = "") -> bool:
    """Whether `dev` runs work that needs `needs_cc`. An arch-specific target (sm_90a: wgmma, setmaxnreg) runs on
    that one architecture only, not on later ones."""
    if arch.endswith("a") and tuple(needs_cc) >= (9, 0):
        return dev.cc == tuple(needs_cc)
    return dev.cc >= tuple(needs_cc)


def missing(needs_cc: tuple = (8, 0), feature: str = "") -> str | None:
    """What is missing to run this here, as a clause ('no CUDA GPU is visible'), or None."""
    if replay_forced():  # the reader is told what they did: the flag they passed, or the variable they set
        return f"{REPLAY_FLAG} was passed" if REPLAY_FLAG else f"{REPLAY_ENV} is set"
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


def max_active_clusters(kernel_ptr: int, grid_x: int, threads: int, smem_bytes: int) -> int:
    """How many clusters of a loaded kernel (its CUfunction as an int) the GPU runs at once, by the driver's count."""
    from cuda.bindings import driver
    cfg = driver.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid_x, 1, 1
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = threads, 1, 1
    cfg.sharedMemBytes = smem_bytes  # no launch attributes: the cluster shape is the kernel's __cluster_dims__
    err, count = driver.cuOccupancyMaxActiveClusters(driver.CUfunction(kernel_ptr), cfg)
    if err != driver.CUresult.CUDA_SUCCESS or count < 1:
        raise RuntimeError(f"The driver cannot place this kernel (cuOccupancyMaxActiveClusters returned {err.name}, "
                           f"{count} clusters) with {threads} threads and {smem_bytes} bytes of shared memory a block.")
    return count
