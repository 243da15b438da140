"""The book's repository, launch buttons and the notebooks' set-up cell (tools/set_repository.py) agree, and the
set-up cell does what it says: nothing in a clone, a clone of the course where the notebook stands alone."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the book's notebook tooling (nbformat) is not installed here")
yaml = pytest.importorskip("yaml", reason="PyYAML is not installed here")

from tools import set_repository  # noqa: E402 - after the skips above: it imports nbformat and yaml

ROOT = Path(__file__).resolve().parent.parent
MARKDOWN_PAGES = {"glossary"}  # pages of the table of contents that are Markdown, not notebooks


def _config(root=ROOT) -> dict:
    return yaml.safe_load((root / "_config.yml").read_text())


def _first_code_cell(path: Path):
    return next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")


def test_every_notebook_starts_with_the_setup_cell_for_the_configured_repository():
    want = set_repository.setup_source(*set_repository.configured(ROOT))
    paths = set_repository.notebooks(ROOT)
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    # every page is a notebook but the reference pages written as plain Markdown (the glossary), which have no cells
    assert len(paths) == len([f for f in pages if f not in MARKDOWN_PAGES]), pages
    for path in paths:
        cell = _first_code_cell(path)
        assert cell.source == want, f"{path.name}: run `python3 -m tools.set_repository` to refresh its set-up cell"
        assert cell.metadata.get("tags") == ["remove-cell"], f"{path.name}: the set-up cell must be hidden in the book"
        assert cell.metadata.get("jupyter") == {"source_hidden": True}, f"{path.name}: collapse the set-up cell in Lab"


def test_no_launch_button_points_anywhere_until_a_repository_is_named():
    cfg = _config()
    url, buttons = cfg["repository"]["url"], cfg["launch_buttons"]
    if not url:  # jupyter-book's default would be its own repository: the block must be there, and empty
        assert not buttons["colab_url"] and not buttons["jupyterhub_url"]
        assert cfg["html"]["use_repository_button"] is False
    else:
        assert bool(buttons["colab_url"]) == url.startswith("https://github.com/")


def _book_copy(tmp_path: Path) -> Path:
    book = tmp_path / "book"
    (book / "chapters").mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, book / name)
    for path in set_repository.notebooks(ROOT):
        shutil.copy(path, book / "chapters" / path.name)
    return book


def test_set_repository_turns_the_buttons_on_and_writes_every_setup_cell(tmp_path, capsys):
    book = _book_copy(tmp_path)
    url, hub = "https://github.com/example-org/gemm-ladder", "https://hub.example.org"
    assert set_repository.main([url, "--hub", hub, "--branch", "course", "--root", str(book)]) == 0
    cfg = _config(book)
    assert cfg["repository"] == {"url": url, "branch": "course", "path_to_book": ""}
    assert cfg["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert cfg["launch_buttons"]["jupyterhub_url"] == hub and cfg["html"]["use_repository_button"] is True
    for path in set_repository.notebooks(book):
        assert f'REPOSITORY, BRANCH = "{url}", "course"' in _first_code_cell(path).source
    assert f"in {len(set_repository.notebooks(book))} notebook(s)" in capsys.readouterr().out
    set_repository.main(["--root", str(book)])  # a second run changes nothing
    assert "in 0 notebook(s)" in capsys.readouterr().out


def test_set_repository_refuses_a_bad_url_and_touches_nothing(tmp_path, capsys):
    book = _book_copy(tmp_path)
    before = (book / "_config.yml").read_text()
    assert set_repository.main(["github.com/no-scheme", "--root", str(book)]) == 2
    assert "is not a repository URL" in capsys.readouterr().err
    assert (book / "_config.yml").read_text() == before
    gitlab = "https://gitlab.com/example-org/gemm-ladder"
    assert set_repository.main([gitlab, "--root", str(book)]) == 0
    assert _config(book)["launch_buttons"]["colab_url"] == ""  # Colab opens GitHub notebooks only


def _run_setup(cwd: Path, repository: str) -> subprocess.CompletedProcess:
    # -S: no site-packages, so the pip-installed `helpers` is invisible, as it is on a fresh Colab runtime.
    code = set_repository.setup_source(repository, "main") + (
        "\nimport importlib.util; print(os.getcwd()); print(importlib.util.find_spec('helpers').origin)")
    return subprocess.run([sys.executable, "-S", "-c", code], cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_setup_cell_clones_the_course_where_the_notebook_stands_alone(tmp_path):
    origin = tmp_path / "origin" / "gemm-ladder"
    (origin / "helpers").mkdir(parents=True)
    (origin / "chapters").mkdir()
    (origin / "helpers" / "__init__.py").write_text("")
    (origin / "chapters" / "00_the_machine.ipynb").write_text("{}")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "course"]):
        subprocess.run(git + args, cwd=origin, check=True)
    colab = tmp_path / "content"  # where Colab runs a notebook it opened from GitHub: nothing else is there
    colab.mkdir()
    out = _run_setup(colab, origin.as_uri())
    assert out.returncode == 0, out.stderr
    cwd, origin_of_helpers = out.stdout.strip().splitlines()[-2:]
    clone = colab / "gemm-ladder"
    assert Path(cwd) == clone / "chapters" and Path(origin_of_helpers) == clone / "helpers" / "__init__.py"
    again = _run_setup(colab, origin.as_uri())  # a second run reuses the clone
    assert again.returncode == 0 and "Fetching" not in again.stdout


def test_setup_cell_without_a_repository_says_what_to_do(tmp_path):
    out = _run_setup(tmp_path, "")
    assert out.returncode != 0
    assert "needs the rest of the course: clone its repository" in out.stderr.strip().splitlines()[-1]


def test_the_glossary_is_in_the_table_of_contents_as_a_markdown_page():
    # the profile panels' footer sends the reader to it (helpers.figures.profile.GLOSSARY_LINE: sidebar, Tools)
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = {c["file"]: part["caption"] for part in toc["parts"] for c in part["chapters"]}
    for page in MARKDOWN_PAGES:
        assert pages.get(page) == "Tools" and (ROOT / f"{page}.md").exists() and not (ROOT / f"{page}.ipynb").exists()
