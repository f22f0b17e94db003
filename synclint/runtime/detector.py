"""The per-thread detector: two torch modes feeding events to the active sessions.

A :class:`Detector` owns one ``TorchFunctionMode`` (Python-level hooks, see
:mod:`hooks`) and one ``TorchDispatchMode`` (ATen ops, see :mod:`rules`). Both
mode stacks are thread-local in PyTorch, so each thread that opens a session
gets its own detector; autograd carries the dispatch mode into backward.

* ``simulate=True`` (CPU): the detector decides, "as if on CUDA".
* ``simulate=False`` (CUDA): PyTorch's sync debug mode decides; the modes only
  remember which op is running so that :mod:`cuda` can name it.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from dataclasses import replace
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from synclint.catalogue import SyncCondition, SyncOp, by_aten
from synclint.runtime.events import SyncError, SyncEvent
from synclint.runtime.frames import in_compiled_region, in_data_loading, in_module_move, user_location
from synclint.runtime.hooks import ObservingHooks, SimulatedHooks
from synclint.runtime.residency import _MARK, DEVICE, Residency, mark
from synclint.runtime.rules import Context, RuleTable

#: PyTorch's sync debug mode words both its warning and its error this way.
CUDA_SYNC_MESSAGE = "called a synchronizing CUDA operation"
_FALLBACK_CODE = "SL201"  # a sync nothing more specific explains is a read-back


class Sink(Protocol):
    def record(self, event: SyncEvent) -> None: ...


class Detector:
    """Turns syncs into :class:`SyncEvent` s for the sessions open in one thread."""

    def __init__(self, *, simulate: bool, tracked: bool = False) -> None:
        self.simulate = simulate
        self.sinks: list[Sink] = []
        self.muted = 0
        self.residency = Residency(tracked=tracked) if simulate else _REAL_RESIDENCY
        self.ctx = Context(self.residency)
        self.rules = _shared_rules()
        self._hook_label: tuple[str, SyncOp] | None = None
        self._running_op: tuple[Any, Sequence[Any], dict[str, Any]] | None = None
        # PyTorch hands a sync warning to Python only when the outermost C++ call
        # returns (after the ATen op has left the dispatch mode), so on CUDA the
        # op is named from what ran since the current Python-level torch call began:
        # the ops the rule table expects to sync, oldest first, else the last op.
        # Each with the host time its call took: on CUDA that is the time the host
        # waited (the profiler's Python stacks are not there to attribute it on every
        # torch: 2.11 recorded none).
        self._expected: deque[tuple[str, SyncOp, float]] = deque(maxlen=16)
        self._last_op: Any = None
        self._last_ms = 0.0
        self._explicit = 0  # inside a reported explicit synchronize: its warning is not a second sync
        self.active = False
        self._outer: Detector | None = None
        hooks = SimulatedHooks(self) if simulate else ObservingHooks(self)
        on_call = None if simulate else self._python_call_begins
        self._function_mode = _HookMode(hooks.table, getattr(hooks, "fallback", None), on_call)
        self._dispatch_mode = _SimulatingMode(self) if simulate else _ObservingMode(self)

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> None:
        self._dispatch_mode.__enter__()
        self._function_mode.__enter__()
        self._outer = getattr(_current, "detector", None)
        _current.detector = self
        self.active = True

    def stop(self) -> None:
        self.active = False
        if getattr(_current, "detector", None) is self:
            _current.detector = self._outer
        self._outer = None
        self._function_mode.__exit__(None, None, None)
        self._dispatch_mode.__exit__(None, None, None)

    # -- used by the hooks and modes -----------------------------------------
    def call_muted(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        self.muted += 1
        try:
            return func(*args, **kwargs)
        finally:
            self.muted -= 1

    def report(self, op: str, entry: SyncOp | None, blocked_ms: float = 0.0) -> None:
        """Attribute a sync to the user's line (walks frames: flagged events only)."""
        caller = sys._getframe(1)
        if in_data_loading(caller):
            return
        path, line, function = user_location(caller)
        code = entry.code if entry is not None else _FALLBACK_CODE
        event = SyncEvent(
            path, line, function, op, code, blocked_ms,
            setup=in_module_move(caller), graph_break=in_compiled_region(caller),
        )
        self.deliver(event)

    def deliver(self, event: SyncEvent) -> None:
        """Every sink sees the event; a ``no_sync`` sink's error is raised last."""
        error: SyncError | None = None
        for sink in list(self.sinks):
            if getattr(sink, "allows", False) and not event.allowed:
                event = replace(event, allowed=True)
            try:
                sink.record(event)
            except SyncError as exc:
                error = error or exc
        if error is not None:
            raise error

    # -- CUDA: naming the op the debug mode complained about -----------------
    @contextmanager
    def python_hook(self, label: str, entry: SyncOp) -> Iterator[None]:
        outer = self._hook_label
        self._hook_label = self._hook_label or (label, entry)  # the user-facing call wins
        try:
            yield
        finally:
            self._hook_label = outer

    def running(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        outer = self._running_op
        if outer is not None:  # re-entered (autograd): the outer call is the one named
            return func(*args, **kwargs)
        rule = self.rules.lookup(func)
        entry = rule(args, kwargs, self.ctx) if rule is not None else None
        self._running_op = (func, args, kwargs)
        started = time.perf_counter()
        try:
            result = func(*args, **kwargs)
        except RuntimeError as exc:
            if CUDA_SYNC_MESSAGE not in str(exc):
                raise
            self.on_cuda_sync()  # raises SyncError inside no_sync
            raise
        finally:
            self._running_op = None
            self._last_op = func
            self._last_ms = (time.perf_counter() - started) * 1e3
        if entry is not None:
            self._expected.append((str(func), entry, self._last_ms))
        return result

    def _python_call_begins(self) -> None:
        """A Python-level torch call starts: what ran before it cannot name its syncs."""
        self._expected.clear()
        self._last_op = None
        self._last_ms = 0.0

    def on_cuda_sync(self, blocked_ms: float = 0.0) -> None:
        """The debug mode flagged a sync: name it from the innermost known op."""
        if self._explicit:
            return
        op, entry, measured_ms = self._describe_running()
        self.report(op, entry, blocked_ms or measured_ms)

    def explicit_sync(self, label: str, entry: SyncOp, call: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """``torch.cuda.synchronize()`` and friends: the debug mode does not flag
        ``cudaDeviceSynchronize``/``cudaEventSynchronize`` (and flags
        ``Stream.synchronize``), so the call itself is the event, counted once, with
        the time it waited (``no_sync`` raises once the wait is over)."""
        self._explicit += 1
        started = time.perf_counter()
        try:
            result = call(*args, **kwargs)
        finally:
            self._explicit -= 1
        self.report(label, entry, (time.perf_counter() - started) * 1e3)
        return result

    def _describe_running(self) -> tuple[str, SyncOp | None, float]:
        if self._hook_label is not None:
            label, entry = self._hook_label
            return (label, entry, self._last_ms)  # the op under the hook, e.g. _local_scalar_dense
        if self._running_op is not None:  # the error mode raised inside the op: not timed
            func, args, kwargs = self._running_op
            rule = self.rules.lookup(func)
            entry = rule(args, kwargs, self.ctx) if rule is not None else None
            return (str(func), entry or by_aten(getattr(func, "_opname", "")), 0.0)
        if self._expected:
            return self._expected.popleft()
        if self._last_op is not None:
            return (str(self._last_op), _unconditional_entry(self._last_op), self._last_ms)
        return ("<cuda sync>", None, 0.0)


_RULES: RuleTable | None = None


def _shared_rules() -> RuleTable:
    """One verdict cache per process: rules depend on the op only, not on the session."""
    global _RULES
    if _RULES is None:
        _RULES = RuleTable()
    return _RULES


class _RealResidency:
    """On CUDA the tensors say where they live."""

    tracked = True

    @staticmethod
    def is_host(tensor: torch.Tensor) -> bool:
        return tensor.device.type == "cpu"

    @staticmethod
    def is_device(tensor: torch.Tensor) -> bool:
        return tensor.device.type != "cpu"

    @staticmethod
    def is_pinned(tensor: torch.Tensor) -> bool:
        return tensor.device.type == "cpu" and tensor.is_pinned()


_REAL_RESIDENCY: Any = _RealResidency()


def _unconditional_entry(func: Any) -> SyncOp | None:
    """The catalogue entry of an op that always syncs. A conditional entry (a mask
    index, a host value) whose condition the rule table found false would only guess
    at the cause of a sync nobody expected: that one stays a plain read-back (SL201)."""
    entry = by_aten(getattr(func, "_opname", ""))
    return entry if entry is not None and entry.condition is SyncCondition.ALWAYS else None


class _HookMode(TorchFunctionMode):
    """Routes the few hooked Python entry points to their handler; the rest pass through."""

    def __init__(self, table: dict[Any, Any], fallback: Any = None, on_call: Any = None) -> None:
        super().__init__()
        self._table = table
        self._fallback = fallback
        self._on_call = on_call

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        if self._on_call is not None:
            self._on_call()
        try:
            handler = self._table.get(func)
        except TypeError:  # an unhashable callable is never one of ours
            handler = None
        if handler is not None:
            return handler(func, args, kwargs or {})
        if kwargs and self._fallback is not None:
            return self._fallback(func, args, kwargs)
        return func(*args, **(kwargs or {}))


class _SimulatingMode(TorchDispatchMode):
    """CPU run: judge each ATen op with the cached rule table; with tracked
    residency, results computed from device-resident tensors are device-resident."""

    def __init__(self, detector: Detector) -> None:
        super().__init__()
        self._detector = detector
        self._lookup = detector.rules.lookup
        self._tracked = detector.residency.tracked

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        detector = self._detector
        if not detector.muted:
            rule = self._lookup(func)
            if rule is not None:
                entry = rule(args, kwargs, detector.ctx)
                if entry is not None:
                    detector.report(str(func), entry)
        out = func(*args, **kwargs)
        if self._tracked and out is not None and _any_on_device(args):
            _mark_results(out, args, kwargs)
        return out


def _any_on_device(args: Sequence[Any]) -> bool:
    for arg in args:
        if type(arg) in (list, tuple):
            for item in arg:
                if getattr(item, _MARK, None) == DEVICE:
                    return True
        elif getattr(arg, _MARK, None) == DEVICE:
            return True
    return False


def _mark_results(out: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """Mark new results device-resident; in-place and ``out=`` results keep their mark."""
    items = out if type(out) in (list, tuple) else (out,)
    for item in items:
        if not isinstance(item, torch.Tensor):
            continue
        if (args and item is args[0]) or any(item is value for value in kwargs.values()):
            continue
        mark(item, DEVICE)


class _ObservingMode(TorchDispatchMode):
    """CUDA run: remember the running op for the warning router and the error mode."""

    def __init__(self, detector: Detector) -> None:
        super().__init__()
        self._detector = detector

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        _current.detector = self._detector  # autograd may run this in its own thread
        return self._detector.running(func, args, kwargs or {})


_current = threading.local()


def detector_in_this_thread() -> Detector | None:
    """The active detector of this thread (its session's, or the one whose op autograd
    runs here), if any: the warning router's target. A stopped one is never returned,
    so a warning after a session ends cannot reach a detector nobody reads."""
    detector: Detector | None = getattr(_current, "detector", None)
    return detector if detector is not None and detector.active else None
