import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped with the reason when none is present")


def pytest_collection_modifyitems(config, items):
    from helpers.gpu import why_not_live
    reason = why_not_live()
    if reason:
        skip = pytest.mark.skip(reason=f"GPU test: {reason}")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture
def tmp_results(tmp_path, monkeypatch):
    """Point recording at a scratch file so tests never touch results/."""
    path = tmp_path / "results.json"
    monkeypatch.setenv("GEMM_LADDER_RESULTS", str(path))
    return path
