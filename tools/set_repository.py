"""Name the book's public repository, or refresh what depends on it.

    python3 -m tools.set_repository https://github.com/ORG/REPO [--branch main] [--hub https://hub.example.org]
    python3 -m tools.set_repository              # rewrite the notebooks' set-up cells from _config.yml as it is

With a URL it fills in `_config.yml`: the repository (and its button), the Colab launch button (GitHub only:
Colab opens notebooks from GitHub) and, with --hub, the JupyterHub one. Either way it then writes the first code
cell of every notebook in the table of contents from SETUP below, with the configured URL in it: Colab opens a
notebook without the rest of the course, and that cell is what fetches it. tests/test_book_config.py checks that
the cells and the config agree. `--root DIR` edits a copy of the book instead of this one.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
COLAB = "https://colab.research.google.com"

# The set-up cell, the same in every notebook but for the two values. It is hidden in the built book
# ("remove-cell") and does nothing where `helpers` is importable already (a pip install, CI, the GPU host).
SETUP = '''\
# Set-up. In a clone of the course (a JupyterHub, a laptop) this only makes `helpers` importable. Colab opens a
# notebook on its own, so there it first clones the course's repository (Colab's own CuPy and CUDA toolkit then
# build the kernels). tools/set_repository.py writes REPOSITORY; it is empty until the book names one.
import importlib.util, os, subprocess, sys
REPOSITORY, BRANCH = {repository}, {branch}
if importlib.util.find_spec("helpers") is None:
    root = os.path.abspath("..")
    if not os.path.isdir(os.path.join(root, "helpers")):
        if not REPOSITORY:
            raise RuntimeError("This notebook needs the rest of the course: clone its repository and open the "
                               "notebook from the clone's chapters/ folder.")
        root = os.path.abspath(REPOSITORY.rstrip("/").split("/")[-1].removesuffix(".git"))
        if not os.path.isdir(root):
            print(f"Fetching the course from {{REPOSITORY}} ...")
            subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", BRANCH, REPOSITORY, root],
                           check=True)
        os.chdir(os.path.join(root, "chapters"))
    sys.path.insert(0, root)'''
TAGS = ["remove-cell"]
METADATA = {"tags": TAGS, "jupyter": {"source_hidden": True}}  # removed from the book, collapsed in JupyterLab
REPO_URL = re.compile(r"^https://[\w.-]+/[\w.-]+/[\w.-]+?(\.git)?/?$")


def notebooks(root: Path) -> list[Path]:
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    return [root / f"{f}.ipynb" for f in files if (root / f"{f}.ipynb").exists()]


def configured(root: Path) -> tuple[str, str]:
    """The repository URL and branch that _config.yml names ("" while there is none)."""
    repo = yaml.safe_load((root / "_config.yml").read_text()).get("repository", {})
    return repo.get("url", "") or "", repo.get("branch", "main") or "main"


def setup_source(repository: str, branch: str) -> str:
    return SETUP.format(repository=json.dumps(repository), branch=json.dumps(branch))


def _set(text: str, key: str, value) -> str:
    """Replace the one line `  key: ...` of _config.yml, keeping its comments."""
    new, n = re.subn(rf"^(\s+{key}:).*$", lambda m: f"{m.group(1)} {value}", text, flags=re.M)
    if n != 1:
        raise SystemExit(f"_config.yml has {n} lines for `{key}:`, expected exactly one; edit it by hand.")
    return new


def write_config(root: Path, url: str, branch: str, hub: str) -> None:
    path = root / "_config.yml"
    text = path.read_text()
    github = url.startswith("https://github.com/")
    for key, value in (("url", f'"{url}"'), ("branch", f'"{branch}"'), ("jupyterhub_url", f'"{hub}"'),
                       ("colab_url", f'"{COLAB}"' if github else '""'), ("use_repository_button", "true")):
        text = _set(text, key, value)
    path.write_text(text)
    if not github:
        print("Colab opens notebooks from GitHub only, so this repository gets no Colab button.")


def write_setup_cells(root: Path) -> list[Path]:
    """Make the first code cell of every notebook the set-up cell for the configured repository."""
    source = setup_source(*configured(root))
    changed = []
    for path in notebooks(root):
        nb = nbformat.read(path, as_version=4)
        first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
        cell = nbformat.v4.new_code_cell(source, metadata=METADATA)
        if first < len(nb.cells) and nb.cells[first].source.startswith("# Set-up."):
            kept = {k: nb.cells[first].metadata.get(k) for k in METADATA}
            if nb.cells[first].source == source and kept == METADATA:
                continue
            cell["id"] = nb.cells[first]["id"]
            nb.cells[first] = cell
        else:
            nb.cells.insert(first, cell)
        nbformat.write(nb, path)
        changed.append(path)
    return changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tools.set_repository", description=__doc__.split("\n\n")[0])
    ap.add_argument("url", nargs="?", help="the public repository, e.g. https://github.com/ORG/REPO")
    ap.add_argument("--branch", default="main", help="the branch the buttons open (default: main)")
    ap.add_argument("--hub", default="", help="a JupyterHub with nbgitpuller, e.g. https://hub.example.org")
    ap.add_argument("--root", type=Path, default=ROOT, help="the book to edit (default: this one)")
    args = ap.parse_args(argv)
    if args.url is not None:
        if not REPO_URL.match(args.url):
            print(f"{args.url!r} is not a repository URL of the form https://host/owner/name.", file=sys.stderr)
            return 2
        if args.hub and not re.match(r"^https?://[\w.-]+(:\d+)?(/[\w./-]*)?$", args.hub):
            print(f"{args.hub!r} is not a JupyterHub URL of the form https://host[/path].", file=sys.stderr)
            return 2
        write_config(args.root, args.url.rstrip("/"), args.branch, args.hub.rstrip("/"))
    changed = write_setup_cells(args.root)
    url, branch = configured(args.root)
    print(f"repository: {url or '(none yet)'} @ {branch}; set-up cell rewritten in {len(changed)} notebook(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
