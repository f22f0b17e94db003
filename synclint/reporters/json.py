from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TextIO

from synclint.finding import Finding
from synclint.reporters.options import ReportOptions


def render_json(findings: Sequence[Finding], out: TextIO, options: ReportOptions | None = None) -> None:
    """A JSON list of findings (DESIGN section 3); always valid JSON."""
    json.dump([finding.to_json() for finding in findings], out, indent=2)
    out.write("\n")


def render_json_lines(findings: Sequence[Finding], out: TextIO, options: ReportOptions | None = None) -> None:
    """One JSON object per line, the same objects as ``json`` (streams and greps well)."""
    for finding in findings:
        out.write(json.dumps(finding.to_json(), separators=(",", ":")) + "\n")
