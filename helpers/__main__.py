"""python -m helpers ladder [--n N ...] [--shape M N K ...] [--rungs ID ...] [--replay] [--json] [--plot PATH]
python -m helpers profile [--n N ...] [--rungs ID ...] [--replay] [--json]"""
from __future__ import annotations

import argparse
import json
import os
import sys

from .gpu import REPLAY_ENV


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m helpers", description="Climb the GEMM ladder.")
    sub = p.add_subparsers(dest="cmd", required=True)
    lad = sub.add_parser("ladder", help="run (or replay) every registered rung against cuBLAS")
    lad.add_argument("--n", type=int, nargs="+", help="square sizes N (default 4096, unless --shape is given)")
    lad.add_argument("--shape", type=int, nargs=3, action="append", metavar=("M", "N", "K"), default=[],
                     help="a non-square M N K (repeat the option for several)")
    lad.add_argument("--rungs", nargs="+", help="rung ids (default: all registered rungs)")
    lad.add_argument("--replay", action="store_true", help="show recorded results even if a GPU is present")
    lad.add_argument("--json", action="store_true", help="print rows as JSON instead of a table")
    lad.add_argument("--plot", default="climb.png", help="where to write the climb plot ('' for none)")
    prof = sub.add_parser("profile", help="Nsight Compute profile of each rung on the main path (or the recorded one)",
                          description=PROFILE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    prof.add_argument("--n", type=int, nargs="+", default=[4096, 8192], help="square sizes N (default: 4096 8192)")
    prof.add_argument("--rungs", nargs="+", help="rung ids (default: the main path, helpers.registry.MAIN)")
    prof.add_argument("--replay", action="store_true", help="show recorded profiles even if a GPU and ncu are present")
    prof.add_argument("--json", action="store_true", help="print a JSON list, one object per rung and size")
    args = p.parse_args(argv)

    if args.replay:
        os.environ[REPLAY_ENV] = "1"
    if args.cmd == "profile":
        return _profile(p, args)
    from . import ladder, registry, report  # after the env var, so mode detection sees it

    try:
        chosen = [registry.rung(x) for x in args.rungs] if args.rungs else list(registry.RUNGS)
    except KeyError as e:
        p.error(e.args[0])
    from .results import ResultsError, load
    try:
        if not report.live():
            load()  # replay reads the results file for every row: a broken one is said once, here
        print(report.banner_text(), file=sys.stderr)
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    from .report import progress
    rows, missing = [], []
    sizes = args.n if args.n or args.shape else [4096]
    shapes = [(n, n, n) for n in sizes or []] + [tuple(s) for s in args.shape]
    for r, shape in progress([(r, shape) for shape in shapes for r in chosen], "the ladder"):
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
        print(report.table(rows))
    numbers = [r for r in rows if r.has_number]
    if args.plot and numbers:
        from .plot import save_climb
        ceilings = ladder.recorded_ceilings() if numbers[0].source == "recorded" else {}
        save_climb(numbers, ceilings, args.plot)
        print(f"climb plot written to {args.plot}", file=sys.stderr)
    return 0 if numbers and not missing else 1


PROFILE_HELP = """\
One Nsight Compute profile per rung and size: what the rung's time goes to.

Live (an H100 with ncu on PATH): each rung is launched under ncu at the card's own clocks, without ncu's cache
flush, and the result is recorded in results/<gpu>.json (section "profiles", key "<rung>@<N>") with this run's id;
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


def _profile(p: argparse.ArgumentParser, args) -> int:
    """The profile subcommand: each requested rung and size profiled or replayed; anything missing is one line."""
    from . import profile, registry
    from .ladder import NotRecorded
    from .results import ResultsError
    try:
        chosen = [registry.rung(x) for x in (args.rungs or registry.MAIN)]
    except KeyError as e:
        p.error(e.args[0])
    got, missing = [], []
    for n in args.n:
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
        print(json.dumps(got, indent=1) if args.json else profile.table(got))
    return 0 if got and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
