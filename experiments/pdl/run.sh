#!/usr/bin/env bash
# The programmatic-dependent-launch experiment on the GPU host (ci/gpu.sh's step `pdl`), logs to $1: the PDL build
# sanitized at small shapes, one launch at a time and back to back (memcheck, racecheck, synccheck), then checked
# (with the no-wait control) and timed beside rung 10 and cuBLAS. Exits non-zero on any failure. PDL_TOOLS and
# PDL_PARTS split it across calls (e.g. PDL_PARTS=" " for the sanitizers alone, PDL_TOOLS=" " for the parts alone).
set -uo pipefail
LOGS=${1:?usage: run.sh LOG_DIR}
LOGS=$(mkdir -p "$LOGS" && cd "$LOGS" && pwd) || exit 1  # absolute: the script moves to the repository root
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
status=0
for tool in ${PDL_TOOLS-memcheck racecheck synccheck}; do
  timeout 300 compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 9 \
    python3 -m experiments.pdl.run check small 2>&1 | tail -4 | tee -a "$LOGS/sanitize.log" || status=1
done
parts=${PDL_PARTS-check time}
if [ -n "${parts// }" ]; then
  # shellcheck disable=SC2086 - the parts are separate arguments
  timeout 600 python3 -m experiments.pdl.run $parts 2>&1 | tee "$LOGS/pdl.log" || status=1
fi
exit $status
