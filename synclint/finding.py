"""The records every part of synclint produces and consumes."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Applicability = Literal["safe", "unsafe"]


@dataclass(frozen=True)
class Edit:
    """Replace the text between two positions (1-based lines and columns, end exclusive)."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...] = ()


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    message: str
    severity: str = "warning"
    fix: Fix | None = None
    # Not part of the JSON contract: kept for reporters and fixers.
    source_line: str = field(default="", compare=False, repr=False)
    #: Notebooks only: the 1-based cell that ``line``/``column`` are relative to.
    cell: int | None = None
    #: Whether the flagged code runs every step: "hot", "unknown" or "cold" (see
    #: docs/faq.md); None for SL000 entries. ``why`` says what makes it hot (the
    #: root and call chain) or cold (construction, periodic logging, ...).
    context: str | None = None
    why: str = ""

    @property
    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    @property
    def location(self) -> str:
        """``path:line:col``, or ``nb.ipynb:cell_3:line:col`` in a notebook."""
        cell = f":cell_{self.cell}" if self.cell is not None else ""
        return f"{self.path}{cell}:{self.line}:{self.column}"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("source_line")
        if self.cell is None:  # the key exists only for notebook findings
            data.pop("cell")
        if self.context is None:  # SL000 entries: no code was analysed
            data.pop("context")
            data.pop("why")
        if self.fix is not None:
            data["fix"] = {
                "applicability": self.fix.applicability,
                "message": self.fix.message,
                "edits": [asdict(edit) for edit in self.fix.edits],
            }
        return data


PARSE_ERROR_CODE = "SL000"
PARSE_ERROR_NAME = "syntax-error"


def error_finding(path: str, reason: str, line: int = 1, column: int = 1) -> Finding:
    """The single entry a file that cannot be analysed produces."""
    return Finding(
        path=path,
        line=line,
        column=column,
        end_line=line,
        end_column=column,
        code=PARSE_ERROR_CODE,
        name=PARSE_ERROR_NAME,
        message=reason,
        severity="error",
    )
