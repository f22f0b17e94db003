"""Load modules from files and run the CLI fixer on copies of them."""

from __future__ import annotations

import importlib.util
import shutil
import sys
import types
from pathlib import Path

from click.testing import CliRunner

from synclint.cli import cli

ROOT = Path(__file__).resolve().parent.parent


def load(path: Path, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    spec.loader.exec_module(module)
    return module


def load_source(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def fixed_copy(source: Path, tmp_path: Path, *options: str) -> Path:
    """Copy ``source`` to ``tmp_path`` and run ``synclint fix --apply`` on it via the CLI."""
    target = tmp_path / source.name
    shutil.copy(source, target)
    result = CliRunner().invoke(cli, ["fix", "--apply", *options, str(target)])
    assert result.exit_code == 0, result.output
    return target
