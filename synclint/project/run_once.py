"""Code that runs once per run: a module's statements outside its loops.

Python runs a module's top-level statements once per import or script run, and a
class body (with the decorators, default values and base classes of what it
defines) once, when the definition runs. A sync there (``print(y.cpu())`` after a
script's training loop, ``plt.imshow(images[0].cpu())`` in a notebook cell) waits
for the device once, not every step: cold, like a constructor.

What runs more often keeps the context the index gives it:

* the body of a module-level loop (``for``, ``async for``, ``while``) runs once per
  pass: a loop over batches is the step itself (a hot region), any other loop is
  left as it is, with everything nested in it;
* a comprehension (or generator expression) over batches runs once per batch, like
  a ``for`` over them: a statement that holds one is left as it is;
* function and lambda bodies run when called: their own context. A statement that
  holds a lambda is left whole (a line cannot be split between the two);
* ``except`` clauses are error paths, cold with that reason already.

The walk recurses into ``if``/``elif``/``else``, ``with``, ``try``/``else``/``finally``,
``match`` and class bodies (a ``if __name__ == "__main__":`` block holding
``for batch in loader:`` leaves the loop alone and makes the lines around it cold).
Spans are whole lines, so a header expression (an ``if`` test, a decorator, a
default value) is cold only when it ends before its block's first line.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Callable, Iterable, Iterator

from synclint.project.scopes import COMPREHENSIONS, TRY_STATEMENTS, runs_at_most_once

#: Why a module's straight-line code is cold.
MODULE_CODE = "module code outside a loop (runs once)"
#: Why a class body, and what a definition evaluates, is cold.
DEFINITION_TIME = "evaluated once, where a class or function is defined (a class body, decorators, default values, base classes)"
#: Both: what a module cold as a whole (a test) leaves out, to keep its own reason.
RUN_ONCE_WHYS = frozenset({MODULE_CODE, DEFINITION_TIME})

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
#: Code that runs apart from the statement holding it: a lambda's body, a comprehension's.
_APART = (ast.Lambda, *COMPREHENSIONS)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

#: (the statement or header expression, its first line, last line, why)
_Span = tuple[ast.AST, int, int, str]


def run_once_spans(module: ast.Module, over_batches: Callable[[ast.expr], bool]) -> Iterator[tuple[int, int, str]]:
    """(first line, last line, why) of the module's code that runs once per run;
    ``over_batches``: whether an iterable yields batches (``loader``)."""
    for node, first, last, why in _block(module.body, MODULE_CODE):
        if not _runs_apart(node, over_batches):
            yield first, last, why


def straight_line_spans(statements: list[ast.stmt], apart: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """(first line, last line) of the code among ``statements`` (a function's body, or a
    module's) that runs once each time they run, for the calls it makes: the same walk as
    :func:`run_once_spans`, but a statement that holds any comprehension is left out, not
    only one over batches. ``[generate(model, p) for p in prompts]`` calls ``generate``
    once per prompt, as a ``for`` loop over them would. A function called only from these
    lines (``main()`` under ``if __name__ == "__main__":``) runs them once per run.

    ``apart``: the (first, last) lines of every lambda and comprehension among the
    statements (see :func:`code_apart`), which the caller has at hand: a statement that
    holds one by its lines is left out (two statements on one line both are)."""
    starts = sorted(first for first, _last in apart)
    for _node, first, last, _why in _block(statements, ""):
        at = bisect.bisect_left(starts, first)
        if at == len(starts) or starts[at] > last:
            yield first, last


def within_spans(line: int, spans: Iterable[tuple[int, int]]) -> bool:
    """``line`` lies in one of ``spans`` (first, last), such as a function's
    :func:`straight_line_spans`."""
    return any(first <= line <= last for first, last in spans)


def code_apart(nodes: Iterable[ast.AST]) -> list[tuple[int, int]]:
    """(first, last) lines of the lambdas and comprehensions among ``nodes``."""
    return [(node.lineno, node.end_lineno or node.lineno) for node in nodes if isinstance(node, _APART)]


def _block(statements: Iterable[ast.stmt], why: str) -> Iterator[_Span]:
    for statement in statements:
        yield from _statement(statement, why)


def _statement(node: ast.stmt, why: str) -> Iterator[_Span]:
    if isinstance(node, _LOOPS) and runs_at_most_once(node):
        # (Its first pass, at most, then ``break``.)
        yield from _header([node.test if isinstance(node, ast.While) else node.iter], node.body, why)
        yield from _block(node.body, why)
        yield from _block(node.orelse, why)
    elif isinstance(node, _LOOPS):
        # The body runs once per pass; the ``else`` once, when the loop ends.
        yield from _block(node.orelse, why)
    elif isinstance(node, _FUNCTIONS):
        arguments = node.args
        yield from _definition(node, [*node.decorator_list, *arguments.defaults, *arguments.kw_defaults])
    elif isinstance(node, ast.ClassDef):
        yield from _definition(node, [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)])
        yield from _block(node.body, DEFINITION_TIME)
    elif isinstance(node, ast.If):
        yield from _header([node.test], node.body, why)
        yield from _block(node.body, why)
        yield from _block(node.orelse, why)
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        yield from _header([item.context_expr for item in node.items], node.body, why)
        yield from _block(node.body, why)
    elif isinstance(node, TRY_STATEMENTS):
        for block in (node.body, node.orelse, node.finalbody):
            yield from _block(block, why)
    elif isinstance(node, ast.Match):
        yield from _header([node.subject], node.cases[0].body, why)
        for case in node.cases:
            yield from _header([case.guard], case.body, why)
            yield from _block(case.body, why)
    else:
        yield node, node.lineno, node.end_lineno or node.lineno, why


def _definition(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
                expressions: list[ast.expr | None]) -> Iterator[_Span]:
    """What a definition evaluates when it runs, when it can run code (holds a call)."""
    computed = [e for e in expressions if e is not None and any(isinstance(n, ast.Call) for n in ast.walk(e))]
    yield from _header(computed, node.body, DEFINITION_TIME)


def _header(expressions: Iterable[ast.AST | None], body: list[ast.stmt], why: str) -> Iterator[_Span]:
    """Spans of a block's header expressions that end before the block's first line."""
    for expression in expressions:
        if expression is None:
            continue
        last = expression.end_lineno or expression.lineno
        if last < body[0].lineno:
            yield expression, expression.lineno, last, why


def _runs_apart(node: ast.AST, over_batches: Callable[[ast.expr], bool]) -> bool:
    """``node`` holds code that runs apart from it: a lambda's body (when called), or a
    comprehension's over batches (once per batch)."""
    return any(
        isinstance(child, ast.Lambda)
        or (isinstance(child, COMPREHENSIONS) and any(over_batches(loop.iter) for loop in child.generators))
        for child in ast.walk(node)
    )
