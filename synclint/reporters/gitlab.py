"""GitLab Code Quality (a subset of the Code Climate JSON), as ruff writes it.

Paths are relative to ``CI_PROJECT_DIR`` when GitLab sets it (else to the
working directory); the fingerprint is the baseline's, so the same finding
keeps its identity across commits and GitLab can tell new from fixed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from synclint.finding import PARSE_ERROR_CODE, Finding
from synclint.reporters.options import ReportOptions


def _relative(path: str, root: Path) -> str:
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        return absolute.as_posix()


def render_gitlab(findings: Sequence[Finding], out: TextIO, options: ReportOptions | None = None) -> None:
    from synclint.baseline import fingerprints

    root = Path(os.environ.get("CI_PROJECT_DIR") or Path.cwd()).resolve()
    report = []
    for finding, fingerprint in zip(findings, fingerprints(findings, Path.cwd())):
        cell = f"cell_{finding.cell}:{finding.line}:{finding.column}: " if finding.cell is not None else ""
        report.append(
            {
                "check_name": finding.code,
                "description": f"{finding.code}: {cell}{finding.message}",
                "fingerprint": fingerprint,
                "severity": "critical" if finding.code == PARSE_ERROR_CODE else "major",
                "location": {
                    "path": _relative(finding.path, root),
                    "lines": {"begin": finding.line, "end": finding.end_line}
                    if finding.cell is None
                    else {"begin": 1, "end": 1},
                },
            }
        )
    json.dump(report, out, indent=2)
    out.write("\n")
