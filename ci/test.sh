#!/usr/bin/env bash
# The test command (README): unit, SASS and simulator tests, GPU tests (skipped with their reason when no GPU
# is present), nbval on every chapter in replay mode, the legibility sweeps, and the book built with warnings as
# errors, then the built book and a reader's JupyterLab in a browser.
set -euo pipefail
cd "$(dirname "$0")/.."
export MPLBACKEND=Agg PYTHONUNBUFFERED=1
# The browser test needs Debian's chromium and chromedriver; install them once if this machine lacks them.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  sudo=$([ "$(id -u)" = 0 ] || echo sudo)
  { $sudo apt-get update -q && $sudo apt-get install -y -q chromium chromium-driver; } > /tmp/gemm-ladder-apt.log 2>&1 \
    || { tail -20 /tmp/gemm-ladder-apt.log; echo "could not install chromium for the browser test"; exit 1; }
fi
# Notebooks are checked in replay mode so a test run never overwrites the recorded H100 results.
# -n auto --dist loadgroup: every core runs tests; each notebook is one group (tests/conftest.py), so its cells stay in order
GEMM_LADDER_REPLAY=1 GEMM_LADDER_CHECK_FIGURES=1 python3 -m pytest -p no:cacheprovider -q -n auto --dist loadgroup \
  -m "not sweep" tests chapters --nbval-lax
# The legibility sweeps (marked `sweep`): every figure the helpers draw, drawn and checked, seconds each
GEMM_LADDER_REPLAY=1 python3 -m pytest -p no:cacheprovider -q -n auto -m sweep tests
rm -rf _build images
# The build draws the landing page's climb chart from the recorded results (_ext/landing_chart.py): a plain build works.
jupyter-book build . -W --keep-going -q
test -s _build/html/index.html && echo "book built: _build/html/index.html"
# The built site in a real headless Chromium: pages load, figures render, internal links resolve. Then a reader's
# JupyterLab: chapter 01 opened, every cell run in replay mode, the explorer widget moved and redrawn.
python3 -m pytest -p no:cacheprovider -q ci/test_book.py ci/test_lab.py
