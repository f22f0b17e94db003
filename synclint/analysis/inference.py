"""Infer the :class:`Kind` of an expression from the current scope's bindings.

Bindings are recorded in source order by :class:`synclint.analysis.flow.FlowState`
as the single traversal walks the module, so at a use site the environment
reflects the assignments that came before it (branches are merged
pessimistically: a later assignment simply overrides).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from synclint.analysis.imports import NUMPY_ROOTS, PANDAS_ROOTS, dotted_name
from synclint.analysis.kinds import (
    ARRAY_METHODS,
    BOOL_DTYPES,
    BOOL_FUNCTIONS,
    BOOL_METHODS,
    COMPARISON_METHODS,
    CONTAINER_METHODS,
    DTYPE_PRESERVING_METHODS,
    FACTORY_FUNCTIONS,
    HOST_SHAPE_FUNCTIONS,
    INT_DTYPES,
    INT_FUNCTIONS,
    INT_METHODS,
    NON_TENSOR_ATTRIBUTES,
    NOT_NUMPY_METHODS,
    NON_TENSOR_METHODS,
    SEQUENCE_FUNCTIONS,
    TENSOR_ATTRIBUTES,
    TENSOR_ONLY_METHODS,
    VALUES_INDICES_FUNCTIONS,
    Kind,
    classify_torch_callable,
    join,
)
from synclint.analysis.tensor_methods import TENSOR_ATTRIBUTE_NAMES

if TYPE_CHECKING:
    from synclint.analysis.flow import FlowState

_PYTHON_LITERALS = (
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
)
_PYTHON_BUILTINS = frozenset(
    {"len", "int", "float", "bool", "str", "range", "isinstance", "hasattr", "getattr",
     "round", "repr", "format", "type", "id", "hash", "ord", "chr", "enumerate", "zip",
     "sorted", "reversed", "dict", "set", "frozenset", "any", "all", "callable"}
)
_LIKE_FACTORIES = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like"})
_ELEMENTWISE_LOGICAL_OPS = (cst.BitAnd, cst.BitOr, cst.BitXor)
#: Method-name prefixes of predicates and getters: they return Python values
#: (``x.is_conj()``, ``node.has_aliasing_or_mutation()``, ``buf.get_dtype()``; private
#: ones too: ``t._is_view()``).
_PREDICATE_PREFIXES = ("is_", "has_", "get_", "are_")
#: Predicate methods no tensor has (``instances.has("gt_masks")``): a container's
#: membership test, a Python boolean.
_PREDICATES = frozenset({"has", "exists", "contains"})
#: Array methods no Python container has: on an unknown receiver in a file whose
#: only array library is torch, the receiver is a tensor.


def is_shape(node: cst.BaseExpression) -> bool:
    """``x.shape``, ``x.size()``, ``x.stride()``, or a slice of one (``x.shape[:2]``):
    a tuple of Python ints, whatever ``x`` is."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Slice):
        return is_shape(node.value)
    if isinstance(node, cst.Attribute):
        return node.attr.value == "shape"
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in ("size", "stride")
    )


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and arg.star == ""]


def non_blocking_argument(call: cst.Call) -> cst.BaseExpression | None:
    """What a copy passes as ``non_blocking``, by keyword or by position, or None.
    ``Tensor.cuda(device, non_blocking)`` takes it second; ``Tensor.to(device, dtype,
    non_blocking, copy)`` third when a device comes first, and ``to(other, non_blocking,
    copy)`` second after a tensor (``x.to(cpu_buffer, True)``): a literal bool second is
    that flag, where a dtype would stand (the ``copy`` flag after it says nothing)."""
    flag = keyword(call, "non_blocking")
    if flag is not None:
        return flag.value
    if not isinstance(call.func, cst.Attribute):
        return None
    args = positional(call)
    method = call.func.attr.value
    if method == "cuda":
        return args[1].value if len(args) >= 2 else None
    if method != "to":
        return None
    if len(args) >= 2 and isinstance(args[1].value, cst.Name) and args[1].value.value in ("True", "False"):
        return args[1].value
    return args[2].value if len(args) >= 3 else None


def asks_for(flag: cst.BaseExpression | None) -> bool:
    """A ``non_blocking`` flag passed (see :func:`non_blocking_argument`) other than a literal
    ``False``: a computed flag (``non_blocking=pinned``) is the code's own per-call choice."""
    return flag is not None and not (isinstance(flag, cst.Name) and flag.value == "False")


def asks_not_to_block(call: cst.Call) -> bool:
    """The copy passes ``non_blocking`` (by keyword or position), and not as ``False``."""
    return asks_for(non_blocking_argument(call))


def is_true(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


class KindInference:
    def __init__(self, flow: FlowState) -> None:
        self.flow = flow
        self.imports = flow.imports

    # -- public ---------------------------------------------------------------
    def kind_of(self, node: cst.BaseExpression) -> Kind:
        method = getattr(self, f"_kind_{type(node).__name__}", None)
        if method is None:
            if isinstance(node, _PYTHON_LITERALS):
                return Kind.PYTHON
            return Kind.UNKNOWN
        return method(node)

    def dtype_kind(self, node: cst.BaseExpression | None) -> Kind | None:
        """BOOL_TENSOR / INT_TENSOR for a ``dtype=`` value, else None."""
        if node is None:
            return None
        qualified = self.imports.qualify(node) or dotted_name(node)
        if qualified in BOOL_DTYPES or (isinstance(node, cst.Name) and node.value == "bool"):
            return Kind.BOOL_TENSOR
        if qualified in INT_DTYPES:
            return Kind.INT_TENSOR
        if qualified is not None and qualified.startswith("torch."):
            return Kind.TENSOR
        return None

    # -- leaves ------------------------------------------------------------------
    def _kind_Name(self, node: cst.Name) -> Kind:
        if node.value in ("True", "False", "None"):
            return Kind.PYTHON
        return self.flow.lookup(node.value)

    def _kind_Attribute(self, node: cst.Attribute) -> Kind:
        qualified = self.imports.qualify(node)
        if qualified is not None:
            if qualified.startswith("torch."):
                return Kind.PYTHON  # dtypes, devices, constants
            return Kind.UNKNOWN
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            return self.flow.self_attribute(node.attr.value)
        base = self.kind_of(node.value)
        attr = node.attr.value
        if base.is_tensor:
            if attr in NON_TENSOR_ATTRIBUTES:
                return Kind.PYTHON
            if attr == "indices":
                return Kind.INT_TENSOR
            if attr in TENSOR_ATTRIBUTES:
                return Kind.TENSOR if attr not in ("T", "mT", "data") else base
            return Kind.UNKNOWN
        if base is Kind.UNKNOWN and attr == "grad":
            return Kind.TENSOR  # ``p.grad``: only tensors (parameters) have gradients; no array does
        if base is Kind.NUMPY and attr in ("shape", "ndim", "size", "dtype"):
            return Kind.PYTHON
        if base.is_host_array:
            return base
        return Kind.UNKNOWN

    def _kind_Tuple(self, node: cst.Tuple) -> Kind:
        return self._sequence(element.value for element in node.elements)

    def _kind_List(self, node: cst.List) -> Kind:
        return self._sequence(element.value for element in node.elements)

    def _sequence(self, values) -> Kind:
        kinds = [self.kind_of(value) for value in values]
        if any(kind.is_tensor for kind in kinds):
            return Kind.TENSOR_SEQUENCE
        if all(kind is Kind.PYTHON for kind in kinds):
            return Kind.PYTHON
        return Kind.UNKNOWN

    def _kind_Dict(self, node: cst.Dict) -> Kind:
        return Kind.PYTHON

    def _kind_ListComp(self, node: cst.ListComp) -> Kind:
        with self.flow.comprehension_bindings(node):
            element = self.kind_of(node.elt)
        if element.is_tensor:
            return Kind.TENSOR_SEQUENCE
        return Kind.PYTHON if element is Kind.PYTHON else Kind.UNKNOWN

    _kind_GeneratorExp = _kind_ListComp

    def _kind_NamedExpr(self, node: cst.NamedExpr) -> Kind:
        return self.kind_of(node.value)

    def _kind_IfExp(self, node: cst.IfExp) -> Kind:
        body, orelse = self.kind_of(node.body), self.kind_of(node.orelse)
        if body is orelse:
            return body
        if body.is_tensor and orelse.is_tensor:
            return Kind.TENSOR
        return Kind.UNKNOWN

    # -- operators -----------------------------------------------------------------
    def _kind_Comparison(self, node: cst.Comparison) -> Kind:
        if any(
            isinstance(target.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn))
            for target in node.comparisons
        ):
            return Kind.PYTHON
        if len(node.comparisons) == 1 and _against_none(node):
            # ``mask != None``: ``Tensor.__eq__``/``__ne__`` give ``NotImplemented`` for
            # ``None`` (a TypeError they wrap), so Python compares identities: a bool, no op.
            return Kind.PYTHON
        kinds = [self.kind_of(node.left)] + [self.kind_of(t.comparator) for t in node.comparisons]
        if any(kind.is_tensor for kind in kinds):
            return Kind.BOOL_TENSOR
        if Kind.NUMPY in kinds:
            return Kind.NUMPY
        if Kind.PANDAS in kinds:
            return Kind.PANDAS
        if all(kind is Kind.PYTHON for kind in kinds):
            return Kind.PYTHON
        return Kind.UNKNOWN

    def _kind_UnaryOperation(self, node: cst.UnaryOperation) -> Kind:
        if isinstance(node.operator, cst.Not):
            return Kind.PYTHON
        operand = self.kind_of(node.expression)
        if isinstance(node.operator, cst.BitInvert):
            return operand
        return Kind.TENSOR if operand is Kind.BOOL_TENSOR else operand

    def _kind_BinaryOperation(self, node: cst.BinaryOperation) -> Kind:
        left, right = self.kind_of(node.left), self.kind_of(node.right)
        if isinstance(node.operator, _ELEMENTWISE_LOGICAL_OPS):
            if Kind.BOOL_TENSOR in (left, right) and (left.is_tensor or right.is_tensor):
                return Kind.BOOL_TENSOR
        if isinstance(node.operator, cst.MatrixMultiply) and (left.is_tensor or right.is_tensor):
            return Kind.TENSOR
        return join(left, right)

    def _kind_BooleanOperation(self, node: cst.BooleanOperation) -> Kind:
        left, right = self.kind_of(node.left), self.kind_of(node.right)
        return Kind.PYTHON if left is right is Kind.PYTHON else Kind.UNKNOWN

    # -- subscripts ------------------------------------------------------------------
    def _kind_Subscript(self, node: cst.Subscript) -> Kind:
        if isinstance(node.value, cst.Call):
            if self.values_indices_call(node.value):
                index = self.single_index(node)
                if isinstance(index, cst.Integer):
                    return Kind.INT_TENSOR if index.value == "1" else Kind.TENSOR
        base = self.kind_of(node.value)
        if base.is_tensor:
            return base
        if base is Kind.PYTHON and is_shape(node.value):
            return Kind.PYTHON  # x.shape[0], x.size()[1]
        if base is Kind.TENSOR_TUPLE:
            return Kind.INT_TENSOR
        if base is Kind.TENSOR_SEQUENCE:
            index = self.single_index(node)
            return Kind.TENSOR_SEQUENCE if isinstance(index, cst.Slice) else Kind.TENSOR
        if base is Kind.TENSOR_DICT:
            return Kind.TENSOR
        if base is Kind.TENSOR_DICT_SEQUENCE:
            index = self.single_index(node)
            return Kind.TENSOR_DICT_SEQUENCE if isinstance(index, cst.Slice) else Kind.TENSOR_DICT
        if base.is_host_array:
            return base
        if base is Kind.UNKNOWN and len(node.slice) >= 2 and self.imports.torch_only:
            return Kind.TENSOR  # ``boxes[:, 2:]``: multi-dimensional indexing of an array
        return Kind.UNKNOWN

    @staticmethod
    def single_index(node: cst.Subscript) -> cst.BaseSlice | cst.BaseExpression | None:
        if len(node.slice) != 1:
            return None
        element = node.slice[0].slice
        return element.value if isinstance(element, cst.Index) else element

    # -- calls -------------------------------------------------------------------------
    def values_indices_call(self, call: cst.Call) -> bool:
        """``torch.sort(x)``, ``x.max(dim=1)``, ...: returns (values, indices)."""
        qualified = self.imports.qualify(call.func)
        if qualified is not None:
            if not qualified.startswith("torch."):
                return False
            name, first_extra = qualified.rsplit(".", 1)[1], 1  # torch.max(x, dim)
        elif isinstance(call.func, cst.Attribute) and self.kind_of(call.func.value).is_tensor:
            name, first_extra = call.func.attr.value, 0  # x.max(dim)
        else:
            return False
        if name not in VALUES_INDICES_FUNCTIONS:
            return False
        if name not in ("max", "min", "median", "mode"):
            return True
        # Without ``dim`` these reduce to one tensor; with a tensor they are elementwise.
        if keyword(call, "dim") is not None:
            return True
        extra = positional(call)[first_extra:]
        return bool(extra) and not self.kind_of(extra[0].value).is_tensor

    def _kind_Call(self, node: cst.Call) -> Kind:
        if isinstance(node.func, cst.Attribute) and self.kind_of(node.func) is Kind.MODULE:
            return Kind.TENSOR  # self.criterion(pred, target)
        qualified = self.imports.qualify(node.func)
        if qualified is not None:
            return self._qualified_call_kind(qualified, node)
        func = node.func
        if isinstance(func, cst.Name):
            return self._builtin_call_kind(func.value, node)
        if isinstance(func, cst.Attribute):
            return self._method_call_kind(func, node)
        return Kind.UNKNOWN

    def _builtin_call_kind(self, name: str, node: cst.Call) -> Kind:
        callee = self.flow.lookup(name)
        if callee is Kind.MODULE:
            return Kind.TENSOR  # calling an nn.Module (a loss, a layer)
        returned = self.flow.function_return(name)
        if returned is not Kind.UNKNOWN:
            return returned  # a function of this module: ``-> Tensor`` or what it returns
        if name in ("abs", "sum", "max", "min") and node.args:
            kinds = [self.kind_of(arg.value) for arg in node.args if arg.keyword is None]
            if any(k.is_tensor or k is Kind.TENSOR_SEQUENCE for k in kinds):
                return Kind.TENSOR
            if kinds and all(k is Kind.PYTHON for k in kinds):
                return Kind.PYTHON
        if name in ("list", "tuple") and node.args:
            first = self.kind_of(node.args[0].value)
            return Kind.TENSOR_SEQUENCE if first in (Kind.TENSOR_SEQUENCE, Kind.TENSOR) else Kind.UNKNOWN
        if name in _PYTHON_BUILTINS:
            return Kind.PYTHON
        return Kind.UNKNOWN

    def _qualified_call_kind(self, qualified: str, node: cst.Call) -> Kind:
        root = qualified.split(".", 1)[0]
        if root in NUMPY_ROOTS or qualified.startswith("jax.numpy."):
            # ``np.array(scores, dtype=object)`` keeps the objects it is given (CUDA tensors,
            # maybe): not an array of host numbers.
            return Kind.UNKNOWN if any(_object_dtype(arg) for arg in node.args if arg.keyword is not None) else Kind.NUMPY
        if root in PANDAS_ROOTS:
            return Kind.PANDAS
        if root != "torch":
            return Kind.UNKNOWN
        short = qualified.rsplit(".", 1)[1]
        if short in HOST_SHAPE_FUNCTIONS:
            return Kind.INT_TENSOR  # ``torch.onnx.operators.shape_as_tensor(x)``
        verdict = classify_torch_callable(qualified)
        if verdict == "module":
            return Kind.MODULE
        if verdict == "python":
            return Kind.PYTHON
        if verdict == "unknown" and short not in FACTORY_FUNCTIONS:
            return Kind.UNKNOWN
        dtype = self.dtype_kind(keyword(node, "dtype").value if keyword(node, "dtype") else None)
        args = positional(node)
        if short == "where":
            return Kind.TENSOR_TUPLE if len(args) == 1 and not node.args[0].keyword else Kind.TENSOR
        if short == "nonzero":
            as_tuple = keyword(node, "as_tuple")
            return Kind.TENSOR_TUPLE if as_tuple and is_true(as_tuple.value) else Kind.INT_TENSOR
        if short in _LIKE_FACTORIES:
            if dtype is not None:
                return dtype
            return self.kind_of(args[0].value) if args and self.kind_of(args[0].value).is_tensor else Kind.TENSOR
        if short in FACTORY_FUNCTIONS:
            if dtype is not None:
                return dtype
            if short in ("BoolTensor",):
                return Kind.BOOL_TENSOR
            if short in ("LongTensor", "IntTensor", "ByteTensor", "randint", "randperm"):
                return Kind.INT_TENSOR
            if short == "arange" and not any(isinstance(a.value, cst.Float) for a in args):
                return Kind.INT_TENSOR
            if short in ("tensor", "as_tensor") and args and self._bool_literal(args[0].value):
                return Kind.BOOL_TENSOR
            return Kind.TENSOR
        if dtype is not None:
            return dtype
        if short in BOOL_FUNCTIONS:
            return Kind.BOOL_TENSOR
        if short in INT_FUNCTIONS:
            return Kind.INT_TENSOR
        if short in SEQUENCE_FUNCTIONS:
            return Kind.TENSOR_SEQUENCE
        if short == "unique" and any(
            keyword(node, k) is not None for k in ("return_inverse", "return_counts")
        ):
            return Kind.TENSOR_SEQUENCE
        if short in ("cat", "concat", "concatenate", "stack") and args:
            inner = args[0].value
            if isinstance(inner, (cst.List, cst.Tuple)) and inner.elements:
                first = self.kind_of(inner.elements[0].value)
                if first.is_tensor:
                    return first
            return Kind.TENSOR
        return Kind.TENSOR

    @staticmethod
    def _bool_literal(node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name):
            return node.value in ("True", "False")
        if isinstance(node, (cst.List, cst.Tuple)) and node.elements:
            return all(KindInference._bool_literal(e.value) for e in node.elements)
        return False

    def _method_call_kind(self, func: cst.Attribute, node: cst.Call) -> Kind:
        method = func.attr.value
        if method.lstrip("_").startswith(_PREDICATE_PREFIXES) or method in _PREDICATES:
            return Kind.PYTHON  # ``x.is_conj()``, ``v.has_aliasing()``, ``t.get_dtype()``: Python values
        if isinstance(func.value, cst.Name) and func.value.value == "self":
            returned = self.flow.method_return(method)
            if returned is not Kind.UNKNOWN:
                return returned
        receiver = self.kind_of(func.value)
        on_self = isinstance(func.value, cst.Name) and func.value.value in ("self", "cls")
        if method == "numpy" and not node.args and receiver is Kind.UNKNOWN and not on_self and self._numpy_at_most():
            # Only a tensor has ``.numpy()`` (among torch and numpy), and it gives an array:
            # faster-rcnn's ``dets = dets.numpy()`` makes ``dets`` an array, whatever it was.
            return Kind.NUMPY
        if receiver is Kind.UNKNOWN and not on_self and (
            method in TENSOR_ONLY_METHODS
            or (method in COMPARISON_METHODS and not self.imports.imports_pandas)
            or (method in ARRAY_METHODS and self.imports.torch_only)
            or (method in NOT_NUMPY_METHODS and self._numpy_at_most())
        ):
            # only tensors have this method (here); ``self.scatter(...)`` is the class's own method
            receiver = Kind.TENSOR
        if receiver is Kind.MODULE:
            return Kind.MODULE if method in ("to", "cuda", "cpu", "train", "eval", "half", "float") else Kind.UNKNOWN
        if receiver.is_tensor:
            return self._tensor_method_kind(receiver, method, node)
        if receiver is Kind.TENSOR_SEQUENCE and method in ("index", "count"):
            return Kind.PYTHON
        if receiver is Kind.TENSOR_DICT:
            return {"get": Kind.TENSOR, "values": Kind.TENSOR_SEQUENCE, "pop": Kind.TENSOR}.get(method, Kind.UNKNOWN)
        if receiver.is_host_array:
            return Kind.PYTHON if method in ("tolist", "item") else receiver
        return Kind.UNKNOWN

    def _numpy_at_most(self) -> bool:
        """Torch, maybe numpy, and no other array library (pandas, TensorFlow, JAX)."""
        imports = self.imports
        return imports.imports_torch and not (imports.imports_pandas or imports.imports_other_tensors)

    def _tensor_method_kind(self, receiver: Kind, method: str, node: cst.Call) -> Kind:
        if method in CONTAINER_METHODS:
            return Kind.UNKNOWN  # the "tensor" was a guess: it is a container
        if method not in TENSOR_ATTRIBUTE_NAMES:
            # No tensor has it (``state["tracker"].insert_observation(x)`` on an optimizer
            # state entry): the "tensor" was a guess, and nothing says what this returns.
            return Kind.UNKNOWN
        if method in NON_TENSOR_METHODS:
            return Kind.NUMPY if method == "numpy" else Kind.PYTHON
        if method == "nonzero":
            as_tuple = keyword(node, "as_tuple")
            return Kind.TENSOR_TUPLE if as_tuple and is_true(as_tuple.value) else Kind.INT_TENSOR
        if method in ("to", "type", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"):
            dtype = keyword(node, "dtype")
            candidates = [dtype.value] if dtype else [arg.value for arg in positional(node)]
            for candidate in candidates:
                kind = self.dtype_kind(candidate)
                if kind is not None and kind is not Kind.TENSOR:
                    return kind
            return receiver if method in ("to", "type") else Kind.TENSOR
        if method in BOOL_METHODS:
            return Kind.BOOL_TENSOR
        if method in INT_METHODS:
            return Kind.INT_TENSOR
        if method in ("split", "chunk", "unbind", "tensor_split"):
            return Kind.TENSOR_SEQUENCE
        if method in DTYPE_PRESERVING_METHODS:
            return receiver
        return Kind.TENSOR


def _against_none(node: cst.Comparison) -> bool:
    """``x == None`` / ``x != None`` (either side)."""
    target = node.comparisons[0]
    return isinstance(target.operator, (cst.Equal, cst.NotEqual)) and any(
        isinstance(side, cst.Name) and side.value == "None" for side in (node.left, target.comparator))


def _object_dtype(arg: cst.Arg) -> bool:
    """``dtype=object``, ``dtype="O"``, ``dtype=np.object_``."""
    if arg.keyword is None or arg.keyword.value != "dtype":
        return False
    value = arg.value
    if isinstance(value, cst.Name):
        return value.value == "object"
    if isinstance(value, cst.Attribute):
        return value.attr.value == "object_"
    if isinstance(value, cst.SimpleString):
        return value.evaluated_value in ("O", "object")
    return False
