#!/usr/bin/env bash
# Promoted FP8 accumulation: checked, the accumulator probe, timed beside both cuBLASLt FP8 modes, profiled
# (ci/gpu.sh's step `fp8_promoted`), logs to $1. Exits non-zero on failure.
set -uo pipefail
LOGS=${1:?usage: run.sh LOG_DIR}
cd "$(dirname "$0")/../.."
python3 -m experiments.fp8_promoted.run 2>&1 | tee "$LOGS/fp8_promoted.log"
