"""What a new learner hits first (issue 40): a compile error named at the line to fix, one wording for a fault in a
child process, a command line that names what the reader did and points where a check can be read without a GPU,
and a landing page that says who the book is for, what it assumes and how long it takes to read."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import CompileError, build, rung

ROOT = Path(__file__).resolve().parent.parent


# --- 1. a missing ';' before a preprocessor line is named where it belongs ---------------------------------------

def test_a_missing_semicolon_before_a_pragma_is_named_at_its_own_line():
    # `__syncthreads()` without its ';', followed by a blank line and `#pragma unroll`: the compiler notices at the
    # `for` below the pragma; the learner is sent to the line that lost the ';', not to the pragma
    r = rung("04_swizzle")
    lines = r.path.read_text().splitlines()
    culprit = next(i for i, l in enumerate(lines, 1) if l.strip() == "__syncthreads();" and
                   lines[i + 1].strip().startswith("#pragma"))
    lines[culprit - 1] = lines[culprit - 1].replace("__syncthreads();", "__syncthreads()")
    with pytest.raises(CompileError) as e:
        build(r, source="\n".join(lines))
    text = str(e.value)
    assert text.splitlines()[0].startswith(f"kernels/04_swizzle.cu line {culprit}: expected a \";\" at the end of "
                                           f"this line"), text
    assert [x for x in text.splitlines() if x.startswith(">")] == [f">{culprit:>5} | {lines[culprit - 1]}"]


def test_lines_without_a_token_are_skipped_when_looking_for_the_missing_semicolon():
    from helpers.compiler import _not_code
    lines = ["x = 1;", "", "// a comment", "#define TWICE(v) \\", "    ((v) * 2)", "/* a block", "   comment */",
             "/* one line */", "  #pragma unroll", "for (;;) {}", "y = 2; /* trailing */"]
    assert _not_code(lines) == [False, True, True, True, True, True, True, True, True, False, False]


# --- 3. one wording for a fault in a child process ---------------------------------------------------------------

def _fault_sentence(r) -> str:
    """The sentence helpers.kernel.faults_explained gives for a trapped launch, raised without a GPU."""
    cp = pytest.importorskip("cupy", reason="CuPy is not installed here")
    from helpers.kernel import KernelFault, faults_explained
    with pytest.raises(KernelFault) as e, faults_explained(r):
        raise cp.cuda.runtime.CUDARuntimeError(719)  # cudaErrorLaunchFailure, what a trap leaves
    return str(e.value)


def test_a_fault_in_a_child_process_says_the_notebook_is_fine():
    from helpers.demos import IN_CHILD, in_child
    said = _fault_sentence(rung("07_tma"))
    assert "restart the Python kernel" in said  # right for the process that faulted ...
    told = in_child(said)  # ... wrong for the notebook whose child it was
    assert told.endswith(IN_CHILD) and "restart the Python kernel" not in told and "mbarrier waits trap" in told
    assert "child process" in IN_CHILD and "Python kernel" in IN_CHILD and "unaffected" in IN_CHILD
    verdict = "07_tma: wrong: relative error 1.2, 99% of elements outside the bound"
    assert in_child(verdict) == verdict  # nothing trapped: nothing to retell


def test_the_recorded_fault_of_chapter_07_is_told_in_the_one_wording(monkeypatch):
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    from helpers.demos import IN_CHILD, demo_fault
    fault = demo_fault("07_tma", "expect-tx-too-many", {"TX_BYTES": "(A_TILE + B_TILE) * 2 + 1024"}, 256, 256, 128)
    assert fault["message"].endswith(IN_CHILD) and "restart the" not in fault["message"], fault["message"]


def test_the_playground_tells_a_fault_a_hang_and_a_crash_in_the_one_wording(monkeypatch):
    from helpers import playground
    from helpers.demos import IN_CHILD
    said = _fault_sentence(rung("07_tma"))
    monkeypatch.setattr(playground, "missing", lambda *a: None)  # as if a Hopper GPU were here; the child is faked
    children = {
        "fault": lambda *a, **k: subprocess.CompletedProcess(a, 0, "PLAYGROUND " + json.dumps(
            {"checks": [], "error": said}), ""),
        "crash": lambda *a, **k: subprocess.CompletedProcess(a, -11, "", "Segmentation fault"),
    }

    def hang(*a, **k):
        raise subprocess.TimeoutExpired(a, k["timeout"])
    children["hang"] = hang
    for what, child in children.items():
        monkeypatch.setattr(playground.subprocess, "run", child)
        out = str(playground.play("07_tma"))
        assert IN_CHILD in out and "restart the" not in out, (what, out)


# --- 7. the command line's paper cuts -----------------------------------------------------------------------------

def _cli(capsys, monkeypatch, *args) -> tuple[int, str, str]:
    from helpers import gpu
    from helpers.__main__ import main
    monkeypatch.setattr(gpu, "REPLAY_FLAG", None)  # restored after the test, whatever main() sets
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_ladder_replay_names_the_flag_the_reader_passed(capsys, monkeypatch):
    monkeypatch.delenv("GEMM_LADDER_REPLAY", raising=False)
    code, _, err = _cli(capsys, monkeypatch, "ladder", "--replay", "--rungs", "07_tma", "--plot", "")
    monkeypatch.delenv("GEMM_LADDER_REPLAY", raising=False)  # main() set it for the flag
    assert code == 0 and "REPLAY: --replay was passed, so recorded results are shown" in err, err
    assert "GEMM_LADDER_REPLAY is set" not in err
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")  # the variable, set by the reader: named as such
    code, _, err = _cli(capsys, monkeypatch, "ladder", "--rungs", "07_tma", "--plot", "")
    assert code == 0 and "REPLAY: GEMM_LADDER_REPLAY is set, so recorded results are shown" in err, err


def test_check_without_a_gpu_points_at_the_recorded_check(capsys, monkeypatch):
    from helpers import gpu
    monkeypatch.delenv("GEMM_LADDER_REPLAY", raising=False)
    monkeypatch.setattr(gpu, "missing", lambda *a: "no CUDA GPU is visible")  # this machine's case, on any machine
    code, out, err = _cli(capsys, monkeypatch, "check", "07_tma")
    assert code == 2 and not out
    assert err.strip() == ("error: No CUDA GPU is visible, so nothing can be checked here; the recorded check of "
                           "07_tma is the 'correct' column of `python -m helpers ladder --replay --rungs 07_tma`.")
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")  # and what it points at shows that check
    code, out, _ = _cli(capsys, monkeypatch, "ladder", "--replay", "--rungs", "07_tma", "--plot", "")
    assert code == 0 and re.search(r"^07_tma .* yes ", out, re.M), out


def test_a_listing_piped_into_head_ends_quietly():
    # the reader closes the pipe before the listing is written (as `| head` does once it has its lines)
    proc = subprocess.Popen([sys.executable, "-m", "helpers", "sass", "07_tma", "--listing"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "GEMM_LADDER_REPLAY": "1"})
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert proc.returncode == 0 and "Traceback" not in err and "BrokenPipe" not in err, (proc.returncode, err)


# --- 7. the landing page ------------------------------------------------------------------------------------------

def _root_page() -> Path:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed here")
    root = yaml.safe_load((ROOT / "_toc.yml").read_text())["root"]
    return next(ROOT / f"{root}{ext}" for ext in (".md", ".ipynb") if (ROOT / f"{root}{ext}").exists())


def test_the_landing_page_title_is_not_doubled():
    # Sphinx's basic layout (which jupyter-book 1.x's theme extends) writes <title>{page title} — {html_title}</title>,
    # and jupyter-book passes _config.yml's `title` as html_title: a landing heading equal to it shows the name twice
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed here")
    book = yaml.safe_load((ROOT / "_config.yml").read_text())["title"]
    heading = next(l[2:].strip() for l in _root_page().read_text().splitlines() if l.startswith("# "))
    tab = f"{heading} — {book}"
    assert tab.count(book) == 1 and book not in heading and heading not in book, tab


def _reading_minutes(notebook: Path) -> float:
    """Minutes to read a chapter's prose at 200 words a minute: its markdown cells and the paragraphs its hidden
    say-cells render, without tables, fenced code and HTML tags (a table is looked up, not read word by word)."""
    def words(text: str) -> int:
        text = re.sub(r"<[^>]+>", " ", re.sub(r"```.*?```", "", text, flags=re.S))
        return len(" ".join(l for l in text.splitlines() if not l.lstrip().startswith("|")).split())
    total = 0
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] == "markdown":
            total += words("".join(cell["source"]))
        elif "remove-input" in cell.get("metadata", {}).get("tags", []):
            total += sum(words("".join(o.get("data", {}).get("text/markdown", ""))) for o in cell.get("outputs", []))
    return total / 200


def test_the_landing_page_names_its_audience_prerequisites_and_reading_time():
    text = " ".join(_root_page().read_text().split())
    assert "**Who it is for.**" in text and "know C++" in text and "written a CUDA kernel" in text
    assert "no GPU" in text  # the one thing a reader might think they need and do not
    stated = {m.group(1): int(m.group(2)) for m in re.finditer(r"\| \[(\d\d)\]\(chapters/[^)]+\) \|.*?\| ~(\d+) min \|",
                                                               text)}
    chapters = sorted(p for p in (ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
    assert sorted(stated) == [p.name[:2] for p in chapters], stated
    for p in chapters:  # a typed estimate, kept near what the word count says as the chapters change
        est = _reading_minutes(p)
        assert abs(stated[p.name[:2]] - est) <= max(5, 0.3 * est), (
            f"{p.name}: the landing page says ~{stated[p.name[:2]]} min, its word count says {est:.0f} min; "
            f"update intro.md's table")
    hours = round(sum(stated.values()) / 30) / 2
    assert f"about {int(hours)}{'½' if hours % 1 else ''} hours in all" in text, sum(stated.values())
