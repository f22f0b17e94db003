"""CI gate outputs: SARIF 2.1.0, GitHub annotations, --exit-zero, baselines."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from synclint.cli import cli
from synclint.engine import check_source
from synclint.reporters.github import annotation
from synclint.rules import ALL_RULES

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
HAZARDS = (
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "loader = DataLoader(ds)\n"
    "for batch in loader: batch = batch.cuda(non_blocking=True)\n"
    "def f(m):\n"
    "    return torch.nonzero(m)\n"
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(HAZARDS)
    (tmp_path / "src" / "broken.py").write_text("def f(:\n")
    return tmp_path


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_sarif_is_valid_and_describes_rules_results_and_fixes(project):
    result = run("check", "--output-format", "sarif", "src")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)

    [run_] = document["runs"]
    rules = run_["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} == {"SL000", *(r.code for r in ALL_RULES)}
    nonzero = next(r for r in rules if r["id"] == "SL101")
    assert "## Why is this bad?" in nonzero["help"]["text"]

    by_rule = {r["ruleId"]: r for r in run_["results"]}
    assert set(by_rule) == {"SL000", "SL101", "SL402"}
    location = by_rule["SL101"]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 6, "startColumn": 12, "endLine": 6, "endColumn": 28}
    assert rules[by_rule["SL101"]["ruleIndex"]]["id"] == "SL101"
    assert by_rule["SL000"]["level"] == "error"
    [fix] = by_rule["SL402"]["fixes"]
    [replacement] = fix["artifactChanges"][0]["replacements"]
    assert "pin_memory=True" in replacement["insertedContent"]["text"]


def test_sarif_with_no_findings_is_valid(project):
    (project / "clean.py").write_text("x = 1\n")
    result = run("check", "--output-format", "sarif", "clean.py")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    assert document["runs"][0]["results"] == []


def test_github_annotations(project):
    result = run("check", "--output-format", "github", "src/train.py")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    assert lines[1].startswith("::warning file=src/train.py,line=6,col=12,endLine=6,endColumn=28,title=SL101::")
    assert "`torch.nonzero`" in lines[1]


def test_github_annotation_escapes_commands_and_marks_errors():
    [error] = check_source("def f(:\n", "a,b:c%.py")
    assert annotation(error).startswith("::error file=a%2Cb%3Ac%25.py,")
    [finding] = check_source("import torch\ndef f(m):\n    return torch.nonzero(m)\n", "x.py")
    assert annotation(replace(finding, message="a\nb%")).endswith("title=SL101::a%0Ab%25")


def test_exit_zero(project):
    assert run("check", "--exit-zero", "src").exit_code == 0


def test_baseline_reports_only_new_findings_and_survives_line_shifts(project):
    written = run("check", "--write-baseline", "baseline.json", "src")
    assert written.exit_code == 0
    recorded = json.loads((project / "baseline.json").read_text())
    assert {e["code"] for e in recorded["findings"]} == {"SL101", "SL402"}  # never SL000
    (project / "src" / "broken.py").unlink()
    assert run("check", "--baseline", "baseline.json", "src").exit_code == 0

    # Unrelated edits move every line; a second identical hazard is new.
    shifted = '"""Docs."""\n\n' + HAZARDS.replace("def f(m):", "# note\ndef f(m):") + "    torch.nonzero(m)\n"
    (project / "src" / "train.py").write_text(shifted)
    result = run("check", "--baseline", "baseline.json", "--output-format", "json", "src")
    assert result.exit_code == 1
    [new] = json.loads(result.stdout)
    assert (new["code"], new["line"]) == ("SL101", 10)


def test_baseline_is_anchored_at_its_own_directory(project, monkeypatch):
    (project / "src" / "broken.py").unlink()
    assert run("check", "--write-baseline", "baseline.json", "src").exit_code == 0
    monkeypatch.chdir(project / "src")
    assert run("check", "--baseline", "../baseline.json", ".").exit_code == 0
    assert run("check", "--baseline", str(project / "baseline.json"), str(project / "src")).exit_code == 0


def test_unreadable_baseline_is_a_usage_error(project):
    (project / "bad.json").write_text("[]")
    assert run("check", "--baseline", "bad.json", "src").exit_code == 2
    assert run("check", "--baseline", "missing.json", "src").exit_code == 2


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell):
    result = run("completion", shell)
    assert result.exit_code == 0
    assert "_SYNCLINT_COMPLETE" in result.stdout


def test_completion_completes_subcommands_and_formats(monkeypatch):
    from click.shell_completion import ShellComplete

    complete = ShellComplete(cli, {}, "synclint", "_SYNCLINT_COMPLETE")
    assert {"check", "fix", "rule", "rules", "completion"} <= {c.value for c in complete.get_completions([], "")}
    formats = {c.value for c in complete.get_completions(["check", "--output-format"], "")}
    assert formats == {
        "full", "concise", "text", "json", "json-lines", "junit", "gitlab", "pylint", "rdjson", "sarif", "github",
    }
