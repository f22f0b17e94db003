"""Configuration like ruff: each file takes its closest configuration file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from synclint.cli import cli
from synclint.config import ConfigError, Configuration, Overrides, load_settings
from synclint.runner import RunOptions, lint_paths

# SL101 on line 5, SL201 on line 6.
HAZARD = "import torch\n\n\ndef f(x: torch.Tensor):\n    i = x.nonzero()\n    return i.item()\n"


def run(*args: str, cwd: Path | None = None):
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, list(args))
    finally:
        os.chdir(old)


def lint(*paths: str, cwd: Path, overrides: Overrides | None = None, config: str | None = None):
    """What `synclint check PATHS` finds from ``cwd`` (the CLI builds the same Configuration)."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        configuration = Configuration(overrides, Path(config) if config else None)
        # Cold findings too: tests/ is test code (cold), and these tests are about configuration.
        return lint_paths(paths, configuration, RunOptions(jobs=1, use_cache=False, include_cold=True))
    finally:
        os.chdir(old)


def codes_by_file(findings, root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for finding in findings:
        name = Path(os.path.abspath(root / finding.path if not os.path.isabs(finding.path) else finding.path))
        found.setdefault(name.relative_to(root).as_posix(), []).append(finding.code)
    return found


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\n\n[tool.synclint.per-file-ignores]\n"tests/*" = ["SL201"]\n'
    )
    for name in ("src/a.py", "sub/h.py", "sub/gen/g.py", "tests/test_a.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(HAZARD)
    (tmp_path / "sub" / "pyproject.toml").write_text(
        '[tool.synclint]\nignore = ["SL101"]\n[tool.synclint.per-file-ignores]\n"gen/*" = ["SL201"]\n'
    )
    return tmp_path


EXPECTED = {
    "src/a.py": ["SL101", "SL201"],
    "sub/h.py": ["SL201"],  # sub/pyproject.toml ignores SL101
    "tests/test_a.py": ["SL101"],  # the root's per-file-ignores, anchored at the root
}


@pytest.mark.parametrize("order", [("sub/h.py", "src", "tests"), ("src", "tests", "sub/h.py")])
def test_results_do_not_depend_on_argument_order(project, order):
    assert codes_by_file(lint(*order, cwd=project), project) == EXPECTED


def test_results_do_not_depend_on_the_working_directory(project):
    found = lint("test_a.py", cwd=project / "tests")
    assert [f.code for f in found] == ["SL101"]
    absolute = [str(project / p) for p in ("sub/h.py", "src", "tests")]
    assert codes_by_file(lint(*absolute, cwd=project / "sub"), project) == EXPECTED


def test_the_cli_resolves_configs_per_file(project):
    result = run("check", "--no-cache", "sub/h.py", "src", cwd=project)
    assert result.exit_code == 1
    assert "src/a.py:5:" in result.output and "SL101" in result.output.split("src/a.py:5:")[1].split("\n")[0]
    assert "sub/h.py:5:" not in result.output and "sub/h.py:6:" in result.output


def test_a_directory_search_uses_each_directory_s_closest_config(project):
    found = codes_by_file(lint(".", cwd=project), project)
    # Patterns of sub/pyproject.toml are relative to sub/: "gen/*" matches sub/gen/g.py.
    assert found == EXPECTED


def test_command_line_options_apply_on_top_of_every_config(project):
    found = codes_by_file(lint("src", "sub/h.py", cwd=project, overrides=Overrides(ignore=("SL201",))), project)
    assert found == {"src/a.py": ["SL101"]}  # sub keeps its own ignore of SL101


def test_config_option_applies_one_file_everywhere(project):
    (project / "only.toml").write_text('ignore = ["SL201"]\n')
    found = codes_by_file(lint("src", "sub/h.py", cwd=project, config="only.toml"), project)
    assert found == {"src/a.py": ["SL101"], "sub/h.py": ["SL101"]}


def test_synclint_toml_files_win_over_pyproject_in_their_directory(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nignore = ["SL101"]\n')
    (tmp_path / "synclint.toml").write_text('ignore = ["SL201"]\n')
    (tmp_path / "m.py").write_text(HAZARD)
    assert codes_by_file(lint("m.py", cwd=tmp_path), tmp_path) == {"m.py": ["SL101"]}
    (tmp_path / ".synclint.toml").write_text('[tool.synclint]\nselect = ["SL201"]\nignore = []\n')
    assert codes_by_file(lint("m.py", cwd=tmp_path), tmp_path) == {"m.py": ["SL201"]}


def test_a_pyproject_without_a_synclint_table_is_passed_over(tmp_path):
    (tmp_path / "synclint.toml").write_text('ignore = ["SL201"]\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    (tmp_path / "pkg" / "m.py").write_text(HAZARD)
    assert Configuration().settings_for(tmp_path / "pkg" / "m.py").ignore == ("SL201",)


@pytest.mark.parametrize(
    ("name", "body", "where", "message"),
    [
        ("pyproject.toml", '[tool.synclint]\nselect = ["SL1"\nignore = []\n', ":3:1: ", "Unclosed array"),
        ("pyproject.toml", "[tool.synclint\n", ":1:", ""),
        ("pyproject.toml", '[tool.synclint]\n\nselct = ["SL2"]\n', ":3: ", "selct"),
        ("synclint.toml", 'select = ["SL2"]\nignore = "SL201"\n', ":2: ", "list of strings"),
        ("pyproject.toml", '[tool.synclint.per-file-ignores]\n"a/*" = ["SL1"]\n"tests/*" = ["XYZ"]\n', ":3: ", "XYZ"),
        ("pyproject.toml", '[tool.synclint]\nrespect-gitignore = "no"\n', ":2: ", "true or false"),
        ("pyproject.toml", '[tool.synclint]\nmax-file-size = "lots"\n', ":2: ", "not a size"),
    ],
)
def test_a_malformed_config_is_exit_2_with_file_line_and_message(tmp_path, name, body, where, message):
    (tmp_path / name).write_text(body)
    (tmp_path / "m.py").write_text(HAZARD)
    for command in (["check", "m.py"], ["fix", "m.py"], ["check", "."]):
        result = run(*command, cwd=tmp_path)
        assert result.exit_code == 2, result.output
        assert f"{tmp_path / name}{where}" in result.output and message in result.output, result.output
        assert "Traceback" not in result.output


def test_a_malformed_config_below_the_first_path_is_found_too(tmp_path):
    (tmp_path / "a.py").write_text(HAZARD)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "synclint.toml").write_text("select = [\n")
    (tmp_path / "pkg" / "b.py").write_text(HAZARD)
    result = run("check", ".", cwd=tmp_path)
    assert result.exit_code == 2 and "synclint.toml:2:" in result.output, result.output


def test_load_settings_error_carries_the_location(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nselect = ["SL1"]\nbogus = 1\n')
    with pytest.raises(ConfigError) as raised:
        load_settings(start=tmp_path)
    assert (raised.value.path, raised.value.line) == (tmp_path / "pyproject.toml", 3)


def test_overrides_keep_per_config_roots(project):
    configuration = Configuration(Overrides(select=("SL2",)))
    assert configuration.settings_for(project / "sub" / "h.py").root == project / "sub"
    assert configuration.settings_for(project / "src" / "a.py").root == project
    assert configuration.settings_for(project / "sub" / "h.py").select == ("SL2",)


def test_excludes_never_match_directories_above_the_search(tmp_path):
    """A project living under a directory named like a default exclude (``env``) is still searched."""
    project = tmp_path / "env" / "build" / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "m.py").write_text(HAZARD)
    (project / "pkg" / "build").mkdir()
    (project / "pkg" / "build" / "generated.py").write_text(HAZARD)
    found = lint(str(project), cwd=tmp_path)
    assert {Path(f.path).relative_to(project).as_posix() for f in found} == {"pkg/m.py"}


def test_excludes_matched_at_once_answer_as_each_pattern_alone(tmp_path):
    """``is_excluded`` matches every pattern in one expression: the answer is fnmatch's,
    pattern by pattern, for whole paths, absolute paths and bare names."""
    import fnmatch

    from synclint.config import _PathForms

    patterns = (".git", "build", "*.egg-info", "tests/*", "src/gen/**", "[ab]*", "?x", "docs/conf.py", ".history")
    paths = ["build", "pkg/build/x.py", "pkg/a.egg-info", "tests/t.py", "sub/tests/t.py", "src/gen/deep/m.py",
             "alpha.py", "pkg/beta/m.py", "xx", "docs/conf.py", "other/docs/conf.py", "pkg/.history/m_1.py",
             "pkg/model.py", "Build/m.py"]

    def one_by_one(forms, pattern):
        if fnmatch.fnmatch(forms.relative, pattern) or fnmatch.fnmatch(forms.absolute, pattern):
            return True
        return "/" not in pattern and any(fnmatch.fnmatch(part, pattern) for part in forms.parts)

    answers = []
    for path in paths:
        for ancestors in (True, False):
            forms = _PathForms(str(tmp_path / path), tmp_path, ancestors)
            expected = [one_by_one(forms, pattern) for pattern in patterns]
            assert [forms.match(pattern) for pattern in patterns] == expected, path
            assert forms.match_any(patterns) == any(expected), path
            answers.append(any(expected))
    assert forms.match_any(()) is False
    assert True in answers and False in answers
