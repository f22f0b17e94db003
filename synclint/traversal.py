"""A read-only walk over a libcst tree, several times faster than ``node.visit``.

``CSTNode.visit`` rebuilds every node it passes (it shares its machinery with
transformers), calls two attribute hooks per field and walks every comma and
space. Analysis only reads the tree, so :func:`walk` calls the same
``on_visit`` / ``on_leave`` methods of a ``CSTVisitor`` in the same order
(libcst's own child order, read once per node type from libcst's source), but
reads the children straight from the node's fields and does not descend into
whitespace, comments and punctuation unless the visitor has a hook for them.
Attribute hooks (``visit_<Node>_<field>``) are not called.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Iterable, Sequence
from operator import attrgetter
from weakref import WeakKeyDictionary

import libcst as cst
from libcst._nodes import op as _op_nodes
from libcst._nodes import whitespace as _whitespace_nodes

_DEFAULT = cst.MaybeSentinel.DEFAULT
_FIELD_VISIT = re.compile(r"visit_\w+\(\s*self\s*,\s*\"(\w+)\"")

_BRACKETS = (
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
    cst.LeftCurlyBrace, cst.RightCurlyBrace,
)


def _trivia_classes() -> tuple[frozenset[type], tuple[type, ...]]:
    """Node types that hold only whitespace or punctuation, and their base classes."""
    concrete: set[type] = set(_BRACKETS)
    every: set[type] = set(_BRACKETS)
    for module in (_whitespace_nodes, _op_nodes):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, cst.CSTNode) and value.__module__ == module.__name__:
                every.add(value)
                if not inspect.isabstract(value):
                    concrete.add(value)
    return frozenset(concrete), tuple(every)


TRIVIA, _TRIVIA_BASES = _trivia_classes()

# node type -> (every child field, the fields that can hold more than trivia), or
# None when libcst's source is unavailable and ``node.children`` must be used.
_fields_by_type: dict[type, tuple[tuple[str, ...], tuple[str, ...]] | None] = {}


def child_fields(node_type: type) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """``node_type``'s child fields in the order libcst visits them: all, and non-trivia."""
    if node_type in _fields_by_type:
        return _fields_by_type[node_type]
    try:
        source = inspect.getsource(node_type._visit_and_replace_children)
    except (OSError, TypeError):
        _fields_by_type[node_type] = None
        return None
    # dict.fromkeys: a field visited in two branches (ImportFrom.names) counts once.
    every = tuple(dict.fromkeys(_FIELD_VISIT.findall(source)))
    try:
        hints = typing.get_type_hints(node_type)
        substantive = tuple(name for name in every if not _only_trivia(hints.get(name)))
    except Exception:  # unresolvable annotations: keep every field
        substantive = every
    _fields_by_type[node_type] = (every, substantive)
    return _fields_by_type[node_type]


def _only_trivia(annotation: object) -> bool:
    """Whether a field annotated ``annotation`` can only hold trivia (or nothing)."""
    if annotation is None:
        return False
    if isinstance(annotation, type):
        if annotation in (type(None), cst.MaybeSentinel):
            return True
        return issubclass(annotation, _TRIVIA_BASES)
    args = typing.get_args(annotation)
    return bool(args) and all(_only_trivia(arg) for arg in args)


def children_of(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """``node.children``, without rebuilding ``node``."""
    fields = child_fields(type(node))
    if fields is None:
        return node.children
    fields = fields[0]
    found: list[cst.CSTNode] = []
    for name in fields:
        value = getattr(node, name)
        if isinstance(value, (tuple, list)):
            found.extend(value)
        elif value is not None and value is not _DEFAULT:
            found.append(value)
    return found


def hooked_names(visitor: cst.CSTVisitor) -> set[str]:
    """Node type names ``visitor`` has its own ``visit_``/``leave_`` method for."""
    names = set()
    for attr in dir(type(visitor)):
        if attr.startswith(("visit_", "leave_")) and not _is_libcst_stub(type(visitor), attr):
            name = attr.split("_", 1)[1]
            if "_" not in name:
                names.add(name)
    return names


def _is_libcst_stub(visitor_type: type, attr: str) -> bool:
    """``CSTVisitor`` defines a no-op ``visit_X``/``leave_X`` for every node type."""
    return getattr(visitor_type, attr, None) is getattr(cst.CSTVisitor, attr, object())


def skipped_types(visitor: cst.CSTVisitor, also_wanted: Iterable[str] = ()) -> frozenset[type]:
    """The trivia types ``walk`` may skip for ``visitor``: those it has no hook for."""
    wanted = hooked_names(visitor) | set(also_wanted)
    return frozenset(t for t in TRIVIA if t.__name__ not in wanted)


# Keyed by qualified name, not type: rules define visitor classes inside functions.
_skip_by_visitor_class: dict[tuple[str, str], frozenset[type]] = {}


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor, skip: frozenset[type] | None = None) -> None:
    """Visit ``node`` and its descendants like ``node.visit(visitor)`` does, read-only.

    ``skip`` defaults to the trivia ``visitor`` has no hook for; a visitor that
    overrides ``on_visit`` generically must pass the set it can do without.
    """
    if skip is None:
        key = (type(visitor).__module__, type(visitor).__qualname__)
        skip = _skip_by_visitor_class.get(key)
        if skip is None:
            skip = _skip_by_visitor_class[key] = skipped_types(visitor)
    which = 1 if skip >= TRIVIA else 0  # every trivia type skipped: skip its fields too
    readers = _readers[which]
    sequences = (tuple, list)
    default = _DEFAULT

    visitor_type = type(visitor)
    if visitor_type.on_visit is cst.CSTVisitor.on_visit and visitor_type.on_leave is cst.CSTVisitor.on_leave:
        # The common case: the visitor's own visit_X/leave_X, looked up once per
        # class and node type and called directly (two Python calls fewer per node).
        visits, leaves = _hook_tables(visitor_type)

        def hook_for(table: dict, prefix: str, node_type: type):
            hook = table[node_type] = _class_hook(visitor_type, f"{prefix}{node_type.__name__}")
            return hook

    else:  # ``on_visit``/``on_leave`` overridden: they see every node (and return a bool)
        visits, leaves = {}, {}
        generic = {"visit_": visitor_type.on_visit, "leave_": visitor_type.on_leave}

        def hook_for(table: dict, prefix: str, node_type: type):
            hook = table[node_type] = generic[prefix]
            return hook

    def visit(current: cst.CSTNode) -> None:
        node_type = type(current)
        hook = visits.get(node_type, _UNSET)
        if hook is _UNSET:
            hook = hook_for(visits, "visit_", node_type)
        if hook is None or hook(visitor, current) is not False:
            reader = readers.get(node_type)
            if reader is None:
                reader = _reader(node_type, which)
            # One C call reads every child field, in libcst's order.
            get, count = reader
            if count == 1:
                values = (get(current),)  # ``attrgetter`` of one name gives the value itself
            elif count:
                values = get(current)
            else:
                values = ()
            for value in values:
                if isinstance(value, sequences):
                    for child in value:
                        if type(child) not in skip:
                            visit(child)
                elif value is not None and value is not default and type(value) not in skip:
                    visit(value)
        hook = leaves.get(node_type, _UNSET)
        if hook is _UNSET:
            hook = hook_for(leaves, "leave_", node_type)
        if hook is not None:
            hook(visitor, current)

    try:
        visit(node)
    finally:
        # ``visit`` calls itself through its own closure cell: a reference cycle that
        # would keep the visitor, and the whole tree it holds, alive until the cyclic
        # collector ran (which the check pauses while a file is analysed: that
        # collection then traversed every node of the file). Emptying the cell breaks it.
        visit = None  # type: ignore[assignment]


_UNSET = object()
#: Per ``which`` (every child field, or the non-trivia ones): node type -> (a function
#: reading those fields of a node, how many there are); see :func:`_reader`.
_readers: tuple[dict[type, tuple], dict[type, tuple]] = ({}, {})


def _reader(node_type: type, which: int) -> tuple:
    """How :func:`walk` reads the children of a ``node_type`` node: ``attrgetter`` of
    the fields (a tuple of their values, or the value itself for one field); without
    libcst's source, ``node.children`` (as one sequence)."""
    fields = child_fields(node_type)
    if fields is None:
        reader: tuple = (_children_property, 1)
    else:
        names = fields[which]
        reader = (attrgetter(*names) if names else None, len(names))
    _readers[which][node_type] = reader
    return reader


def _children_property(node: cst.CSTNode) -> Sequence[cst.CSTNode]:
    return tuple(node.children)


class ScopeVisitor(cst.CSTVisitor):
    """A visitor of one scope, ``root`` (a module, function or class): a function, class or
    lambda nested in it binds names of its own and is not entered."""

    def __init__(self, root: cst.CSTNode | None = None) -> None:
        super().__init__()
        self.root = root

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.root

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return node is self.root

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


# Per visitor class (weakly: rules define visitor classes inside functions):
# node type -> the class's own hook function, or None.
_hooks_by_class: WeakKeyDictionary[type, tuple[dict[type, object], dict[type, object]]] = WeakKeyDictionary()


def _hook_tables(visitor_type: type) -> tuple[dict[type, object], dict[type, object]]:
    tables = _hooks_by_class.get(visitor_type)
    if tables is None:
        tables = _hooks_by_class[visitor_type] = ({}, {})
    return tables


def _class_hook(visitor_type: type, attr: str):
    """The plain function ``visitor_type`` defines for ``attr`` (None: libcst's no-op)."""
    if _is_libcst_stub(visitor_type, attr):
        return None
    hook = inspect.getattr_static(visitor_type, attr, None)
    if hook is None:
        return None
    if isinstance(hook, staticmethod):
        function = hook.__func__
        return lambda _visitor, node: function(node)
    if isinstance(hook, classmethod):
        function = hook.__func__
        return lambda _visitor, node: function(visitor_type, node)
    return hook


