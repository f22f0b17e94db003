"""The pytest plugin: the ``no_sync`` marker and the ``sync_watch`` fixture.

The inner pytest runs in a subprocess: an in-process rerun would re-import torch
submodules that register operator libraries, which torch refuses twice.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
pytest.importorskip("torch")

REPO = str(Path(__file__).resolve().parent.parent)


@pytest.fixture(autouse=True)
def synclint_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner pytest runs elsewhere; let it import this checkout's synclint."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    # Load the plugin explicitly (``-p``) whether or not the installed entry point
    # would autoload it: loading it twice is an error.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def test_marker_and_fixture(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # The fixture watches the device that "auto" picks: hide a GPU so that it is the
    # simulated one, where these CPU tensors stand for device tensors.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    pytester.makepyfile(
        test_inner="""
        import pytest, torch

        @pytest.mark.no_sync(device="cpu")
        def test_syncs():
            torch.arange(3).nonzero()

        @pytest.mark.no_sync(device="cpu")
        def test_clean():
            x = torch.arange(3)
            torch.where(x > 1, x, 0)

        def test_unmarked_may_sync():
            torch.arange(3).nonzero()

        def test_watch_fixture(sync_watch):
            torch.tensor(1.0).item()
            torch.tensor([1, 2]).tolist()
            assert [e.op for e in sync_watch.events] == ["Tensor.item", "Tensor.tolist"]
        """
    )
    result = pytester.runpytest_subprocess("-p", "synclint.pytest_plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*SyncError: *test_inner.py:5: aten.nonzero.default *SL101*"])
    result.stdout.fnmatch_lines(["FAILED test_inner.py::test_syncs*"])


def test_sync_budget_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_budget="""
        import pytest, torch

        @pytest.mark.sync_budget(1, device="cpu")
        def test_within():
            torch.tensor(1.0).item()

        @pytest.mark.sync_budget(1, device="cpu")
        def test_over():
            x = torch.arange(3)
            x.nonzero()
            x.sum().item()
        """
    )
    result = pytester.runpytest_subprocess("-p", "synclint.pytest_plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*SyncBudgetExceeded: 2 syncs, budget 1:*"])


def test_marker_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-p", "synclint.pytest_plugin", "--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.no_sync*"])
    result.stdout.fnmatch_lines(["@pytest.mark.sync_budget*"])


def test_entry_point_declares_the_plugin() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(REPO) / "pyproject.toml").read_text())
    assert pyproject["project"]["entry-points"]["pytest11"] == {"synclint": "synclint.pytest_plugin"}
