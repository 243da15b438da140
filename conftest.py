"""Shared by every pytest run in this repository, `pytest chapters` alone included (tests/conftest.py holds the rest)."""
import pytest


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the xdist_group marks added here
def pytest_collection_modifyitems(config, items):
    # nbval runs a notebook's cells in order in one kernel: under `pytest -n N --dist loadgroup` they must stay on
    # one worker, so each notebook is one group (the other tests carry no group and spread over the workers).
    for item in items:
        if type(item).__name__ == "IPyNbCell":
            item.add_marker(pytest.mark.xdist_group(item.parent.nodeid))
