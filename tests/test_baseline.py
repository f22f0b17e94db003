"""Baselines hide only what they recorded: never a broken file, never an old line as new."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from synclint.baseline import new_findings, write_baseline
from synclint.cli import cli
from synclint.config import Settings
from synclint.runner import RunOptions, lint_paths

TRAIN = (
    "import torch\n"
    "\n"
    "def step(model, x: torch.Tensor):\n"
    "    loss = model(x)\n"
    "    value = loss.item()\n"
    "    return value\n"
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def _lint(root: Path):
    return lint_paths([root], Settings(root=root), RunOptions(jobs=1, use_cache=False))


def test_a_baselined_sl000_does_not_hide_the_broken_file(project):
    (project / "broken.py").write_text("def f(:\n")
    assert run("check", "--write-baseline", "baseline.json", ".").exit_code == 0
    recorded = json.loads((project / "baseline.json").read_text())["findings"]
    assert [e["code"] for e in recorded] == ["SL201"]
    result = run("check", "--baseline", "baseline.json", ".")
    assert result.exit_code == 1 and "broken.py:1:" in result.output and "SL000" in result.output


def test_an_old_baseline_that_recorded_sl000_still_reports_it(project):
    (project / "broken.py").write_text("def f(:\n")
    findings = _lint(project)
    from synclint.baseline import fingerprints

    version_1 = {
        "synclint": "0.1.0", "version": 1,
        "findings": [{"fingerprint": fp, "code": f.code, "path": f.path, "line": f.line}
                     for f, fp in zip(findings, fingerprints(findings, project))],
    }
    (project / "old.json").write_text(json.dumps(version_1))
    assert [f.code for f in new_findings(findings, project / "old.json")] == ["SL000"]


def test_an_identical_hazard_line_added_above_is_the_new_one(project):
    write_baseline(project / "baseline.json", _lint(project))
    (project / "train.py").write_text(
        "import torch\n"
        "\n"
        "def evaluate(model, x: torch.Tensor):\n"
        "    out = model(x)\n"
        "    value = loss.item()\n"  # the same hazard line, added above the baselined one
        "    return out\n"
        "\n" + TRAIN.split("\n", 2)[2]
    )
    current = _lint(project)
    assert [(f.code, f.line) for f in current] == [("SL201", 5), ("SL201", 10)]
    assert [(f.code, f.line) for f in new_findings(current, project / "baseline.json")] == [("SL201", 5)]


def test_an_identical_hazard_line_added_below_is_the_new_one(project):
    write_baseline(project / "baseline.json", _lint(project))
    (project / "train.py").write_text(
        TRAIN + "\n\ndef again(model, y: torch.Tensor):\n    loss = model(y) * 2\n    value = loss.item()\n    return 0\n"
    )
    current = _lint(project)
    assert [(f.code, f.line) for f in new_findings(current, project / "baseline.json")] == [("SL201", 11)]


def test_moved_and_reindented_findings_stay_matched(project):
    write_baseline(project / "baseline.json", _lint(project))
    (project / "train.py").write_text('"""Docs."""\n\n\n' + TRAIN.replace("    ", "        ").replace("def step", "if True:\n    def step"))
    assert new_findings(_lint(project), project / "baseline.json") == []


def test_write_baseline_into_a_missing_directory(project):
    result = run("check", "--write-baseline", "ci/baselines/synclint.json", ".")
    assert result.exit_code == 0, result.output
    assert run("check", "--baseline", "ci/baselines/synclint.json", ".").exit_code == 0


def test_an_unwritable_baseline_is_an_error_not_a_traceback(project):
    (project / "file").write_text("")
    result = run("check", "--write-baseline", "file/baseline.json", ".")
    assert result.exit_code == 2
    assert "cannot write the baseline" in result.output and "Traceback" not in result.output
