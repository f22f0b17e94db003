"""Attributes that hold one constant for the whole run, and the blocks their tests close.

minRF's ``RF.__init__`` sets ``self.stratified = False`` and nothing in the project
ever sets it again: ``if self.stratified:`` in ``RF.forward`` is dead, and so is any
sync in its block. An attribute is *constant* when every store of its name anywhere in
the project (``x.name = ...``, ``x.name += ...``, a ``for``/``with`` target, a class body's
``name = ...``, ``setattr(x, "name", ...)``, ``register_buffer("name", ...)``) is
``self.name = <constant>`` in an ``__init__``: its values are those constants. Any other
store of the name, in any class, makes it unknown (a subclass or a script may set it:
``model.stratified = True``). The name is matched alone, not per class: erring towards
"may be set".

Nothing is constant in a project whose program code could store an attribute by a
computed name (``setattr(obj, key, value)``, ``obj.__dict__.update(...)``,
``vars(obj)[k] = v``) or customises stores (``def __setattr__``), nor a name the project
also defines as a function (a property, whose setter may store anything), nor
``training`` (which ``Module.train()``/``eval()`` set).

All collection works on CPython ``ast`` nodes the summary already walks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from synclint.project.rare_blocks import constant_value

#: A store of a name with a value the summary cannot tell: ``()``; a constant: ``(value,)``.
StoredValue = tuple[()] | tuple[object]
UNKNOWN_VALUE: StoredValue = ()

#: Calls that store an attribute named by their (constant) string argument: position of it.
_NAMED_STORES = {"setattr": 1, "register_buffer": 0, "register_parameter": 0, "add_module": 0, "register_module": 0}
#: The nodes that may store an attribute.
_STORING = frozenset({ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.withitem,
                      ast.Call, ast.Attribute})
#: Attributes PyTorch itself sets on modules.
_SET_BY_TORCH = frozenset({"training"})


def attribute_stores(nodes: Iterable[ast.AST], in_init: bool) -> tuple[dict[str, list[StoredValue]], bool]:
    """The attribute stores among a scope's own ``nodes``: name -> the values stored
    (constants of ``self.name = <constant>`` in an ``__init__`` when ``in_init``, else
    unknown); and whether the scope stores an attribute by a computed name."""
    stores: dict[str, list[StoredValue]] = {}
    dynamic = False
    for node in nodes:
        kind = type(node)
        if kind not in _STORING:  # (most nodes: every node of the file passes here)
            continue
        if kind is ast.Assign:
            for target in node.targets:
                _targets(target, node.value if in_init and len(node.targets) == 1 else None, stores)
        elif kind is ast.AnnAssign or kind is ast.AugAssign:
            _targets(node.target, node.value if in_init and kind is ast.AnnAssign else None, stores)
        elif kind is ast.For or kind is ast.AsyncFor or kind is ast.comprehension:
            _targets(node.target, None, stores)
        elif kind is ast.withitem and node.optional_vars is not None:
            _targets(node.optional_vars, None, stores)
        elif kind is ast.Call:
            dynamic = _named_store(node, stores) or dynamic
        elif kind is ast.Attribute and node.attr == "__dict__" and not isinstance(node.ctx, ast.Load):
            dynamic = True
    return stores, dynamic


def _targets(target: ast.AST, value: ast.expr | None, stores: dict[str, list[StoredValue]]) -> None:
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            _targets(element, None, stores)
    elif isinstance(target, ast.Starred):
        _targets(target.value, None, stores)
    elif isinstance(target, ast.Attribute):
        own = isinstance(target.value, ast.Name) and target.value.id == "self"
        stored = constant_value(value) if own and value is not None else UNKNOWN_VALUE
        stores.setdefault(target.attr, []).append(stored or UNKNOWN_VALUE)


def _named_store(call: ast.Call, stores: dict[str, list[StoredValue]]) -> bool:
    """Record ``setattr(x, "name", v)``-style stores; True for one by a computed name or
    through ``__dict__``/``vars()`` (``obj.__dict__.update(d)``, ``vars(obj).update(d)``)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name == "update" and isinstance(func, ast.Attribute):
        holder = func.value
        return (isinstance(holder, ast.Attribute) and holder.attr == "__dict__") or (
            isinstance(holder, ast.Call) and isinstance(holder.func, ast.Name) and holder.func.id == "vars"
        )
    position = _NAMED_STORES.get(name)
    if position is None or len(call.args) <= position:
        return False
    spelled = call.args[position]
    if isinstance(spelled, ast.Constant) and isinstance(spelled.value, str):
        stores.setdefault(spelled.value, []).append(UNKNOWN_VALUE)
        return False
    return name == "setattr"  # (a buffer or module registered by a computed name stores no flag)


def class_body_names(body: list[ast.stmt]) -> list[str]:
    """Names a class body binds by assignment (``stratified = False``): a class attribute
    of that name is what an instance without its own reads."""
    found = []
    for statement in body:
        targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            found += [target.id for target in targets if isinstance(target, ast.Name)]
    return found


def constant_attributes(
    stores: Iterable[dict[str, tuple[StoredValue, ...]]], function_names: set[str]
) -> dict[str, frozenset[object]]:
    """name -> the constants it ever holds, over the project's ``stores`` (per file, see
    :func:`attribute_stores`), for names only ever stored as constants in an ``__init__``
    and not defined as functions (``function_names``)."""
    values: dict[str, set[object]] = {}
    unknown: set[str] = set(_SET_BY_TORCH) | function_names
    for file_stores in stores:
        for name, stored in file_stores.items():
            if name in unknown:
                continue
            if any(value == UNKNOWN_VALUE for value in stored):
                unknown.add(name)
                values.pop(name, None)
            else:
                values.setdefault(name, set()).update(value[0] for value in stored)
    return {name: frozenset(found) for name, found in values.items()}
