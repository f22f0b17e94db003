"""The hooks in .pre-commit-hooks.yaml, run by the real pre-commit against this checkout.

pre-commit installs synclint from this repository's HEAD into its own virtual
environment (libcst and click from PyPI, never torch), so the hook files must
be committed: in CI they are; locally, commit before running this test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).parents[1]
HAZARD = "import torch\n\n\ndef count(m):\n    return torch.nonzero(m)\n"
CLEAN = "import torch\n\n\ndef count(m):\n    return torch.count_nonzero(m)\n"
# The loader's batches copied with `non_blocking=True` where it is iterated: SL402 reports
# the copy (the loader's own line is cold since c729170) and its fix pins the loader.
FIXABLE = (
    "import torch\nfrom torch.utils.data import DataLoader\n\n"
    "loader = DataLoader(dataset, batch_size=8)\nfor batch in loader:\n    batch = batch.cuda(non_blocking=True)\n"
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(("git", *args), cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory) -> Path:
    """One hook environment for the whole module: pre-commit installs it once."""
    if (CHECKOUT / ".git").exists() is False:
        pytest.skip("the checkout under test is not a git repository")
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        pytest.skip("pre-commit is not installed")
    head = _git("rev-parse", "HEAD", cwd=CHECKOUT)
    committed = _git("ls-tree", "--name-only", head, ".pre-commit-hooks.yaml", cwd=CHECKOUT)
    assert committed, "commit .pre-commit-hooks.yaml: pre-commit installs the hooks from HEAD"
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def project(tmp_path, pre_commit_home):
    """A git repository whose .pre-commit-config.yaml points at this checkout's HEAD."""
    _git("init", "-q", cwd=tmp_path)
    head = _git("rev-parse", "HEAD", cwd=CHECKOUT)
    (tmp_path / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {CHECKOUT.resolve()}\n    rev: {head}\n"
        "    hooks:\n      - id: synclint\n      - id: synclint-fix\n"
    )
    return tmp_path


def _run_hook(project: Path, hook: str, *files: str, home: Path) -> subprocess.CompletedProcess:
    for name in files:
        _git("add", name, cwd=project)
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    return subprocess.run(
        (sys.executable, "-m", "pre_commit", "run", hook, "--files", *files),
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_check_hook_fails_on_a_hazard_and_passes_on_clean_code(project, pre_commit_home):
    (project / "hazard.py").write_text(HAZARD)
    (project / "clean.py").write_text(CLEAN)

    failed = _run_hook(project, "synclint", "hazard.py", home=pre_commit_home)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "hazard.py:5:12: SL101" in failed.stdout

    passed = _run_hook(project, "synclint", "clean.py", home=pre_commit_home)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout
    # The hook environment holds synclint's own dependencies only: torch is an optional extra.
    assert not list(pre_commit_home.glob("*/py_env-*/lib/python*/site-packages/torch"))
    assert list(pre_commit_home.glob("*/py_env-*/lib/python*/site-packages/libcst"))


def test_check_hook_runs_on_notebooks(project, pre_commit_home):
    import json

    notebook = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["%pip install x\n", "import torch"]},
            {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["def f(x):\n", "    return x.nonzero()"]},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (project / "nb.ipynb").write_text(json.dumps(notebook, indent=1))
    result = _run_hook(project, "synclint", "nb.ipynb", home=pre_commit_home)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "nb.ipynb:cell_2:2:12: SL101" in result.stdout


def test_fix_hook_rewrites_the_file(project, pre_commit_home):
    target = project / "train.py"
    target.write_text(FIXABLE)

    result = _run_hook(project, "synclint-fix", "train.py", home=pre_commit_home)

    # pre-commit fails a hook that modified files, so the user reviews the change.
    assert result.returncode == 1, result.stdout + result.stderr
    assert "files were modified by this hook" in result.stdout
    assert "DataLoader(dataset, batch_size=8, pin_memory=True)" in target.read_text()
    again = _run_hook(project, "synclint-fix", "train.py", home=pre_commit_home)
    assert again.returncode == 0, again.stdout + again.stderr
