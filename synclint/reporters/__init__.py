"""Render findings: one function per output format, all taking the same inputs.

A reporter is ``render(findings, out, options)``; ``options`` (colour, fix
state) matter only to the text formats. Formats follow ruff's names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TextIO

from synclint.finding import Finding
from synclint.reporters.github import render_github
from synclint.reporters.gitlab import render_gitlab
from synclint.reporters.json import render_json, render_json_lines
from synclint.reporters.junit import render_junit
from synclint.reporters.options import ReportOptions
from synclint.reporters.pylint import render_pylint
from synclint.reporters.rdjson import render_rdjson
from synclint.reporters.sarif import render_sarif
from synclint.reporters.text import render_concise, render_full, render_statistics, render_text

Reporter = Callable[[Sequence[Finding], TextIO, ReportOptions], None]

REPORTERS: dict[str, Reporter] = {
    "full": render_full,
    "text": render_full,  # synclint's original name for ``full``
    "concise": render_concise,
    "json": render_json,
    "json-lines": render_json_lines,
    "junit": render_junit,
    "gitlab": render_gitlab,
    "pylint": render_pylint,
    "rdjson": render_rdjson,
    "sarif": render_sarif,
    "github": render_github,
}

#: Formats meant for people: colours, fix markers and a summary.
TEXT_FORMATS = frozenset({"full", "text", "concise"})

__all__ = [
    "REPORTERS",
    "TEXT_FORMATS",
    "ReportOptions",
    "Reporter",
    "render_concise",
    "render_full",
    "render_github",
    "render_gitlab",
    "render_json",
    "render_json_lines",
    "render_junit",
    "render_pylint",
    "render_rdjson",
    "render_sarif",
    "render_statistics",
    "render_text",
]
