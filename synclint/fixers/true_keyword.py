"""Safe fixes that pass one keyword as ``True``: SL401 ``non_blocking=True`` on a
loader batch's host-to-device copy, SL402 ``pin_memory=True`` on a ``DataLoader``."""

from __future__ import annotations

import libcst as cst

from synclint.fixers import fixer
from synclint.fixers.base import FixProposal
from synclint.fixers.keywords import set_keyword


def _pass_true(node: cst.CSTNode, keyword: str) -> FixProposal | None:
    if not isinstance(node, cst.Call) or any(a.star for a in node.args):
        return None  # `*args` / `**kwargs` may already pass it: a second one is a TypeError
    return FixProposal("safe", f"Pass `{keyword}=True`", {node: set_keyword(node, keyword, cst.Name("True"))})


@fixer("SL401")
def propose_non_blocking(rule, node: cst.CSTNode) -> FixProposal | None:
    return _pass_true(node, "non_blocking")


@fixer("SL402")
def propose_pin_memory(rule, node: cst.CSTNode) -> FixProposal | None:
    return _pass_true(node, "pin_memory")
