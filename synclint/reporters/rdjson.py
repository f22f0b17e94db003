"""reviewdog's Diagnostic Format (rdjson): inline review comments with suggested fixes.

https://github.com/reviewdog/reviewdog/tree/master/proto/rdf
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from synclint.finding import PARSE_ERROR_CODE, Finding
from synclint.reporters.options import ReportOptions


def _range(line: int, column: int, end_line: int, end_column: int) -> dict[str, Any]:
    return {"start": {"line": line, "column": column}, "end": {"line": end_line, "column": end_column}}


def _diagnostic(finding: Finding) -> dict[str, Any]:
    message = finding.message
    if finding.cell is not None:
        message = f"cell_{finding.cell}:{finding.line}:{finding.column}: {message}"
        where = _range(1, 1, 1, 1)
    else:
        where = _range(finding.line, finding.column, finding.end_line, finding.end_column)
    diagnostic: dict[str, Any] = {
        "message": message,
        "location": {"path": finding.path, "range": where},
        "severity": "ERROR" if finding.code == PARSE_ERROR_CODE else "WARNING",
        "code": {"value": finding.code},
    }
    if finding.fix is not None and finding.fix.edits and finding.cell is None:
        diagnostic["suggestions"] = [
            {"range": _range(e.line, e.column, e.end_line, e.end_column), "text": e.content}
            for e in finding.fix.edits
        ]
    return diagnostic


def render_rdjson(findings: Sequence[Finding], out: TextIO, options: ReportOptions | None = None) -> None:
    document = {
        "source": {"name": "synclint"},
        "severity": "WARNING",
        "diagnostics": [_diagnostic(finding) for finding in findings],
    }
    json.dump(document, out, indent=2)
    out.write("\n")
