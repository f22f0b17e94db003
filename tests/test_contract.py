"""The user contract around the checker: CI runs cold, the README's commands are the real ones."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _setup_commands() -> list[str]:
    section = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section, re.DOTALL)


def test_readme_has_exactly_two_setup_commands():
    commands = _setup_commands()
    assert len(commands) == 2 and all("\n" not in c for c in commands), commands


_STUB = """#!/usr/bin/env bash
{{
  echo "$(basename "$0") $*"
  for name in TORCHINDUCTOR_CACHE_DIR TORCH_EXTENSIONS_DIR SYNCLINT_CACHE_DIR XDG_CACHE_HOME; do
    dir="${{!name}}"
    echo "$name=$dir empty=$([ -d "$dir" ] && [ -z "$(ls -A "$dir")" ] && echo yes || echo no)"
  done
}} >> "{log}"
"""


def test_ci_runs_the_readme_test_command_with_cold_caches(tmp_path):
    """`.ci/run` under CI=true, no stdin; `pip` and `python` are stubs that record what they saw."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    log = tmp_path / "log"
    for name in ("pip", "python"):
        stub = stubs / name
        stub.write_text(_STUB.format(log=log))
        stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    env = {
        **os.environ,
        "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}",
        "CI": "true",
        "TMPDIR": str(tmp_path),
        "TORCHINDUCTOR_CACHE_DIR": "/warm/inductor",
        "SYNCLINT_CACHE_DIR": "/warm/synclint",
    }
    result = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run")], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = log.read_text().splitlines()
    commands = [line for line in lines if not "=" in line.split(" ", 1)[0]]
    assert " && ".join(commands) == _setup_commands()[1].replace("'", "")
    cache_lines = [line for line in lines if "_DIR=" in line or "XDG_CACHE_HOME=" in line]
    assert len(cache_lines) == 8
    for line in cache_lines:
        value, empty = line.split("=", 1)[1].rsplit(" empty=", 1)
        assert value.startswith(str(tmp_path)) and empty == "yes", line
    # The temporary caches are removed afterwards.
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("synclint-ci")] == []
