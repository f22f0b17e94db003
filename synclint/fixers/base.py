"""How a rule proposes a fix, and how proposals become edits.

A :class:`FixProposal` is a set of node replacements on the parsed module
(``{original_node: new_node}``; ``cst.RemovalSentinel.REMOVE`` deletes a
statement) plus the imports the new code needs. Replacements are keyed by
node identity, so they are exact and cannot drift onto a look-alike node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Union

import libcst as cst

Replacement = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel]


@dataclass(frozen=True, eq=False)
class FixProposal:
    applicability: Literal["safe", "unsafe"]
    message: str
    replacements: dict[cst.CSTNode, Replacement] = field(default_factory=dict)
    #: ``import X`` lines the replacement code needs (module names, e.g. "torch").
    imports: tuple[str, ...] = ()

    @property
    def is_safe(self) -> bool:
        return self.applicability == "safe"


@dataclass(frozen=True)
class Declined:
    """A fixer recognised the pattern but could not prove a precondition of its
    rewrite: no fix is offered, and ``reason`` is added to the finding's message."""

    reason: str


class ReplaceNodes(cst.CSTTransformer):
    """Replace nodes by identity, outermost first; inner replacements are skipped."""

    def __init__(self, replacements: dict[cst.CSTNode, Replacement]) -> None:
        super().__init__()
        self.replacements = replacements
        self.applied: set[int] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        # Do not descend into a node we are about to replace: its children's
        # replacements belong to a proposal that overlaps this one.
        return node not in self.replacements

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        replacement = self.replacements.get(original_node)
        if replacement is None:
            return updated_node
        self.applied.add(id(original_node))
        return replacement


def render(node: Replacement) -> str:
    if isinstance(node, cst.RemovalSentinel):
        return ""
    if isinstance(node, cst.FlattenSentinel):
        return "".join(render(n) for n in node.nodes)
    return cst.Module(body=[]).code_for_node(node)
