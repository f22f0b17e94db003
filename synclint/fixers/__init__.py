"""Autofixes: libcst transformations proposed by rules and applied by ``synclint fix``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst

    from synclint.fixers.base import FixProposal
    from synclint.rules.base import Rule


def propose(rule: Rule, node: cst.CSTNode) -> FixProposal | None:
    """The fix for ``rule``'s finding at ``node``, if one of the fixers knows how."""
    return None


def fix_source(source: str, unsafe: bool = False) -> str:
    """Apply every available fix to ``source`` (safe ones, plus unsafe if asked)."""
    return source
