"""Between synclint's records (1-based lines, 1-based code-point columns) and LSP's
(0-based lines, characters in the negotiated encoding, UTF-16 by default)."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types as lsp
from pygls.workspace import TextDocument

from synclint.finding import PARSE_ERROR_CODE, Edit, Finding
from synclint.sources import source_lines
from synclint.suppression import UNUSED_SUPPRESSION_CODE

SOURCE = "synclint"


def lsp_lines(text: str) -> list[str]:
    """The lines of ``text`` as LSP and Python count them, with their ends."""
    return source_lines(text, keepends=True)


def to_position(document: TextDocument, line: int, column: int) -> lsp.Position:
    """LSP position of a 1-based (line, code-point column)."""
    lines = lsp_lines(document.source)
    if line - 1 >= len(lines):  # an end at the very end of the file
        return lsp.Position(line=len(lines), character=0)
    return document.position_codec.position_to_client_units(lines, lsp.Position(line=line - 1, character=column - 1))


def to_range(document: TextDocument, line: int, column: int, end_line: int, end_column: int) -> lsp.Range:
    return lsp.Range(start=to_position(document, line, column), end=to_position(document, end_line, end_column))


def finding_range(document: TextDocument, finding: Finding) -> lsp.Range:
    return to_range(document, finding.line, finding.column, finding.end_line, finding.end_column)


def to_diagnostic(document: TextDocument, finding: Finding) -> lsp.Diagnostic:
    severity = lsp.DiagnosticSeverity.Warning
    tags = None
    if finding.code == PARSE_ERROR_CODE:
        severity = lsp.DiagnosticSeverity.Error
    elif finding.code == UNUSED_SUPPRESSION_CODE:
        severity, tags = lsp.DiagnosticSeverity.Hint, [lsp.DiagnosticTag.Unnecessary]
    return lsp.Diagnostic(
        range=finding_range(document, finding),
        message=finding.message,
        severity=severity,
        code=finding.code,
        source=SOURCE,
        tags=tags,
        data={"fix": finding.fix.applicability if finding.fix is not None else None},
    )


def to_text_edits(document: TextDocument, edits: Sequence[Edit]) -> list[lsp.TextEdit]:
    return [
        lsp.TextEdit(range=to_range(document, e.line, e.column, e.end_line, e.end_column), new_text=e.content)
        for e in edits
    ]


def whole_text_edit(document: TextDocument, new_text: str) -> lsp.TextEdit:
    """One edit turning the document into ``new_text``: the span between the common
    prefix and the common suffix, so the editor keeps the cursor and folds around it."""
    old = document.source
    start = 0
    limit = min(len(old), len(new_text))
    while start < limit and old[start] == new_text[start]:
        start += 1
    end_old, end_new = len(old), len(new_text)
    while end_old > start and end_new > start and old[end_old - 1] == new_text[end_new - 1]:
        end_old, end_new = end_old - 1, end_new - 1
    return lsp.TextEdit(
        range=lsp.Range(start=_offset_position(document, start), end=_offset_position(document, end_old)),
        new_text=new_text[start:end_new],
    )


def _offset_position(document: TextDocument, offset: int) -> lsp.Position:
    lines = lsp_lines(document.source[:offset])
    if not lines or lines[-1].endswith(("\n", "\r")):
        return to_position(document, len(lines) + 1, 1)
    return to_position(document, len(lines), len(lines[-1]) + 1)


def contains(outer: lsp.Range, position: lsp.Position) -> bool:
    start, end = (outer.start.line, outer.start.character), (outer.end.line, outer.end.character)
    return start <= (position.line, position.character) <= end


def overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    a0, a1 = (a.start.line, a.start.character), (a.end.line, a.end.character)
    b0, b1 = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return a0 <= b1 and b0 <= a1
