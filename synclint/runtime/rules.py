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

#: Ops that torch tags ``dynamic_output_shape``/``data_dependent_output`` but that
#: the catalogue leaves out on purpose (a test keeps this list honest).
TAGGED_BUT_NOT_REPORTED: dict[str, str] = {
    "item": "never dispatched: `Tensor.item` is caught as a Python hook, and the "
    "ATen read-back it performs is `_local_scalar_dense`",
    "linalg_lstsq": "only the CPU-only `gelsd`/`gelss`/`gelsy` drivers have a "
    "data-dependent rank; CUDA's `gels` does not read back",
    "_ctc_loss": "the Tensor-lengths overload copies lengths to the host inside the "
    "kernel, invisible to a dispatch mode; simulation cannot tell",
}

_MASK_DTYPES = (torch.bool, torch.uint8)


class Context:
    """Per-detector facts a verdict may need that the ATen arguments lost."""

    def __init__(self, is_host: Callable[[torch.Tensor], bool]) -> None:
        self.is_host = is_host
        """Residency: simulated marks on a CPU run, the real device on CUDA."""
        self.python_scalar_value = False
        """True while ``x[index] = v`` runs with a Python number ``v`` (PyTorch
        turns it into a host scalar, which lets a boolean mask take the
        ``masked_fill_`` fast path)."""


Verdict = Callable[[Sequence[Any], dict[str, Any], Context], bool]


def _first_tensor_on_device(args: Sequence[Any], ctx: Context) -> bool:
    return bool(args) and isinstance(args[0], torch.Tensor) and not ctx.is_host(args[0])


def _always(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    return _first_tensor_on_device(args, ctx)


def _index_tensors(args: Sequence[Any], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
    return [i for i in indices if isinstance(i, torch.Tensor)]


def _has_mask(indices: list[torch.Tensor]) -> bool:
    return any(i.dtype in _MASK_DTYPES for i in indices)


def _boolean_index(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    return _first_tensor_on_device(args, ctx) and _has_mask(_index_tensors(args, kwargs))


def _boolean_index_tensor_value(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    if not _first_tensor_on_device(args, ctx):
        return False
    indices = _index_tensors(args, kwargs)
    if not _has_mask(indices):
        return False
    # PyTorch's `index_put_` rewrites a write through exactly one mask of a
    # host-side one-element value as `masked_fill_`, which does not sync.
    value = args[2] if len(args) > 2 else kwargs["values"]
    accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
    host_scalar = value.numel() == 1 and (ctx.python_scalar_value or ctx.is_host(value))
    fast_path = not accumulate and host_scalar and len(indices) == 1
    return not fast_path


def _host_index(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    return _first_tensor_on_device(args, ctx) and any(
        ctx.is_host(i) and i.dim() > 0 for i in _index_tensors(args, kwargs)
    )


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
    num_classes = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
    return _first_tensor_on_device(args, ctx) and num_classes == -1


def _device_to_host(args: Sequence[Any], kwargs: dict[str, Any], ctx: Context) -> bool:
    # Only `dst.copy_(src)` is decidable at dispatch level; `.cpu()`/`.to()` are
    # Python hooks (a CPU-to-CPU `.to` never reaches the dispatcher).
    if len(args) < 2 or not isinstance(args[1], torch.Tensor):
        return False
    non_blocking = args[2] if len(args) > 2 else kwargs.get("non_blocking", False)
    return ctx.is_host(args[0]) and not ctx.is_host(args[1]) and not non_blocking


_VERDICTS: dict[SyncCondition, Verdict] = {
    SyncCondition.ALWAYS: _always,
    SyncCondition.BOOLEAN_INDEX: _boolean_index,
    SyncCondition.BOOLEAN_INDEX_TENSOR_VALUE: _boolean_index_tensor_value,
    SyncCondition.HOST_INDEX: _host_index,
    SyncCondition.NO_OUTPUT_SIZE: _no_output_size,
    SyncCondition.NO_NUM_CLASSES: _no_num_classes,
    SyncCondition.DEVICE_TO_HOST: _device_to_host,
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
        if getattr(func, "namespace", None) == "aten":
            entries = self._by_packet.get(func._opname)
            if entries:
                rule = Rule(entries)
        self._cache[func] = rule
        return rule

    @property
    def packets(self) -> frozenset[str]:
        return frozenset(self._by_packet)
