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
    bindings: dict[str, int] = {}
    for statement in body:
        for bound in _bound_names(statement):
            bindings[bound] = bindings.get(bound, 0) + 1
    for index, statement in enumerate(body):
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) or statement.decorator_list:
            continue
        if bindings.get(statement.name, 0) < 2:
            continue  # bound once: nothing defines it again (the scan below is per later statement)
        name = statement.name
        defined = _defined(body[: index + 1])
        for later in body[index + 1:]:
            if _reads(later, name, defined):
                break
            defined.update(_defined([later]))
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


def _defined(statements: list[ast.stmt]) -> dict[str, ast.AST]:
    """The functions and classes ``statements`` (top-level) define, by name, the last of each."""
    return {
        statement.name: statement
        for statement in statements
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


def _reads(statement: ast.stmt, name: str, defined: dict[str, ast.AST] | None = None) -> bool:
    """Whether running ``statement`` (at import time) may read ``name``: anywhere but in
    the bodies of functions and lambdas it defines, which run later, unless it calls one of
    the module's functions or classes (``defined``) that reads it (a notebook exported as a
    script: ``train()`` between two ``def loss_fn``). A ``del``, a ``global`` statement or a
    string (``globals()["f"]``, ``__all__``) counts as a read."""
    defined = defined or {}
    pending: list[ast.AST] = [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pending += node.decorator_list + _defaults(node.args) + _annotations(node.args)
            pending += [node.returns] if node.returns is not None else []
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in defined:
            if _calls_read(defined[node.func.id], name, defined, set()):
                return True
        if isinstance(node, ast.Lambda):
            pending += _defaults(node.args)
            continue
        if _names(node, name):
            return True
        if isinstance(node, ast.Global) and name in node.names:
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def _calls_read(callee: ast.AST, name: str, defined: dict[str, ast.AST], seen: set[str]) -> bool:
    """Whether calling the module's function (or making an instance of its class)
    ``callee`` may read ``name``, itself or through the module's functions it calls."""
    pending = [callee]
    seen.add(getattr(callee, "name", ""))
    while pending:
        for node in ast.walk(pending.pop()):
            if _names(node, name):
                return True
            if isinstance(node, ast.Name) and node.id in defined and node.id not in seen:
                seen.add(node.id)
                pending.append(defined[node.id])
    return False


def _names(node: ast.AST, name: str) -> bool:
    """``node`` reads ``name``, or spells it as a string (``globals()["f"]``, ``__all__``)."""
    return (isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Store)) or (
        isinstance(node, ast.Constant) and node.value == name
    )


def _annotations(arguments: ast.arguments) -> list[ast.AST]:
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
    return [argument.annotation for argument in every if argument is not None and argument.annotation is not None]


def _defaults(arguments: ast.arguments) -> list[ast.AST]:
    return [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]
