"""Flow-insensitive evidence that a name holds a tensor (or a host array).

Before a function is analysed, one cheap walk over its body records how each
name is *used*: ``x.view(...)``, ``x.cuda()`` or ``torch.exp(x)`` are things
one only does to a tensor; ``torch.from_numpy(a)`` says ``a`` is a numpy
array. The walk stops at nested functions and classes, which get their own.
"""

from __future__ import annotations

import re

import libcst as cst

from synclint.analysis.imports import ImportMap
from synclint.analysis.kinds import (
    COMPARISON_METHODS,
    CONTAINER_METHODS,
    FACTORY_FUNCTIONS,
    TENSOR_ONLY_METHODS,
    Kind,
    classify_torch_callable,
)
from synclint.traversal import ScopeVisitor, walk

_TENSOR_ONLY_ATTRIBUTES = frozenset({"is_cuda", "grad", "requires_grad", "grad_fn"})
_MODULE_METHODS = frozenset({"cpu", "cuda", "to", "half", "float", "double", "bfloat16", "requires_grad_"})
_MODULE_NAME = re.compile(r"(^|_)(model|net|module|backbone|head|layer|encoder|decoder|ema)s?$", re.I)
#: Torch functions whose first argument is a sequence of tensors, not a tensor: what
#: ``torch.cat(parts)`` says of ``parts`` is that it holds tensors, and ``len(parts)``
#: counts them (RCAN's eight self-ensemble outputs), not a batch's samples.
_SEQUENCE_FIRST = frozenset(
    {"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "row_stack", "column_stack", "multi_dot"}
)
# Functional losses: both the prediction and the target are tensors.
_LOSS = re.compile(r"loss|entropy|kl_div|nll|distance|similarity")
_TWO_TENSOR_PREFIXES = ("torch.nn.functional.",)


def torch_tensor_function(qualified: str | None) -> str | None:
    """The short name if ``qualified`` is torch math taking tensors, else None."""
    if qualified is None or not qualified.startswith("torch."):
        return None
    if classify_torch_callable(qualified) != "tensor":
        return None
    short = qualified.rsplit(".", 1)[1]
    return None if short in FACTORY_FUNCTIONS else short


def _is_size(node: cst.BaseExpression) -> bool:
    """``x.shape[0]``, ``x.size(1)``, ``len(xs)``, ``x.numel()``, ``x.dim()``: Python ints."""
    if isinstance(node, cst.Subscript):
        node = node.value
        return isinstance(node, cst.Attribute) and node.attr.value == "shape"
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Name):
            return func.value == "len"
        return isinstance(func, cst.Attribute) and func.attr.value in ("size", "numel", "dim", "ndimension")
    return False


def _int_operands(node: cst.BaseExpression) -> list[cst.Name]:
    """``n``, and the names of ``n + 1`` / ``2 * n - k`` with integer literals beside them."""
    if isinstance(node, cst.Name):
        return [node]
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply)):
        sides = [node.left, node.right]
        if any(isinstance(side, cst.Integer) for side in sides) or all(isinstance(side, (cst.Name, cst.BinaryOperation)) for side in sides):
            return [name for side in sides for name in _int_operands(side)]
    return []


class EvidenceCollector(ScopeVisitor):
    def __init__(self, imports: ImportMap) -> None:
        super().__init__()
        self.imports = imports
        self.evidence: dict[str, Kind] = {}

    def _note(self, node: cst.BaseExpression, kind: Kind) -> None:
        # ``self.float()`` / ``self.cuda()`` are nn.Module methods too: never evidence.
        if not isinstance(node, cst.Name) or node.value in ("self", "cls"):
            return
        previous = self.evidence.get(node.value)
        if previous is None or previous is kind:
            self.evidence[node.value] = kind
        else:  # contradictory uses: say nothing
            self.evidence[node.value] = Kind.UNKNOWN

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in _TENSOR_ONLY_ATTRIBUTES:
            self._note(node.value, Kind.TENSOR)

    def visit_Slice(self, node: cst.Slice) -> None:
        # ``x[..., -i:, -j:]``: slice bounds are Python ints far more often than 0-d tensors
        for bound in (node.lower, node.upper, node.step):
            if isinstance(bound, cst.UnaryOperation) and isinstance(bound.operator, cst.Minus):
                bound = bound.expression
            if isinstance(bound, cst.Name):
                self._note(bound, Kind.PYTHON)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # ``self.bias.shape[-1] >= j``, ``len(xs) < n``: compared with a size, a name is a size
        operands = [node.left, *(c.comparator for c in node.comparisons)]
        if any(_is_size(o) for o in operands):
            for operand in operands:
                self._note(operand, Kind.PYTHON)
        # ``budget in self.budget_map.keys()``: looked up by value among a dict's keys, which
        # a tensor (hashed by identity) never is: a Python value. ``fn == "encode"``: a name
        # compared with a string is a string (a tensor's ``==`` with one is plain ``False``).
        left = node.left
        for target in node.comparisons:
            comparator = target.comparator
            if isinstance(target.operator, (cst.Equal, cst.NotEqual)):
                for named, other in ((left, comparator), (comparator, left)):
                    if isinstance(other, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
                        self._note(named, Kind.PYTHON)
            if (
                isinstance(target.operator, (cst.In, cst.NotIn))
                and isinstance(comparator, cst.Call)
                and isinstance(comparator.func, cst.Attribute)
                and comparator.func.attr.value == "keys"
                and not comparator.args
            ):
                self._note(left, Kind.PYTHON)
            left = comparator

    def visit_Subscript(self, node: cst.Subscript) -> None:
        # ``outputs["pred_boxes"]``: only containers are indexed by strings.
        if len(node.slice) == 1:
            index = node.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, (cst.SimpleString, cst.FormattedString)):
                self._note(node.value, Kind.PYTHON)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "range":
            # ``range(startp + 1, endp)``: loop bounds are Python ints far more often than
            # 0-d tensors (CenterNet's ``IDAUp.forward(self, layers, startp, endp)``).
            for arg in node.args:
                for bound in _int_operands(arg.value):
                    self._note(bound, Kind.PYTHON)
            return
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            if func.attr.value in _MODULE_METHODS and _MODULE_NAME.search(func.value.value):
                return  # ``model.half()``: nn.Module has it too
            if func.attr.value in TENSOR_ONLY_METHODS or (
                func.attr.value in COMPARISON_METHODS and not self.imports.imports_pandas
            ):
                self._note(func.value, Kind.TENSOR)
                return
            if func.attr.value in CONTAINER_METHODS:
                self._note(func.value, Kind.PYTHON)
                return
        qualified = self.imports.qualify(func)
        if qualified is None:
            return
        if qualified in ("torch.from_numpy", "torch.as_tensor") and node.args:
            if qualified == "torch.from_numpy":
                self._note(node.args[0].value, Kind.NUMPY)
            return
        short = torch_tensor_function(qualified)
        if short is None:
            return
        positional = [arg for arg in node.args if arg.keyword is None and arg.star == ""]
        if short in _SEQUENCE_FIRST:
            if positional:
                self._note(positional[0].value, Kind.TENSOR_SEQUENCE)
            return
        # ``F.cross_entropy(pred, target)``: both tensors; ``F.interpolate(x, size)``: not.
        wanted = 2 if qualified.startswith(_TWO_TENSOR_PREFIXES) and _LOSS.search(short) else 1
        for arg in positional[:wanted]:
            self._note(arg.value, Kind.TENSOR)


def collect_evidence(root: cst.CSTNode, imports: ImportMap) -> dict[str, Kind]:
    """Evidence for the names used directly in ``root`` (a function, class or module)."""
    collector = EvidenceCollector(imports)
    collector.root = root
    walk(root, collector)
    return {name: kind for name, kind in collector.evidence.items() if kind is not Kind.UNKNOWN}


class Evidence:
    """:func:`collect_evidence` of ``root``, collected when first asked for: a third of the
    functions of a model package never ask (every name they read is bound before)."""

    __slots__ = ("_root", "_imports", "_found")

    def __init__(self, root: cst.CSTNode, imports: ImportMap) -> None:
        self._root: cst.CSTNode | None = root
        self._imports: ImportMap | None = imports
        self._found: dict[str, Kind] | None = None

    def get(self, name: str, default: Kind | None = None) -> Kind | None:
        found = self._found
        if found is None:
            assert self._root is not None and self._imports is not None
            found = self._found = collect_evidence(self._root, self._imports)
            self._root = self._imports = None
        return found.get(name, default)
