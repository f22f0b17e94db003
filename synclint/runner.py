"""Check many files: discovery, per-file analysis, deterministic ordering."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from synclint.config import Settings
from synclint.discovery import discover
from synclint.engine import check_file
from synclint.finding import Finding


def lint_paths(paths: Iterable[str | Path], settings: Settings) -> list[Finding]:
    """Findings for every file under ``paths``, sorted by path, line, column, code."""
    files = discover(paths, settings)
    return lint_files(files, settings)


def lint_files(files: Sequence[Path], settings: Settings) -> list[Finding]:
    findings: list[Finding] = []
    for file in files:
        findings.extend(check_file(file, settings))
    findings.sort(key=lambda f: f.sort_key)
    return findings
