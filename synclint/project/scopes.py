"""The nodes a function's own body holds: not those of functions, lambdas or classes
nested in it, which run at another time (or never) and bind their own names."""

from __future__ import annotations

import ast
from weakref import WeakKeyDictionary

#: Nodes that open a scope of their own.
NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)

#: A function's own nodes and the scopes nested in it, found once: the summary's helpers
#: (residency, guards, returns, rebound names) each read every one of them. Weak keys: an
#: entry lives as long as its tree.
_BY_FUNCTION: WeakKeyDictionary[ast.AST, tuple[tuple[ast.AST, ...], tuple[ast.AST, ...]]] = WeakKeyDictionary()


def own_nodes(body: list[ast.stmt], nested: list[ast.AST] | None = None) -> list[ast.AST]:
    """Every node of ``body`` (depth first, last statement first), nested scopes left out
    (and appended to ``nested`` when given): the order of a walk by ``ast.iter_child_nodes``,
    less the ``Load``/``Store``/``Del`` markers (see :func:`child_nodes`)."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(body)
    while stack:
        current = stack.pop()
        if isinstance(current, NESTED_SCOPES):
            if nested is not None:
                nested.append(current)
            continue
        found.append(current)
        stack.extend(child_nodes(current))
    return found


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes(node)`` as a list, without the ``Load``/``Store``/``Del``
    markers (leaves no one looks for: their ``ctx`` field is read instead). Read from the
    fields directly: the stdlib's generators cost more than the walks built on them."""
    found: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, list):
            found.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST) and not isinstance(value, ast.expr_context):
            found.append(value)
    return found


def all_nodes(node: ast.AST) -> list[ast.AST]:
    """``ast.walk(node)`` (breadth first, nested scopes included) as a list, without the
    ``Load``/``Store``/``Del`` markers."""
    found = [node]
    for current in found:  # grows as it goes: a queue
        found.extend(child_nodes(current))
    return found


def function_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[ast.AST, ...]:
    """``own_nodes(function.body)``, computed once per function node."""
    return _scope(function)[0]


def nested_scopes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[ast.AST, ...]:
    """The functions, lambdas and classes ``function``'s body opens (not those inside them)."""
    return _scope(function)[1]


def _scope(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[tuple[ast.AST, ...], tuple[ast.AST, ...]]:
    found = _BY_FUNCTION.get(function)
    if found is None:
        nested: list[ast.AST] = []
        found = _BY_FUNCTION[function] = (tuple(own_nodes(function.body, nested)), tuple(nested))
    return found
