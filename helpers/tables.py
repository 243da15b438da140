"""The ladder as text a reader sees: the table of rows, each main-path step's factor, a build's summary, and the
progress bar while numbers are measured. Fixed-width text, the same in a terminal, a notebook and the built book."""
from __future__ import annotations

from .compiler import Build
from .gpu import live
from .listing import diff_size, opcode_families


def build_summary(b: Build, entry: str) -> str:
    r = b.resources[entry]
    fams = ", ".join(f"{k} {v}" for k, v in opcode_families(b, entry).items())
    return (f"{entry} ({b.arch}): {r.registers} registers, {r.spill_stores + r.spill_loads} bytes spilled, "
            f"{r.smem_static} B static shared memory, {r.barriers} barrier(s)\n  SASS: {fams}")


BOOK_COLUMNS = 109  # characters of printed output the book's 948 px column holds at its 14 px monospace
HEADER = ("rung", "size", "dtype", "TFLOP/s", "IQR", "cuBLAS", "ratio", "correct", "measured")


def _size(r) -> str:
    return str(r.n) if r.m == r.n == r.k else f"{r.m}x{r.n}x{r.k}"


def table(rows) -> str:
    """The ladder table as fixed-width text (same in a terminal, a notebook and the built book, and the same live
    and replayed: the banner says which). Under it, what each cuBLAS column timed. The size and IQR columns are as
    wide as their widest entry, so a table of square sizes is narrow and one of non-square shapes still fits the
    book's column (BOOK_COLUMNS) without wrapping."""
    rows = list(rows)
    iqrs = [f"{r.tflops_iqr[0]:.1f}-{r.tflops_iqr[1]:.1f}" if getattr(r, "tflops_iqr", None) else "n/a" for r in rows]
    sw = max([4] + [len(_size(r)) for r in rows])
    iw = max([3] + [len(i) for i, r in zip(iqrs, rows) if getattr(r, "has_number", True)])
    lines = [f"{{:<20}} {{:>{sw}}} {{:>5}} {{:>8}} {{:>{iw}}} {{:>10}} {{:>7}} {{:>7}}  {{}}".format(*HEADER)]
    # One mark per distinct cuBLAS reference, in order of first use: a to z, then a2, b2, ... (never reused, so a mark
    # names one kernel however many the table holds).
    refs: dict = {}
    for r in rows:
        if getattr(r, "has_number", True):
            ref = r.cublas_ref or "cupy.matmul (recorded before the GPU-time method)"
            i = refs.setdefault(ref, len(refs))
            refs[ref] = i
    refs = {ref: "abcdefghijklmnopqrstuvwxyz"[i % 26] + (str(i // 26 + 1) if i >= 26 else "") for ref, i in refs.items()}
    mw = max([1] + [len(m) for m in refs.values()])
    for r, iqr in zip(rows, iqrs):
        if not getattr(r, "has_number", True):  # a NotMeasured line: replayed, and the results file has no row for it
            lines.append(f"{r.rung:<20} {_size(r):>{sw}} {r.dtype:>5}     not measured (not in the recorded run)")
            continue
        mark = refs[r.cublas_ref or "cupy.matmul (recorded before the GPU-time method)"]
        lines.append(f"{r.rung:<20} {_size(r):>{sw}} {r.dtype:>5} {r.tflops:8.2f} {iqr:>{iw}} {r.cublas_tflops:8.2f} "
                     f"{mark:<{mw}} {r.ratio:7.1%} {('yes' if r.correct else 'NO'):>7}  {r.date[:16]}")
    # What each cuBLAS column timed, folded so that no line of it wraps in the book's column.
    import textwrap
    width = max([BOOK_COLUMNS] + [len(line) for line in lines])
    lines += [textwrap.fill(f"cuBLAS ({mark}): {ref}", width, subsequent_indent="    ", break_on_hyphens=False)
              for ref, mark in refs.items()]
    return "\n".join(lines)


def progress(items, what: str):
    """`items` with a progress bar (a text line on stderr, redrawn in place, in a notebook as in a terminal) while
    numbers are being measured; silent in replay, where every item is a lookup. Not tqdm's notebook widget: a saved
    notebook and the static book cannot draw a widget, and a bar that is only a widget leaves an empty output."""
    from tqdm import tqdm
    items = list(items)
    return tqdm(items, desc=what, disable=not live() or len(items) < 2, leave=False)


def climb_steps(rows) -> list[dict]:
    """Each step of the main path (registry.MAIN) that two square rows of the same size and dtype measure: the factor
    it bought, whether it rose by more than the noise (its lower quartile above the upper quartile of the rung before
    it), and how many lines its diff changes."""
    from .registry import MAIN
    by = {(x.rung, x.n): x for x in rows if x.has_number and x.m == x.n == x.k}
    steps = []
    for n in sorted({n for _, n in by}):
        for a, b in zip(MAIN, MAIN[1:]):
            xa, xb = by.get((a, n)), by.get((b, n))
            if xa is None or xb is None or xa.dtype != xb.dtype:
                continue
            steps.append({"rung": b, "before": a, "n": n, "factor": xb.tflops / xa.tflops,
                          "rises": xb.tflops_iqr[0] > xa.tflops_iqr[1], "diff_lines": diff_size(a, b)})
    return steps


def steps_table(steps: list[dict]) -> str:
    """climb_steps as text: one line per step, its factor at each size, whether each rose beyond the noise."""
    sizes = sorted({s["n"] for s in steps})
    head = f"{'step':<40} " + " ".join(f"{'N=' + str(n):>14}" for n in sizes) + f" {'diff lines':>11}"
    lines, seen = [head], {}
    for s in steps:
        seen.setdefault((s["before"], s["rung"]), {})[s["n"]] = s
    for (a, b), by_n in seen.items():
        cells = [f"x{by_n[n]['factor']:5.2f} {'rises' if by_n[n]['rises'] else 'FLAT':>6}" if n in by_n else
                 f"{'-':>14}" for n in sizes]
        lines.append(f"{a + ' -> ' + b:<40} " + " ".join(f"{c:>14}" for c in cells)
                     + f" {next(iter(by_n.values()))['diff_lines']:>11}")
    return "\n".join(lines)
