"""The nodes a function's own body holds: not those of functions, lambdas or classes
nested in it, which run at another time (or never) and bind their own names."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from weakref import WeakKeyDictionary

#: Nodes that open a scope of their own.
NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
#: Comprehensions (each a scope of its own too, whose first iterable its parent evaluates).
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: ``try`` statements, with ``except*`` where the Python has it (3.11+).
TRY_STATEMENTS = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))

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
    markers (leaves no one looks for: their ``ctx`` field is read instead). Only the
    fields that can hold nodes are read (see :func:`_node_fields`): the stdlib's
    generators, and looking at every field of every node, cost more than the walks
    built on them."""
    found: list[ast.AST] = []
    for name, many in _NODE_FIELDS[type(node)]:
        value = getattr(node, name, None)
        if many is None:  # a field of unknown type: checked value by value
            if isinstance(value, list):
                found.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST) and not isinstance(value, ast.expr_context):
                found.append(value)
        elif many:
            found.extend(filter(None, value or ()))  # nodes are always true; ``None`` holes are not
        elif value is not None:
            found.append(value)
    return found


class _FieldTable(dict):
    """Node type -> its fields that can hold nodes: (name, whether a list, or None: of
    unknown type), read from the type on first use."""

    def __missing__(self, node_type: type) -> tuple[tuple[str, bool | None], ...]:
        fields = self[node_type] = _node_fields(node_type)
        return fields


_NODE_FIELDS = _FieldTable()
#: ASDL types of fields that never hold a node (``expr_context``: the markers left out).
_NOT_NODES = frozenset({"identifier", "string", "constant", "int", "expr_context"})
_SIGNATURE = re.compile(r"\w+\((.*)\)")


def _node_fields(node_type: type) -> tuple[tuple[str, bool | None], ...]:
    """The fields of ``node_type`` that can hold nodes, from the ASDL signature CPython
    gives as the class's docstring (``Call(expr func, expr* args, keyword* keywords)``);
    every field, of unknown type, when the signature does not match the fields."""
    match = _SIGNATURE.fullmatch(node_type.__doc__ or "")
    declared = [part.rsplit(" ", 1) for part in match.group(1).split(", ")] if match and match.group(1) else []
    if [name for _kind, name in declared] != list(node_type._fields):
        return tuple((name, None) for name in node_type._fields)
    return tuple((name, kind.endswith("*")) for kind, name in declared if kind.rstrip("*?") not in _NOT_NODES)


def walk_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk(node)`` (breadth first, nested scopes included) without the
    ``Load``/``Store``/``Del`` markers, lazily: a search that stops at its first match
    reads no further."""
    found = [node]
    for current in found:  # grows as it goes: a queue
        yield current
        found.extend(child_nodes(current))


#: The nodes other than a ``Name`` that bind names (:func:`names_bound_by` reads them).
BINDERS_OTHER_THAN_NAMES = frozenset({ast.alias, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler,
                                      ast.MatchAs, ast.MatchStar, ast.MatchMapping})


def names_bound_by(node: ast.AST) -> Iterator[str]:
    """The names ``node`` itself binds, not its children (an assignment target, an import
    alias, a definition, an ``except ... as``, a capture pattern); a walrus binds through
    its target ``Name``."""
    kind = type(node)
    if kind is ast.Name:
        if type(node.ctx) is not ast.Load:
            yield node.id
    elif kind is ast.alias:
        yield (node.asname or node.name).split(".", 1)[0]
    elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        yield node.name
    elif kind in (ast.ExceptHandler, ast.MatchAs, ast.MatchStar):
        if node.name:
            yield node.name
    elif kind is ast.MatchMapping and node.rest:
        yield node.rest


def names_bound_in(target: ast.AST) -> set[str]:
    """The names an assignment target binds, nested ones too (``a, (b, *c)``; not ``self``
    of ``self.x``, nor ``i`` of ``x[i]``, which it only reads)."""
    return {name for part in walk_nodes(target) for name in names_bound_by(part)}


def parameter_defaults(arguments: ast.arguments) -> dict[str, ast.expr]:
    """Each parameter that has a default, with its default's expression (positional ones
    take the last defaults, in order; keyword-only ones their own)."""
    positional = [*arguments.posonlyargs, *arguments.args]
    found = dict(zip([arg.arg for arg in positional[len(positional) - len(arguments.defaults):]], arguments.defaults))
    found.update((arg.arg, default) for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults)
                 if default is not None)
    return found


def field_values(node: ast.AST) -> list[object]:
    """The values of ``node``'s fields that can hold nodes, in ``ast.iter_fields`` order
    (names, strings and numbers left out)."""
    return [getattr(node, name, None) for name, _many in _NODE_FIELDS[type(node)]]


def all_nodes(node: ast.AST) -> list[ast.AST]:
    """``ast.walk(node)`` (breadth first, nested scopes included) as a list, without the
    ``Load``/``Store``/``Del`` markers."""
    return list(walk_nodes(node))


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


def runs_at_most_once(loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    """The loop's body ends with an unconditional ``break`` that no ``continue`` can skip:
    it runs once at most, the first pass (vits' ``evaluate`` takes the first batch of its
    loader and breaks; the synthesis after the loop runs once per call)."""
    return bool(loop.body) and isinstance(loop.body[-1], ast.Break) and not continues_its_loop(loop.body)


def continues_its_loop(body: list[ast.stmt]) -> bool:
    """A ``continue`` among ``body``'s statements goes on to the enclosing loop's next pass:
    one outside the loops ``body`` holds (their ``else`` clauses are outside them) and
    outside nested scopes."""
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Continue):
            return True
        if not isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef,
                                 ast.ClassDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))
        else:
            pending.extend(node.orelse if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) else [])
    return False


def sides_of_less(node: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """The smaller and the bigger side of a comparison by one ``<``, ``<=``, ``>`` or ``>=``
    (``(a, b)`` for ``a < b`` and for ``b > a``), or None for any other node."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return None
    op, left, right = node.ops[0], node.left, node.comparators[0]
    if isinstance(op, (ast.Gt, ast.GtE)):
        return right, left
    return (left, right) if isinstance(op, (ast.Lt, ast.LtE)) else None


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` for a name or an attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
