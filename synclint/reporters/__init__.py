"""Render findings: one function per output format, all taking the same inputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TextIO

from synclint.finding import Finding
from synclint.reporters.github import render_github
from synclint.reporters.json import render_json
from synclint.reporters.sarif import render_sarif
from synclint.reporters.text import render_statistics, render_text

Reporter = Callable[[Sequence[Finding], TextIO], None]

REPORTERS: dict[str, Reporter] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
}

__all__ = [
    "REPORTERS",
    "Reporter",
    "render_github",
    "render_json",
    "render_sarif",
    "render_statistics",
    "render_text",
]
