#!/usr/bin/env bash
# The ping-pong experiment on the GPU host (ci/gpu.sh's step `pingpong`), logs to $1: every build sanitized at
# small shapes (memcheck, racecheck, synccheck), then checked, timed beside the cooperative kernel and cuBLAS at every
# shape, traced, profiled, and the follow-ups. Exits non-zero on any failure.
set -uo pipefail
LOGS=${1:?usage: run.sh LOG_DIR}
cd "$(dirname "$0")/../.."
status=0
for tool in memcheck racecheck synccheck; do
  for which in "" tile128 single issue; do
    for size in small mid; do
      # shellcheck disable=SC2086 - $which is one word or none
      compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 -m experiments.pingpong.run \
        check $size $which 2>&1 | tail -4 | tee -a "$LOGS/sanitize.log" || status=1
    done
  done
done
{ python3 -m experiments.pingpong.run check \
    && python3 -m experiments.pingpong.run time trace profile control square single issue; } 2>&1 \
  | tee "$LOGS/pingpong.log" || status=1
exit $status
