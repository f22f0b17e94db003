"""SL201: a Python float accumulated from ``.item()`` every step -> accumulated on the device.

::

    total = 0.0                                   total = 0.0
    for batch in loader:                          for batch in loader:
        loss = step(batch)               ->           loss = step(batch)
        total += loss.item()                          total += loss.detach().double().reshape(())
    print(total / len(loader))                    total = float(total)
                                                  print(total / len(loader))

``.item()`` waits for the step's kernels every iteration; the fixed loop queues one
addition and reads the sum back once, after the loop (``total = float(total)``), so
the code after the loop sees the same Python float.

Why the values are equal: ``.item()`` of a floating tensor is an IEEE double, and the
Python sum adds doubles in loop order; the fix adds the same doubles (``.double()``)
in the same order, so the result is bit-identical. ``.reshape(())`` raises at once
for a tensor with more than one element, where ``.item()`` raised.

Preconditions (proven, else no fix and the finding says why):

* ``total += <x>.item()`` is in a ``for`` / ``while`` loop, ``<x>`` is a tensor;
* ``total`` is a local bound to a float literal (``0.0``) on a line before the loop in
  the same block (so the original result is a float even after no iteration, and
  ``float(total)`` keeps that type);
* inside the loop ``total`` is used by that ``+=`` alone (nothing reads the running
  value, which is now a tensor), and nothing between the binding and the loop uses it;
* no ``global`` / ``nonlocal`` declaration of ``total``.

Unsafe: inside the loop ``total`` is a 0-d float64 device tensor (MPS has no
float64: the fix raises there); a non-numeric ``.item()`` (complex) is not covered.
"""

from __future__ import annotations

import libcst as cst

from synclint.fixers import fixer, tree
from synclint.fixers.base import Declined, FixProposal
from synclint.fixers.proofs import is_tensor

_LOOPS = (cst.For, cst.While)


@fixer("SL201")
def propose_device_accumulation(rule, node: cst.CSTNode) -> FixProposal | Declined | None:
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "item"):
        return None
    if node.args:
        return None
    aug = tree.parent(rule, node)
    if not (isinstance(aug, cst.AugAssign) and aug.value is node and isinstance(aug.operator, cst.AddAssign)):
        return None
    if not isinstance(aug.target, cst.Name):
        return None
    name = aug.target.value
    if not is_tensor(rule, node.func.value):
        return Declined("the value read with `.item()` is not known to be a tensor")
    loop, binding = _loop_and_binding(rule, aug, name)
    if loop is None or binding is None:
        return Declined(f"`{name}` is not a float bound right before the loop and used only by this `+=` inside it")
    function = tree.enclosing_function(rule, loop)
    scope = function.body if function is not None else rule.context.module
    if any(isinstance(n, (cst.Global, cst.Nonlocal)) and any(i.name.value == name for i in n.names) for n in tree.walk(scope)):
        return Declined(f"`{name}` is declared global or nonlocal")
    accumulated = tree.expr(f"{tree.code(_atom(node.func.value))}.detach().double().reshape(())")
    new_loop = loop.deep_replace(node, accumulated)
    read_back = cst.parse_statement(f"{name} = float({name})\n")
    return FixProposal(
        "unsafe",
        f"Accumulate `{name}` on the device and read it back once after the loop",
        {loop: cst.FlattenSentinel([new_loop, read_back])},
    )


def _atom(node: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _loop_and_binding(rule, aug: cst.AugAssign, name: str):
    """The outermost enclosing loop (not crossing a function) whose own block binds
    ``name = <float literal>`` before it, with ``name`` used in it only as ``aug``'s target."""
    for ancestor in tree.ancestors(rule, aug):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None, None
        if not isinstance(ancestor, _LOOPS):
            continue
        place = tree.place_of(rule, ancestor)
        if place is None:
            continue
        binding = tree.reaching_binding(place.block, place.index, name)
        if binding is None or not isinstance(binding.value, cst.Float):
            continue
        uses = tree.occurrences(name, [ancestor])
        if len(uses) != 1 or uses[0] is not aug.target:
            return None, None
        between = place.block[binding.index + 1 : place.index]
        if tree.occurrences(name, list(between)):
            return None, None
        return ancestor, binding
    return None, None
