"""Preconditions that fixers prove from the analysis before they rewrite code.

A fix is offered only when every condition its rewrite relies on holds; each
fixer states its conditions next to its transformation and calls these
provers. Every prover answers from positive evidence: doubt means "not
proven", and the fixer then declines (``Declined(reason)``, shown in the
finding's message) or downgrades the fix.

The questions:

* **reachability** — the name the new code uses for ``torch`` is bound by a
  module-level import that runs (not only under ``TYPE_CHECKING``) and no
  parameter or local shadows it where the new code runs;
* **receivers** — a value is a ``torch.Tensor`` (not any object with a ``.to``);
* **devices** — an expression is a device by how it was computed (a string
  literal, ``torch.device(...)``, ``tensor.device``), never by its spelling;
* **mutation** — nothing between two statements can change a tensor or any
  alias of it (only statements made of assignments to names and pure calls);
* **tensor-typed counts** — a count that becomes a 0-d tensor is used only
  where a tensor behaves like the number it replaces;
* **shapes and dtypes** — values that are elementwise functions of one tensor,
  with Python-number operands that keep its dtype;
* **per-box functions** — a loss that maps ``(..., 4)`` boxes to per-box values
  with elementwise arithmetic only (no pairwise broadcasting, no reductions).
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from synclint.analysis.imports import dotted_name
from synclint.fixers import tree
from synclint.fixers.base import Declined

# -- reachability of torch ---------------------------------------------------------------


def _type_checking_test(test: cst.BaseExpression) -> bool:
    return (dotted_name(test) or "").rsplit(".", 1)[-1] == "TYPE_CHECKING"


def runtime_imports(module: cst.Module) -> dict[str, str]:
    """``{local name: module}`` for the plain ``import X [as Y]`` lines that run when the
    module is imported: top level, or in a ``try`` body; never under ``if TYPE_CHECKING``."""
    bound: dict[str, str] = {}

    def scan(statements: Sequence[cst.BaseStatement]) -> None:
        for statement in statements:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Import):
                        for alias in small.names:
                            full = dotted_name(alias.name) or ""
                            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                                bound[alias.asname.name.value] = full
                            else:
                                bound.setdefault(full.split(".", 1)[0], full.split(".", 1)[0])
                    elif isinstance(small, cst.ImportFrom) and not small.relative and not isinstance(
                        small.names, cst.ImportStar
                    ):
                        parent = dotted_name(small.module) if small.module is not None else None
                        for alias in small.names:
                            name = dotted_name(alias.name) or ""
                            local = name
                            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                                local = alias.asname.name.value
                            if parent:
                                bound[local] = f"{parent}.{name}"
            elif isinstance(statement, cst.Try):
                scan(statement.body.body)

    scan(module.body)
    return bound


def _module_level_rebinds(module: cst.Module, name: str) -> bool:
    """A module-level statement other than an import binds ``name`` (``torch = None``)."""
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine) and all(
            isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
        ):
            continue
        if isinstance(statement, cst.If) and _type_checking_test(statement.test):
            continue
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            if statement.name.value == name:
                return True
            continue
        if isinstance(statement, cst.Try):
            if any(tree.binds(s, name) for s in statement.body.body if not _is_import_line(s)):
                return True
            if any(tree.binds(h, name) for h in statement.handlers) or (
                statement.orelse is not None and tree.binds(statement.orelse, name)
            ):
                return True
            continue
        if tree.binds(statement, name):
            return True
    return False


def _is_import_line(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
    )


def shadowed_at(rule, node: cst.CSTNode, name: str) -> bool:
    """A function, lambda or comprehension around ``node`` binds ``name`` (a parameter,
    an assignment, a loop variable, a nested import), or a class body does."""
    for ancestor in tree.ancestors(rule, node):
        if isinstance(ancestor, cst.FunctionDef):
            if has_param(ancestor.params, name):
                return True
            if any(tree.binds(s, name) for s in ancestor.body.body if not isinstance(s, cst.FunctionDef)):
                return True
        elif isinstance(ancestor, cst.Lambda):
            if has_param(ancestor.params, name):
                return True
        elif isinstance(ancestor, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            if tree.binds(ancestor.for_in, name):
                return True
        elif isinstance(ancestor, cst.ClassDef):
            if any(tree.binds(s, name) for s in ancestor.body.body if not isinstance(s, cst.FunctionDef)):
                return True
    return False


def _params(params: cst.Parameters) -> list[cst.Param]:
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    return every


def has_param(params: cst.Parameters, name: str) -> bool:
    """Whether a function or lambda with ``params`` takes a parameter called ``name``."""
    return any(p.name.value == name for p in _params(params))


def module_prefix(rule, at: cst.CSTNode, module: str = "torch") -> tuple[str, tuple[str, ...]] | Declined:
    """The expression prefix that names ``module`` where ``at`` runs, and the imports to add.

    Reuses a runtime import (``T`` after ``import torch as T``); otherwise the full
    dotted name, with ``import <module>`` to add. Declined when the name the new code
    would use is shadowed there (a parameter or local called ``torch``) or rebound at
    module level."""
    runtime = runtime_imports(rule.context.module)
    for local, full in runtime.items():
        if full == module and not _module_level_rebinds(rule.context.module, local) and not shadowed_at(rule, at, local):
            return local, ()
    root = module.split(".", 1)[0]
    if runtime.get(root, root) != root or _module_level_rebinds(rule.context.module, root):
        return Declined(f"the module binds `{root}` to something else")
    if shadowed_at(rule, at, root):
        return Declined(f"a parameter or local variable shadows `{root}` here")
    return module, (module,)


def torch_prefix(rule, at: cst.CSTNode) -> tuple[str, tuple[str, ...]] | Declined:
    return module_prefix(rule, at, "torch")


# -- receivers, arguments, devices ---------------------------------------------------------


def is_tensor(rule, node: cst.BaseExpression) -> bool:
    """A ``torch.Tensor`` by the analysis (a torch result, annotation, or tensor-only use)."""
    return rule.context.kind_of(node).is_tensor


_DTYPE_NAMES = frozenset(
    {"float16", "half", "bfloat16", "float32", "float", "float64", "double", "complex64", "complex128",
     "cfloat", "cdouble", "uint8", "int8", "int16", "short", "int32", "int", "int64", "long", "bool"}
)


def is_dtype(rule, node: cst.BaseExpression) -> bool:
    qualified = rule.context.qualify(node) or ""
    return qualified.startswith("torch.") and qualified.rsplit(".", 1)[1] in _DTYPE_NAMES


def device_proof(rule, node: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> bool:
    """``node`` evaluates to a device by how it was computed: a string literal,
    ``torch.device(...)``, ``<tensor>.device``, or a name whose every binding in its
    function (no parameter of that name) is one of those."""
    if isinstance(node, cst.SimpleString):
        return isinstance(node.evaluated_value, str)
    if isinstance(node, cst.Call):
        return rule.context.qualify(node.func) == "torch.device"
    if isinstance(node, cst.Attribute):
        return node.attr.value == "device" and is_tensor(rule, node.value)
    if isinstance(node, cst.Name) and depth < 3:
        return _name_bound_to_device(rule, node.value, at, depth)
    if isinstance(node, cst.IfExp):
        return device_proof(rule, node.body, at, depth + 1) and device_proof(rule, node.orelse, at, depth + 1)
    return False


def _name_bound_to_device(rule, name: str, at: cst.CSTNode, depth: int) -> bool:
    scope = binding_scope(rule, name, at)
    if scope is None or declared_elsewhere(scope, name):
        return False  # a parameter (a caller passes anything), a class body, `global`/`nonlocal`
    values = []
    for node in tree.scope_nodes(scope):
        if tree._binds_here(node, name):
            if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name):
                assign = tree.parent(rule, node)
                if isinstance(assign, cst.Assign):
                    values.append(assign.value)
                    continue
            return False  # bound some other way: a loop, a tuple, an import, a `def`
    if scope is not rule.context.module and not values:
        # A free name: the module's, unless a function around this one binds it.
        if _bound_by_outer_function(rule, name, scope) or not _module_binds_only(rule, name):
            return False
        return _name_bound_to_device(rule, name, rule.context.module, depth)
    return bool(values) and all(device_proof(rule, v, at, depth + 1) for v in values)


def binding_scope(rule, name: str, at: cst.CSTNode) -> cst.CSTNode | None:
    """The block whose bindings say what ``name`` holds at ``at``: the body of the
    innermost function around it (a lambda's free names are its function's), else the
    module. None when one scope cannot tell: ``name`` is a parameter (of that function,
    or of a lambda on the way), or a class body lies on the way."""
    for ancestor in tree.ancestors(rule, at):
        if isinstance(ancestor, cst.Lambda):
            if has_param(ancestor.params, name):
                return None
        elif isinstance(ancestor, cst.ClassDef):
            return None
        elif isinstance(ancestor, cst.FunctionDef):
            return None if has_param(ancestor.params, name) else ancestor.body
    return rule.context.module


def declared_elsewhere(scope: cst.CSTNode, name: str) -> bool:
    """``global name`` or ``nonlocal name`` anywhere in ``scope`` (a nested function's
    rebinds this scope's name, or the name is the module's)."""
    return any(
        isinstance(node, (cst.Global, cst.Nonlocal)) and any(item.name.value == name for item in node.names)
        for node in tree.walk(scope)
    )


def _bound_by_outer_function(rule, name: str, scope: cst.CSTNode) -> bool:
    """A function around the one whose body is ``scope`` binds ``name`` (a closure)."""
    for ancestor in tree.ancestors(rule, scope):
        if isinstance(ancestor, cst.FunctionDef) and ancestor.body is not scope and (
            has_param(ancestor.params, name)
            or any(tree._binds_here(node, name) for node in tree.scope_nodes(ancestor.body))
        ):
            return True
    return False


def _module_binds_only(rule, name: str) -> bool:
    return any(tree.binds(s, name) for s in rule.context.module.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef)))


def positional_values(call: cst.Call) -> list[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]


# -- mutation between two points ------------------------------------------------------------

_BUILTINS = frozenset({"len", "min", "max", "abs", "int", "float", "bool", "range", "isinstance", "tuple", "list", "sum", "round"})
_IMPURE_METHODS = frozenset({"backward", "register_hook", "retain_grad", "record_stream", "apply", "copy", "update"})


def pure_statement(rule, statement: cst.CSTNode) -> bool:
    """``statement`` changes no object: only assignments to plain names, of
    expressions whose calls are out-of-place torch functions, builtins on values, or
    out-of-place methods of tensors. Such a line cannot mutate a tensor through an alias."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Assign):
            if not all(isinstance(t.target, cst.Name) for t in small.targets):
                return False
            value = small.value
        elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
            value = small.value
        elif isinstance(small, (cst.Pass,)):
            continue
        else:
            return False
        if value is not None and not pure_expression(rule, value):
            return False
    return True


def pure_expression(rule, expression: cst.CSTNode) -> bool:
    for node in tree.walk(expression):
        if isinstance(node, (cst.Lambda, cst.Yield, cst.Await, cst.NamedExpr)):
            return False
        if isinstance(node, cst.Call) and not _pure_call(rule, node):
            return False
    return True


def _pure_call(rule, call: cst.Call) -> bool:
    if any(a.keyword is not None and a.keyword.value == "out" for a in call.args):
        return False
    qualified = rule.context.qualify(call.func)
    if qualified is not None:
        short = qualified.rsplit(".", 1)[1]
        return qualified.startswith("torch.") and not short.endswith("_") and "manual_seed" not in short
    if isinstance(call.func, cst.Name):
        return call.func.value in _BUILTINS
    if isinstance(call.func, cst.Attribute):
        method = call.func.attr.value
        return not method.endswith("_") and method not in _IMPURE_METHODS and is_tensor(rule, call.func.value)
    return False


def unchanged_between(rule, block: Sequence[cst.BaseStatement], start: int, stop: int, names: set[str]) -> bool:
    """Nothing strictly between ``block[start]`` and ``block[stop]`` rebinds ``names`` or
    mutates any object (so no alias of a tensor read at ``start`` changes before ``stop``)."""
    if not tree.stable_between(block, start, stop, names, rule.context.qualify):
        return False
    return all(pure_statement(rule, block[i]) for i in range(start + 1, stop))


# -- counts that become tensors --------------------------------------------------------------


def tensor_count_use(rule, node: cst.CSTNode, depth: int = 0) -> bool:
    """The value of ``node`` (a Python count about to become a 0-d tensor) is used only
    where a 0-d tensor acts as the number did: in arithmetic or a comparison whose result
    is then tested for truth (``if`` / ``while`` / ``not``), combined with a tensor, or
    bound to a name used only in such places. Not returned, stored, formatted, used as a
    dict key, a shape, a ``range`` bound or passed to a function."""
    current = node
    while True:
        outer = tree.parent(rule, current)
        if isinstance(outer, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget)):
            if isinstance(outer, cst.UnaryOperation) and isinstance(outer.operator, cst.Not):
                return True  # a Python bool either way
            if isinstance(outer, cst.BinaryOperation):
                other = outer.right if outer.left is current else outer.left
                if is_tensor(rule, other):
                    return True  # the result was a tensor already
            if isinstance(outer, cst.ComparisonTarget):
                comparison = tree.parent(rule, outer)
                operands = [comparison.left, *(c.comparator for c in comparison.comparisons)]
                if any(is_tensor(rule, o) for o in operands if o is not current):
                    return True
                current = comparison
                continue
            current = outer
            continue
        if isinstance(outer, (cst.If, cst.While)) and outer.test is current:
            return True
        if isinstance(outer, cst.Assign) and outer.value is current and depth < 2:
            if len(outer.targets) != 1 or not isinstance(outer.targets[0].target, cst.Name):
                return False
            name = outer.targets[0].target.value
            function = tree.enclosing_function(rule, outer)
            if function is None:
                return False
            uses = [n for n in tree.occurrences(name, [function.body]) if n is not outer.targets[0].target]
            if any(tree.binds(s, name) for s in tree.walk(function.body) if isinstance(s, cst.BaseSmallStatement) and s is not outer):
                return False
            return bool(uses) and all(tensor_count_use(rule, use, depth + 1) for use in uses)
        return False


# -- shapes and dtypes ---------------------------------------------------------------------

_ELEMENTWISE_DTYPE_KEEPING = frozenset({"abs", "neg", "clone", "detach", "contiguous"})
_FLOAT_LITERAL_OPS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)


def derived_from(rule, node: cst.BaseExpression, base: str) -> bool | None:
    """``node`` is ``base`` under dtype- and shape-keeping elementwise operations whose
    backward is finite wherever the incoming gradient is zero: ``-b``, ``b * 2.0``,
    ``b / 4``, ``b + 1.0``, ``b.clone()``. Returns None when ``node`` does not use
    ``base`` at all, False when it does so in another way."""
    if isinstance(node, cst.Name):
        return True if node.value == base else None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return derived_from(rule, node.expression, base)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _FLOAT_LITERAL_OPS):
        for tensor_side, other in ((node.left, node.right), (node.right, node.left)):
            if _finite_float_literal(other):
                if isinstance(node.operator, cst.Divide) and tensor_side is node.right:
                    return False  # 2.0 / b: the derivative is unbounded at 0
                return derived_from(rule, tensor_side, base)
        return False
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and not node.args:
        if node.func.attr.value in _ELEMENTWISE_DTYPE_KEEPING:
            return derived_from(rule, node.func.value, base)
    return False


def _finite_float_literal(node: cst.BaseExpression) -> bool:
    """A float literal (``0.0``, ``-1.5``): on a floating tensor it keeps the dtype."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return _finite_float_literal(node.expression)
    return isinstance(node, cst.Float) and node.evaluated_value not in (float("inf"),)


def zero_dim(rule, node: cst.BaseExpression, at: cst.CSTNode, depth: int = 0, assuming: frozenset = frozenset()) -> bool:
    """``node`` is a 0-d tensor (or a Python number): a full reduction, ``count_nonzero``
    without ``dim``, a comparison or arithmetic of such values, or a name whose every
    binding in its function is one (``all_bindings``)."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.Comparison):
        return zero_dim(rule, node.left, at, depth, assuming) and all(zero_dim(rule, c.comparator, at, depth, assuming) for c in node.comparisons)
    if isinstance(node, cst.BinaryOperation):
        return zero_dim(rule, node.left, at, depth, assuming) and zero_dim(rule, node.right, at, depth, assuming)
    if isinstance(node, cst.UnaryOperation):
        return zero_dim(rule, node.expression, at, depth, assuming)
    if isinstance(node, cst.Call):
        qualified = rule.context.qualify(node.func)
        if qualified in ("torch.count_nonzero", "torch.numel", "torch.sum", "torch.mean", "torch.any", "torch.all"):
            return len(node.args) == 1 and node.args[0].keyword is None
        if isinstance(node.func, cst.Name) and node.func.value in ("min", "max", "len") and qualified is None:
            return all(a.keyword is None and not a.star for a in node.args) and all(
                zero_dim(rule, a.value, at, depth, assuming) or _python_size(a.value) for a in node.args
            )
        if isinstance(node.func, cst.Attribute) and not node.args:
            return node.func.attr.value in ("sum", "mean", "any", "all", "amax", "amin", "max", "min", "numel", "prod", "norm")
        return False
    if isinstance(node, cst.Name) and depth < 4:
        if node.value in assuming:
            return True  # `s = s * 2.0`: by induction over the bindings
        values = all_bindings(rule, node.value, at)
        inner = assuming | {node.value}
        return bool(values) and all(zero_dim(rule, v, v, depth + 1, inner) for v in values)
    return False


def all_bindings(rule, name: str, at: cst.CSTNode) -> list[cst.BaseExpression] | None:
    """The values of every ``name = value`` in the scope ``name`` is read from at ``at``
    (:func:`binding_scope`: the function around it, else the module; a nested function's
    own locals are not this scope's). None when the name is a parameter, is bound any
    other way (a loop target, ``+=``, unpacking, an import, a ``def``, ``global`` or
    ``nonlocal``), or is not bound in that scope at all (a closure or module name)."""
    scope = binding_scope(rule, name, at)
    if scope is None or declared_elsewhere(scope, name):
        return None
    values: list[cst.BaseExpression] = []
    for node in tree.scope_nodes(scope):
        if not tree._binds_here(node, name):
            continue
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return None
        assign = tree.parent(rule, node) if isinstance(node, cst.AssignTarget) else None
        if isinstance(assign, cst.Assign) and isinstance(node.target, cst.Name):
            values.append(assign.value)
            continue
        return None
    return values or None


def _python_size(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "numel"


# -- per-box loss functions ------------------------------------------------------------------

# Elementwise ops whose derivative is finite for finite inputs: padding slots (zero
# boxes against arbitrary predictions) then get exactly zero gradient through `where`.
_BOX_ELEMENTWISE_TORCH = frozenset({"max", "min", "maximum", "minimum", "abs", "atan", "clamp", "clip"})
_BOX_METHODS = frozenset({"clamp", "clamp_min", "clamp_max", "clip", "abs", "atan"})
_CLAMPS = frozenset({"clamp", "clamp_min", "clip"})
PER_BOX_LIBRARY = frozenset({"synclint.ops.giou_loss"})
_ELEMENTWISE_LOSSES = frozenset(
    {"l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"}
)


def per_box(rule, call: cst.BaseExpression) -> str | None:
    """Why ``call`` maps ``(..., N, 4)`` box pairs to ``(..., N[, k])`` per-box values
    (so padding the batch and masking gives the same per-box values), or None.

    Proven for the fused ``synclint.ops.giou_loss``, a ``torch.nn.functional`` elementwise
    loss with ``reduction="none"``, and a function defined in this module whose body
    only indexes the last dimension (``b[..., 0]``, ``b[..., :2]``) and combines the
    results elementwise (arithmetic, ``torch.max``/``min`` of two tensors, ``clamp``)."""
    if not isinstance(call, cst.Call):
        return None
    qualified = rule.context.qualify(call.func) or ""
    if qualified in PER_BOX_LIBRARY:
        return "the fused per-box op"
    if qualified.startswith("torch.nn.functional.") and qualified.rsplit(".", 1)[1] in _ELEMENTWISE_LOSSES:
        reduction = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "reduction"), None)
        if isinstance(reduction, cst.SimpleString) and reduction.evaluated_value == "none":
            return "an elementwise loss with reduction='none'"
        return None
    if isinstance(call.func, cst.Name) and qualified == "":
        function = _module_function(rule, call.func.value)
        if function is not None and _elementwise_box_function(rule, function):
            return f"`{call.func.value}` is elementwise per box"
    return None


def _module_function(rule, name: str) -> cst.FunctionDef | None:
    found = [s for s in rule.context.module.body if isinstance(s, cst.FunctionDef) and s.name.value == name]
    rebound = [s for s in rule.context.module.body if not isinstance(s, cst.FunctionDef) and tree.binds(s, name)]
    return found[0] if len(found) == 1 and not rebound and not found[0].decorators else None


def _elementwise_box_function(rule, function: cst.FunctionDef) -> bool:
    params = function.params
    if isinstance(params.star_arg, cst.Param) or params.star_kwarg or params.kwonly_params or params.posonly_params:
        return False
    body = function.body.body
    if not body:
        return False
    positive: set[str] = set()  # names bound to a literal > 0 or to a clamp at such a bound
    for statement in body[:-1]:
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
            return False
        small = statement.body[0]
        if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)):
            return False
        name = small.targets[0].target.value
        if name in positive or has_param(params, name):
            return False  # rebinding: keep the one-binding reading simple
        if not _elementwise_box_expression(rule, small.value, positive):
            return False
        if _positive(small.value, positive):
            positive.add(name)
    last = body[-1]
    return (
        isinstance(last, cst.SimpleStatementLine)
        and len(last.body) == 1
        and isinstance(last.body[0], cst.Return)
        and last.body[0].value is not None
        and _elementwise_box_expression(rule, last.body[0].value, positive)
    )


def elementwise_box_expression(rule, node: cst.BaseExpression, per_sample=None) -> bool:
    """``node`` combines its operands elementwise only (see ``_elementwise_box_function``);
    ``per_sample(subscript) -> bool`` also admits the loop's per-sample reads
    (``pred[i, :n]``, ``samples[i]``) as operands."""
    return _elementwise_box_expression(rule, node, set(), per_sample)


def _positive(node: cst.BaseExpression, positive: set[str]) -> bool:
    """A value surely > 0: a positive literal, a name bound to one, ``v.clamp(eps)`` /
    ``v.clamp(min=eps)`` with such an ``eps``."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return node.evaluated_value > 0
    if isinstance(node, cst.Name):
        return node.value in positive
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _CLAMPS:
        low = next((a.value for a in node.args if a.keyword is None or a.keyword.value == "min"), None)
        return low is not None and _positive(low, positive)
    return False


def _elementwise_box_expression(rule, node: cst.BaseExpression, positive: set[str], per_sample=None) -> bool:
    if isinstance(node, (cst.Name, cst.Integer, cst.Float)):
        return True
    if per_sample is not None and isinstance(node, cst.Subscript) and per_sample(node):
        return True
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, (cst.MatrixMultiply, cst.Power, cst.FloorDivide, cst.Modulo)):
            return False
        if isinstance(node.operator, cst.Divide) and not _positive(node.right, positive):
            return False  # 0 / 0 on a padding slot: NaN gradient through the mask
        return _elementwise_box_expression(rule, node.left, positive, per_sample) and _elementwise_box_expression(rule, node.right, positive, per_sample)
    if isinstance(node, cst.UnaryOperation):
        return _elementwise_box_expression(rule, node.expression, positive, per_sample)
    if isinstance(node, cst.Subscript):
        # Only the last (coordinate) dimension: `b[..., 0]`, `b[..., :2]`, `b[..., 2:]`.
        if len(node.slice) != 2 or not isinstance(node.value, cst.Name):
            return False
        first, second = (e.slice for e in node.slice)
        if not (isinstance(first, cst.Index) and isinstance(first.value, cst.Ellipsis)):
            return False
        if isinstance(second, cst.Index):
            return isinstance(second.value, cst.Integer)
        return (
            isinstance(second, cst.Slice)
            and second.step is None
            and all(b is None or isinstance(b, cst.Integer) for b in (second.lower, second.upper))
        )
    if isinstance(node, cst.Call):
        if any(a.star or (a.keyword is not None and a.keyword.value not in ("min", "max")) for a in node.args):
            return False
        qualified = rule.context.qualify(node.func)
        if qualified is not None:
            short = qualified.rsplit(".", 1)[1]
            if not (qualified.startswith("torch.") and short in _BOX_ELEMENTWISE_TORCH):
                return False
            if short in ("max", "min") and len(node.args) != 2:
                return False  # torch.max(x) reduces; torch.max(a, b) is elementwise
            return all(_elementwise_box_expression(rule, a.value, positive, per_sample) for a in node.args)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _BOX_METHODS:
            return _elementwise_box_expression(rule, node.func.value, positive, per_sample) and all(
                _elementwise_box_expression(rule, a.value, positive, per_sample) for a in node.args
            )
    return False


# -- floating-point values -------------------------------------------------------------------

_FLOAT_FUNCTIONS = frozenset(
    {"sigmoid", "softmax", "log_softmax", "exp", "log", "tanh", "rand", "randn", "rand_like", "randn_like",
     "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
     "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity", "mean", "linspace"}
)
_FLOAT_METHODS = frozenset({"float", "half", "double", "bfloat16", "mean", "sigmoid", "softmax", "exp", "log", "sqrt", "tanh"})
_LOSS_MODULE = "Loss"


def floating(rule, node: cst.BaseExpression, at: cst.CSTNode, depth: int = 0, assuming: frozenset = frozenset()) -> bool:
    """``node`` is a floating-point tensor by how it was computed: a float-producing torch
    function or method (losses, ``softmax``, ``mean``, ``.float()``), arithmetic with a
    float literal, an ``nn.*Loss`` module call, a method of this class that returns such
    a value, or a name bound (straight-line, before ``at``) to one."""
    if depth > 4:
        return False
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Divide):
            return True
        return any(
            (_finite_float_literal(a) and is_tensor(rule, b)) or floating(rule, a, at, depth + 1, assuming)
            for a, b in ((node.left, node.right), (node.right, node.left))
        )
    if isinstance(node, cst.UnaryOperation):
        return floating(rule, node.expression, at, depth + 1, assuming)
    if isinstance(node, cst.Call):
        qualified = rule.context.qualify(node.func)
        if qualified is not None:
            return qualified.startswith("torch.") and qualified.rsplit(".", 1)[1] in _FLOAT_FUNCTIONS
        func = node.func
        if isinstance(func, cst.Attribute):
            if func.attr.value in _FLOAT_METHODS:
                return True
            if isinstance(func.value, cst.Name) and func.value.value == "self":
                return _self_member_floating(rule, func.attr.value, at, depth)
        return False
    if isinstance(node, cst.Name):
        if node.value in assuming:
            return True
        values = all_bindings(rule, node.value, at)
        inner = assuming | {node.value}
        return bool(values) and all(floating(rule, v, v, depth + 1, inner) for v in values)
    return False


def _self_member_floating(rule, attr: str, at: cst.CSTNode, depth: int) -> bool:
    """``self.<attr>(...)``: a method of the class returning a floating value, or an
    attribute assigned once to an ``nn.*Loss`` module."""
    cls = tree.enclosing_class(rule, at)
    if cls is None:
        return False
    methods = [s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == attr]
    if len(methods) == 1:
        returns = [n for n in tree.walk(methods[0].body) if isinstance(n, cst.Return)]
        return bool(returns) and all(
            r.value is not None and floating(rule, r.value, r, depth + 1) for r in returns
        )
    assigned = [
        n.value
        for n in tree.walk(cls.body)
        if isinstance(n, cst.Assign)
        and any(tree.code(t.target) == f"self.{attr}" for t in n.targets)
    ]
    if len(assigned) == 1 and isinstance(assigned[0], cst.Call):
        qualified = rule.context.qualify(assigned[0].func) or ""
        return qualified.startswith("torch.nn.") and qualified.endswith(_LOSS_MODULE)
    return False
