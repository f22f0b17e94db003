"""SL104: ``repeat_interleave`` whose output size the host can know -> ``output_size=``.

The output length along the repeated dimension is ``repeats.sum()``; PyTorch reads it
back to allocate the result unless ``output_size`` is given. When ``repeats`` is

* ``torch.bincount(v[, minlength=K])`` (no weights): its sum is ``v.numel()`` — every
  element of ``v`` is counted once (a negative one makes ``bincount`` raise first);
* ``torch.full((n,), k)`` / ``x.new_full((n,), k)`` with an int literal ``k >= 0``: ``n * k``;

the size is that host-side expression, and passing it changes nothing but the sync::

    torch.repeat_interleave(torch.arange(K), torch.bincount(batch, minlength=K))
    -> torch.repeat_interleave(torch.arange(K), torch.bincount(batch, minlength=K), output_size=batch.numel())

Preconditions (proven, else no fix and the finding says why): ``repeats`` is such a
call, directly or through a name every binding of which is one in this function, and
``v`` / ``n`` are names or attributes (read again, unchanged: a name's binding must
not be reassigned — ``proofs.all_bindings`` sees every binding); no ``output_size``,
``*args`` or ``**kwargs`` already. Safe: the values are the same.
"""

from __future__ import annotations

import libcst as cst

from synclint.analysis.inference import keyword, positional
from synclint.fixers import fixer, tree
from synclint.fixers.base import Declined, FixProposal
from synclint.fixers.keywords import set_keyword
from synclint.fixers.proofs import all_bindings, has_param


@fixer("SL104")
def propose_output_size(rule, node: cst.CSTNode) -> FixProposal | Declined | None:
    if not isinstance(node, cst.Call) or any(a.star for a in node.args) or keyword(node, "output_size") is not None:
        return None
    qualified = rule.context.qualify(node.func)
    args = positional(node)
    given = keyword(node, "repeats")
    if given is not None:
        repeats = given.value
    elif qualified == "torch.repeat_interleave":
        repeats = args[1].value if len(args) > 1 else (args[0].value if len(args) == 1 else None)
    elif qualified is None and isinstance(node.func, cst.Attribute):
        repeats = args[0].value if args else None
    else:
        return None
    if repeats is None:
        return None
    size = _known_sum(rule, repeats, node)
    if size is None:
        return Declined("the sum of `repeats` is not known on the host (pass `output_size=` yourself)")
    return FixProposal("safe", "Pass the output size the host already knows", {node: set_keyword(node, "output_size", tree.expr(size))})


def _known_sum(rule, repeats: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> str | None:
    if isinstance(repeats, cst.Name) and depth == 0:
        values = all_bindings(rule, repeats.value, at)
        if not values or len(values) != 1:
            return None
        return _known_sum(rule, values[0], at, depth + 1)
    if not isinstance(repeats, cst.Call) or any(a.star for a in repeats.args):
        return None
    qualified = rule.context.qualify(repeats.func)
    counted = None
    if qualified == "torch.bincount":
        rest = positional(repeats)
        counted = rest[0].value if len(rest) == 1 else None
    elif qualified is None and isinstance(repeats.func, cst.Attribute) and repeats.func.attr.value == "bincount" and not positional(repeats):
        counted = repeats.func.value
    if counted is not None:
        if keyword(repeats, "weights") is not None or not _stable_reference(rule, counted, at):
            return None
        return f"{tree.code(counted)}.numel()"
    shape_and_value = None
    if qualified == "torch.full" and len(positional(repeats)) == 2:
        shape_and_value = [a.value for a in positional(repeats)]
    elif qualified is None and isinstance(repeats.func, cst.Attribute) and repeats.func.attr.value == "new_full" and len(positional(repeats)) == 2:
        shape_and_value = [a.value for a in positional(repeats)]
    if shape_and_value is None:
        return None
    shape, value = shape_and_value
    if not (isinstance(value, cst.Integer) and isinstance(shape, (cst.Tuple, cst.List)) and len(shape.elements) == 1):
        return None
    n = shape.elements[0].value
    if not (isinstance(n, cst.Integer) or _stable_reference(rule, n, at)):
        return None
    return f"{tree.code(n)} * {value.value}" if value.value != "1" else tree.code(n)


def _stable_reference(rule, node: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """A name bound once in this function (or a parameter), or an attribute of one."""
    while isinstance(node, cst.Attribute):
        node = node.value
    if not isinstance(node, cst.Name):
        return False
    function = tree.enclosing_function(rule, at)
    if function is None:
        return False
    bindings = [n for n in tree.walk(function.body) if tree._binds_here(n, node.value)]
    is_parameter = has_param(function.params, node.value)
    return len(bindings) == (0 if is_parameter else 1)  # `batch = batch[:1]` after the count
