"""ruff-style text: ``path:line:col: CODE [*] message``, then (``full``) the source line
and a caret span, then a summary. ``concise`` is the same without the source."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TextIO

from synclint.finding import PARSE_ERROR_CODE, Finding
from synclint.reporters.options import ReportOptions
from synclint.suppression import UNUSED_SUPPRESSION_CODE
from synclint.reporters.style import (
    SAFE_FIX_MARKER,
    TAB_WIDTH,
    UNSAFE_FIX_MARKER,
    Style,
    display_width,
    fix_marker,
)


def _header(finding: Finding, style: Style) -> str:
    marker = fix_marker(finding.fix.applicability if finding.fix is not None else None)
    location = style(finding.location, "bold")
    code = style(finding.code, "red" if finding.code == PARSE_ERROR_CODE else "yellow", "bold")
    marker = f" {style(marker, 'cyan')}" if marker else ""
    return f"{location}: {code}{marker} {finding.message}{_context_note(finding)}\n"


def _context_note(finding: Finding) -> str:
    """`` [hot: `Net.forward`]``, `` [cold: construction or setup]``, `` [unknown]``."""
    if finding.context is None or (finding.why and finding.why in finding.message):
        return ""  # SL000, or a message that already names the chain
    return f" [{finding.context}: {finding.why}]" if finding.why else f" [{finding.context}]"


def render_full(findings: Sequence[Finding], out: TextIO, options: ReportOptions | None = None) -> None:
    _render(findings, out, options or ReportOptions(), show_source=True)


def render_concise(findings: Sequence[Finding], out: TextIO, options: ReportOptions | None = None) -> None:
    _render(findings, out, options or ReportOptions(), show_source=False)


render_text = render_full


def _render(findings: Sequence[Finding], out: TextIO, options: ReportOptions, *, show_source: bool) -> None:
    style = Style(options.color)
    for finding in findings:
        out.write(_header(finding, style))
        if show_source and finding.source_line:
            out.write(caret_block(finding, style))
    out.write(summary(findings, options, style))


def expand_tabs(text: str) -> str:
    """Tabs to spaces at stops every TAB_WIDTH display columns (wide characters count two)."""
    if "\t" not in text:
        return text
    pieces: list[str] = []
    column = 0
    for char in text:
        if char == "\t":
            spaces = TAB_WIDTH - column % TAB_WIDTH
            pieces.append(" " * spaces)
            column += spaces
        else:
            pieces.append(char)
            column += display_width(char)
    return "".join(pieces)


def caret_block(finding: Finding, style: Style = Style()) -> str:
    """The source line and a caret under the flagged span, aligned in display columns."""
    raw = finding.source_line.rstrip("\r\n")
    start = min(max(finding.column - 1, 0), len(raw))
    end = finding.end_column - 1 if finding.end_line == finding.line else len(raw.rstrip())
    end = min(max(end, start), len(raw))
    # Expand the prefix and the span together, so tab stops after the start stay right.
    before = expand_tabs(raw[:start])
    through = expand_tabs(raw[:end])
    line = expand_tabs(raw).rstrip()
    offset = display_width(before)
    width = max(display_width(through) - offset, 1)
    number = str(finding.line)
    pad = " " * len(number)
    bar = style("|", "blue", "bold")
    return (
        f"{pad} {bar}\n{style(number, 'blue', 'bold')} {bar} {line}\n"
        f"{pad} {bar} {' ' * offset}{style('^' * width, 'red', 'bold')}\n"
    )


def _plural(count: int, word: str, suffix: str = "s") -> str:
    return f"{count} {word}{suffix if count != 1 else ''}"


def summary(findings: Sequence[Finding], options: ReportOptions, style: Style = Style()) -> str:
    """``Found N sync hazards.`` and what ``--fix`` (and ``--unsafe-fixes``) would do."""
    errors = sum(1 for f in findings if f.code == PARSE_ERROR_CODE)
    unused = sum(1 for f in findings if f.code == UNUSED_SUPPRESSION_CODE)
    problems = len(findings) - errors - unused
    fixed = sum(options.fixed.values()) if options.fixed is not None else 0
    if not findings and not fixed:
        return "All checks passed!\n"
    safe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "safe")
    unsafe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "unsafe")
    if options.fixed is not None:
        lines = [f"Found {_plural(problems + fixed, 'sync hazard')} ({fixed} fixed, {problems} remaining)."]
    else:
        lines = [f"Found {_plural(problems, 'sync hazard')}."]
    if unused:
        verb = "silences" if unused == 1 else "silence"
        lines.append(f"{_plural(unused, 'suppression comment')} {verb} nothing ({UNUSED_SUPPRESSION_CODE}).")
    if errors:
        # Files counted once each; a notebook's unreadable cells one by one (each is skipped,
        # the rest of the notebook is checked).
        cells = sum(1 for f in findings if f.code == PARSE_ERROR_CODE and f.cell is not None)
        whole = len({f.path for f in findings if f.code == PARSE_ERROR_CODE and f.cell is None})
        if whole:
            lines.append(f"{_plural(whole, 'file')} could not be checked ({PARSE_ERROR_CODE}).")
        if cells:
            lines.append(f"{_plural(cells, 'notebook cell')} could not be checked and {'was' if cells == 1 else 'were'} "
                         f"skipped ({PARSE_ERROR_CODE}).")
    cold = _cold_flag(findings)
    if options.fixed is None or options.unsafe_fixes:
        # After --fix, safe fixes are gone; what remains fixable needs --unsafe-fixes (or nothing).
        if safe:
            lines.append(f"{style(SAFE_FIX_MARKER, 'cyan')} {safe} fixable with `synclint check --fix{cold}`.")
        if unsafe and options.unsafe_fixes:
            lines.append(f"{style(UNSAFE_FIX_MARKER, 'cyan')} {unsafe} fixable with "
                         f"`synclint check --fix --unsafe-fixes{cold}`.")
    if unsafe and not options.unsafe_fixes:
        lines.append(
            f"{style(UNSAFE_FIX_MARKER, 'cyan')} {_plural(unsafe, 'more fix', 'es')} available with "
            f"`synclint check --fix --unsafe-fixes{cold}` (they change documented edge cases)."
        )
    if options.show_fixes and options.fixed:
        lines.append(_fixed_listing(options.fixed))
    return "\n".join(lines) + "\n"


def _cold_flag(findings: Sequence[Finding]) -> str:
    """`` --include-cold`` where a fixable finding is cold: cold findings are fixed only
    when --include-cold shows them (as `check` did)."""
    return " --include-cold" if any(f.fix is not None and f.context == "cold" for f in findings) else ""


def _fixed_listing(fixed: Counter) -> str:
    """``--show-fixes``: what ``--fix`` changed, per file and code."""
    by_path: dict[str, list[tuple[str, int]]] = {}
    for (path, code), count in sorted(fixed.items()):
        by_path.setdefault(path, []).append((code, count))
    lines = [f"Fixed {_plural(sum(fixed.values()), 'hazard')}:"]
    for path, codes in by_path.items():
        lines.append(f"- {path}:")
        lines.extend(f"    {count} × {code}" for code, count in codes)
    return "\n".join(lines)


def render_statistics(findings: Sequence[Finding], out: TextIO, options: ReportOptions | None = None) -> None:
    """Counts per code, most frequent first (``--statistics``), with the same fix markers."""
    options = options or ReportOptions()
    counts = Counter((f.code, f.name) for f in findings)
    kinds: dict[str, set[str]] = {}
    for f in findings:
        if f.fix is not None:
            kinds.setdefault(f.code, set()).add(f.fix.applicability)
    for (code, name), count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        applicable = kinds.get(code, set())
        marker = fix_marker("safe" if "safe" in applicable else "unsafe" if applicable else None) or "   "
        out.write(f"{count:>5}\t{code}\t{marker} {name}\n")
    if any(kinds.values()):
        cold = _cold_flag(findings)
        out.write(f"{SAFE_FIX_MARKER} fixable with `synclint check --fix{cold}`; "
                  f"{UNSAFE_FIX_MARKER} with `synclint check --fix --unsafe-fixes{cold}`.\n")
