"""Top-level functions a module defines again before anything can call them: dead code.

lpips' ``__init__.py`` (copied into stylegan2-pytorch and style-based-gan-pytorch) defines
``tensor2im`` twice; when the module has run, the name holds the second function, and
the first can never be called. A top-level ``def f`` is *redefined* when a later
statement of the module's body binds ``f`` again (another ``def``, a class, an
assignment, an import) and no statement between them reads ``f`` while the module runs
(a call at import time, ``g = f``, a decorator ``@f``, a default ``key=f``; reads inside
function bodies happen later, and see the last binding).

Not a decorated function (``@overload``, ``@app.route``, a registry's decorator: what the
decorator did with it may live on), nor one defined under ``if``/``try`` (alternatives:
only one of them runs).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from synclint.project.cold_reasons import redefined


def redefined_functions(body: list[ast.stmt]) -> Iterator[tuple[int, int, str]]:
    """(first line, last line, why) of each top-level function of ``body`` (a module's
    statements) that a later statement defines again before any statement reads it."""
    for index, statement in enumerate(body):
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) or statement.decorator_list:
            continue
        name = statement.name
        for later in body[index + 1:]:
            if _reads(later, name):
                break
            if name in _bound_names(later):
                yield statement.lineno, statement.end_lineno or statement.lineno, redefined(name, later.lineno)
                break


def _bound_names(statement: ast.stmt) -> set[str]:
    """Names a top-level statement binds at its own level (not in blocks: a binding under
    ``if`` may not happen)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".", 1)[0] for alias in statement.names if alias.name != "*"}
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)) and statement.value is not None:
        targets = [statement.target]
    names = set()
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def _reads(statement: ast.stmt, name: str) -> bool:
    """Whether running ``statement`` (at import time) may read ``name``: anywhere but in
    the bodies of functions and lambdas it defines, which run later. A ``del``, a
    ``global`` statement or a string (``globals()["f"]``, ``__all__``) counts as a read."""
    pending: list[ast.AST] = [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pending += node.decorator_list + _defaults(node.args)
            pending += [node.returns] if node.returns is not None else []
            continue
        if isinstance(node, ast.Lambda):
            pending += _defaults(node.args)
            continue
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.Constant) and node.value == name:
            return True
        if isinstance(node, ast.Global) and name in node.names:
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def _defaults(arguments: ast.arguments) -> list[ast.AST]:
    return [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]
