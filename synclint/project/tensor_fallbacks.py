"""Blocks that run only when a parameter is not a tensor: conversion fallbacks.

diffusers' UNets (and the copies in Tune-A-Video, T2I-Adapter, diffusion_policy) open
``forward`` with::

    timesteps = timestep
    if not torch.is_tensor(timesteps):
        timesteps = torch.tensor([timesteps], dtype=torch.long, device=sample.device)

and guided-diffusion's ``normal_kl`` (copied into DiT, improved-diffusion, PixArt, Latte,
point-e) with ``[x if isinstance(x, th.Tensor) else th.tensor(x).to(tensor) for x in
(logvar1, logvar2)]``. The upload waits for the device, but only for a caller that
passes a Python value: the training step passes tensors, and the block never runs there.

This module finds such blocks in one function's ``ast`` (the summary records them); which
of them the step enters is decided from the project's calls in
:mod:`synclint.project.step_branches`. A block qualifies when:

* its test is ``torch.is_tensor(p)`` or ``isinstance(p, torch.Tensor)`` (``Tensor``,
  ``th.Tensor``, or a tuple holding one), and the block is the branch taken when that
  test fails: the body of ``if not ...:`` or the ``else`` of ``if ...:``, or the matching
  arm of a conditional expression;
* ``p`` holds what the caller passed when the test runs: a parameter that nothing
  stores before the test and that no nested function rebinds, or a local bound once
  from such a parameter by a statement of the function's own body (``timesteps =
  timestep``), or the variable of a comprehension over a literal tuple of such
  parameters (``for x in (logvar1, logvar2)``: the block runs when either is not a
  tensor);
* the test is in no loop of the function (a store later in the loop would change what the
  next pass tests);
* for a conditional expression, whose arm shares lines with the rest of its statement:
  nothing else that reaches the arm's lines can hold a finding (no call, subscript,
  comparison or operator outside the arm and the test, of its statement, of another after
  a ``;``, of a one-line compound statement's header, nor a lambda), since contexts are
  per line and a node spanning several lines may be reported on any of them.
* the tested name is bound no other way before the test (``except ... as``, a ``match``
  capture, an import, a nested ``def``), and no nested function rebinds an alias.
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from synclint.project.scopes import (
    BINDERS_OTHER_THAN_NAMES,
    COMPREHENSIONS,
    NESTED_SCOPES,
    function_nodes,
    names_bound_by,
    nested_scopes,
)
from synclint.project.residency import closure_rebound_names

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
#: Nodes that cannot hold a finding: what may share an arm's lines (see the module docstring).
_INERT = (ast.Name, ast.Constant, ast.Tuple, ast.List, ast.Starred, ast.IfExp, ast.Assign, ast.AnnAssign,
          ast.Return, *COMPREHENSIONS)


#: Statements with blocks: what may share an arm's lines is in their headers' own nodes.
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match,
             *((ast.TryStar,) if hasattr(ast, "TryStar") else ()), ast.ExceptHandler)


class TensorFallback(NamedTuple):
    """Lines ``first``..``last`` run only when one of ``params`` is not a tensor; ``name``
    is the name the test reads (``timesteps``)."""

    first: int
    last: int
    params: tuple[str, ...]
    name: str


def tensor_fallbacks(node: ast.FunctionDef | ast.AsyncFunctionDef, params: tuple[str, ...]) -> tuple[TensorFallback, ...]:
    """The conversion fallbacks of ``node`` (see the module docstring)."""
    own = function_nodes(node)
    if not any(isinstance(current, ast.Call) and _tensor_test(current) for current in own):
        return ()
    stores: dict[str, list[int]] = {}
    for current in own:
        if isinstance(current, ast.Name) and isinstance(current.ctx, (ast.Store, ast.Del)):
            stores.setdefault(current.id, []).append(current.lineno)
        elif type(current) in BINDERS_OTHER_THAN_NAMES:  # ``except ... as t``, ``case {"t": t}``, ``import x as t``
            for bound in names_bound_by(current):
                stores.setdefault(bound, []).append(getattr(current, "lineno", 0))
    nested = nested_scopes(node)
    for scope in nested:  # ``def t():`` / ``class t:`` in the body rebinds ``t``
        for bound in names_bound_by(scope):
            stores.setdefault(bound, []).append(scope.lineno)
    rearmed = closure_rebound_names(node)  # (``nonlocal``: a call of the nested function may rebind them)
    held = frozenset(params) - rearmed
    aliases = {alias: bound for alias, bound in _aliases(node.body, held, stores).items() if alias not in rearmed}
    found: list[TensorFallback] = []
    _visit(node.body, False, held, aliases, stores, found, (*own, *nested))
    return tuple(found)


def _aliases(body: list[ast.stmt], held: frozenset[str], stores: dict[str, list[int]]) -> dict[str, tuple[str, int]]:
    """``timesteps = timestep`` among the statements of the function's own body: local ->
    (parameter, line of the first such statement). Whether the local still holds it at a
    test is :func:`_passed_params`'s question."""
    found: dict[str, tuple[str, int]] = {}
    for statement in body:
        if (
            isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.Name)
            and statement.value.id in held
        ):
            found.setdefault(statement.targets[0].id, (statement.value.id, statement.lineno))
    return found


def _visit(body: list[ast.stmt], in_loop: bool, held: frozenset[str], aliases: dict[str, tuple[str, int]],
           stores: dict[str, list[int]], found: list[TensorFallback], everything: tuple[ast.AST, ...]) -> None:
    """``everything``: the function's own nodes and the scopes it opens (what may share an arm's lines)."""
    for statement in body:
        if isinstance(statement, NESTED_SCOPES):
            continue
        if not in_loop:
            if isinstance(statement, ast.If):
                _if_fallback(statement, held, aliases, stores, found)
            _expression_fallbacks(statement, held, aliases, stores, found, everything)
        inner_loop = in_loop or isinstance(statement, _LOOPS)
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(statement, field, None)
            if isinstance(block, list) and block:
                if isinstance(block[0], ast.stmt):
                    _visit(block, inner_loop, held, aliases, stores, found, everything)
                else:  # except handlers, match cases
                    for part in block:
                        _visit(part.body, inner_loop, held, aliases, stores, found, everything)


def _if_fallback(statement: ast.If, held: frozenset[str], aliases: dict[str, tuple[str, int]],
                 stores: dict[str, list[int]], found: list[TensorFallback]) -> None:
    test = _tensor_test(statement.test)
    if test is None:
        return
    name, holds = test
    block = statement.orelse if holds else statement.body
    params = _passed_params(name, statement.lineno, held, aliases, stores)
    if block and params:
        found.append(TensorFallback(block[0].lineno, block[-1].end_lineno or block[-1].lineno, params, name))


def _expression_fallbacks(statement: ast.stmt, held: frozenset[str], aliases: dict[str, tuple[str, int]],
                          stores: dict[str, list[int]], found: list[TensorFallback],
                          everything: tuple[ast.AST, ...]) -> None:
    """``x if isinstance(x, Tensor) else torch.tensor(x)`` in ``statement`` (not in the
    blocks of a compound statement, which :func:`_visit` reaches on their own)."""
    if isinstance(statement, _COMPOUND):
        return
    parents: dict[ast.AST, ast.AST] = {}
    for parent in ast.walk(statement):
        if isinstance(parent, NESTED_SCOPES):
            continue
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent
    for current in parents:
        if not isinstance(current, ast.IfExp):
            continue
        test = _tensor_test(current.test)
        if test is None:
            continue
        name, holds = test
        arm = current.orelse if holds else current.body
        params = _comprehension_params(current, name, parents, statement.lineno, held, stores)
        if params is None:
            params = _passed_params(name, statement.lineno, held, {}, stores)
        if params and _alone_on_its_lines(arm, current.test, everything):
            found.append(TensorFallback(arm.lineno, arm.end_lineno or arm.lineno, params, name))


def _comprehension_params(node: ast.AST, name: str, parents: dict[ast.AST, ast.AST], line: int,
                          held: frozenset[str], stores: dict[str, list[int]]) -> tuple[str, ...] | None:
    """The parameters ``name`` takes in turn when a comprehension around ``node`` binds it
    and iterates over a literal tuple or list of parameters (``()`` when a comprehension
    binds it otherwise); None when no comprehension around ``node`` binds it."""
    current = parents.get(node)
    while current is not None:
        if isinstance(current, COMPREHENSIONS) and any(
            isinstance(bound, ast.Name) and bound.id == name
            for generator in current.generators for bound in ast.walk(generator.target)
        ):
            break
        current = parents.get(current)
    else:
        return None
    generator = current.generators[0]
    if len(current.generators) != 1 or not isinstance(generator.target, ast.Name):
        return ()
    if generator.ifs or generator.is_async or not isinstance(generator.iter, (ast.Tuple, ast.List)):
        return ()
    params = []
    for element in generator.iter.elts:
        if not isinstance(element, ast.Name) or not _passed_params(element.id, line, held, {}, stores):
            return ()
        params.append(element.id)
    return tuple(params)


def _passed_params(name: str, line: int, held: frozenset[str], aliases: dict[str, tuple[str, int]],
                   stores: dict[str, list[int]]) -> tuple[str, ...]:
    """``(parameter,)`` when ``name`` holds what the caller passed for it at ``line``."""
    before = [stored for stored in stores.get(name, ()) if stored < line]
    if name in held and not before:
        return (name,)
    alias = aliases.get(name)
    if alias is not None and before == [alias[1]]:
        param, bound = alias
        if not any(stored < bound for stored in stores.get(param, ())):
            return (param,)
    return ()


def _alone_on_its_lines(arm: ast.expr, test: ast.expr, everything: tuple[ast.AST, ...]) -> bool:
    """Nothing outside ``arm`` and ``test`` that reaches ``arm``'s lines could hold a
    finding: of the arm's statement, of another statement after a ``;``, of the header of a
    one-line compound statement (``if x.item(): t = ...``), or a lambda's (``everything``:
    the function's own nodes and the scopes it opens)."""
    first, last = arm.lineno, arm.end_lineno or arm.lineno
    apart = {id(node) for top in (arm, test) for node in ast.walk(top)}
    for node in everything:
        if id(node) in apart or not hasattr(node, "lineno") or isinstance(node, _COMPOUND):
            continue  # (a compound statement's header expressions are nodes of their own)
        # Any line of the node may be its finding's (``torch.nonzero(<arm>,\n as_tuple=False)``).
        if node.lineno <= last and (node.end_lineno or node.lineno) >= first and not isinstance(node, _INERT):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                continue  # ``th.Tensor``, ``self.device``: reads nothing from a device
            return False
    return True


def _tensor_test(test: ast.AST) -> tuple[str, bool] | None:
    """(name, whether the test holds for a tensor) of ``torch.is_tensor(x)``,
    ``isinstance(x, torch.Tensor)`` and their negations."""
    holds = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, holds = test.operand, not holds
    if not (isinstance(test, ast.Call) and test.args and isinstance(test.args[0], ast.Name)) or test.keywords:
        return None
    function = test.func
    called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    if called == "is_tensor" and len(test.args) == 1:
        return test.args[0].id, holds
    if called == "isinstance" and isinstance(function, ast.Name) and len(test.args) == 2:
        classes = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
        if any(_names_tensor(cls) for cls in classes):
            return test.args[0].id, holds
    return None


def _names_tensor(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "Tensor") or (
        isinstance(node, ast.Attribute) and node.attr == "Tensor" and isinstance(node.value, ast.Name)
    )
