"""Python-level entry points that sync without dispatching a tell-tale ATen op.

``.tolist()`` dispatches nothing, ``.cpu()`` and ``.to("cpu")`` are no-ops on a
CPU tensor, and ``F.one_hot`` runs CPU-only range checks (``.item()``) that its
CUDA path skips. A ``TorchFunctionMode`` sees these calls with their Python
arguments intact, so they are decided here, and the dispatch-level detector is
muted while they run (one user action, one event).
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
from synclint.runtime.residency import mark_host

if TYPE_CHECKING:
    from synclint.runtime.detector import Detector

Handler = Callable[[Any, Sequence[Any], dict[str, Any]], Any]

#: In a CPU-only run ``.to(device)`` with ``device == "cpu"`` is how portable
#: scripts move data *to the accelerator*; only a literal ``"cpu"`` on the
#: calling line says "read back to the host".
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
    """Handlers for a CPU run: decide "would this sync on CUDA?" from the Python call."""

    def __init__(self, detector: Detector) -> None:
        self._detector = detector
        self._spelled_cpu: dict[tuple[str, int], bool] = {}
        self.table: dict[Any, Handler] = {}
        for entry in CATALOGUE:
            if entry.condition is SyncCondition.ALWAYS:
                for name in entry.python_hooks:
                    self._add_tensor_hook(name, self._readback(f"Tensor.{name}", entry))
        to_host = _entry_with_hook("cpu", SyncCondition.DEVICE_TO_HOST)
        self._add_tensor_hook("cpu", self._cpu(to_host))
        self._add_tensor_hook("to", self._to(to_host))
        self._add_tensor_hook("__setitem__", self._setitem)
        for entry in CATALOGUE:
            if entry.condition is SyncCondition.NO_NUM_CLASSES:
                for name in entry.functions:
                    func = resolve(name)
                    if func is not None:
                        self.table[func] = self._one_hot(name, entry)

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
    if "non_blocking" in kwargs:
        return bool(kwargs["non_blocking"])
    return any(isinstance(arg, bool) and arg for arg in args[1:])


class ObservingHooks:
    """Handlers for a CUDA run: the sync debug mode decides; hooks only name the op."""

    def __init__(self, detector: Detector) -> None:
        self.table: dict[Any, Handler] = {}
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


def _naming(detector: Detector, label: str, entry: SyncOp) -> Handler:
    def naming(func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        with detector.python_hook(label, entry):
            return func(*args, **kwargs)

    return naming
