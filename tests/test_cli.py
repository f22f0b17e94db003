"""The command line contract: output formats, exit codes 0/1/2, fix, rule docs."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from synclint.cli import cli

HAZARD = "import torch\n\n\ndef f(x: torch.Tensor):\n    return x.nonzero()\n"
CLEAN = "import torch\n\n\ndef f(x: torch.Tensor):\n    return torch.where(x > 0, x, 0)\n"
# The receiver is annotated: `non_blocking=True` is added only to known tensors (issue 12).
LOADER = "import torch\nfor x, y in loader:\n    x: torch.Tensor\n    x = x.to(device)\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "hazard.py").write_text(HAZARD)
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN)
    (tmp_path / "pkg" / "broken.py").write_text("def f(:\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "skipped.py").write_text(HAZARD)
    return tmp_path


def run(*args: str, cwd: Path | None = None):
    runner = CliRunner()
    if cwd is None:
        return runner.invoke(cli, list(args))
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return runner.invoke(cli, list(args))
    finally:
        os.chdir(old)


def test_text_output_is_ruff_like(tmp_path: Path):
    (tmp_path / "m.py").write_text(HAZARD)
    result = run("check", str(tmp_path / "m.py"))
    assert result.exit_code == 1
    first, bar, source, carets = result.output.splitlines()[:4]
    assert first.startswith(f"{tmp_path / 'm.py'}:5:12: SL101 ")
    assert source == "5 |     return x.nonzero()"
    assert carets == "  |            ^^^^^^^^^^^"
    assert "Found 1 sync hazard." in result.output


def test_the_summary_counts_unreadable_files_and_notebook_cells_apart(tmp_path: Path):
    # A notebook's cells that do not parse are skipped one by one; the rest of it is checked.
    (tmp_path / "broken.py").write_text("def f(:\n")
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}
             for source in ("bash ./run.sh\n", "x = (\n", "import torch\n")]
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    lines = run("check", "--no-cache", str(tmp_path)).output.splitlines()
    assert "1 file could not be checked (SL000)." in lines
    assert "2 notebook cells could not be checked and were skipped (SL000)." in lines


def test_exit_codes(tree: Path):
    assert run("check", str(tree / "pkg" / "clean.py")).exit_code == 0
    assert run("check", str(tree / "pkg" / "hazard.py")).exit_code == 1
    assert run("check", "--exit-zero", str(tree / "pkg" / "hazard.py")).exit_code == 0
    assert run("check", str(tree / "missing")).exit_code == 2
    assert run("check", "--select", "SL999", str(tree)).exit_code == 2


def test_json_is_valid_with_a_broken_file_and_skips_excludes(tree: Path):
    result = run("check", "--output-format", "json", str(tree))
    data = json.loads(result.output)
    assert result.exit_code == 1
    assert sorted((Path(d["path"]).name, d["code"]) for d in data) == [("broken.py", "SL000"), ("hazard.py", "SL101")]
    hazard = next(d for d in data if d["code"] == "SL101")
    assert set(hazard) == {
        "path", "line", "column", "end_line", "end_column", "code", "name", "message", "severity", "fix",
        "context", "why",
    }
    assert (hazard["line"], hazard["column"], hazard["end_line"], hazard["end_column"]) == (5, 12, 5, 23)


def test_json_fix_record(tmp_path: Path):
    (tmp_path / "m.py").write_text(LOADER)
    (finding,) = json.loads(run("check", "--output-format", "json", str(tmp_path)).output)
    assert finding["fix"] == {
        "applicability": "safe",
        "message": "Pass `non_blocking=True`",
        "edits": [{"line": 4, "column": 9, "end_line": 4, "end_column": 21, "content": "x.to(device, non_blocking=True)"}],
    }


def test_statistics(tree: Path):
    result = run("check", "--statistics", str(tree))
    assert result.output.splitlines() == ["    1\tSL000\t    syntax-error", "    1\tSL101\t    nonzero"]


def test_config_from_pyproject(tree: Path):
    (tree / "pyproject.toml").write_text('[tool.synclint]\nignore = ["SL101"]\n')
    assert run("check", "pkg/hazard.py", cwd=tree).exit_code == 0


def test_fix_shows_diff_and_exits_1_then_apply_writes(tmp_path: Path):
    path = tmp_path / "train.py"
    path.write_text(LOADER.replace("\n", "\r\n"))
    path.chmod(0o754)
    diff = run("fix", str(path))
    assert diff.exit_code == 1
    assert "-    x = x.to(device)" in diff.output and "+    x = x.to(device, non_blocking=True)" in diff.output
    assert path.read_bytes() == LOADER.replace("\n", "\r\n").encode()  # diff mode writes nothing
    applied = run("fix", "--apply", str(path))
    assert applied.exit_code == 0
    assert path.read_bytes() == LOADER.replace("x.to(device)", "x.to(device, non_blocking=True)").replace("\n", "\r\n").encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o754
    assert run("fix", str(path)).exit_code == 0  # idempotent: nothing left


def test_check_fix_is_fix_apply(tmp_path: Path):
    path = tmp_path / "train.py"
    path.write_text(LOADER)
    assert run("check", "--fix", str(path)).exit_code == 0
    assert "non_blocking=True" in path.read_text()


def test_fix_never_touches_unparsable_files(tmp_path: Path):
    path = tmp_path / "broken.py"
    path.write_text("def f(:\n")
    result = run("fix", "--apply", str(path))
    assert result.exit_code == 2
    assert path.read_text() == "def f(:\n"


def test_rule_prints_docs_and_rules_lists_all():
    doc = run("rule", "SL103")
    assert doc.exit_code == 0
    assert doc.output.startswith("# boolean-mask (SL103)")
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in doc.output
    assert run("rule", "nonzero").exit_code == 0
    assert run("rule", "SL999").exit_code == 2
    listing = run("rules").output.splitlines()
    assert [line.split()[0] for line in listing] == [
        "SL101", "SL102", "SL103", "SL104", "SL105", "SL201", "SL202",
        "SL301", "SL302", "SL401", "SL402", "SL403", "SL404", "SL501",
    ]


def test_version():
    assert run("--version").output.strip() == "synclint, version 0.1.0"


def test_statistics_only_with_text_output(tree: Path):
    assert run("check", "--statistics", "--output-format", "json", str(tree)).exit_code == 2


def test_rule_codes_table_matches_the_registry():
    from synclint.codes import RULE_CODES
    from synclint.rules import ALL_RULES

    assert RULE_CODES == tuple(rule.code for rule in ALL_RULES)


def test_a_fully_cached_check_never_imports_libcst(tmp_path: Path):
    import subprocess
    import sys

    (tmp_path / "m.py").write_text(HAZARD)
    env = {**os.environ, "SYNCLINT_CACHE_DIR": str(tmp_path / "cache")}
    probe = (
        # (one process: with two, the first run checks in the early worker, whose libcst this one lacks)
        "import sys, runpy; sys.argv = ['synclint', 'check', '--exit-zero', '--jobs', '1', sys.argv[1]];\n"
        "try:\n    runpy.run_module('synclint', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('importlib.metadata' in sys.modules)\n"  # (libcst's build is read from its _version.py)
        "print('libcst' in sys.modules)"
    )
    runs = [
        subprocess.run([sys.executable, "-c", probe, str(tmp_path / "m.py")], env=env, capture_output=True, text=True, check=True)
        for _ in range(2)
    ]
    assert [r.stdout.strip().splitlines()[-1] for r in runs] == ["True", "False"]
    assert runs[1].stdout.strip().splitlines()[-2] == "False"


# Review of c729170: a loader handed on is cold (its line runs once); its fix is applied
# only with --include-cold, so every hint that names the fixing command says so.
HANDED_ON = ("import torch\nfrom torch.utils.data import DataLoader\n\n\ndef make(ds):\n    return DataLoader(ds)\n\n\n"
             "def step(b):\n    return b.to('cuda', non_blocking=True)\n")


def test_statistics_hint_names_include_cold_for_cold_fixes(tmp_path: Path):
    path = tmp_path / "data.py"
    path.write_text(HANDED_ON)
    result = run("check", "--no-cache", "--include-cold", "--statistics", str(path))
    assert "SL402\t[*] unpinned-loader" in result.output
    assert "[*] fixable with `synclint check --fix --include-cold`" in result.output
    # Without cold findings the hint is the plain one.
    hot = tmp_path / "train.py"
    hot.write_text(LOADER)
    assert "[*] fixable with `synclint check --fix`;" in run("check", "--no-cache", "--statistics", str(hot)).output


@pytest.mark.parametrize("command", ["fix", "check"])
def test_include_cold_help_says_it_also_fixes(command):
    # `fix` takes --include-cold since c729170, where it fixes cold findings (and reports none).
    help_text = " ".join(run(command, "--help").output.split())
    described = help_text.split("--include-cold", 1)[1].split(" --", 1)[0]
    assert "fix" in described, described
