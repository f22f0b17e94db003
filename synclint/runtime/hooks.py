"""Python-level entry points that sync without dispatching a tell-tale ATen op.

``.tolist()`` dispatches nothing, ``.cpu()`` and ``.to("cpu")`` are no-ops on a
CPU tensor, and ``F.one_hot`` runs CPU-only range checks (``.item()``) that its
CUDA path skips. A ``TorchFunctionMode`` sees these calls with their Python
arguments intact, so they are decided here, and the dispatch-level detector is
muted while they run (one user action, one event). With the simulated CUDA
device the same mode plays the device (``device="cuda"``, uploads, ``x.device``).
"""

from __future__ import annotations

import importlib
import linecache
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch

from synclint.catalogue import CATALOGUE, SyncCondition, SyncOp
from synclint.runtime.frames import user_frame
from synclint.runtime.residency import DEVICE, HOST, PINNED, mark, mark_all, mark_host, residency_of
from synclint.runtime.simcuda import is_accelerator

if TYPE_CHECKING:
    from synclint.runtime.detector import Detector

Handler = Callable[[Any, Sequence[Any], dict[str, Any]], Any]

#: Without the simulated CUDA device (every tensor counts as device-resident),
#: ``.to(device)`` with ``device == "cpu"`` is how portable scripts move data
#: *to the accelerator*; only a literal ``"cpu"`` on the calling line says "read
#: back to the host". With the simulated device, residency decides instead.
_LITERAL_CPU = re.compile(r"""["']cpu(:\d+)?["']""")


def resolve(qualified_name: str) -> Any:
    """``"torch.nn.functional.one_hot"`` -> the callable, or None when absent."""
    module_name, _, attribute = qualified_name.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError):
        return None


def _entry_with_hook(name: str, condition: SyncCondition) -> SyncOp:
    return next(e for e in CATALOGUE if name in e.python_hooks and e.condition is condition)


class SimulatedHooks:
    """Handlers for a CPU run: decide "would this sync on CUDA?" from the Python call.

    With a simulated CUDA device (``tracked`` residency) they also play the
    device: ``device="cuda"`` becomes ``"cpu"`` with the result marked
    device-resident, ``.to(device)``/``.cuda()`` are uploads, ``.cpu()`` a
    read-back, and ``x.device`` answers ``cuda:0`` for device-resident tensors.
    """

    def __init__(self, detector: Detector) -> None:
        self._detector = detector
        self._tracked = detector.residency.tracked
        self._spelled_cpu: dict[tuple[str, int], bool] = {}
        self.table: dict[Any, Handler] = {}
        self.fallback: Handler | None = self._device_keyword if self._tracked else None
        for entry in CATALOGUE:
            if entry.condition is SyncCondition.ALWAYS:
                for name in entry.python_hooks:
                    self._add_tensor_hook(name, self._readback(f"Tensor.{name}", entry))
                if entry.python_hooks:  # its callables read back the same way (torch.is_nonzero)
                    for name in entry.functions:
                        func = resolve(name)
                        if func is not None:
                            self.table[func] = self._readback(name, entry)
                    for name in entry.methods:
                        if name not in entry.python_hooks:
                            self._add_tensor_hook(name, self._readback(f"Tensor.{name}", entry))
        self._to_host = _entry_with_hook("cpu", SyncCondition.DEVICE_TO_HOST)
        self._upload = _entry_with_hook("cuda", SyncCondition.HOST_TO_DEVICE)
        self._pageable = _entry_with_hook("to", SyncCondition.PAGEABLE_NON_BLOCKING)
        self._host_data = next(e for e in CATALOGUE if e.condition is SyncCondition.HOST_DATA)
        self._element_readback = _entry_with_hook("item", SyncCondition.ALWAYS)
        self._lengths = next(e for e in CATALOGUE if e.condition is SyncCondition.TENSOR_LENGTHS)
        self._add_tensor_hook("cpu", self._cpu(self._to_host))
        self._add_tensor_hook("to", self._to(self._to_host))
        self._add_tensor_hook("__setitem__", self._setitem)
        for entry in CATALOGUE:
            if entry.condition is SyncCondition.NO_NUM_CLASSES:
                for name in entry.functions:
                    func = resolve(name)
                    if func is not None:
                        self.table[func] = self._one_hot(name, entry)
        self.table[torch.ctc_loss] = self._ctc_loss
        self.table[torch.nn.functional.ctc_loss] = self._ctc_loss
        if self._tracked:
            self._add_tensor_hook("cuda", self._cuda)
            self.table[torch.Tensor.device.__get__] = self._device
            self.table[torch.Tensor.is_cuda.__get__] = self._is_cuda
            self.table[torch.Tensor.is_cpu.__get__] = self._is_cpu
            self.table[torch.Tensor.get_device] = self._get_device
            self.table[torch.Tensor.data.__get__] = self._data_get
            self.table[torch.Tensor.data.__set__] = self._data_set
            self.table[torch.Tensor.new_tensor] = self._new_tensor
        for name in self._host_data.functions:
            func = resolve(name)
            if func is not None:
                self.table[func] = self._from_data

    def _add_tensor_hook(self, name: str, handler: Handler) -> None:
        func = getattr(torch.Tensor, name, None)
        if func is not None:
            self.table[func] = handler

    def _readback(self, label: str, entry: SyncOp) -> Handler:
        detector = self._detector

        def readback(func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
            if not detector.ctx.is_host(args[0]):
                detector.report(label, entry)
            return detector.call_muted(func, args, kwargs)

        return readback

    def _cpu(self, entry: SyncOp) -> Handler:
        detector = self._detector

        def cpu(func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
            if detector.ctx.is_host(args[0]):
                return detector.call_muted(func, args, kwargs)
            detector.report("Tensor.cpu", entry)
            return _host_copy(detector.call_muted(func, args, kwargs), args[0], detector)

        return cpu

    def _to(self, entry: SyncOp) -> Handler:
        detector = self._detector

        def to(func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
            if self._tracked:
                return self._tracked_to(func, args, kwargs)
            source = args[0]
            if (
                _target_device_type(args, kwargs) != "cpu"
                or detector.ctx.is_host(source)
                or not self._caller_spells_cpu()
            ):
                return detector.call_muted(func, args, kwargs)
            if not _non_blocking(args, kwargs):
                detector.report("Tensor.to", entry)
            return _host_copy(detector.call_muted(func, args, kwargs), source, detector)

        return to

    # -- the simulated device (tracked residency) -----------------------------
    def _tracked_to(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        detector = self._detector
        source = args[0]
        target = _tracked_target(args, kwargs)
        on_device = not detector.ctx.is_host(source)
        cpu_args, cpu_kwargs = _on_cpu(args, kwargs)
        if target is None or (target == "cuda") == on_device:
            return detector.call_muted(func, cpu_args, cpu_kwargs)  # a cast, or already there
        non_blocking = _non_blocking(args, kwargs)
        result = detector.call_muted(func, cpu_args, cpu_kwargs)
        if result is source:
            result = detector.call_muted(torch.Tensor.clone, (source,), {})
        if target == "cuda":
            self._upload_event("Tensor.to", source, non_blocking)
            mark(result, DEVICE)
            return result
        if not non_blocking:
            detector.report("Tensor.to", self._to_host)
        # `.to("cpu", non_blocking=True)` allocates a pinned destination (_to_copy).
        mark(result, PINNED if non_blocking else HOST)
        return result

    def _upload_event(self, label: str, source: torch.Tensor, non_blocking: bool) -> None:
        if source.numel() == 0:
            return
        if not non_blocking:
            self._detector.report(label, self._upload)
        elif not self._detector.ctx.is_pinned(source):
            self._detector.report(label, self._pageable)

    def _cuda(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        detector = self._detector
        source = args[0]
        if not detector.ctx.is_host(source):
            return source
        non_blocking = bool(kwargs.get("non_blocking", len(args) > 2 and args[2]))
        self._upload_event("Tensor.cuda", source, non_blocking)
        result = detector.call_muted(torch.Tensor.clone, (source,), {})
        mark(result, DEVICE)
        return result

    def _device(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        return _CUDA if residency_of(args[0]) == DEVICE else func(*args, **kwargs)

    def _is_cuda(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        return residency_of(args[0]) == DEVICE

    def _is_cpu(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        return residency_of(args[0]) != DEVICE

    def _get_device(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        return 0 if residency_of(args[0]) == DEVICE else -1

    def _data_get(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        result = func(*args, **kwargs)
        where = residency_of(args[0])
        if where is not None:
            mark(result, where)
        return result

    def _data_set(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        # `module.to(device)` swaps each parameter's data for the uploaded copy.
        result = func(*args, **kwargs)
        where = residency_of(args[1]) if len(args) > 1 else None
        if where is not None:
            mark(args[0], where)
        return result

    def _device_keyword(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """Any torch call with ``device="cuda"`` (factories) or ``pin_memory=True``."""
        device = kwargs.get("device")
        if device is not None and is_accelerator(device):
            kwargs = dict(kwargs, device="cpu")
            kwargs.pop("pin_memory", None)
            # Not muted: a device tensor given as a number (`torch.full((n,), t, device=d)`)
            # is still read back, and the dispatch detector must see that.
            return mark_all(func(*args, **kwargs), DEVICE)
        if kwargs.get("pin_memory"):
            kwargs = dict(kwargs)
            del kwargs["pin_memory"]
            return mark_all(func(*args, **kwargs), PINNED)
        return func(*args, **kwargs)

    def _read_elements(self, label: str, data: Any) -> None:
        """``torch.tensor([t1, t2])``: internal_new_from_data reads each tensor element of
        the nested data into a host buffer, in C++ where no read-back is dispatched; each
        one on the device is a sync."""
        for _ in range(_device_elements(data, self._detector.ctx.is_host)):
            self._detector.report(label, self._element_readback)

    def _from_data(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """``torch.tensor(data, device="cuda")``: built on the host, then a blocking copy."""
        self._read_elements(_qualified(func), args[0] if args else kwargs.get("data"))
        if not self._tracked:
            return self._detector.call_muted(func, args, kwargs)
        device = kwargs.get("device")
        if device is None or not is_accelerator(device):
            return self._device_keyword(func, args, kwargs)
        data = args[0] if args else kwargs.get("data")
        if not (isinstance(data, torch.Tensor) and not self._detector.ctx.is_host(data)):
            self._detector.report(_qualified(func), self._host_data)
        return self._device_keyword(func, args, kwargs)

    def _new_tensor(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        self._read_elements("Tensor.new_tensor", args[1] if len(args) > 1 else kwargs.get("data"))
        source = args[0]
        device = kwargs.get("device")
        to_device = is_accelerator(device) if device is not None else not self._detector.ctx.is_host(source)
        if not to_device:
            return self._device_keyword(func, args, kwargs)
        self._detector.report("Tensor.new_tensor", self._host_data)
        kwargs = dict(kwargs, device="cpu")
        return mark_all(self._detector.call_muted(func, args, kwargs), DEVICE)

    def _ctc_loss(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        # The Tensor-lengths overload copies device lengths to the host (LossCTC.cpp).
        lengths = [a for a in (*args[2:4], kwargs.get("input_lengths"), kwargs.get("target_lengths"))]
        if any(isinstance(t, torch.Tensor) and not self._detector.ctx.is_host(t) for t in lengths):
            self._detector.report(_qualified(func), self._lengths)
        return self._detector.call_muted(func, args, kwargs)

    def _setitem(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        # Not decided here: the dispatch detector judges the `index_put_` this
        # becomes, but it can no longer tell a Python number from a tensor value.
        ctx = self._detector.ctx
        before = ctx.python_scalar_value
        ctx.python_scalar_value = len(args) > 2 and isinstance(args[2], (int, float, complex))
        try:
            return func(*args, **kwargs)
        finally:
            ctx.python_scalar_value = before

    def _one_hot(self, label: str, entry: SyncOp) -> Handler:
        detector = self._detector

        def one_hot(func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
            num_classes = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
            if num_classes == -1 and not detector.ctx.is_host(args[0]):
                detector.report(label, entry)
            return detector.call_muted(func, args, kwargs)

        return one_hot

    def _caller_spells_cpu(self) -> bool:
        frame = user_frame(sys._getframe(1))
        if frame is None:
            return True  # torch itself asked for the host
        key = (frame.f_code.co_filename, frame.f_lineno)
        spelled = self._spelled_cpu.get(key)
        if spelled is None:
            spelled = bool(_LITERAL_CPU.search(linecache.getline(*key)))
            self._spelled_cpu[key] = spelled
        return spelled


_CUDA = torch.device("cuda", 0)


def _device_elements(data: Any, is_host: Callable[[torch.Tensor], bool]) -> int:
    """How many device tensors a nested list/tuple of data holds (a tensor as the whole
    data is copied, not read element by element)."""
    if type(data) not in (list, tuple):
        return 0
    count = 0
    for item in data:
        if isinstance(item, torch.Tensor):
            count += not is_host(item)
        elif type(item) in (list, tuple):
            count += _device_elements(item, is_host)
    return count


def _qualified(func: Any) -> str:
    module = getattr(func, "__module__", None) or "torch"
    return f"{module}.{getattr(func, '__name__', func)}".replace("torch._C._VariableFunctions", "torch")


def _tracked_target(args: Sequence[Any], kwargs: dict[str, Any]) -> str | None:
    """``cuda``, ``cpu`` or None (a dtype-only ``.to``), with device-resident tensors as CUDA."""
    target = kwargs.get("device")
    if target is None:
        for arg in args[1:]:
            if isinstance(arg, torch.Tensor):
                return "cuda" if residency_of(arg) == DEVICE else "cpu"
            if isinstance(arg, (str, torch.device)) or (isinstance(arg, int) and not isinstance(arg, bool)):
                target = arg
                break
    if target is None:
        return None
    return "cuda" if is_accelerator(target) else "cpu"


def _on_cpu(args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[Sequence[Any], dict[str, Any]]:
    """The same ``.to`` call with any accelerator device replaced by the CPU."""
    if "device" in kwargs and kwargs["device"] is not None and is_accelerator(kwargs["device"]):
        kwargs = dict(kwargs, device="cpu")
    if any(is_accelerator(a) for a in args[1:] if not isinstance(a, torch.Tensor)):
        args = [args[0], *("cpu" if not isinstance(a, torch.Tensor) and is_accelerator(a) else a for a in args[1:])]
    return args, kwargs


def _host_copy(result: Any, source: torch.Tensor, detector: Detector) -> Any:
    """On CUDA a device-to-host copy is a new tensor; on the CPU ``.cpu()`` returns ``self``."""
    if not isinstance(result, torch.Tensor):
        return result
    if result is source:
        result = detector.call_muted(torch.Tensor.clone, (source,), {})
    mark_host(result)
    return result


def _target_device_type(args: Sequence[Any], kwargs: dict[str, Any]) -> str | None:
    target = kwargs.get("device")
    if target is None:
        for arg in args[1:]:
            if isinstance(arg, (str, torch.device)):
                target = arg
                break
            if isinstance(arg, torch.Tensor):
                target = arg.device
                break
            if isinstance(arg, int) and not isinstance(arg, bool):
                return "accelerator"  # `.to(0)`: a device ordinal
    if target is None:
        return None
    return torch.device(target).type


def _non_blocking(args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    """``Tensor.to``'s flag (``args[0]`` is the tensor): by keyword, or by position, second
    after a dtype or another tensor (``to(dtype, non_blocking, copy)``, ``to(other,
    non_blocking, copy)``) and third after a device (``to(device, dtype, non_blocking,
    copy)``). The ``copy`` flag after it says nothing about waiting."""
    if "non_blocking" in kwargs:
        return bool(kwargs["non_blocking"])
    first = args[1] if len(args) > 1 else None
    index = 2 if isinstance(first, (torch.dtype, torch.Tensor)) else 3
    return len(args) > index and bool(args[index])


class ObservingHooks:
    """Handlers for a CUDA run: the sync debug mode decides; hooks only name the op."""

    def __init__(self, detector: Detector) -> None:
        self.table: dict[Any, Handler] = {}
        upload = _entry_with_hook("cuda", SyncCondition.HOST_TO_DEVICE)
        download = _entry_with_hook("cpu", SyncCondition.DEVICE_TO_HOST)
        self.table[torch.Tensor.to] = _transfer_naming(detector, "Tensor.to", upload, download)
        self.table[torch.Tensor.cuda] = _transfer_naming(detector, "Tensor.cuda", upload, download)
        for entry in CATALOGUE:
            for name in entry.python_hooks:
                func = getattr(torch.Tensor, name, None)
                if func is not None:
                    self.table.setdefault(func, _naming(detector, f"Tensor.{name}", entry))
            if entry.condition is SyncCondition.NO_NUM_CLASSES:
                for name in entry.functions:
                    func = resolve(name)
                    if func is not None:
                        self.table.setdefault(func, _naming(detector, name, entry))


def _transfer_naming(detector: Detector, label: str, upload: SyncOp, download: SyncOp) -> Handler:
    """``.to``/``.cuda``: a blocking upload (SL401) from the host, else a read-back (SL201)."""

    def naming(func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        source = args[0]
        entry = upload if isinstance(source, torch.Tensor) and source.device.type == "cpu" else download
        with detector.python_hook(label, entry):
            return func(*args, **kwargs)

    return naming


def _naming(detector: Detector, label: str, entry: SyncOp) -> Handler:
    def naming(func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        with detector.python_hook(label, entry):
            return func(*args, **kwargs)

    return naming
