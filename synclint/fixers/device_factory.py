"""SL403: build tensors on the device instead of on the host and copying them.

* ``torch.tensor(0.0, device=d)`` -> ``torch.zeros((), device=d)``;
  ``torch.tensor(v, device=d)`` for another scalar literal -> ``torch.full((), v, device=d)``
  (``full`` infers the same dtype from ``v`` as ``tensor`` does: float, int64, bool);
* ``torch.zeros(4).cuda()`` / ``torch.arange(n).to(d)`` -> the factory with ``device=``.

Safe: same values, dtype and device. Random factories (``rand``, ``randn``,
...) are the exception — the device generator draws different numbers than
the CPU one — so moving them is offered as unsafe.
"""

from __future__ import annotations

import libcst as cst

from synclint.analysis.inference import keyword, positional
from synclint.fixers import fixer, tree
from synclint.fixers.base import FixProposal
from synclint.fixers.keywords import set_keyword
from synclint.fixers.patterns import torch_name

_RANDOM = frozenset({"rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like"})


@fixer("SL403")
def propose_device_factory(rule, node: cst.CSTNode) -> FixProposal | None:
    if not isinstance(node, cst.Call):
        return None
    qualified = rule.context.qualify(node.func)
    if qualified in ("torch.tensor", "torch.as_tensor"):
        return _scalar_on_device(rule, node)
    return _factory_with_device(rule, node)


def _scalar_on_device(rule, call: cst.Call) -> FixProposal | None:
    args = positional(call)
    if len(args) != 1 or any(a.star for a in call.args):
        return None
    value = args[0].value
    number = _scalar_literal(value)
    if number is None:
        return None  # lists and names stay (their data lives on the host)
    # The name bound to torch, not the callee's own text: after `from torch import tensor`
    # the callee is `tensor`, and `tensor.zeros` does not exist.
    prefix, imports = torch_name(rule)
    keywords = [a for a in call.args if a.keyword is not None]
    tail = "".join(f", {tree.code(a.with_changes(comma=cst.MaybeSentinel.DEFAULT))}" for a in keywords)
    if number == 0 and isinstance(number, float) and not tree.code(value).startswith("-"):
        new = f"{prefix}.zeros(()" + tail + ")"
    else:
        new = f"{prefix}.full((), {tree.code(value)}" + tail + ")"
    return FixProposal("safe", "Create the scalar on the device", {call: tree.expr(new)}, imports)


def _scalar_literal(node: cst.BaseExpression) -> int | float | bool | None:
    if isinstance(node, (cst.Integer, cst.Float)):
        return node.evaluated_value
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _scalar_literal(node.expression)
        return None if inner is None or isinstance(inner, bool) else -inner
    return None


def _factory_with_device(rule, move: cst.Call) -> FixProposal | None:
    if not isinstance(move.func, cst.Attribute) or not isinstance(move.func.value, cst.Call):
        return None
    factory = move.func.value
    if any(a.star for a in (*factory.args, *move.args)):
        return None  # `**kw` may already hold a device (a second one is a TypeError)
    device = _destination(move)
    if device is None or keyword(factory, "device") is not None or rule.context.kind_of(device).is_tensor:
        return None  # `.to(other_tensor)` also casts to its dtype
    short = (rule.context.qualify(factory.func) or "").rsplit(".", 1)[-1]
    fixed = set_keyword(factory, "device", device)
    safety = "unsafe" if short in _RANDOM else "safe"
    return FixProposal(safety, "Create the tensor on the device with `device=`", {move: fixed})


def _destination(move: cst.Call) -> cst.BaseExpression | None:
    """The device of ``.cuda()`` / ``.cuda(0)`` / ``.to(d)`` / ``.to(device=d)``; None
    when the call does more than move (a dtype, ``copy=``) or names no device."""
    method = move.func.attr.value  # type: ignore[union-attr]
    args = [a for a in move.args if not (a.keyword and a.keyword.value == "non_blocking")]
    if method == "cuda":
        if not args:
            return cst.SimpleString("'cuda'")
        if len(args) == 1 and isinstance(args[0].value, cst.Integer) and args[0].keyword in (None,):
            return cst.SimpleString(f"'cuda:{args[0].value.value}'")
        return None
    if method == "to" and len(args) == 1 and (args[0].keyword is not None and args[0].keyword.value == "device"):
        return args[0].value
    if method == "to" and len(args) == 1 and args[0].keyword is None and _names_a_device(args[0].value):
        return args[0].value
    return None


def _names_a_device(node: cst.BaseExpression) -> bool:
    """``"cuda"``, ``x.device``, ``device`` / ``dev``, ``torch.device(...)``: not a tensor
    (``.to(other)`` would also take ``other``'s dtype)."""
    if isinstance(node, cst.SimpleString):
        return True
    if isinstance(node, cst.Attribute):
        return node.attr.value == "device"
    if isinstance(node, cst.Name):
        return "dev" in node.value.lower()
    return isinstance(node, cst.Call) and tree.code(node.func).endswith("device")
