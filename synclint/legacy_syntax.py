"""Syntax errors that say a file was written for an old Python, which no current PyTorch runs.

A file that CPython 3 rejects for Python 2 syntax (``print x``, ``except E, e:``, ``0777``,
backquotes) runs with no PyTorch since 1.5, the first release without Python 2; one that
uses ``async`` as a name (``x.cuda(async=True)``, PyTorch 0.3's spelling of
``non_blocking``) runs with no Python since 3.7, and so with no PyTorch since 1.11. Such a
file is no part of a program that runs today: its ``SL000`` ("could not check") is cold,
like every finding it would have had (see :func:`synclint.engine._unchecked`).

Read from CPython's own error (its message, and the text at its position), so a file is
called old only for syntax that some old Python accepted, not for any typo.
"""

from __future__ import annotations

import re

#: Why an SL000 of a Python 2 file is cold.
PYTHON_2 = "written for Python 2, which no PyTorch runs since 1.5"
#: Why an SL000 of a file using ``async`` as a name is cold.
PYTHON_36 = "written for Python 3.6 or older (`async` as a name), which no PyTorch runs since 1.11"

#: CPython 3's messages for Python 2 statements and literals.
_PYTHON_2_MESSAGES = (
    "Missing parentheses in call to 'print'",
    "Missing parentheses in call to 'exec'",
    "multiple exception types must be parenthesized",  # ``except ValueError, e:``
    "leading zeros in decimal integer literals are not permitted",  # ``0777``
    "Lambda expression parameters cannot be parenthesized",  # ``lambda (a, b): a``
    "Function parameters cannot be parenthesized",  # ``def f(a, (b, c)):``
)
#: Python 2 forms CPython 3 calls plain "invalid syntax", matched at the error's position
#: (not anywhere on the line: a comment or string there says nothing): a closed backquote
#: repr (not a Markdown fence), ``<>``, ``ur''`` strings, ``raise E, "message"``.
_PYTHON_2_AT_ERROR = re.compile(r"`[^`\n]+`|<>")
_UR_BEFORE_ERROR = re.compile(r"(?<![\w'\"])[uU][rR]$")
_RAISE_BEFORE_COMMA = re.compile(r"^\s*raise\s+[\w.]+\s*$")
#: An integer literal with Python 2's long suffix, ending just after the error's position
#: (CPython points at its last digit); not a float's exponent (``1e-3L``).
_LONG_LITERAL = re.compile(r"(?<![\w.])(?<![eE][+-])\d+[lL]$")
#: ``async`` as a keyword argument, parameter or attribute: a name before Python 3.7.
_ASYNC_AS_A_NAME = re.compile(r"(^|[(,.\s])async\s*(=[^=]|[,)]|$)")
#: A print or exec statement of an f-string: Python 3.6+ code that lost its parentheses.
_F_STRING_STATEMENT = re.compile(r"(print|exec)\s+([rR]?[fF]|[fF][rR])['\"]")


def old_python(message: str, text: str | None, offset: int | None) -> str | None:
    """Why CPython's syntax error (``message``, on the line ``text`` at the 1-based
    ``offset``) shows a file written for an old Python, or None for any other error."""
    line = text.rstrip("\n") if text is not None else None
    start = max(0, (offset or 1) - 1)
    if any(message.startswith(known) for known in _PYTHON_2_MESSAGES):
        if line is not None and _F_STRING_STATEMENT.match(line[start:]):
            return None
        return PYTHON_2
    if line is None:
        return None
    at, before = line[start:], line[:start]
    if message == "invalid syntax":
        if at.startswith("async") and _ASYNC_AS_A_NAME.match(line, max(0, start - 1) if start else 0):
            return PYTHON_36
        if _PYTHON_2_AT_ERROR.match(at) or _UR_BEFORE_ERROR.search(before):
            return PYTHON_2
        if at.startswith(",") and _RAISE_BEFORE_COMMA.match(before):
            return PYTHON_2
    if message == "invalid decimal literal" and _LONG_LITERAL.search(line[: start + 2]):
        return PYTHON_2
    return None
