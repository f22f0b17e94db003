"""ruff-style text: ``path:line:col: CODE message``, the source line and a caret span."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TextIO

from synclint.finding import Finding


def _fix_marker(finding: Finding) -> str:
    if finding.fix is None:
        return ""
    return " [*]" if finding.fix.applicability == "safe" else " [unsafe fix]"


def render_text(findings: Sequence[Finding], out: TextIO, *, show_source: bool = True) -> None:
    for finding in findings:
        out.write(
            f"{finding.location}: {finding.code}{_fix_marker(finding)} "
            f"{finding.message}{_context_note(finding)}\n"
        )
        if show_source and finding.source_line:
            out.write(_caret_block(finding))
    if findings:
        out.write(_summary(findings))


def _context_note(finding: Finding) -> str:
    """`` [hot: `Net.forward`]``, `` [cold: construction or setup]``, `` [unknown]``."""
    if finding.context is None or (finding.why and finding.why in finding.message):
        return ""  # SL000, or a message that already names the chain
    return f" [{finding.context}: {finding.why}]" if finding.why else f" [{finding.context}]"


def _caret_block(finding: Finding) -> str:
    line = finding.source_line.expandtabs(4) if "\t" not in finding.source_line else finding.source_line
    start = max(finding.column - 1, 0)
    end = finding.end_column - 1 if finding.end_line == finding.line else len(line.rstrip())
    width = max(end - start, 1)
    number = str(finding.line)
    pad = " " * len(number)
    return f"{pad} |\n{number} | {line.rstrip()}\n{pad} | {' ' * start}{'^' * width}\n"


def _summary(findings: Sequence[Finding]) -> str:
    errors = sum(1 for f in findings if f.code == "SL000")
    problems = len(findings) - errors
    safe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "safe")
    unsafe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "unsafe")
    lines = [f"Found {problems} sync hazard{'s' if problems != 1 else ''}."]
    if errors:
        lines.append(f"{errors} file{'s' if errors != 1 else ''} could not be checked (SL000).")
    if safe:
        lines.append(f"[*] {safe} fixable with `synclint fix --apply`.")
    if unsafe:
        lines.append(f"{unsafe} more fixable with `synclint fix --apply --unsafe-fixes`.")
    return "\n".join(lines) + "\n"


def render_statistics(findings: Sequence[Finding], out: TextIO) -> None:
    """Counts per code, most frequent first (``--statistics``)."""
    counts = Counter((f.code, f.name) for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None)
    for (code, name), count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        marker = "[*]" if fixable[code] else "   "
        out.write(f"{count:>5}\t{code}\t{marker} {name}\n")
