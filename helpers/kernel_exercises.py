"""Fix-the-kernel exercises: a rung's source with one deliberate bug, the fix, and a verdict on the learner's edit.
With a GPU the edit is compiled, checked and timed for real (playground.play, in a child process). Without one it
is compiled all the same and judged by the CPU model that describes the bug (the tx-count countdown of the stage's
barrier, the places the copy writes a swizzled chunk and ldmatrix reads it), beside the symptom the book's run
recorded for that kind of bug, where it recorded one. Tests check that the broken copy fails and the solution passes,
on the GPU and in the models."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .csource import evaluate, read_consts, source


def _tx_countdown(text: str) -> tuple[bool, str, str]:
    """Chapter 07's bug, judged by models.mbarrier_countdown: the bytes expect_tx announces against the bytes the
    stage's two TMA boxes bring ([BM, BK] of A and [BN, BK] of Bt, bf16, as helpers.kernel builds the maps)."""
    from .models import mbarrier_countdown
    c = read_consts(text)
    calls = re.findall(r"mbarrier_arrive_expect_tx\(\s*\w+\s*,\s*([^;]+?)\)\s*;", text)
    if len(calls) != 1:
        return False, "the model looks for one mbarrier_arrive_expect_tx(bar, bytes) call; keep it", ""
    announced, boxes = int(evaluate(calls[0], c)), [c["BM"] * c["BK"] * 2, c["BN"] * c["BK"] * 2]
    events = mbarrier_countdown(announced, boxes)
    brought = f"the two boxes bring {sum(boxes):,} ([{c['BM']}, {c['BK']}] of A and [{c['BN']}, {c['BK']}] of Bt, bf16)"
    pending = events[-1][2]
    if pending > 0:
        return False, (f"expect_tx announces {announced:,} bytes a stage and {brought}: once both have landed "
                       f"{pending:,} bytes are still pending, so the stage's barrier never completes its phase and the "
                       "consumers wait on it until the bounded wait traps"), "07_tma:expect-tx-too-many"
    if pending < 0 or any(e[0].startswith("TMA copy") and "first" in e[0] for e in events):
        split = next(e[0] for e in events if "first" in e[0] or e[3])
        return False, (f"expect_tx announces {announced:,} bytes a stage, fewer than {brought}: the phase completes "
                       f"at \"{split}\", so the consumers may read a stage still landing, and the last "
                       f"{-pending:,} bytes are counted against the barrier's next phase"), ""
    return True, (f"expect_tx announces {announced:,} bytes and {brought}: the phase completes as the last byte "
                  "lands"), ""


def _placement(expr: str) -> str:
    return "swizzled" if re.search(r"\bswizzle<\w+>\s*\(", expr) else "row-major"


def _chunk_agreement(text: str) -> tuple[bool, str, str]:
    """Chapter 04's bug, judged by models.offset: for A ([BM, BK]) and B ([BK, BN]), where the copy stores each
    16-byte chunk against where ldmatrix reads it back (swizzled, or plain row-major: the two places the model
    knows), and the reads' conflict degree (models.conflict_degree) once the two agree."""
    from .models import conflict_degree, offset
    c = read_consts(text)
    said = []
    for op, (rows, cols) in (("A", (c["BM"], c["BK"])), ("B", (c["BK"], c["BN"]))):
        stores = re.findall(rf"&s{op}\[(.+?)\]\)\s*=", text)
        reads = re.findall(rf"ldmatrix\w*\([^;]*?&s{op}\[(.+?)\]\)\)", text)
        if len(stores) != 1 or not reads:
            return False, f"the model looks for one store into s{op} and its ldmatrix reads; keep them", ""
        put, got = _placement(stores[0]), {_placement(e) for e in reads}
        if len(got) > 1:
            return False, f"the ldmatrix reads of s{op} disagree with each other on where a chunk lives", ""
        (got,) = got
        wrong = sum(offset(put, r, k * 8, cols) != offset(got, r, k * 8, cols)
                    for r in range(rows) for k in range(cols // 8))
        if wrong:
            return False, (f"the copy stores s{op}'s 16-byte chunks {put} and ldmatrix reads them {got}: {wrong:,} of "
                           f"its {rows * cols // 8:,} chunks are read from where another chunk was written, so C is "
                           "wrong almost everywhere, at every shape, and nothing faults"), ""
        if got != "swizzled":
            degree = conflict_degree(op, "row-major", (rows, cols))
            said.append(f"s{op} is stored and read row-major: C comes out right, but its ldmatrix phases take "
                        f"{degree:.0f} wavefronts each, rung 03's conflicts; the rung's point is the swizzle")
    if said:
        return False, "; ".join(said), ""
    return True, ("the copy stores every 16-byte chunk of sA and sB where ldmatrix reads it back, swizzled: the "
                  "tiles hold what the mma.sync expects, with no bank conflict"), ""


@dataclass(frozen=True)
class KernelExercise:
    rung: str
    task: str       # what the learner is told
    bug: tuple      # (text in the rung's source, what the broken copy has instead)
    model: Callable[[str], tuple[bool, str, str]]  # edited source -> (fixed?, why, the demos entry of its symptom)
    model_name: str  # the CPU model, as the verdict names it
    judges: tuple    # text on the lines the model reads; an edit to any other line is beyond it

    def broken(self) -> str:
        good, bad = self.bug
        src = source(self.rung)
        if src.count(good) != 1:
            raise RuntimeError(f"exercise for {self.rung} is out of date: {good!r} is not in its source exactly once")
        return src.replace(good, bad)

    def solution(self) -> str:
        return source(self.rung)

    def check(self, text: str) -> str:
        """What the learner's edit does: compiled here; then run, checked and timed where a GPU can run the rung
        (playground.play), else judged by the CPU model of the bug, with the symptom the book's run recorded."""
        from .gpu import missing
        from .playground import play
        from .registry import rung
        r = rung(self.rung)
        outcome = play(self.rung, text)
        if not outcome.compiled or missing(r.needs_cc, r.arch) is None:
            return str(outcome)
        ok, why, recorded = self.model(text)
        lines = [str(outcome), f"The CPU model of this bug ({self.model_name}) judges your edit instead: "
                               f"{'fixed' if ok else 'not yet'}: {why}."]
        mine, theirs = text.splitlines(), self.solution().splitlines()
        others = [str(i + 1) for i, (a, b) in enumerate(zip(mine, theirs))
                  if a != b and not any(j in a or j in b for j in self.judges)]
        if others or len(mine) != len(theirs):
            where = (f"line {others[0]}" if len(others) == 1 else f"lines {', '.join(others)}") if others else \
                "the number of lines"
            lines.append(f"Your copy also differs from the rung's own source in {where}, which the model does not "
                         "read; only a GPU run checks that.")
        if not ok and recorded:
            lines.append(_recorded_symptom(recorded))
        return "\n".join(lines)

    def edit(self) -> dict:
        """Show the broken copy in the playground's editor (numbered lines, a button that compiles the edit and
        checks it, a reset back to the broken copy) and return its parts: parts["code"].value is the text as edited.
        The button gives check()'s verdict, so it says something without a GPU too. Beside the widget a plain line
        says what it holds, for a reader without a kernel (the built book)."""
        import ipywidgets as w
        from IPython.display import display
        from .explore import widget_bundle
        from .playground import editor
        widget, parts = editor(self.rung, text=self.broken(), rungs=(self.rung,))
        button = w.Button(description=parts["run"].description, layout=w.Layout(width="auto"))

        def judge(_):
            with parts["out"]:
                parts["out"].clear_output()
                print(self.check(parts["code"].value))
        button.on_click(judge)
        for row in widget.children:  # the editor's own button runs play(); this one gives check()'s verdict
            if parts["run"] in getattr(row, "children", ()):
                row.children = tuple(button if x is parts["run"] else x for x in row.children)
        parts = {**parts, "run": button}
        display(widget_bundle(widget, f"An editor holding a broken copy of {self.rung}'s kernel beside its line "
                                      "numbers (run this cell in Jupyter to use it)."), raw=True)
        print(f"The editor holds a copy of kernels/{self.rung}.cu, {len(parts['code'].value.splitlines())} numbered "
              f"lines, with one bug in it. Fix it there and press \"compile, check and time\"; \"reset\" brings the "
              "broken copy back.")
        return parts


def _recorded_symptom(key: str) -> str:
    """The symptom the book's run recorded for a kind of bug (helpers.demos), in one line with where it came from."""
    from . import results
    from .demos import in_child  # the fault sentence as the notebook reads it: the variant ran in a child process
    e = results.load().get("demos", {}).get(key)
    if e is None:
        return ""
    change = ", ".join(f"{k} = {v}" for k, v in e["change"].items())
    said = in_child(e["message"]) if "message" in e else e.get("verdict", "")
    return (f"What this kind of bug did on a GPU ({e['rung']} with {change}, recorded on {e['gpu']}, {e['date']}): "
            f"{said}")


KERNEL_EXERCISES = {
    "04_swizzle_store": KernelExercise(
        "04_swizzle", "Symptom: it compiles, runs and never faults, yet the check finds C wrong almost everywhere "
        "(a relative error near 1), at every shape. One line of the copy is to blame: find it and fix it.",
        ("&sB[swizzle<BN>(r, c)]) = *reinterpret_cast<const uint4*>(&gB[(k0 + r) * N + c]);",
         "&sB[r * BN + c]) = *reinterpret_cast<const uint4*>(&gB[(k0 + r) * N + c]);"),
        _chunk_agreement, "where the copy stores each 16-byte chunk and where ldmatrix reads it, models.offset",
        ("&sA[", "&sB[")),
    "07_expect_tx": KernelExercise(
        "07_tma", "Symptom: the kernel never finishes; after 4 s its bounded mbarrier wait traps, and the check "
        "reports it. Nothing faults before that. One constant is to blame: find it and fix it.",
        ("constexpr int TX_BYTES = (A_TILE + B_TILE) * 2;", "constexpr int TX_BYTES = (A_TILE + B_TILE) * 4;"),
        _tx_countdown, "the stage barrier's tx-count countdown, models.mbarrier_countdown",
        ("TX_BYTES", "mbarrier_arrive_expect_tx")),
}
