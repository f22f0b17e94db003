"""Name the modules a fix needs, and add their imports only when missing."""

from __future__ import annotations

import libcst as cst

from synclint.analysis.imports import ImportMap
from synclint.sources import source_lines


def local_name(imports: ImportMap, module: str) -> str | None:
    """The name bound to ``module`` in this file (``T`` after ``import torch as T``)."""
    for local, full in imports.aliases.items():
        if full == module and not local.startswith("*"):
            return local
    return None


def name_for(imports: ImportMap, module: str, default: str) -> tuple[str, tuple[str, ...]]:
    """The expression prefix to use for ``module`` and the imports the fix must add.

    ``name_for(imports, "torch", "torch")`` -> ``("T", ())`` after ``import torch as T``,
    or ``("torch", ("torch",))`` when nothing binds torch yet.
    """
    bound = local_name(imports, module)
    if bound is not None:
        return bound, ()
    return default, (module,)


def ensure_imports(module: cst.Module, needed: list[str]) -> cst.Module:
    """Add ``import X`` for each needed module that no name in ``module`` binds yet."""
    if not needed:
        return module
    from synclint.fixers.proofs import runtime_imports

    # Only imports that run count: one under `if TYPE_CHECKING:` binds nothing at run time.
    # The new code names a module by its full dotted name (``torch.nn.functional.x``),
    # which works once its root is imported.
    bound = runtime_imports(module)
    by_root: dict[str, str] = {}  # root -> the one import line that binds it
    for m in dict.fromkeys(needed):
        root = m.split(".")[0]
        if bound.get(root) != root and len(m) > len(by_root.get(root, "")):
            by_root[root] = m  # `import torch.nn.functional` also binds `torch`
    missing = list(by_root.values())
    if not missing:
        return module
    new_lines = [cst.parse_statement(f"import {name}\n") for name in missing]
    body = list(module.body)
    insert_at = 0
    for index, statement in enumerate(body):
        if _is_docstring(statement, index) or _is_future_import(statement):
            insert_at = index + 1
    return module.with_changes(body=body[:insert_at] + new_lines + body[insert_at:])


def _is_docstring(statement: cst.CSTNode, index: int) -> bool:
    return (
        index == 0
        and isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_future_import(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and any(isinstance(s, cst.ImportFrom) and getattr(s.module, "value", None) == "__future__" for s in statement.body)
    )


def import_insertion(source: str, needed: tuple[str, ...] | list[str]) -> tuple[int, str] | None:
    """Where and what :func:`ensure_imports` inserts into ``source`` for ``needed``:
    ``(1-based line, text)``, the text to insert at column 1 of that line; None when
    nothing is missing. Computed by running ``ensure_imports`` itself and locating the
    inserted lines, so a JSON/SARIF edit reproduces exactly what ``fix`` writes."""
    if not needed:
        return None
    module = cst.parse_module(source)
    fixed = ensure_imports(module, list(needed)).code
    if fixed == source:
        return None
    before = source_lines(source, keepends=True)
    after = source_lines(fixed, keepends=True)
    start = 0
    while start < len(before) and before[start] == after[start]:
        start += 1
    inserted = len(after) - len(before)
    return start + 1, "".join(after[start : start + inserted])
