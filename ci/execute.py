"""Execute chapter notebooks in place, cold (a fresh kernel each), and report each one's wall time.

    python ci/execute.py chapters/00_the_machine.ipynb ...      (default: every chapter)

The executed outputs are what the static book shows, so this runs on the H100. Each chapter's time is
written to results/execution.json for the book's status page.
"""
import json
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
CELL_TIMEOUT_S = 150  # a hung cell fails the chapter, with the outputs so far kept, instead of stalling the run


def main(paths) -> int:
    paths = [Path(p) for p in paths] or sorted((ROOT / "chapters").glob("*.ipynb"))
    timings_file = ROOT / "results" / "execution.json"
    timings = json.loads(timings_file.read_text()) if timings_file.exists() else {}
    failed = 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        t0 = time.time()
        try:
            NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                           resources={"metadata": {"path": str(path.parent)}}).execute()
        except Exception as e:  # noqa: BLE001 - keep going so one chapter's failure loses no other output
            failed += 1
            print(f"FAILED {path}: {type(e).__name__}: {str(e)[-2000:]}", flush=True)
        seconds = time.time() - t0
        nbformat.write(nb, path)  # written even on failure: the traceback is in the cell, for reading
        timings[path.stem] = {"seconds": round(seconds, 1), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        print(f"{path} executed cold in {seconds:.1f} s", flush=True)
    timings_file.write_text(json.dumps(timings, indent=1, sort_keys=True) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
