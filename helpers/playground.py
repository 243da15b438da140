"""A safe playground: edit a copy of any rung's kernel and run it, without risking the notebook or the record.

    src = playground.source("04_swizzle")          # the rung's .cu as text (its registry config applied)
    src = src.replace("...", "...")                 # the learner's edit
    playground.play("04_swizzle", src)             # compile (errors with their line), check, time

Compilation happens here and needs no GPU. The check and the timing run in a child process with a time limit:
a kernel that hangs or faults is killed there, one sentence says what probably happened, and this notebook's
CUDA context stays healthy. Results go to a scratch file, never to results/.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from .compiler import build
from .csource import CompileError, source  # source: the rung as built, the learner's starting point
from .demos import IN_CHILD, in_child  # one wording for what a child process's fault leaves behind
from .kernel import ShapeError
from .launch import validate
from .gpu import missing
from .registry import ROOT, rung as _rung

TIMEOUT_S = 60

_CHILD = r"""
import json, sys
from helpers import bench, check, rung
from helpers.kernel import KernelFault, ShapeError
r, src = rung(sys.argv[1]), open(sys.argv[2]).read()
shapes, n = json.loads(sys.argv[3]), int(sys.argv[4])
out = {"checks": []}
try:
    for m, nn, k in shapes:
        res = check(r, m, nn, k, source=src)
        out["checks"].append(str(res))
        if not res.ok:
            break
    else:
        b = bench(r, n, source=src)
        out["bench"] = {"tflops": b.kernel.tflops, "cublas_tflops": b.cublas.tflops, "ratio": b.ratio}
except (KernelFault, ShapeError) as e:
    out["error"] = str(e)
print("PLAYGROUND " + json.dumps(out))
"""


@dataclass
class Outcome:
    rung: str
    compiled: bool
    message: str        # what a learner reads: the compile error, the check verdicts, the timing, or the fault
    ok: bool = False    # compiled, every check passed, and (live) it was timed

    def __str__(self) -> str:
        return self.message


CANDIDATE_SHAPES = [(256, 256, 256), (384, 256, 512), (256, 512, 256), (384, 512, 512), (512, 512, 512)]


def default_shapes(rung_id: str, src: str | None = None) -> list[tuple[int, int, int]]:
    """The first two small shapes (one square, one not) that the rung, or its variant, accepts."""
    r, ok = _rung(rung_id), []
    for shape in CANDIDATE_SHAPES:
        try:
            validate(r, *shape, source=src)
            ok.append(shape)
        except ShapeError:
            pass
    return ok[:2]


def play(rung_id: str, src: str | None = None, n: int = 2048, shapes=None, timeout_s: int = TIMEOUT_S) -> Outcome:
    """Compile the learner's variant; when a GPU is present, check it on fresh data and time it against
    cuBLAS in a child process that is killed after `timeout_s`."""
    r = _rung(rung_id)
    src = source(rung_id) if src is None else src
    try:
        b = build(r, src)
    except CompileError as e:
        return Outcome(r.id, False, f"compile error in {e}")
    res = b.resources.get(r.entry)
    if res is None:
        return Outcome(r.id, True, f"compiled, but there is no kernel named {r.entry}: keep the extern \"C\" name.")
    head = (f"compiled: {res.registers} registers, {res.spill_stores + res.spill_loads} bytes spilled, "
            f"{res.smem_static} B static shared memory")
    gap = missing(r.needs_cc, r.arch)
    if gap:
        return Outcome(r.id, True, f"{head}\nnot run here: {gap}. Compiling and the resource report above work anyway.")
    shapes = shapes or default_shapes(rung_id, src)
    try:
        for shape in shapes:
            validate(r, *shape, source=src)
        validate(r, n, n, n, source=src)
    except ShapeError as e:
        return Outcome(r.id, True, f"{head}\nnot run: {e}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "variant.cu")
        with open(path, "w") as f:
            f.write(src)
        env = {**os.environ, "GEMM_LADDER_RESULTS": os.path.join(tmp, "scratch.json"),
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        try:
            proc = subprocess.run([sys.executable, "-c", _CHILD, r.id, path, json.dumps(shapes), str(n)],
                                  capture_output=True, text=True, timeout=timeout_s, env=env, cwd=ROOT)
        except subprocess.TimeoutExpired:
            return Outcome(r.id, True, f"{head}\nstopped after {timeout_s} s: the kernel probably never finishes "
                                       f"(a barrier that never completes, a loop whose bound never changes). "
                                       f"{IN_CHILD} Nothing was recorded.")
    line = next((x for x in proc.stdout.splitlines() if x.startswith("PLAYGROUND ")), None)
    if line is None:
        return Outcome(r.id, True, f"{head}\nthe run crashed (exit {proc.returncode}): {proc.stderr.strip()[-800:]}"
                                   f"\n{IN_CHILD}")
    out = json.loads(line[len("PLAYGROUND "):])
    lines = [head, *out["checks"]]
    if "error" in out:
        lines.append(in_child(out["error"]))
    if "bench" in out:
        bt = out["bench"]
        lines.append(f"N={n}: {bt['tflops']:.1f} TFLOP/s, cuBLAS {bt['cublas_tflops']:.1f}, "
                     f"{bt['ratio']:.1%} of cuBLAS (not recorded)")
    return Outcome(r.id, True, "\n".join(lines), ok="bench" in out)


# The editor's two text boxes share one style so that the line numbers beside the code stay level with it: the same
# font and line height, no wrapping (a long line scrolls sideways), and as many rows as lines, so neither scrolls.
_STYLE = ("<style>.gemm-code textarea {font-family: var(--jp-code-font-family, monospace); font-size: 13px; "
          "line-height: 18px; white-space: pre; overflow-wrap: normal; overflow-x: auto; resize: none}</style>")


def _numbered(text: str) -> str:
    return "\n".join(str(i) for i in range(1, text.count("\n") + 2))


def editor(start: str = "04_swizzle", text: str | None = None, rungs=None):
    """The playground's editor, as one widget: pick a rung, edit its kernel beside numbered lines, run the edit with
    play(). Edits are kept per rung while the notebook runs (switching rungs loses nothing); "reset" puts the text
    the rung started with back: its own source, or `text` for `start` (a kernel exercise's broken copy, so that
    reset never shows the answer). `rungs` narrows the menu (default: every rung). Returns (widget, parts), parts
    naming the pieces for tests."""
    import ipywidgets as w
    from .registry import RUNGS
    kept: dict[str, str] = {}
    first = {start: text} if text is not None else {}
    origin = lambda rung_id: first.get(rung_id) or source(rung_id)  # noqa: E731
    pick = w.Dropdown(options=list(rungs or [r.id for r in RUNGS]), value=start, description="rung")
    code = w.Textarea(value=origin(start), layout=w.Layout(width="100%"))
    numbers = w.Textarea(value=_numbered(code.value), disabled=True, layout=w.Layout(width="4.5em"))
    for box in (code, numbers):
        box.add_class("gemm-code")
        box.rows = code.value.count("\n") + 2
    run = w.Button(description="compile, check and time", layout=w.Layout(width="auto"))
    reset = w.Button(description="reset" if first else "reset to the rung's source", layout=w.Layout(width="auto"))
    out = w.Output()

    def renumber(change):
        numbers.value = _numbered(change["new"])
        code.rows = numbers.rows = change["new"].count("\n") + 2

    def switch(change):
        kept[change["old"]] = code.value
        code.value = kept.get(change["new"], origin(change["new"]))

    def restore(_):
        kept.pop(pick.value, None)
        code.value = origin(pick.value)

    def play_it(_):
        with out:
            out.clear_output()
            print(play(pick.value, code.value))

    code.observe(renumber, "value")
    pick.observe(switch, "value")
    reset.on_click(restore)
    run.on_click(play_it)
    widget = w.VBox([w.HTML(_STYLE), w.HBox([pick, run, reset]), w.HBox([numbers, code]), out])
    return widget, {"pick": pick, "code": code, "numbers": numbers, "run": run, "reset": reset, "out": out}
