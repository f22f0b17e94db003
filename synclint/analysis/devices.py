"""Which tensors are known to live in host memory.

Reading a host tensor (``.item()``, ``if t:``, ``t[mask]``) does not wait for
any device, so sync rules stay quiet about it. Only positive evidence counts:
a factory without ``device=`` (``torch.tensor(values)``, ``torch.from_numpy``),
``.cpu()``, and what is computed from those alone.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from synclint.analysis.imports import dotted_name
from synclint.analysis.kinds import FACTORY_FUNCTIONS, HOST_SHAPE_FUNCTIONS, Kind
from synclint.project.loss_names import is_loss_function

if TYPE_CHECKING:
    from synclint.analysis.flow import FlowState
    from synclint.project.host_returns import HostCondition

#: ``torch.zeros_like(x)`` is made where ``x`` lives (unless given a ``device=``).
LIKE_FACTORIES = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like"})
_MOVES = frozenset({"to", "cuda", "xpu", "mps", "npu"})
#: torch's dtypes by name: ``x.to(torch.int64)`` casts, on whatever device ``x`` is.
_DTYPES = frozenset({
    "float", "float32", "float64", "double", "half", "float16", "bfloat16", "int", "int8", "int16", "int32",
    "int64", "long", "short", "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128", "cfloat",
    "cdouble", "chalf", "complex32", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
})
_ACCELERATOR_MOVES = frozenset({"cuda", "xpu", "npu", "mps"})
#: Device strings of accelerators: ``"cuda"``, ``"cuda:0"``, ``f"cuda:{rank}"``.
_ACCELERATOR_PREFIXES = ("cuda", "xpu", "npu", "mps")
#: Calls that return the current accelerator device (an index or a device).
_CURRENT_DEVICE = frozenset({"torch.cuda.current_device", "torch.xpu.current_device", "torch.npu.current_device"})
#: Methods whose result lives where their receiver does (``x.sum()``, ``x.max(1)``).
_SAME_DEVICE = frozenset({"sum", "max", "min", "amax", "amin", "mean", "abs", "float", "long", "int", "bool",
                          "view", "reshape", "flatten", "t", "clone", "detach", "cumsum", "ne", "eq", "gt", "lt"})


def _is_cpu(node: cst.BaseExpression) -> bool:
    """``"cpu"``, ``torch.device("cpu")``, ``cpu_device``."""
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value == "cpu"
    if isinstance(node, cst.Call) and node.args:
        return _is_cpu(node.args[0].value)
    return isinstance(node, (cst.Name, cst.Attribute)) and "cpu" in (dotted_name(node) or "").lower()


#: Constructors from data (``torch.Tensor([])``, ``torch.tensor(())``) and factories taking
#: sizes (``torch.zeros(0, 4)``): see :func:`empty_construction`.
_FROM_DATA_CONSTRUCTORS = frozenset({"torch.tensor", "torch.as_tensor", "torch.Tensor", "torch.FloatTensor",
                                     "torch.LongTensor", "torch.IntTensor", "torch.BoolTensor", "torch.DoubleTensor"})
_SIZED_FACTORIES = frozenset({"torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn", "torch.full"})
#: Methods that keep a tensor's number of elements (casts): ``torch.Tensor([]).long()``.
_KEEP_NUMEL = frozenset({"long", "float", "int", "double", "half", "bool", "bfloat16", "byte", "detach", "clone"})


def empty_construction(node: cst.BaseExpression, qualify) -> bool:
    """A tensor built empty, visibly: ``torch.Tensor([])``, ``torch.tensor(())``,
    ``torch.zeros(0, 4)``, ``torch.empty((0,))``, and casts of them. Copying one to a device
    launches nothing and waits for nothing: ``copy_`` returns before its kernel when there
    are no elements (``if (iter.numel() == 0) return self;`` in ATen's ``copy_impl``)."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _KEEP_NUMEL and not node.args:
        node = node.func.value
    if not isinstance(node, cst.Call):
        return False
    name = qualify(node.func)
    positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
    if name in _FROM_DATA_CONSTRUCTORS:
        return len(positional) == 1 and isinstance(positional[0], (cst.List, cst.Tuple)) and not positional[0].elements
    if name in _SIZED_FACTORIES:
        sizes = positional[:-1] if name == "torch.full" else positional
        if len(sizes) == 1 and isinstance(sizes[0], (cst.List, cst.Tuple)):
            sizes = [element.value for element in sizes[0].elements]
        return any(isinstance(size, cst.Integer) and size.evaluated_value == 0 for size in sizes)
    return False


class DeviceInference:
    def __init__(self, flow: FlowState) -> None:
        self.flow = flow

    def on_host(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name):
            # A batch the loop stored device values in (``batch["pred"] = model(x)``) is not
            # on the host as a whole: ``batch.get("pred")``, ``batch.values()`` may be them.
            return self._name_on_host(node.value) and not self.flow.device_keys(node.value)
        if isinstance(node, cst.Subscript):
            if isinstance(node.value, cst.Name) and self.flow.device_keys(node.value.value):
                # (only its fields at the other keys the loop spells are on the host)
                return self._name_on_host(node.value.value) and not self.flow.device_field(node)
            return self.on_host(node.value)
        if isinstance(node, cst.Attribute):
            return self._attribute_on_host(node)
        if isinstance(node, (cst.BinaryOperation, cst.Comparison)):
            operands = [node.left, node.right] if isinstance(node, cst.BinaryOperation) else [
                node.left, *(c.comparator for c in node.comparisons)
            ]
            tensors = [o for o in operands if self.flow.kind_of(o).is_tensor]
            if tensors:
                return all(self.on_host(o) for o in tensors)
            # (Without a known tensor, an operand of unknown kind on the host: ``seg[b] + 1``
            # of a field of a host batch, whose kind the loader leaves unknown.)
            unknown = [o for o in operands if self.flow.kind_of(o) is Kind.UNKNOWN]
            return bool(unknown) and all(self.on_host(o) for o in unknown)
        if isinstance(node, cst.UnaryOperation):
            return self.on_host(node.expression)
        if isinstance(node, cst.IfExp):  # ``batch["H"] if "H" in batch else None``
            values = values_but_none(node)
            return bool(values) and all(self.on_host(v) for v in values)
        if isinstance(node, cst.Call):
            return self._call_on_host(node)
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            with self.flow.comprehension_bindings(node):
                return self.on_host(node.elt)  # ``[p.cpu() for p in ps]``
        if isinstance(node, (cst.List, cst.Tuple)):
            return self._elements_on_host(node.elements)
        return False

    def _name_on_host(self, name: str) -> bool:
        if self.flow.is_narrowed_to_host(name):
            return True  # the CPU branch of ``if x.is_cuda:``
        # The innermost scope that binds the name decides (closures see outer tensors).
        for depth in range(len(self.flow.scopes) - 1, -1, -1):
            scope = self.flow.scopes[depth]
            if scope.kind != "class" and name in scope.env:
                return name in scope.host or self._host_throughout(depth, name)
        return False

    def _elements_on_host(self, elements) -> bool:
        """A list or tuple display holding tensors, every one of them on the host, beside
        Python values only (an element of unknown kind may be a device tensor, unless it is
        known to be on the host: 1d-tokenizer's ``torch.cat([target, target])`` of a field of
        a host batch, whose kind the loader leaves unknown)."""
        found = False
        for element in elements:
            value = element.value
            kind = self.flow.kind_of(value)
            if kind is Kind.PYTHON and not isinstance(element, cst.StarredElement):
                continue
            if not (kind.is_tensor or kind in (Kind.TENSOR_SEQUENCE, Kind.UNKNOWN)) or not self.on_host(value):
                return False
            found = True
        return found

    def made_on_accelerator(self, node: cst.BaseExpression, factories: bool = True) -> bool:
        """A tensor visibly made on an accelerator: a torch factory with a ``device=`` that
        is not the CPU (unless not ``factories``), ``.cuda()``, ``.to(<accelerator device>)``
        (``"cuda"``, ``torch.device("cuda", i)``, ``torch.cuda.current_device()``, a name
        bound to one), or a name bound to a tensor moved so; methods that keep the device
        are looked through."""
        while isinstance(node, (cst.Call, cst.Subscript)):
            if isinstance(node, cst.Subscript):
                node = node.value
                continue
            func = node.func
            qualified = self.flow.imports.qualify(func)
            if qualified is not None and qualified.startswith("torch."):
                device = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "device"), None)
                return factories and device is not None and not _names_cpu(device)
            if not isinstance(func, cst.Attribute):
                return False
            method = func.attr.value
            if method in _ACCELERATOR_MOVES:
                return True
            if method == "to":
                return any(
                    (arg.keyword is None or arg.keyword.value == "device") and self.is_accelerator(arg.value)
                    for arg in [*node.args[:1], *(a for a in node.args[1:] if a.keyword is not None)]
                )
            if method not in _SAME_DEVICE:
                return False
            node = func.value
        return isinstance(node, cst.Name) and self._bound_on_accelerator(node.value)

    def is_accelerator(self, node: cst.BaseExpression) -> bool:
        """An accelerator device: ``"cuda"``, ``"cuda:1"``, ``f"cuda:{rank}"``,
        ``torch.device("cuda", i)``, ``torch.cuda.current_device()``, a name bound to one."""
        if isinstance(node, cst.SimpleString):
            value = node.evaluated_value
            return isinstance(value, str) and value.startswith(_ACCELERATOR_PREFIXES)
        if isinstance(node, cst.FormattedString):
            head = node.parts[0] if node.parts else None
            return isinstance(head, cst.FormattedStringText) and head.value.startswith(_ACCELERATOR_PREFIXES)
        if isinstance(node, cst.Name):
            return self._bound_on_accelerator(node.value)
        if isinstance(node, cst.Call):
            qualified = self.flow.imports.qualify(node.func)
            if qualified in _CURRENT_DEVICE:
                return True
            if qualified == "torch.device" and node.args and node.args[0].keyword is None:
                return self.is_accelerator(node.args[0].value)
        return False

    def _bound_on_accelerator(self, name: str) -> bool:
        """The innermost scope binding ``name`` bound it to an accelerator tensor or device."""
        scope = self.flow.binding_scope(name)
        return scope is not None and name in scope.accelerator
    def _host_throughout(self, depth: int, name: str) -> bool:
        """The project index found ``name`` holds a host tensor throughout the function of scope ``depth``."""
        if self.flow.scopes[depth].kind != "function" or not self.flow.facts.host_names:
            return False
        qualname = ".".join(scope.name for scope in self.flow.scopes[1 : depth + 1])
        return (qualname, name) in self.flow.facts.host_names

    def arguments_keep_host(self, call: cst.Call, condition: HostCondition) -> bool:
        """The call passes what keeps a helper's result on the host: host tensors or Python
        values for the tensors it computes from, ``"cpu"`` or nothing for its devices."""
        bound: dict[str, cst.BaseExpression] = {}
        positional = [arg for arg in call.args if arg.keyword is None]
        if any(arg.star for arg in call.args) or len(positional) > len(condition.params):
            return False
        for name, arg in zip(condition.params, positional):
            bound[name] = arg.value
        for arg in call.args:
            if arg.keyword is not None:
                bound[arg.keyword.value] = arg.value
        for names, on_host in ((condition.values, self._host_value), (condition.devices, self._host_device)):
            for name in names:
                value = bound.get(name)
                if value is None:
                    if name not in condition.defaults:
                        return False
                elif not on_host(value):
                    return False
        return True

    def _host_value(self, node: cst.BaseExpression) -> bool:
        return self.flow.kind_of(node) is Kind.PYTHON or (self.flow.kind_of(node).is_tensor and self.on_host(node))

    def _host_device(self, node: cst.BaseExpression) -> bool:
        """``"cpu"``, ``None`` (no default device is set), or the device of a host tensor."""
        if isinstance(node, cst.Name) and node.value == "None":
            return True
        return self._device_of_host_tensor(node) or _is_cpu(node)

    def _device_of_host_tensor(self, node: cst.BaseExpression) -> bool:
        """``h.device`` of a tensor ``h`` known to live in host memory."""
        return (
            isinstance(node, cst.Attribute) and node.attr.value == "device"
            and self.flow.kind_of(node.value).is_tensor and self.on_host(node.value)
        )

    def moves_to_host(self, call: cst.Call) -> bool:
        """``x.to("cpu")``, ``x.to(h.device)`` or ``x.to(h)`` with ``h`` a host tensor: the
        destination is host memory, so the move uploads nothing (and of a host tensor it
        copies nothing at all). pytorch-cifar100's stochastic depth compares
        ``torch.tensor(1).float().to(var.device)`` with ``var``, a CPU Bernoulli draw."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "to":
            return False
        destination = move_destination(call)
        if destination is None:
            return False
        if self.flow.kind_of(destination).is_tensor:  # ``x.to(other)``: other's device and dtype
            return self.on_host(destination)
        return _is_cpu(destination) or self._device_of_host_tensor(destination)

    def _attribute_on_host(self, node: cst.Attribute) -> bool:
        """``self.table`` created with ``device="cpu"`` (or ``.cpu()``) in the class, a view
        of a host tensor (``gt.data``, ``x.T``), or a field of a loader's host batch
        (``data.y``)."""
        if node.attr.value in _SAME_DEVICE_VIEWS and self.on_host(node.value):
            return True
        if (
            isinstance(node.value, cst.Name)
            and self.flow.is_loader_batch(node.value.value)
            and not self.flow.object_moved(node.value.value)
            and self.on_host(node.value)
        ):
            # ``data.y`` of a host batch the loop stores no device value in (PyG's ``Batch``,
            # a named tuple): the loader's collate built its fields, on the host.
            return True
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
            if short in HOST_SHAPE_FUNCTIONS:
                return True  # the shape of a device tensor, as a CPU int64 tensor
            device = next((a for a in node.args if a.keyword and a.keyword.value == "device"), None)
            if short in LIKE_FACTORIES:
                if device is not None:
                    return _is_cpu(device.value)
                return bool(node.args) and self.on_host(node.args[0].value)
            if short in FACTORY_FUNCTIONS or short == "from_numpy":
                return device is None or _is_cpu(device.value)
            if short in _NUMBER_ARITHMETIC and device is None:
                positional = [a.value for a in node.args if a.keyword is None and not a.star]
                if len(positional) == 2 and all(self.flow.kind_of(a) is Kind.PYTHON for a in positional):
                    return True  # ``torch.div(h, 2)`` of two Python numbers: a CPU tensor
            first = node.args[0].value if node.args else None
            return first is not None and self.on_host(first)
        func = node.func
        if self.loss_of_host_tensors(node):
            return True
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method == "cpu":
                return True
            if method == "to" and self.casts_only(node):
                return self.on_host(func.value)  # ``torch.tensor(h).to(torch.int64)``: still there
            if method in _MOVES:
                # Spelled as the CPU only: ``.to(labels.device)`` of host labels lands on the
                # host too, but "labels is a host tensor" may be wrong (``torch.as_tensor`` of a
                # CUDA tensor keeps it there), and the read after it then carries the sync.
                return any(_is_cpu(a.value) for a in node.args)
            return self.on_host(func.value)
        return False

    def casts_only(self, call: cst.Call) -> bool:
        """``x.to(torch.int64)``, ``x.to(dtype=torch.half)``, ``x.to(y.dtype)``: a cast, which
        keeps ``x`` where it is (not ``x.to(y)`` or ``x.to(other=y)``, which move it to
        ``y``'s device); so does a ``.to`` that names no destination at all
        (``x.to(memory_format=torch.channels_last)``, ``x.to(non_blocking=True)``)."""
        if any(arg.keyword is not None and arg.keyword.value in ("device", "other") for arg in call.args):
            return False
        positional = [arg.value for arg in call.args if arg.keyword is None]  # (``*args``, ``**kwargs`` too)
        if not positional:
            return True
        first = positional[0]
        if isinstance(first, cst.Attribute) and first.attr.value == "dtype":
            return True
        qualified = self.flow.imports.qualify(first)
        return qualified is not None and qualified.startswith("torch.") and qualified[len("torch."):] in _DTYPES

    def loss_of_host_tensors(self, call: cst.Call) -> bool:
        """``criterion(pred.cpu(), target.cpu())``: a loss (by its name: ``criterion``,
        ``self.loss_fn``, ``dice_loss``) given tensors, all on the host, computes on the
        host."""
        name = call.func.value if isinstance(call.func, cst.Name) else (
            call.func.attr.value if isinstance(call.func, cst.Attribute) else None)
        if name is None or not is_loss_function(name) or self._returns_known(call.func):
            return False
        if any(arg.star for arg in call.args):
            return False
        # Every argument that may be a tensor: a 0-dim CPU tensor (``torch.tensor(alpha)``)
        # mixes freely with CUDA ones, so an ``outputs["logits"]`` of unknown kind counts.
        kinds = [self.flow.kind_of(arg.value) for arg in call.args]
        if not any(kind.is_tensor for kind in kinds):
            return False
        return all(kind is Kind.PYTHON or self.on_host(arg.value) for arg, kind in zip(call.args, kinds))

    def _returns_known(self, func: cst.BaseExpression) -> bool:
        """``dice_loss`` or ``self.compute_loss`` defined in this file and found to return
        tensors: what it returns is its own analysis's say, not its name's (it may move its
        inputs to the device)."""
        if isinstance(func, cst.Name):
            return self.flow.function_return(func.value).is_tensor
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            return self.flow.method_return(func.attr.value).is_tensor
        return False


#: Tensor attributes that are tensors on the device of their owner, and the fields of what
#: a reduction over a dimension returns (``x.cpu().max(-1).indices``: ``torch.return_types``
#: tuples hold tensors where the input was).
_SAME_DEVICE_VIEWS = frozenset({"data", "T", "mT", "H", "mH", "real", "imag", "values", "indices"})


#: The torch functions that take two Python numbers (anything else must be a tensor,
#: so a Python value there is a number) and return a CPU tensor of them.
_NUMBER_ARITHMETIC = frozenset(
    {"add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide"}
)


#: A device by its name: ``device``, ``self.device``, ``args.device``, ``local_device``, ``dev``,
#: and the GPU indices ``.to()`` takes for one: ``device_id`` (open_flamingo), ``args.gpu``,
#: ``gpu_id``, ``local_rank``; not ``n_gpu``, ``num_gpu`` (counts) nor ``use_gpu`` (a flag).
_DEVICE_NAME = re.compile(r"(^|[._])(\w*_)?(device|dev|device_id|gpu_id|local_rank)$|(^|\.)gpu$")


def moves_to_a_device(call: cst.Call) -> bool:
    """``x.cuda()``, ``x.to(device)``, ``x.to(self.device, non_blocking=True)``: a copy to a
    device that is not (by its spelling) the CPU. ``x.to(torch.float16)`` is a cast, and
    ``x.to(device)`` of a name that says nothing (``x.to(target)``) proves nothing."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    if func.attr.value in _ACCELERATOR_MOVES:
        return True
    if func.attr.value != "to":
        return False
    device = move_destination(call)
    return device is not None and is_device_argument(device)


def move_destination(call: cst.Call) -> cst.BaseExpression | None:
    """What ``x.to(...)`` moves to: its ``device=``, else its first positional argument."""
    device = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
    if device is None and call.args and call.args[0].keyword is None:
        device = call.args[0].value
    return device


def values_but_none(node: cst.IfExp) -> list[cst.BaseExpression]:
    """The branches of a conditional expression other than ``None``: ``batch["H"]`` of
    ``batch["H"] if "H" in batch else None``."""
    return [value for value in (node.body, node.orelse) if not (isinstance(value, cst.Name) and value.value == "None")]


def is_device_argument(node: cst.BaseExpression) -> bool:
    """A device that is not (by its spelling) the CPU: ``"cuda:0"``, ``device``,
    ``self.device``, ``args.device``."""
    if _names_cpu(node):
        return False
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return isinstance(value, str) and value.startswith(_ACCELERATOR_PREFIXES)
    return bool(_DEVICE_NAME.search(dotted_name(node) or ""))


def _names_cpu(node: cst.BaseExpression) -> bool:
    """A device that is (or may be) the CPU: ``"cpu"``, ``None``, ``cpu_device``, ``args.cpu``."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return not isinstance(value, str) or "cpu" in value
    if isinstance(node, cst.Name) and node.value == "None":
        return True
    return "cpu" in (dotted_name(node) or "").lower()
