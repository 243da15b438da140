#!/usr/bin/env bash
# The overlapped-epilogue experiment on the GPU host (ci/gpu.sh's step `overlap`), logs to $1: the OVERLAP builds
# sanitized at small shapes (memcheck, racecheck, synccheck), then checked, timed beside rung 10 and cuBLAS, and
# profiled at 4096 and 8192. OVERLAP_PARTS="fp8" (or "steps") runs only that part (its builds sanitized the same way).
# Exits non-zero on any failure.
set -uo pipefail
LOGS=${1:?usage: run.sh LOG_DIR}
cd "$(dirname "$0")/../.."
status=0
for tool in memcheck racecheck synccheck; do
  # shellcheck disable=SC2086 - the parts' checks at their small shapes: check and steps (rung 10's builds), fp8 (12's)
  compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 -m experiments.overlap.run \
    $(echo "${OVERLAP_PARTS:-check}" | grep -ow 'check\|fp8\|steps') small 2>&1 | tail -4 | tee -a "$LOGS/sanitize.log" || status=1
done
python3 -m experiments.overlap.run ${OVERLAP_PARTS:-check time profile} 2>&1 | tee "$LOGS/overlap.log" || status=1
exit $status
