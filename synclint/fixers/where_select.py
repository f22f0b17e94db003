"""SL202: ``if <tensor>:`` that only picks a value -> ``name = torch.where(cond, a, b)``.

::

    if ignore_loss:              loss = torch.where(ignore_loss, 0.0 * loss, loss)
        loss = 0.0 * loss   ->

The body (and the ``else``, if any) must assign one and the same name and do
nothing else; without ``else`` the name keeps its previous value.

Unsafe: both branches are now evaluated (an exception or side effect of the
untaken branch now happens), the result is a tensor even when a branch was a
Python number, and a condition with more than one element now selects
elementwise instead of raising.
"""

from __future__ import annotations

import libcst as cst

from synclint.fixers import fixer, tree
from synclint.fixers.base import FixProposal
from synclint.fixers.patterns import torch_name


@fixer("SL202")
def propose_where_select(rule, node: cst.CSTNode) -> FixProposal | None:
    if not isinstance(node, cst.If) or isinstance(tree.parent(rule, node), cst.If):
        return None  # an `elif` is part of the chain above it
    taken = _sole_assignment(node.body)
    if taken is None:
        return None
    name, when_true = taken
    if node.orelse is None:
        if not _bound_before(rule, name):
            return None
        when_false: cst.BaseExpression = cst.Name(name)
    elif isinstance(node.orelse, cst.Else):
        other = _sole_assignment(node.orelse.body)
        if other is None or other[0] != name:
            return None
        when_false = other[1]
    else:
        return None  # elif chains
    torch, imports = torch_name(rule)
    line = cst.parse_statement(
        f"{name} = {torch}.where({tree.code(node.test)}, {tree.code(when_true)}, {tree.code(when_false)})\n"
    )
    line = line.with_changes(leading_lines=node.leading_lines)
    return FixProposal("unsafe", "Select with `torch.where` instead of branching on a tensor", {node: line}, imports)


def _sole_assignment(block: cst.BaseSuite) -> tuple[str, cst.BaseExpression] | None:
    if isinstance(block, cst.IndentedBlock):
        if len(block.body) != 1:
            return None
        return tree.simple_assignment(block.body[0])
    if isinstance(block, cst.SimpleStatementSuite) and len(block.body) == 1:  # `if c: x = 1`
        return tree.simple_assignment(cst.SimpleStatementLine(body=block.body))
    return None


def _bound_before(rule, name: str) -> bool:
    """The name has a value when the ``if`` runs (so "keep it" is expressible)."""
    return any(name in scope.env for scope in rule.context.flow.scopes if scope.kind != "class")
