"""The nodes a function's own body holds: not those of functions, lambdas or classes
nested in it, which run at another time (or never) and bind their own names."""

from __future__ import annotations

import ast
from collections.abc import Iterator

#: Nodes that open a scope of their own.
NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of ``body`` (depth first, last statement first), nested scopes left out."""
    stack: list[ast.AST] = list(body)
    while stack:
        current = stack.pop()
        if isinstance(current, NESTED_SCOPES):
            continue
        yield current
        stack.extend(ast.iter_child_nodes(current))
