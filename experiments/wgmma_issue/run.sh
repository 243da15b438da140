#!/usr/bin/env bash
# Chapter 00's wgmma probe with one warpgroup per SM or two, in the same rounds, on the GPU host
# (ci/gpu.sh's step `wgmma_issue`), logs to $1. Exits non-zero on failure.
set -uo pipefail
LOGS=${1:?usage: run.sh LOG_DIR}
cd "$(dirname "$0")/../.."
python3 -m experiments.wgmma_issue.run 2>&1 | tee "$LOGS/wgmma_issue.log"
