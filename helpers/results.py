"""Recorded measurements, one folder per GPU: results/<gpu>/run.json (rows, ceilings, profiles' summaries, each
entry with the environment it ran in) and results/<gpu>/metrics/<key>.json (a profile's raw Nsight Compute metrics,
read only by whoever asks for them). Written atomically under a lock, read back for replay, parsed once per change.
"""
from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path

from .registry import ROOT

RESULTS = ROOT / "results"
RESULTS_ENV = "GEMM_LADDER_RESULTS"          # point replay (or recording) at another run file
REFERENCE = "nvidia-h200"                    # the GPU the book's outputs were recorded on
RUN_FILE = "run.json"
APART = {"profiles": ("raw", "units")}       # the keys of a section's entries kept in metrics/, not in the run file


class ResultsError(RuntimeError):
    """A results file exists but cannot be used; it is left exactly as it was."""


def path_for(slug: str | None = None) -> Path:
    """The run file of a GPU (by its slug; none: the book's), or the file GEMM_LADDER_RESULTS names."""
    if os.environ.get(RESULTS_ENV):
        return Path(os.environ[RESULTS_ENV])
    return RESULTS / (slug or REFERENCE) / RUN_FILE


def metrics_dir(path: Path) -> Path:
    """Where the raw metrics of a run file's profiles live: metrics/ beside a run.json, <name>.metrics/ beside any
    other file (so two scratch files in one folder never share one)."""
    return path.parent / "metrics" if path.name == RUN_FILE else path.with_suffix(".metrics")


_CACHE: dict[str, tuple[tuple, dict]] = {}  # path -> ((mtime, size, inode), parsed file)


def _stamp(path: Path) -> tuple:
    st = path.stat()
    return st.st_mtime_ns, st.st_size, st.st_ino


def _parse(path: Path) -> dict:
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


def load(path: Path | None = None) -> dict:
    """The recorded results, or an empty record if the file does not exist yet. Parsed once per change of the file
    (its modification time, size and inode); the sections are the caller's to change, the entries are shared."""
    path = path or path_for()
    if path.is_dir():
        raise ResultsError(f"{path} is a directory, not a results file; point {RESULTS_ENV} at a .json file.")
    if not path.exists():
        return {"ceilings": {}, "gemm": {}}
    stamp, where = _stamp(path), str(path.resolve())
    cached = _CACHE.get(where)
    if cached is None or cached[0] != stamp:
        cached = _CACHE[where] = (stamp, _parse(path))
    return {section: dict(entries) for section, entries in cached[1].items()}


def metrics(section: str, key: str, path: Path | None = None) -> dict:
    """The keys of an entry kept apart from the run file (a profile's "raw" and "units"), read from its own file;
    an entry written before they were kept apart still holds them, and {} where there are none."""
    if section not in APART:
        return {}
    path = path or path_for()
    entry = load(path).get(section, {}).get(key) or {}
    inline = {k: entry[k] for k in APART.get(section, ()) if k in entry}
    if inline:
        return inline
    file = metrics_dir(path) / f"{key}.json"
    return json.loads(file.read_text()) if file.exists() else {}


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
    folder = next(p for p in (path.parent, *path.parents) if p.exists())  # the folder that will hold it
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ResultsError(f"{path} cannot be written (no permission); set {RESULTS_ENV} to a writable file.")
    return path


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def record(section: str, key: str, entry: dict, path: Path | None = None) -> Path:
    """Merge one entry into the run file: read, update, write to a temp file, rename over. Keys kept apart (APART)
    go to their own file in metrics/ first, so the run file never names metrics that are not there."""
    path = path or path_for()
    with _locked(path):
        data = load(path)  # raises, before anything is written, if the file is unreadable
        apart = {k: entry[k] for k in APART.get(section, ()) if k in entry}
        if apart:
            _write(metrics_dir(path) / f"{key}.json", json.dumps(apart, indent=1, sort_keys=True) + "\n")
            entry = {k: v for k, v in entry.items() if k not in apart}
        data.setdefault(section, {})[key] = entry
        _write(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
        _CACHE.pop(str(path.resolve()), None)  # the next load reads what was just written
    return path


def gemm_key(rung_id: str, m: int, n: int, k: int) -> str:
    return f"{rung_id}@{m}x{n}x{k}"


def record_part(path: Path, part: str, value) -> None:
    """An experiment's own record, outside the book's run (experiments/<name>/record.json): set one part
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


def environments(path: Path | None = None) -> list[dict]:
    """What the machine said about itself (nvidia-smi and the driver) with every recorded entry of a run file: its
    SMs, L2, shared memory and highest SM clock. tests/test_hardware.py holds helpers.hardware to the book's."""
    return [e["env"] for section in load(path).values() for e in section.values() if "env" in e]
