"""GitHub Actions workflow commands: one ``::warning``/``::error`` annotation per finding.

See https://docs.github.com/actions/using-workflows/workflow-commands-for-github-actions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from synclint.finding import Finding


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding) -> str:
    command = {"error": "error", "info": "notice"}.get(finding.severity, "warning")
    properties = {"file": finding.path}
    message = finding.message
    if finding.cell is None:
        properties.update(
            line=finding.line, col=finding.column, endLine=finding.end_line, endColumn=finding.end_column
        )
    else:
        # Cell-relative lines are not lines of the .ipynb file: annotate the file, say where.
        message = f"cell_{finding.cell}:{finding.line}:{finding.column}: {message}"
    properties["title"] = finding.code
    rendered = ",".join(f"{key}={_escape_property(str(value))}" for key, value in properties.items())
    return f"::{command} {rendered}::{_escape_data(message)}"


def render_github(findings: Sequence[Finding], out: TextIO, options: object = None) -> None:
    for finding in findings:
        out.write(annotation(finding) + "\n")
