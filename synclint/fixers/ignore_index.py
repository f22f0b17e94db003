"""SL103: cross-entropy on boolean-masked logits and targets -> ``ignore_index``.

The seed loss::

    mask = target != self.ignore_val
    permuted_pred = torch.permute(pred, [0, 2, 3, 1])
    masked_target = target[mask]
    masked_pred = permuted_pred[mask.unsqueeze(-1).expand(-1, -1, -1, self.num_classes)]
    masked_pred = masked_pred.reshape(-1, self.num_classes)
    loss = self.loss(masked_pred, masked_target)      # self.loss = nn.CrossEntropyLoss()

becomes ``loss = F.cross_entropy(pred, target, ignore_index=self.ignore_val)``.

Why it is the same loss: with ``reduction="mean"`` both forms divide the
(weighted) sum over the selected pixels by their (weighted) count, and
``ignore_index`` selects exactly the pixels whose target differs from it.
So the targets must equal the ignore value exactly where the mask is false:

* mask ``target != K`` (``K != target``, ``target.ne(K)``): pass ``target`` and ``ignore_index=K``;
* any other mask: pass ``torch.where(mask, target, I)`` where ``I`` is the
  call's ``ignore_index`` (``-100``, PyTorch's default, when it has none — an
  unmasked target of -100 was already ignored by the original call).

The logits go back to PyTorch's ``(N, C, ...)`` layout: a channels-last
``permute(0, 2, ..., 1)`` / ``movedim(1, -1)`` is undone by using its input;
other logits are taken as channels-last and moved with ``.movedim(-1, 1)``
(a no-op for ``(N, C)``).

A ``CrossEntropyLoss`` module whose constructor takes only literal
``reduction`` / ``label_smoothing`` becomes ``F.cross_entropy`` with them; one
with other arguments (``weight=...``) keeps the module and passes
``torch.where(mask, target, module.ignore_index)``.

Unsafe: when every target is masked out, the original loss is the mean of an
empty tensor and so is the fixed one (NaN), but ``reduction="none"`` would
change shape (never rewritten), and the intermediate masked tensors (and any
other use of them) disappear. The mask and the logits must describe the same
pixels, which holds whenever the original indexing ran without error.

Preconditions (proven, else no fix and the message says why):

* the mask is computed elementwise from the target (``t != K``, ``t >= 0``, ...):
  an image-level mask (``(N,)`` against ``(N, H, W)`` targets) selects whole images;
* the targets are class indices (class-probability targets have no
  ``ignore_index``): the logits are masked into rows (``.reshape(-1, C)``), whose
  only valid 1-D target is indices; or the target is an integer tensor by the
  analysis; or the ignore-label idiom — ``(N, C, ...)`` logits permuted
  channels-last and a mask ``t != K`` / ``t.ne(K)`` with an integer ``K``;
* the masked-out targets are filled with the call's ignore index (its own, else
  ``-100``), so a kept target that equals ``-100`` is ignored exactly as before:
  ``ignore_index=K`` alone is used only when ``K`` is that same value;
* nothing between the masking and the call rebinds or mutates anything
  (``proofs.unchanged_between``); ``torch`` (and ``torch.nn.functional``) are reachable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from synclint.analysis.inference import keyword, positional
from synclint.fixers import fixer, tree
from synclint.analysis.kinds import Kind
from synclint.fixers.base import Declined, FixProposal
from synclint.fixers.keywords import set_keyword
from synclint.fixers.patterns import atom, mask_of, torch_name
from synclint.fixers.proofs import module_prefix, pure_statement

_CE_MODULE = "torch.nn.CrossEntropyLoss"
_CE_FUNCTION = "torch.nn.functional.cross_entropy"
_FORWARDABLE = frozenset({"reduction", "label_smoothing"})
_RESHAPES = frozenset({"reshape", "view"})


@fixer("SL103")
def propose_ignore_index(rule, node: cst.CSTNode) -> FixProposal | Declined | None:
    if not isinstance(node, cst.Subscript):
        return None
    place = tree.place_of(rule, node)
    if place is None:
        return None
    for index in range(place.index, len(place.block)):
        statement = place.block[index]
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for call in _calls(statement):
            plan = _Plan.build(rule, call, place.block, index)
            if plan is not None and node in plan.masked_reads:
                return plan.proven() or plan.proposal()
    return None


def _calls(node: cst.CSTNode):
    return [n for n in tree.walk(node) if isinstance(n, cst.Call)]


@dataclass
class _Plan:
    rule: object
    call: cst.Call
    block: list
    index: int  # of the statement holding the call
    logits: cst.BaseExpression = None  # (N, C, ...) layout, unmasked
    target: cst.BaseExpression = None  # unmasked
    mask: cst.BaseExpression = None
    mask_value: cst.BaseExpression = None  # what a mask name is bound to (else the mask itself)
    masked_reads: list = field(default_factory=list)  # the Subscript nodes being replaced
    chain: list = field(default_factory=list)  # bindings the masked values went through
    rows: bool = False  # the logits were masked and reshaped into (-1, C) rows
    undone_permute: bool = False  # the logits were a channels-last permute of (N, C, ...) output

    @property
    def channels_last_idiom(self) -> bool:
        """The ignore-label idiom: ``(N, C, ...)`` logits permuted channels-last and
        masked with ``t != K`` for an integer ``K``: the mask has the logits' leading
        dimensions, so the masked logits are ``(M, C)`` rows and ``t[m]`` their indices."""
        return self.undone_permute and _ignored_value(self.rule, self.mask_value, self.target) is not None
    start: int = 0  # first statement of the chain
    used: set = field(default_factory=set)  # names the unmasked tensors are read through

    def proven(self) -> Declined | None:
        """The preconditions in the module docstring; a Declined naming the first unproven one."""
        rule = self.rule
        if not mask_of(rule, self.mask_value, self.target, self.call):
            return Declined("the mask is not computed elementwise from the target (an image-level mask?)")
        if not (self.rows or self.channels_last_idiom or rule.context.kind_of(self.target) is Kind.INT_TENSOR):
            return Declined("the targets are not known to be class indices")
        start = self.start
        # The chain's own lines go away; every other line in between must mutate nothing.
        chain_lines = {id(b.statement) for b in self.chain}
        for position in range(start + 1, self.index):
            statement = self.block[position]
            if id(statement) not in chain_lines and not pure_statement(rule, statement):
                return Declined("a line between the masking and the loss may change the tensors")
        return None

    @classmethod
    def build(cls, rule, call, block, index) -> _Plan | None:
        plan = cls(rule, call, block, index)
        args = positional(call)
        if len(args) < 2 or any(a.star for a in call.args) or not plan._is_cross_entropy():
            return None
        logits = plan._logits(args[0].value, index)
        target = plan._masked(args[1].value, index)
        if logits is None or target is None:
            return None
        (plan.logits, logits_mask), (plan.target, target_mask, _) = logits, target
        if not tree.same(logits_mask, target_mask):
            return None
        plan.mask = plan.mask_value = target_mask
        starts = [b.index for b in plan.chain] + [index]
        if isinstance(plan.mask, cst.Name):
            binding = tree.reaching_binding(block, index, plan.mask.value)
            if binding is not None:
                plan.mask_value = binding.value
                starts.append(binding.index)
        used = tree.name_values(plan.logits) | tree.name_values(plan.target) | tree.name_values(plan.mask_value)
        plan.start = min(starts)
        plan.used = used - plan.chain_names
        if not tree.stable_between(block, min(starts), index, used - plan.chain_names, rule.context.qualify):
            return None  # the unmasked tensors would be read later than before
        if plan._chain_used_elsewhere():
            return None  # removing the masked values would leave another use undefined
        return plan

    def _chain_used_elsewhere(self) -> bool:
        """Some name of the chain (``masked_target = target[mask]``) is read or bound
        outside the chain's own statements and the loss call, which all go away."""
        removed = {b.statement for b in self.chain} | {self.call}
        scope = self._scope()
        return any(
            not _inside(self.rule, n, removed)
            for name in self.chain_names
            for n in tree.occurrences(name, [scope])
        )

    def _scope(self) -> cst.CSTNode:
        function = tree.enclosing_function(self.rule, self.call)
        return function.body if function is not None else self.rule.context.module

    @property
    def chain_names(self) -> set[str]:
        return {binding.name for binding in self.chain}

    # -- resolution through straight-line bindings -----------------------------------------
    def _resolve(self, node: cst.BaseExpression, index: int) -> tuple[cst.BaseExpression, int]:
        while isinstance(node, cst.Name):
            binding = tree.reaching_binding(self.block, index, node.value)
            if binding is None:
                break
            self.chain.append(binding)
            node, index = binding.value, binding.index
        return node, index

    def _masked(self, node, index):
        """``T[M]`` (possibly through names) -> ``(T, M)``."""
        node, index = self._resolve(node, index)
        if not (isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)):
            return None
        self.masked_reads.append(node)
        return node.value, node.slice[0].slice.value, index

    def _logits(self, node, index):
        """Masked logits -> ``(logits in (N, C, ...) layout, mask)``."""
        node, index = self._resolve(node, index)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _RESHAPES:
            if not _is_rows(node):
                return None
            node, index = self._resolve(node.func.value, index)
            masked = self._masked(node, index)
            if masked is None:
                return None
            values, mask, index = masked
            mask = _unexpanded(mask) or mask
            self.rows = True
        else:
            masked = self._masked(node, index)
            if masked is None:
                return None
            values, mask, index = masked
        if _unexpanded(mask) is not None:
            return None  # an expanded mask without the reshape back to rows
        values, index = self._resolve(values, index)
        return self._channels_first(values), mask

    def _channels_first(self, logits: cst.BaseExpression) -> cst.BaseExpression:
        undone = _channels_last_source(self.rule, logits)
        if undone is not None:
            self.undone_permute = True
            return undone
        return tree.expr(f"{tree.code(atom(logits))}.movedim(-1, 1)")

    # -- the loss ---------------------------------------------------------------------------
    def _is_cross_entropy(self) -> bool:
        qualified = self.rule.context.qualify(self.call.func)
        if qualified == _CE_FUNCTION:
            return _reduces(self.call)
        constructor = self._module_constructor()
        return constructor is not None and _reduces(constructor)

    def _module_constructor(self) -> cst.Call | None:
        """``nn.CrossEntropyLoss(...)`` bound to the called name or ``self`` attribute."""
        func = self.call.func
        context = self.rule.context
        candidates: list[cst.BaseExpression] = []
        if isinstance(func, cst.Attribute) and tree.code(func.value) == "self":
            cls = tree.enclosing_class(self.rule, self.call)
            if cls is not None:
                candidates = list(_self_assignments(cls, func.attr.value))
        elif isinstance(func, cst.Name):
            binding = tree.reaching_binding(self.block, self.index, func.value)
            candidates = [binding.value] if binding else []
        if len(candidates) != 1 or not isinstance(candidates[0], cst.Call):
            return None
        constructor = candidates[0]
        return constructor if context.qualify(constructor.func) == _CE_MODULE else None

    def proposal(self) -> FixProposal | Declined:
        rule = self.rule
        named = torch_name(rule, self.call)
        if isinstance(named, Declined):
            return named
        torch, imports = named
        constructor = self._module_constructor()
        if constructor is not None and not _forwardable(constructor):
            # Keep the configured module; mask with its own ignore index.
            fill = f"{tree.code(self.call.func)}.ignore_index"
            target = tree.expr(f"{torch}.where({tree.code(self.mask)}, {tree.code(self.target)}, {fill})")
            new_call = self.call.with_changes(args=_replace_two(self.call.args, self.logits, target))
        else:
            if constructor is not None:
                functional_named = module_prefix(rule, self.call, "torch.nn.functional")
                if isinstance(functional_named, Declined):
                    return functional_named
                functional, more = functional_named
                imports = imports + more
                args = [cst.Arg(self.logits), cst.Arg(self.target), *constructor.args]
                new_call = cst.Call(func=tree.expr(f"{functional}.cross_entropy"), args=args)
            else:
                new_call = self.call.with_changes(args=_replace_two(self.call.args, self.logits, self.target))
            new_call = self._ignore(new_call, torch)
        replacements: dict = {self.call: new_call}
        for binding in self._dead_bindings(new_call):
            replacements[binding.statement] = cst.RemovalSentinel.REMOVE
        uses_torch = "where(" in tree.code(new_call)
        return FixProposal(
            "unsafe",
            "Compute the cross-entropy on the unmasked tensors with `ignore_index`",
            replacements,
            imports if uses_torch else tuple(i for i in imports if i != "torch"),
        )

    def _ignore(self, call: cst.Call, torch: str) -> cst.Call:
        """Set the ignore index so that exactly the masked-out targets are ignored."""
        existing = keyword(call, "ignore_index")
        ignored = _ignored_value(self.rule, self.mask_value, self.target)
        # `ignore_index=K` alone would stop ignoring kept targets equal to the call's own
        # ignore index (-100 by default): fill the masked-out targets with that instead.
        fill = existing.value if existing is not None else cst.UnaryOperation(cst.Minus(), cst.Integer("100"))
        if ignored is not None and tree.same(ignored, fill):
            return call
        target = tree.expr(f"{torch}.where({tree.code(self.mask)}, {tree.code(self.target)}, {tree.code(fill)})")
        call = call.with_changes(args=_replace_two(call.args, positional(call)[0].value, target))
        return call if existing is not None else set_keyword(call, "ignore_index", fill)

    def _dead_bindings(self, new_call: cst.Call) -> list[tree.Binding]:
        """The chain's bindings (unused elsewhere, see ``_chain_used_elsewhere``) and the
        mask's if nothing else reads it."""
        scope = self._scope()
        dead = list({id(b.statement): b for b in self.chain}.values())
        removed = {b.statement for b in dead}
        if isinstance(self.mask, cst.Name):
            mask_binding = tree.reaching_binding(self.block, self.index, self.mask.value)
            if mask_binding is not None and self.mask.value not in tree.name_values(new_call):
                others = [
                    n for n in tree.occurrences(self.mask.value, [scope])
                    if not _inside(self.rule, n, removed | {mask_binding.statement, self.call})
                ]
                if not others:
                    dead.append(mask_binding)
        return dead


def _inside(rule, node: cst.CSTNode, containers: set) -> bool:
    return any(a in containers for a in tree.ancestors(rule, node))


def _reduces(call: cst.Call) -> bool:
    """``reduction`` is absent or a literal other than "none" (so shapes agree)."""
    reduction = keyword(call, "reduction")
    if reduction is None:
        return True
    value = reduction.value
    return isinstance(value, cst.SimpleString) and value.evaluated_value in ("mean", "sum")


def _forwardable(constructor: cst.Call) -> bool:
    return all(
        a.keyword is not None and a.keyword.value in _FORWARDABLE and isinstance(a.value, (cst.SimpleString, cst.Float, cst.Integer))
        for a in constructor.args
    )


def _self_assignments(cls: cst.ClassDef, attr: str):
    for node in tree.walk(cls.body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                t = target.target
                if isinstance(t, cst.Attribute) and tree.code(t) == f"self.{attr}":
                    yield node.value


def _is_rows(call: cst.Call) -> bool:
    """``.reshape(-1, C)`` / ``.view(-1, C)``: one row per selected pixel."""
    args = call.args
    return (
        len(args) == 2
        and all(a.keyword is None and not a.star for a in args)
        and tree.code(args[0].value) == "-1"
    )


def _unexpanded(mask: cst.BaseExpression) -> cst.BaseExpression | None:
    """``m`` for ``m.unsqueeze(-1).expand(...)`` / ``.expand_as(...)`` / ``m[..., None].expand(...)``."""
    if not (isinstance(mask, cst.Call) and isinstance(mask.func, cst.Attribute)):
        return None
    if mask.func.attr.value not in ("expand", "expand_as"):
        return None
    inner = mask.func.value
    if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "unsqueeze":
        if len(inner.args) == 1 and tree.code(inner.args[0].value) == "-1":
            return inner.func.value
    if isinstance(inner, cst.Subscript) and tree.code(inner).endswith("[..., None]"):
        return inner.value
    return None


def _channels_last_source(rule, node: cst.BaseExpression) -> cst.BaseExpression | None:
    """``X`` for ``permute(X, [0, 2, ..., 1])``, ``X.permute(0, 2, 3, 1)``, ``X.movedim(1, -1)``."""
    if not isinstance(node, cst.Call):
        return None
    qualified = rule.context.qualify(node.func)
    args = [a.value for a in node.args if a.keyword is None and not a.star]
    if qualified in ("torch.permute", "torch.movedim", "torch.moveaxis") and args:
        source, rest = args[0], args[1:]
        name = qualified.rsplit(".", 1)[1]
    elif qualified is None and isinstance(node.func, cst.Attribute):
        source, rest, name = node.func.value, args, node.func.attr.value
    else:
        return None
    if len(rest) != len(node.args) - (1 if qualified else 0):
        return None  # keywords: dims=..., not worth guessing
    if name == "permute":
        dims = _int_list(rest[0]) if len(rest) == 1 else _int_list(cst.Tuple([cst.Element(r) for r in rest]))
        if dims is not None and len(dims) >= 3 and dims == [0, *range(2, len(dims)), 1]:
            return source
    if name in ("movedim", "moveaxis") and [tree.code(r) for r in rest] == ["1", "-1"]:
        return source
    return None


def _int_list(node: cst.BaseExpression) -> list[int] | None:
    if not isinstance(node, (cst.List, cst.Tuple)):
        return None
    values = []
    for element in node.elements:
        if not isinstance(element.value, cst.Integer):
            return None
        values.append(int(element.value.value))
    return values


def _ignored_value(rule, mask: cst.BaseExpression, target: cst.BaseExpression) -> cst.BaseExpression | None:
    """``K`` when ``mask`` is ``target != K`` (so the masked-out targets all equal ``K``)."""
    candidates: list[cst.BaseExpression] = []
    if isinstance(mask, cst.Comparison) and len(mask.comparisons) == 1 and isinstance(mask.comparisons[0].operator, cst.NotEqual):
        left, right = mask.left, mask.comparisons[0].comparator
        if tree.same(left, target):
            candidates.append(right)
        elif tree.same(right, target):
            candidates.append(left)
    elif isinstance(mask, cst.Call) and isinstance(mask.func, cst.Attribute) and mask.func.attr.value == "ne":
        if tree.same(mask.func.value, target) and len(mask.args) == 1 and mask.args[0].keyword is None:
            candidates.append(mask.args[0].value)
    for value in candidates:
        if _integer_like(rule, value):
            return value.with_changes(lpar=[], rpar=[]) if isinstance(value, cst.Integer) else value
    return None


def _integer_like(rule, node: cst.BaseExpression) -> bool:
    """An int literal, or a name/attribute not known to be a tensor (``self.ignore_val``)."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return isinstance(node.expression, cst.Integer)
    if isinstance(node, (cst.Name, cst.Attribute)):
        return not rule.context.kind_of(node).is_tensor
    return False


def _replace_two(args, first: cst.BaseExpression, second: cst.BaseExpression) -> list[cst.Arg]:
    """``args`` with the first two positional values replaced (formatting kept)."""
    out, seen = [], 0
    for arg in args:
        if arg.keyword is None and not arg.star and seen < 2:
            arg = arg.with_changes(value=first if seen == 0 else second)
            seen += 1
        out.append(arg)
    return out
