"""Helpers whose tensors come back in host memory when their inputs are on the host.

``cumsum(x)`` built with ``x.new_empty(...)``, ``sample(n, k, device=None)`` drawing
with ``torch.randperm(..., device=device)``, ``time_shift(mu, sigma, t)`` doing
arithmetic on ``t``: none of them moves data to a device of its own, so what they
return lives where their arguments say. :func:`host_condition` finds, for one
function, the parameters its result's residency depends on:

* *values*: tensors the result is computed from (a host argument keeps it on the
  host; a Python number does too);
* *devices*: parameters passed as ``device=`` (or to ``.to()``): ``"cpu"``, or
  ``None`` (no default device is set), keeps it on the host.

A call site then knows the result is a host tensor when its arguments for those
parameters are (the analysis checks that, see ``FlowState.returns_host_tensor``).
Only positive evidence counts: anything the walk does not understand (a project
helper, an attribute of ``self``, a loop variable) makes the answer "unknown".
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from synclint.project.scopes import NESTED_SCOPES, child_nodes, dotted_name, parameter_defaults, walk_nodes

#: Factories that build a tensor from Python data: host without ``device=``.
_FACTORIES = frozenset(
    {"tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "rand", "randn", "randint",
     "randperm", "arange", "linspace", "logspace", "eye", "Tensor", "LongTensor", "FloatTensor", "BoolTensor",
     "IntTensor", "ByteTensor", "frombuffer", "asarray", "normal"}
)
_LIKE = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like"})
#: Moves to an accelerator: never host.
_TO_DEVICE = frozenset({"cuda", "xpu", "mps", "npu"})
#: Modules of host math: their results are Python numbers or host arrays.
_HOST_MODULES = ("math.", "np.", "numpy.", "random.")
_PYTHON_BUILTINS = frozenset({"int", "float", "len", "min", "max", "abs", "round", "sum", "bool", "range"})
_TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "real", "imag"})
_METADATA = frozenset({"shape", "dtype", "ndim", "is_cuda", "requires_grad", "layout"})
_PYTHON_ANNOTATIONS = frozenset({"int", "float", "bool", "str", "complex"})


class HostCondition(NamedTuple):
    """The parameters a function's returned tensors take their residency from."""

    params: tuple[str, ...]  # positional order, without ``self``/``cls``
    values: tuple[str, ...]  # must be host tensors or Python values at the call site
    devices: tuple[str, ...]  # must be ``"cpu"`` or ``None`` at the call site
    #: Parameters whose default keeps the result on the host when the call omits them.
    defaults: tuple[str, ...]


class _Unknown(Exception):
    """The expression's residency is not decided by the parameters alone."""


def host_condition(node: ast.FunctionDef | ast.AsyncFunctionDef) -> HostCondition | None:
    """The parameters the function's returned tensors take their residency from, or None
    when some return is not a tensor computed from its parameters and host data alone."""
    args = node.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    params = [a.arg for a in every if a.arg not in ("self", "cls")]
    python = {a.arg for a in every if _python_annotation(a.annotation)}
    walker = _Walker({name: frozenset() if name in python else frozenset({("value", name)}) for name in params})
    walker.params = set(params)
    returns = walker.collect(node.body)
    if not returns:
        return None
    needed: set[tuple[str, str]] = set()
    try:
        for value in returns:
            if value is None or isinstance(value, (ast.Constant, ast.Tuple, ast.List, ast.Dict)):
                return None  # not (only) a tensor: ``return None``, a tuple of parts
            needed |= walker.condition(value)
    except _Unknown:
        return None
    if not needed:
        return None  # unconditionally host: ``returns_host`` says so already
    defaults = _host_defaults(args)
    values = tuple(sorted(name for kind, name in needed if kind == "value"))
    devices = tuple(sorted(name for kind, name in needed if kind == "device"))
    positional = [a.arg for a in [*args.posonlyargs, *args.args] if a.arg not in ("self", "cls")]
    return HostCondition(tuple(positional), values, devices, tuple(sorted(defaults)))


def _python_annotation(annotation: ast.AST | None) -> bool:
    if isinstance(annotation, ast.Name):
        return annotation.id in _PYTHON_ANNOTATIONS
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value in _PYTHON_ANNOTATIONS
    return False


def _host_defaults(args: ast.arguments) -> set[str]:
    """Parameters whose default is ``None`` or a constant (a host device, a Python number)."""
    return {param for param, default in parameter_defaults(args).items() if isinstance(default, ast.Constant)}


class _Walker:
    def __init__(self, params: dict[str, frozenset[tuple[str, str]]]) -> None:
        #: name -> what it depends on; None: not decided by the parameters.
        self.env: dict[str, frozenset[tuple[str, str]] | None] = dict(params)
        self.params: set[str] = set()

    def collect(self, body: list[ast.stmt]) -> list[ast.AST | None]:
        """Bind the body's names in source order (every binding counts) and return the
        values of its ``return`` statements."""
        returns: list[ast.AST | None] = []
        for statement in body:
            self._statement(statement, returns)
        return returns

    def _statement(self, node: ast.AST, returns: list[ast.AST | None]) -> None:
        if isinstance(node, NESTED_SCOPES):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.env[node.name] = None
            return
        if isinstance(node, ast.Return):
            returns.append(node.value)
            return
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind(target, node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            self._bind(node.target, ast.BinOp(left=ast.Name(id=node.target.id, ctx=ast.Load()), op=node.op,
                                              right=node.value))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._bind(node.target, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self._unknown(node.target)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    self._unknown(item.optional_vars)
        elif isinstance(node, ast.NamedExpr):
            self._bind(node.target, node.value)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self.env[node.name] = None
        for child in child_nodes(node):
            if isinstance(child, (ast.stmt, ast.excepthandler)):
                self._statement(child, returns)

    def _bind(self, target: ast.AST, value: ast.AST) -> None:
        if not isinstance(target, ast.Name):
            self._unknown(target)
            return
        previous = self.env.get(target.id, frozenset())
        try:
            found = self.condition(value)
        except _Unknown:
            found = None
        # Every binding counts: the name is host only if each value it may hold is.
        self.env[target.id] = None if previous is None or found is None else previous | found

    def _unknown(self, target: ast.AST) -> None:
        for node in walk_nodes(target):
            if isinstance(node, ast.Name):
                self.env[node.id] = None

    # -- expressions -------------------------------------------------------------------------
    def condition(self, node: ast.AST) -> frozenset[tuple[str, str]]:
        """What ``node`` being on the host depends on; raises :class:`_Unknown`."""
        if isinstance(node, ast.Constant):
            return frozenset()
        if isinstance(node, ast.Name):
            found = self.env.get(node.id)
            if found is None:
                raise _Unknown
            return found
        if isinstance(node, ast.BinOp):
            return self.condition(node.left) | self.condition(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.condition(node.operand)
        if isinstance(node, ast.Subscript):
            return self.condition(node.value)
        if isinstance(node, ast.IfExp):
            return self.condition(node.body) | self.condition(node.orelse)
        if isinstance(node, (ast.List, ast.Tuple)):
            return frozenset().union(*(self.condition(e) for e in node.elts))
        if isinstance(node, ast.Attribute):
            if node.attr in _METADATA:
                return frozenset()
            if node.attr == "device":
                return self.condition(node.value)  # a host tensor's device is the host
            if node.attr in _TENSOR_ATTRIBUTES:
                return self.condition(node.value)
            raise _Unknown
        if isinstance(node, ast.Call):
            return self._call(node)
        raise _Unknown

    def _arguments(self, node: ast.Call, skip: tuple[str, ...] = ()) -> frozenset[tuple[str, str]]:
        found: frozenset[tuple[str, str]] = frozenset()
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise _Unknown
            found |= self.condition(arg)
        for keyword in node.keywords:
            if keyword.arg is None:
                raise _Unknown
            if keyword.arg not in skip:
                found |= self.condition(keyword.value)
        return found

    def _device(self, node: ast.AST) -> frozenset[tuple[str, str]]:
        """What a ``device=`` value being the host depends on."""
        if isinstance(node, ast.Constant):
            if node.value is None or (isinstance(node.value, str) and node.value.startswith("cpu")):
                return frozenset()
            raise _Unknown
        if isinstance(node, ast.Name):
            found = self.env.get(node.id)
            if found is None:
                raise _Unknown
            if node.id in self.params and found == {("value", node.id)}:
                return frozenset({("device", node.id)})  # the call site's device decides
            return found  # ``device = x.device``: x's residency decides
        if isinstance(node, ast.Attribute) and node.attr == "device":
            return self.condition(node.value)  # ``x.device`` of a host tensor
        if isinstance(node, ast.Call) and dotted_name(node.func) in ("torch.device",) and node.args:
            return self._device(node.args[0])
        raise _Unknown

    def _call(self, node: ast.Call) -> frozenset[tuple[str, str]]:
        func = node.func
        name = dotted_name(func) or ""
        device = next((k.value for k in node.keywords if k.arg == "device"), None)
        if name.startswith("torch."):
            short = name.rsplit(".", 1)[1]
            if short in _FACTORIES:
                sizes = self._arguments(node, skip=("device", "dtype", "generator", "out", "requires_grad"))
                return sizes | (self._device(device) if device is not None else frozenset())
            if short in _LIKE:
                return self._arguments(node, skip=("device", "dtype")) | (
                    self._device(device) if device is not None else frozenset()
                )
            if short == "device" or name.count(".") > 1 and not name.startswith(("torch.nn.functional.", "torch.linalg.",
                                                                                     "torch.special.", "torch.fft.")):
                raise _Unknown
            if device is not None:
                raise _Unknown
            return self._arguments(node, skip=("dtype", "out"))
        if name.startswith(_HOST_MODULES) or name in _PYTHON_BUILTINS:
            return self._arguments(node)
        if isinstance(func, ast.Attribute):
            method = func.attr
            receiver = self.condition(func.value)
            if method in ("cpu", "numpy", "tolist", "item"):
                return frozenset()
            if method in _TO_DEVICE:
                raise _Unknown
            if method == "to":
                found = receiver
                for arg in node.args:
                    if dotted_name(arg) and (dotted_name(arg) or "").startswith("torch."):
                        continue  # a dtype: ``.to(torch.float)``
                    found |= self._device(arg)
                for keyword in node.keywords:
                    if keyword.arg == "device":
                        found |= self._device(keyword.value)
                return found
            if device is not None:
                return self._arguments(node, skip=("device", "dtype")) | receiver | self._device(device)
            return receiver | self._arguments(node, skip=("dtype",))
        raise _Unknown
