"""What a reporter may need besides the findings; every field has a neutral default."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class ReportOptions:
    color: bool = False
    #: ``--unsafe-fixes`` was given: unsafe fixes count as available.
    unsafe_fixes: bool = False
    #: After ``check --fix``: fixes applied per ``(path, code)``; None when nothing was fixed on purpose.
    fixed: Counter | None = None
    #: ``--show-fixes``: list what ``--fix`` changed.
    show_fixes: bool = False
