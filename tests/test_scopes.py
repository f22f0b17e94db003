"""The index's fast walks over CPython trees find what the stdlib's walks find, in the same order."""

from __future__ import annotations

import ast
from pathlib import Path

from synclint.project.argument_syncs import stable_parameters
from synclint.project.scopes import (
    BINDERS_OTHER_THAN_NAMES,
    NESTED_SCOPES,
    _node_fields,
    all_nodes,
    child_nodes,
    field_values,
    function_nodes,
    names_bound_by,
    nested_scopes,
    own_nodes,
    walk_nodes,
)

ROOT = Path(__file__).resolve().parent.parent

_SOURCE = """\
import torch

@register(lambda cfg: cfg)
def outer(x, y: int = (cached := 3), *rest, key=lambda x: x, **extra) -> torch.Tensor:
    global counter
    a, (b, *c) = x
    del extra["k"]
    with torch.no_grad() as (g, h):
        for i, j in enumerate(rest):
            y += i
    match x:
        case [first, *others] if first:
            pass
        case {"k": value, **remaining}:
            pass
    try:
        z = [v.item() for v in x if (w := v)]
    except ValueError as error:
        raise RuntimeError(f"{error!r:>10}") from error

    def inner(x, q=x):
        x = 1
        return q

    class Local:
        y = 2

    return lambda y: y + z
"""


def _reference_own_nodes(body: list[ast.stmt]) -> list[ast.AST]:
    """The plain definition: ``ast.iter_child_nodes`` from the last statement, depth first."""
    found, stack = [], list(body)
    while stack:
        current = stack.pop()
        if isinstance(current, NESTED_SCOPES):
            continue
        if not isinstance(current, ast.expr_context):
            found.append(current)
        stack.extend(ast.iter_child_nodes(current))
    return found


def _reference_stable_parameters(node: ast.FunctionDef) -> frozenset[str]:
    args = node.args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]} - {"self", "cls"}
    for current in ast.walk(node):
        if current is node:
            continue
        if isinstance(current, ast.Name) and isinstance(current.ctx, (ast.Store, ast.Del)):
            params.discard(current.id)
        elif isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner = current.args
            params -= {a.arg for a in [*inner.posonlyargs, *inner.args, *inner.kwonlyargs]}
    return frozenset(params)


def _trees() -> list[ast.Module]:
    sources = [_SOURCE, *(path.read_text(encoding="utf-8") for path in sorted((ROOT / "examples").rglob("*.py")))]
    return [ast.parse(source) for source in sources]


def test_own_nodes_are_the_plain_walks_nodes_in_its_order():
    for tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                expected = _reference_own_nodes(node.body)
                assert own_nodes(node.body) == expected
                if not isinstance(node, (ast.Module, ast.ClassDef)):
                    assert list(function_nodes(node)) == expected


def test_nested_scopes_are_the_outermost_definitions_in_the_body():
    outer = ast.parse(_SOURCE).body[1]
    found = [(type(node).__name__, getattr(node, "name", None)) for node in nested_scopes(outer)]
    assert sorted(found, key=str) == sorted(
        [("Lambda", None), ("FunctionDef", "inner"), ("ClassDef", "Local")], key=str
    )


def test_all_nodes_is_ast_walk_without_context_markers():
    for tree in _trees():
        expected = [node for node in ast.walk(tree) if not isinstance(node, ast.expr_context)]
        assert all_nodes(tree) == expected


def test_walk_nodes_is_ast_walk_without_context_markers():
    for tree in _trees():
        expected = [node for node in ast.walk(tree) if not isinstance(node, ast.expr_context)]
        assert list(walk_nodes(tree)) == expected
    walk = walk_nodes(ast.parse("f(x)\n"))
    assert isinstance(next(walk), ast.Module) and isinstance(next(walk), ast.Expr)  # lazily, in order


def _holds_nodes(value: object) -> bool:
    """A node (not a ``Load``/``Store``/``Del`` marker), or a list holding one."""
    if isinstance(value, list):
        return any(isinstance(item, ast.AST) for item in value)
    return isinstance(value, ast.AST) and not isinstance(value, ast.expr_context)


def test_only_fields_that_never_hold_nodes_are_left_out():
    for tree in _trees():
        for node in ast.walk(tree):
            expected = [value for _name, value in ast.iter_fields(node) if _holds_nodes(value)]
            assert [value for value in field_values(node) if _holds_nodes(value)] == expected
            assert child_nodes(node) == [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.expr_context)]


def test_every_node_type_has_its_fields_read_from_its_signature():
    """The fast path: CPython's ASDL signature of each node type (its docstring) names
    its fields; a Python whose docstrings differ falls back to checking every value."""
    for tree in _trees():
        for node in ast.walk(tree):
            assert all(many is not None for _name, many in _node_fields(type(node))), type(node).__name__
    assert _node_fields(ast.Name) == ()  # ``id`` is an identifier, ``ctx`` a marker
    assert _node_fields(ast.Call) == (("func", False), ("args", True), ("keywords", True))


def test_stable_parameters_match_the_whole_function_walk():
    functions = [
        node for tree in _trees() for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    assert len(functions) > 20
    for function in functions:
        assert stable_parameters(function) == _reference_stable_parameters(function), function.name
    outer = ast.parse(_SOURCE).body[1]
    # ``x``: shadowed by the lambdas and ``inner``; ``y``: augmented; ``*rest``/``**extra``: not counted
    assert stable_parameters(outer) == frozenset({"key"})


def test_the_binders_other_than_names_are_the_nodes_names_bound_by_reads():
    source = (
        "import a.b as c, d\nfrom e import f\ndef g(): pass\nasync def h(): pass\nclass I: pass\n"
        "try:\n    pass\nexcept E as j:\n    pass\nmatch k:\n    case [l, *m]:\n        pass\n"
        "    case {'n': 1, **o}:\n        pass\nq = (r := 1)\nfor s in t: del u\n"
    )
    binders = {type(node) for node in ast.walk(ast.parse(source)) if list(names_bound_by(node))}
    assert binders - {ast.Name} == BINDERS_OTHER_THAN_NAMES
