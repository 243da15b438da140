#!/usr/bin/env bash
# The split-K experiment on the GPU host (ci/gpu.sh's step `splitk`), logs to $1: the split builds sanitized at small
# shapes (memcheck, racecheck, synccheck), then checked and timed. Exits non-zero on any failure.
set -uo pipefail
LOGS=${1:?usage: run.sh LOG_DIR}
cd "$(dirname "$0")/../.."
status=0
for tool in memcheck racecheck synccheck; do
  compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 -m experiments.splitk.run check \
    small 2>&1 | tail -4 | tee -a "$LOGS/sanitize.log" || status=1
done
python3 -m experiments.splitk.run 2>&1 | tee "$LOGS/splitk.log" || status=1
exit $status
