"""The user contract around the checker: CI runs cold, the README's commands are the real ones."""

from __future__ import annotations

import os
import sys
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


# -- the docs say what the tool does ---------------------------------------------------

DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", *DOCS.rglob("*.md")])
ANCHORED_LINK = re.compile(r"\]\(([^)#\s]*\.md)?#([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


def test_every_anchor_link_resolves():
    broken = []
    for page in PAGES:
        if not page.exists():
            continue
        for target, anchor in ANCHORED_LINK.findall(page.read_text(encoding="utf-8")):
            linked = (page.parent / target).resolve() if target else page
            if linked.exists() and anchor not in _anchors(linked):
                broken.append(f"{page.relative_to(ROOT)} -> {target}#{anchor}")
    assert broken == []


def test_install_instructions_name_only_what_exists():
    """synclint is not on PyPI and has no release tags: the docs install from the git repository."""
    offenders = []
    for page in [*PAGES, ROOT / ".pre-commit-hooks.yaml"]:
        if not page.exists():
            continue
        text = page.read_text(encoding="utf-8")
        for wrong in ("pip install synclint", "pip install \"synclint[", "rev: v0.1.0", "pip install 'synclint"):
            if wrong in text:
                offenders.append(f"{page.relative_to(ROOT)}: {wrong}")
    assert offenders == []


def test_the_readme_example_output_is_what_the_tool_prints():
    block = README.split("```text\n", 1)[1].split("```", 1)[0]
    shown = [line for line in block.splitlines() if re.match(r"^\S+\.py:\d+:\d+: SL\d{3} ", line)]
    assert shown
    result = subprocess.run(
        [sys.executable, "-m", "synclint", "check", "--no-cache", "examples/seed_segmentation.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    printed = result.stdout.splitlines()
    for line in shown:
        prefix = line.removesuffix("...").rstrip()
        assert any(p.startswith(prefix) for p in printed), (line, [p for p in printed if ": SL" in p])


def test_the_faq_does_not_claim_ruff_deletes_unknown_noqa_codes_with_ruf100():
    faq = (DOCS / "faq.md").read_text(encoding="utf-8")
    assert "RUF102" in faq
    assert not re.search(r"RUF100[^.]*(deletes|removes)", faq)
