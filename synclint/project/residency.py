"""Names of one function that hold host tensors, read from the function's own code.

Host memory is known from positive evidence only: a factory without a device, ``.cpu()``
(see ``host_expression``), and the one tensor PyTorch keeps on the host by contract: a
``PackedSequence``'s ``batch_sizes``. ``pack_padded_sequence`` builds it on the CPU,
the ``PackedSequence`` constructor refuses any other device and ``PackedSequence.to()``
leaves it where it is, so ``packed.batch_sizes`` (and the second field of
``data, batch_sizes, sorted_indices, unsorted_indices = packed``) is a host tensor
whatever device the data is on.

All functions take CPython ``ast`` nodes; the summary builder calls them. What a
parameter holds depends on the callers: the project index decides that from the call
sites (:meth:`synclint.project.index.ProjectIndex.host_parameters`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection

from synclint.project.scopes import BINDERS_OTHER_THAN_NAMES, function_nodes, names_bound_by, nested_scopes, walk_nodes

#: Field of a ``PackedSequence`` (a named tuple) that always lives on the host, and its position.
_HOST_FIELD = "batch_sizes"
_HOST_FIELD_POSITION = 1
_PACKED_FIELDS = 4
_PACKED_CLASS = "PackedSequence"
#: Functions returning a ``PackedSequence``.
_PACKERS = frozenset({"pack_padded_sequence", "pack_sequence", _PACKED_CLASS})



def _last_name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _names_packed(annotation: ast.AST | None) -> bool:
    return annotation is not None and any(_last_name(n) == _PACKED_CLASS for n in walk_nodes(annotation))


def packed_sequences(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names that hold a ``PackedSequence``: annotated so, tested with
    ``isinstance(x, PackedSequence)``, or built by ``pack_padded_sequence`` — and the
    plain names copied to or from one (``orig_input = input``)."""
    args = node.args
    packed = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if _names_packed(a.annotation)}
    copies: list[tuple[str, str]] = []
    for current in function_nodes(node):
        if isinstance(current, ast.Call) and isinstance(current.func, ast.Name) and current.func.id == "isinstance":
            if len(current.args) == 2 and isinstance(current.args[0], ast.Name) and _names_packed(current.args[1]):
                packed.add(current.args[0].id)
        elif isinstance(current, ast.Assign) and len(current.targets) == 1 and isinstance(current.targets[0], ast.Name):
            target, value = current.targets[0].id, current.value
            if isinstance(value, ast.Name):
                copies.append((target, value.id))
            elif isinstance(value, ast.Call) and _last_name(value.func) in _PACKERS:
                packed.add(target)
    changed = True
    while changed:
        changed = False
        for target, source in copies:
            if (target in packed) != (source in packed):
                packed.update((target, source))
                changed = True
    return packed


def is_host_field(node: ast.AST, packed: Collection[str]) -> bool:
    """``packed.batch_sizes`` of a ``PackedSequence``."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == _HOST_FIELD
        and isinstance(node.value, ast.Name)
        and node.value.id in packed
    )


def host_names(
    node: ast.FunctionDef | ast.AsyncFunctionDef, packed: set[str], host_expression: Callable[[ast.AST], bool]
) -> set[str]:
    """Local names (not parameters) every assignment of which is a host tensor or ``None``:
    ``batch_sizes`` in ``batch_sizes = None`` / ``input, batch_sizes, _, _ = input`` (a
    ``PackedSequence``). A name only ever ``None`` holds no device tensor either."""
    args = node.args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    verdicts: dict[str, list[bool | None]] = {}  # per assignment: host (True), None (None), other (False)
    for current in function_nodes(node):
        if isinstance(current, ast.Assign):
            for target in current.targets:
                _record(target, current.value, packed, host_expression, verdicts)
        elif isinstance(current, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
            for leaf in walk_nodes(current.target):
                if isinstance(leaf, ast.Name):
                    verdicts.setdefault(leaf.id, []).append(False)
        elif isinstance(current, (ast.With, ast.AsyncWith)):
            for item in current.items:
                for leaf in walk_nodes(item.optional_vars) if item.optional_vars is not None else ():
                    if isinstance(leaf, ast.Name):
                        verdicts.setdefault(leaf.id, []).append(False)
    return {
        name
        for name, seen in verdicts.items()
        if name not in params and all(verdict is not False for verdict in seen)
    }


def _record(target, value, packed, host_expression, verdicts) -> None:
    if isinstance(target, ast.Name):
        if isinstance(value, ast.Constant) and value.value is None:
            verdict = None
        else:
            verdict = is_host_field(value, packed) or host_expression(value)
        verdicts.setdefault(target.id, []).append(verdict)
        return
    if isinstance(target, (ast.Tuple, ast.List)):
        unpacks_packed = (
            isinstance(value, ast.Name) and value.id in packed and len(target.elts) == _PACKED_FIELDS
        )
        for position, element in enumerate(target.elts):
            for leaf in walk_nodes(element):
                if isinstance(leaf, ast.Name):
                    host = unpacks_packed and position == _HOST_FIELD_POSITION and leaf is element
                    verdicts.setdefault(leaf.id, []).append(host)


def rebound_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names the body assigns (``except ... as``, a ``match`` capture, an import, a nested
    ``def``/``class`` too), or a function nested in it rebinds (``nonlocal flag``): a
    parameter among them no longer holds what the caller passed."""
    found = closure_rebound_names(node)
    for current in function_nodes(node):
        if isinstance(current, ast.Name):
            if isinstance(current.ctx, (ast.Store, ast.Del)):
                found.add(current.id)
        elif type(current) in BINDERS_OTHER_THAN_NAMES:
            found.update(names_bound_by(current))
    for scope in nested_scopes(node):
        found.update(names_bound_by(scope))
    return found


def closure_rebound_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Locals of ``node`` that a function nested in it rebinds (``nonlocal flag``): any
    call of that function may set them, wherever the call is."""
    found = set()
    for scope in nested_scopes(node):  # (their own nodes: the summary reads them anyway)
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.update(name for inner in function_nodes(scope) if isinstance(inner, ast.Nonlocal) for name in inner.names)
    return found


#: Views and casts of dtype: their result is the tensor's data, where the tensor lives (also
#: what :mod:`synclint.project.argument_syncs` takes for the argument's own value).
VIEWS_AND_CASTS = frozenset({
    "detach", "clone", "float", "double", "half", "long", "int", "bool", "view", "reshape", "flatten",
    "contiguous", "squeeze", "unsqueeze", "t", "transpose", "permute", "view_as", "reshape_as",
})
#: Methods whose result lives where their tensor does: views, reshapes and casts of dtype
#: (``.cpu()`` and ``.numpy()`` too: a host tensor stays on the host). Not ``.to``,
#: ``.cuda`` or ``.type``, which may move it.
IN_PLACE_METHODS = VIEWS_AND_CASTS | frozenset({
    "expand", "expand_as", "narrow", "select", "bfloat16", "short", "byte", "cpu", "numpy", "unflatten", "movedim",
})
#: Attributes of a tensor that are tensors where it lives.
IN_PLACE_ATTRIBUTES = frozenset({"data", "T", "mT", "real"})


def kept_in_place(node: ast.FunctionDef | ast.AsyncFunctionDef, names: Collection[str]) -> frozenset[str]:
    """Those of ``names`` (parameters the body rebinds) that every binding rebinds to a
    view or cast of themselves (HybrIK's ``labels = labels.reshape(n, joints, -1)``, then
    ``labels[:, :, :3].reshape(...)``): a host tensor passed for one stays on the host.
    Not one a nested function rebinds, nor one bound any other way (a loop's target,
    ``x = x.to(device)``, ``x, y = ...``)."""
    candidates = set(names) - closure_rebound_names(node)
    in_place: dict[str, bool] = {}
    read: set[int] = set()  # the targets of the assignments judged here
    nodes = list(function_nodes(node))
    for current in nodes:
        if isinstance(current, ast.Assign) and len(current.targets) == 1 and isinstance(current.targets[0], ast.Name):
            name = current.targets[0].id
            if name in candidates:
                in_place[name] = in_place.get(name, True) and _view_of(current.value, name)
                read.add(id(current.targets[0]))
    for current in nodes:
        if (isinstance(current, ast.Name) and isinstance(current.ctx, (ast.Store, ast.Del))
                and current.id in candidates and id(current) not in read):
            in_place[current.id] = False  # a loop's target, an unpacking, ``del``, ``x += 1``
    return frozenset(name for name, ok in in_place.items() if ok)


def _view_of(value: ast.expr, name: str) -> bool:
    """``name.reshape(...)[:, :3].float()``: a chain of views and casts of ``name``; or
    arithmetic of such chains and numbers (``labels - labels[:, root]``, ``labels * 1000``).
    Not arithmetic with anything else (``value * weight``): a 0-dim host tensor meets a
    device tensor without error, and the result lives on the device."""
    if isinstance(value, ast.BinOp):
        sides = (value.left, value.right)
        return all(_view_of(side, name) or _is_number(side) for side in sides) and not all(map(_is_number, sides))
    while True:
        if isinstance(value, ast.Name):
            return value.id == name
        if isinstance(value, ast.Subscript):
            value = value.value
        elif isinstance(value, ast.Attribute) and value.attr in IN_PLACE_ATTRIBUTES:
            value = value.value
        elif (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
              and value.func.attr in IN_PLACE_METHODS):
            value = value.func.value
        else:
            return False


def _is_number(value: ast.expr) -> bool:
    """``2.0``, ``-1``, ``1e-6``: a number written out."""
    while isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
        value = value.operand
    return isinstance(value, ast.Constant) and isinstance(value.value, (int, float)) and not isinstance(value.value, bool)
