"""A reader's JupyterLab in headless Chromium: chapter 01 opened, every cell run in replay mode, the explorer moved;
the playground opened, a kernel edited into a syntax error in its editor, and the line reported checked; an
exercise of chapter 01 answered off by a factor of two, and the hint for that mistake checked; chapter 07 run in
replay and its fix-the-kernel exercise checked without a GPU (the broken copy as shipped judged "not yet" by the
tx-count countdown model, with the recorded symptom; then fixed in the editor and judged "fixed"); chapter 10's
exercise 1 answered with the multicast mistake (32,768 bytes, what a CTA fetches itself) and the grader's own
explanation of that mistake checked.

Run by ci/test.sh. JupyterLab serves a scratch copy of the course (running the cells must never autosave over the
recorded notebook), on a free local port, with GEMM_LADDER_REPLAY=1 so the kernel replays the book's recorded numbers
as it would on a laptop. The test checks the saved banner before running (it must say when it was measured and what
running will do), runs all cells, checks that none raised and that the replay banner shows, then
changes the explorer's N and checks that the widget redrew (a new figure, and the rungs not measured at that N
named in a line).
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from test_book import browser  # noqa: F401 - the same headless Chromium fixture as the book test

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = "chapters/01_fp32_simt.ipynb"
PLAYGROUND = "chapters/playground.ipynb"
TMA = "chapters/07_tma.ipynb"
CHIP = "chapters/10_chip.ipynb"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab():
    scratch = Path(tempfile.mkdtemp(prefix="gemm-ladder-lab-"))
    for name in ("helpers", "kernels", "results", "experiments"):  # chapter 07's cells import experiments too
        shutil.copytree(ROOT / name, scratch / name)
    (scratch / "chapters").mkdir()
    for name in (CHAPTER, PLAYGROUND, TMA, CHIP):
        shutil.copy(ROOT / name, scratch / name)
    port = _free_port()
    env = {**os.environ, "GEMM_LADDER_REPLAY": "1", "PYTHONPATH": str(scratch)}
    env.pop("MPLBACKEND", None)  # ci/test.sh sets Agg for the other tests; a notebook kernel draws inline
    log = open(scratch / "lab.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
                             "--ServerApp.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
                             "--LabApp.expose_app_in_browser=True", "--allow-root", f"--ServerApp.root_dir={scratch}"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):  # JupyterLab starts in a few seconds; give a slow CI machine a minute
            try:
                urllib.request.urlopen(f"{url}/api/status", timeout=2)
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"JupyterLab exited: {(scratch / 'lab.log').read_text()[-2000:]}")
                time.sleep(0.5)
        else:
            pytest.fail(f"JupyterLab did not start: {(scratch / 'lab.log').read_text()[-2000:]}")
        yield url, scratch
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _wait(browser, script: str, timeout: float, what: str, *args):
    end = time.time() + timeout
    while time.time() < end:
        got = browser.execute_script(script, *args)
        if got:
            return got
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


KERNEL_IDLE = """
const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
return k && k.status === 'idle' && !!w.content;
"""
# Cells still queued show [*] in the page; the count of cells that ran comes from the model (a collapsed input, the
# set-up cell's, draws no prompt, and JupyterLab draws only the cells near the viewport).
ALL_RAN = """
const prompts = [...document.querySelectorAll('.jp-InputArea-prompt')].map(p => p.textContent);
if (prompts.length === 0 || prompts.some(p => p.includes('*'))) return 0;
const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
let ran = 0;
for (let i = 0; i < cells.length; i++) if (cells.get(i).type === 'code' && cells.get(i).executionCount) ran++;
return ran;
"""


def test_a_reader_runs_chapter_01_and_moves_the_explorer(lab, browser):  # noqa: F811
    from selenium.webdriver.support.ui import Select
    url, _ = lab
    browser.get(f"{url}/lab/tree/{CHAPTER}")
    _wait(browser, KERNEL_IDLE, 120, "the notebook to open with an idle kernel")
    code_cells = browser.execute_script("return window.jupyterapp.shell.currentWidget.content.widgets"
                                        ".filter(c => c.model.type === 'code').length")
    # Before running, the saved banner (from the H100 run) must say when it was measured and what running will do,
    # never that it is live.
    saved = browser.execute_script("""
        const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
        for (let i = 0; i < cells.length; i++) {
            const o = JSON.stringify(cells.get(i).type === 'code' ? cells.get(i).outputs.toJSON() : []);
            if (o.includes('</b>:')) return o;
        }
        return '';""")
    # the banner a GPU run saved (its device and date read from that run, whichever it was)
    assert "<b>MEASURED</b>: " in saved and "recorded numbers" in saved, saved[:300]
    browser.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    time.sleep(2)
    _wait(browser, ALL_RAN, 240, "every cell to run")
    _wait(browser, KERNEL_IDLE, 240, "the kernel to finish")
    ran = browser.execute_script(ALL_RAN)
    assert ran == code_cells, f"{ran} of {code_cells} code cells ran"
    # JupyterLab draws only the cells near the viewport, so read what ran from the notebook's model, not the page.
    outputs = browser.execute_script("""
        const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
        const out = [];
        for (let i = 0; i < cells.length; i++) {
            const c = cells.get(i);
            if (c.type === 'code') out.push(JSON.stringify(c.outputs.toJSON()));
        }
        return out;""")
    errors = [o for o in outputs if '"output_type":"error"' in o]
    assert not errors, errors[:1]
    assert any("<b>REPLAY</b>:" in o for o in outputs), "the replay banner is missing after running the cells"
    explorer = browser.execute_script("""
        const nb = window.jupyterapp.shell.currentWidget.content;
        const i = nb.widgets.findIndex(c => c.model.sharedModel.getSource().startsWith('explore_ladder('));
        nb.activeCellIndex = i;
        nb.scrollToItem(i, 'center');
        return i;""")
    assert explorer > 0, "no explorer cell in chapter 01"
    _wait(browser, "return document.querySelectorAll('.jupyter-widgets select').length >= 2", 30,
          "the explorer's widgets to render")
    # The explorer: a Dropdown for N and a multi-select of rungs; choosing N=8192 must redraw below them.
    selects = browser.find_elements("css selector", ".jupyter-widgets select")
    size = Select(selects[0])
    options = [o.text for o in size.options]
    assert "8192" in options, options
    before = browser.execute_script("return document.querySelectorAll('.jupyter-widgets img').length")
    size.select_by_visible_text("8192")
    _wait(browser, f"return document.querySelectorAll('.jupyter-widgets img').length > {before}", 60,
          "the explorer to draw its figure for N=8192")
    text = browser.execute_script("return [...document.querySelectorAll('.jupyter-widgets .jp-OutputArea')]"
                                  ".map(e => e.innerText).join('\\n')")
    assert "not measured at N=8192: 01_naive, 01_coalesced, 01_smem_tiled" in text, text[:500]


def test_a_reader_breaks_a_kernel_in_the_playground_and_is_told_the_line(lab, browser):  # noqa: F811
    sys.path.insert(0, str(ROOT))
    from helpers.playground import source
    url, _ = lab
    # A syntax error: the ';' ending a static_assert left out. The compiler notices it at the next token, two lines
    # down past a blank line; the playground must name the line the ';' belongs to.
    line = next(i for i, text in enumerate(source("04_swizzle").splitlines(), 1)
                if text.startswith("static_assert(MMA_N % 2 == 0"))
    browser.get(f"{url}/lab/tree/{PLAYGROUND}")
    # the browser may still show chapter 01 from the test before: wait until the playground is the notebook in front
    _wait(browser, "const w = window.jupyterapp && window.jupyterapp.shell.currentWidget; "
                   "return !!(w && w.context && w.context.path.endsWith('playground.ipynb'));", 120,
          "the playground to be the notebook in front")
    _wait(browser, KERNEL_IDLE, 120, "the playground to open with an idle kernel")
    browser.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    time.sleep(2)
    _wait(browser, ALL_RAN, 240, "every cell to run")
    _wait(browser, KERNEL_IDLE, 240, "the kernel to finish")
    browser.execute_script("""
        const nb = window.jupyterapp.shell.currentWidget.content;
        const i = nb.widgets.findIndex(c => c.model.sharedModel.getSource().includes('editor("04_swizzle")'));
        nb.activeCellIndex = i;
        nb.scrollToItem(i, 'center');""")
    _wait(browser, "return document.querySelectorAll('.gemm-code textarea').length >= 2", 30, "the editor to render")
    # The numbers beside the code: as many as the code has lines, in the same font and line height, never wrapped.
    code, numbers = browser.execute_script("""
        const [n, c] = [...document.querySelectorAll('.gemm-code textarea')].sort((a, b) => b.disabled - a.disabled);
        const s = e => { const x = getComputedStyle(e); return [x.lineHeight, x.fontFamily, x.whiteSpace, e.rows]; };
        return [s(c), s(n)];""")
    assert code == numbers and code[2] == "pre", (code, numbers)
    # Break one line, press the button, read the line the playground names.
    browser.execute_script(f"""
        const c = [...document.querySelectorAll('.gemm-code textarea')].find(t => !t.disabled);
        const lines = c.value.split('\\n');
        lines[{line - 1}] = lines[{line - 1}].trimEnd().replace(/;$/, '');
        c.value = lines.join('\\n');
        c.dispatchEvent(new Event('input', {{bubbles: true}}));
        [...document.querySelectorAll('.jupyter-widgets button')]
            .find(b => b.textContent.includes('compile, check and time')).click();""")
    said = _wait(browser, """
        const t = [...document.querySelectorAll('.jupyter-widgets .jp-OutputArea')].map(e => e.innerText).join('\\n');
        return t.includes('compile error in') && t;""", 120, "the playground to report the compile error")
    assert f"compile error in kernels/04_swizzle.cu line {line}: expected a \";\" at the end of this line" in said, said[:600]
    assert f">{line:>5} |" in said and "warning #" not in said, said[:600]


def test_a_reader_answers_an_exercise_off_by_two_and_gets_a_hint(lab, browser):  # noqa: F811
    url, _ = lab
    browser.get(f"{url}/lab/tree/{CHAPTER}")
    _wait(browser, "const w = window.jupyterapp && window.jupyterapp.shell.currentWidget; "
                   "return !!(w && w.context && w.context.path.endsWith('01_fp32_simt.ipynb'));", 120,
          "chapter 01 to be the notebook in front")
    _wait(browser, KERNEL_IDLE, 120, "chapter 01 to open with an idle kernel")
    # Exercise 1 asks for a 64 x 256 tile's intensity, 25.6 FLOP/byte; the reader counts each FMA's 2 FLOP twice.
    browser.execute_script("""
        const nb = window.jupyterapp.shell.currentWidget.content;
        const i = nb.widgets.findIndex(c => c.model.sharedModel.getSource().startsWith('my_intensity = '));
        nb.widgets[i].model.sharedModel.setSource('my_intensity = 51.2\\nmy_lds_per_ffma = None');
        nb.activeCellIndex = i;
        window.jupyterapp.commands.execute('notebook:run-cell-and-select-next');""")
    time.sleep(1)
    browser.execute_script("window.jupyterapp.commands.execute('notebook:run-cell')")
    said = _wait(browser, """
        const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
        for (let i = 0; i < cells.length; i++) {
            const c = cells.get(i);
            if (c.type === 'code' && c.sharedModel.getSource().startsWith('from helpers.exercises import grade')) {
                const o = JSON.stringify(c.outputs.toJSON());
                return o.includes('exercise 1') && o;
            }
        }
        return '';""", 120, "the grading cell to answer")
    assert "exercise 1: not yet: twice the answer" in said and "exercise 2: fill in your answer" in said, said[:400]


def _open(browser, url: str, path: str):
    """Open a notebook and wait until it is the one in front (the page may still show the one before) and idle."""
    browser.get(f"{url}/lab/tree/{path}")
    name = path.rsplit("/", 1)[-1]
    _wait(browser, "const w = window.jupyterapp && window.jupyterapp.shell.currentWidget; "
                   f"return !!(w && w.context && w.context.path.endsWith('{name}'));", 120,
          f"{name} to be the notebook in front")
    _wait(browser, KERNEL_IDLE, 120, f"{name} to open with an idle kernel")


# The outputs of the first code cell whose source starts with arguments[0], as JSON ('' until it has some).
OUTPUTS_OF = """
const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type === 'code' && c.sharedModel.getSource().startsWith(arguments[0]))
        return c.outputs.length ? JSON.stringify(c.outputs.toJSON()) : '';
}
return '';
"""
# What the widgets on the page print (the exercise's editor prints its verdicts below the code)
WIDGET_TEXT = "[...document.querySelectorAll('.jupyter-widgets .jp-OutputArea')].map(e => e.innerText).join('\\n')"


def _press_check(browser):
    browser.execute_script("""
        [...document.querySelectorAll('.jupyter-widgets button')]
            .find(b => b.textContent.includes('compile, check and time')).click();""")


def test_a_reader_checks_the_fix_the_kernel_exercise_without_a_gpu(lab, browser):  # noqa: F811
    sys.path.insert(0, str(ROOT))
    from helpers.kernel_exercises import KERNEL_EXERCISES
    good, bad = KERNEL_EXERCISES["07_expect_tx"].bug  # the line as the rung has it, and as the broken copy has it
    url, _ = lab
    _open(browser, url, TMA)
    code_cells = browser.execute_script("return window.jupyterapp.shell.currentWidget.content.widgets"
                                        ".filter(c => c.model.type === 'code').length")
    browser.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    time.sleep(2)
    _wait(browser, ALL_RAN, 240, "every cell of chapter 07 to run")
    _wait(browser, KERNEL_IDLE, 240, "the kernel to finish")
    assert browser.execute_script(ALL_RAN) == code_cells
    errors = browser.execute_script("""
        const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
        const out = [];
        for (let i = 0; i < cells.length; i++) {
            const o = cells.get(i).type === 'code' ? JSON.stringify(cells.get(i).outputs.toJSON()) : '';
            if (o.includes('"output_type":"error"')) out.push(o.slice(0, 600));
        }
        return out;""")
    assert not errors, errors[:1]
    # The check cell ran on the broken copy as shipped: no GPU runs it, so the tx-count countdown judges it, and the
    # symptom the book's run recorded for this kind of bug is shown beside the verdict.
    said = browser.execute_script(OUTPUTS_OF, "print(exercise.check(")
    for phrase in ("judges your edit instead: not yet: expect_tx announces", "never completes its phase",
                   "What this kind of bug did on a GPU"):
        assert phrase in said, said[:1200]
    # The editor's own button gives the same verdict; then the constant fixed in the editor is judged fixed.
    browser.execute_script("""
        const nb = window.jupyterapp.shell.currentWidget.content;
        const i = nb.widgets.findIndex(c => c.model.sharedModel.getSource().includes('exercise.edit()'));
        nb.activeCellIndex = i;
        nb.scrollToItem(i, 'center');""")
    _wait(browser, "return [...document.querySelectorAll('.jupyter-widgets button')]"
                   ".some(b => b.textContent.includes('compile, check and time'))", 30,
          "the exercise's editor to render")
    _press_check(browser)
    said = _wait(browser, f"const t = {WIDGET_TEXT}; return t.includes('judges your edit') && t;",
                 120, "the exercise's button to give a verdict on the broken copy")
    assert "judges your edit instead: not yet:" in said and "never completes its phase" in said, said[:1200]
    fixed = browser.execute_script("""
        const c = [...document.querySelectorAll('.gemm-code textarea')].find(t => !t.disabled);
        const before = c.value;
        c.value = c.value.replace(arguments[0], arguments[1]);
        c.dispatchEvent(new Event('input', {bubbles: true}));
        return c.value !== before;""", bad, good)
    assert fixed, "the broken copy in the editor no longer has the line this test fixes"
    _press_check(browser)
    said = _wait(browser, f"const t = {WIDGET_TEXT}; return t.includes('judges your edit instead: "
                          "fixed') && t;", 120, "the exercise's button to judge the fixed copy")
    assert "the phase completes as the last byte lands" in said, said[:1200]


def test_a_reader_makes_the_multicast_mistake_and_is_told_why(lab, browser):  # noqa: F811
    sys.path.insert(0, str(ROOT))
    from helpers import build, rung
    c = build(rung("10_chip")).consts
    # Exercise 1 asks for the bytes a stage's expect_tx announces; the usual mistake counts only what this CTA
    # fetches itself, its A and its half of B, and leaves out the half of B its partner multicasts into the stage.
    own, partner = (c["BM"] + c["BN"] // c["CLUSTER"]) * c["BK"] * 2, c["BN"] // c["CLUSTER"] * c["BK"] * 2
    assert own == 32768, own  # the answer the reader gave; the kernel's tile has changed if this fails
    url, _ = lab
    _open(browser, url, CHIP)
    # Only the cells the grader needs: the set-up, the chapter's imports and kernel constants, the persistent grid,
    # the answer cells (exercise 1 answered with that mistake), and the grading cell.
    ran = browser.execute_script("""
        const nb = window.jupyterapp.shell.currentWidget.content;
        const starts = ['# Set-up.', 'from helpers.demos import sustained', 'grid = persistent_grid(',
                        'my_tile_speedup = ', 'my_tx_bytes = ', 'from helpers.exercises import grade'];
        const picked = starts.map(s => nb.widgets.findIndex(c => c.model.type === 'code' &&
                                                             c.model.sharedModel.getSource().startsWith(s)));
        if (picked.some(i => i < 0)) return picked;
        const answers = nb.widgets[picked[4]].model.sharedModel;
        answers.setSource(answers.getSource().replace(/^my_tx_bytes = None/, 'my_tx_bytes = ' + arguments[0]));
        for (const i of picked) {
            nb.activeCellIndex = i;
            window.jupyterapp.commands.execute('notebook:run-cell');
        }
        return picked;""", own)
    assert all(i >= 0 for i in ran), f"a cell this test runs is missing from chapter 10: {ran}"
    # Wait for the grader's verdicts, or for a cell that raised (the grading cell then never runs).
    said = _wait(browser, """
        const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
        let all = '';
        for (const i of arguments[0]) {
            const o = JSON.stringify(cells.get(i).outputs.toJSON());
            if (o.includes('"output_type":"error"')) return o;
            all = o;
        }
        return all.includes('exercise 6') && all;""", 120, "chapter 10's grading cell to answer", ran)
    assert '"output_type":"error"' not in said, said[:1200]
    assert "exercise 1: not yet: that is what this CTA fetches itself" in said, said[:1200]
    assert f"the partner multicasts the other {partner:,} bytes of B" in said, said[:1200]
    assert "exercise 2: fill in your answer" in said, said[:1200]
