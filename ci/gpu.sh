#!/usr/bin/env bash
# Everything that needs the H100, in one go: GPU tests, sanitizers, the live ladder and ceilings, and the
# chapter notebooks executed in place (their outputs are what the book shows). Usage:
#   bash ci/gpu.sh [tests] [sanitize] [probes] [ceilings] [crosscheck] [banks] [l2] [ladder] [tune] [notebooks] [prune]
#   [profile] [pingpong] [splitk] [fp8_promoted] [clusters] [wgmma_issue] [small_tiles] [ladder_orders] [bf16_c_8192]
#   (default: all but `profile` and the last eight, experiments outside the run; chapters 10 and 12 replay what `tune`
#   records).
#   A 10-minute call fits about half of the default steps. Timed on the H100 on 2026-11-22 (run 03:29Z): tests
#   108 s, sanitize 193 s (every rung), ceilings 20 s, crosscheck 39 s, banks 14 s, l2 109 s, ladder 134 s, tune 43 s,
#   notebooks 277 s. So:
#   `tests sanitize ceilings crosscheck banks l2` (490 s), then `ladder tune notebooks prune` (460 s), back to back
#   (a machine idle for 30 s is given back) with one GEMM_LADDER_RUN, copying results/ back into the tree between
#   calls. SANITIZE_RUNGS="07_ 10_bf16" sanitizes only the rungs whose ids start so (the kernels a change touched).
#   Leave MPLBACKEND unset for `notebooks` (ci/execute.py drops it). Logs and a tarball of the results and
#   executed notebooks go to $OUT (or ./gpu-out).
# `profile` (asked for by name only): an Nsight Compute profile of every main-path rung at N = 4096 and 8192 (python -m
#   helpers profile: one ncu run per rung and size, recorded as it goes in results/ section "profiles"). Not timed yet:
#   46 ncu runs of roughly 5 to 15 s each, 01_naive at 8192 the longest (2.2 s a launch, replayed once per pass). If
#   it does not fit one call, split it with PROFILE_ARGS (e.g. PROFILE_ARGS="--n 4096", then "--n 8192") under the
#   same GEMM_LADDER_RUN: a profile this run already took is reused, not taken again.
# Every process shares one run id (GEMM_LADDER_RUN; set it yourself to continue a run across calls): a row or
# ceiling measured once in the run is reused by every chapter, so the book shows one coherent set of numbers.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
LOGS=$(mktemp -d)  # logs travel inside recorded.tgz: the device tool returns at most 8 files
steps=${*:-tests sanitize ceilings crosscheck banks l2 ladder tune notebooks prune}
export GEMM_LADDER_RUN=${GEMM_LADDER_RUN:-$(date -u +%Y-%m-%dT%H:%MZ)}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
echo "run $GEMM_LADDER_RUN"
if [ -d .whl ]; then  # Jupyter/nbval wheels carried to a GPU host that cannot reach PyPI
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv | tee "$LOGS/env.txt"
python3 -c "import cupy, numba, nvmath; from cupy.cuda import nvrtc; print('cupy', cupy.__version__, 'nvrtc', nvrtc.getVersion(), 'numba', numba.__version__, 'nvmath', nvmath.__version__)" | tee -a "$LOGS/env.txt"
status=0
for step in $steps; do
  echo "=== $step"; t0=$(date +%s)
  case $step in
    tests)    python3 -m pytest -q -m gpu tests -p no:cacheprovider 2>&1 | tee "$LOGS/tests.log" || status=1 ;;
    # --report-api-errors no: cuda.bindings resolves every driver entry point it knows with cuGetProcAddress, and
    # the ones this driver lacks come back CUDA_ERROR_INVALID_VALUE (34 host-side "errors", seen 2026-11-25); the
    # kernels' own memory, race and sync errors are still reported and still fail the step.
    sanitize) for tool in memcheck racecheck synccheck; do
                # shellcheck disable=SC2086 - SANITIZE_RUNGS is a list of rung-id prefixes (default: every rung)
                compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 ci/small_shapes.py ${SANITIZE_RUNGS:-} 2>&1 | tail -5 | tee -a "$LOGS/sanitize.log" || status=1
              done ;;
    # the multicast probe (not a rung, so small_shapes.py does not reach it) under the three tools, at a small size
    probes)   for tool in memcheck racecheck synccheck; do
                timeout 300 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 -c "from \
helpers.timing import measure_tma_multicast; print(measure_tma_multicast(fraction_of_l2=0.01, batch_ms=0.05))" 2>&1 \
                  | tail -5 | tee -a "$LOGS/sanitize.log" || status=1
              done ;;
    ceilings) python3 -c "from helpers import CEILINGS, ceiling
for cid in CEILINGS: print(ceiling(cid))" 2>&1 | tee "$LOGS/ceilings.log" || status=1 ;;
    # All four rows (10_beyond_cublas and 12_fp8 at 4096 and 8192) in one call, each recorded even when another
    # fails; ncu with --cache-control none (the harness never flushes). Timed at 39 s before the cuBLASLt candidates
    # (up to 7 per Matmul, 14 for FP8) joined the rounds: expect somewhat more.
    crosscheck) python3 ci/crosscheck.py 2>&1 | tee "$LOGS/crosscheck.log" || status=1 ;;
    banks)    python3 ci/bank_conflicts.py 2>&1 | tee "$LOGS/banks.log" || status=1 ;;
    # shellcheck disable=SC2086 - L2_IDS: only these rungs (default: all of chapter 10's, 09, 12 and cuBLAS)
    l2)       python3 ci/l2_schedule.py ${L2_IDS:-} 2>&1 | tee "$LOGS/l2.log" || status=1 ;;
    tune)     python3 ci/tune.py 2>&1 | tee "$LOGS/tune.log" || status=1 ;;
    # then chapter 09's 128 x 320 tile, with and without setmaxnreg, at sizes that both its tile and 256 divide
    ladder)   python3 -m helpers ladder --all --n 4096 8192 --plot "$LOGS/climb.png" 2>&1 | tee "$LOGS/ladder.log" \
                || status=1
              python3 -m helpers ladder --n 5120 10240 --rungs 08_same_tile 09_setmaxnreg 09_wide_spill 09_wide 2>&1 \
                | tee -a "$LOGS/ladder.log" || status=1 ;;
    # chapter 10's PINGPONG switch, an experiment outside the run (results/pingpong.json): sanitized at small shapes,
    # then checked, timed beside the cooperative kernel and cuBLAS at every shape, and traced
    pingpong) for tool in memcheck racecheck synccheck; do
                for which in "" tile128 single issue; do
                  for size in small mid; do
                    # shellcheck disable=SC2086 - $which is one word or none
                    compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 ci/pingpong.py \
                      check $size $which 2>&1 | tail -4 | tee -a "$LOGS/sanitize.log" || status=1
                  done
                done
              done
              { python3 ci/pingpong.py check \
                  && python3 ci/pingpong.py time trace profile control square single issue; } 2>&1 \
                | tee "$LOGS/pingpong.log" || status=1 ;;
    # ci/splitk.py's experiment, outside the run (results/splitk.json): sanitized at small shapes, checked, timed
    splitk)   for tool in memcheck racecheck synccheck; do
                compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 ci/splitk.py check \
                  small 2>&1 | tail -4 | tee -a "$LOGS/sanitize.log" || status=1
              done
              python3 ci/splitk.py 2>&1 | tee "$LOGS/splitk.log" || status=1 ;;
    # ci/fp8_promoted.py's experiment, outside the run (results/fp8_promoted.json): the accumulator probe, timing
    # beside both cuBLASLt FP8 modes, Nsight Compute at 8192 (12_fp8_promoted is a rung: `tests` and `sanitize` cover it)
    fp8_promoted) python3 ci/fp8_promoted.py 2>&1 | tee "$LOGS/fp8_promoted.log" || status=1 ;;
    # ci/clusters.py's experiment, outside the run (results/clusters.json): the 1 x 2 and 2 x 2 builds sanitized at
    # small shapes, then checked, timed beside 1 x 1, 2 x 1 and cuBLAS, and profiled at 8192
    clusters) for tool in memcheck racecheck synccheck; do
                compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 ci/clusters.py check \
                  small 2>&1 | tail -4 | tee -a "$LOGS/sanitize.log" || status=1
              done
              python3 ci/clusters.py 2>&1 | tee "$LOGS/clusters.log" || status=1 ;;
    # ci/wgmma_issue.py's experiment, outside the run (results/wgmma_issue.json): the wgmma probe with one warpgroup
    wgmma_issue) python3 ci/wgmma_issue.py 2>&1 | tee "$LOGS/wgmma_issue.log" || status=1 ;;
    # ci/small_tiles.py's experiment, outside the run (results/small_tiles.json): one consumer on 64-row tiles
    small_tiles) python3 ci/small_tiles.py 2>&1 | tee "$LOGS/small_tiles.log" || status=1 ;;
    # ci/ladder_orders.py's experiment, outside the run (results/ladder_orders.json): chapter 10's five switches as a
    # lattice of 32 builds, timed together at 4096 and 8192, and every order of the steps read off it
    ladder_orders) python3 ci/ladder_orders.py 2>&1 | tee "$LOGS/ladder_orders.log" || status=1 ;;
    # ci/bf16_c_8192.py's experiment, outside the run (results/bf16_c_8192.json): why persistence comes before bf16
    # C. DRAM bytes per launch at 8192 of rung 09, 10_bf16_c_per_tile and their variants; timings at 4096 and 8192
    bf16_c_8192) python3 ci/bf16_c_8192.py profiles time causes order 2>&1 | tee "$LOGS/bf16_c_8192.log" \
                   || status=1 ;;
    notebooks) python3 ci/execute.py 2>&1 | tee "$LOGS/notebooks.log" || status=1 ;;
    prune)    python3 ci/prune_results.py "$GEMM_LADDER_RUN" 2>&1 | tee "$LOGS/prune.log" || status=1 ;;
    # shellcheck disable=SC2086 - PROFILE_ARGS is a list of options, split on purpose
    profile)  python3 -m helpers profile ${PROFILE_ARGS:---n 4096 8192} 2>&1 | tee "$LOGS/profile.log" || status=1 ;;
    *) echo "unknown step $step"; status=1 ;;
  esac
  echo "=== $step took $(( $(date +%s) - t0 )) s"
done
tar czf "$OUT/recorded.tgz" results chapters -C "$LOGS" . 2>/dev/null
exit $status
