#!/usr/bin/env bash
# The test command (README): unit, SASS and simulator tests, GPU tests (skipped with their reason when no GPU
# is present), nbval on every chapter in replay mode, and the book built with warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
export MPLBACKEND=Agg PYTHONUNBUFFERED=1
# Notebooks are checked in replay mode so a test run never overwrites the recorded H100 results.
GEMM_LADDER_REPLAY=1 python3 -m pytest -p no:cacheprovider -q tests chapters --nbval-lax
rm -rf _build
jupyter-book build . -W --keep-going -q
test -s _build/html/index.html && echo "book built: _build/html/index.html"
