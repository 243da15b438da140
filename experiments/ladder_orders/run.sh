#!/usr/bin/env bash
# Chapter 10's five switches as a lattice of 32 builds, checked, timed at 4096 and 8192, every order read off
# (ci/gpu.sh's step `ladder_orders`), logs to $1. Exits non-zero on failure.
set -uo pipefail
LOGS=${1:?usage: run.sh LOG_DIR}
cd "$(dirname "$0")/../.."
python3 -m experiments.ladder_orders.run 2>&1 | tee "$LOGS/ladder_orders.log"
