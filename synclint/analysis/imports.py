"""Import-aware name resolution without libcst's (slow) scope metadata.

``import torch as T`` makes ``T.nonzero`` mean ``torch.nonzero``;
``from torch import nonzero as nz`` makes ``nz`` mean ``torch.nonzero``.
Imports are collected flow-insensitively from the whole module (function-level
imports included): a name bound by an import anywhere is taken to mean that
import everywhere, which is what real training code relies on.
"""

from __future__ import annotations

import ast

import libcst as cst

from synclint.traversal import walk

NUMPY_ROOTS = frozenset({"numpy", "cupy", "jax.numpy"})
#: Other array libraries whose tensors share method names with torch (``.numpy()``).
OTHER_TENSOR_ROOTS = frozenset(
    {"tensorflow", "jax", "mxnet", "paddle", "cupy", "tinygrad", "mlx", "cutlass", "triton", "numba", "warp"}
)  # and kernel DSLs, whose values (`cute.Tensor`, `tl.tensor`) are not torch tensors
PANDAS_ROOTS = frozenset({"pandas", "polars"})


def dotted_name(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def callee_name(func: cst.BaseExpression) -> str:
    """The last name of what a call calls: ``f`` of ``f(x)``, ``step`` of ``opt.step()``; ""
    for anything else (``fs[0](x)``, ``make()(x)``)."""
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def _module_name(node: cst.BaseExpression | None) -> str:
    return "" if node is None else (dotted_name(node) or "")


class ImportMap(cst.CSTVisitor):
    """Maps local names to the fully qualified names they were imported as."""

    def __init__(self) -> None:
        super().__init__()
        self.aliases: dict[str, str] = {}
        #: Local names an ``import`` statement binds to a module (``np`` of ``import numpy as
        #: np``, ``torch`` of ``import torch.nn``): a module, never a tensor.
        self.modules: set[str] = set()
        # id(node) -> (node, answer): every rule asks about every call's callee; the
        # node is kept so that its id cannot be reused while the entry exists.
        self._qualified: dict[int, tuple[cst.BaseExpression, str | None]] = {}
        self._roots: dict[frozenset[str], bool] = {}

    # -- collection -----------------------------------------------------
    def visit_Import(self, node: cst.Import) -> bool:
        self._qualified.clear()
        self._roots.clear()
        for alias in node.names:
            full = _module_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = full
                self.modules.add(alias.asname.name.value)
            else:
                # ``import torch.nn.functional`` binds ``torch``.
                root = full.split(".", 1)[0]
                self.aliases.setdefault(root, root)
                self.modules.add(root)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self._qualified.clear()
        self._roots.clear()
        if node.relative:
            return False
        module = _module_name(node.module)
        if isinstance(node.names, cst.ImportStar):
            self.aliases.setdefault(f"*{module}", module)
            return False
        for alias in node.names:
            imported = _module_name(alias.name)
            local = imported
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = f"{module}.{imported}"
        return False

    def add_star_imported(self, names: dict[str, tuple[str, bool]], bound: set[str] | frozenset[str] = frozenset()) -> None:
        """Names a star import of a project module brings in (local -> (qualified name,
        whether it is a module)), which the file's own statements cannot show; its own
        imports stand, and so do the names it binds otherwise (``bound``: see
        :func:`names_bound`; ``for data in loader`` after a star import that brings in
        ``torch.utils.data`` as ``data``)."""
        self._qualified.clear()
        self._roots.clear()
        for local, (full, is_module) in names.items():
            if local not in self.aliases and local not in bound:
                self.aliases[local] = full
                if is_module:
                    self.modules.add(local)

    # Imports live in statements; skip expression-heavy subtrees cheaply.
    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        return any(isinstance(stmt, (cst.Import, cst.ImportFrom)) for stmt in node.body)

    # -- queries ----------------------------------------------------------
    def qualify(self, node: cst.BaseExpression) -> str | None:
        """The fully qualified name of a Name/Attribute chain, if it is imported."""
        cached = self._qualified.get(id(node))
        if cached is not None and cached[0] is node:
            return cached[1]
        answer = self._qualify(node)
        self._qualified[id(node)] = (node, answer)
        return answer

    def _qualify(self, node: cst.BaseExpression) -> str | None:
        name = dotted_name(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        full = self.aliases.get(head)
        if full is None:
            if "*torch" in self.aliases and head in _TORCH_STAR_NAMES:
                full = f"torch.{head}"
            else:
                return None
        return f"{full}.{rest}" if rest else full

    def imports_root(self, roots: frozenset[str] | set[str]) -> bool:
        key = frozenset(roots)
        known = self._roots.get(key)
        if known is None:
            known = self._roots[key] = self._imports_root(key)
        return known

    def _imports_root(self, roots: frozenset[str]) -> bool:
        return any(
            full == root or full.startswith(root + ".")
            for full in self.aliases.values()
            for root in roots
        )

    @property
    def imports_torch(self) -> bool:
        return self.imports_root({"torch"})

    @property
    def imports_numpy(self) -> bool:
        return self.imports_root(NUMPY_ROOTS)

    @property
    def imports_pandas(self) -> bool:
        return self.imports_root(PANDAS_ROOTS)

    @property
    def imports_other_tensors(self) -> bool:
        return self.imports_root(OTHER_TENSOR_ROOTS)

    @property
    def torch_only(self) -> bool:
        """Imports torch and no other array library: arrays here are tensors."""
        return self.imports_torch and not (
            self.imports_numpy or self.imports_pandas or self.imports_other_tensors
        )


# ``from torch import *`` is rare; resolve only the names rules care about.
_TORCH_STAR_NAMES = frozenset(
    {"nonzero", "argwhere", "where", "unique", "unique_consecutive", "masked_select",
     "repeat_interleave", "bincount", "tensor", "zeros", "ones", "full", "equal", "allclose"}
)


def names_bound(module: cst.Module, tree: ast.Module | None = None) -> set[str]:
    """The names ``module`` binds otherwise than by an import, in any scope: an assignment,
    a loop's target, a parameter, a ``def`` or ``class``, ``except ... as``, a match
    capture (``tree``: CPython's tree of the same code, when at hand)."""
    if tree is None:
        try:
            tree = ast.parse(module.code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return bound


def collect_imports(module: cst.Module, tree: ast.Module | None = None) -> ImportMap:
    """The module's imports; read from ``tree``, CPython's tree of the same code, when
    given (the same map, ten times faster than walking the libcst tree)."""
    if tree is not None:
        return imports_from_tree(tree)
    imports = ImportMap()
    walk(module, imports)
    return imports


def imports_from_tree(tree: ast.Module) -> ImportMap:
    """The import map of CPython's tree of a module (what the libcst walk gives)."""
    imports = ImportMap()
    for node in _imports_in_order(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is not None:
                    imports.aliases[alias.asname] = alias.name
                    imports.modules.add(alias.asname)
                else:
                    root = alias.name.split(".", 1)[0]
                    imports.aliases.setdefault(root, root)
                    imports.modules.add(root)
        elif not node.level:
            module_name = node.module or ""
            if node.names[0].name == "*":
                imports.aliases.setdefault(f"*{module_name}", module_name)
                continue
            for alias in node.names:
                imports.aliases[alias.asname or alias.name] = f"{module_name}.{alias.name}"
    return imports


def _imports_in_order(statements: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Import statements at any depth, in source order (later bindings win, as in the walk)."""
    found: list[ast.Import | ast.ImportFrom] = []
    _collect_imports(statements, found)
    return found


def _collect_imports(statements: list, found: list) -> None:
    for statement in statements:
        kind = type(statement)
        if kind is ast.Import or kind is ast.ImportFrom:
            found.append(statement)
            continue
        for field in _BLOCKS[kind]:
            children = getattr(statement, field, None)
            if isinstance(children, list):
                _collect_imports(children, found)


class _BlockFields(dict):
    """Node type -> its fields that hold statements (or handlers, cases), read once per
    type: simple statements, most of a module, have none to look at."""

    def __missing__(self, kind: type) -> tuple[str, ...]:
        fields = self[kind] = tuple(
            name for name in ("body", "handlers", "orelse", "finalbody", "cases") if name in kind._fields
        )
        return fields


_BLOCKS = _BlockFields()
