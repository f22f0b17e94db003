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
or a loop makes the module a script, which errs towards "it runs". Not a message logged or
warned while the module is imported (``logger.info("Pykeops installation found.")``,
``warnings.warn(...)``): modules of definitions report their optional dependencies so;
but one whose message a call computes (``logger.info(main())``) does that call's work.
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
        return not isinstance(statement.value, ast.Constant) and not _only_reports(statement.value)
    if isinstance(statement, ast.If):
        return _main_guard(statement.test) or any(map(_does_work, [*statement.body, *statement.orelse]))
    if isinstance(statement, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        blocks = [*statement.body, *statement.orelse, *statement.finalbody]
        return any(map(_does_work, [*blocks, *(line for handler in statement.handlers for line in handler.body)]))
    return True  # a loop, ``with``, ``match``, ``raise`` at the top level


#: Methods of a logger (``logger.info``) and of ``logging`` (``logging.warning``).
_LOGGING_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "log"})
#: Names a module binds its logger to (``logger = logging.getLogger(__name__)``).
_LOGGER_NAMES = frozenset({"logger", "log", "logging", "_logger", "_log", "LOGGER", "LOG"})


def _only_reports(value: ast.expr) -> bool:
    """A call that only reports while the module is imported: ``logger.info("Pykeops
    installation found.")`` or ``warnings.warn(...)`` in an optional-dependency ``try``
    (mt-dnn's ``module/s4.py``, a module of definitions), of arguments no call computes.
    A script does more than that (``logger.info(main())``)."""
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    receiver, method = value.func.value, value.func.attr
    if not isinstance(receiver, ast.Name):
        return False
    reports = (receiver.id == "warnings" and method == "warn") or (
        receiver.id in _LOGGER_NAMES and method in _LOGGING_METHODS)
    # (What it reports must not be computed by a call: ``logger.info(main())`` runs the
    # program. A message's ``"...".format(...)`` builds text only.)
    return reports and not any(
        isinstance(node, ast.Call) and not _formats_text(node)
        for argument in [*value.args, *(keyword.value for keyword in value.keywords)] for node in ast.walk(argument))


def _formats_text(call: ast.Call) -> bool:
    """``"{} found".format(name)``: a message's text, formatted."""
    return (isinstance(call.func, ast.Attribute) and call.func.attr == "format"
            and isinstance(call.func.value, ast.Constant) and isinstance(call.func.value.value, str))


def main_blocks(tree: ast.Module) -> list[ast.If]:
    """The module's top-level ``if __name__ == "__main__":`` statements: what runs only when
    the file is run, not when it is imported."""
    return [statement for statement in tree.body if isinstance(statement, ast.If) and _only_when_run(statement.test)]


def _only_when_run(test: ast.expr) -> bool:
    """``__name__ == "__main__"``, alone or in an ``and``: a test false whenever the module
    is imported. Not ``!=`` (true on import) nor an ``or`` (``... or FORCE`` may be true on
    import), which :func:`_main_guard` accepts as a sign of a script."""
    if isinstance(test, ast.BoolOp):
        return isinstance(test.op, ast.And) and any(map(_only_when_run, test.values))
    return _main_guard(test) and isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.Eq)


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
