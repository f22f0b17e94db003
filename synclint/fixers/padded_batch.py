"""SL301: a per-sample loss loop over a list of targets -> one padded, masked batch.

The seed detection loss::

    for i in range(batch_size):                  # batch_size = len(targets_list)
        targets = targets_list[i]
        num_targets = targets.shape[0]
        if num_targets > 0:
            sample_preds = pred[i, :num_targets]
            total_boxes += num_targets
            loss_sum += generalized_box_iou(sample_preds, targets).sum()
    return loss_sum / max(total_boxes, 1)

becomes::

    padded_targets = torch.nn.utils.rnn.pad_sequence(targets_list, batch_first=True)
    valid = torch.nn.utils.rnn.pad_sequence([t.new_ones(len(t), dtype=torch.bool) for t in targets_list], batch_first=True)
    losses = generalized_box_iou(pred[:, : padded_targets.shape[1]], padded_targets)
    total_boxes += valid.sum()
    loss_sum += torch.where(valid.view(valid.shape + (1,) * (losses.dim() - 2)), losses, 0).sum()
    return loss_sum / total_boxes.clamp(min=1)

The targets are padded inside the loss, so the collate function can stay as
it is; ``valid`` comes from the per-image counts (padding one ``True`` per
box), so a real all-zero box still counts. The per-sample work is reduced to
the two padding copies; the loss runs once per batch.

Recognised: ``for i in range(len(L))`` (or a name bound to ``len(L)``) and
``for i, t in enumerate(L)``; a body made only of the target binding, its
count (``t.shape[0]``, ``len(t)``, ``t.size(0)``), the prediction slice
``pred[i, :n]``, an optional ``if n > 0:`` guard, ``total += n`` and
``acc += <expr of the slice and target>.sum()``.

Preconditions (proven, else no fix and the message says why):

* the summed loss is elementwise per box (``proofs.per_box``): the fused
  ``synclint.ops.giou_loss``, a ``torch.nn.functional`` elementwise loss with
  ``reduction="none"``, or a function of this module that only indexes the last
  (coordinate) dimension and combines elementwise, dividing only by clamped
  positive values. A reducing loss (``F.mse_loss(p, t).sum()`` averages over a
  padded batch: 0.260 becomes 0.583) or a pairwise one (``cdist``, DETR's
  ``generalized_box_iou`` with ``[:, None]``) gives other values on padded inputs;
* the loss is called on exactly the prediction slice and the target;
* after the loop the count is read only as ``max(total, k)`` (rewritten to
  ``total.clamp(min=k)``) in arithmetic with the loss sum: it becomes a tensor,
  so any other use (returned, logged, a dict key) would change type;
* ``torch`` is reachable there.

Unsafe: when the batch has no boxes at all, the result is a 0-d tensor where the
original returned the float ``0.0``; an empty list of targets now raises in
``pad_sequence``; the summation order differs (last bits).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from synclint.fixers import fixer, tree
from synclint.fixers.base import Declined, FixProposal
from synclint.fixers.patterns import torch_name
from synclint.fixers.proofs import elementwise_box_expression, per_box


@dataclass
class _Loop:
    index: str  # i
    samples: cst.BaseExpression  # targets_list
    target: str | None = None  # targets (the per-sample binding)
    count: str | None = None  # num_targets
    pred: cst.BaseExpression | None = None  # pred (sliced as pred[i, :n])
    pred_slice: str | None = None  # sample_preds
    total: str | None = None
    accumulator: str | None = None
    summand: cst.BaseExpression | None = None  # the expression whose .sum() is accumulated
    size_binding: tree.Binding | None = None  # batch_size = len(L), when range() used it


@fixer("SL301")
def propose_padded_batch(rule, node: cst.CSTNode) -> FixProposal | Declined | None:
    if not isinstance(node, cst.For) or node.orelse is not None or node.asynchronous is not None:
        return None
    place = tree.place_of(rule, node)
    if place is None:
        return None
    loop = _header(rule, node, place)
    if loop is None:
        return None
    statements, guards = _flattened(node.body.body)
    if not _read_body(rule, loop, statements) or not all(_guards_count(loop, g) for g in guards):
        return None
    if loop.accumulator is None or loop.summand is None:
        return None
    if not (_inline_elementwise(rule, loop) or (per_box(rule, loop.summand) is not None and _loss_of_slice_and_target(loop))):
        return Declined("the summed loss is not known to be elementwise per box (a reducing or pairwise loss changes on a padded batch)")
    if loop.total is not None and not _count_read_only_in_max(rule, place, loop):
        return Declined("the box count is used after the loop where a tensor would not act as the int")
    function = tree.enclosing_function(rule, node)
    scope = function if function is not None else rule.context.module
    padded, valid = tree.fresh_name("padded_targets", scope), tree.fresh_name("valid", scope)
    losses = tree.fresh_name("losses", scope)
    summand = _batched(loop, padded)
    if summand is None:
        return None
    named = torch_name(rule, node)
    if isinstance(named, Declined):
        return named
    torch, imports = named
    samples = tree.code(loop.samples)
    pad = f"{torch}.nn.utils.rnn.pad_sequence"
    lines = [
        f"{padded} = {pad}({samples}, batch_first=True)",
        f"{valid} = {pad}([t.new_ones(len(t), dtype={torch}.bool) for t in {samples}], batch_first=True)",
    ]
    lines.append(f"{losses} = {tree.code(summand)}")
    if loop.total is not None:
        lines.append(f"{loop.total} += {valid}.sum()")
    # (B, N, ...) losses against a (B, N) mask: align the mask on the left.
    aligned = f"{valid}.view({valid}.shape + (1,) * ({losses}.dim() - 2))"
    lines.append(f"{loop.accumulator} += {torch}.where({aligned}, {losses}, 0).sum()")
    statements = [cst.parse_statement(line + "\n") for line in lines]
    statements[0] = statements[0].with_changes(leading_lines=node.leading_lines)
    replacements: dict = {node: cst.FlattenSentinel(statements)}
    size = loop.size_binding
    if size is not None and len(tree.occurrences(size.name, [scope])) == 2:  # bound, then used by range()
        replacements[size.statement] = cst.RemovalSentinel.REMOVE
    if loop.total is not None:
        for later in place.after:
            for call in _builtin_max_of(rule, later, loop.total):
                other = next(a.value for a in call.args if tree.code(a.value) != loop.total)
                replacements[call] = tree.expr(f"{loop.total}.clamp(min={tree.code(other)})")
    message = "Pad the targets and compute the loss once for the whole batch"
    if "iou" in tree.code(loop.summand).lower():
        message += "; the fused `synclint.ops.giou_loss(pred, padded_targets)` does it in one kernel"
    return FixProposal("unsafe", message, replacements, imports)


def _inline_elementwise(rule, loop: _Loop) -> bool:
    """The summand is written inline from the per-sample reads (``pred[i, :n]``,
    ``targets[i]`` and the names bound to them) with elementwise ops only
    (``torch.abs(pred[i, :n] - targets[i])``). Any other tensor might broadcast
    differently against the padded batch."""

    def per_sample(node: cst.Subscript) -> bool:
        return _is_sample(loop, node) or _sliced_prediction(loop, node) is not None

    reads = [n for n in tree.walk(loop.summand) if isinstance(n, cst.Subscript) and per_sample(n)]
    inside = {id(name) for read in reads for name in tree.names_in(read)}
    free = {n.value for n in tree.names_in(loop.summand) if id(n) not in inside and rule.context.qualify(n) is None}
    if not free <= {n for n in (loop.pred_slice, loop.target) if n}:
        return False
    return elementwise_box_expression(rule, loop.summand, per_sample)


def _loss_of_slice_and_target(loop: _Loop) -> bool:
    """``loss(pred_slice, target)`` (positionally, in either order) plus literal keywords."""
    call = loop.summand
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    if len(positional) != 2 or any(a.star for a in call.args):
        return False
    def is_slice(node: cst.BaseExpression) -> bool:
        return (isinstance(node, cst.Name) and node.value == loop.pred_slice) or _sliced_prediction(loop, node) is not None

    def is_sample(node: cst.BaseExpression) -> bool:
        return (isinstance(node, cst.Name) and node.value == loop.target) or _is_sample(loop, node)

    first, second = positional
    pairs = (is_slice(first) and is_sample(second)) or (is_sample(first) and is_slice(second))
    return pairs and all(
        isinstance(a.value, (cst.SimpleString, cst.Integer, cst.Float, cst.Name)) for a in call.args if a.keyword is not None
    )


def _count_read_only_in_max(rule, place: tree.Place, loop: _Loop) -> bool:
    """Every later read of the count is ``max(total, k)`` inside arithmetic with the
    loss sum (so the count only ever meets tensors), and nothing else binds it."""
    function = tree.enclosing_function(rule, place.statement)
    scope = function.body if function is not None else rule.context.module
    after = list(place.after)
    uses = tree.occurrences(loop.total, after)
    for use in uses:
        call = tree.parent(rule, tree.parent(rule, use))
        if not (isinstance(call, cst.Call) and tree.code(call.func) == "max"):
            return False
        outer = tree.parent(rule, call)
        if not (isinstance(outer, cst.BinaryOperation) and loop.accumulator in tree.name_values(outer)):
            return False
    bindings = [n for n in tree.walk(scope) if isinstance(n, cst.BaseSmallStatement) and tree.binds(n, loop.total)]
    return len(bindings) <= 2  # `total = 0` and the loop's `total += n`


def _header(rule, node: cst.For, place: tree.Place) -> _Loop | None:
    """``for i in range(len(L))`` / ``range(n)`` with ``n = len(L)`` / ``for i, t in enumerate(L)``."""
    iterable = node.iter
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and len(iterable.args) == 1):
        return None
    argument = iterable.args[0].value
    if iterable.func.value == "enumerate":
        target = node.target
        if isinstance(target, cst.Tuple) and len(target.elements) == 2:
            index, sample = (e.value for e in target.elements)
            if isinstance(index, cst.Name) and isinstance(sample, cst.Name):
                return _Loop(index.value, argument, target=sample.value)
        return None
    if iterable.func.value != "range" or not isinstance(node.target, cst.Name):
        return None
    binding = None
    if isinstance(argument, cst.Name):
        binding = tree.reaching_binding(place.block, place.index, argument.value)
        argument = binding.value if binding is not None else argument
    if isinstance(argument, cst.Call) and tree.code(argument.func) == "len" and len(argument.args) == 1:
        return _Loop(node.target.value, argument.args[0].value, size_binding=binding)
    return None


def _flattened(statements) -> tuple[list[cst.BaseStatement], list[cst.BaseExpression]]:
    """The body with ``if`` guards (no ``else``) opened up, and the guards' tests."""
    out: list = []
    guards: list = []
    for statement in statements:
        if isinstance(statement, cst.If) and statement.orelse is None and isinstance(statement.body, cst.IndentedBlock):
            guards.append(statement.test)
            out.extend(statement.body.body)
        else:
            out.append(statement)
    return out, guards


def _guards_count(loop: _Loop, test: cst.BaseExpression) -> bool:
    """``if n:`` / ``if n > 0:`` / ``if n != 0:`` on the sample's count: an empty
    sample adds nothing either way, so the guard can go."""
    if isinstance(test, cst.Name):
        return test.value == loop.count
    return (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, (cst.GreaterThan, cst.NotEqual))
        and tree.code(test.comparisons[0].comparator) == "0"
        and (tree.code(test.left) == loop.count or _counts_target(loop, test.left))
    )


def _read_body(rule, loop: _Loop, statements) -> bool:
    """Assign each statement a role; anything unrecognised means no fix."""
    for statement in statements:
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
            return False
        small = statement.body[0]
        if isinstance(small, cst.Assign):
            if not _read_assignment(rule, loop, small):
                return False
        elif isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign):
            if not _read_accumulation(loop, small):
                return False
        else:
            return False
    return True


def _read_assignment(rule, loop: _Loop, assign: cst.Assign) -> bool:
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return False
    name, value = assign.targets[0].target.value, assign.value
    if _is_sample(loop, value) and loop.target is None:
        loop.target = name
        return True
    if loop.count is None and _counts_target(loop, value):
        loop.count = name
        return True
    pred = _sliced_prediction(loop, value)
    if pred is not None and loop.pred_slice is None:
        loop.pred, loop.pred_slice = pred, name
        return True
    return False


def _read_accumulation(loop: _Loop, aug: cst.AugAssign) -> bool:
    if not isinstance(aug.target, cst.Name):
        return False
    name, value = aug.target.value, aug.value
    if loop.total is None and (isinstance(value, cst.Name) and value.value == loop.count or _counts_target(loop, value)):
        loop.total = name
        return True
    if (
        loop.accumulator is None
        and isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "sum"
        and not value.args
    ):
        loop.accumulator, loop.summand = name, value.func.value
        return True
    return False


def _is_sample(loop: _Loop, node: cst.BaseExpression) -> bool:
    """``L[i]``."""
    return (
        isinstance(node, cst.Subscript)
        and tree.same(node.value, loop.samples)
        and len(node.slice) == 1
        and tree.code(node.slice[0].slice) == loop.index
    )


def _counts_target(loop: _Loop, node: cst.BaseExpression) -> bool:
    """``t.shape[0]``, ``len(t)``, ``t.size(0)`` for the sample ``t`` (or ``L[i]``)."""
    text = tree.code(node)
    names = [loop.target] if loop.target else []
    names.append(f"{tree.code(loop.samples)}[{loop.index}]")
    return any(text in (f"{t}.shape[0]", f"len({t})", f"{t}.size(0)") for t in names)


def _sliced_prediction(loop: _Loop, node: cst.BaseExpression) -> cst.BaseExpression | None:
    """``pred`` for ``pred[i, :n]``."""
    if not (isinstance(node, cst.Subscript) and len(node.slice) == 2):
        return None
    first, second = (element.slice for element in node.slice)
    if not (isinstance(first, cst.Index) and tree.code(first.value) == loop.index):
        return None
    if not (isinstance(second, cst.Slice) and second.lower is None and second.step is None and second.upper is not None):
        return None
    if not (tree.code(second.upper) == loop.count or _counts_target(loop, second.upper)):
        return None
    return node.value


class _Batch(cst.CSTTransformer):
    """Per-sample names -> their batched counterparts."""

    def __init__(self, loop: _Loop, padded: str) -> None:
        super().__init__()
        self.loop = loop
        self.padded = padded
        self.batched_pred = self._batched_prediction(loop.pred) if loop.pred else None

    def _batched_prediction(self, pred: cst.BaseExpression) -> cst.BaseExpression:
        return tree.expr(f"{tree.code(pred)}[:, : {self.padded}.shape[1]]")

    def leave_Subscript(self, original_node, updated_node):
        if _is_sample(self.loop, original_node):
            return cst.Name(self.padded)
        pred = _sliced_prediction(self.loop, original_node)
        if pred is not None:
            return self._batched_prediction(pred)
        return updated_node

    def leave_Name(self, original_node, updated_node):
        if original_node.value == self.loop.target:
            return cst.Name(self.padded)
        if original_node.value == self.loop.pred_slice and self.batched_pred is not None:
            return self.batched_pred
        return updated_node


def _batched(loop: _Loop, padded: str) -> cst.BaseExpression | None:
    summand = loop.summand.visit(_Batch(loop, padded))
    leftover = tree.name_values(summand) & {loop.index, loop.count, loop.target, loop.pred_slice}
    if leftover or padded not in tree.name_values(summand):
        return None  # the summand still depends on the sample (or never used it)
    return summand


def _builtin_max_of(rule, statement: cst.CSTNode, name: str):
    """``max(name, k)`` / ``max(k, name)`` calls in ``statement`` (they would read a tensor back)."""
    for node in tree.walk(statement):
        if (
            isinstance(node, cst.Call)
            and tree.code(node.func) == "max"
            and rule.context.qualify(node.func) is None
            and len(node.args) == 2
            and sum(tree.code(a.value) == name for a in node.args) == 1
            and all(a.keyword is None and not a.star for a in node.args)
        ):
            yield node
