"""Whether a module is a script: code someone runs with ``python file.py``, not only imports.

A module that no file of the project imports can still run, as a script (see
:mod:`synclint.project.unimported_modules`). A script says so in one of two ways: an ``if
__name__ == "__main__":`` block, or a top level that does work when the file runs (a
training script written straight down: ``parser.add_argument(...)``, ``main(args)``,
``for epoch in range(...):``). A module only imported defines things: its top level holds
imports, definitions, docstrings and assignments, and blocks (``if``, ``try``) of those
(``try: import apex except ImportError: apex = None``).

An assignment may call (``logger = logging.getLogger(__name__)``, ``RANK =
int(os.getenv("RANK", -1))``): a module of definitions computes its constants. A script
that only assigns (``results = train(parse())``) is the case this misses; a statement
that calls for its effect alone (``print(...)``, ``main()``, ``warnings.filterwarnings``)
or a loop makes the module a script, which errs towards "it runs".
"""

from __future__ import annotations

import ast

#: Statements a module of definitions holds at its top level (blocks are looked into).
_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
                ast.AnnAssign, ast.AugAssign, ast.Pass, ast.Global, ast.Nonlocal, ast.Delete, ast.Assert)


def is_script(tree: ast.Module) -> bool:
    """Whether the module runs code of its own when run: a ``__main__`` guard, or a top-level
    statement that does work (see the module's docstring)."""
    return any(_does_work(statement) for statement in tree.body)


def _does_work(statement: ast.stmt) -> bool:
    if isinstance(statement, _DEFINITIONS):
        return False
    if isinstance(statement, ast.Expr):  # a docstring or a constant does nothing; a call does
        return not isinstance(statement.value, ast.Constant)
    if isinstance(statement, ast.If):
        return _main_guard(statement.test) or any(map(_does_work, [*statement.body, *statement.orelse]))
    if isinstance(statement, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        blocks = [*statement.body, *statement.orelse, *statement.finalbody]
        return any(map(_does_work, [*blocks, *(line for handler in statement.handlers for line in handler.body)]))
    return True  # a loop, ``with``, ``match``, ``raise`` at the top level


def _main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round), alone or in an ``and``/``or``."""
    if isinstance(test, ast.BoolOp):
        return any(map(_main_guard, test.values))
    if not isinstance(test, ast.Compare) or len(test.comparators) != 1:
        return False
    sides = {_spelled(test.left), _spelled(test.comparators[0])}
    return sides == {"__name__", "__main__"}


def _spelled(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def registers_itself(tree: ast.Module) -> bool:
    """Whether importing the module files one of its definitions in a registry: a top-level
    class or function under a decorator that names a registration (``@BACKBONES.register_module()``,
    ``@register_model``, ``@ARCH_REGISTRY.register()``). A framework builds such a class by
    a name in a config once something imports the module, maybe from outside the project
    (ConvNeXt's ``semantic_segmentation/backbone/convnext.py``, copied into mmsegmentation)."""
    return any(
        "register" in ast.unparse(decorator).lower()
        for statement in tree.body if isinstance(statement, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        for decorator in statement.decorator_list
    )
