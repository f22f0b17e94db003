"""SL102: a unique result used only for its length -> sort and count the steps.

``torch.numel(torch.unique(t))`` (also through a name used nowhere else)
becomes, with the sort evaluated where ``unique`` was::

    sorted_t = torch.sort(t.flatten()).values
    ... torch.count_nonzero(sorted_t[1:] != sorted_t[:-1]) + min(sorted_t.numel(), 1) ...

``min(sorted_t.numel(), 1)`` reads only the shape (no sync) and keeps an empty
input at 0 distinct values. ``unique_consecutive`` needs no sort. Not offered
where the sort's own line would run the call at another time or scope (inside a
lambda, comprehension, ``and`` / ``or`` or ``a if c else b``).

Unsafe: the count becomes a 0-d tensor, and NaNs count once each (they are
never equal to themselves). Preconditions (proven, else no fix): the count is
used only where a 0-d tensor acts as the int did (``proofs.tensor_count_use``;
not returned, stored, formatted or used as a key or shape); ``torch`` is reachable.
The sort runs where ``unique`` ran (it copies), so later mutations do not matter.
"""

from __future__ import annotations

import libcst as cst

from synclint.analysis.inference import positional
from synclint.fixers import fixer, tree
from synclint.fixers.base import Declined, FixProposal
from synclint.fixers.patterns import atom, count_target, torch_name
from synclint.fixers.proofs import tensor_count_use

_HARMLESS_KEYWORDS = frozenset({"sorted"})  # changes the order of the values, not their number
# Code that runs later, conditionally, or in a scope of its own.
_DEFERRED = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.BooleanOperation, cst.IfExp)


@fixer("SL102")
def propose_sorted_unique_count(rule, node: cst.CSTNode) -> FixProposal | None:
    unique = _unique_call(rule, node)
    if unique is None:
        return None
    values, consecutive = unique
    target = count_target(rule, node)
    if target is None:
        return None
    count, binding = target
    if not tensor_count_use(rule, count):
        return Declined("the count is used where a tensor would not act as the int it replaces")
    function = tree.enclosing_function(rule, node)
    scope = function if function is not None else rule.context.module
    base = values.value if isinstance(values, cst.Name) else "values"
    if binding is None:
        place = tree.place_of(rule, node)
        if place is None or not _evaluated_first(rule, node, place.statement):
            return None
    name = tree.reserve_name(rule, f"sorted_{base}" if not consecutive else f"flat_{base}", scope)
    named = torch_name(rule, node)
    if isinstance(named, Declined):
        return named
    torch, imports = named
    flat = f"{tree.code(atom(values))}.flatten()"
    prepared = f"{flat}" if consecutive else f"{torch}.sort({flat}).values"
    prepare_line = cst.parse_statement(f"{name} = {prepared}\n")
    counted = tree.expr(f"{torch}.count_nonzero({name}[1:] != {name}[:-1]) + min({name}.numel(), 1)")
    if _needs_parentheses(rule, count):
        counted = counted.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    message = "Count distinct values on the device (sort, then count the steps)"
    if binding is not None:
        prepare_line = prepare_line.with_changes(leading_lines=binding.statement.leading_lines)
        replacements: dict = {binding.statement: prepare_line, count: counted}
        return FixProposal("unsafe", message, replacements, imports)
    statement = place.statement.deep_replace(count, counted)
    prepare_line = prepare_line.with_changes(leading_lines=place.statement.leading_lines)
    flattened = cst.FlattenSentinel([prepare_line, statement.with_changes(leading_lines=())])
    return FixProposal("unsafe", message, {place.statement: flattened}, imports)


def _unique_call(rule, node: cst.CSTNode) -> tuple[cst.BaseExpression, bool] | None:
    """``(values, consecutive)`` for ``torch.unique(values)`` / ``values.unique()`` / ``..._consecutive``."""
    if not isinstance(node, cst.Call) or any(a.star for a in node.args):
        return None
    keywords = {a.keyword.value for a in node.args if a.keyword is not None}
    if keywords - _HARMLESS_KEYWORDS:
        return None
    args = positional(node)
    qualified = rule.context.qualify(node.func)
    if qualified in ("torch.unique", "torch.unique_consecutive", "torch.Tensor.unique", "torch.Tensor.unique_consecutive"):
        return (args[0].value, qualified.endswith("consecutive")) if len(args) == 1 else None
    if qualified is None and isinstance(node.func, cst.Attribute) and not args:
        method = node.func.attr.value
        if method in ("unique", "unique_consecutive"):
            return node.func.value, method == "unique_consecutive"
    return None


def _evaluated_first(rule, node: cst.CSTNode, statement: cst.CSTNode) -> bool:
    """The unique call runs once, unconditionally, in the statement's own scope, before
    anything else on the line: so the sort can move to a line of its own in front.

    Not inside a lambda or comprehension (its variables do not exist outside; a lambda
    runs later), nor the lazy part of ``and`` / ``or`` / ``a if c else b`` (``y is not
    None and len(torch.unique(y))`` must not sort ``None``), nor after another small
    statement of the line (``a = g(); n = len(torch.unique(a))``)."""
    if not (isinstance(statement, cst.SimpleStatementLine) and statement.body):
        return False
    for ancestor in tree.ancestors(rule, node):
        if ancestor is statement:
            return True
        if isinstance(ancestor, _DEFERRED):
            return False
        if isinstance(ancestor, cst.BaseSmallStatement) and ancestor is not statement.body[0]:
            return False
    return False


def _needs_parentheses(rule, count: cst.BaseExpression) -> bool:
    """``a + b`` replaces a call or subscript: keep it one operand of its context."""
    outer = tree.parent(rule, count)
    return isinstance(outer, (cst.BinaryOperation, cst.UnaryOperation, cst.Attribute, cst.Subscript))
