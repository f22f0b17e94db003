"""Data flows one way: sources -> project index -> analysis -> rules -> findings -> fixes / reporters.

Every ``import`` of a synclint module (also the ones inside functions, which
load lazily) is read from the source: a lower layer never imports a higher one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "synclint"


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("synclint")}


def _modules(folder: str) -> list[Path]:
    target = PACKAGE / folder
    return sorted(target.rglob("*.py")) if target.is_dir() else [target.with_suffix(".py")]


def _imported_by(folder: str) -> list[tuple[str, str]]:
    return [(path.relative_to(PACKAGE).as_posix(), name) for path in _modules(folder) for name in _imports(path)]


ABOVE_THE_INDEX = ("synclint.analysis", "synclint.rules", "synclint.engine", "synclint.fixers",
                   "synclint.reporters", "synclint.notebook", "synclint.runner", "synclint.cli")


def test_the_project_index_imports_nothing_above_it():
    offending = [(f, n) for f, n in _imported_by("project") if n.startswith(ABOVE_THE_INDEX)]
    assert offending == []


def test_the_analysis_imports_neither_rules_nor_engine_nor_fixes():
    above = ("synclint.rules", "synclint.engine", "synclint.fixers", "synclint.reporters", "synclint.notebook",
             "synclint.runner", "synclint.cli")
    assert [(f, n) for f, n in _imported_by("analysis") if n.startswith(above)] == []


@pytest.mark.parametrize("folder", ["rules", "engine"])
def test_rules_and_engine_import_neither_the_fix_loop_nor_the_notebook_adapter(folder):
    above = ("synclint.fixers.apply", "synclint.notebook", "synclint.runner", "synclint.cli", "synclint.reporters")
    assert [(f, n) for f, n in _imported_by(folder) if n.startswith(above)] == []


@pytest.mark.parametrize("module", ["prefilter", "pruning", "hidden_code"])
def test_what_the_engine_leaves_out_is_decided_below_the_rules(module):
    # They read the rules they are given (tokens, hot_path_only), never import them.
    above = ("synclint.rules", "synclint.engine", "synclint.fixers", "synclint.reporters", "synclint.notebook",
             "synclint.runner", "synclint.cli")
    assert [(f, n) for f, n in _imported_by(module) if n.startswith(above)] == []


@pytest.mark.parametrize("module", ["early_worker", "parallel"])
def test_the_process_plumbing_is_handed_the_check_and_imports_none_of_it(module):
    # The runner hands them ``check_one`` and ``load_checker``: importing the checker (or the
    # index) here would load it in the main process, which the early worker exists to avoid.
    above = ("synclint.analysis", "synclint.rules", "synclint.engine", "synclint.fixers", "synclint.reporters",
             "synclint.notebook", "synclint.runner", "synclint.cli", "synclint.project")
    assert [(f, n) for f, n in _imported_by(module) if n.startswith(above)] == []
