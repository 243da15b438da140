"""Re-render a chapter's rendered-prose cells (helpers.prose; tagged remove-input) from the book's recorded run, on any
machine: the chapter runs in replay mode into a scratch copy, and only those cells' outputs are copied back, matched
by cell id; every other cell keeps the outputs of the GPU execution the book shows. For an edited paragraph, or a new
one made with --convert. Prints each paragraph as rendered: read them.

    python3 -m tools.render_prose chapters/07_tma.ipynb                 every rendered-prose cell of the chapter
    python3 -m tools.render_prose chapters/07_tma.ipynb --cells ID ...  only these cells
    python3 -m tools.render_prose chapters/07_tma.ipynb --convert ID SOURCE.py
        turn cell ID (a markdown paragraph) into a rendered-prose cell whose code is SOURCE.py, then render it

After a GPU run (tools/execute) the cells already hold what that run rendered, and CI's nbval holds them to it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

TAGS = ["remove-input", "nbval-check-output"]


def _write(path: Path, nb: dict) -> None:
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def convert(path: Path, cell_id: str, source: str) -> None:
    """Cell `cell_id` becomes a code cell running `source`, input hidden in the book and in JupyterLab, its output
    checked by nbval; it keeps its id and place."""
    nb = json.loads(path.read_text())
    cells = [c for c in nb["cells"] if c.get("id") == cell_id]
    if not cells:
        sys.exit(f"{path} has no cell with id {cell_id!r}.")
    cells[0].clear()
    cells[0].update({"cell_type": "code", "execution_count": None, "id": cell_id,
                     "metadata": {"jupyter": {"source_hidden": True}, "tags": list(TAGS)}, "outputs": [],
                     "source": source.rstrip("\n").splitlines(keepends=True)})
    _write(path, nb)


def render(path: Path, ids: list[str] | None = None) -> int:
    """Replay the chapter and copy the rendered cells' outputs (and execution counts) back; the notebook is re-read
    just before the write, so edits to other cells made meanwhile are kept. Returns the number of errors."""
    import nbformat
    from nbclient import NotebookClient
    os.environ["GEMM_LADDER_REPLAY"] = "1"
    os.environ.pop("MPLBACKEND", None)
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.resolve().parent)}}).execute()
    done = {c["id"]: c for c in json.loads(nbformat.writes(nb))["cells"]}
    mine = json.loads(path.read_text())
    errors = 0
    for c in mine["cells"]:
        if "remove-input" not in c.get("metadata", {}).get("tags", []) or (ids and c["id"] not in ids):
            continue
        b = done.get(c["id"])
        if b is None or "".join(b["source"]) != "".join(c["source"]):
            print(f"--- cell {c['id']}: changed while the chapter ran; run this again")
            continue
        c["outputs"], c["execution_count"] = b["outputs"], b["execution_count"]
        failed = [o for o in b["outputs"] if o.get("output_type") == "error"]
        errors += len(failed)
        print(f"--- cell {c['id']}" + (f": {failed[0]['ename']}: {failed[0]['evalue']}" if failed else ""))
        for o in b["outputs"]:
            print("".join(o.get("data", {}).get("text/markdown", "")) or "".join(o.get("text", "")))
    _write(path, mine)
    return errors


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tools.render_prose", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebook", type=Path)
    ap.add_argument("--cells", nargs="+", metavar="ID", help="only these rendered-prose cells")
    ap.add_argument("--convert", nargs=2, metavar=("ID", "SOURCE"), help="make cell ID a rendered-prose cell first")
    args = ap.parse_args(argv)
    if args.convert:
        convert(args.notebook, args.convert[0], Path(args.convert[1]).read_text())
    ids = args.cells or ([args.convert[0]] if args.convert else None)
    return 1 if render(args.notebook, ids) else 0


if __name__ == "__main__":
    sys.exit(main())
