"""Loops over batches that stop for a person on every pass: a demo showing each batch's
results, whose syncs cost nothing beside the wait (cold, :data:`INTERACTIVE`).

A wait counts only where it stops *every* pass: ``cv2.waitKey(0)`` under ``if args.show:``,
in an ``except`` clause or in a function the loop only defines leaves the other passes
(the default run) going at full speed. And ``plt.show()`` waits only for a window of a GUI
backend out of interactive mode: after ``plt.ion()`` it returns at once (a live training
plot), with a non-GUI backend (``matplotlib.use("Agg")``) it does nothing, and in a notebook
the kernel's backend draws the figure and returns (the caller says which modules are one).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

#: Why a loop over batches that stops for a person on every pass is not a step.
INTERACTIVE = "interactive (each pass waits for a key press or a closed plot window)"
#: Calls that block until a person acts (``plt.show()`` only where plots block, unless ``block=False``).
_WAITS_FOR_A_PERSON = frozenset({"matplotlib.pyplot.waitforbuttonpress", "input"})
_SHOW = "matplotlib.pyplot.show"
#: Calls that make ``plt.show()`` return at once: interactive mode, or another backend.
_INTERACTIVE_MODE = frozenset({"matplotlib.pyplot.ion", "matplotlib.interactive"})
_BACKEND_CHOICE = frozenset({"matplotlib.use", "matplotlib.pyplot.switch_backend"})
#: Backends whose ``show()`` opens a window and waits for it to close.
_GUI_BACKENDS = frozenset({"tkagg", "tkcairo", "qtagg", "qtcairo", "qt5agg", "qt5cairo", "qt4agg", "gtk3agg",
                           "gtk3cairo", "gtk4agg", "gtk4cairo", "wxagg", "wxcairo", "wx", "macosx", "webagg"})

NameOf = Callable[[ast.AST], "str | None"]


def plots_block(tree: ast.Module, name_of: NameOf) -> bool:
    """Whether ``plt.show()`` in this module waits for a window to be closed: it never turns
    on interactive mode (``plt.ion()``, ``matplotlib.interactive(True)``) nor picks a
    backend that is not a GUI one (``matplotlib.use("Agg")``; one it cannot read may be any)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = name_of(node.func)
        if name in _INTERACTIVE_MODE and not (node.args and _is_constant(node.args[0], False)):
            return False
        if name in _BACKEND_CHOICE:
            backend = node.args[0] if node.args else None
            if not (isinstance(backend, ast.Constant) and str(backend.value).lower() in _GUI_BACKENDS):
                return False
    return True


def waits_for_a_person(loop: ast.For | ast.AsyncFor | ast.While, name_of: NameOf, plots_block: bool) -> bool:
    """The loop's body stops for a person on every pass: ``cv2.waitKey(0)`` (or no
    argument: wait forever), ``input(...)``, ``plt.waitforbuttonpress()``, ``plt.show()``
    where plots block. ``cv2.waitKey(1)`` (a live video loop: 1 ms) does not stop."""
    nodes = _every_pass(loop.body)
    if isinstance(loop, ast.While):
        nodes = (*_always_evaluated(loop.test), *nodes)
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        name = name_of(node.func) or ""
        if name in _WAITS_FOR_A_PERSON:
            return True
        if name == _SHOW and plots_block and not any(k.arg == "block" and _is_constant(k.value, False) for k in node.keywords):
            return True
        if name.endswith("waitKey") and (not node.args or _is_constant(node.args[0], 0)):
            return True
    return False


def _every_pass(statements: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of ``statements`` that run whenever they do: not the bodies of ``if``
    (its test does run), ``except`` clauses, nested functions or classes; the bodies of
    ``with``, ``try`` and inner loops (over the batch's images) run."""
    for statement in statements:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(statement, ast.If):
            yield from _always_evaluated(statement.test)
        elif isinstance(statement, ast.Match):
            yield from _always_evaluated(statement.subject)
        elif isinstance(statement, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            yield from _every_pass([*statement.body, *statement.orelse, *statement.finalbody])
        elif isinstance(statement, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
            for child in ast.iter_child_nodes(statement):
                if not isinstance(child, ast.stmt):
                    yield from _always_evaluated(child)
            yield from _every_pass(statement.body)
        else:
            for child in ast.iter_child_nodes(statement):
                yield from _always_evaluated(child)


def _always_evaluated(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and what is evaluated whenever it is: not a lambda's body, the branches
    of ``a if c else b``, what follows the first operand of ``and``/``or``, nor the
    elements of a comprehension (its first iterable may be empty)."""
    yield node
    if isinstance(node, ast.Lambda):
        return
    if isinstance(node, ast.IfExp):
        children = [node.test]
    elif isinstance(node, ast.BoolOp):
        children = node.values[:1]
    elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        children = [node.generators[0].iter]
    else:
        children = list(ast.iter_child_nodes(node))
    for child in children:
        yield from _always_evaluated(child)


def _is_constant(node: ast.AST, value: object) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is type(value) and node.value == value
