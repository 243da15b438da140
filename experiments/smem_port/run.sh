#!/usr/bin/env bash
# The shared-memory port probe on the GPU host (ci/gpu.sh's step `smem_port`), logs to $1: a short launch of every
# build (each finishes, its fills land), then every build timed on all SMs and on a quarter of them, in interleaved
# rounds, with the kernel's own clock stamps. About a minute. Exits non-zero on failure.
set -uo pipefail
LOGS=${1:?usage: run.sh LOG_DIR}
cd "$(dirname "$0")/../.."
python3 -m experiments.smem_port.run 2>&1 | tee "$LOGS/smem_port.log"
