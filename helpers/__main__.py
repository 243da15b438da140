"""The command line: python -m helpers {ladder, profile, sass, check} ... (each has --help)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .gpu import REPLAY_ENV

LADDER_HELP = """\
Every rung against the strongest cuBLAS, as a table (or JSON rows) and a climb plot.

Live (a GPU that can run the rung): each rung is checked on fresh random data and timed against cuBLAS by GPU time
(spin-prefilled queue, equal batches, 15 interleaved rounds, median and IQR), then recorded in results/<gpu>/run.json.
Anywhere else, or with --replay (or GEMM_LADDER_REPLAY=1), the rows of the book's recorded run are shown, labelled so; a
rung and size never recorded is a "not measured" line. Environment: GEMM_LADDER_REPLAY (1 replays), GEMM_LADDER_RESULTS
(another results file), GEMM_LADDER_RUN (one run id across processes: a row this run measured is reused).

Columns: rung, size (N, or MxNxK), dtype, TFLOP/s (median), IQR, cuBLAS (the run's baseline TFLOP/s for that shape
and dtype; the letter names which cuBLAS, listed under the table), ratio (TFLOP/s over cuBLAS), correct (the check
passed: relative error and every element within its bound), measured (when). --json prints every recorded key.
Rung ids: python -m helpers ladder --rungs nope lists them; helpers.registry.MAIN is the path the book climbs."""

SASS_HELP = """\
What the compiler made of a rung, with no GPU needed: registers, spills and shared memory from ptxas, the opcode
families of its SASS, and the registry's SASS claims checked against the cubin. --listing prints the kernel's whole
SASS (nvdisasm)."""

CHECK_HELP = """\
Run a rung once on fresh random inputs into a NaN-poisoned C and compare with cuBLAS in higher precision: the relative
error of the whole matrix and an element-wise bound. Needs a GPU that can run the rung; elsewhere it says why in one
sentence and exits 2."""


def _size(text: str) -> int:
    """A matrix size: a positive integer, refused before anything runs."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"sizes are positive; got {value}")
    return value


def _plot_path(text: str) -> str:
    """Where the climb plot goes: a file in an existing folder, in a format matplotlib writes ('' for none)."""
    if not text:
        return text
    from matplotlib.figure import Figure
    path, formats = Path(text), Figure().canvas.get_supported_filetypes()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; name a file in it, e.g. {path / 'climb.png'}")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"the folder {path.parent} does not exist; create it first or pick another")
    if path.suffix.lstrip(".").lower() not in formats:
        raise argparse.ArgumentTypeError(f"{path.suffix or 'no extension'} is not a format matplotlib writes; use one "
                                         f"of {', '.join('.' + f for f in sorted(formats))}")
    return text


def _unique(items: list) -> list:
    return list(dict.fromkeys(items))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m helpers", description="Climb the GEMM ladder on a Hopper GPU (H100, H200).")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="{ladder,profile,sass,check}")
    raw = argparse.RawDescriptionHelpFormatter
    lad = sub.add_parser("ladder", help="every rung against cuBLAS: measured live, or the book's recorded run",
                         description=LADDER_HELP, formatter_class=raw)
    lad.add_argument("--n", type=_size, nargs="+", help="square sizes N (default 4096, unless --shape is given)")
    lad.add_argument("--shape", type=_size, nargs=3, action="append", metavar=("M", "N", "K"), default=[],
                     help="a non-square M N K (repeat the option for several)")
    lad.add_argument("--rungs", nargs="+", help="rung ids (default: the main path, helpers.registry.MAIN)")
    lad.add_argument("--all", action="store_true", help="every registered rung: the main path and the ablations")
    lad.add_argument("--replay", action="store_true", help="show recorded results even if a GPU is present")
    lad.add_argument("--json", action="store_true", help="print rows as JSON instead of a table")
    lad.add_argument("--plot", type=_plot_path, default="climb.png",
                     help="where to write the climb plot (default climb.png; '' for none)")
    prof = sub.add_parser("profile", help="each rung's Nsight Compute profile (default: the main path)",
                          description=PROFILE_HELP, formatter_class=raw)
    prof.add_argument("--n", type=_size, nargs="+", default=[4096, 8192], help="square sizes N (default: 4096 8192)")
    prof.add_argument("--rungs", nargs="+", help="rung ids (default: the main path, helpers.registry.MAIN)")
    prof.add_argument("--replay", action="store_true", help="show recorded profiles even if a GPU and ncu are present")
    prof.add_argument("--json", action="store_true", help="print a JSON list, one object per rung and size")
    sass = sub.add_parser("sass", help="registers, spills and SASS of a rung (no GPU needed)", description=SASS_HELP,
                          formatter_class=raw)
    sass.add_argument("rung", help="a rung id, e.g. 04_swizzle")
    sass.add_argument("--listing", action="store_true", help="also print the kernel's whole SASS")
    chk = sub.add_parser("check", help="is a rung right? one run on fresh data against cuBLAS (GPU)",
                         description=CHECK_HELP, formatter_class=raw)
    chk.add_argument("rung", help="a rung id, e.g. 10_chip")
    chk.add_argument("--n", type=_size, default=1024, help="square size N (default 1024)")
    chk.add_argument("--shape", type=_size, nargs=3, metavar=("M", "N", "K"), help="a non-square M N K instead")
    return p


def main(argv=None) -> int:
    """The CLI. --replay sets replay for this command only: the flag and the variable it sets are put back after, so a
    caller in the same process (a test, a notebook) keeps its own mode and its own banner."""
    from . import gpu
    before = os.environ.get(REPLAY_ENV)
    try:
        return _main(argv)
    finally:
        gpu.REPLAY_FLAG = None
        if before is None:
            os.environ.pop(REPLAY_ENV, None)
        else:
            os.environ[REPLAY_ENV] = before


def _main(argv=None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    from . import gpu
    gpu.REPLAY_FLAG = "--replay" if getattr(args, "replay", False) else None  # named in the banner, not the variable
    if gpu.REPLAY_FLAG:
        os.environ[REPLAY_ENV] = "1"
    from . import registry
    from .results import ResultsError, load, path_for
    try:
        gpu.replay_forced()
        ids = [args.rung] if hasattr(args, "rung") else _unique(args.rungs or [])
        chosen = [registry.rung(x) for x in ids]
    except (ValueError, KeyError) as e:
        p.error(e.args[0])
    if args.cmd == "sass":
        return _sass(chosen[0], args.listing)
    if args.cmd == "check":
        return _check(chosen[0], tuple(args.shape) if args.shape else (args.n,) * 3)
    try:
        if not gpu.live():
            if not path_for().exists():  # replay with nothing to replay: say so once, not once per rung
                raise ResultsError(f"{path_for()} does not exist, so there is nothing to replay; unset "
                                   f"GEMM_LADDER_RESULTS or point it at a results file.")
            load()  # replay reads the results file for every row: a broken one is said once, here
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.cmd == "profile":
        return _profile(chosen or [registry.rung(x) for x in registry.MAIN], _unique(args.n), args.json)
    return _ladder(args, chosen or (list(registry.RUNGS) if args.all else [registry.rung(x) for x in registry.MAIN]))


def _ladder(args, chosen) -> int:
    """The ladder subcommand: each rung and shape measured or replayed, a table or JSON, the climb plot."""
    from . import ladder
    from .ceilings import recorded_ceilings
    from .results import ResultsError
    from .status import banner_text
    from .tables import progress, table
    print(banner_text(), file=sys.stderr)
    from .kernel import ShapeError
    from .launch import validate
    rows, missing = [], []
    sizes = args.n if args.n or args.shape else [4096]
    shapes = _unique([(n, n, n) for n in sizes or []] + [tuple(s) for s in args.shape])
    # Shapes are checked against every rung's tiles before anything runs, and a shape some rungs refuse is said once.
    todo, any_refused = [], False
    for shape in shapes:
        refused = {}
        for r in chosen:
            try:
                validate(r, *shape)
                todo.append((r, shape))
            except ShapeError as e:
                refused[r.id] = str(e)
        if refused:
            any_refused = True
            label = f"N={shape[0]}" if len(set(shape)) == 1 else "x".join(map(str, shape))
            first = next(iter(refused.values()))
            print(f"skipped: {label} for {len(refused)} of {len(chosen)} rungs, whose tiles do not divide it "
                  f"({', '.join(refused)}); for one: {first}", file=sys.stderr)
    for r, shape in progress(todo, "the ladder"):
        label = f"N={shape[0]}" if len(set(shape)) == 1 else "x".join(map(str, shape))
        try:
            rows.append(ladder.measure(r, *shape, missing_ok=True))  # never recorded: a "not measured" line
        except ResultsError as e:
            missing.append(str(e))
        except Exception as e:  # noqa: BLE001 - one broken rung must not lose the others' results
            missing.append(f"{r.id} {label} failed: {type(e).__name__}: {e}")
    for m in missing:
        print(f"skipped: {m}", file=sys.stderr)
    for r in rows:
        if not r.has_number:
            print(f"not measured: {r.why}", file=sys.stderr)

    if args.json:
        print(json.dumps([r.json() for r in rows], indent=1))
    else:
        print(table(rows))
    numbers = [r for r in rows if r.has_number]
    if args.plot and numbers:
        from .plot import save_climb
        ceilings = recorded_ceilings() if numbers[0].source == "recorded" else {}
        try:
            save_climb(numbers, ceilings, args.plot)
        except OSError as e:
            print(f"error: the climb plot could not be written to {args.plot} ({e.strerror or e}).", file=sys.stderr)
            return 2
        print(f"climb plot written to {args.plot}", file=sys.stderr)
    # --all is every rung at the sizes asked: one whose tiles do not divide a size is skipped (said above), not a
    # failure. A rung named with --rungs that cannot take a size still fails.
    return 0 if numbers and not missing and not (any_refused and not args.all) else 1


PROFILE_HELP = """\
One Nsight Compute profile per rung and size: what the rung's time goes to.

Live (a Hopper GPU with ncu on PATH): each rung is launched under ncu at the card's own clocks, without ncu's cache
flush, and the result is recorded in results/<gpu>/run.json (section "profiles", key "<rung>@<N>") with this run's id;
a profile this run already took is reused. Anywhere else, or with --replay (or GEMM_LADDER_REPLAY=1), the recorded
profile is shown; a rung and size never recorded is one line on stderr, and the exit code is 1.

Each object of --json has at least:
  rung, n, run, source   the rung, N (M = N = K), the run that measured it, live / this run / recorded
  duration_us            kernel duration, median over the profiled launches
  sm_clock_mhz           SM clock while it ran
  tensor_active_pct      the rung's math pipe busy, % of peak: the tensor pipe (HMMA/HGMMA/QGMMA), or for the
                         FP32 SIMT rungs the FMA pipe (pipe says which)
  stall_reasons          warp stall reason -> share of the stalled samples (sums to 1)
  l2_tbps, l2_pct        L2 -> SM bytes per second (TB/s) and % of that path's peak
  smem_tbps              bytes of shared-memory instructions per second (TB/s; not TMA, not wgmma operands)
  dram_bytes             DRAM bytes read plus written
  registers, spill_bytes registers per thread; ptxas spill bytes
  occupancy_pct          achieved occupancy
  metric_source, raw     the metric behind each key; every metric ncu collected
(helpers/profile.py says how they are measured; its KEYS lists every key.)"""


def _profile(chosen, sizes, as_json: bool) -> int:
    """The profile subcommand: each requested rung and size profiled or replayed; anything missing is one line."""
    from . import profile
    from .store import NotRecorded
    from .results import ResultsError
    got, missing = [], []
    for n in sizes:
        for r in chosen:
            try:
                entry = profile.profile(r, n)
            except NotRecorded as e:
                missing.append(str(e))
                continue
            except ResultsError as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
            except Exception as e:  # noqa: BLE001 - one rung that cannot be profiled must not lose the others
                missing.append(f"{r.id} N={n} could not be profiled: {type(e).__name__}: {e}")
                continue
            got.append(entry)
            if entry["source"] == "live":  # a line per profile taken, so a long run shows where it is
                print(f"profiled {r.id} N={n}: {entry['duration_us']} us, metric tier {entry['ncu']['tier']}",
                      file=sys.stderr, flush=True)
    for m in missing:
        print(m, file=sys.stderr)
    if got:  # nothing at all: the lines above say why, and stdout stays empty
        print(json.dumps(got, indent=1) if as_json else profile.table(got))
    return 0 if got and not missing else 1


def _sass(r, listing: bool) -> int:
    """The sass subcommand: the build summary, the registry's SASS claims checked, and the listing on request."""
    from .compiler import ToolMissing
    from .csource import CompileError
    from .listing import sass_claims
    from .tables import build_summary
    from .kernel import kernel
    try:
        b = kernel(r).build
        print(build_summary(b, r.entry))
        print(sass_claims(r))
        if listing:  # nvdisasm's text of this kernel's section of the cubin
            sections = b.sass().split(".section\t.text.")
            print(next((".section\t.text." + x for x in sections[1:] if x.startswith(r.entry + ",")), b.sass()))
    except (CompileError, ToolMissing) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def _check(r, shape: tuple) -> int:
    """The check subcommand: one run on fresh data against cuBLAS in higher precision, or why it cannot run here."""
    from .correctness import check
    from .gpu import missing
    from .kernel import KernelFault, ShapeError
    from .launch import validate
    try:
        validate(r, *shape)
    except ShapeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    gap = missing(r.needs_cc, r.arch)  # the clause why_not_live builds its sentence from
    if gap:  # the book's own check of this rung was recorded with its timing: say where to read it
        print(f"error: {gap[0].upper()}{gap[1:]}, so nothing can be checked here; the recorded check of {r.id} is the "
              f"'correct' column of `python -m helpers ladder --replay --rungs {r.id}`.", file=sys.stderr)
        return 2
    try:
        result = check(r, *shape)
    except KernelFault as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(result)
    return 0 if result.ok else 1


def run(argv=None) -> int:
    """main() for a shell: output piped into a reader that stops early (`sass 07_tma --listing | head`) ends the
    command quietly, as it ends cat or grep, instead of in a BrokenPipeError traceback."""
    try:
        code = main(argv)
        sys.stdout.flush()  # inside the try: a pipe closed after the last print fails here, not at interpreter exit
        return code
    except BrokenPipeError:
        # Python flushes stdout again at exit; pointing it at /dev/null keeps that flush from printing a second error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0  # the reader took what they wanted: nothing failed


if __name__ == "__main__":
    sys.exit(run())
