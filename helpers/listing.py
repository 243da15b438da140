"""Code shown to a reader: a kernel or one function of it, a helper's Python, the diff between two rungs' built
sources and its size, and what the SASS holds (opcode families, the registry's SASS claims). Highlighted in a
notebook, plain text elsewhere."""
from __future__ import annotations

from .compiler import Build, build
from .csource import built_source

WATCH = ("FFMA", "HMMA", "HGMMA", "LDS", "LDSM", "LDG", "LDGSTS", "STG", "STS", "UTMALDG", "SYNCS",
         "BAR", "LDL", "STL")  # the opcode families a GEMM chapter talks about


def display_code(text: str, language: str) -> None:
    """Highlighted code in a notebook, with the colours inlined so JupyterLab shows them as the book does (IPython's
    Code object relies on a stylesheet JupyterLab does not load); plain text anywhere else."""
    try:
        from IPython import get_ipython
        from IPython.display import display
        if get_ipython() is not None:
            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import get_lexer_by_name
            html = highlight(text, get_lexer_by_name(language), HtmlFormatter(noclasses=True, nobackground=True))
            display({"text/html": html, "text/plain": text}, raw=True)
            return
    except ImportError:
        pass
    print(text)


def _function_text(source: str, entry: str) -> str:
    """From the comment above `... entry(` (a kernel's `extern "C" __global__` line, a device function's template line)
    to the closing brace at column 0."""
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if f" {entry}(" in line or line.startswith(f"{entry}("))
    while start > 0 and lines[start - 1].strip() and not lines[start - 1].startswith("}"):
        start -= 1
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return "\n".join(lines[start:end + 1])


def show_source(item, entry: str | None = None) -> None:
    """Show a rung's or probe's .cu file, or just one kernel of it, highlighted."""
    from .registry import probe, rung
    if isinstance(item, str):
        item = rung(item) if item[:2].isdigit() else probe(item)
    text = item.path.read_text()
    display_code(_function_text(text, entry) if entry else text, "cuda")


def show_file(relpath: str, entry: str | None = None) -> None:
    """Show a file under kernels/, e.g. the PTX wrappers in 'common/mma_sync.cuh', or just one function of it (with
    the comment above it)."""
    from .registry import KERNELS
    text = (KERNELS / relpath).read_text()
    display_code(_function_text(text, entry) if entry else text, "cuda")


def show_python(obj) -> None:
    """Show the source of a helper function (e.g. the host code that builds a tensor map), highlighted."""
    import inspect
    display_code(inspect.getsource(obj), "python")


def show_diff(before: str, after: str) -> None:
    """The lesson of a rung: the unified diff of the source it builds against the previous rung's (each .cu with
    its registry config applied, so a variant shows the constants it really runs with)."""
    import difflib
    from .registry import rung
    (la, a), (lb, b) = built_source(rung(before)), built_source(rung(after))
    diff = difflib.unified_diff(a.splitlines(), b.splitlines(), la, lb, n=2, lineterm="")
    display_code("\n".join(diff), "diff")


def diff_size(before: str, after: str) -> int:
    """Lines added plus lines removed between two rungs' built sources (what show_diff prints, without context):
    the size of the lesson. Headers and comments count; a reader diffs them too."""
    import difflib
    from .registry import rung
    a, b = built_source(rung(before))[1], built_source(rung(after))[1]
    return sum(1 for line in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---")))


def opcode_families(b: Build, entry: str | None = None) -> dict[str, int]:
    """SASS counts grouped by the families in WATCH ('LDS' counts LDS and LDS.128, not LDSM)."""
    inv = b.inventory(entry)
    fam = lambda op: op.split(".")[0]  # noqa: E731
    return {w: sum(n for op, n in inv.items() if fam(op) == w) for w in WATCH if any(fam(op) == w for op in inv)}


def sass_claims(r) -> str:
    """The registry's SASS claims for a rung, checked against the cubin: stable across compiler versions."""
    b = build(r)
    parts = [f"{op} {'yes' if b.count(op, r.entry) else 'MISSING'}" for op in r.sass_has]
    parts += [f"no {op} {'yes' if not b.count(op, r.entry) else 'FOUND'}" for op in r.sass_lacks]
    res = b.resources[r.entry]
    parts.append(f"spills {res.spill_stores + res.spill_loads} B")
    return f"{r.id}: " + ", ".join(parts)
