"""The one catalogue of operations that force a host-device synchronisation.

Both halves of synclint read this table, so they cannot disagree:

* the static rules (``synclint.rules``) match the Python spellings
  (``functions`` and ``methods``) and word their messages from ``why`` and
  ``use_instead``;
* the runtime detector (``synclint.runtime``) matches the dispatched ATen
  operators (``aten``) and the Python-level read-backs (``python_hooks``) and
  applies the same ``condition``.

This module is pure data: importing it never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class SyncCondition(str, Enum):
    """When an operation really synchronises (refines the bare op name)."""

    ALWAYS = "always"
    #: ``torch.where(cond)`` with one argument is ``nonzero(as_tuple=True)``.
    SINGLE_ARGUMENT = "single_argument"
    #: ``repeat_interleave`` with tensor repeats and no ``output_size``.
    NO_OUTPUT_SIZE = "no_output_size"
    #: indexing (read or write) with a boolean/uint8 tensor index.
    BOOLEAN_INDEX = "boolean_index"
    #: index write ``x[m] = v`` with a boolean index and a *tensor* value;
    #: a Python scalar value is fast-pathed by PyTorch to ``masked_fill_``.
    BOOLEAN_INDEX_TENSOR_VALUE = "boolean_index_tensor_value"
    #: a copy whose source is on the accelerator and destination on the host.
    DEVICE_TO_HOST = "device_to_host"
    #: only inside a loop or a hot path (``forward``, a loss, a training step).
    IN_HOT_PATH = "in_hot_path"
    #: an index tensor that lives on the host indexes a device tensor, so it is
    #: first copied to the device with a blocking transfer.
    HOST_INDEX = "host_index"
    #: ``one_hot`` without ``num_classes`` reads ``max()`` back to size its output.
    NO_NUM_CLASSES = "no_num_classes"


@dataclass(frozen=True)
class SyncOp:
    """One family of operations that make the host wait for the device."""

    code: str
    """The rule code that reports it statically."""
    name: str
    """A short human name used in messages (``torch.nonzero``)."""
    functions: tuple[str, ...] = ()
    """Fully qualified callables (``torch.nonzero``)."""
    methods: tuple[str, ...] = ()
    """``torch.Tensor`` method names (``nonzero``)."""
    aten: tuple[str, ...] = ()
    """ATen overload packets the runtime detector sees (``nonzero``)."""
    python_hooks: tuple[str, ...] = ()
    """``torch.Tensor`` Python-level entry points that read back (``item``)."""
    condition: SyncCondition = SyncCondition.ALWAYS
    why: str = ""
    use_instead: str = ""
    aliases: tuple[str, ...] = field(default=())
    """Extra qualified names that mean the same callable (``torch.Tensor.nonzero``)."""


CATALOGUE: tuple[SyncOp, ...] = (
    SyncOp(
        code="SL101",
        name="nonzero",
        functions=("torch.nonzero", "torch.argwhere"),
        methods=("nonzero", "argwhere"),
        aten=("nonzero", "nonzero_numpy", "argwhere"),
        why="the number of non-zero elements decides the output shape, so the host "
        "must wait for the device to count them",
        use_instead="use 3-arg `torch.where(cond, a, b)`, `masked_fill_`, or "
        "`nonzero_static(size=...)` when an upper bound is known",
    ),
    SyncOp(
        code="SL101",
        name="single-argument torch.where",
        functions=("torch.where",),
        methods=(),
        aten=(),  # dispatches as aten::nonzero_numpy, covered above
        condition=SyncCondition.SINGLE_ARGUMENT,
        why="`torch.where(cond)` is `nonzero(as_tuple=True)`: its output shape "
        "depends on the data",
        use_instead="use 3-arg `torch.where(cond, a, b)` or `masked_fill_`",
    ),
    SyncOp(
        code="SL102",
        name="unique",
        functions=("torch.unique", "torch.unique_consecutive"),
        methods=("unique", "unique_consecutive"),
        aten=("_unique", "_unique2", "unique_dim", "unique_consecutive", "unique_dim_consecutive"),
        why="the number of distinct values decides the output shape, so the host "
        "must wait for the device",
        use_instead="count with `torch.sort` + `count_nonzero(s[1:] != s[:-1]) + 1` when "
        "only the number of values is needed, or a fixed-size histogram via `scatter_add_`",
    ),
    SyncOp(
        code="SL103",
        name="boolean-mask indexing",
        functions=("torch.masked_select",),
        methods=("masked_select",),
        aten=("masked_select",),
        why="a boolean mask selects a data-dependent number of elements, so the "
        "host must wait for the device to count them",
        use_instead="keep the shape: `torch.where(mask, x, fill)`, `masked_fill`, "
        "a weighted reduction (`(x * mask).sum()`), or `ignore_index` in the loss",
    ),
    SyncOp(
        code="SL103",
        name="boolean-mask index read",
        aten=("index",),
        condition=SyncCondition.BOOLEAN_INDEX,
        why="`x[mask]` has a data-dependent shape",
        use_instead="use `torch.where(mask, x, fill)`, a weighted reduction, or `ignore_index` in the loss",
    ),
    SyncOp(
        code="SL103",
        name="boolean-mask index write",
        aten=("index_put", "index_put_", "_index_put_impl"),
        condition=SyncCondition.BOOLEAN_INDEX_TENSOR_VALUE,
        why="`x[mask] = tensor` turns the mask into indices with `nonzero`",
        use_instead="use `x = torch.where(mask, value, x)`",
    ),
    SyncOp(
        code="SL104",
        name="repeat_interleave",
        functions=("torch.repeat_interleave",),
        methods=("repeat_interleave",),
        aten=("repeat_interleave",),
        condition=SyncCondition.NO_OUTPUT_SIZE,
        why="with tensor `repeats` the output length is `repeats.sum()`, which the "
        "host must read back",
        use_instead="pass `output_size=` (a Python int the host knows)",
    ),
    SyncOp(
        code="SL105",
        name="bincount",
        functions=("torch.bincount",),
        methods=("bincount",),
        aten=("bincount",),
        why="`bincount` reads `max()` back to size its output, even with `minlength`",
        use_instead="use `torch.zeros(n).scatter_add_(0, idx, ones)` with a static `n`",
    ),
    SyncOp(
        code="SL105",
        name="one_hot without num_classes",
        functions=("torch.nn.functional.one_hot",),
        aten=("one_hot",),
        condition=SyncCondition.NO_NUM_CLASSES,
        why="without `num_classes`, `one_hot` reads `max()` back to size its output",
        use_instead="pass `num_classes=` (a Python int known on the host)",
    ),
    SyncOp(
        code="SL201",
        name="host read-back",
        methods=("item", "tolist", "numpy"),
        aten=("_local_scalar_dense",),
        python_hooks=(
            "item",
            "tolist",
            "numpy",
            "__bool__",
            "__float__",
            "__int__",
            "__index__",
            "__complex__",
            "__format__",
            "__repr__",
            "__str__",
            "__array__",
        ),
        why="reading a device value on the host waits for every queued kernel",
        use_instead="keep values on the device (accumulate into a tensor) and read "
        "them back once per logging interval",
    ),
    SyncOp(
        code="SL201",
        name="device-to-host copy",
        methods=("cpu",),
        aten=("_to_copy", "copy_", "to"),
        python_hooks=("cpu", "to"),
        condition=SyncCondition.DEVICE_TO_HOST,
        why="a device-to-host copy into pageable memory blocks the host",
        use_instead="keep the value on the device, or copy with "
        "`.to('cpu', non_blocking=True)` into pinned memory and wait on an event",
    ),
    SyncOp(
        code="SL201",
        name="comparison returning a Python bool",
        functions=("torch.equal", "torch.allclose", "torch.is_nonzero"),
        methods=("equal", "allclose", "is_nonzero"),
        aten=("equal", "allclose", "is_nonzero"),
        why="the result is a Python bool, so the host waits for the device",
        use_instead="keep `torch.isclose(a, b).all()` as a tensor",
    ),
    SyncOp(
        code="SL501",
        name="explicit synchronize",
        functions=(
            "torch.cuda.synchronize",
            "torch.cuda.empty_cache",
            "torch.cuda.current_stream().synchronize",
            "torch.accelerator.synchronize",
            "torch.mps.synchronize",
            "torch.xpu.synchronize",
        ),
        methods=("synchronize",),
        condition=SyncCondition.IN_HOT_PATH,
        why="an explicit synchronize drains the device queue and idles the CPU",
        use_instead="remove it from the hot path; time with CUDA events or the profiler",
    ),
    SyncOp(
        code="SL401",
        name="host-side index tensor",
        aten=("index", "index_put", "index_put_", "_index_put_impl"),
        condition=SyncCondition.HOST_INDEX,
        why="an index tensor on the host is copied to the device with a blocking "
        "transfer before the kernel can run",
        use_instead="build the index on the device (`torch.arange(..., device=x.device)`) "
        "or move it once, outside the loop, with `non_blocking=True` from pinned memory",
    ),
)


def ops_for(code: str) -> tuple[SyncOp, ...]:
    """Every catalogue entry reported by ``code``."""
    return tuple(op for op in CATALOGUE if op.code == code)


def by_function(qualified_name: str) -> SyncOp | None:
    """The entry for a fully qualified callable, if it syncs."""
    return _BY_FUNCTION.get(qualified_name)


def by_method(method: str) -> tuple[SyncOp, ...]:
    """Entries whose Tensor method is ``method``."""
    return _BY_METHOD.get(method, ())


def by_aten(packet: str) -> SyncOp | None:
    """The entry for an ATen overload packet name (``nonzero``, ``index_put_``)."""
    return _BY_ATEN.get(packet)


def _index() -> tuple[dict[str, SyncOp], dict[str, tuple[SyncOp, ...]], dict[str, SyncOp]]:
    functions: dict[str, SyncOp] = {}
    methods: dict[str, list[SyncOp]] = {}
    aten: dict[str, SyncOp] = {}
    for op in CATALOGUE:
        for fn in op.functions + op.aliases:
            functions.setdefault(fn, op)
        for method in op.methods:
            methods.setdefault(method, []).append(op)
            functions.setdefault(f"torch.Tensor.{method}", op)
        for packet in op.aten:
            aten.setdefault(packet, op)
    return functions, {k: tuple(v) for k, v in methods.items()}, aten


_BY_FUNCTION, _BY_METHOD, _BY_ATEN = _index()
