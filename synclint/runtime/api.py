"""``synclint.watch()`` and ``synclint.no_sync()``: sessions over the thread's detector.

Sessions nest and are per thread: each thread that opens one gets its own
detector, started by its first session and stopped by its last, and every open
session of that thread sees each event (innermost first).
"""

from __future__ import annotations

import threading
from contextlib import ContextDecorator
from types import TracebackType

from synclint.runtime.detector import CUDA_SYNC_MESSAGE, Detector, Sink
from synclint.runtime.events import SiteTable, SyncError, SyncEvent, SyncSite

_thread = threading.local()


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is usable, else ``cpu`` (the simulated detector)."""
    if device not in ("auto", "cuda", "cpu"):
        raise ValueError(f"device must be 'auto', 'cuda' or 'cpu', not {device!r}")
    import torch

    from synclint.runtime import simcuda

    if simcuda.active():  # torch.cuda says yes, but the device is the simulated one
        if device == "cuda":
            raise RuntimeError("synclint: device='cuda' inside the simulated CUDA device; use 'auto' or 'cpu'")
        return "cpu"
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("synclint: --device cuda needs a CUDA-enabled torch and a GPU")
    return device


def device_label(device: str) -> str:
    """How reports name a device: ``cuda`` or ``cpu-simulated``."""
    return "cuda" if device == "cuda" else "cpu-simulated"


class _Session:
    """Attach ``sink`` to this thread's detector for the duration of a ``with`` block."""

    _debug_level = "warn"

    def __init__(self, sink: Sink, device: str = "auto") -> None:
        self._sink = sink
        self._requested_device = device
        self.device: str | None = None

    def __enter__(self) -> _Session:
        self.device = resolve_device(self._requested_device)
        detector = _acquire_detector(self.device)
        detector.sinks.insert(0, self._sink)  # innermost first
        if not detector.simulate:
            from synclint.runtime.cuda import DEBUG_MODE, SYNC_CALL_NAMES, WARNING_ROUTER

            WARNING_ROUTER.acquire(detector)
            SYNC_CALL_NAMES.acquire()
            DEBUG_MODE.acquire(self._debug_level)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        detector: Detector = _thread.detector
        if not detector.simulate:
            from synclint.runtime.cuda import DEBUG_MODE, SYNC_CALL_NAMES, WARNING_ROUTER

            DEBUG_MODE.release(self._debug_level)
            SYNC_CALL_NAMES.release()
            WARNING_ROUTER.release()
        detector.sinks.remove(self._sink)
        _release_detector()


def current_detector() -> Detector | None:
    """The detector of this thread's open sessions, if any."""
    return getattr(_thread, "detector", None)


def _acquire_detector(device: str) -> Detector:
    detector: Detector | None = getattr(_thread, "detector", None)
    if detector is None:
        from synclint.runtime import simcuda

        detector = Detector(simulate=device == "cpu", tracked=simcuda.active())
        detector.start()
        _thread.detector = detector
        _thread.depth = 0
    _thread.depth += 1
    return detector


def _release_detector() -> None:
    _thread.depth -= 1
    if _thread.depth == 0:
        _thread.detector.stop()
        _thread.detector = None


class Watch(_Session):
    """``with synclint.watch() as w:`` — every sync of the block, in order, in ``w.events``."""

    def __init__(self, device: str = "auto") -> None:
        self.events: list[SyncEvent] = []
        super().__init__(self, device)

    def record(self, event: SyncEvent) -> None:
        self.events.append(event)

    def __enter__(self) -> Watch:
        super().__enter__()
        return self

    @property
    def sites(self) -> list[SyncSite]:
        """The events added up per user line and op."""
        table = SiteTable()
        for event in self.events:
            table.record(event)
        return table.sites


class NoSync(_Session, ContextDecorator):
    """``with synclint.no_sync():`` — raise :class:`SyncError` at the first sync.

    The first violation is remembered: if the block swallows it (a broad
    ``except Exception:``), it is raised again when the block exits.
    """

    _debug_level = "error"

    def __init__(self, device: str = "auto") -> None:
        super().__init__(self, device)
        self.first_error: SyncError | None = None

    def __enter__(self) -> NoSync:
        self.first_error = None
        super().__enter__()
        return self

    def record(self, event: SyncEvent) -> None:
        if event.allowed:
            return
        error = SyncError(event)
        if self.first_error is None:
            self.first_error = error
        raise error

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        super().__exit__(exc_type, exc, traceback)
        if exc is None and self.first_error is not None:
            raise self.first_error  # the block caught it; the promise was still broken
        # Safety net on CUDA: a sync the modes did not see (no op was running)
        # still surfaces as SyncError, located at the innermost user frame.
        if isinstance(exc, RuntimeError) and not isinstance(exc, SyncError):
            if CUDA_SYNC_MESSAGE in str(exc) and traceback is not None:
                raise _error_from_traceback(traceback) from exc


def _error_from_traceback(traceback: TracebackType) -> SyncError:
    from synclint.runtime.frames import absolute_path, is_internal

    location = ("<unknown>", 0, "<unknown>")
    while traceback is not None:
        code = traceback.tb_frame.f_code
        if not is_internal(code.co_filename):
            location = (absolute_path(code.co_filename), traceback.tb_lineno, code.co_name)
        traceback = traceback.tb_next
    return SyncError(SyncEvent(*location, op="<cuda sync>", code="SL201"))


class Allow(_Session):
    """``with synclint.allow():`` — syncs in the block are accepted: recorded as
    allowed, never raised by an enclosing ``no_sync``, never counted by a budget."""

    allows = True  # the detector marks events it passes as allowed

    def __init__(self, device: str = "auto") -> None:
        super().__init__(self, device)

    def record(self, event: SyncEvent) -> None:
        pass


class Budget(_Session, ContextDecorator):
    """``with synclint.budget(max_syncs=N):`` — fail at block exit when more than
    ``N`` syncs happened in it (all are recorded first, so the error lists them)."""

    def __init__(self, max_syncs: int, device: str = "auto") -> None:
        if max_syncs < 0:
            raise ValueError("max_syncs must be >= 0")
        self.max_syncs = max_syncs
        self.events: list[SyncEvent] = []
        super().__init__(self, device)

    def __enter__(self) -> Budget:
        self.events = []
        super().__enter__()
        return self

    def record(self, event: SyncEvent) -> None:
        if not event.allowed:
            self.events.append(event)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        super().__exit__(exc_type, exc, traceback)
        if exc is None and len(self.events) > self.max_syncs:
            raise SyncBudgetExceeded(self.max_syncs, self.events)


class SyncBudgetExceeded(AssertionError):
    """More syncs than a :func:`budget` allows (an ``AssertionError``: a failed test)."""

    def __init__(self, max_syncs: int, events: list[SyncEvent]) -> None:
        self.max_syncs = max_syncs
        self.events = events
        table = SiteTable()
        for event in events:
            table.record(event)
        lines = [f"{len(events)} syncs, budget {max_syncs}:"]
        lines += [f"  {s.location}  {s.op}  [{s.code}] x{s.count}" for s in table.sites]
        super().__init__("\n".join(lines))


def watch(device: str = "auto") -> Watch:
    """Collect the syncs of a block: ``with synclint.watch() as w: step()``; see ``w.events``."""
    return Watch(device)


def no_sync(device: str = "auto") -> NoSync:
    """Forbid syncs in a block (or a decorated function): the first raises :class:`SyncError`."""
    return NoSync(device)


def budget(max_syncs: int, device: str = "auto") -> Budget:
    """Allow at most ``max_syncs`` syncs in a block: ``with synclint.budget(max_syncs=2): step()``."""
    return Budget(max_syncs, device)


def allow(device: str = "auto") -> Allow:
    """Accept the syncs of a block (known, deliberate ones): outer sessions do not see them."""
    return Allow(device)
