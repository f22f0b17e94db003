"""Match calls against the sync-op catalogue, with the receiver-kind policy.

A call matches a catalogue entry either by its resolved qualified name
(``torch.nonzero``, ``T.nonzero`` after ``import torch as T``,
``torch.Tensor.nonzero(x)``) or as a method on a receiver that is a tensor.

Receivers of unknown kind: a method that only tensors have (``.cpu()``,
``.numpy()``, ``.item()``, ``.bincount()``) is taken as a tensor method. A name
numpy or pandas also use (``.nonzero()``, ``.unique()``, ``.tolist()``) needs
positive evidence that the receiver is a tensor when the file imports numpy or
pandas; in a file that imports torch and neither of them, the tensor reading is
assumed (except for ``.tolist()``, which always needs evidence). This keeps
``np.nonzero``-style look-alikes out while still catching
``(labels == k).nonzero()`` in torch-only code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from synclint.analysis.flow import target_name_nodes
from synclint.analysis.imports import dotted_name
from synclint.analysis.kinds import Kind
from synclint.catalogue import SyncOp, by_function, by_method, entry
from synclint.rules.base import RuleContext

#: Method names that numpy arrays or pandas objects also have.
SHARED_WITH_HOST_ARRAYS = frozenset(
    {"nonzero", "unique", "tolist", "any", "all", "argmax", "argmin", "repeat", "sum",
     "mean", "max", "min", "equal", "synchronize"}
)
#: Methods nn.Module shares with Tensor, and names that say "this is a module".
_MODULE_METHODS = frozenset({"cpu", "cuda", "to", "half", "float", "double"})
_MODULE_NAME = re.compile(r"(^|[._])(model|net|module|backbone|head|layer|encoder|decoder|ema)s?$", re.I)

#: Shared names so common on host arrays (``stats.tolist()``) that an unknown
#: receiver is never assumed to be a tensor.
NEEDS_EVIDENCE = frozenset({"tolist"})


@dataclass(frozen=True)
class SyncCall:
    op: SyncOp
    display: str  # how to name it in a message: `torch.nonzero`, `.nonzero()`
    is_method: bool
    receiver: cst.BaseExpression | None  # the tensor for method calls / first arg
    #: A project helper that applies the op to this call's argument (``receiver``):
    #: the sync is reported here, at the call; its fixes are the helper's business.
    helper: str | None = None


def receiver_is_tensor(context: RuleContext, receiver: cst.BaseExpression, method: str) -> bool:
    kind = context.kind_of(receiver)
    if kind.is_tensor:
        return True
    if kind is not Kind.UNKNOWN:
        return False
    if isinstance(receiver, cst.Name) and receiver.value == "self" and _self_is_no_tensor(context):
        return False  # ``self.inverse(mag, phase)``: tacotron2's STFT calls its own method
    if isinstance(receiver, cst.Name) and _names_a_module_class(context, receiver.value):
        return False  # ``TanhBijector.inverse(a)``: a static method of a class of the module
    target = context.flow.project_target(receiver)
    if target is not None and f"{target}.{method}" in context.flow.facts.attribute_methods:
        return False  # ``self.bijector.inverse(a)``: the method of the class ``bijector`` is built from
    if not context.imports.imports_torch or method in NEEDS_EVIDENCE:
        return False
    if context.imports.imports_other_tensors:
        return False  # ``x.numpy()`` may be a TensorFlow tensor
    if method in _MODULE_METHODS and _MODULE_NAME.search(dotted_name(receiver) or ""):
        return False  # ``model.cpu()`` moves an nn.Module's weights once
    if method in SHARED_WITH_HOST_ARRAYS:
        return not (context.imports.imports_numpy or context.imports.imports_pandas)
    return True


def _names_a_module_class(context: RuleContext, name: str) -> bool:
    """``name`` is a class the module defines, not a name the enclosing functions bind
    (a parameter ``A``, ``A = x @ x.T``), which may be a tensor."""
    if name not in context.module_classes:
        return False
    return not any(name in scope.env for scope in context.flow.scopes if scope.kind == "function")


def _self_is_no_tensor(context: RuleContext) -> bool:
    """``self`` in a method of a class that is not a ``Tensor`` (see :func:`_is_tensor_class`):
    an instance of the class (a module, a helper object), whose methods are its own."""
    for scope in reversed(context.flow.scopes):
        if scope.kind == "class" and isinstance(scope.node, cst.ClassDef):
            return not _is_tensor_class(context, scope.node, frozenset())
    return False


#: ``torch.nn.Parameter`` under the names it is imported by: a ``Tensor`` subclass.
_PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def _is_tensor_class(context: RuleContext, node: cst.ClassDef, seen: frozenset[str]) -> bool:
    """A class with a base named for ``Tensor`` (``torch.Tensor``, ``TVTensor``), ``nn.Parameter``,
    or a class of the module that is one itself (``class Boxes(BaseBoxes)``)."""
    for base in node.bases:
        name = dotted_name(base.value) or ""
        if name.endswith("Tensor") or context.qualify(base.value) in _PARAMETER:
            return True
        parent = context.module_classes.get(name)
        if parent is not None and name not in seen and _is_tensor_class(context, parent, seen | {node.name.value}):
            return True
    return False


def match_sync_call(context: RuleContext, call: cst.Call, code: str) -> SyncCall | None:
    """The catalogue entry (reported as ``code``) this call invokes on a tensor that
    may live on the device (host tensors never make the host wait)."""
    match = _match(context, call, code) or _match_helper(context, call, code)
    if match is not None and match.receiver is not None and context.on_host(match.receiver):
        return None
    return match


def _match(context: RuleContext, call: cst.Call, code: str) -> SyncCall | None:
    qualified = context.qualify(call.func)
    if qualified is not None:
        op = by_function(qualified)
        if op is None or op.code != code:
            return None
        args = [a for a in call.args if a.keyword is None]
        return SyncCall(op, f"`{qualified}`", False, args[0].value if args else None)
    if not isinstance(call.func, cst.Attribute):
        return None
    method = call.func.attr.value
    for op in by_method(method):
        if op.code == code and receiver_is_tensor(context, call.func.value, method):
            return SyncCall(op, f"`.{method}()`", True, call.func.value)
    return None


def _match_helper(context: RuleContext, call: cst.Call, code: str) -> SyncCall | None:
    """A call of a project helper whose sync acts on a parameter (``utils.item(loss)``,
    ``nonzero_tuple(mask)``), when this call's argument for it may be a tensor: the
    same receiver policy as the op written out (``.item()`` on an unknown value counts,
    ``.unique()`` needs evidence in files that import numpy)."""
    helpers = context.flow.facts.argument_syncs
    if not helpers or any(arg.star for arg in call.args):
        return None
    target = context.flow.project_target(call.func)
    positional = [arg.value for arg in call.args if arg.keyword is None]
    for sync in helpers.get(target, ()) if target is not None else ():
        if sync.code != code:
            continue
        argument = next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == sync.param), None)
        if argument is None and sync.position < len(positional):
            argument = positional[sync.position]
        if argument is None:
            continue
        kind = context.kind_of(argument)
        if sync.method is None or sync.tensor_param:
            # A function named for the op (``torch.nonzero``), or a parameter annotated as a
            # tensor: anything but a known non-tensor may be one.
            if not (kind.is_tensor or kind is Kind.UNKNOWN):
                continue
        elif not receiver_is_tensor(context, argument, sync.method):
            continue
        display = f"`{target.rpartition(':')[2]}()` (it calls {sync.spelled} on its parameter `{sync.param}`)"
        return SyncCall(entry(sync.code, sync.op), display, False, argument, sync.helper)
    return None


# -- transfers -------------------------------------------------------------------------

_TRANSFER_METHODS = frozenset({"to", "cuda"})
_DTYPE_NAMES = frozenset(
    {"float16", "float32", "float64", "bfloat16", "half", "float", "double", "int8", "int16",
     "int32", "int64", "uint8", "long", "int", "bool", "complex64", "complex128", "dtype"}
)


def root_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def is_host_transfer(call: cst.Call) -> bool:
    """``.cuda()`` or ``.to(<not cpu>)``: a host-to-device copy (not a dtype cast)."""
    if not isinstance(call.func, cst.Attribute) or call.func.attr.value not in _TRANSFER_METHODS:
        return False
    if call.func.attr.value == "cuda":
        return True
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "device":
            value = arg.value
            if isinstance(value, cst.SimpleString) and value.evaluated_value == "cpu":
                return False
            if "cpu" in (dotted_name(value) or "").lower():
                return False  # ``.to(cpu_device)``: a read-back, not an upload
            if isinstance(value, cst.Call) and (dotted_name(value.func) or "").rsplit(".", 1)[-1] == "device" \
                    and value.args and isinstance(value.args[0].value, cst.SimpleString) \
                    and str(value.args[0].value.evaluated_value).split(":")[0] == "cpu":
                return False  # ``.to(torch.device("cpu"))``
            last = (dotted_name(value) or "").rsplit(".", 1)[-1]
            if last in _DTYPE_NAMES or last.endswith("_dtype"):
                return False  # a cast: ``.to(torch.float16)``, ``.to(self.img_dtype)``
            return True
    return False


def target_names(target: cst.BaseExpression):
    """Names bound by an assignment or loop target (``x``, ``x, (y, *rest)``)."""
    return (name.value for name in target_name_nodes(target))
