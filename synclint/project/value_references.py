"""Functions a file hands on as values, to be called where no call the index reads shows
their arguments.

``checkpoint(self._inner, x, mask)``, ``functools.partial(_scale, check=True)``,
``self.register_forward_hook(self._hook)``, ``fn = self._impl``: whoever ends up calling
them (``torch.utils.checkpoint``, the partial, the hook machinery) passes arguments the
project's own calls do not show. A call in a lambda (``lambda t: _clip(t, strict=True)``)
is not read as a call either (a lambda runs when, and as often as, whoever holds it
decides), and a decorator is handed the function it wraps (``@weighted_loss`` calls it
with what its wrapper takes, not with what the call shows). What such a function's
calls from the step pass is therefore not all it is passed (see
:mod:`synclint.project.step_branches`). Statements of a class body other than its
``def``s are not read (the summary does not read them either).

Names are kept by their last part (``_inner`` for ``self._inner``): the index matches
them against function names, erring towards "called where it cannot see".
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from synclint.project.scopes import walk_nodes

#: Decorators that call the function they wrap with the arguments it was called with
#: (``@torch.no_grad()``, ``@functools.lru_cache``), or return it as it is. Any other
#: decorator is handed the function as a value, and may call it with anything
#: (``@weighted_loss`` adds ``weight=`` and ``reduction=``; a wrapper may inject a flag).
_TRANSPARENT_DECORATORS = frozenset({
    "no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "autocast", "custom_fwd", "custom_bwd",
    "staticmethod", "classmethod", "property", "cached_property", "abstractmethod", "override", "overload",
    "lru_cache", "cache", "wraps", "compile", "script", "ignore", "unused", "export", "jit", "njit",
    "disable", "assume_constant_result", "allow_in_graph", "contextmanager", "final",
})

#: Statements and expressions whose ``value`` hands a function on: ``fn = f``,
#: ``return f``, ``yield f``, ``(fn := f)``.
_VALUE_HOLDERS = frozenset({ast.Assign, ast.AnnAssign, ast.Return, ast.Yield, ast.NamedExpr})
_CONTAINERS = frozenset({ast.List, ast.Tuple, ast.Set})


def names_passed_as_values(nodes: Iterable[ast.AST], nested: Iterable[ast.AST]) -> set[str]:
    """The last part of every name or attribute that a scope's own ``nodes`` pass as an
    argument (not to ``super``), assign, return or put in a container, and of every
    function a lambda among its ``nested`` scopes calls. (The nodes the summary already
    holds: no walk of its own.)"""
    found: set[str] = set()
    for node in nodes:
        kind = type(node)  # (one lookup per node: every node of the file passes here)
        if kind is ast.Call:
            # (``super(GNN, self)`` names its class to find the next one: nothing builds or calls it.)
            if not (type(node.func) is ast.Name and node.func.id == "super"):
                _add(found, node.args)
            _add(found, [keyword.value for keyword in node.keywords])
        elif kind in _VALUE_HOLDERS:
            _add(found, (node.value,))
        elif kind in _CONTAINERS:
            _add(found, node.elts)
        elif kind is ast.Dict:
            _add(found, node.values)
    for scope in nested:
        if isinstance(scope, ast.Lambda):
            _add(found, [inner.func for inner in walk_nodes(scope.body) if isinstance(inner, ast.Call)])
    return found


def self_attributes_handed_on(nodes: Iterable[ast.AST]) -> set[str]:
    """The attributes of ``self`` that a scope's own ``nodes`` hand on as values: an
    argument of a call (``checkpoint(self.block, x)``, ``functools.partial(self.block,
    n)``, ``torch.compile(self.block)``), an assigned, returned or yielded value, or an
    element of a container (``nn.ModuleList([self.block])``). Whoever receives a module so
    calls it with arguments no call the index reads shows. A call whose result is only
    tested (``if exists(self.bias):``, ``isinstance(self.head, nn.Linear) and ...``) reads
    the attribute without calling it, and is left out."""
    tested: set[int] = set()
    handed: list[tuple[int, str]] = []  # (the call it is an argument of, or 0; the attribute)
    for node in nodes:  # one pass: every method of a project passes here
        kind = type(node)
        if kind is ast.Call:
            if _is_getattr_of_self(node):  # ``getattr(self, "bias")(x)``
                handed.append((id(node), node.args[1].value))
            if node.args:
                _add_self_attributes(handed, id(node), node.args)
            if node.keywords:
                _add_self_attributes(handed, id(node), [keyword.value for keyword in node.keywords])
        elif kind in _VALUE_HOLDERS:
            _add_self_attributes(handed, 0, (node.value,))
        elif kind in _CONTAINERS:
            _add_self_attributes(handed, 0, node.elts)
        elif kind is ast.Dict:
            _add_self_attributes(handed, 0, node.values)
        elif kind in (ast.If, ast.While, ast.IfExp, ast.Assert):
            _tested_calls(node.test, tested)
        elif kind in (ast.BoolOp, ast.Compare) or (kind is ast.UnaryOp and isinstance(node.op, ast.Not)):
            _tested_calls(node, tested)
    return {attr for call, attr in handed if call not in tested}


def _add_self_attributes(handed: list[tuple[int, str]], call: int, values) -> None:
    for value in values:
        if type(value) is ast.Starred:
            value = value.value
        if is_self_attribute(value):
            handed.append((call, value.attr))


def self_attributes_called_within(nested: Iterable[ast.AST]) -> set[str]:
    """The attributes of ``self`` that the lambdas and functions nested in a method call
    or hand on (``lambda t: self.bias(t, device)``, ``def inner(t): return self.bias(t)``):
    they run when, and with what, whoever holds them decides, and the index reads their
    calls of ``self.bias`` as no method's."""
    found: set[str] = set()
    for scope in nested:
        if isinstance(scope, ast.ClassDef):
            continue  # its ``self`` is another object
        nodes = list(walk_nodes(scope.body)) if isinstance(scope, ast.Lambda) else [
            inner for statement in scope.body for inner in walk_nodes(statement)
        ]
        found |= self_attributes_handed_on(nodes)
        found.update(
            node.func.attr for node in nodes
            if isinstance(node, ast.Call) and is_self_attribute(node.func)
        )
    return found


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def is_self_attribute(node: ast.AST) -> bool:
    """``self.name``."""
    return isinstance(node, ast.Attribute) and _is_self(node.value)


def _is_getattr_of_self(node: ast.Call) -> bool:
    return (
        isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and _is_self(node.args[0])
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )


def _tested_calls(node: ast.AST, tested: set[int]) -> None:
    """The calls whose result ``node``, a truth value, only tests or compares."""
    if isinstance(node, ast.Call):
        tested.add(id(node))
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            _tested_calls(value, tested)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        _tested_calls(node.operand, tested)
    elif isinstance(node, ast.Compare):
        for value in (node.left, *node.comparators):
            _tested_calls(value, tested)


def handed_to_a_decorator(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A decorator other than those that pass the arguments on as they are wraps ``node``."""
    return any(_decorator_name(decorator) not in _TRANSPARENT_DECORATORS for decorator in node.decorator_list)


def _add(found: set[str], values) -> None:
    for value in values:
        if isinstance(value, ast.Starred):
            value = value.value
        if isinstance(value, ast.Name):
            found.add(value.id)
        elif isinstance(value, ast.Attribute):
            found.add(value.attr)


def _decorator_name(decorator: ast.expr) -> str:
    """``no_grad`` for ``@torch.no_grad()``, ``register`` for ``@LOSSES.register("l1")``."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""
