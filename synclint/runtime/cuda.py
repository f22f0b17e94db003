"""The CUDA path: PyTorch's sync debug mode decides, the profiler measures.

* :class:`DebugModeLevel` sets ``torch.cuda.set_sync_debug_mode`` for as long as
  sessions need it and restores the previous level after the last one. The
  setting is process-wide: "error" only while ``no_sync`` is the sole client,
  otherwise "warn" (``no_sync`` then raises from the routed warning).
* :class:`WarningRouter` sees *every* sync warning (an "always" filter for that
  message only, so other warnings keep their once-per-location behaviour) and
  hands it to the detector of the thread that raised it.
* :func:`blocked_ms_by_line` turns profiler events into host time blocked per
  user line; :class:`HostBlockProfiler` records them (and the Chrome trace).
"""

from __future__ import annotations

import os
import re
import sys
import threading
import warnings
from collections.abc import Iterable
from typing import Any

from synclint.runtime.detector import CUDA_SYNC_MESSAGE, Detector, detector_in_this_thread
from synclint.runtime.frames import absolute_path, is_internal, parse_profiler_frame

#: CUDA runtime calls and Kineto sync events during which the host waits.
BLOCKING_CALLS = frozenset(
    {
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
        "cudaMemcpy",
        "cudaMemcpyAsync",  # pageable copies block inside the call
        "Stream Sync",
        "Event Sync",
        "Context Sync",
    }
)


class DebugModeLevel:
    """Reference-counted ``torch.cuda`` sync debug mode ("warn" / "error")."""

    def __init__(self, cuda: Any = None) -> None:
        self._cuda = cuda  # injectable for tests; torch.cuda by default
        self._lock = threading.Lock()
        self._clients = {"warn": 0, "error": 0}
        self._saved: Any = None

    @property
    def cuda(self) -> Any:
        if self._cuda is None:
            import torch.cuda

            self._cuda = torch.cuda
        return self._cuda

    def acquire(self, level: str) -> None:
        with self._lock:
            if not any(self._clients.values()):
                self._saved = self.cuda.get_sync_debug_mode()
            self._clients[level] += 1
            self._apply()

    def release(self, level: str) -> None:
        with self._lock:
            self._clients[level] -= 1
            if any(self._clients.values()):
                self._apply()
            else:
                self.cuda.set_sync_debug_mode(self._saved)

    @property
    def level(self) -> str:
        return "error" if self._clients["error"] and not self._clients["warn"] else "warn"

    def _apply(self) -> None:
        self.cuda.set_sync_debug_mode(self.level)


class WarningRouter:
    """Reference-counted ``warnings.showwarning`` hook for sync warnings."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients = 0
        self._filter: tuple[Any, ...] | None = None
        self._previous_show: Any = None
        self.fallback: Detector | None = None
        """Gets warnings raised where no detector runs (the ``synclint run`` one)."""

    def acquire(self, detector: Detector) -> None:
        with self._lock:
            if self._clients == 0:
                warnings.filterwarnings(
                    "always", message=f".*{re.escape(CUDA_SYNC_MESSAGE)}", category=UserWarning
                )
                self._filter = warnings.filters[0]
                self._previous_show = warnings.showwarning
                warnings.showwarning = self._show
                self.fallback = detector
            self._clients += 1

    def release(self) -> None:
        with self._lock:
            self._clients -= 1
            if self._clients:
                return
            if self._filter in warnings.filters:
                warnings.filters.remove(self._filter)
                warnings._filters_mutated()  # type: ignore[attr-defined]
            if warnings.showwarning == self._show:
                warnings.showwarning = self._previous_show
            self.fallback = None

    def _show(self, message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
        if issubclass(category, UserWarning) and CUDA_SYNC_MESSAGE in str(message):
            detector = detector_in_this_thread() or self.fallback
            if detector is not None:
                detector.on_cuda_sync()
                return
        self._previous_show(message, category, filename, lineno, file, line)


DEBUG_MODE = DebugModeLevel()
WARNING_ROUTER = WarningRouter()


def blocked_ms_by_line(events: Iterable[Any]) -> dict[tuple[str, int], float]:
    """Host time spent in blocking CUDA calls, per user ``(path, line)``.

    ``events`` are profiler ``FunctionEvent`` s (``name``, ``time_range``,
    ``cpu_parent``, ``stack``). A blocking call is charged to the first user
    frame of its nearest ancestor that has a Python stack.
    """
    blocked: dict[tuple[str, int], float] = {}
    for location, by_code in blocked_ms_by_line_and_code(events).items():
        blocked[location] = sum(by_code.values())
    return blocked


#: The hazard a blocking call stands for where no debug-mode event explains it:
#: copies block only when they go through pageable memory (SL404); the rest
#: are explicit synchronisation (SL501).
_COPY_CALLS = frozenset({"cudaMemcpy", "cudaMemcpyAsync"})


def blocked_code(call: str) -> str:
    return "SL404" if call in _COPY_CALLS else "SL501"


def blocked_ms_by_line_and_code(events: Iterable[Any]) -> dict[tuple[str, int], dict[str, float]]:
    """Like :func:`blocked_ms_by_line`, split by :func:`blocked_code`."""
    blocked: dict[tuple[str, int], dict[str, float]] = {}
    for event in events:
        if event.name not in BLOCKING_CALLS:
            continue
        location = _user_line_of(event)
        if location is not None:
            by_code = blocked.setdefault(location, {})
            code = blocked_code(event.name)
            by_code[code] = by_code.get(code, 0.0) + event.time_range.elapsed_us() / 1e3
    return blocked


class SyncCallNames:
    """Reports explicit synchronisation on CUDA: ``torch.cuda.synchronize``,
    ``Stream.synchronize``, ``Event.synchronize`` and ``torch.accelerator.synchronize``
    are SL501 events of their own. The sync debug mode cannot be relied on for them:
    on an H100 (torch 2.11) it stayed silent for ``cudaDeviceSynchronize`` and
    ``cudaEventSynchronize`` and warned once for ``Stream.synchronize`` (that warning
    is not counted again). Reference counted; patches only while CUDA sessions are open."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients = 0
        self._saved: list[tuple[Any, str, Any]] = []

    def acquire(self) -> None:
        with self._lock:
            if self._clients == 0:
                self._install()
            self._clients += 1

    def release(self) -> None:
        with self._lock:
            self._clients -= 1
            if self._clients == 0:
                while self._saved:
                    owner, name, value = self._saved.pop()
                    setattr(owner, name, value)

    def _install(self) -> None:
        import torch

        from synclint.catalogue import entry

        explicit = entry("SL501", "explicit synchronize")
        targets = [
            (torch.cuda, "synchronize", "torch.cuda.synchronize"),
            (torch.cuda.Stream, "synchronize", "Stream.synchronize"),
            (torch.cuda.Event, "synchronize", "Event.synchronize"),
        ]
        accelerator = getattr(torch, "accelerator", None)
        if accelerator is not None and hasattr(accelerator, "synchronize"):
            targets.append((accelerator, "synchronize", "torch.accelerator.synchronize"))
        for owner, name, label in targets:
            original = getattr(owner, name, None)
            if original is None:
                continue
            self._saved.append((owner, name, original))
            setattr(owner, name, _named(original, label, explicit))


def _named(original: Any, label: str, op: Any) -> Any:
    def synchronize(*args: Any, **kwargs: Any) -> Any:
        from synclint.runtime.api import current_detector

        detector = current_detector()
        if detector is None or detector.simulate or _called_by_synclint(sys._getframe(1)):
            return original(*args, **kwargs)
        return detector.explicit_sync(label, op, original, args, kwargs)

    synchronize.__wrapped__ = original  # type: ignore[attr-defined]
    return synchronize


_SYNCLINT_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "")


def _called_by_synclint(frame: Any) -> bool:
    """synclint's own synchronizes, directly or through torch (the profiler drains the
    queue when the runner stops it), are not the program's: the first frame outside
    torch decides."""
    while frame is not None:
        path = os.path.realpath(frame.f_code.co_filename)
        if path.startswith(_SYNCLINT_DIR):
            return True
        if not is_internal(frame.f_code.co_filename):
            return False
        frame = frame.f_back
    return False


def _user_line_of(event: Any) -> tuple[str, int] | None:
    while event is not None:
        # Older profilers keep a `stack` on the op; newer ones nest python
        # function events named like a stack entry.
        for entry in (*(getattr(event, "stack", None) or ()), event.name):
            frame = parse_profiler_frame(entry)
            if frame is not None and not is_internal(frame[0]):
                return (absolute_path(frame[0]), frame[1])
        event = event.cpu_parent
    return None


def sync_events_config() -> Any:
    """``_ExperimentalConfig(enable_cuda_sync_events=True)`` where this torch has it."""
    try:
        from torch._C._profiler import _ExperimentalConfig

        return _ExperimentalConfig(enable_cuda_sync_events=True)
    except (ImportError, TypeError):
        return None


class HostBlockProfiler:
    """Profiles a run: blocked host time per user line on CUDA, and the Chrome trace."""

    def __init__(self, *, cuda: bool, trace_path: str | None) -> None:
        self._cuda = cuda
        self._trace_path = trace_path
        self._profile: Any = None

    def __enter__(self) -> HostBlockProfiler:
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        options: dict[str, Any] = {}
        if self._cuda:
            activities.append(ProfilerActivity.CUDA)
            options["with_stack"] = True
            config = sync_events_config()
            if config is not None:
                options["experimental_config"] = config
        self._profile = profile(activities=activities, **options)
        self._profile.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._profile.__exit__(None, None, None)
        if self._trace_path:
            os.makedirs(os.path.dirname(os.path.abspath(self._trace_path)), exist_ok=True)
            self._profile.export_chrome_trace(self._trace_path)

    @property
    def trace_path(self) -> str | None:
        return self._trace_path

    def blocked_ms_by_line(self) -> dict[tuple[str, int], float]:
        if not self._cuda or self._profile is None:
            return {}
        return blocked_ms_by_line(self._profile.events())

    def blocked_ms_by_line_and_code(self) -> dict[tuple[str, int], dict[str, float]]:
        if not self._cuda or self._profile is None:
            return {}
        return blocked_ms_by_line_and_code(self._profile.events())


SYNC_CALL_NAMES = SyncCallNames()
