"""SL401: add ``non_blocking=True`` to a host-to-device copy of a loader batch (safe)."""

from __future__ import annotations

import libcst as cst

from synclint.fixers import fixer
from synclint.fixers.base import FixProposal
from synclint.fixers.keywords import set_keyword


@fixer("SL401")
def propose_non_blocking(rule, node: cst.CSTNode) -> FixProposal | None:
    if not isinstance(node, cst.Call) or any(a.star for a in node.args):
        return None  # `*args` / `**kwargs` may already pass non_blocking: a second one is a TypeError
    return FixProposal(
        "safe",
        "Pass `non_blocking=True`",
        {node: set_keyword(node, "non_blocking", cst.Name("True"))},
    )
