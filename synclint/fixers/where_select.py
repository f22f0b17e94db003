"""SL202: ``if <tensor>:`` that only picks a value -> ``name = torch.where(cond, a, b)``.

::

    if ignore_loss:              loss = torch.where(ignore_loss, 0.0 * loss, loss)
        loss = 0.0 * loss   ->

The body (and the ``else``, if any) must assign one and the same name and do
nothing else; without ``else`` the name keeps its previous value, so it
must surely have one in the ``if``'s own scope (see ``_bound_before``).

Preconditions (proven, else no fix and the message says why):

* the condition is a boolean tensor with one element: a comparison or boolean
  op of full reductions, counts or numbers (``proofs.zero_dim``), so ``where``
  keeps the branches' shape (a ``(1,)`` condition would add a dimension);
* both branches are the same floating tensor ``B`` under elementwise operations
  with float literals (``0.0 * loss``, ``-loss``, ``loss / 4.0``, ``loss``;
  ``proofs.derived_from``, ``proofs.floating``): one shape, one dtype, no
  ``None`` / str / list / custom objects, no side effects, and a backward that
  stays finite when its incoming gradient is zero (so the untaken branch adds 0,
  not NaN, to ``B``'s gradient — ``sqrt`` at 0 would give ``0 * inf``);
* ``torch`` is reachable there.

Unsafe: the untaken branch is now computed (no side effects by the above), and a
condition with more than one element (which the proof rules out) would select
elementwise instead of raising.
"""

from __future__ import annotations

import libcst as cst

from synclint.fixers import fixer, tree
from synclint.fixers.base import Declined, FixProposal
from synclint.fixers.patterns import is_boolean, torch_name
from synclint.fixers.proofs import derived_from, floating, has_param, is_tensor, zero_dim


@fixer("SL202")
def propose_where_select(rule, node: cst.CSTNode) -> FixProposal | Declined | None:
    if not isinstance(node, cst.If) or isinstance(tree.parent(rule, node), cst.If):
        return None  # an `elif` is part of the chain above it
    taken = _sole_assignment(node.body)
    if taken is None:
        return None
    name, when_true = taken
    if node.orelse is None:
        if not _bound_before(rule, node, name):
            return None
        when_false: cst.BaseExpression = cst.Name(name)
    elif isinstance(node.orelse, cst.Else):
        other = _sole_assignment(node.orelse.body)
        if other is None or other[0] != name:
            return None
        when_false = other[1]
    else:
        return None  # elif chains
    reason = _unproven(rule, node, when_true, when_false)
    if reason is not None:
        return Declined(reason)
    named = torch_name(rule, node)
    if isinstance(named, Declined):
        return named
    torch, imports = named
    line = cst.parse_statement(
        f"{name} = {torch}.where({tree.code(node.test)}, {tree.code(when_true)}, {tree.code(when_false)})\n"
    )
    line = line.with_changes(leading_lines=node.leading_lines)
    return FixProposal("unsafe", "Select with `torch.where` instead of branching on a tensor", {node: line}, imports)


def _unproven(rule, node: cst.If, when_true: cst.BaseExpression, when_false: cst.BaseExpression) -> str | None:
    """The first precondition of the module docstring that cannot be proven, or None."""
    test = node.test
    if not (zero_dim(rule, test, node) and _boolean(rule, test, node)):
        return "the condition is not known to be a one-element boolean tensor"
    bases = [
        name
        for name in sorted(tree.name_values(when_true) | tree.name_values(when_false))
        if derived_from(rule, when_true, name) and derived_from(rule, when_false, name)
    ]
    if not bases:
        return "the branches are not known to be tensors of one shape and dtype"
    base = cst.Name(bases[0])
    if not (is_tensor(rule, base) and floating(rule, base, node)):
        return "the branches are not known to be floating-point tensors"
    return None


def _boolean(rule, test: cst.BaseExpression, at: cst.CSTNode) -> bool:
    if is_boolean(rule, test):
        return True
    place = tree.place_of(rule, at)
    if isinstance(test, cst.Name) and place is not None:
        binding = tree.reaching_binding(place.block, place.index, test.value)
        return binding is not None and is_boolean(rule, binding.value)
    return False


def _sole_assignment(block: cst.BaseSuite) -> tuple[str, cst.BaseExpression] | None:
    if isinstance(block, cst.IndentedBlock):
        if len(block.body) != 1:
            return None
        return tree.simple_assignment(block.body[0])
    if isinstance(block, cst.SimpleStatementSuite) and len(block.body) == 1:  # `if c: x = 1`
        return tree.simple_assignment(cst.SimpleStatementLine(body=block.body))
    return None


def _bound_before(rule, node: cst.If, name: str) -> bool:
    """The name surely has a value in this scope when the ``if`` runs (so "keep it" is
    expressible): a parameter of the enclosing function, or a plain assignment that runs
    before the ``if`` in the same function (in its block or an enclosing one).

    Only the ``if``'s own scope counts: a module-level ``loss = None`` does not make the
    function's ``loss`` bound (assigning it makes it local: UnboundLocalError)."""
    child: cst.CSTNode = node
    for ancestor in tree.ancestors(rule, node):
        if isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
            before = []
            for statement in ancestor.body:
                if statement is child:
                    break
                before.append(statement)
            for statement in reversed(before):
                if _deletes(statement, name) or _declares_outer(statement, name):
                    return False
                if _surely_binds(statement, name):
                    return True
        if isinstance(ancestor, (cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(ancestor, cst.FunctionDef):
            if any(_declares_outer(s, name) for s in tree.walk(ancestor.body)):
                return False  # `global` / `nonlocal`: the value lives elsewhere
            return has_param(ancestor.params, name)
        child = ancestor
    return False


def _surely_binds(statement: cst.CSTNode, name: str) -> bool:
    """A simple line that always assigns ``name`` (``name = ...``, ``a, name = ...``, ``name: T = ...``)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Assign) and any(tree.binds(t, name) for t in small.targets):
            return True
        if isinstance(small, cst.AnnAssign) and small.value is not None and tree.binds(small, name):
            return True
    return False


def _deletes(statement: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Del) and name in tree.name_values(n.target) for n in tree.walk(statement))


def _declares_outer(statement: cst.CSTNode, name: str) -> bool:
    return isinstance(statement, (cst.Global, cst.Nonlocal)) and any(item.name.value == name for item in statement.names)
