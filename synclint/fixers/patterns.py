"""Recognisers shared by several fixers: nonzero calls, boolean masks, counts."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from synclint.analysis.inference import is_true, keyword, positional
from synclint.analysis.kinds import BOOL_FUNCTIONS, BOOL_METHODS, Kind
from synclint.fixers import tree
from synclint.fixers.base import Declined
from synclint.fixers.proofs import torch_prefix, unchanged_between

_COMPARISONS = (cst.Equal, cst.NotEqual, cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)
_LOGICAL = (cst.BitAnd, cst.BitOr, cst.BitXor)


# Boolean methods and functions that reduce (their result is not the receiver's shape).
_REDUCING = frozenset({"any", "all"})


def torch_name(rule, at: cst.CSTNode) -> tuple[str, tuple[str, ...]] | Declined:
    """The name the new code at ``at`` uses for ``torch`` and the import to add if
    there is none; Declined when ``torch`` is shadowed there (see ``proofs.torch_prefix``)."""
    return torch_prefix(rule, at)


@dataclass(frozen=True)
class NonzeroCall:
    condition: cst.BaseExpression
    as_tuple: bool  # a tuple of index tensors (as_tuple=True, 1-arg where) or an (n, ndim) tensor


def nonzero_call(rule, call: cst.CSTNode) -> NonzeroCall | None:
    """``torch.nonzero(c[, as_tuple=...])``, ``c.nonzero(...)``, ``torch.argwhere(c)``, ``torch.where(c)``."""
    if not isinstance(call, cst.Call):
        return None
    qualified = rule.context.qualify(call.func)
    args = positional(call)
    extra_keywords = {a.keyword.value for a in call.args if a.keyword is not None} - {"as_tuple"}
    if extra_keywords or any(a.star for a in call.args):
        return None
    as_tuple_arg = keyword(call, "as_tuple")
    as_tuple = as_tuple_arg is not None and is_true(as_tuple_arg.value)
    if as_tuple_arg is not None and not as_tuple and not _is_false(as_tuple_arg.value):
        return None
    if qualified == "torch.where":
        return NonzeroCall(args[0].value, True) if len(call.args) == 1 and len(args) == 1 else None
    if qualified in ("torch.nonzero", "torch.Tensor.nonzero", "torch.argwhere", "torch.Tensor.argwhere"):
        if len(args) != 1:
            return None
        return NonzeroCall(args[0].value, as_tuple)
    if qualified is None and isinstance(call.func, cst.Attribute) and call.func.attr.value in ("nonzero", "argwhere"):
        receiver = call.func.value.with_changes(lpar=[], rpar=[])  # `(x == k).nonzero()` -> x == k
        return NonzeroCall(receiver, as_tuple) if not args else None
    return None


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def is_boolean(rule, node: cst.BaseExpression) -> bool:
    """A boolean tensor: by inference, or by its form (a comparison, ``~m``, ``a & b``)."""
    if rule.context.kind_of(node) is Kind.BOOL_TENSOR:
        return True
    if isinstance(node, cst.Comparison):
        return all(isinstance(c.operator, _COMPARISONS) for c in node.comparisons)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        return is_boolean(rule, node.expression)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _LOGICAL):
        return is_boolean(rule, node.left) and is_boolean(rule, node.right)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.attr.value in BOOL_METHODS
    return False


def elementwise_of(rule, mask: cst.BaseExpression, tensor: cst.BaseExpression) -> bool:
    """``mask`` is computed elementwise from ``tensor`` (so it has ``tensor``'s shape,
    or a broadcast shape that an in-place op would reject loudly)."""
    if tree.same(mask, tensor):
        return True
    if isinstance(mask, cst.Comparison):
        operands = [mask.left] + [c.comparator for c in mask.comparisons]
        return any(tree.same(o, tensor) or _elementwise_value(rule, o, tensor) for o in operands)
    if isinstance(mask, cst.UnaryOperation) and isinstance(mask.operator, cst.BitInvert):
        return elementwise_of(rule, mask.expression, tensor)
    if isinstance(mask, cst.BinaryOperation) and isinstance(mask.operator, _LOGICAL):
        return elementwise_of(rule, mask.left, tensor) or elementwise_of(rule, mask.right, tensor)
    if isinstance(mask, cst.Call):
        qualified = rule.context.qualify(mask.func)
        short = qualified.rsplit(".", 1)[-1] if qualified is not None else None
        if short in BOOL_FUNCTIONS and short not in _REDUCING:
            return any(elementwise_of(rule, a.value, tensor) for a in positional(mask)[:1])
        method = mask.func.attr.value if isinstance(mask.func, cst.Attribute) else None
        if qualified is None and method in BOOL_METHODS and method not in _REDUCING:
            return elementwise_of(rule, mask.func.value, tensor)
    return False


def _elementwise_value(rule, node: cst.BaseExpression, tensor: cst.BaseExpression) -> bool:
    """``tensor`` under elementwise arithmetic (``x.float() * 2``, ``x - 1``)."""
    if tree.same(node, tensor):
        return True
    if isinstance(node, cst.BinaryOperation):
        return _elementwise_value(rule, node.left, tensor) or _elementwise_value(rule, node.right, tensor)
    if isinstance(node, cst.UnaryOperation):
        return _elementwise_value(rule, node.expression, tensor)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and not node.args:
        return node.func.attr.value in ("float", "long", "int", "abs", "double", "half") and _elementwise_value(
            rule, node.func.value, tensor
        )
    return False


# -- counts --------------------------------------------------------------------------------


def count_of(rule, node: cst.CSTNode) -> cst.BaseExpression | None:
    """The expression that reads only the length of ``node``: ``len(node)``,
    ``node.numel()``, ``torch.numel(node)``, ``node.shape[0]``, ``node.size(0)``."""
    outer = tree.parent(rule, node)
    if isinstance(outer, cst.Arg):
        call = tree.parent(rule, outer)
        if isinstance(call, cst.Call) and len(call.args) == 1 and call.args[0] is outer and not outer.keyword:
            if isinstance(call.func, cst.Name) and call.func.value == "len" and rule.context.qualify(call.func) is None:
                return call
            if rule.context.qualify(call.func) == "torch.numel":
                return call
        return None
    if not (isinstance(outer, cst.Attribute) and outer.value is node):
        return None
    user = tree.parent(rule, outer)
    attr = outer.attr.value
    if attr == "numel" and isinstance(user, cst.Call) and user.func is outer and not user.args:
        return user
    if attr == "size" and isinstance(user, cst.Call) and user.func is outer and _only_zero(user.args):
        return user
    if attr == "shape" and isinstance(user, cst.Subscript) and len(user.slice) == 1:
        index = user.slice[0].slice
        if isinstance(index, cst.Index) and _is_zero(index.value):
            return user
    return None


def _only_zero(args) -> bool:
    return len(args) == 1 and args[0].keyword is None and _is_zero(args[0].value)


def _is_zero(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer) and node.evaluated_value == 0


def count_target(rule, call: cst.Call) -> tuple[cst.BaseExpression, tree.Binding | None] | None:
    """Where the result of ``call`` is used only for its length: the count
    expression to replace, and the ``name = call`` binding to remove when the
    result goes through a name. Straight-line code in one block only."""
    direct = count_of(rule, call)
    if direct is not None:
        return direct, None
    place = tree.place_of(rule, call)
    if place is None:
        return None
    assignment = tree.simple_assignment(place.statement)
    if assignment is None or assignment[1] is not call:
        return None
    name = assignment[0]
    function = tree.enclosing_function(rule, call)
    scope = function.body if function is not None else rule.context.module
    uses = [n for n in tree.occurrences(name, [scope]) if n is not place.statement.body[0].targets[0].target]
    if len(uses) != 1:
        return None
    use = uses[0]
    count = count_of(rule, use)
    use_place = tree.place_of(rule, use)
    if count is None or use_place is None or use_place.block is not place.block or use_place.index <= place.index:
        return None
    if not isinstance(use_place.statement, cst.SimpleStatementLine):
        return None  # a loop or branch test may run the count more than once
    binding = tree.Binding(name, call, place.statement, place.index)  # type: ignore[arg-type]
    return count, binding


def mask_of(rule, mask: cst.BaseExpression, tensor: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """``mask`` (directly, or the name's straight-line binding before ``at``) is
    elementwise of ``tensor``: the two have the same shape."""
    if elementwise_of(rule, mask, tensor):
        return True
    place = tree.place_of(rule, at)
    if isinstance(mask, cst.Name) and place is not None:
        binding = tree.reaching_binding(place.block, place.index, mask.value)
        if binding is not None and elementwise_of(rule, binding.value, tensor):
            used = tree.name_values(binding.value)
            return unchanged_between(rule, place.block, binding.index, place.index, used)
    return False


def atom(node: cst.BaseExpression) -> cst.BaseExpression:
    """``node`` as one operand of a postfix (``.attr``, ``[...]``, a call): parenthesised
    unless it already binds that tightly (a name, attribute, call, subscript, or in parentheses)."""
    if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def wrapped(rule, original: cst.CSTNode, replacement: cst.BaseExpression) -> cst.BaseExpression:
    """``replacement`` in parentheses when it is an operation standing in for an
    operand (``2 / x[m].mean()`` must not become ``2 / a / b``)."""
    if not isinstance(replacement, (cst.BinaryOperation, cst.Comparison, cst.BooleanOperation, cst.UnaryOperation)):
        return replacement
    outer = tree.parent(rule, original)
    if isinstance(outer, (cst.BinaryOperation, cst.UnaryOperation, cst.Attribute, cst.Subscript, cst.Comparison)):
        return replacement.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return replacement
