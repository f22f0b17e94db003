"""Which dispatched ATen ops synchronise, refined by their arguments.

The table is compiled from :data:`synclint.catalogue.CATALOGUE` (the one the
static rules read), one :class:`Rule` per ATen overload, cached on first use:
a dispatch then costs one dict lookup, and only candidates look at arguments.
Verdicts are "as if on CUDA": tensors count as device-resident unless
:mod:`residency` marked them host-side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from synclint.catalogue import CATALOGUE, SyncCondition, SyncOp
from synclint.runtime.residency import Residency

#: Ops that torch tags ``dynamic_output_shape``/``data_dependent_output`` but that
#: the catalogue leaves out on purpose (a test keeps this list honest).
TAGGED_BUT_NOT_REPORTED: dict[str, str] = {
    "item": "never dispatched: `Tensor.item` is caught as a Python hook, and the "
    "ATen read-back it performs is `_local_scalar_dense`",
    "linalg_lstsq": "only the CPU-only `gelsd`/`gelss`/`gelsy` drivers have a "
    "data-dependent rank; CUDA's `gels` does not read back",
    "_ctc_loss": "the Tensor-lengths overload is judged at the Python call "
    "(`torch.ctc_loss` hook): the dispatch only sees the IntArrayRef overload",
}

_MASK_DTYPES = (torch.bool, torch.uint8)


class Context:
    """Per-detector facts a verdict may need that the ATen arguments lost."""

    def __init__(self, residency: Residency) -> None:
        self.residency = residency
        self.is_host = residency.is_host
        """Residency: simulated marks on a CPU run, the real device on CUDA."""
        self.is_pinned = residency.is_pinned
        self.python_scalar_value = False
        """True while ``x[index] = v`` runs with a Python number ``v`` (PyTorch
        turns it into a host scalar, which lets a boolean mask take the
        ``masked_fill_`` fast path)."""


Verdict = Callable[[Sequence[Any], dict[str, Any], Context], bool]


def _arg(args: Sequence[Any], kwargs: dict[str, Any], index: int, name: str, default: Any = None) -> Any:
    if len(args) > index:
        return args[index]
    return kwargs.get(name, default)


def _on_device(value: Any, ctx: Context) -> bool:
    return isinstance(value, torch.Tensor) and not ctx.is_host(value)


def _first_tensor_on_device(args: Sequence[Any], ctx: Context) -> bool:
    return bool(args) and _on_device(args[0], ctx)


def _always(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    return _first_tensor_on_device(args, ctx)


def _index_tensors(args: Sequence[Any], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
    return [i for i in indices if isinstance(i, torch.Tensor)]


def _device_masks(indices: list[torch.Tensor], ctx: Context) -> bool:
    # A host-side mask is uploaded without blocking and expanded on the device
    # (PyTorch PR #156384; upstream test_sync_warning lists both rows as no-sync).
    return any(i.dtype in _MASK_DTYPES and not ctx.is_host(i) for i in indices)


def _boolean_index(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    return _first_tensor_on_device(args, ctx) and _device_masks(_index_tensors(args, kwargs), ctx)


def _boolean_index_tensor_value(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    if not _first_tensor_on_device(args, ctx):
        return False
    indices = _index_tensors(args, kwargs)
    if not any(i.dtype in _MASK_DTYPES for i in indices):
        return False
    # PyTorch's `index_put_` rewrites a write through exactly one mask of a
    # host-side one-element value as `masked_fill_`, which does not sync.
    value = _arg(args, kwargs, 2, "values")
    accumulate = _arg(args, kwargs, 3, "accumulate", False)
    host_scalar = value.numel() == 1 and (ctx.python_scalar_value or ctx.is_host(value))
    if not accumulate and host_scalar and len(indices) == 1:
        return False
    return _device_masks(indices, ctx)


def _host_index(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    return _first_tensor_on_device(args, ctx) and any(
        ctx.is_host(i) and i.dim() > 0 and i.dtype not in _MASK_DTYPES
        for i in _index_tensors(args, kwargs)
    )


def _host_value(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    """``index_put_`` of a host value into a device tensor: ``_index_put_impl_`` moves
    a 0-dim value with ``value.to(self.device())`` (a blocking upload) and copies a
    larger one for the kernel, except on the ``masked_fill_`` fast path
    (``canDispatchToMaskedFill``: no accumulate, a one-element CPU value, and exactly
    one index, a boolean/byte mask on the device)."""
    if not _first_tensor_on_device(args, ctx):
        return False
    indices = _index_tensors(args, kwargs)
    value = _arg(args, kwargs, 2, "values")
    if not indices or not isinstance(value, torch.Tensor) or value.numel() == 0:
        return False
    if not (ctx.python_scalar_value or ctx.is_host(value)):
        return False
    accumulate = _arg(args, kwargs, 3, "accumulate", False)
    masked_fill = (
        not accumulate
        and value.numel() == 1
        and len(indices) == 1
        and indices[0].dtype in _MASK_DTYPES
        and not ctx.is_host(indices[0])
    )
    return not masked_fill


def _no_output_size(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    # `repeat_interleave.Tensor(repeats)` / `.self_Tensor(x, repeats)` size their
    # output with `repeats.sum()` unless told; the `self_int` overload never syncs.
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    return (
        bool(tensors)
        and not all(ctx.is_host(t) for t in tensors)
        and kwargs.get("output_size") is None
        and not any(isinstance(a, int) for a in args[1:2])
    )


def _no_num_classes(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    return _first_tensor_on_device(args, ctx) and _arg(args, kwargs, 1, "num_classes", -1) == -1


def _copy_sides(args: Sequence[Any], ctx: Context) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(dst, src)`` of a ``copy_`` between the host and the device, else None."""
    if len(args) < 2 or not isinstance(args[1], torch.Tensor):
        return None
    dst, src = args[0], args[1]
    if ctx.is_host(dst) == ctx.is_host(src):
        return None
    return dst, src


def _device_to_host(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    # Only `dst.copy_(src)` is decidable at dispatch level; `.cpu()`/`.to()` are
    # Python hooks (a CPU-to-CPU `.to` never reaches the dispatcher).
    sides = _copy_sides(args, ctx)
    return sides is not None and ctx.is_host(sides[0]) and not _arg(args, kwargs, 2, "non_blocking", False)


def _host_to_device(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    sides = _copy_sides(args, ctx)
    return (
        ctx.residency.tracked  # "everything on the device" cannot tell an upload
        and sides is not None
        and ctx.is_host(sides[1])
        and sides[1].numel() > 0
        and not _arg(args, kwargs, 2, "non_blocking", False)
    )


def _pageable_non_blocking(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    sides = _copy_sides(args, ctx)
    if sides is None or not _arg(args, kwargs, 2, "non_blocking", False):
        return False
    host = sides[0] if ctx.is_host(sides[0]) else sides[1]
    return not ctx.is_pinned(host)


def _device_value(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    return _first_tensor_on_device(args, ctx) and _on_device(_arg(args, kwargs, 2, "value"), ctx)


def _no_range(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    low, high = _arg(args, kwargs, 2, "min", 0), _arg(args, kwargs, 3, "max", 0)
    return _first_tensor_on_device(args, ctx) and low == high and args[0].numel() > 0


def _large_test_set(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    elements, test_elements = _arg(args, kwargs, 0, "elements"), _arg(args, kwargs, 1, "test_elements")
    # isin_sorting syncs with or without assume_unique: besides the two _unique
    # calls it skips, it writes one element with duplicate_mask.index_put_({-1},
    # invert), a blocking CPU->CUDA scalar copy (memcpy_and_sync). Measured on an
    # H100: 3 sync warnings without assume_unique, 1 with it.
    if not isinstance(test_elements, torch.Tensor):
        return False
    n = elements.numel() if isinstance(elements, torch.Tensor) else 1
    on_device = _on_device(elements, ctx) or _on_device(test_elements, ctx)
    return on_device and n > 0 and test_elements.numel() >= int(10.0 * n**0.145)


def _tensor_std(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    std = _arg(args, kwargs, 1, "std")
    return _on_device(std, ctx) and std.numel() > 0


def _has_sorter(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    sorter = kwargs.get("sorter")
    return _first_tensor_on_device(args, ctx) and isinstance(sorter, torch.Tensor) and sorter.numel() > 0


def _not_same_tensor(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    # cuda_equal answers on the host when the sizes differ, a tensor is empty, or
    # both are the same view of the same memory; otherwise it reads back.
    if not _first_tensor_on_device(args, ctx) or len(args) < 2:
        return False
    a, b = args[0], args[1]
    if a.shape != b.shape or a.numel() == 0:
        return False
    same_view = (
        a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        and a.storage_offset() == b.storage_offset()
        and a.dtype == b.dtype
        and a.stride() == b.stride()
    )
    return not same_view


def _tensor_as_number(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    # Only linspace/logspace dispatch here: their Tensor overloads call `start.item()` /
    # `end.item()` inside the op (RangeFactories.cpp), where no read-back is dispatched. The
    # Scalar overloads get Python numbers; `out=` is the result, not a bound.
    bounds = (*args[:2], kwargs.get("start"), kwargs.get("end"))
    return any(_on_device(bound, ctx) for bound in bounds)


_VERDICTS: dict[SyncCondition, Verdict] = {
    SyncCondition.ALWAYS: _always,
    SyncCondition.BOOLEAN_INDEX: _boolean_index,
    SyncCondition.BOOLEAN_INDEX_TENSOR_VALUE: _boolean_index_tensor_value,
    SyncCondition.HOST_INDEX: _host_index,
    SyncCondition.HOST_VALUE: _host_value,
    SyncCondition.NO_OUTPUT_SIZE: _no_output_size,
    SyncCondition.NO_NUM_CLASSES: _no_num_classes,
    SyncCondition.DEVICE_TO_HOST: _device_to_host,
    SyncCondition.HOST_TO_DEVICE: _host_to_device,
    SyncCondition.PAGEABLE_NON_BLOCKING: _pageable_non_blocking,
    SyncCondition.DEVICE_VALUE: _device_value,
    SyncCondition.NO_RANGE: _no_range,
    SyncCondition.LARGE_TEST_SET: _large_test_set,
    SyncCondition.TENSOR_STD: _tensor_std,
    SyncCondition.HAS_SORTER: _has_sorter,
    SyncCondition.NOT_SAME_TENSOR: _not_same_tensor,
    SyncCondition.TENSOR_AS_NUMBER: _tensor_as_number,
}

#: Conditions decided outside the dispatch table, and where.
DECIDED_ELSEWHERE: dict[SyncCondition, str] = {
    SyncCondition.SINGLE_ARGUMENT: "dispatches as aten::nonzero_numpy (an ALWAYS entry)",
    SyncCondition.IN_HOT_PATH: "simulated CUDA device: torch.cuda / Stream / Event synchronize (simcuda)",
    SyncCondition.HOST_DATA: "function hook on torch.tensor/as_tensor with device= (hooks)",
    SyncCondition.TENSOR_LENGTHS: "function hook on torch.ctc_loss (hooks)",
}


class Rule:
    """The catalogue entries one ATen overload packet may trigger, in catalogue order."""

    __slots__ = ("_checks",)

    def __init__(self, entries: Sequence[SyncOp]) -> None:
        self._checks = tuple((entry, _VERDICTS[entry.condition]) for entry in entries)

    def __call__(self, args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> SyncOp | None:
        for entry, verdict in self._checks:
            if verdict(args, kwargs, ctx):
                return entry
        return None


def _entries_by_packet() -> dict[str, tuple[SyncOp, ...]]:
    table: dict[str, list[SyncOp]] = {}
    for entry in CATALOGUE:
        if entry.condition not in _VERDICTS:
            continue  # decided elsewhere (single-argument where, hot-path syncs)
        for packet in entry.aten:
            table.setdefault(packet, []).append(entry)
    return {packet: tuple(entries) for packet, entries in table.items()}


class RuleTable:
    """``OpOverload -> Rule | None``, compiled lazily and cached."""

    def __init__(self) -> None:
        self._by_packet = _entries_by_packet()
        self._cache: dict[Any, Rule | None] = {}

    def lookup(self, func: Any) -> Rule | None:
        try:
            return self._cache[func]
        except KeyError:
            pass
        rule = None
        namespace = getattr(func, "namespace", None)
        if namespace is not None:
            # ATen packets by name (``nonzero``); other libraries' ops qualified (``torchvision::nms``).
            packet = func._opname if namespace == "aten" else f"{namespace}::{func._opname}"
            entries = self._by_packet.get(packet)
            if entries:
                rule = Rule(entries)
        self._cache[func] = rule
        return rule

    @property
    def packets(self) -> frozenset[str]:
        return frozenset(self._by_packet)
