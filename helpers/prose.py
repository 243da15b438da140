"""Sentences rendered from the run. A chapter never types a measured number, or a conclusion drawn from one: a cell
computes it when the chapter runs, live on the reader's GPU or replaying the book's recorded run, and `say` shows the
paragraph as Markdown. So the text always matches the table above it, on any device and in any run.

    say(f"The step buys {x(step(a, b).factor)} at N = 4096 and {step(a, b).verdict} beyond the rounds' spread.")

Such a cell is tagged `remove-input` (the static book shows only its output) and its input is collapsed in
JupyterLab (`jupyter.source_hidden`), so either way the reader sees a paragraph. A sentence whose meaning depends on
the data is written for both outcomes (`pick`), so it cannot contradict its table. Numbers format here, once: `x`
for factors, `pct` for shares, `num` for everything else.
"""
from __future__ import annotations

from dataclasses import dataclass


def say(markdown: str) -> None:
    """Show `markdown` as a paragraph: rendered Markdown in a notebook (and so in the built book), plain text in a
    terminal."""
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
        if get_ipython() is not None:
            display(Markdown(markdown))
            return
    except ImportError:
        pass
    print(markdown)


def num(v: float, digits: int = 1) -> str:
    """A measured number with thousands separators: 1,024 or 621.3."""
    return f"{v:,.{digits}f}"


def x(v: float, digits: int = 2) -> str:
    """A factor: ×1.15."""
    return f"×{v:.{digits}f}"


def pct(fraction: float, digits: int = 0) -> str:
    """A share given as a fraction: 0.84 -> 84%."""
    return f"{fraction:.{digits}%}"


def pick(condition: bool, yes: str, no: str) -> str:
    """The words for whichever outcome the data gave."""
    return yes if condition else no


@dataclass(frozen=True)
class Step:
    """What one rung bought over another at one size, in the same run: the factor of their medians, and whether the
    rounds separate them. `rises` when the later rung's lower quartile is above the earlier's upper quartile, `falls`
    when its upper quartile is below the earlier's lower one, flat otherwise (the two spreads overlap)."""
    factor: float
    rises: bool
    falls: bool

    @property
    def flat(self) -> bool:
        return not (self.rises or self.falls)

    @property
    def verdict(self) -> str:
        return "rises" if self.rises else "falls" if self.falls else "is flat"


def step(before, after) -> Step:
    """The step from row `before` to row `after` (helpers.ladder.Row, or anything with tflops and tflops_iqr)."""
    lo_a, hi_a = before.tflops_iqr or (before.tflops, before.tflops)
    lo_b, hi_b = after.tflops_iqr or (after.tflops, after.tflops)
    return Step(after.tflops / before.tflops, lo_b > hi_a, hi_b < lo_a)


def spread(*rows) -> float:
    """The widest interquartile range among `rows`, in TFLOP/s: the noise a step must clear."""
    return max((r.tflops_iqr[1] - r.tflops_iqr[0]) for r in rows if r.tflops_iqr)


def where(row) -> str:
    """Where a row's numbers come from, for a sentence: "run 2026-11-26T19:47Z-h100 on NVIDIA H100 80GB HBM3". The
    same words live and replayed (the banner says which), so a chapter executed on the GPU and the same chapter
    replayed from its run render the same text, and nbval can hold one to the other."""
    return f"run {row.run} on {row.gpu}" if row.run else row.gpu
