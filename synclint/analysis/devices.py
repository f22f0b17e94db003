"""Which tensors are known to live in host memory.

Reading a host tensor (``.item()``, ``if t:``, ``t[mask]``) does not wait for
any device, so sync rules stay quiet about it. Only positive evidence counts:
a factory without ``device=`` (``torch.tensor(values)``, ``torch.from_numpy``),
``.cpu()``, and what is computed from those alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from synclint.analysis.imports import dotted_name
from synclint.analysis.kinds import FACTORY_FUNCTIONS

if TYPE_CHECKING:
    from synclint.analysis.flow import FlowState

_LIKE = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like"})
_MOVES = frozenset({"to", "cuda", "xpu", "mps", "npu"})


def _is_cpu(node: cst.BaseExpression) -> bool:
    """``"cpu"``, ``torch.device("cpu")``, ``cpu_device``."""
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value == "cpu"
    if isinstance(node, cst.Call) and node.args:
        return _is_cpu(node.args[0].value)
    return isinstance(node, (cst.Name, cst.Attribute)) and "cpu" in (dotted_name(node) or "").lower()


class DeviceInference:
    def __init__(self, flow: FlowState) -> None:
        self.flow = flow

    def on_host(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name):
            if self.flow.is_narrowed_to_host(node.value):
                return True  # the CPU branch of ``if x.is_cuda:``
            # The innermost scope that binds the name decides (closures see outer tensors).
            for scope in reversed(self.flow.scopes):
                if scope.kind != "class" and node.value in scope.env:
                    return node.value in scope.host
            return False
        if isinstance(node, cst.Subscript):
            return self.on_host(node.value)
        if isinstance(node, cst.Attribute):
            return self._attribute_on_host(node)
        if isinstance(node, (cst.BinaryOperation, cst.Comparison)):
            operands = [node.left, node.right] if isinstance(node, cst.BinaryOperation) else [
                node.left, *(c.comparator for c in node.comparisons)
            ]
            tensors = [o for o in operands if self.flow.kind_of(o).is_tensor]
            return bool(tensors) and all(self.on_host(o) for o in tensors)
        if isinstance(node, cst.UnaryOperation):
            return self.on_host(node.expression)
        if isinstance(node, cst.Call):
            return self._call_on_host(node)
        return False

    def _attribute_on_host(self, node: cst.Attribute) -> bool:
        """``self.table`` created with ``device="cpu"`` (or ``.cpu()``) in the class."""
        if not (isinstance(node.value, cst.Name) and node.value.value == "self"):
            return False
        owner = self.flow.class_qualname()
        if owner is None:
            return False
        return node.attr.value in self.flow.facts.host_attributes.get(owner, ())

    def _call_on_host(self, node: cst.Call) -> bool:
        if self.flow.returns_host_tensor(node):
            return True
        qualified = self.flow.imports.qualify(node.func)
        if qualified is not None and qualified.startswith("torch."):
            short = qualified.rsplit(".", 1)[1]
            device = next((a for a in node.args if a.keyword and a.keyword.value == "device"), None)
            if short in _LIKE:
                if device is not None:
                    return _is_cpu(device.value)
                return bool(node.args) and self.on_host(node.args[0].value)
            if short in FACTORY_FUNCTIONS or short == "from_numpy":
                return device is None or _is_cpu(device.value)
            first = node.args[0].value if node.args else None
            return first is not None and self.on_host(first)
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method == "cpu":
                return True
            if method in _MOVES:
                return any(_is_cpu(a.value) for a in node.args)
            return self.on_host(func.value)
        return False
