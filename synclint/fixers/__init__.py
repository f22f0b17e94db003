"""Autofixes: libcst transformations proposed by rules and applied by ``synclint fix``.

Each fix form lives in its own module, named for what it produces
(``masked_fill.py``, ``where_select.py``, ...), and registers a
``propose(rule, node) -> FixProposal | None`` function for the rule codes it
serves. Rules call :func:`propose`; ``synclint.fixers.apply`` applies the
proposals to a fixed point.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst

    from synclint.config import Settings
    from synclint.fixers.base import Declined, FixProposal
    from synclint.rules.base import Rule

Proposer = Callable[["Rule", "cst.CSTNode"], "FixProposal | Declined | None"]
_PROPOSERS: dict[str, list[Proposer]] = {}


def fixer(*codes: str) -> Callable[[Proposer], Proposer]:
    """Register a proposer for the findings of the given rule codes."""

    def register(function: Proposer) -> Proposer:
        for code in codes:
            _PROPOSERS.setdefault(code, []).append(function)
        return function

    return register


def _load_fixers() -> None:
    # Importing the modules runs their @fixer registrations.
    from synclint.fixers import registry  # noqa: F401


def propose(rule: Rule, node: cst.CSTNode) -> FixProposal | Declined | None:
    """The first fix any registered fixer offers for ``rule``'s finding at ``node``;
    else the first reason a fixer gave for declining (an unproven precondition); else None."""
    from synclint.fixers.base import Declined

    if not _PROPOSERS:
        _load_fixers()
    declined: Declined | None = None
    for proposer in _PROPOSERS.get(rule.code, ()):
        proposal = proposer(rule, node)
        if isinstance(proposal, Declined):
            declined = declined or proposal
        elif proposal is not None:
            return proposal
    return declined


def fix_source(source: str, unsafe: bool = False, settings: Settings | None = None) -> str:
    """Apply every available fix to ``source`` (safe ones, plus unsafe ones if asked)."""
    from synclint.fixers.apply import fix_text

    return fix_text(source, "<string>", settings, unsafe)[0]
