"""The run store: every measured number goes through one function, `obtain`. Replayed from the results file when
this machine cannot run it, reused when this run already measured it (in this process, or in another process of
the same run id), else measured now and recorded with the run id and the environment.

    entry, source = obtain("ceilings", "hbm_copy", how, needs_cc=(8, 0))   # source: recorded, this run or live

On top of it: the ladder's rows (helpers.ladder), the ceilings (helpers.ceilings), the profiles (helpers.profile)
and the chapters' one-off measurements (helpers.demos).
"""
from __future__ import annotations

import datetime as _dt
import functools
import os
import sys

from . import results
from .gpu import device, why_not_live

RUN_ENV = "GEMM_LADDER_RUN"  # one id for every process of a run (ci/gpu.sh sets it)


class NotRecorded(LookupError):
    """Replay was asked for a measurement that was never recorded."""


@functools.lru_cache(maxsize=1)
def run_id() -> str:
    """This run's id: GEMM_LADDER_RUN if set (so the chapters executed one after another share it), else one id
    for this process. A row measured earlier in the same run is reused, never measured twice."""
    return os.environ.get(RUN_ENV) or _dt.datetime.now(_dt.timezone.utc).strftime(f"%Y-%m-%dT%H:%MZ-{os.getpid()}")


_MEMORY: dict = {}  # (section, key) -> entry measured in this process but not written (save=False, or a write failed)


def obtain(section: str, key: str, how, needs_cc: tuple = (8, 0), arch: str = "", save: bool = True,
           blocked: str | None = None) -> tuple[dict, str]:
    """(entry, source). source is "recorded" (replayed: this machine cannot run it, or `blocked` says why it cannot
    be measured here), "this run" (measured earlier in the same run, maybe by another chapter: the same number
    everywhere), or "live" (measured now by `how()`, which returns a dict, then recorded). The results file is
    checked before anything is measured."""
    if blocked and not why_not_live(needs_cc, arch):
        print(f"note: {blocked}; the recorded {section} entry {key} is shown instead.", file=sys.stderr)
    if blocked or why_not_live(needs_cc, arch):
        e = results.load().get(section, {}).get(key)
        if e is None:
            raise NotRecorded(f"{section} {key} was never recorded in {results.path_for()}; measure it on a GPU that "
                              f"can run it.")
        return {k: v for k, v in e.items() if k != "env"}, "recorded"
    dev = device()
    path = results.path_for(dev.slug)
    run = run_id()
    kept = _MEMORY.get((section, key))
    if kept and kept.get("run") == run:
        return kept, "this run"
    e = results.load(path).get(section, {}).get(key) if path.exists() else None
    if e and e.get("run") == run:
        return {k: v for k, v in e.items() if k != "env"}, "this run"
    if save:
        results.writable(path)  # refuse now, in one sentence, rather than lose a measurement later
    env = dev.env()
    entry = {**how(), "run": run, "gpu": dev.name, "date": env["date"]}
    _MEMORY[(section, key)] = entry
    if save:
        try:
            results.record(section, key, {**entry, "env": env}, path)
        except (OSError, results.ResultsError) as err:
            print(f"warning: {section} {key} was measured but could not be written to {path} ({err}); it is kept "
                  f"in memory for this session only.", file=sys.stderr)
    return entry, "live"


def labelled(entry: dict, source: str) -> dict:
    """An entry of obtain() with its source as a key, as the chapters show it."""
    return {**entry, "source": source}
