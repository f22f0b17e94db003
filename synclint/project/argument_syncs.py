"""Helpers whose sync acts on one of their parameters: ``item(t)``, ``nonzero_tuple(x)``.

``def item(tensor): return tensor.item()`` makes the host wait only when its
caller hands it a device tensor: whether (and how often) it syncs is the call
site's business, not the helper's. Such a sync is reported at each project call
site, in the caller's context (see ``FileFacts.argument_syncs``), and not at the
helper's line, when the helper returns the op's result (it is the op under another
name). A sync on a value the function makes itself (``x.sum().item()`` of a local
tensor, ``t.cuda().item()``), or one it makes on the way to computing something
else (a loop of ``.item()`` reads of its argument), stays where it happens.

:func:`argument_sync` recognises, in CPython's ``ast``, an op of the sync
catalogue applied to a parameter: as a method of the parameter (``x.nonzero()``)
or of a view or cast of it (``x.unsqueeze(0).nonzero()``,
``loss.data.item()``, ``t.detach().float().item()``), or as a torch function with the parameter first
(``torch.nonzero(x)``). The parameter must never be rebound in the function.
"""

from __future__ import annotations

import ast
import re
from typing import NamedTuple

from synclint.catalogue import SyncCondition, SyncOp, by_function, by_method
from synclint.project.residency import VIEWS_AND_CASTS
from synclint.project.scopes import all_nodes, child_nodes, function_nodes, nested_scopes

#: Rules that report these ops at the call sites (they match ops through the catalogue
#: with the same receiver policy at a call site as at the op).
_CODES = frozenset({"SL101", "SL102", "SL105", "SL201"})
#: Views and casts: their result is the argument's data, where the argument lives.
#: Not moves (``to``/``cuda``: the helper decides the device, so the sync is its own),
#: nor reductions or arithmetic (``x.sum()``, ``x > 0``: a value the helper computes).
_SAME_VALUE_METHODS = VIEWS_AND_CASTS
_SAME_VALUE_ATTRIBUTES = frozenset({"data", "T", "mT", "real", "imag"})


class ArgumentSync(NamedTuple):
    """One sync of a function on one of its parameters."""

    param: str
    line: int
    column: int  # CPython's 0-based offset (UTF-8 bytes) of the op's call
    code: str  # the rule that reports it
    op: str  # the catalogue entry's name: ``host read-back``, ``nonzero``
    #: How the op is spelled: ``.item()`` (a method: the receiver policy of that
    #: method applies at the call site) or ``torch.nonzero``.
    spelled: str
    method: str | None
    #: The parameter is annotated as a tensor: the helper's contract, evidence at its calls.
    tensor_param: bool = False


def argument_sync(
    node: ast.Call, arguments: frozenset[str], qualify
) -> ArgumentSync | None:
    """The sync ``node`` performs on a parameter in ``arguments``, or None.

    ``qualify``: the dotted name a call target stands for through the file's
    imports (``T.nonzero`` -> ``torch.nonzero``), or None.
    """
    func = node.func
    if isinstance(func, ast.Attribute):
        param = _parameter_root(func.value, arguments)
        if param is not None:
            for op in by_method(func.attr):
                if _reported_here(op):
                    return ArgumentSync(param, node.lineno, node.col_offset, op.code, op.name, f"`.{func.attr}()`", func.attr)
    if not node.args or isinstance(node.args[0], ast.Starred):
        return None
    qualified = qualify(func)
    op = by_function(qualified) if qualified else None
    if op is None or not _reported_here(op):
        return None
    param = _parameter_root(node.args[0], arguments)
    if param is None:
        return None
    return ArgumentSync(param, node.lineno, node.col_offset, op.code, op.name, f"`{qualified}`", None)


def _reported_here(op: SyncOp) -> bool:
    return op.code in _CODES and op.condition is SyncCondition.ALWAYS


def _parameter_root(node: ast.AST, arguments: frozenset[str]) -> str | None:
    """The parameter ``node`` is, looking through views and casts of it."""
    while True:
        if isinstance(node, ast.Name):
            return node.id if node.id in arguments else None
        if isinstance(node, ast.Attribute) and node.attr in _SAME_VALUE_ATTRIBUTES:
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _SAME_VALUE_METHODS
        ):
            node = node.func.value
        else:
            return None


#: Builtins that only convert what they are given: ``float(x.item())`` is still the op's result.
_CONVERSIONS = frozenset({"float", "int", "bool", "tuple", "list"})


def returned_calls(node: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[tuple[int, int]]:
    """(line, column) of the calls whose result the function returns as it is, or
    indexed, converted or through a method of it: ``return x.nonzero(as_tuple=True)``,
    ``return x.nonzero().unbind(1)``, ``return float(t.item())``, ``return torch.nonzero(x)[0]``.

    A helper that returns a sync's result on its parameter is that op under another
    name (``item(t)``, ``nonzero_tuple(x)``): its calls are the op. A helper that syncs
    on the way to computing something else (a loop of ``.item()`` reads, a guard's
    ``.tolist()``) does its own work with the sync, which is fixed there.
    """
    found = set()
    for current in function_nodes(node):
        if isinstance(current, ast.Return):
            value = current.value
            while value is not None:
                if isinstance(value, ast.Subscript):
                    value = value.value
                elif isinstance(value, ast.Call):
                    found.add((value.lineno, value.col_offset))
                    func = value.func
                    if isinstance(func, ast.Attribute):
                        value = func.value
                    elif isinstance(func, ast.Name) and func.id in _CONVERSIONS and len(value.args) == 1:
                        value = value.args[0]
                    else:
                        value = None
                else:
                    value = None
    return frozenset(found)


def tensor_parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """Parameters annotated as a tensor (``x: torch.Tensor``, ``Optional[Tensor]``)."""
    args = node.args
    return frozenset(
        a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if a.annotation is not None and re.fullmatch(r"((typing\.)?Optional\[)?\s*(torch\.)?Tensor\s*\]?(\s*\|\s*None)?",
                                                      ast.unparse(a.annotation))
    )


def stable_parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The parameters (not ``self``/``cls``) the body never rebinds: not in its own code,
    nor in the functions, lambdas and classes within it (or in its header's), whose
    parameters shadow them."""
    args = node.args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]} - {"self", "cls"}
    body = {id(statement) for statement in node.body}
    elsewhere = [*(child for child in child_nodes(node) if id(child) not in body), *nested_scopes(node)]
    for current in (*function_nodes(node), *(descendant for part in elsewhere for descendant in all_nodes(part))):
        if isinstance(current, ast.Name) and isinstance(current.ctx, (ast.Store, ast.Del)):
            params.discard(current.id)
        elif isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner = current.args
            params -= {a.arg for a in [*inner.posonlyargs, *inner.args, *inner.kwonlyargs]}  # shadowed
    return frozenset(params)


class CallSiteSync(NamedTuple):
    """What a call of a helper syncs on, as the caller's analysis needs it."""

    position: int  # of the parameter among the positional ones (without ``self``/``cls``)
    param: str
    code: str
    op: str
    spelled: str
    method: str | None
    helper: str  # the helper's qualname, for the message
    tensor_param: bool = False


def call_site_syncs(helper: str, params: tuple[str, ...], is_method: bool, syncs) -> tuple[CallSiteSync, ...]:
    """The syncs ``syncs`` of ``helper`` (with ``params``), keyed for binding a call's arguments."""
    positional = list(params[1:] if is_method and params[:1] in (("self",), ("cls",)) else params)
    found = []
    for sync in syncs:
        if sync.param in positional:
            found.append(CallSiteSync(positional.index(sync.param), sync.param, sync.code, sync.op, sync.spelled,
                                      sync.method, helper, sync.tensor_param))
    return tuple(found)
