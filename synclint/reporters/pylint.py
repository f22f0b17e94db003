"""pylint's parseable format, as ruff writes it: ``path:line: [CODE] message``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from synclint.finding import Finding
from synclint.reporters.options import ReportOptions


def render_pylint(findings: Sequence[Finding], out: TextIO, options: ReportOptions | None = None) -> None:
    for finding in findings:
        cell = f":cell_{finding.cell}" if finding.cell is not None else ""
        out.write(f"{finding.path}{cell}:{finding.line}: [{finding.code}] {finding.message}\n")
