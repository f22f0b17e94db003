"""Render findings: one function per output format, all taking the same inputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TextIO

from synclint.finding import Finding
from synclint.reporters.json import render_json
from synclint.reporters.text import render_statistics, render_text

Reporter = Callable[[Sequence[Finding], TextIO], None]

REPORTERS: dict[str, Reporter] = {
    "text": render_text,
    "json": render_json,
}

__all__ = ["REPORTERS", "Reporter", "render_json", "render_statistics", "render_text"]
