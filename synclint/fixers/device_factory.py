"""SL403: build tensors on the device instead of on the host and copying them.

* ``torch.tensor(0.0, device=d)`` -> ``torch.zeros((), device=d)``;
  ``torch.tensor(v, device=d)`` for another scalar literal -> ``torch.full((), v, device=d)``
  (``full`` infers the same dtype from ``v`` as ``tensor`` does: float, int64, bool);
* ``torch.zeros(4).cuda()`` / ``torch.arange(n).to(d)`` -> the factory with ``device=``.

Preconditions (proven, else no fix and the finding says why):

* ``full`` accepts the literal as ``tensor`` does: ``torch.tensor(1e39)`` is ``inf``
  in float32 but ``torch.full((), 1e39)`` raises, so floats must be within
  bfloat16's finite range and ints within int64 (see ``_fits``);
* the destination is a device by how it was computed (``proofs.device_proof``): a
  string, ``torch.device(...)``, ``tensor.device`` or a name bound only to those —
  not a name that merely contains "dev" (``std_dev``, ``dev_dtype``), and not a
  tensor (``.to(other)`` also casts to its dtype);
* the move does nothing else: one destination, no ``dtype``/``copy``/``memory_format``;
* the factory is a known torch factory without ``requires_grad`` (the moved result
  is not a leaf, the created one would be), ``pin_memory`` (cannot pin a device
  tensor) or ``*args`` / ``**kwargs`` (they may already hold a device);
* ``torch`` is reachable there.

Safe: same values, dtype and device. Random factories (``rand``, ``randn``,
...) are the exception — the device generator draws different numbers than
the CPU one — so moving them is offered as unsafe.
"""

from __future__ import annotations

import libcst as cst

from synclint.analysis.inference import keyword, positional
from synclint.fixers import fixer, tree
from synclint.fixers.base import Declined, FixProposal
from synclint.fixers.keywords import set_keyword
from synclint.fixers.patterns import torch_name
from synclint.fixers.proofs import device_proof

_MOVABLE = frozenset(
    {"zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "tensor", "as_tensor",
     "zeros_like", "ones_like", "empty_like", "full_like"}
)
_RANDOM = frozenset({"rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like"})
_BFLOAT16_MAX = 3.3895313892515355e38


@fixer("SL403")
def propose_device_factory(rule, node: cst.CSTNode) -> FixProposal | Declined | None:
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
    if not _fits(number):
        return Declined("the literal may not fit the tensor's dtype (`torch.full` raises where `torch.tensor` overflows to inf)")
    # The name bound to torch, not the callee's own text: after `from torch import tensor`
    # the callee is `tensor`, and `tensor.zeros` does not exist.
    named = torch_name(rule, call)
    if isinstance(named, Declined):
        return named
    prefix, imports = named
    keywords = [a for a in call.args if a.keyword is not None]
    tail = "".join(f", {tree.code(a.with_changes(comma=cst.MaybeSentinel.DEFAULT))}" for a in keywords)
    if number == 0 and isinstance(number, float) and not tree.code(value).startswith("-"):
        new = f"{prefix}.zeros(()" + tail + ")"
    else:
        new = f"{prefix}.full((), {tree.code(value)}" + tail + ")"
    return FixProposal("safe", "Create the scalar on the device", {call: tree.expr(new)}, imports)


def _fits(number: int | float | bool) -> bool:
    """``torch.full`` accepts ``number`` wherever ``torch.tensor`` does, for any dtype.

    Measured: both raise on an int beyond the dtype (``300`` as uint8) and both wrap
    ``-1`` into uint8; float16 overflows to inf in both; but a float beyond
    bfloat16/float32's range (``1e39``) is inf from ``tensor`` and an error from
    ``full``. So floats must be within bfloat16's (the smaller) finite range, and
    ints within int64 (beyond it ``tensor`` and ``full`` fail differently)."""
    if isinstance(number, bool):
        return True
    if isinstance(number, float):
        return abs(number) <= _BFLOAT16_MAX
    return -(2**63) <= number < 2**63


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
        return Declined("`*args` / `**kwargs` may already hold a device")
    qualified = rule.context.qualify(factory.func) or ""
    short = qualified.rsplit(".", 1)[-1]
    if not qualified.startswith("torch.") or short not in _MOVABLE | _RANDOM:
        return None
    device = _destination(move)
    if device is None or keyword(factory, "device") is not None:
        return None
    if not device_proof(rule, device, move):
        return Declined("the destination is not known to be a device (it could be a tensor or a dtype)")
    if keyword(factory, "requires_grad") is not None or keyword(factory, "pin_memory") is not None:
        return Declined("`requires_grad` / `pin_memory` behave differently on a tensor created on the device")
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
    if method == "to" and len(args) == 1 and args[0].keyword is None:
        return args[0].value  # proven a device (or not) by the caller
    return None
