"""Guards that skip the rest of a training loop's body until the next period.

StyleGAN2-ADA's ``training_loop`` (and the many repositories built on it: StyleGAN3, EG3D,
GET3D, projected-gan) steps the optimizers, counts the images seen, then::

    done = (cur_nimg >= total_kimg * 1000)
    if (not done) and (cur_tick != 0) and (cur_nimg < tick_start_nimg + kimg_per_tick * 1000):
        continue
    ...  # status line, snapshots, metrics: once per tick
    tick_start_nimg = cur_nimg

What follows the ``continue`` runs once per tick (thousands of images), not per step.
Read from the control flow, not from names: the rest of the body runs only when one
clause of the guard is false, and each clause must be false rarely:

* a **deadline**: a counter compared with a bound (``cur_nimg < tick_start_nimg + K``,
  ``cur_nimg - tick_start_nimg < K``, ``step < next_log``) that the rest itself moves
  past the counter (``tick_start_nimg = cur_nimg``, ``next_log = step + interval``): false
  once per period. The guard must hold one;
* a counter **past the first** pass (``cur_tick != 0``, ``i > 0``): false on the first only;
* ``not done`` of a **termination flag** the loop breaks on (``if done: break``): false on
  the last pass only.

A rest that steps an optimizer or runs a loop of steps is the step itself (the summary
builder checks that), whatever the guard looks like.
"""

from __future__ import annotations

import ast

from synclint.project.scopes import walk_nodes


def past_the_first(test: ast.AST) -> ast.AST | None:
    """The counter of ``counter > 0``, ``counter != 0``, ``counter >= 1`` (either way round):
    true on every pass but the first."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    for counter, bound, past in ((left, right, (ast.Gt, ast.NotEq)), (right, left, (ast.Lt, ast.NotEq))):
        if isinstance(bound, ast.Constant) and type(bound.value) is int and (
                (bound.value == 0 and isinstance(op, past))
                or (bound.value == 1 and isinstance(op, ast.GtE if counter is left else ast.LtE))):
            return counter
    return None


def continues_until_a_period(node: ast.If, rest: list[ast.stmt]) -> bool:
    """``node`` is ``if ...: continue`` whose guard is true on every pass of the loop but
    the rare ones (see the module's docstring); ``rest``: the statements of the loop's body
    after it."""
    if node.orelse or len(node.body) != 1 or not isinstance(node.body[0], ast.Continue):
        return False
    test = node.test
    clauses = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    moved: dict[str, list[ast.expr]] = {}  # bound -> the values the rest assigns it
    advanced: set[str] = set()  # bounds the rest adds to (``next_log += interval``)
    breaks_on: set[str] = set()
    for statement in rest:
        for child in walk_nodes(statement):
            if isinstance(child, ast.Assign):
                for target in child.targets:
                    if (name := _text(target)) is not None:
                        moved.setdefault(name, []).append(child.value)
            elif isinstance(child, ast.AugAssign) and isinstance(child.op, ast.Add):
                if (name := _text(child.target)) is not None:
                    advanced.add(name)
            elif isinstance(child, ast.If) and any(isinstance(s, ast.Break) for s in child.body):
                if (name := _text(child.test)) is not None:
                    breaks_on.add(name)
    deadline = False
    for clause in clauses:
        if _before_the_next_period(clause, moved, advanced):
            deadline = True
        elif past_the_first(clause) is not None:
            continue
        elif not (isinstance(clause, ast.UnaryOp) and isinstance(clause.op, ast.Not)
                  and _text(clause.operand) in breaks_on):
            return False
    return deadline


def _before_the_next_period(clause: ast.AST, moved: dict[str, list[ast.expr]], advanced: set[str]) -> bool:
    """``counter < bound + K`` (or ``counter - bound < K``, ``counter < bound``, and the
    same the other way round), where the rest moves ``bound`` on to the counter (``bound =
    counter``, ``bound = counter + interval``) or by a period (``bound += interval``)."""
    if not (isinstance(clause, ast.Compare) and len(clause.ops) == 1):
        return False
    op, small, big = clause.ops[0], clause.left, clause.comparators[0]
    if isinstance(op, (ast.Gt, ast.GtE)):
        small, big = big, small
    elif not isinstance(op, (ast.Lt, ast.LtE)):
        return False
    if isinstance(small, ast.BinOp) and isinstance(small.op, ast.Sub):  # counter - bound < K
        counter, bounds = _text(small.left), [small.right]
    else:
        counter, bounds = _text(small), _terms(big)
    if counter is None:
        return False
    for bound in bounds:
        name = _text(bound)
        if name is None or name == counter:
            continue
        if name in advanced or any(counter in {_text(term) for term in _terms(value)} for value in moved.get(name, ())):
            return True
    return False


def _terms(node: ast.AST) -> list[ast.AST]:
    """The terms of a sum (``a + b * c`` -> ``a``, ``b * c``), or the node itself."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [*_terms(node.left), *_terms(node.right)]
    return [node]


def _text(node: ast.AST) -> str | None:
    """``a.b.c`` for a name or an attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
