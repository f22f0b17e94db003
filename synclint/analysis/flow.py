"""Scopes, bindings and the loop / hot-path context, updated during the traversal.

:class:`FlowState` is driven by the engine's single traversal: it is told when
a node is entered and left, and keeps

* a stack of scopes (module, class, function), each with the kinds bound so
  far and the flow-insensitive evidence of its body;
* per class, the kinds of ``self.<attr>`` assigned anywhere in it;
* the loops enclosing the current node inside the current function.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from synclint.analysis.evidence import collect_evidence
from synclint.analysis.imports import ImportMap, dotted_name
from synclint.analysis.inference import KindInference
from synclint.analysis.kinds import Kind
from synclint.traversal import walk

_LOSS_NAME = re.compile(r"loss|criterion|objective", re.IGNORECASE)
_STEP_NAME = re.compile(
    r"^(training_step|train_step|train_one_epoch|train_epoch|step|validation_step|"
    r"compute_loss|fit_one_batch|run_step)$"
)


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
# The node types enter()/leave() act on: a set lookup spares every other node a
# chain of (slow, ABC) isinstance checks. Keep in step with the two methods.
_ENTERED = frozenset({cst.FunctionDef, cst.ClassDef, cst.For, cst.While, *_COMPREHENSIONS})
_LEFT = _ENTERED | {cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.WithItem}


@dataclass
class Scope:
    kind: str  # "module" | "class" | "function"
    name: str
    node: cst.CSTNode
    evidence: dict[str, Kind]
    env: dict[str, Kind] = field(default_factory=dict)
    self_attributes: dict[str, Kind] = field(default_factory=dict)
    loops: list[cst.CSTNode] = field(default_factory=list)


class FlowState:
    def __init__(self, module: cst.Module, imports: ImportMap) -> None:
        self.imports = imports
        self.inference = KindInference(self)
        self.scopes: list[Scope] = [
            Scope("module", "<module>", module, collect_evidence(module, imports))
        ]

    # -- queries -------------------------------------------------------------------
    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    def kind_of(self, node: cst.BaseExpression) -> Kind:
        return self.inference.kind_of(node)

    def lookup(self, name: str) -> Kind:
        """The kind bound to ``name``, searching enclosing function and module scopes."""
        for scope in reversed(self.scopes):
            if scope.kind == "class":
                continue
            bound = scope.env.get(name)
            if bound is not None and bound is not Kind.UNKNOWN:
                return bound
            evidence = scope.evidence.get(name)
            if evidence is not None:
                return evidence
            if bound is Kind.UNKNOWN:
                return bound
        return Kind.UNKNOWN

    def self_attribute(self, attr: str) -> Kind:
        for scope in reversed(self.scopes):
            if scope.kind == "class":
                return scope.self_attributes.get(attr, Kind.UNKNOWN)
        return Kind.UNKNOWN

    @property
    def function(self) -> Scope | None:
        for scope in reversed(self.scopes):
            if scope.kind == "function":
                return scope
        return None

    @property
    def class_name(self) -> str | None:
        for scope in reversed(self.scopes):
            if scope.kind == "class":
                return scope.name
        return None

    @property
    def in_loop(self) -> bool:
        return bool(self.scope.loops)

    @property
    def innermost_loop(self) -> cst.CSTNode | None:
        loops = self.scope.loops
        return loops[-1] if loops else None

    def qualified_function_name(self) -> str | None:
        names = [s.name for s in self.scopes[1:]]
        return ".".join(names) if names else None

    def hot_path(self) -> str | None:
        """A phrase naming the hot function we are in (``forward``, a loss, a step)."""
        function = self.function
        if function is None:
            return None
        cls = self.class_name or ""
        if function.name == "forward":
            return f"`{cls}.forward`" if cls else "`forward`"
        if _LOSS_NAME.search(function.name) or _LOSS_NAME.search(cls):
            label = f"{cls}.{function.name}" if cls else function.name
            return f"loss `{label}`"
        if _STEP_NAME.match(function.name):
            return f"training step `{function.name}`"
        return None

    def context_phrase(self) -> str:
        """`` (inside a loop in `Net.forward`)``-style suffix for messages."""
        parts = []
        if self.in_loop:
            parts.append("inside a loop")
        hot = self.hot_path()
        if hot:
            parts.append(f"in {hot}")
        return f" ({' '.join(parts)})" if parts else ""

    # -- traversal hooks -------------------------------------------------------------
    def enter(self, node: cst.CSTNode) -> None:
        if type(node) not in _ENTERED:
            return
        if isinstance(node, cst.FunctionDef):
            self._enter_function(node)
        elif isinstance(node, cst.ClassDef):
            self._enter_class(node)
        elif isinstance(node, (cst.For, cst.While)):
            if isinstance(node, cst.For):
                self.bind(node.target, self._iteration_kind(node.iter))
            self.scope.loops.append(node)
        elif isinstance(node, _COMPREHENSIONS):
            # The element is visited before the ``for`` clauses: bind targets first.
            clause = node.for_in
            while clause is not None:
                self.bind(clause.target, self._iteration_kind(clause.iter))
                clause = clause.inner_for_in
            self.scope.loops.append(node)

    def leave(self, node: cst.CSTNode) -> None:
        if type(node) not in _LEFT:
            return
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self.scopes.pop()
        elif isinstance(node, (cst.For, cst.While) + _COMPREHENSIONS):
            loops = self.scope.loops
            if loops and loops[-1] is node:
                loops.pop()
        elif isinstance(node, cst.Assign):
            kind = self.kind_of(node.value)
            for target in node.targets:
                self.bind(target.target, kind, node.value)
        elif isinstance(node, cst.AnnAssign):
            kind = self._annotation_kind(node.annotation.annotation)
            if kind is Kind.UNKNOWN and node.value is not None:
                kind = self.kind_of(node.value)
            self.bind(node.target, kind, node.value)
        elif isinstance(node, cst.AugAssign):
            if isinstance(node.target, cst.Name):
                current = self.lookup(node.target.value)
                if current is Kind.UNKNOWN:
                    self.bind(node.target, self.kind_of(node.value))
        elif isinstance(node, cst.NamedExpr):
            self.bind(node.target, self.kind_of(node.value), node.value)
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            self.bind(node.asname.name, Kind.UNKNOWN)

    # -- bindings ----------------------------------------------------------------------
    def bind(
        self,
        target: cst.BaseExpression,
        kind: Kind,
        value: cst.BaseExpression | None = None,
    ) -> None:
        if isinstance(target, cst.Name):
            self.scope.env[target.value] = kind
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            for element, element_kind in zip(elements, self._unpacked_kinds(kind, value, len(elements))):
                self.bind(element, element_kind)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, Kind.TENSOR_SEQUENCE if kind.is_tensor else Kind.UNKNOWN)

    def _unpacked_kinds(self, kind: Kind, value: cst.BaseExpression | None, n: int) -> list[Kind]:
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == n:
            return [self.kind_of(e.value) for e in value.elements]
        if isinstance(value, cst.Call) and self.inference.values_indices_call(value):
            return [Kind.TENSOR, Kind.INT_TENSOR] + [Kind.UNKNOWN] * (n - 2)
        if kind is Kind.TENSOR_TUPLE:
            return [Kind.INT_TENSOR] * n
        if kind in (Kind.TENSOR_SEQUENCE,) or kind.is_tensor:
            return [Kind.TENSOR] * n
        return [Kind.UNKNOWN] * n

    def _iteration_kind(self, iterable: cst.BaseExpression) -> Kind:
        """Kind of the loop variable for ``for x in iterable``."""
        kind = self.kind_of(iterable)
        if kind is Kind.TENSOR_SEQUENCE or kind.is_tensor:
            return Kind.TENSOR
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
            if iterable.func.value == "range":
                return Kind.PYTHON
        return Kind.UNKNOWN

    def _annotation_kind(self, annotation: cst.BaseExpression) -> Kind:
        text = _annotation_text(annotation)
        if text is None:
            return Kind.UNKNOWN
        if re.search(r"\b(List|list|Sequence|Tuple|tuple|Iterable)\[.*Tensor", text):
            return Kind.TENSOR_SEQUENCE
        if re.search(r"\bTensor\b", text):
            return Kind.TENSOR
        if re.search(r"\b(ndarray|NDArray)\b", text):
            return Kind.NUMPY
        if re.fullmatch(r"(int|float|bool|str|complex)(\s*\|\s*None)?|Optional\[(int|float|bool|str)\]", text):
            return Kind.PYTHON
        return Kind.UNKNOWN

    # -- scopes -------------------------------------------------------------------------
    def _enter_function(self, node: cst.FunctionDef) -> None:
        scope = Scope("function", node.name.value, node, collect_evidence(node, self.imports))
        in_class = self.scope.kind == "class"
        is_forward = in_class and node.name.value == "forward"
        params = node.params
        every = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
        for index, param in enumerate(every):
            name = param.name.value
            kind = Kind.UNKNOWN
            if param.annotation is not None:
                kind = self._annotation_kind(param.annotation.annotation)
            elif param.default is not None:
                default = self.kind_of(param.default)
                kind = default if default is Kind.PYTHON and not _is_none(param.default) else Kind.UNKNOWN
            elif is_forward and index > 0:
                kind = Kind.TENSOR  # forward(self, x, ...): inputs are tensors
            scope.env[name] = kind
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.env[star.name.value] = Kind.UNKNOWN
        self.scopes.append(scope)

    def _enter_class(self, node: cst.ClassDef) -> None:
        scope = Scope("class", node.name.value, node, {})
        self.scopes.append(scope)
        scope.self_attributes = _SelfAttributeCollector.collect(node, self)


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _annotation_text(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    try:
        return cst.Module(body=[]).code_for_node(node)
    except Exception:  # pragma: no cover - defensive: odd annotation nodes
        return dotted_name(node)


class _SelfAttributeCollector(cst.CSTVisitor):
    """Kinds of ``self.x = <torch expr>`` and ``register_buffer`` in a class body."""

    def __init__(self, flow: FlowState) -> None:
        super().__init__()
        self.flow = flow
        self.attributes: dict[str, Kind] = {}
        self.depth = 0

    @classmethod
    def collect(cls, node: cst.ClassDef, flow: FlowState) -> dict[str, Kind]:
        collector = cls(flow)
        walk(node.body, collector)
        return collector.attributes

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            attr = _self_attribute_name(target.target)
            if attr is None:
                continue
            kind = self.flow.kind_of(node.value)
            if kind in (Kind.MODULE,) or kind.is_tensor:
                self._note(attr, kind)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("register_buffer", "register_parameter")
            and node.args
            and isinstance(node.args[0].value, cst.SimpleString)
        ):
            name = node.args[0].value.evaluated_value
            if isinstance(name, str):
                self._note(name, Kind.TENSOR)

    def _note(self, attr: str, kind: Kind) -> None:
        previous = self.attributes.get(attr)
        self.attributes[attr] = kind if previous in (None, kind) else Kind.UNKNOWN


def _self_attribute_name(node: cst.BaseExpression) -> str | None:
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    ):
        return node.attr.value
    return None
