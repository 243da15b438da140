"""Record where each rung's warps wait: the top stall sites of Nsight Compute's source counters, per rung and size
(results section "stall_sites", key "<rung>@<N>"; helpers.sites reads them, helpers.profile attaches them to the
profile of the same rung and size as `stall_sites`).

    python3 -m tools.stall_sites [RUNG ...] [--n N ...] [--save DIR]
        (GPU host, ncu on PATH; default: every main-path rung, the Hopper ones first, at N = 4096 and 8192;
         --save DIR keeps ncu's whole output as DIR/<rung>@<N>.csv: ci/gpu.sh keeps them in its logs, outside the
        repository; the recorded entries hold what is read from them)
    python3 -m tools.stall_sites --reread DIR   (anywhere: read a run's saved pages again into its recorded entries)

The launch is the profile's own (helpers.ncu's CHILD: the rung prepared as check() and bench() prepare it, warmed
up, then LAUNCHES launches inside an NVTX range), under `--clock-control none --cache-control none` as every
profile here, with only the SourceCounters section: PC sampling, one pass per launch, and the instruction counts.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from helpers import results
from helpers.ncu import CHILD, LAUNCHES, RANGE, SLOW_MS, TIMEOUT_S, ncu_path, ncu_version, run_ncu, tail_of
from helpers.registry import MAIN, rung
from helpers.sites import parse_source_csv, sentence, stall_sites
from helpers.store import obtain

SECTION = "stall_sites"
SIZES = (4096, 8192)


def command(rung_id: str, n: int) -> list[str]:
    return [ncu_path(), "--csv", "--page", "source", "--print-source", "sass",
            "--clock-control", "none", "--cache-control", "none",
            "--nvtx", "--nvtx-include", f"{RANGE}/", "--launch-count", str(LAUNCHES), "--section", "SourceCounters",
            sys.executable, "-c", CHILD, rung_id, str(n), str(LAUNCHES), str(SLOW_MS), RANGE, "{}"]


def collect(rung_id: str, n: int, save: Path | None) -> dict:
    cmd = command(rung_id, n)
    out, err = run_ncu(cmd, TIMEOUT_S)
    if save:
        save.mkdir(parents=True, exist_ok=True)
        (save / f"{rung_id}@{n}.csv").write_text(out + ("\n#stderr\n" + err if err.strip() else ""))
    instructions = parse_source_csv(out)
    if not instructions:
        raise RuntimeError(f"Nsight Compute printed no SASS source page for {rung_id} at N={n}; the end of its "
                           f"output: {tail_of(out + err)}")
    got = stall_sites(instructions)
    if not got["sites"]:
        raise RuntimeError(f"the source page of {rung_id} at N={n} has {len(instructions)} instructions but no stall "
                           f"samples; the end of ncu's output: {tail_of(err or out)}")
    shown = ["<CHILD>" if x == CHILD else x for x in cmd]
    return {"rung": rung_id, "n": n, **got, "instructions": len(instructions),
            "ncu": {"version": ncu_version(), "command": shown}}


def order(rungs) -> list[str]:
    """The Hopper rungs first (what the counters issue reads), then the rest in ladder order."""
    return sorted(rungs, key=lambda r: (not r.startswith(("06", "07", "08", "09", "10", "12")), MAIN.index(r)
                                        if r in MAIN else 99))


def reread(pages: Path, run_file: Path) -> int:
    """Read the recorded entries' sites again from the source pages a run kept (--save; ci/gpu.sh keeps them in its
    logs, sites/<rung>@<N>.csv), after a change to helpers.sites, keeping each entry's run, GPU, date and environment:
    the measurement is the page, only its reading changes."""
    data = results.load(run_file)
    for key, entry in sorted(data.get(SECTION, {}).items()):
        page = pages / f"{key}.csv"
        if not page.exists():
            print(f"{key}: no source page {page}; left as it was")
            continue
        got = stall_sites(parse_source_csv(page.read_text()))
        results.record(SECTION, key, {**entry, **got}, run_file)
        print(f"{key}: {sentence(got, 3)}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tools.stall_sites", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rungs", nargs="*", metavar="RUNG", help="rungs (default: every main-path rung)")
    ap.add_argument("--n", nargs="+", type=int, default=list(SIZES), help="square sizes (default: 4096 8192)")
    ap.add_argument("--save", type=Path, help="also keep each whole source page (CSV, ncu's output) in this folder")
    ap.add_argument("--reread", type=Path, metavar="DIR",
                    help="no GPU: read the recorded entries' sites again from the pages a run saved in DIR")
    args = ap.parse_args(argv)
    if args.reread:
        return reread(args.reread, results.path_for())
    failed = 0
    for rid in order(args.rungs or MAIN):
        r = rung(rid)
        for n in args.n:
            try:
                e, source = obtain(SECTION, f"{rid}@{n}", lambda: collect(rid, n, args.save), r.needs_cc, r.arch)
            except Exception as err:  # noqa: BLE001 - one rung's failure must not lose the others: say it, go on
                failed += 1
                print(f"{rid} N={n}: no stall sites ({type(err).__name__}: {err})", flush=True)
                continue
            print(f"{rid} N={n} ({source}): {e['total_samples']} samples; {sentence(e, 3)}", flush=True)
    print(f"recorded in {results.path_for()}" if not failed else f"{failed} rung/size pairs failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
