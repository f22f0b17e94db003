"""Terminal styling: colours only where a person reads them, as NO_COLOR and FORCE_COLOR say.

Precedence (the one CPython's own ``_colorize`` uses): ``NO_COLOR`` set and
non-empty turns colours off; otherwise ``FORCE_COLOR`` set and non-empty turns
them on; otherwise colours are used only when the stream is a terminal.
Everything that marks a fix (``[*]`` safe, ``[~]`` unsafe) is defined here so
that every output says it the same way.
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from typing import TextIO

#: The marker of a finding whose fix ``synclint check --fix`` applies.
SAFE_FIX_MARKER = "[*]"
#: The marker of a finding whose fix changes edge cases and needs ``--unsafe-fixes``.
UNSAFE_FIX_MARKER = "[~]"

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "cyan": "36"}


def fix_marker(applicability: str | None) -> str:
    """``[*]``, ``[~]`` or an empty string: the one place the markers are chosen."""
    if applicability == "safe":
        return SAFE_FIX_MARKER
    if applicability == "unsafe":
        return UNSAFE_FIX_MARKER
    return ""


def wants_color(stream: TextIO | None, environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    if env.get("TERM") == "dumb":
        return False
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):  # closed or not a real stream
        return False


@dataclass(frozen=True)
class Style:
    color: bool = False

    def __call__(self, text: str, *styles: str) -> str:
        if not self.color or not text:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


PLAIN = Style(False)

TAB_WIDTH = 4


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal: wide (East Asian) characters take two,
    combining marks none. Tabs must be expanded before."""
    width = 0
    for char in text:
        if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width
