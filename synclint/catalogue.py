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
    #: ``index_put_`` of a host value (a Python number, or a CPU tensor) into a
    #: device tensor, outside PyTorch's ``masked_fill_`` fast path.
    HOST_VALUE = "host_value"
    #: ``one_hot`` without ``num_classes`` reads ``max()`` back to size its output.
    NO_NUM_CLASSES = "no_num_classes"
    #: a blocking copy of a host tensor to the accelerator (``memcpy_and_sync``).
    HOST_TO_DEVICE = "host_to_device"
    #: a tensor built from Python data directly on the accelerator.
    HOST_DATA = "host_data"
    #: a ``non_blocking=True`` copy between the device and *pageable* host memory.
    PAGEABLE_NON_BLOCKING = "pageable_non_blocking"
    #: ``masked_fill`` with a 0-dim *device* tensor value (the kernel calls ``value.item()``).
    DEVICE_VALUE = "device_value"
    #: ``histc`` without a range (``min == max``) reads ``min()``/``max()`` back.
    NO_RANGE = "no_range"
    #: ``isin`` with a large test set takes the sorting path, which calls ``unique``.
    LARGE_TEST_SET = "large_test_set"
    #: ``normal`` with a tensor ``std`` checks ``std.min() >= 0`` on the host.
    TENSOR_STD = "tensor_std"
    #: ``searchsorted`` with a ``sorter`` checks its range on the host.
    HAS_SORTER = "has_sorter"
    #: ``ctc_loss`` copies tensor lengths to the host.
    TENSOR_LENGTHS = "tensor_lengths"
    #: ``torch.equal`` returns early (no read-back) for different shapes, empty
    #: tensors, and the same view of the same memory (``is_alias_of`` fast path).
    NOT_SAME_TENSOR = "not_same_tensor"
    #: a tensor passed where the op's signature takes a Python number (a size, a bound,
    #: a ``Scalar``): PyTorch converts it with ``.item()`` before the op runs. Which
    #: arguments those are, per callable, is :data:`NUMBER_ARGUMENTS`.
    TENSOR_AS_NUMBER = "tensor_as_number"


@dataclass(frozen=True)
class NumberArguments:
    """The arguments of one callable that PyTorch takes as Python numbers."""

    positions: tuple[int, ...] | None = None
    """Positional indices (after the receiver, for methods); None: every positional
    argument, and the elements of a tuple or list passed there (sizes)."""
    keywords: tuple[str, ...] = ()
    unless: str = ""
    """A keyword whose presence selects the overload that takes a tensor instead."""


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
    no_static: str = ""
    """Why no static rule matches this entry (empty: a rule does)."""
    no_runtime: str = ""
    """Why the runtime detector cannot see this entry (empty: it does)."""
    source: str = ""
    """Where PyTorch decides that this syncs on CUDA (file and function)."""


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
        source="aten/src/ATen/native/cuda/Nonzero.cu: nonzero_cuda_out_impl",
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
        no_runtime="seen as the aten::nonzero_numpy it dispatches (the entry above)",
    ),
    SyncOp(
        code="SL101",
        name="non-maximum suppression",
        functions=(
            "torchvision.ops.nms",
            "torchvision.ops.batched_nms",
            "torchvision.ops.boxes.nms",
            "torchvision.ops.boxes.batched_nms",
            "torch.ops.torchvision.nms",
        ),
        aten=("torchvision::nms",),
        why="the number of boxes NMS keeps decides its output shape: torchvision's CUDA "
        "kernel copies the suppression mask to the host and counts the survivors there",
        use_instead="run it once per batch (`batched_nms` over every image's boxes, with the "
        "image index in `idxs`) rather than once per image, or keep a fixed number of boxes "
        "(`topk` on the scores) where an upper bound will do",
        source="torchvision/csrc/ops/cuda/nms_kernel.cu: nms_kernel (mask.to(at::kCPU), "
        "greedy pass on the host); torchvision/ops/boxes.py: batched_nms -> nms",
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
        source="aten/src/ATen/native/cuda/Unique.cu: unique_cuda_template",
    ),
    SyncOp(
        code="SL102",
        name="isin with a large test set",
        aten=("isin",),
        condition=SyncCondition.LARGE_TEST_SET,
        why="with many test elements `isin` sorts both inputs: it calls `unique` (whose "
        "size the host reads back) unless `assume_unique=True`, and in every case writes "
        "one element through a blocking host-to-device scalar copy",
        use_instead="keep the test set small (under 10 * n**0.145 elements, the sort-free "
        "kernel), or for small non-negative integers use a lookup table: "
        "`table = torch.zeros(K, dtype=torch.bool, device=d); table[test] = True; table[x]`",
        no_static="the path depends on the sizes of both inputs, unknown before run time",
        source="aten/src/ATen/native/TensorCompare.cpp: isin_Tensor_Tensor_out -> "
        "isin_sorting (at::_unique unless assume_unique; duplicate_mask.index_put_({-1}, "
        "invert) copies a CPU scalar with memcpy_and_sync); measured on an H100",
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
        source="aten/src/ATen/native/cuda/Indexing.cu: masked_select_out_cuda_impl",
    ),
    SyncOp(
        code="SL103",
        name="boolean-mask index read",
        aten=("index",),
        condition=SyncCondition.BOOLEAN_INDEX,
        why="`x[mask]` has a data-dependent shape",
        use_instead="use `torch.where(mask, x, fill)`, a weighted reduction, or `ignore_index` in the loss",
        no_static="matched on subscripts by SL103 itself (no callable to name)",
        source="aten/src/ATen/native/TensorAdvancedIndexing.cpp: index (expandTensors -> nonzero)",
    ),
    SyncOp(
        code="SL103",
        name="boolean-mask index write",
        aten=("index_put", "index_put_", "_index_put_impl"),
        condition=SyncCondition.BOOLEAN_INDEX_TENSOR_VALUE,
        why="`x[mask] = tensor` turns the mask into indices with `nonzero`",
        use_instead="use `x = torch.where(mask, value, x)`",
        no_static="matched on subscript assignments by SL103 itself (no callable to name)",
        source="aten/src/ATen/native/TensorAdvancedIndexing.cpp: index_put_ "
        "(canDispatchToMaskedFill fast path)",
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
        source="aten/src/ATen/native/Repeat.cpp: repeat_interleave_symint",
    ),
    SyncOp(
        code="SL105",
        name="bincount",
        functions=("torch.bincount",),
        methods=("bincount",),
        aten=("bincount",),
        why="`bincount` reads `max()` back to size its output, even with `minlength`",
        use_instead="use `torch.zeros(n).scatter_add_(0, idx, ones)` with a static `n`",
        source="aten/src/ATen/native/cuda/SummaryOps.cu: _bincount_cuda_template",
    ),
    SyncOp(
        code="SL105",
        name="one_hot without num_classes",
        functions=("torch.nn.functional.one_hot",),
        aten=("one_hot",),
        condition=SyncCondition.NO_NUM_CLASSES,
        why="without `num_classes`, `one_hot` reads `max()` back to size its output",
        use_instead="pass `num_classes=` (a Python int known on the host)",
        source="aten/src/ATen/native/Onehot.cpp: one_hot",
    ),
    SyncOp(
        code="SL105",
        name="histc without a range",
        aten=("histc",),
        condition=SyncCondition.NO_RANGE,
        why="without `min`/`max`, `histc` reads the data's range back to place its bins",
        use_instead="pass `min=` and `max=` (Python numbers known on the host)",
        no_static="SL105 does not match histc yet (needs its keyword check)",
        source="aten/src/ATen/native/cuda/SummaryOps.cu: _histc_cuda_template",
    ),
    SyncOp(
        code="SL201",
        name="host read-back",
        # Not `numpy`: `Tensor.numpy()` raises on a CUDA tensor, so on its own it proves
        # the tensor is on the host (`.cpu().numpy()` syncs at `.cpu()`, the entry below).
        methods=("item", "tolist"),
        aten=("_local_scalar_dense",),
        python_hooks=(
            "item",
            "tolist",
            "numpy",
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
        source="aten/src/ATen/native/cuda/CUDAScalar.cu: _local_scalar_dense_cuda (memcpy_and_sync)",
    ),
    SyncOp(
        code="SL201",
        name="device-to-host copy",
        methods=("cpu",),
        aten=("_to_copy", "copy_", "to"),
        python_hooks=("cpu", "to"),
        condition=SyncCondition.DEVICE_TO_HOST,
        why="a blocking device-to-host copy waits for the device",
        use_instead="keep the value on the device, or copy with "
        "`.to('cpu', non_blocking=True)` into pinned memory and wait on an event",
        source="aten/src/ATen/native/cuda/Copy.cu: copy_kernel_cuda (memcpy_and_sync)",
    ),
    SyncOp(
        code="SL201",
        name="comparison returning a Python bool",
        functions=("torch.equal", "torch.allclose"),
        methods=("equal", "allclose"),
        aten=("allclose",),
        why="the result is a Python bool, so the host waits for the device",
        use_instead="keep `torch.isclose(a, b).all()` as a tensor",
        source="aten/src/ATen/native/TensorCompare.cpp: allclose (isclose().all().item())",
    ),
    SyncOp(
        code="SL201",
        name="equal of two different tensors",
        aten=("equal",),
        condition=SyncCondition.NOT_SAME_TENSOR,
        why="`torch.equal` reads its answer back unless the shapes differ, a tensor is "
        "empty, or both are the same view of the same memory",
        use_instead="keep `(a == b).all()` as a tensor",
        no_static="matched statically through the entry 'comparison returning a Python bool'",
        source="aten/src/ATen/native/cuda/Equal.cpp: cuda_equal (is_alias_of fast path)",
    ),
    SyncOp(
        code="SL201",
        name="masked_fill with a device value",
        aten=("masked_fill", "masked_fill_"),
        condition=SyncCondition.DEVICE_VALUE,
        why="`masked_fill` with a 0-dim device tensor value reads the value back "
        "(`value.item()`) before launching its kernel",
        use_instead="pass a Python number, or use `torch.where(mask, value, x)`",
        no_static="whether the value tensor lives on the device is a run-time fact",
        source="aten/src/ATen/native/cuda/Indexing.cu: masked_fill__cuda (Tensor value)",
    ),
    SyncOp(
        code="SL201",
        name="tensor as a factory's size or bound",
        functions=(
            "torch.arange",
            "torch.range",
            "torch.linspace",
            "torch.logspace",
            "torch.zeros",
            "torch.ones",
            "torch.empty",
            "torch.full",
            "torch.full_like",
            "torch.rand",
            "torch.randn",
            "torch.randint",
            "torch.randperm",
            "torch.eye",
        ),
        methods=("new_zeros", "new_ones", "new_empty", "new_full"),
        aten=("linspace", "logspace"),
        condition=SyncCondition.TENSOR_AS_NUMBER,
        why="a factory takes its sizes, bounds and fill value as Python numbers: a tensor "
        "passed there is read back with `.item()` before the factory runs",
        use_instead="pass a number the host already knows (`x.shape[0]`, `len(xs)`, a "
        "configured maximum), or keep the count on the device and size the output statically",
        # The runtime sees the arange/zeros/full/... conversions as the `_local_scalar_dense`
        # of the host read-back entry; linspace/logspace take Tensor overloads whose
        # `start.item()` runs inside the kernel's C++ (not dispatched): matched by packet here.
        source="torch/csrc/utils/python_arg_parser.cpp: PythonArgs::scalar_slow / "
        "intlist (THPVariable -> item()); aten/src/ATen/native/RangeFactories.cpp: "
        "linspace/logspace(const Tensor& start, ...) -> start.item()",
    ),
    SyncOp(
        code="SL201",
        name="tensor as a shape or a count",
        functions=("torch.narrow", "torch.topk"),
        methods=("view", "reshape", "expand", "repeat", "narrow", "topk"),
        condition=SyncCondition.TENSOR_AS_NUMBER,
        why="shape methods and `topk` take sizes, offsets and counts as Python ints: a tensor "
        "passed there is read back with `.item()` before the op runs",
        use_instead="use sizes the host already knows (`x.shape`, `x.size(0)`), or keep a "
        "data-dependent count on the device (a mask, `torch.where`) instead of reshaping by it",
        no_runtime="the int conversion dispatches `_local_scalar_dense`, seen through the entry "
        "'host read-back'",
        source="torch/csrc/utils/python_arg_parser.cpp: PythonArgs::intlist / toSymInt "
        "(THPVariable -> item()); aten/src/ATen/native/TensorShape.cpp: narrow(Tensor start) -> "
        "start.item(); measured with a dispatch mode",
    ),
    SyncOp(
        code="SL201",
        name="tensor as a foreach op's scalar",
        functions=(
            "torch._foreach_add",
            "torch._foreach_add_",
            "torch._foreach_sub",
            "torch._foreach_sub_",
            "torch._foreach_mul",
            "torch._foreach_mul_",
            "torch._foreach_div",
            "torch._foreach_div_",
            "torch._foreach_clamp_max",
            "torch._foreach_clamp_max_",
            "torch._foreach_clamp_min",
            "torch._foreach_clamp_min_",
            "torch._foreach_maximum",
            "torch._foreach_maximum_",
            "torch._foreach_minimum",
            "torch._foreach_minimum_",
            "torch._foreach_pow",
            "torch._foreach_pow_",
            "torch._foreach_lerp",
            "torch._foreach_lerp_",
            "torch._foreach_addcmul",
            "torch._foreach_addcmul_",
            "torch._foreach_addcdiv",
            "torch._foreach_addcdiv_",
        ),
        condition=SyncCondition.TENSOR_AS_NUMBER,
        why="a 0-dim tensor where the `_foreach_*` op's Python argument parser picks its "
        "`Scalar` overload is read back with `.item()` before any kernel is queued",
        use_instead="pass a list of tensors, or pick the overload that takes a tensor "
        "(`torch._foreach_mul_(xs, t)` and `_foreach_div_` take one; `_foreach_add_(xs, t, "
        "alpha=1.0)` selects it for add/sub)",
        no_runtime="the Scalar conversion dispatches `_local_scalar_dense`, seen through the "
        "entry 'host read-back'",
        source="torch/csrc/utils/python_arg_parser.cpp: PythonArgs::scalar_slow (THPVariable -> "
        "item()); overloads as torch 2.13 binds them (torch/optim/adam.py: `alpha=1.0` 'to "
        "assure we go to the right overload'); measured with a dispatch mode",
    ),
    SyncOp(
        code="SL201",
        name="linalg error check",
        functions=(
            "torch.linalg.cholesky",
            "torch.linalg.inv",
            "torch.linalg.solve",
            "torch.linalg.eigh",
            "torch.cholesky",
            "torch.inverse",
        ),
        methods=("cholesky", "inverse"),
        aten=("_linalg_check_errors",),
        why="the factorisation's error codes are read back (`infos.any().item()`) to "
        "raise on singular input",
        use_instead="use the `_ex` variant (`torch.linalg.cholesky_ex`, `inv_ex`, "
        "`solve_ex`) and check `info` once, outside the step",
        source="aten/src/ATen/native/BatchLinearAlgebra.cpp: _linalg_check_errors",
    ),
    SyncOp(
        code="SL201",
        name="normal with a tensor std",
        aten=("normal",),
        condition=SyncCondition.TENSOR_STD,
        why="`normal` checks `std.min() >= 0` on the host when `std` is a tensor",
        use_instead="sample `torch.randn_like(mean) * std + mean`",
        no_static="whether `std` is a tensor is rarely known statically",
        source="aten/src/ATen/native/DistributionTemplates.h: CHECK_NORMAL_TENSOR_STD",
    ),
    SyncOp(
        code="SL201",
        name="searchsorted with a sorter",
        aten=("searchsorted",),
        condition=SyncCondition.HAS_SORTER,
        why="`searchsorted(..., sorter=)` checks the sorter's range on the host",
        use_instead="gather the sorted sequence once (`seq.gather(-1, sorter)`) and search it",
        no_static="SL201 does not match searchsorted's sorter= keyword yet",
        source="aten/src/ATen/native/BucketizationUtils.h: searchsorted_pre_check",
    ),
    SyncOp(
        code="SL201",
        name="ctc_loss with tensor lengths",
        functions=(),
        python_hooks=(),
        condition=SyncCondition.TENSOR_LENGTHS,
        why="`ctc_loss` copies device length tensors to the host",
        use_instead="pass the lengths as host tensors or Python lists",
        no_static="whether the lengths live on the device is a run-time fact",
        source="aten/src/ATen/native/LossCTC.cpp: ctc_loss (Tensor lengths fast path)",
    ),
    SyncOp(
        code="SL202",
        name="tensor truthiness",
        functions=("torch.is_nonzero",),
        methods=("is_nonzero",),
        aten=("is_nonzero",),
        python_hooks=("__bool__",),
        no_static="SL202 matches the contexts that take a tensor's truth value (`if`, "
        "`while`, `assert`, `bool()`, `and`/`or`/`not`, builtin `min`/`max`); an explicit "
        "`is_nonzero()` call is not matched yet",
        why="using a device tensor as a Python bool reads it back",
        use_instead="keep the condition on the device: `torch.where(cond, a, b)`",
        source="torch/csrc/autograd/python_variable_indexing / Tensor.__bool__ -> "
        "aten/src/ATen/native/TensorConversions: is_nonzero -> item",
    ),
    SyncOp(
        code="SL401",
        name="blocking host-to-device copy",
        aten=("copy_",),
        python_hooks=("to", "cuda"),
        condition=SyncCondition.HOST_TO_DEVICE,
        why="a blocking copy to the device waits for it (`memcpy_and_sync`)",
        use_instead="copy from pinned memory with `non_blocking=True` "
        "(`DataLoader(pin_memory=True)`), or build the tensor on the device",
        no_static="SL401 matches transfers of loader batches by its own spelling check",
        source="aten/src/ATen/native/cuda/Copy.cu: copy_kernel_cuda (memcpy_and_sync)",
    ),
    SyncOp(
        code="SL401",
        name="host-side index tensor",
        aten=("index", "index_put", "index_put_", "_index_put_impl"),
        condition=SyncCondition.HOST_INDEX,
        why="an integer index tensor on the host is copied to the device with a blocking "
        "transfer before the kernel can run",
        use_instead="build the index on the device (`torch.arange(..., device=x.device)`) "
        "or move it once, outside the loop, with `non_blocking=True` from pinned memory",
        no_static="which index tensors live on the host is a run-time fact",
        source="test/test_torch.py: test_sync_warning (`_ind_get_fn(x, ind_cpu)` syncs)",
    ),
    SyncOp(
        code="SL401",
        name="host value written through an index",
        aten=("index_put", "index_put_", "_index_put_impl"),
        condition=SyncCondition.HOST_VALUE,
        why="`x[idx] = v` with a Python number or a CPU tensor `v` uploads `v` with a "
        "blocking copy before the kernel runs (one boolean mask and a one-element value "
        "take the sync-free `masked_fill_` path instead)",
        use_instead="write a device value (`x[idx] = torch.full((), v, device=x.device)`, "
        "created once), `x.index_fill_(0, idx, v)` for one index dimension, or "
        "`torch.where` with a mask",
        no_static="whether the index is a tensor and the target lives on the device is a "
        "run-time fact",
        source="aten/src/ATen/native/TensorAdvancedIndexing.cpp: _index_put_impl_ "
        "(value.to(self.device()); canDispatchToMaskedFill); measured on an H100",
    ),
    SyncOp(
        code="SL403",
        name="tensor from host data on the device",
        functions=("torch.tensor", "torch.as_tensor"),
        condition=SyncCondition.HOST_DATA,
        why="`torch.tensor(data, device=cuda)` builds the tensor on the host and copies "
        "it with a blocking transfer",
        use_instead="`torch.full`/`torch.zeros` with `device=`, or build it once outside the loop",
        source="torch/csrc/utils/tensor_new.cpp: internal_new_from_data (to(device, non_blocking=false))",
    ),
    SyncOp(
        code="SL404",
        name="non-blocking copy through pageable memory",
        aten=("copy_",),
        python_hooks=("to", "cuda"),
        condition=SyncCondition.PAGEABLE_NON_BLOCKING,
        why="a `non_blocking=True` copy between the device and pageable host memory "
        "is synchronous for the host (the driver stages it)",
        use_instead="`.pin_memory()` the host buffer (or `DataLoader(pin_memory=True)`)",
        no_static="SL404 matches fresh pageable sources by its own spelling check",
        source="aten/src/ATen/native/cuda/Copy.cu: copy_kernel_cuda (cudaMemcpyAsync "
        "on pageable memory); CUDA runtime API, 'API synchronization behavior'",
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
        python_hooks=("synchronize",),
        condition=SyncCondition.IN_HOT_PATH,
        why="an explicit synchronize drains the device queue and idles the CPU",
        use_instead="remove it from the hot path; time with CUDA events or the profiler",
        source="c10/cuda/CUDAFunctions.cpp: device_synchronize; "
        "c10/cuda/CUDAFunctions.h: stream_synchronize",
    ),
)


_EVERY = NumberArguments()
_FACTORY_SIZES = NumberArguments(keywords=("size", "n", "m"))
#: For the TENSOR_AS_NUMBER entries: which arguments of each callable PyTorch converts to a
#: Python number (checked against torch 2.13 with a dispatch mode: a tensor there dispatches
#: ``_local_scalar_dense``, or, for linspace/logspace, runs the Tensor overload's ``item()``).
NUMBER_ARGUMENTS: dict[str, NumberArguments] = {
    "torch.arange": NumberArguments(keywords=("start", "end", "step")),
    "torch.range": NumberArguments(keywords=("start", "end", "step")),
    "torch.linspace": NumberArguments(keywords=("start", "end", "steps")),
    "torch.logspace": NumberArguments(keywords=("start", "end", "steps", "base")),
    "torch.zeros": _FACTORY_SIZES,
    "torch.ones": _FACTORY_SIZES,
    "torch.empty": _FACTORY_SIZES,
    "torch.rand": _FACTORY_SIZES,
    "torch.randn": _FACTORY_SIZES,
    "torch.randperm": _FACTORY_SIZES,
    "torch.eye": _FACTORY_SIZES,
    "torch.full": NumberArguments(keywords=("size", "fill_value")),
    "torch.full_like": NumberArguments(positions=(1,), keywords=("fill_value",)),
    "torch.randint": NumberArguments(keywords=("low", "high", "size")),
    "torch.Tensor.new_zeros": NumberArguments(keywords=("size",)),
    "torch.Tensor.new_ones": NumberArguments(keywords=("size",)),
    "torch.Tensor.new_empty": NumberArguments(keywords=("size",)),
    "torch.Tensor.new_full": NumberArguments(keywords=("size", "fill_value")),
    "torch.Tensor.view": NumberArguments(keywords=("size",)),
    "torch.Tensor.reshape": NumberArguments(keywords=("shape",)),
    "torch.Tensor.expand": NumberArguments(keywords=("size",)),
    "torch.Tensor.repeat": NumberArguments(keywords=("repeats",)),
    "torch.Tensor.narrow": NumberArguments(keywords=("dim", "start", "length")),
    "torch.Tensor.topk": NumberArguments(positions=(0,), keywords=("k",)),
    "torch.narrow": NumberArguments(positions=(1, 2, 3), keywords=("dim", "start", "length")),
    "torch.topk": NumberArguments(positions=(1,), keywords=("k",)),
    # Without `alpha=`, a 0-dim tensor picks the Scalar overload; with it, the Tensor one.
    **{f"torch._foreach_{op}{suffix}": NumberArguments((1,), ("scalar",), unless="alpha")
       for op in ("add", "sub") for suffix in ("", "_")},
    # A positional tensor picks the sync-free Tensor overload; `scalar=` names the Scalar one.
    **{f"torch._foreach_{op}{suffix}": NumberArguments((), ("scalar",))
       for op in ("mul", "div") for suffix in ("", "_")},
    **{f"torch._foreach_{op}{suffix}": NumberArguments((1,), ("scalar",))
       for op in ("clamp_max", "clamp_min", "maximum", "minimum") for suffix in ("", "_")},
    **{f"torch._foreach_pow{suffix}": NumberArguments((1,), ("exponent",)) for suffix in ("", "_")},
    **{f"torch._foreach_lerp{suffix}": NumberArguments((2,), ("weight",)) for suffix in ("", "_")},
    # A positional 0-dim tensor is the `scalars` Tensor overload (it must be 1-dim and on the CPU).
    **{f"torch._foreach_{op}{suffix}": NumberArguments((), ("value",))
       for op in ("addcmul", "addcdiv") for suffix in ("", "_")},
}


def number_arguments(qualified_name: str) -> NumberArguments | None:
    """Which arguments of ``qualified_name`` PyTorch reads as Python numbers, if any."""
    return NUMBER_ARGUMENTS.get(qualified_name)


def entry(code: str, name: str) -> SyncOp:
    """The entry reported as ``code`` with this ``name`` (rules word messages from it)."""
    for op in CATALOGUE:
        if op.code == code and op.name == name:
            return op
    raise KeyError(f"no catalogue entry {code} {name!r}")


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
