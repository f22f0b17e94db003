"""SL402: add ``pin_memory=True`` to a ``DataLoader`` (safe)."""

from __future__ import annotations

import libcst as cst

from synclint.fixers import fixer
from synclint.fixers.base import FixProposal
from synclint.fixers.keywords import set_keyword


@fixer("SL402")
def propose_pin_memory(rule, node: cst.CSTNode) -> FixProposal | None:
    if not isinstance(node, cst.Call) or any(a.star for a in node.args):
        return None  # `*args` / `**kwargs` may already pass pin_memory: a second one is a TypeError
    return FixProposal(
        "safe",
        "Pass `pin_memory=True`",
        {node: set_keyword(node, "pin_memory", cst.Name("True"))},
    )
