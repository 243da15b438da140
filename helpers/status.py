"""The banner at the top of every chapter (MEASURED, REPLAY or PLAYGROUND, and which kernels need a Hopper GPU), where
each chapter runs live, and the status page: what the book's numbers were recorded on, and each chapter's time. The
device is always read from the data (the GPU here, or the recorded run's environment), never typed."""
from __future__ import annotations

from . import results, store
from .gpu import can_run, device, live, why_not_live


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
    """Ids of the kernels that need a Hopper GPU (sm_90a), and of those that run from sm_80 on."""
    return ([i.id for i in items if tuple(i.needs_cc) >= (9, 0)], [i.id for i in items if tuple(i.needs_cc) < (9, 0)])


def _names(ids: list[str]) -> str:
    """A short list in full; a long one (chapter 11 shows every rung) as a count or a range of chapters. Probes
    carry names, not chapter numbers: chapter 00 lists them all."""
    if len(ids) <= 5 or not ids[0][:2].isdigit():
        return ", ".join(ids)
    first, last = ids[0][:2], ids[-1][:2]
    return f"all {len(ids)} of its rungs" if first == last else f"the rungs of chapters {first}-{last}"


def _recorded_on() -> str:
    """The GPU the book's run was recorded on, for a sentence ("the recorded numbers (NVIDIA H100 80GB HBM3)")."""
    try:
        env = recorded_env()
    except results.ResultsError:
        env = None
    return f"the recorded numbers ({env['name']})" if env else "the recorded numbers"


def needs_text(chapter: str) -> str:
    """Which of a chapter's kernels need a Hopper GPU, in one plain sentence. It is the same in every mode, so the
    static book, a laptop and a Colab runtime (a T4, L4 or A100) all say it."""
    hopper, older = _split(_items(chapter))
    parts = []
    if hopper:
        parts.append(f"{_names(hopper)} need{'s' if len(hopper) == 1 else ''} a Hopper GPU (sm_90a: H100, H200) to "
                     f"run live")
    if older:
        parts.append(f"{_names(older)} run{'s' if len(older) == 1 else ''} live on any GPU from sm_80 on "
                     f"(A100, L4, H100, H200)")
    if hopper and older:
        return (f"Needs: {'; '.join(parts)}. Where one cannot run (no GPU, a Colab T4, or an A100 or L4 for the "
                f"Hopper ones), {_recorded_on()} are shown instead.")
    where = "a Colab T4, L4 or A100" if hopper else "a Colab T4"
    return f"Needs: {parts[0]}. Elsewhere (no GPU, or {where}) {_recorded_on()} are shown instead."


def where_it_runs() -> str:
    """Per chapter (00's probes, each rung chapter, 11 running them all), the GPUs its kernels run live on;
    everywhere else it replays the book's recorded run."""
    from .registry import RUNGS
    lines = [f"{'chapter':<8} {'kernels':>7}   runs live on"]
    for ch in sorted({"00", "11", *(r.chapter for r in RUNGS)}):
        hopper, older = _split(_items(ch))
        if hopper and older:
            where = f"H100 or H200 for {len(hopper)}; A100, L4, H100 or H200 for the other {len(older)}"
        else:
            where = "H100 or H200 only (sm_90a)" if hopper else "A100, L4, H100 or H200 (sm_80 and newer)"
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
        text = (f"MEASURED: these outputs were measured on {d.name} on {d.env()['date']}, when the cells ran (run "
                f"{store.run_id()}; driver {d.driver}, CUDA {d.cuda_driver_api}, CuPy {d.cupy}). Running the cells "
                f"again replays the recorded numbers, or measures anew on a GPU that can run them, and this box will "
                f"then say which. A number this run had already measured, in another chapter or by "
                f"the ladder, is reused, and each table row shows when it was measured. GPU time only, against the "
                f"strongest cuBLAS in the same rounds.")
        hopper, older = _split([i for i in _items(chapter) if not can_run(d, i.needs_cc, i.arch)])
        why = "; ".join(p for p in (hopper and f"{_names(hopper)} need a Hopper GPU (sm_90a)",
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
    chapter, which of its kernels need a Hopper GPU."""
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
        # A chapter re-executed in a run that had already measured its rows keeps its last cold time, so the
        # times may come from different days and boards: each line names its own.
        lines.append("\nchapter                        executed cold in   on")
        for name, t in sorted(json.loads(timings.read_text()).items()):
            lines.append(f"{name:<30} {t['seconds']:>8.1f} s        {t['date']}, {t.get('gpu', 'GPU not recorded')}")
    return "\n".join(lines)


def runs_side_by_side(sizes=(4096, 8192)) -> str:
    """Every GPU's run file in results/ side by side, the book's first: for each main-path rung that all of them
    measured by GPU time at a square size, its TFLOP/s and its ratio to that run's strongest cuBLAS. The H200 is the
    H100's chip with more HBM bandwidth and L2, so a rung moves where it leans on memory; the ratios say how."""
    from .registry import MAIN
    runs = []
    for path in sorted(results.RESULTS.glob(f"*/{results.RUN_FILE}"), key=lambda p: p.parent.name != results.REFERENCE):
        data = results.load(path)
        rows = {k: e for k, e in data.get("gemm", {}).items() if e.get("method") == "gpu-time"}
        envs = [e["env"] for e in data.get("gemm", {}).values() if "env" in e]
        name = max(envs, key=lambda e: e["date"])["name"] if envs else path.parent.name
        runs.append((name, path.parent.name, rows))
    lines = [f"{name}: no rows measured by GPU time in results/{slug}/ yet; a run there (bash ci/gpu.sh) fills them"
             for name, slug, rows in runs if not rows]
    runs = [run for run in runs if run[2]]
    if len(runs) < 2:
        return "\n".join(lines + ["Fewer than two GPUs have rows measured by GPU time: nothing to compare yet."])
    head = f"{'rung':<20} {'N':>5} " + " ".join(f"{name[:24]:>24}" for name, _, _ in runs)
    lines = [head, f"{'':<20} {'':>5} " + " ".join(f"{'TFLOP/s  of cuBLAS':>24}" for _ in runs)] + lines
    for r in MAIN:
        for n in sizes:
            key = results.gemm_key(r, n, n, n)
            if all(key in rows for _, _, rows in runs):
                cells = " ".join(f"{rows[key]['tflops']:>14.1f} {rows[key]['ratio']:>8.1%}" for _, _, rows in runs)
                lines.append(f"{r:<20} {n:>5} {cells}")
    return "\n".join(lines)
