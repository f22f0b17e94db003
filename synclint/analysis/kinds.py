"""What a value is, as far as sync analysis cares, and the tables that decide it.

The lattice is deliberately small. ``UNKNOWN`` is the honest answer for most
expressions; rules that need to know a value is a tensor (or a *boolean*
tensor) only fire on positive evidence, which keeps precision high.
"""

from __future__ import annotations

from enum import Enum


class Kind(Enum):
    UNKNOWN = "unknown"
    TENSOR = "tensor"  # a torch.Tensor of unknown dtype
    BOOL_TENSOR = "bool tensor"
    INT_TENSOR = "integer tensor"
    TENSOR_TUPLE = "tuple of index tensors"  # nonzero(as_tuple=True), where(c)
    TENSOR_SEQUENCE = "sequence of tensors"  # list of per-sample tensors
    TENSOR_DICT = "dict of tensors"  # Dict[str, Tensor], e.g. one image's targets
    TENSOR_DICT_SEQUENCE = "sequence of dicts of tensors"  # List[Dict[str, Tensor]]
    NUMPY = "numpy array"
    PANDAS = "pandas object"
    PYTHON = "python value"  # numbers, strings, containers of them, torch.Size
    MODULE = "nn.Module"

    @property
    def is_tensor(self) -> bool:
        return self in _TENSORS

    @property
    def is_host_array(self) -> bool:
        return self in (Kind.NUMPY, Kind.PANDAS)


_TENSORS = frozenset({Kind.TENSOR, Kind.BOOL_TENSOR, Kind.INT_TENSOR})


def join(a: Kind, b: Kind) -> Kind:
    """The kind of a binary arithmetic result."""
    if a is Kind.NUMPY or b is Kind.NUMPY:
        return Kind.NUMPY if not (a.is_tensor or b.is_tensor) else Kind.TENSOR
    if a.is_tensor or b.is_tensor:
        if a is b:
            return a if a is not Kind.BOOL_TENSOR else Kind.TENSOR
        return Kind.TENSOR
    if a is Kind.PYTHON and b is Kind.PYTHON:
        return Kind.PYTHON
    return Kind.UNKNOWN


# -- torch functions ---------------------------------------------------------

#: torch.* callables that return a boolean tensor.
BOOL_FUNCTIONS = frozenset(
    {
        "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "isin", "isclose",
        "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
        "less_equal", "not_equal", "logical_and", "logical_or", "logical_not",
        "logical_xor", "any", "all", "signbit", "bernoulli_mask",
    }
)

#: torch.* callables that return an integer (index) tensor.
INT_FUNCTIONS = frozenset(
    {
        "argmax", "argmin", "argsort", "randint", "randint_like", "randperm",
        "multinomial", "searchsorted", "bucketize", "count_nonzero", "nonzero_static",
        "tril_indices", "triu_indices", "bincount", "histc_int",
    }
)

#: torch.* callables whose result is a tuple (values, integer indices).
VALUES_INDICES_FUNCTIONS = frozenset(
    {"sort", "topk", "max", "min", "kthvalue", "median", "mode", "cummax", "cummin", "aminmax"}
)

#: torch.* callables returning several tensors.
SEQUENCE_FUNCTIONS = frozenset(
    {"split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit",
     "meshgrid", "broadcast_tensors", "atleast_1d", "atleast_2d", "atleast_3d"}
)

#: torch.* callables that do not return a tensor at all.
NON_TENSOR_FUNCTIONS = frozenset(
    {
        "is_tensor", "is_storage", "is_floating_point", "is_complex", "is_nonzero",
        "numel", "equal", "allclose", "device", "dtype", "Size", "get_default_dtype",
        "manual_seed", "seed", "initial_seed", "set_grad_enabled", "no_grad",
        "enable_grad", "inference_mode", "compile", "load", "save", "set_printoptions",
        "set_default_dtype", "set_num_threads", "get_num_threads", "is_grad_enabled",
        "jit", "autocast", "use_deterministic_algorithms", "finfo", "iinfo",
        "result_type", "promote_types", "can_cast", "set_float32_matmul_precision",
        "Generator", "Stream", "Event", "typename", "broadcast_shapes", "cond",
    }
)

#: torch.* tensor factories: their arguments are Python data, not tensors.
FACTORY_FUNCTIONS = frozenset(
    {
        "tensor", "as_tensor", "asarray", "from_numpy", "frombuffer", "zeros", "ones",
        "empty", "full", "rand", "randn", "randint", "randperm", "arange", "linspace",
        "logspace", "eye", "empty_strided", "Tensor", "LongTensor", "FloatTensor",
        "BoolTensor", "IntTensor", "ByteTensor", "HalfTensor", "DoubleTensor",
        "tril_indices", "triu_indices", "scalar_tensor", "normal", "sparse_coo_tensor",
    }
)

#: torch callables whose result is an integer tensor on the CPU, wherever their input lives
#: (the shape of a device tensor, for ONNX export).
HOST_SHAPE_FUNCTIONS = frozenset({"shape_as_tensor", "_shape_as_tensor"})

#: torch submodules whose functions take and return tensors.
TENSOR_NAMESPACES = ("torch.", "torch.nn.functional.", "torch.linalg.", "torch.special.", "torch.fft.")

#: submodules that are not tensor math (constructors, utilities, runtimes).
NON_TENSOR_NAMESPACES = (
    "torch.nn.", "torch.optim.", "torch.utils.", "torch.cuda.", "torch.distributed.",
    "torch.backends.", "torch.jit.", "torch.onnx.", "torch.profiler.", "torch.autograd.",
    "torch.multiprocessing.", "torch.hub.", "torch.testing.", "torch.library.",
    "torch.compiler.", "torch._dynamo.", "torch.fx.", "torch.export.", "torch.amp.",
    "torch.accelerator.", "torch.mps.", "torch.xpu.", "torch.cpu.", "torch.ops.",
    "torch.overrides.", "torch.quantization.", "torch.ao.", "torch.distributions.",
)

#: ``torch.sym_min``, ``torch.sym_ite`` (symbolic ints and floats) are Python numbers too.
_PYTHON_PREFIXES = ("is_", "are_", "get_", "has_", "set_", "use_", "enable_", "disable_", "sym_")
_TENSOR_MATH_NAMESPACES = ("torch.nn.functional.", "torch.linalg.", "torch.special.", "torch.fft.")


def classify_torch_callable(qualified: str) -> str:
    """What calling ``qualified`` (a ``torch.*`` name) returns.

    One of ``"tensor"`` (tensor math), ``"python"`` (flags, sizes, settings),
    ``"module"`` (an ``nn.Module`` class) or ``"unknown"``. Only public,
    lower-case functions directly in ``torch`` or its math namespaces count as
    tensor math: ``torch._C.*``, ``torch.jit.is_scripting`` and
    ``torch.is_autocast_enabled`` do not return tensors.
    """
    short = qualified.rsplit(".", 1)[1]
    if short.startswith("_") or "._" in qualified:
        # (``torch.nn.functional._Reduction.get_enum(reduction)``, copied into mmdet-style
        # ``reduce_loss`` helpers, returns a Python int: private helpers are not math.)
        return "unknown"
    if qualified.startswith(_TENSOR_MATH_NAMESPACES):
        return "tensor" if short[:1].islower() else "unknown"
    if qualified.startswith(NON_TENSOR_NAMESPACES):
        if qualified.startswith("torch.nn.") and short[:1].isupper():
            return "module"
        return "unknown"
    if qualified.count(".") != 1:
        return "unknown"  # some other torch submodule
    if short in NON_TENSOR_FUNCTIONS or short.startswith(_PYTHON_PREFIXES) or short == "Size":
        return "python"
    if short[:1].isupper() and short not in FACTORY_FUNCTIONS:
        return "unknown"  # torch.Generator, torch.Stream, ...
    return "tensor"


BOOL_DTYPES = frozenset({"torch.bool"})
INT_DTYPES = frozenset(
    {"torch.long", "torch.int64", "torch.int", "torch.int32", "torch.int16", "torch.int8",
     "torch.uint8", "torch.short"}
)

# -- Tensor methods ------------------------------------------------------------

#: Methods only torch.Tensor has: calling one is evidence the receiver is a tensor.
TENSOR_ONLY_METHODS = frozenset(
    {
        "view", "view_as", "unsqueeze", "unsqueeze_", "permute", "contiguous", "float",
        "half", "bfloat16", "double", "long", "int", "bool", "byte", "detach", "detach_",
        "clone", "requires_grad_", "backward", "masked_fill", "masked_fill_", "masked_select",
        "masked_scatter", "masked_scatter_", "expand", "expand_as", "type_as", "new_zeros",
        "new_ones", "new_full", "new_empty", "new_tensor", "scatter", "scatter_", "scatter_add",
        "scatter_add_", "scatter_reduce", "index_select", "index_add_", "index_copy_",
        "index_fill_", "index_put_", "gather", "softmax", "log_softmax", "sigmoid", "relu",
        "clamp", "clamp_", "clamp_min", "clamp_max", "cuda", "narrow", "unbind", "topk",
        "zero_", "fill_", "add_", "mul_", "sub_", "div_", "copy_", "numel", "dim", "ndimension",
        "nelement", "pin_memory", "is_pinned", "data_ptr", "element_size", "bincount",
        "repeat_interleave", "unique_consecutive", "count_nonzero", "logical_not", "logical_and",
        "logical_or", "isnan", "isinf", "isfinite", "sum_to_size", "cumsum_", "exp_", "log_",
        "sqrt_", "pow_", "sigmoid_", "tanh_", "t_", "transpose_", "squeeze_", "flip", "roll",
        "chunk", "split_with_sizes", "argwhere", "nonzero_static", "to_dense", "to_sparse",
        "is_contiguous", "is_floating_point", "get_device", "untyped_storage", "cpu",
    }
)

#: Comparison methods: tensors have them, numpy arrays do not, pandas objects do.
#: Evidence of a tensor in files that do not import pandas.
COMPARISON_METHODS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})

#: Reductions an unknown receiver is taken to be a tensor for in torch-only files.
ARRAY_METHODS = frozenset({"any", "all", "sum", "mean", "amax", "amin", "prod", "std", "var", "norm", "abs"})

#: Of those, the ones numpy arrays do not have as methods (``np.abs(a)``, never ``a.abs()``):
#: evidence of a tensor in files that import numpy too, unless pandas (``Series.abs()``) or
#: another tensor library is imported.
NOT_NUMPY_METHODS = frozenset({"abs", "amax", "amin"})

#: Tensor methods whose result is a boolean tensor.
BOOL_METHODS = frozenset(
    {
        "bool", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "eq", "ne", "lt",
        "le", "gt", "ge", "greater", "less", "logical_not", "logical_and", "logical_or",
        "logical_xor", "any", "all", "signbit", "isclose", "isin",
    }
)

#: Tensor methods whose result is an integer tensor.
INT_METHODS = frozenset(
    {"long", "int", "short", "byte_index", "argmax", "argmin", "argsort", "nonzero",
     "argwhere", "count_nonzero", "nonzero_static", "bincount", "multinomial"}
)

#: Tensor methods that keep the dtype (and shape family) of the receiver.
DTYPE_PRESERVING_METHODS = frozenset(
    {
        "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "squeeze",
        "unsqueeze", "permute", "transpose", "t", "contiguous", "clone", "detach",
        "expand", "expand_as", "repeat", "tile", "cuda", "cpu", "to", "flip", "roll",
        "narrow", "movedim", "swapaxes", "mT", "T", "pin_memory", "requires_grad_",
        "masked_fill", "logical_not", "index_select", "gather", "__invert__",
    }
)

#: Tensor methods that do not return a tensor.
NON_TENSOR_METHODS = frozenset(
    {
        "item", "tolist", "numel", "dim", "ndimension", "nelement", "size", "stride",
        "element_size", "data_ptr", "is_contiguous", "is_floating_point", "is_complex",
        "get_device", "storage", "untyped_storage", "storage_offset", "is_pinned",
        "is_set_to", "equal", "allclose", "is_nonzero", "__len__", "backward",
        "register_hook", "numpy", "type",
        # sparse layout facts and storage objects (``t.sparse_dim()``, ``t._typed_storage()._size()``)
        "sparse_dim", "dense_dim", "_nnz", "_dimI", "_dimV", "is_coalesced", "_typed_storage",
        "_storage", "nbytes", "itemsize",
    }
)

#: Attributes of a tensor that are not tensors.
NON_TENSOR_ATTRIBUTES = frozenset(
    {"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout", "names",
     "is_leaf", "is_sparse", "is_quantized", "is_meta", "itemsize", "nbytes"}
)

#: Methods of dicts and lists that tensors do not have: the receiver is a container.
CONTAINER_METHODS = frozenset(
    {"items", "keys", "values", "get", "append", "extend", "pop", "update", "setdefault",
     "insert", "remove", "popitem", "appendleft"}
)

#: Attributes that are tensors.
TENSOR_ATTRIBUTES = frozenset({"grad", "data", "T", "mT", "H", "mH", "real", "imag", "values", "indices"})
