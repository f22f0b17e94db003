"""A simulated CUDA device for CPU-only runs: the program sees ``cuda``, synclint keeps score.

``synclint run --device cpu`` (and :func:`simulate_cuda`) let a script written
the usual way::

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

take its CUDA branch on a machine without a GPU. Tensors it puts "on the
device" are stored on the CPU and marked device-resident
(:mod:`synclint.runtime.residency`); the detector's hooks
(:mod:`synclint.runtime.hooks`) turn ``device="cuda"`` into ``"cpu"``, report
uploads and read-backs, and answer ``x.device`` / ``x.is_cuda`` as CUDA would.

What is patched here, process-wide and only while a simulation is active:

* queries: ``torch.cuda.is_available/device_count/current_device/
  get_device_name/get_device_capability/is_bf16_supported/
  is_current_stream_capturing``, ``torch.accelerator.is_available/
  device_count/current_accelerator/current_device_index``;
* explicit synchronisation, reported as SL501 events: ``torch.cuda.synchronize``,
  ``torch.cuda.empty_cache``, ``torch.accelerator.synchronize`` and
  ``Stream.synchronize`` / ``Event.synchronize`` of the simulated
  ``torch.cuda.Stream`` / ``torch.cuda.Event`` (``current_stream``,
  ``default_stream``, ``stream(...)`` work; timings read 0);
* memory statistics read 0; ``set_device``, ``manual_seed[_all]`` do nothing;
* pinned memory: ``Tensor.pin_memory()`` returns a copy marked pinned and
  ``is_pinned()`` says so, in every thread (DataLoader's pin thread too).

Not simulated (see docs/runtime.md): CUDA graphs, ``torch.cuda.Generator``,
custom CUDA kernels and extensions, NCCL, ``torch.compile`` with the inductor
CUDA backend, and anything that asks the CUDA runtime directly.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from synclint.catalogue import entry
from synclint.runtime.residency import DEVICE, PINNED, mark, residency_of

_SYNCHRONIZE = entry("SL501", "explicit synchronize")
DEVICE_NAME = "synclint simulated CUDA (tensors on the CPU)"

_lock = threading.Lock()
_depth = 0
_saved: list[tuple[Any, str, Any]] = []


def active() -> bool:
    """Is a simulated CUDA device installed?"""
    return _depth > 0


def is_accelerator(device: Any) -> bool:
    """Does a ``device=`` value name the (simulated) accelerator?"""
    import torch

    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device.startswith("cuda")
    return isinstance(device, int) and not isinstance(device, bool)


def _report(op: str) -> None:
    from synclint.runtime.api import current_detector

    detector = current_detector()
    if detector is not None:
        detector.report(op, _SYNCHRONIZE)


def _cuda_device() -> Any:
    import torch

    return torch.device("cuda", 0)


class Stream:
    """A stream of the simulated device: work is already done when queued."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = _cuda_device()
        self.priority = priority
        self.cuda_stream = 0

    def synchronize(self) -> None:
        _report("Stream.synchronize")

    def wait_stream(self, stream: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> Event:
        event = event if event is not None else Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def is_capturing(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream)

    def __hash__(self) -> int:
        return 0


class Event:
    """An event of the simulated device (``elapsed_time`` reads 0)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.enable_timing = enable_timing

    def record(self, stream: Any = None) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        _report("Event.synchronize")

    def elapsed_time(self, end_event: Any) -> float:
        return 0.0


_DEFAULT_STREAM = Stream()


def _synchronize(device: Any = None) -> None:
    _report("torch.cuda.synchronize")


def _accelerator_synchronize(device: Any = None) -> None:
    _report("torch.accelerator.synchronize")


def _empty_cache() -> None:
    _report("torch.cuda.empty_cache")


@contextlib.contextmanager
def _stream_context(stream: Any) -> Iterator[None]:
    yield


def _pin_memory(self: Any, device: Any = None) -> Any:
    import torch

    copy = torch.Tensor.clone(self)
    mark(copy, PINNED)
    return copy


def _is_pinned(self: Any, device: Any = None) -> bool:
    return residency_of(self) == PINNED


def _constant(value: Any) -> Callable[..., Any]:
    return lambda *args, **kwargs: value


def _patches() -> list[tuple[Any, str, Any]]:
    import torch

    cuda = torch.cuda
    patches: list[tuple[Any, str, Any]] = [
        (cuda, "is_available", _constant(True)),
        (cuda, "device_count", _constant(1)),
        (cuda, "current_device", _constant(0)),
        (cuda, "set_device", _constant(None)),
        (cuda, "get_device_name", _constant(DEVICE_NAME)),
        (cuda, "get_device_capability", _constant((8, 0))),
        (cuda, "is_bf16_supported", _constant(True)),
        (cuda, "is_current_stream_capturing", _constant(False)),
        (cuda, "synchronize", _synchronize),
        (cuda, "empty_cache", _empty_cache),
        (cuda, "manual_seed", _constant(None)),
        (cuda, "manual_seed_all", _constant(None)),
        (cuda, "Stream", Stream),
        (cuda, "Event", Event),
        (cuda, "current_stream", _constant(_DEFAULT_STREAM)),
        (cuda, "default_stream", _constant(_DEFAULT_STREAM)),
        (cuda, "stream", _stream_context),
        (cuda, "set_stream", _constant(None)),
        (torch.Tensor, "pin_memory", _pin_memory),
        (torch.Tensor, "is_pinned", _is_pinned),
    ]
    for name in (
        "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    ):
        patches.append((cuda, name, _constant(0)))
    for name in ("reset_peak_memory_stats", "reset_max_memory_allocated", "reset_accumulated_memory_stats"):
        patches.append((cuda, name, _constant(None)))
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        patches += [
            (accelerator, "is_available", _constant(True)),
            (accelerator, "device_count", _constant(1)),
            (accelerator, "current_device_index", _constant(0)),
            (accelerator, "set_device_index", _constant(None)),
            (accelerator, "current_accelerator", lambda *a, **k: _cuda_device()),
            (accelerator, "synchronize", _accelerator_synchronize),
            (accelerator, "current_stream", _constant(_DEFAULT_STREAM)),
            (accelerator, "set_stream", _constant(None)),
        ]
    return patches


def install() -> None:
    """Install the simulated device (reference counted)."""
    global _depth
    with _lock:
        if _depth == 0:
            for owner, name, value in _patches():
                _saved.append((owner, name, owner.__dict__.get(name, _MISSING)))
                setattr(owner, name, value)
        _depth += 1


def uninstall() -> None:
    global _depth
    with _lock:
        _depth -= 1
        if _depth:
            return
        while _saved:
            owner, name, value = _saved.pop()
            if value is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


_MISSING = object()


@contextlib.contextmanager
def simulate_cuda() -> Iterator[None]:
    """Let the block see a CUDA device whose tensors live on the CPU, tracked by synclint.

    Sessions (:func:`synclint.watch`, :func:`synclint.no_sync`) opened inside
    the block judge residency as a CUDA run would: only what the program puts
    on the device counts as device-resident.
    """
    install()
    try:
        yield
    finally:
        uninstall()


def mark_device(result: Any) -> Any:
    from synclint.runtime.residency import mark_all

    return mark_all(result, DEVICE)
