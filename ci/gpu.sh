#!/usr/bin/env bash
# Everything that needs the GPU (a Hopper one: H100 or H200), in one go: GPU tests, sanitizers, the live ladder and
# ceilings, and the chapter notebooks executed in place (their outputs are what the book shows). Each step is one command: pytest,
# `python3 -m helpers ...` or `python3 -m tools.NAME` (tools/: each has --help). Usage:
#   bash ci/gpu.sh [tests] [sanitize] [probes] [ceilings] [crosscheck] [banks] [l2] [ladder] [tune] [notebooks] [prune]
#                  [profile] [sites] [EXPERIMENT ...]
#   (default: tests sanitize ceilings crosscheck banks l2 ladder tune notebooks prune; chapters 10 and 12 replay
#   what `tune` records). EXPERIMENT is a folder of experiments/ with a run.sh (e.g. pingpong, splitk, clusters):
#   it runs `bash experiments/EXPERIMENT/run.sh LOGDIR`, outside the run's default steps.
# Planning a call (10 minutes at most; a machine idle for 30 s is given back): on the H100 the steps take about
#   tests 110 s, sanitize 190 s (every rung), ceilings 20 s, crosscheck 40 s or more, banks 15 s, l2 110 s, ladder 135 s,
#   tune 45 s, notebooks 280 s. So run `tests sanitize ceilings crosscheck banks l2`, then `ladder tune notebooks
#   prune`, back to back with one GEMM_LADDER_RUN, copying results/ back into the tree between calls.
#   TESTS_K="ragged" runs only the GPU tests that pytest -k selects;
#   SANITIZE_RUNGS="07_ 10_bf16" sanitizes only the rungs whose ids start so (the kernels a change touched);
#   NOTEBOOKS="chapters/01_fp32_simt.ipynb ..." executes only those chapters; LADDER_ARGS="--rungs R --n 1024; ..." adds
#   ladder calls to the `ladder` step (other sizes and shapes).
#   Leave MPLBACKEND unset for `notebooks` (tools.execute drops it). Logs and a tarball of the results and
#   executed notebooks go to $OUT (or ./gpu-out).
# `profile` (asked for by name only): an Nsight Compute profile of every main-path rung at N = 4096 and 8192 (46 ncu
#   runs of roughly 5 to 15 s each, about 7 minutes), recorded as it goes. If it does not fit one call, split it
#   with PROFILE_ARGS (e.g. PROFILE_ARGS="--n 4096", then "--n 8192") under the same GEMM_LADDER_RUN: a profile
#   this run already took is reused, not taken again.
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
python3 -m tools.versions | tee -a "$LOGS/env.txt"
status=0
for step in $steps; do
  echo "=== $step"; t0=$(date +%s)
  case $step in
    # TESTS_K="ragged or 10_chip": only the GPU tests pytest's -k selects (the kernels a change touched)
    tests)    python3 -m pytest -q -m gpu tests -p no:cacheprovider ${TESTS_K:+-k "$TESTS_K"} 2>&1 | tee "$LOGS/tests.log" \
                || status=1 ;;
    # --report-api-errors no: cuda.bindings resolves every driver entry point it knows with cuGetProcAddress, and
    # the ones this driver lacks come back CUDA_ERROR_INVALID_VALUE (34 host-side "errors", seen 2026-11-25); the
    # kernels' own memory, race and sync errors are still reported and still fail the step.
    sanitize) for tool in memcheck racecheck synccheck; do
                # shellcheck disable=SC2086 - SANITIZE_RUNGS is a list of rung-id prefixes (default: every rung)
                compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 -m tools.small_shapes ${SANITIZE_RUNGS:-} 2>&1 | tail -5 | tee -a "$LOGS/sanitize.log" || status=1
              done ;;
    # the multicast probe (not a rung, so tools.small_shapes does not reach it) under the three tools, at a small size
    probes)   for tool in memcheck racecheck synccheck; do
                timeout 300 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 \
                  python3 -m tools.multicast_probe 2>&1 | tail -5 | tee -a "$LOGS/sanitize.log" || status=1
              done ;;
    ceilings) python3 -m tools.ceilings 2>&1 | tee "$LOGS/ceilings.log" || status=1 ;;
    # All eight rows (10_chip, 10_pdl, 10_overlap and 12_fp8 at 4096 and 8192) in one call, each recorded even when another
    # fails; ncu with --cache-control none (the harness never flushes).
    # shellcheck disable=SC2086 - CROSSCHECK_ARGS: rungs and sizes (default: the final rungs at 4096 and 8192)
    crosscheck) python3 -m tools.crosscheck ${CROSSCHECK_ARGS:-} 2>&1 | tee "$LOGS/crosscheck.log" || status=1 ;;
    banks)    python3 -m tools.bank_conflicts 2>&1 | tee "$LOGS/banks.log" || status=1 ;;
    # shellcheck disable=SC2086 - L2_IDS: only these rungs (default: all of chapter 10's, 09, 12 and cuBLAS)
    l2)       python3 -m tools.l2_schedule ${L2_IDS:-} 2>&1 | tee "$LOGS/l2.log" || status=1 ;;
    tune)     python3 -m tools.tune 2>&1 | tee "$LOGS/tune.log" || status=1 ;;
    # then chapter 09's 128 x 320 tile, with and without setmaxnreg, at sizes that both its tile and 256 divide
    # LADDER_ARGS: more ladder calls, ';' between them (e.g. "--rungs 10_chip --n 1024 2048; --rungs 10_chip --shape
    # 8192 8192 1024"), run first: a baseline is timed beside the first row that needs it, so naming a fast rung
    # here keeps a slow one's rounds from setting it (slow kernels' rounds hold cuBLAS 2-3% lower). Run outside this
    # script, without the wheels' nvmath, a named run refuses to time a row (helpers/cublas.py).
    ladder)   IFS=';' read -ra extra <<< "${LADDER_ARGS:-}"
              for args in "${extra[@]}"; do
                # shellcheck disable=SC2086 - each entry is a list of ladder options, split on purpose
                [ -n "${args// }" ] && { python3 -m helpers ladder $args --plot '' 2>&1 | tee -a "$LOGS/ladder.log" \
                                           || status=1; }
              done
              python3 -m helpers ladder --all --n 4096 8192 --plot "$LOGS/climb.png" 2>&1 | tee -a "$LOGS/ladder.log" \
                || status=1
              python3 -m helpers ladder --n 5120 10240 --rungs 08_same_tile 09_setmaxnreg 09_wide_spill 09_wide 2>&1 \
                | tee -a "$LOGS/ladder.log" || status=1 ;;
    # shellcheck disable=SC2086 - NOTEBOOKS: only these chapters (paths; default: every chapter)
    notebooks) python3 -m tools.execute ${NOTEBOOKS:-} 2>&1 | tee "$LOGS/notebooks.log" || status=1 ;;
    prune)    python3 -m tools.prune_results "$GEMM_LADDER_RUN" 2>&1 | tee "$LOGS/prune.log" || status=1 ;;
    # where the warps wait (helpers.sites): Nsight Compute's source counters of every main-path rung at 4096 and
    # 8192, the Hopper rungs first; each source page is kept under sites/ in the logs, to be read again offline
    # shellcheck disable=SC2086 - SITES_ARGS is a list of rungs and options, split on purpose
    sites)    python3 -m tools.stall_sites --save "$LOGS/sites" ${SITES_ARGS:-} 2>&1 | tee "$LOGS/sites.log" || status=1 ;;
    # shellcheck disable=SC2086 - PROFILE_ARGS is a list of options, split on purpose
    profile)  python3 -m helpers profile ${PROFILE_ARGS:---n 4096 8192} 2>&1 | tee "$LOGS/profile.log" || status=1 ;;
    # an experiment (outside the run): its folder's run.sh, given the log directory
    *) if [ -f "experiments/$step/run.sh" ]; then
         bash "experiments/$step/run.sh" "$LOGS" || status=1
       else
         echo "unknown step $step (neither a step above nor a folder of experiments/ with a run.sh)"; status=1
       fi ;;
  esac
  echo "=== $step took $(( $(date +%s) - t0 )) s"
done
# the experiments' records (experiments/*/) come back with the run's results and the executed chapters
tar czf "$OUT/recorded.tgz" --exclude=__pycache__ results chapters experiments -C "$LOGS" . 2>/dev/null
exit $status
