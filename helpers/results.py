"""Recorded measurements: results/<gpu>.json, written atomically under a lock, read back for replay."""
from __future__ import annotations

import datetime as _dt
import fcntl
import functools
import json
import os
from contextlib import contextmanager
from pathlib import Path

from .registry import ROOT

RESULTS = ROOT / "results"
RESULTS_ENV = "GEMM_LADDER_RESULTS"          # point replay (or recording) at another file
REFERENCE = "nvidia-h100-80gb-hbm3"          # the GPU the book's outputs were recorded on
RUN_ENV = "GEMM_LADDER_RUN"                  # one id for every process of a run (ci/gpu.sh sets it)


@functools.lru_cache(maxsize=1)
def run_id() -> str:
    """This run's id: GEMM_LADDER_RUN if set (so the chapters executed one after another share it), else one id
    for this process. A row measured earlier in the same run is reused, never measured twice."""
    return os.environ.get(RUN_ENV) or _dt.datetime.now(_dt.timezone.utc).strftime(f"%Y-%m-%dT%H:%MZ-{os.getpid()}")


class ResultsError(RuntimeError):
    """A results file exists but cannot be used; it is left exactly as it was."""


def path_for(slug: str | None = None) -> Path:
    if os.environ.get(RESULTS_ENV):
        return Path(os.environ[RESULTS_ENV])
    return RESULTS / f"{slug or REFERENCE}.json"


def load(path: Path | None = None) -> dict:
    """The recorded results, or an empty record if the file does not exist yet."""
    path = path or path_for()
    if path.is_dir():
        raise ResultsError(f"{path} is a directory, not a results file; point {RESULTS_ENV} at a .json file.")
    if not path.exists():
        return {"ceilings": {}, "gemm": {}}
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ResultsError(f"{path} is not valid JSON ({e}); fix or move it away. It was not changed.") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) and all(isinstance(e, dict) for e in v.values())
                                             for v in data.values()):
        raise ResultsError(f"{path} does not look like a results file (each section must map names to entries); "
                           f"fix or move it away. It was not changed.")
    data.setdefault("ceilings", {})
    data.setdefault("gemm", {})
    return data


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two notebooks recording at once take turns here
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def writable(path: Path | None = None) -> Path:
    """Check, before anything is measured, that results can be recorded: the file is readable as results and its
    folder writable. Raises ResultsError with one sentence otherwise."""
    path = path or path_for()
    load(path)
    folder = path.parent if path.parent.exists() else path.parent.parent
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ResultsError(f"{path} cannot be written (no permission); set {RESULTS_ENV} to a writable file.")
    return path


def record(section: str, key: str, entry: dict, path: Path | None = None) -> Path:
    """Merge one entry into results/<gpu>.json: read, update, write to a temp file, rename over."""
    path = path or path_for()
    with _locked(path):
        data = load(path)  # raises, before anything is written, if the file is unreadable
        data.setdefault(section, {})[key] = entry
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)
    return path


def gemm_key(rung_id: str, m: int, n: int, k: int) -> str:
    return f"{rung_id}@{m}x{n}x{k}"


def record_part(path: Path, part: str, value) -> None:
    """An experiment's own record, outside the book's run (results/pingpong.json, clusters.json, ...): set one part
    of it, and under "env" the machine and time that part ran on, so parts from different leases say so."""
    from .gpu import device
    data = json.loads(path.read_text()) if path.exists() else {}
    data[part] = value
    data.setdefault("env", {})[part] = device().env()
    path.write_text(json.dumps(data, indent=1) + "\n")


def recorded_gemm(rung_id: str, m: int, n: int, k: int, path: Path | None = None, section: str = "gemm") -> dict | None:
    return load(path).get(section, {}).get(gemm_key(rung_id, m, n, k))


def recorded_ceiling(ceiling_id: str, path: Path | None = None) -> dict | None:
    return load(path)["ceilings"].get(ceiling_id)
