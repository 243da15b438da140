#!/usr/bin/env bash
# Why persistence comes before bf16 C: DRAM bytes at 8192 of rung 09, 10_bf16_c_per_tile and variants; timings
# (ci/gpu.sh's step `bf16_c_8192`), logs to $1. Exits non-zero on failure.
set -uo pipefail
LOGS=${1:?usage: run.sh LOG_DIR}
cd "$(dirname "$0")/../.."
python3 -m experiments.bf16_c_8192.run profiles time causes order 2>&1 | tee "$LOGS/bf16_c_8192.log"
