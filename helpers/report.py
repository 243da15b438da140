"""What a reader sees: the live/replay banner, the build summary, the ladder table."""
from __future__ import annotations

from . import results
from .compiler import Build
from .gpu import can_run, device, live, why_not_live

WATCH = ("FFMA", "HMMA", "HGMMA", "LDS", "LDSM", "LDG", "LDGSTS", "STG", "STS", "UTMALDG", "SYNCS",
         "BAR", "LDL", "STL")  # the opcode families a GEMM chapter talks about


def recorded_env() -> dict | None:
    """The environment of the newest ladder row in the results file: the run the book's tables show (a later run
    that only added probes or profiles does not move the date the banner names)."""
    data = results.load()
    envs = [e["env"] for e in data["gemm"].values() if "env" in e] or \
           [e["env"] for e in data["ceilings"].values() if "env" in e]
    return max(envs, key=lambda e: e["date"]) if envs else None


def _items(chapter: str | None):
    """A chapter's kernels: chapter 00's probes, 11's every rung (it runs them all), none given: every rung."""
    from .registry import PROBES, RUNGS, chapter_rungs
    return PROBES if chapter == "00" else (chapter and chapter_rungs(chapter)) or RUNGS


def _split(items) -> tuple[list[str], list[str]]:
    """Ids of the kernels that need an H100 (sm_90a), and of those that run from sm_80 on."""
    return ([i.id for i in items if tuple(i.needs_cc) >= (9, 0)], [i.id for i in items if tuple(i.needs_cc) < (9, 0)])


def _names(ids: list[str]) -> str:
    """A short list in full; a long one (chapter 11 shows every rung) as a count or a range of chapters. Probes
    carry names, not chapter numbers: chapter 00 lists them all."""
    if len(ids) <= 5 or not ids[0][:2].isdigit():
        return ", ".join(ids)
    first, last = ids[0][:2], ids[-1][:2]
    return f"all {len(ids)} of its rungs" if first == last else f"the rungs of chapters {first}-{last}"


def needs_text(chapter: str) -> str:
    """Which of a chapter's kernels need an H100, in one plain sentence. It is the same in every mode, so the
    static book, a laptop and a Colab runtime (a T4, L4 or A100) all say it."""
    hopper, older = _split(_items(chapter))
    parts = []
    if hopper:
        parts.append(f"{_names(hopper)} need{'s' if len(hopper) == 1 else ''} an H100 (sm_90a) to run live")
    if older:
        parts.append(f"{_names(older)} run{'s' if len(older) == 1 else ''} live on any GPU from sm_80 on "
                     f"(A100, L4, H100)")
    if hopper and older:
        return (f"Needs: {'; '.join(parts)}. Where one cannot run (no GPU, a Colab T4, or an A100 or L4 for the H100 "
                f"ones), its recorded H100 numbers are shown instead.")
    where = "a Colab T4, L4 or A100" if hopper else "a Colab T4"
    return f"Needs: {parts[0]}. Elsewhere (no GPU, or {where}) the recorded H100 numbers are shown instead."


def where_it_runs() -> str:
    """Per chapter (00's probes, each rung chapter, 11 running them all), the GPUs its kernels run live on;
    everywhere else it replays the recorded H100 numbers."""
    from .registry import RUNGS
    lines = [f"{'chapter':<8} {'kernels':>7}   runs live on"]
    for ch in sorted({"00", "11", *(r.chapter for r in RUNGS)}):
        hopper, older = _split(_items(ch))
        if hopper and older:
            where = f"H100 for {len(hopper)}; A100, L4 or H100 for the other {len(older)}"
        else:
            where = "H100 or H200 only (sm_90a)" if hopper else "A100, L4 or H100 (sm_80 and newer)"
        lines.append(f"{ch:<8} {len(hopper) + len(older):>7}   {where}")
    return "\n".join(lines)


def banner_text(chapter: str | None = None) -> str:
    if chapter == "playground":  # it replays nothing and records nothing: say what a run of it does here
        from .gpu import missing
        gap = missing((8, 0))
        what = (f"Your edits compile here; those the {device().name} can run are also checked against cuBLAS and "
                "timed, in a child process." if gap is None else
                f"Here {gap}, so your edits compile and report their registers, spills and shared memory; checking "
                "and timing them needs a GPU that can run the rung.")
        return f"PLAYGROUND: nothing here is replayed or recorded. {what}"
    if live():
        d = device()
        # Written for two readers: the one running the cells now, and the one who opens the saved notebook or the
        # static book later, on any machine, before running anything (for whom "live" would be false).
        text = (f"MEASURED: saved from an H100 run on {d.env()['date']}: these outputs were measured on {d.name} "
                f"when the cells ran (run {results.run_id()}; driver {d.driver}, CUDA {d.cuda_driver_api}, CuPy "
                f"{d.cupy}). Running the cells here will replay these recorded numbers, or measure anew on an H100, "
                f"and this box will then say which. A number this run had already measured, in another chapter or by "
                f"the ladder, is reused, and each table row shows when it was measured. GPU time only, against the "
                f"strongest cuBLAS in the same rounds.")
        hopper, older = _split([i for i in _items(chapter) if not can_run(d, i.needs_cc, i.arch)])
        why = "; ".join(p for p in (hopper and f"{_names(hopper)} need an H100 (sm_90a)",
                                    older and f"{_names(older)} need sm_80 or newer") if p)
        if why:  # e.g. a Colab T4, L4 or A100
            text += f" This GPU cannot run everything here ({why}); those numbers are the recorded ones."
        return text
    try:
        env = recorded_env()
    except results.ResultsError as e:  # say it once, here, instead of a traceback in every cell below
        return f"REPLAY: {why_not_live()} But no recorded numbers can be shown: {e}"
    where = (f"{env['name']}, {env['date']} (driver {env['driver']}, CUDA {env['cuda_driver_api']}, "
             f"CuPy {env['cupy']})") if env else "nowhere yet (the results file is empty)"
    return f"REPLAY: {why_not_live()} Numbers and plots below were recorded on {where}; none is measured now."


def banner(chapter: str | None = None) -> None:
    """Show the mode at the top of a chapter (a coloured box in Jupyter, plain lines elsewhere) and, given the
    chapter, which of its kernels need an H100."""
    text = banner_text(chapter)
    needs = needs_text(chapter) if chapter and chapter[:2].isdigit() else ""
    try:
        from IPython.display import HTML, display
        # grey for saved measurements: green would read as "live here" to whoever opens the saved notebook later
        colour = {"MEASURED": "#eef1f4", "PLAYGROUND": "#e8f0fe"}.get(text.split(":", 1)[0], "#fff4e5")
        mode, rest = text.split(":", 1)
        extra = f"<br><b>Needs</b>:{needs.split(':', 1)[1]}" if needs else ""
        display(HTML(f'<div style="background:{colour};padding:8px;border-left:4px solid #888">'
                     f"<b>{mode}</b>:{rest}{extra}</div>"))
    except ImportError:
        print(text + (f"\n{needs}" if needs else ""))


def opcode_families(b: Build, entry: str | None = None) -> dict[str, int]:
    """SASS counts grouped by the families in WATCH ('LDS' counts LDS and LDS.128, not LDSM)."""
    inv = b.inventory(entry)
    fam = lambda op: op.split(".")[0]  # noqa: E731
    return {w: sum(n for op, n in inv.items() if fam(op) == w) for w in WATCH if any(fam(op) == w for op in inv)}


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
    refs: dict = {}
    for r, iqr in zip(rows, iqrs):
        if not getattr(r, "has_number", True):  # a NotMeasured line: replayed, and the results file has no row for it
            lines.append(f"{r.rung:<20} {_size(r):>{sw}} {r.dtype:>5}     not measured (not in the recorded run)")
            continue
        mark = refs.setdefault(r.cublas_ref or "cupy.matmul (recorded before the GPU-time method)", "abcdefghij"[len(refs) % 10])
        lines.append(f"{r.rung:<20} {_size(r):>{sw}} {r.dtype:>5} {r.tflops:8.2f} {iqr:>{iw}} {r.cublas_tflops:8.2f} {mark}"
                     f" {r.ratio:7.1%} {('yes' if r.correct else 'NO'):>7}  {r.date[:16]}")
    # What each cuBLAS column timed, folded so that no line of it wraps in the book's column.
    import textwrap
    width = max([BOOK_COLUMNS] + [len(line) for line in lines])
    lines += [textwrap.fill(f"cuBLAS ({mark}): {ref}", width, subsequent_indent="    ", break_on_hyphens=False)
              for ref, mark in refs.items()]
    return "\n".join(lines)


def _display_code(text: str, language: str) -> None:
    """Highlighted code in a notebook, with the colours inlined so JupyterLab shows them as the book does (IPython's
    Code object relies on a stylesheet JupyterLab does not load); plain text anywhere else."""
    try:
        from IPython import get_ipython
        from IPython.display import HTML, display
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


def progress(items, what: str):
    """`items` with a progress bar (a text line on stderr, redrawn in place, in a notebook as in a terminal) while
    numbers are being measured; silent in replay, where every item is a lookup. Not tqdm's notebook widget: a saved
    notebook and the static book cannot draw a widget, and a bar that is only a widget leaves an empty output."""
    from tqdm import tqdm
    items = list(items)
    return tqdm(items, desc=what, disable=not live() or len(items) < 2, leave=False)


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
    _display_code(_function_text(text, entry) if entry else text, "cuda")


def show_file(relpath: str, entry: str | None = None) -> None:
    """Show a file under kernels/, e.g. the PTX wrappers in 'common/mma_sync.cuh', or just one function of it (with
    the comment above it)."""
    from .registry import KERNELS
    text = (KERNELS / relpath).read_text()
    _display_code(_function_text(text, entry) if entry else text, "cuda")


def show_python(obj) -> None:
    """Show the source of a helper function (e.g. the host code that builds a tensor map), highlighted."""
    import inspect
    _display_code(inspect.getsource(obj), "python")


def built_source(r) -> tuple[str, str]:
    """(label, text) of the source a rung actually compiles: its .cu with the registry's constexpr config applied and
    each `if constexpr` switch resolved to the branch the compiler keeps (helpers.compiler.resolve_switches)."""
    from .compiler import apply_config, resolve_switches
    label = f"kernels/{r.path.name}" + (" with " + ", ".join(f"{k}={v}" for k, v in r.config.items()) if r.config else "")
    return label, resolve_switches(apply_config(r.path.read_text(), r.config))


def show_diff(before: str, after: str) -> None:
    """The lesson of a rung: the unified diff of the source it builds against the previous rung's (each .cu with
    its registry config applied, so a variant shows the constants it really runs with)."""
    import difflib
    from .registry import rung
    (la, a), (lb, b) = built_source(rung(before)), built_source(rung(after))
    diff = difflib.unified_diff(a.splitlines(), b.splitlines(), la, lb, n=2, lineterm="")
    _display_code("\n".join(diff), "diff")


def diff_size(before: str, after: str) -> int:
    """Lines added plus lines removed between two rungs' built sources (what show_diff prints, without context):
    the size of the lesson. Headers and comments count; a reader diffs them too."""
    import difflib
    from .registry import rung
    a, b = built_source(rung(before))[1], built_source(rung(after))[1]
    return sum(1 for line in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---")))


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


def orders_table(record: dict | None = None, shown=("PEFCS", "PCSEF", "CPSEF")) -> str:
    """ci/ladder_orders.py's lattice (chapter 10's five switches, 32 builds timed in one set of rounds) as text: how
    many of the 120 orders rise at every step at both sizes, and for the orders `shown`, each step's factor at
    N = 4096 and 8192 ('+' where it rises beyond the noise, '=' where it does not)."""
    import json
    from .registry import ROOT
    rec = record or json.loads((ROOT / "results" / "ladder_orders.json").read_text())
    env, orders = rec["env"], {o["order"]: o for o in rec["orders"]}
    sizes = list(rec["time"])
    words = dict(P="persistent", C="clusters", S="grouped", E="TMA store", F="4th stage")
    rising = [sum(s[n]["rises"] for s in o["steps"] for n in sizes) for o in orders.values()]
    lines = [f"ci/ladder_orders.py, {env['name']}, {env['date']}, outside the book's run",
             f"of {len(orders)} orders, rising at every step at N = {' and '.join(sizes)}: "
             f"{sum(r == 2 * 5 for r in rising)}; at all but one: {sum(r == 2 * 5 - 1 for r in rising)}",
             f"{'order':<8}{'step':<14}" + "".join(f"{'N=' + n:>12}" for n in sizes)]
    for name in shown:
        for i, s in enumerate(orders[name]["steps"]):
            lines.append(f"{name if i == 0 else '':<8}{words[s['flag']]:<14}"
                         + "".join(f"{'x%.3f' % s[n]['factor']:>10} {'+' if s[n]['rises'] else '='}" for n in sizes))
    lines.append("+: the step's lower quartile above the upper quartile of the build before it; =: not")
    return "\n".join(lines)


def sass_claims(r) -> str:
    """The registry's SASS claims for a rung, checked against the cubin: stable across compiler versions."""
    from .compiler import build as _build
    b = _build(r)
    parts = [f"{op} {'yes' if b.count(op, r.entry) else 'MISSING'}" for op in r.sass_has]
    parts += [f"no {op} {'yes' if not b.count(op, r.entry) else 'FOUND'}" for op in r.sass_lacks]
    res = b.resources[r.entry]
    parts.append(f"spills {res.spill_stores + res.spill_loads} B")
    return f"{r.id}: " + ", ".join(parts)


def status_text() -> str:
    """The recording environment and each chapter's last execution time (results/execution.json)."""
    import json
    env = recorded_env()
    lines = []
    if env:
        lines += [f"recorded on     {env['name']} ({env['sms']} SMs, compute capability {env['cc']}, "
                  f"{env['l2_bytes'] // 2**20} MiB L2, SM clock up to {env['sm_clock_max_mhz']} MHz)",
                  f"software        driver {env['driver']}, CUDA {env['cuda_driver_api']} (runtime "
                  f"{env['cuda_runtime']}), CuPy {env['cupy']}, NVRTC {env['nvrtc']}",
                  f"latest record   {env['date']}"]
    timings = results.RESULTS / "execution.json"
    if timings.exists():
        lines.append("\nchapter                        executed cold in   on")
        for name, t in sorted(json.loads(timings.read_text()).items()):
            lines.append(f"{name:<30} {t['seconds']:>8.1f} s        {t['date']}")
    return "\n".join(lines)
