"""Suppression comments: ``# synclint: ignore[SL201]``, ``# synclint: ignore``, ``# noqa: SL201``.

Besides reading them, this module finds the ones that silence nothing
(``SL002 unused-suppression``, synclint's RUF100) and writes new ones
(``check --add-noqa``).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from synclint.sources import source_lines

_DIRECTIVE = re.compile(
    r"#\s*(?:(?P<synclint>synclint:\s*ignore)(?:\[(?P<codes>[^\]]*)\])?|noqa(?::\s*(?P<noqa>[A-Z0-9,\s]+))?)",
    re.IGNORECASE,
)
ALL = frozenset({"*"})
_OUR_CODE = re.compile(r"SL\d+")

UNUSED_SUPPRESSION_CODE = "SL002"
UNUSED_SUPPRESSION_NAME = "unused-suppression"
UNUSED_SUPPRESSION_DOCS = """\
## What it does
Reports a `# synclint: ignore[...]` or `# noqa: SL...` comment that silences no
finding, and codes in such comments that are not synclint rules (like ruff's RUF100).

## Why is this bad?
A stale suppression hides the next real hazard written on that line, and an
unknown code silences nothing while looking as if it did.

## When it runs
Only when selected by name: `--extend-select SL002` (or `extend-select = ["SL002"]`);
`ALL` does not include it. A code is judged only when its rule is enabled for the
file; a bare `# noqa` and other tools' codes are never judged; a bare
`# synclint: ignore` only when every rule is enabled; a file that could not be
analysed (SL000), or that the prefilter skipped (no sign of torch), not at all.

## Example
```python
x = y + 1  # synclint: ignore[SL201]
```

## Use instead
```python
x = y + 1
```
"""


@dataclass(frozen=True)
class Directive:
    line: int
    column: int  # 1-based, of the ``#``
    codes: frozenset[str]  # ALL for a bare directive
    #: True for synclint's own ignore comment, False for a noqa comment (shared with other tools).
    synclint: bool


def _tokens(source: str) -> list[tokenize.TokenInfo] | None:
    """The tokens of ``source``, None when it does not tokenize. ``newline=None``: lines end
    at ``\r\n``, ``\r`` or ``\n``, as Python (and every finding's line number) counts them;
    a file of lone ``\r`` is not one long line."""
    try:
        return list(tokenize.generate_tokens(io.StringIO(source, newline=None).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None


def directives(source: str) -> list[Directive]:
    """Every suppression comment of ``source``, in order."""
    if "synclint" not in source and "noqa" not in source:
        return []
    tokens = _tokens(source)
    if tokens is None:
        return []
    found = []
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        for match in _DIRECTIVE.finditer(token.string):
            raw = match.group("codes") if match.group("codes") is not None else match.group("noqa")
            if raw is None:
                codes = ALL
            else:
                codes = frozenset(c.strip().upper() for c in re.split(r"[,\s]+", raw) if c.strip()) or ALL
            found.append(
                Directive(token.start[0], token.start[1] + match.start() + 1, codes, match.group("synclint") is not None)
            )
    return found


def suppressions(source: str, lines: Collection[int] | None = None) -> dict[int, frozenset[str]]:
    """Line number -> suppressed codes (``{"*"}`` for all) from the file's comments.

    ``lines``: the only lines asked about, when known. A source none of whose lines
    ``lines`` looks like a directive (the test of a comment, on the whole line) has
    none there, and is not tokenized: a comment is part of its physical line.
    """
    if lines is not None:
        physical = source_lines(source)
        if not any(0 < line <= len(physical) and _DIRECTIVE.search(physical[line - 1]) for line in lines):
            return {}
    found: dict[int, frozenset[str]] = {}
    for directive in directives(source):
        found[directive.line] = found.get(directive.line, frozenset()) | directive.codes
    return found


# While ``recording_uses`` is active, every suppression that silences a finding is noted
# here as (line, code): the audit then needs no second analysis and no new engine API.
_uses: ContextVar[set[tuple[int, str]] | None] = ContextVar("synclint_suppression_uses", default=None)


@contextmanager
def recording_uses() -> Iterator[set[tuple[int, str]]]:
    used: set[tuple[int, str]] = set()
    token = _uses.set(used)
    try:
        yield used
    finally:
        _uses.reset(token)


def is_suppressed(table: dict[int, frozenset[str]], code: str, lines: range) -> bool:
    """Whether a finding spanning ``lines`` is silenced by a comment on its first or last line."""
    for line in (lines.start, lines.stop - 1):
        codes = table.get(line)
        if codes and ("*" in codes or code in codes):
            used = _uses.get()
            if used is not None:
                used.add((line, code))
            return True
    return False


def spans_suppressed(table: dict[int, frozenset[str]], code: str, *spans) -> bool:
    """Whether a comment silences ``code`` on any of ``spans`` (code ranges with ``start.line``
    and ``end.line``; None skipped): a finding's own node, and the node it is silenced with
    too (an unpinned loader's line, for the copies of its batches SL402 reports)."""
    return any(span is not None and is_suppressed(table, code, range(span.start.line, span.end.line + 1))
               for span in spans)


def unused_directives(
    source: str, used: set[tuple[int, str]], enabled_codes: Sequence[str], known_codes: Sequence[str]
) -> list[tuple[Directive, list[str], list[str]]]:
    """(directive, unused codes, unknown codes) for each directive that silences less than it says.

    Only codes that can be judged count: a code is unused when its rule is enabled
    (a disabled rule's directive may matter under another selection) and nothing
    it names was silenced; ``# noqa`` codes other than synclint's belong to other
    tools and a bare ``# noqa`` is never judged. A bare ``# synclint: ignore`` is
    unused only when every rule is enabled and it silenced nothing.
    """
    enabled, known = set(enabled_codes), set(known_codes)
    lines_used: dict[int, set[str]] = {}
    for line, code in used:
        lines_used.setdefault(line, set()).add(code)
    report = []
    for directive in directives(source):
        silenced = lines_used.get(directive.line, set())
        if directive.codes == ALL:
            if directive.synclint and not silenced and known <= enabled:
                report.append((directive, ["all"], []))
            continue
        # In a synclint-ignore comment every code is meant for synclint; in a noqa comment only
        # those shaped like ours ("SL201 slow path" after noqa does not name a rule "SLOW").
        ours = sorted(c for c in directive.codes if directive.synclint or _OUR_CODE.fullmatch(c))
        unknown = [c for c in ours if c not in known and c != UNUSED_SUPPRESSION_CODE]
        unused = [c for c in ours if c in enabled and c not in silenced]
        if unused or unknown:
            report.append((directive, unused, unknown))
    return report


def unused_message(unused: list[str], unknown: list[str], synclint: bool) -> str:
    form = "`# synclint: ignore`" if synclint else "`# noqa`"
    parts = []
    if unused == ["all"]:
        return f"Unused {form} directive: it silences no finding; remove it"
    if unused:
        parts.append(f"unused: {', '.join(unused)}")
    if unknown:
        parts.append(f"not synclint rules: {', '.join(unknown)}")
    return f"Unused {form} directive ({'; '.join(parts)}); remove what it does not need"


# -- --add-noqa ------------------------------------------------------------------------------


def _comment_lines(source: str) -> set[int] | None:
    """Lines whose end is code, where a trailing comment can go (not inside a string,
    not after a backslash continuation); None when the source does not tokenize."""
    tokens = _tokens(source)
    if tokens is None:
        return None
    ok: set[int] = set()
    for token in tokens:
        if token.type in (tokenize.NEWLINE, tokenize.NL):
            ok.add(token.start[0])
    return ok


def add_directives(source: str, spans: Sequence[tuple[int, int, str]]) -> tuple[str, int, list[int]]:
    """Silence each ``(line, end_line, code)``: extend a ``# synclint: ignore[...]`` on the
    first (else the last) line of the span, or append one. Returns the new source, the
    number of codes added and the first lines of the spans that had no place for a comment."""
    places = _comment_lines(source)
    if places is None:
        return source, 0, sorted({line for line, _, _ in spans})
    existing = suppressions(source)
    wanted: dict[int, set[str]] = {}
    skipped: list[int] = []
    for line, end_line, code in spans:
        if any("*" in existing.get(n, ()) or code in existing.get(n, ()) for n in (line, end_line)):
            continue  # already silenced (e.g. by a directive --add-noqa wrote before)
        target = line if line in places else end_line if end_line in places else None
        if target is None:
            skipped.append(line)
            continue
        wanted.setdefault(target, set()).add(code)
    lines = source_lines(source, keepends=True)
    added = 0
    for number, codes in wanted.items():
        text = lines[number - 1]
        body = text.rstrip("\r\n")
        ending = text[len(body):]
        match = re.search(r"#\s*synclint:\s*ignore\[(?P<codes>[^\]]*)\]", body, re.IGNORECASE)
        if match is not None:
            merged = sorted({c.strip().upper() for c in match.group("codes").split(",") if c.strip()} | codes)
            body = body[: match.start("codes")] + ", ".join(merged) + body[match.end("codes"):]
        else:
            body = f"{body}  # synclint: ignore[{', '.join(sorted(codes))}]"
        lines[number - 1] = body + ending
        added += len(codes)
    return "".join(lines), added, sorted(set(skipped))


# -- SL002: the audit -----------------------------------------------------------------------


def audits_suppressions(settings, path: str | None) -> bool:
    """SL002 runs only when selected by name (``SL002`` or ``SL00``), like ruff's RUF100:
    ``ALL`` or ``SL`` select sync hazards, and an unused comment is not one."""
    if settings is None or not settings.is_enabled(UNUSED_SUPPRESSION_CODE, path):
        return False
    return any(
        len(selector) >= 4 and UNUSED_SUPPRESSION_CODE.startswith(selector)
        for selector in settings.select + settings.extend_select
    )


def audited(source: str, path: str, settings, check) -> list:
    """``check()``'s findings plus one SL002 finding per directive that silences less than it
    says. Nothing is judged in a file that was not fully analysed: ``check()`` returns None
    when the prefilter skipped the file, and a file with SL000 could not be analysed."""
    from synclint.codes import RULE_CODES
    from synclint.finding import PARSE_ERROR_CODE, Finding

    with recording_uses() as used:
        findings = check()
    if findings is None:
        return []
    if any(f.code == PARSE_ERROR_CODE for f in findings):
        return findings
    enabled = [code for code in RULE_CODES if settings.is_enabled(code, path)]
    lines = source_lines(source)
    extra = []
    for directive, unused, unknown in unused_directives(source, used, enabled, RULE_CODES):
        text = lines[directive.line - 1] if directive.line <= len(lines) else ""
        extra.append(
            Finding(
                path=path,
                line=directive.line,
                column=directive.column,
                end_line=directive.line,
                end_column=len(text.rstrip()) + 1,
                code=UNUSED_SUPPRESSION_CODE,
                name=UNUSED_SUPPRESSION_NAME,
                message=unused_message(unused, unknown, directive.synclint),
                source_line=text,
            )
        )
    return sorted([*findings, *extra], key=lambda f: f.sort_key)
