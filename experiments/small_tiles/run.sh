#!/usr/bin/env bash
# One consumer on 64-row tiles beside rung 10 and cuBLAS: checked, then timed, on the GPU host
# (ci/gpu.sh's step `small_tiles`), logs to $1. Exits non-zero on failure.
set -uo pipefail
LOGS=${1:?usage: run.sh LOG_DIR}
cd "$(dirname "$0")/../.."
python3 -m experiments.small_tiles.run 2>&1 | tee "$LOGS/small_tiles.log"
