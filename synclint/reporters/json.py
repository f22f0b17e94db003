from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TextIO

from synclint.finding import Finding


def render_json(findings: Sequence[Finding], out: TextIO) -> None:
    """A JSON list of findings (DESIGN section 3); always valid JSON."""
    json.dump([finding.to_json() for finding in findings], out, indent=2)
    out.write("\n")
