#!/usr/bin/env bash
# The stream-K experiment on the GPU host (ci/gpu.sh's step `streamk`), logs to $1: the stream-K builds
# sanitized at small shapes (memcheck, racecheck, synccheck), then checked, timed beside rung 10 and cuBLAS, and
# profiled at 4096 and 8192. Exits non-zero on any failure.
set -uo pipefail
LOGS=${1:?usage: run.sh LOG_DIR}
cd "$(dirname "$0")/../.."
status=0
for tool in memcheck racecheck synccheck; do
  compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 -m experiments.streamk.run check \
    small 2>&1 | tail -4 | tee -a "$LOGS/sanitize.log" || status=1
done
python3 -m experiments.streamk.run ${STREAMK_PARTS:-check time profile} 2>&1 | tee "$LOGS/streamk.log" || status=1
exit $status
