"""Execute chapter notebooks in place, each cold in a fresh kernel and a fresh process, and time them.

    python3 -m tools.execute [chapters/00_the_machine.ipynb ...]      (default: every chapter)

The executed outputs are what the static book shows, so this runs on a Hopper GPU. Each chapter's time (and GPU) is
written to results/execution.json for the book's status page, unless the chapter only replayed rows its run
(GEMM_LADDER_RUN) had already measured: such a rerun keeps the chapter's cold time.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CELL_TIMEOUT_S = 150     # a hung cell fails the chapter, with the outputs so far kept
CHAPTER_TIMEOUT_S = 400  # and a hung kernel start or shutdown cannot stall the whole run


def execute_one(path: Path) -> None:
    """Run in a child process: one notebook, one kernel, outputs written even if a cell fails."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    t0 = time.time()
    try:
        NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        t1 = time.time()
        nbformat.write(nb, path)
        stamps = [c.metadata.get("execution", {}) for c in nb.cells if c.cell_type == "code"]
        stamps = [s for s in stamps if "iopub.execute_input" in s]
        if stamps:
            ts = lambda s: dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()  # noqa: E731
            first, last = ts(stamps[0]["iopub.execute_input"]), ts(stamps[-1]["shell.execute_reply"])
            print(f"  kernel start {first - t0:.1f} s, cells {last - first:.1f} s, shutdown {t1 - last:.1f} s")
            for i, s in enumerate(stamps):
                run = ts(s["shell.execute_reply"]) - ts(s["iopub.execute_input"])
                gap = ts(s["iopub.execute_input"]) - ts(stamps[i - 1]["shell.execute_reply"]) if i else 0.0
                if run > 3 or gap > 2:
                    print(f"  code cell {i}: ran {run:.1f} s after a {gap:.1f} s wait")
    blank = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and re.search(r"^fig_\w+\(", c.source, re.M)
             and not any("image/png" in o.get("data", {}) for o in c.get("outputs", []))]
    if blank:
        sys.exit(f"{path.name}: figure cells {blank} drew no image (is a non-inline matplotlib backend set?)")


def execute(paths) -> int:
    paths = [Path(p) for p in paths] or sorted((ROOT / "chapters").glob("*.ipynb"))
    timings_file = ROOT / "results" / "execution.json"
    timings = json.loads(timings_file.read_text()) if timings_file.exists() else {}
    failed = 0
    for path in paths:
        before = _run_entries()
        t0 = time.time()
        try:
            rc = subprocess.run([sys.executable, "-m", "tools.execute", "--one", str(path.resolve())], cwd=ROOT,
                                timeout=CHAPTER_TIMEOUT_S).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        seconds = time.time() - t0
        if rc != 0:
            failed += 1
            print(f"FAILED {path} ({rc})", flush=True)
            continue
        if before and _run_entries() == before and path.stem in timings:
            # A rerun in a run that already holds its measurements replays them: its seconds are not what a cold
            # execution costs, which is what the status page says. Keep the cold time.
            print(f"{path} executed in {seconds:.1f} s reusing run {os.environ['GEMM_LADDER_RUN']}'s rows; the "
                  f"status page keeps its cold time of {timings[path.stem]['date']}", flush=True)
            continue
        timings[path.stem] = {"seconds": round(seconds, 1), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "gpu": _gpu_name()}
        timings_file.write_text(json.dumps(timings, indent=1, sort_keys=True) + "\n")  # the status page reads it
        print(f"{path} executed cold in {seconds:.1f} s", flush=True)
    return 1 if failed else 0


def _gpu_name() -> str:
    """The GPU the chapters run on, for the status page (a chapter's time depends on the board)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from helpers import device
    gpu = device()
    return gpu.name if gpu else "no GPU"


def _run_entries() -> str:
    """The results file's entries of this process's run id (GEMM_LADDER_RUN), as text; empty without a run id."""
    run = os.environ.get("GEMM_LADDER_RUN")
    if not run:
        return ""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from helpers import device, results
    gpu = device()
    data = results.load(results.path_for(gpu.slug if gpu else None))
    return json.dumps({s: {k: e for k, e in v.items() if isinstance(e, dict) and e.get("run") == run}
                       for s, v in data.items() if isinstance(v, dict)}, sort_keys=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tools.execute", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", metavar="NOTEBOOK", help="chapters to execute (default: every chapter)")
    ap.add_argument("--one", metavar="NOTEBOOK", help=argparse.SUPPRESS)  # the child process of one chapter
    args = ap.parse_args(argv)
    # The book shows what the kernels draw: with MPLBACKEND=Agg (fine for tests) the kernels would fall back to a
    # non-interactive backend and every figure cell would be saved with no image at all.
    os.environ.pop("MPLBACKEND", None)
    if args.one:
        execute_one(Path(args.one))
        return 0
    return execute(args.paths)


if __name__ == "__main__":
    sys.exit(main())
