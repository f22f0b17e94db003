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

* a **deadline**: a counter the loop moves on before the guard (``cur_nimg += batch_size``,
  or the loop's target) compared with a bound (``cur_nimg < tick_start_nimg + K``,
  ``cur_nimg - tick_start_nimg < K``, ``step < next_log``) that the rest itself moves
  past the counter (``tick_start_nimg = cur_nimg``, ``next_log = step + interval``) by a
  statement it always runs (not under a condition, nor after a ``continue`` of its own,
  nor in a nested function): false once per period. The guard must hold one;
* a counter **past the first** pass (``cur_tick != 0``, ``i > 0``) that the loop moves on
  (before the guard, or adds to in what the rest always runs): false on the first only;
* ``not done`` of a **termination flag** the loop breaks on (``if done: break``): false on
  the last pass only.

A rest that steps an optimizer or runs a loop of steps is the step itself (the summary
builder checks that), whatever the guard looks like.
"""

from __future__ import annotations

import ast

from synclint.project.scopes import dotted_name, sides_of_less, walk_nodes


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


def continues_until_a_period(node: ast.If, rest: list[ast.stmt], loop: ast.AST, before: list[ast.stmt]) -> bool:
    """``node`` is ``if ...: continue`` whose guard is true on every pass of ``loop`` but
    the rare ones (see the module's docstring); ``rest``: the statements of the loop's body
    after it, ``before``: those before it."""
    if node.orelse or len(node.body) != 1 or not isinstance(node.body[0], ast.Continue):
        return False
    test = node.test
    clauses = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    moved: dict[str, list[ast.expr]] = {}  # bound -> the values the rest assigns it
    advanced: set[str] = set()  # what the rest adds to (``cur_tick += 1``)
    breaks_on: set[str] = set()
    always = _always_run(rest)
    for statement in always:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if (name := dotted_name(target)) is not None:
                    moved.setdefault(name, []).append(statement.value)
        elif isinstance(statement, ast.AugAssign) and isinstance(statement.op, ast.Add):
            if (name := dotted_name(statement.target)) is not None:
                advanced.add(name)
    # ``if done: break`` of the rest's own statements, reached whenever the rest runs.
    reached = next((position for position, statement in enumerate(rest) if _leaves_the_pass(statement)), len(rest))
    for statement in rest[:reached + 1]:
        if isinstance(statement, ast.If) and any(isinstance(s, ast.Break) for s in statement.body):
            if (name := dotted_name(statement.test)) is not None:
                breaks_on.add(name)
    counters = _moved_texts([*before, loop.target] if isinstance(loop, (ast.For, ast.AsyncFor)) else before)
    deadline = False
    for clause in clauses:
        if _before_the_next_period(clause, moved, counters):
            deadline = True
        elif (counter := past_the_first(clause)) is not None and (
                dotted_name(counter) in counters or dotted_name(counter) in advanced):
            continue  # (a counter this loop moves on: one it never moves, an outer loop's, may stay 0)
        elif not (isinstance(clause, ast.UnaryOp) and isinstance(clause.op, ast.Not)
                  and dotted_name(clause.operand) in breaks_on):
            return False
    return deadline


def _before_the_next_period(clause: ast.AST, moved: dict[str, list[ast.expr]], counters: set[str]) -> bool:
    """``counter < bound + K`` (or ``counter - bound < K``, ``counter < bound``, and the
    same the other way round), where the loop moves ``counter`` on outside the rest (one of
    ``counters``: else only the rest moves either side, and runs on every pass until the
    guard holds, as ``if max_samples < n_seen: continue`` then ``n_seen += n``) and the rest
    moves ``bound`` on to the counter (``bound = counter``, ``bound = counter + interval``).
    Not ``bound += interval``: by less than the counter moves in a pass, the rest would
    run on every pass once it has run."""
    sides = sides_of_less(clause)
    if sides is None:
        return False
    small, big = sides
    if isinstance(small, ast.BinOp) and isinstance(small.op, ast.Sub):  # counter - bound < K
        counter, bounds = dotted_name(small.left), [small.right]
    else:
        counter, bounds = dotted_name(small), _terms(big)
    if counter is None or counter not in counters:
        return False
    for bound in bounds:
        name = dotted_name(bound)
        if name is None or name == counter:
            continue
        if any(counter in {dotted_name(term) for term in _terms(value)} for value in moved.get(name, ())):
            return True
    return False


def _always_run(rest: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of ``rest`` that run whenever it does: its own simple statements and
    those of its ``with`` blocks, up to the first that may leave the pass (``break``,
    ``continue``, ``return``, or a compound statement holding one); no branch, loop, ``try``
    or nested function."""
    kept: list[ast.stmt] = []
    for statement in rest:
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            kept.extend(_always_run(statement.body))
            if _leaves_the_pass(statement):
                break
            continue
        if _leaves_the_pass(statement):
            break
        if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Pass)):
            kept.append(statement)
        # (a branch, a loop, a ``try``, a nested function: what it assigns may not be assigned)
    return kept


def _leaves_the_pass(node: ast.AST, in_a_loop: bool = False) -> bool:
    """``node`` may end the loop's pass: a ``return``, or a ``break`` or ``continue`` not of
    a loop nested in it (a nested function's are its own)."""
    if isinstance(node, ast.Return) or (isinstance(node, (ast.Break, ast.Continue)) and not in_a_loop):
        return True
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        return False
    loop = isinstance(node, (ast.For, ast.AsyncFor, ast.While))
    orelse = {id(child) for child in node.orelse} if loop else set()  # (a loop's ``else`` is outside it)
    return any(_leaves_the_pass(child, in_a_loop or (loop and id(child) not in orelse))
               for child in ast.iter_child_nodes(node)
               if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)))  # (a handler's, a case's too)


def _moved_texts(nodes: list[ast.AST]) -> set[str]:
    """The names and attribute chains bound in ``nodes`` (``cur_nimg += n``) and the names
    of a loop's target among them (``step``, ``(i, batch)``)."""
    texts: set[str] = set()
    for node in nodes:
        for child in walk_nodes(node):
            if isinstance(child, ast.Assign):
                targets = child.targets
            elif isinstance(child, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
                targets = [child.target]
            else:
                continue
            for target in targets:
                texts.update(text for part in walk_nodes(target) if (text := dotted_name(part)) is not None)
        if not isinstance(node, ast.stmt):  # a loop's target
            texts.update(text for part in walk_nodes(node) if (text := dotted_name(part)) is not None)
    return texts


def _terms(node: ast.AST) -> list[ast.AST]:
    """The terms of a sum (``a + b * c`` -> ``a``, ``b * c``), or the node itself."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [*_terms(node.left), *_terms(node.right)]
    return [node]
