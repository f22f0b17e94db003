"""Suppression comments: ``# synclint: ignore[SL201]``, ``# synclint: ignore``, ``# noqa: SL201``."""

from __future__ import annotations

import io
import re
import tokenize

_DIRECTIVE = re.compile(
    r"#\s*(?:synclint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?|noqa(?::\s*(?P<noqa>[A-Z0-9,\s]+))?)",
    re.IGNORECASE,
)
ALL = frozenset({"*"})


def suppressions(source: str) -> dict[int, frozenset[str]]:
    """Line number -> suppressed codes (``{"*"}`` for all) from the file's comments."""
    found: dict[int, frozenset[str]] = {}
    if "synclint" not in source and "noqa" not in source:
        return found
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return found
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        for match in _DIRECTIVE.finditer(token.string):
            raw = match.group("codes") if match.group("codes") is not None else match.group("noqa")
            if raw is None:
                codes = ALL
            else:
                codes = frozenset(c.strip().upper() for c in re.split(r"[,\s]+", raw) if c.strip())
                if not codes:
                    codes = ALL
            line = token.start[0]
            found[line] = found.get(line, frozenset()) | codes
    return found


def is_suppressed(table: dict[int, frozenset[str]], code: str, lines: range) -> bool:
    """Whether a finding spanning ``lines`` is silenced by a comment on its first or last line."""
    for line in {lines.start, lines.stop - 1}:
        codes = table.get(line)
        if codes and ("*" in codes or code in codes):
            return True
    return False
