"""Attributes that hold one constant for the whole run, and the blocks their tests close.

minRF's ``RF.__init__`` sets ``self.stratified = False`` and nothing in the project
ever sets it again: ``if self.stratified:`` in ``RF.forward`` is dead, and so is any
sync in its block. An attribute is *constant* when every store of its name anywhere in
the project (``x.name = ...``, ``x.name += ...``, a ``for``/``with`` target, a class body's
``name = ...``, ``setattr(x, "name", ...)``, ``register_buffer("name", ...)``) is
``self.name = <constant>`` in an ``__init__``: its values are those constants. Any other
store of the name, in any class, makes it unknown (a subclass or a script may set it:
``model.stratified = True``), and so do the spellings that bypass ``x.name = ...``:
``object.__setattr__(x, "name", v)``, ``x.__dict__["name"] = v``, ``vars(x)["name"] = v``,
and ``setattr`` in a lambda (``model.apply(lambda m: setattr(m, "name", v))``). The name
is matched alone, not per class: erring towards "may be set".

Nothing is constant in a project whose program code could store an attribute by a
computed name (``setattr(obj, key, value)``, ``obj.__dict__.update(...)``,
``vars(obj)[k] = v``, ``setattr`` handed on as a value: ``partial(setattr, obj)``),
customises stores (``def __setattr__``) or has a file Python's parser rejects (whose
stores no one can see), nor a name the project also defines as a function (a property,
whose setter may store anything), nor one a framework sets on modules it does not own
(:data:`SET_BY_FRAMEWORKS`). A test of ``self.name`` in a class deriving from a library's
class (not torch's: :data:`STORE_NO_FLAG`) closes nothing: the library's methods may store
it (``model.set_grad_checkpointing(True)``). Nor is anything constant in one piece of a
project too big to index at once (another piece may store it), nor a name a notebook of
the project spells, whose cells the index never reads (see
``step_branches.constant_attributes``).

All collection works on CPython ``ast`` nodes the summary already walks.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import NamedTuple

from synclint.project.rare_blocks import constant_value
from synclint.project.scopes import own_nodes, parameter_defaults

class ConstructorArgument(NamedTuple):
    """``self.flag = flag`` in ``cls.__init__`` (``flag`` never rebound): the attribute
    holds what the constructions of ``cls`` pass for the parameter (at ``position`` among
    those after ``self``, None when only a keyword passes it), or its constant ``default``
    (``()``: none). See :mod:`synclint.project.constructor_arguments`."""

    cls: str
    param: str
    position: int | None
    default: tuple[()] | tuple[object]


#: A store of a name with a value the summary cannot tell: ``()``; a constant: ``(value,)``;
#: an argument of the constructor: ``(ConstructorArgument(...),)``.
StoredValue = tuple[()] | tuple[object]
UNKNOWN_VALUE: StoredValue = ()

#: What a scope stores by a computed name: nothing, only attributes of ``self``
#: (``setattr(self, name, layer)``: instances of its class, never an ``argparse``
#: namespace), or attributes of any object. Ordered: the larger of two covers both.
NO_COMPUTED_STORE, COMPUTED_STORE_ON_SELF, COMPUTED_STORE = 0, 1, 2

#: Calls that store an attribute named by their (constant) string argument: position of it.
_NAMED_STORES = {"setattr": 1, "register_buffer": 0, "register_parameter": 0, "add_module": 0, "register_module": 0}
#: The nodes that may store an attribute (a ``setattr`` name: handed on as a value).
_STORING = frozenset({ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.withitem,
                      ast.Call, ast.Attribute, ast.Name})
#: Flags frameworks set on the project's modules with no store in the project to show it:
#: ``Module.train()``/``eval()`` set ``training`` on every submodule; transformers'
#: ``gradient_checkpointing_enable()`` sets ``gradient_checkpointing`` on every submodule
#: that has the attribute (the modelling code only ever stores ``False`` in ``__init__``).
SET_BY_FRAMEWORKS = frozenset({"training", "gradient_checkpointing"})
#: Packages whose classes store no attribute of a subclass's instance that a flag of the
#: project's could be (torch's modules: only ``training``): a class deriving from any other
#: library's class may have its flags stored by methods the index never reads.
STORE_NO_FLAG = frozenset({"torch", "abc", "typing", "typing_extensions", "enum", "collections", "dataclasses"})


def attribute_stores(nodes: Iterable[ast.AST], in_init: bool, arguments: Mapping[str, ConstructorArgument] | None = None,
                     ) -> tuple[dict[str, list[StoredValue]], int]:
    """The attribute stores among a scope's own ``nodes`` (parents before their children):
    name -> the values stored (constants of ``self.name = <constant>`` in an ``__init__``
    when ``in_init``, and ``self.name = param`` of its ``arguments``, else unknown); and
    what the scope stores by a computed name (:data:`NO_COMPUTED_STORE`,
    :data:`COMPUTED_STORE_ON_SELF` or :data:`COMPUTED_STORE`)."""
    arguments = arguments or {}
    stores: dict[str, list[StoredValue]] = {}
    dynamic = NO_COMPUTED_STORE
    called: set[int] = set()  # the ``func`` of each call seen: ``setattr`` named elsewhere is a value
    for node in nodes:
        kind = type(node)
        if kind not in _STORING:  # (most nodes: every node of the file passes here)
            continue
        if kind is ast.Assign:
            for target in node.targets:
                value = node.value if in_init and len(node.targets) == 1 else None
                dynamic = max(_targets(target, value, stores, arguments), dynamic)
        elif kind is ast.AnnAssign or kind is ast.AugAssign:
            dynamic = max(_targets(node.target, node.value if in_init and kind is ast.AnnAssign else None, stores,
                                   arguments), dynamic)
        elif kind is ast.For or kind is ast.AsyncFor or kind is ast.comprehension:
            dynamic = max(_targets(node.target, None, stores), dynamic)
        elif kind is ast.withitem and node.optional_vars is not None:
            dynamic = max(_targets(node.optional_vars, None, stores), dynamic)
        elif kind is ast.Call:
            called.add(id(node.func))
            dynamic = max(_named_store(node, stores), dynamic)
        elif kind is ast.Attribute and node.attr == "__dict__" and not isinstance(node.ctx, ast.Load):
            dynamic = max(_on(node.value), dynamic)
        elif kind is ast.Name and node.id == "setattr" and id(node) not in called:
            dynamic = COMPUTED_STORE  # ``partial(setattr, obj)``, ``store = setattr``: called with any name
    return stores, dynamic


def _on(owner: ast.AST | None) -> int:
    """What a store by a computed name on ``owner`` stores: :data:`COMPUTED_STORE_ON_SELF`
    for ``self``, else :data:`COMPUTED_STORE`."""
    return COMPUTED_STORE_ON_SELF if isinstance(owner, ast.Name) and owner.id == "self" else COMPUTED_STORE


def constructor_arguments(init: ast.FunctionDef | ast.AsyncFunctionDef, cls: str,
                          kept: frozenset[str]) -> dict[str, ConstructorArgument]:
    """The parameters of ``cls``'s ``init`` after ``self`` that its body never rebinds
    (``kept``), each as the :class:`ConstructorArgument` a ``self.name = param`` stores."""
    arguments = init.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults = parameter_defaults(arguments)
    found = {}
    for position, arg in [*enumerate(positional[1:]), *((None, arg) for arg in arguments.kwonlyargs)]:
        if arg.arg in kept:
            default = defaults.get(arg.arg)
            found[arg.arg] = ConstructorArgument(cls, arg.arg, position, constant_value(default) if default else ())
    return found


def lambda_nodes(scopes: Iterable[ast.AST]) -> list[ast.AST]:
    """Every node of the lambdas among ``scopes`` (a scope's nested scopes), parents first:
    no function summary walks them (``model.apply(lambda m: setattr(m, "fused", True))``)."""
    found: list[ast.AST] = []
    for scope in scopes:
        if isinstance(scope, ast.Lambda):
            found += ast.walk(scope.body)
    return found


def _targets(target: ast.AST, value: ast.expr | None, stores: dict[str, list[StoredValue]],
             arguments: Mapping[str, ConstructorArgument] = MappingProxyType({})) -> int:
    """Record the attributes ``target`` stores; what it stores by a computed name."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return max([_targets(element, None, stores) for element in target.elts], default=NO_COMPUTED_STORE)
    if isinstance(target, ast.Starred):
        return _targets(target.value, None, stores)
    if isinstance(target, ast.Attribute):
        own = isinstance(target.value, ast.Name) and target.value.id == "self"
        stored = constant_value(value) if own and value is not None else UNKNOWN_VALUE
        if own and not stored and isinstance(value, ast.Name) and value.id in arguments:
            stored = (arguments[value.id],)
        stores.setdefault(target.attr, []).append(stored or UNKNOWN_VALUE)
    elif isinstance(target, ast.Subscript) and _is_instance_dict(target.value):
        # ``x.__dict__["name"] = v``
        return _store_named_by(target.slice, stores, _instance_of_dict(target.value))
    return NO_COMPUTED_STORE


def _named_store(call: ast.Call, stores: dict[str, list[StoredValue]]) -> int:
    """Record ``setattr(x, "name", v)``-style stores; what it stores by a computed name,
    also through ``__dict__``/``vars()`` (``obj.__dict__.update(d)``, ``vars(obj).update(d)``)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if isinstance(func, ast.Attribute) and _is_instance_dict(func.value):
        owner = _instance_of_dict(func.value)
        if name == "update":
            return _on(owner)
        if name == "setdefault" and call.args:
            return _store_named_by(call.args[0], stores, owner)
        return NO_COMPUTED_STORE
    if name == "__setattr__":
        # ``self.__setattr__(name, v)``, ``super().__setattr__(name, v)``: ``self``'s;
        # ``object.__setattr__(x, name, v)``: ``x``'s.
        bound = isinstance(func, ast.Attribute) and (
            isinstance(func.value, ast.Name) and func.value.id == "self" or _is_super(func.value))
        owner = ast.Name("self") if bound else call.args[0] if call.args else None
        return _store_named_by(next((a for a in call.args[:2] if _spelled(a) is not None), None), stores, owner)
    position = _NAMED_STORES.get(name)
    if position is None or len(call.args) <= position:
        return NO_COMPUTED_STORE
    spelled = _spelled(call.args[position])
    if spelled is not None:
        stores.setdefault(spelled, []).append(UNKNOWN_VALUE)
        return NO_COMPUTED_STORE
    # (A buffer or module registered by a computed name stores no flag.)
    return _on(call.args[0]) if name == "setattr" else NO_COMPUTED_STORE


def _is_super(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _instance_of_dict(node: ast.AST) -> ast.AST | None:
    """``x`` of ``x.__dict__`` or ``vars(x)``."""
    return node.value if isinstance(node, ast.Attribute) else node.args[0] if isinstance(node, ast.Call) else None


def _store_named_by(key: ast.AST | None, stores: dict[str, list[StoredValue]], owner: ast.AST | None) -> int:
    """Record a store on ``owner`` of the attribute ``key`` spells; what it stores by a
    computed name when it spells none."""
    spelled = _spelled(key)
    if spelled is None:
        return _on(owner)
    stores.setdefault(spelled, []).append(UNKNOWN_VALUE)
    return NO_COMPUTED_STORE


def _spelled(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_instance_dict(node: ast.AST) -> bool:
    """``x.__dict__`` or ``vars(x)``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "__dict__"
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" and bool(node.args)


def class_body_names(body: list[ast.stmt]) -> list[str]:
    """Names a class body binds (``stratified = False``, also under an ``if``, by unpacking
    or as a loop target): a class attribute of that name is what an instance without its
    own reads."""
    return [node.id for node in own_nodes(body) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)]


def constant_attributes(
    stores: Iterable[tuple[str, dict[str, tuple[StoredValue, ...]]]], function_names: set[str],
    resolve: Callable[[str, ConstructorArgument], list[StoredValue]] | None = None,
) -> dict[str, frozenset[object]]:
    """name -> the constants it ever holds, over the project's ``stores`` (file key, its
    stores: see :func:`attribute_stores`), for names only ever stored as constants in an
    ``__init__`` and not defined as functions (``function_names``). A constructor's
    argument is what ``resolve`` (file key, argument) says its constructions pass, and
    unknown without it."""
    values: dict[str, set[object]] = {}
    unknown: set[str] = set(SET_BY_FRAMEWORKS) | function_names
    for key, file_stores in stores:
        for name, stored in file_stores.items():
            if name in unknown:
                continue
            if any(value and isinstance(value[0], ConstructorArgument) for value in stored):
                stored = [resolved for value in stored for resolved in (
                    ([UNKNOWN_VALUE] if resolve is None else resolve(key, value[0]))
                    if value and isinstance(value[0], ConstructorArgument) else [value])]
            if any(value == UNKNOWN_VALUE for value in stored):
                unknown.add(name)
                values.pop(name, None)
            else:
                values.setdefault(name, set()).update(value[0] for value in stored)
    return {name: frozenset(found) for name, found in values.items()}
