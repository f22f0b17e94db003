"""The CUDA path. Without a GPU: the debug-mode bookkeeping, the warning router and
the blocked-time attribution run against fakes. With one: the real thing."""

from __future__ import annotations

import inspect
import time
import types
import warnings

import pytest

torch = pytest.importorskip("torch")

import synclint  # noqa: E402
from synclint.catalogue import CATALOGUE  # noqa: E402
from synclint.runtime.api import NoSync  # noqa: E402
from synclint.runtime.cuda import DebugModeLevel, WarningRouter, blocked_ms_by_line  # noqa: E402
from synclint.runtime.detector import CUDA_SYNC_MESSAGE, Detector  # noqa: E402
from synclint.runtime.events import SyncError  # noqa: E402

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
SYNC_WARNING = f"called a synchronizing CUDA operation (from {CUDA_SYNC_MESSAGE!r})"


class FakeCuda:
    def __init__(self) -> None:
        self.mode = 0
        self.history: list = []

    def get_sync_debug_mode(self):
        return self.mode

    def set_sync_debug_mode(self, mode) -> None:
        self.mode = mode
        self.history.append(mode)


def test_debug_mode_restores_the_previous_setting_after_the_last_client() -> None:
    cuda = FakeCuda()
    cuda.mode = "previous"
    level = DebugModeLevel(cuda)
    level.acquire("warn")
    level.acquire("warn")
    level.release("warn")
    assert cuda.mode == "warn"
    level.release("warn")
    assert cuda.mode == "previous"


def test_debug_mode_errors_only_while_no_sync_is_alone() -> None:
    cuda = FakeCuda()
    level = DebugModeLevel(cuda)
    level.acquire("error")
    assert cuda.mode == "error"
    level.acquire("warn")  # a watch elsewhere must keep getting warnings
    assert cuda.mode == "warn"
    level.release("warn")
    assert cuda.mode == "error"
    level.release("error")
    assert cuda.mode == 0


class RecordingSink:
    def __init__(self) -> None:
        self.events: list = []

    def record(self, event) -> None:
        self.events.append(event)


def observing_detector() -> tuple[Detector, RecordingSink]:
    detector = Detector(simulate=False)
    sink = RecordingSink()
    detector.sinks.append(sink)
    return detector, sink


def test_router_sees_every_occurrence_not_once_per_location() -> None:
    detector, sink = observing_detector()
    router = WarningRouter()
    router.acquire(detector)
    try:
        for _ in range(3):
            warnings.warn(SYNC_WARNING, UserWarning); line = inspect.currentframe().f_lineno  # noqa: E702
    finally:
        router.release()
    assert [(e.line, e.op, e.code) for e in sink.events] == [(line, "<cuda sync>", "SL201")] * 3


def test_router_leaves_other_warnings_and_cleans_up() -> None:
    detector, sink = observing_detector()
    filters_before, show_before = list(warnings.filters), warnings.showwarning
    router = WarningRouter()
    router.acquire(detector)
    with pytest.warns(DeprecationWarning):
        warnings.warn("unrelated", DeprecationWarning)
    router.release()
    assert sink.events == []
    assert warnings.filters == filters_before and warnings.showwarning is show_before


def test_a_routed_warning_is_named_after_the_running_op_and_its_catalogue_rule() -> None:
    detector, sink = observing_detector()
    x, mask = torch.arange(4), torch.tensor([True, False, True, False])

    def index_that_warns(*args, **kwargs):
        detector.on_cuda_sync()
        return torch.ops.aten.index.Tensor(*args, **kwargs)

    index_that_warns._opname = "index"
    index_that_warns.namespace = "aten"
    detector.running(index_that_warns, (x, [mask]), {})
    assert [(e.op, e.code) for e in sink.events] == [(str(index_that_warns), "SL103")]


def test_python_hook_names_the_sync_over_the_inner_aten_op() -> None:
    detector, sink = observing_detector()
    entry = next(e for e in CATALOGUE if "item" in e.python_hooks)
    with detector.python_hook("Tensor.item", entry):
        detector.running(lambda: detector.on_cuda_sync(), (), {})
    assert [(e.op, e.code) for e in sink.events] == [("Tensor.item", "SL201")]


def test_error_mode_runtime_error_becomes_sync_error_inside_no_sync() -> None:
    detector = Detector(simulate=False)
    detector.sinks.append(NoSync())

    def nonzero_in_error_mode(*args):
        raise RuntimeError(f"{CUDA_SYNC_MESSAGE}")

    nonzero_in_error_mode._opname, nonzero_in_error_mode.namespace = "nonzero", "aten"
    with pytest.raises(SyncError) as raised:
        detector.running(nonzero_in_error_mode, (torch.arange(3),), {})
    assert raised.value.event.code == "SL101"
    assert isinstance(raised.value.__context__, RuntimeError)


def test_other_runtime_errors_pass_untouched() -> None:
    detector = Detector(simulate=False)

    def broken(*args):
        raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError, match="shape mismatch"):
        detector.running(broken, (), {})


def fake_event(name, us, parent=None, stack=()):
    return types.SimpleNamespace(
        name=name,
        time_range=types.SimpleNamespace(elapsed_us=lambda: us),
        cpu_parent=parent,
        stack=list(stack),
    )


def test_blocked_time_is_charged_to_the_first_user_frame_of_the_nearest_stack() -> None:
    torch_file = torch.__file__
    op = fake_event("aten::nonzero", 900, stack=[f"{torch_file}(10): nonzero", "/src/train.py(42): step", "/src/train.py(90): main"])
    copy = fake_event("aten::_local_scalar_dense", 500, stack=["/src/train.py(50): step"])
    events = [
        op,
        fake_event("cudaMemcpyAsync", 100, parent=op),
        fake_event("cudaStreamSynchronize", 700, parent=op),
        copy,
        fake_event("cudaStreamSynchronize", 250, parent=copy),
        fake_event("cudaLaunchKernel", 5, parent=op),  # does not block
        fake_event("cudaStreamSynchronize", 1000),  # no stack anywhere: unattributed
    ]
    assert blocked_ms_by_line(events) == pytest.approx({("/src/train.py", 42): 0.8, ("/src/train.py", 50): 0.25})


def test_blocked_time_from_python_function_events() -> None:
    frame = fake_event("/src/train.py(7): forward", 0)
    op = fake_event("aten::item", 0, parent=frame)
    assert blocked_ms_by_line([fake_event("Stream Sync", 2000, parent=op)]) == {("/src/train.py", 7): 2.0}


@pytest.mark.cuda
@needs_cuda
def test_cuda_watch_sees_a_real_sync_and_restores_the_debug_mode() -> None:
    before = torch.cuda.get_sync_debug_mode()
    x = torch.arange(4, device="cuda")
    with synclint.watch(device="cuda") as watched:
        x.nonzero(); line = inspect.currentframe().f_lineno  # noqa: E702
        x.nonzero()
        x + 1
    assert [(e.line, e.code, e.op) for e in watched.events] == [
        (line, "SL101", "aten.nonzero.default"), (line + 1, "SL101", "aten.nonzero.default"),
    ]
    assert torch.cuda.get_sync_debug_mode() == before


@pytest.mark.cuda
@needs_cuda
def test_cuda_explicit_synchronize_is_one_sl501_event_each() -> None:
    """The debug mode is silent for cudaDeviceSynchronize/cudaEventSynchronize and warns
    for Stream.synchronize: each call is reported once, as itself."""
    event = torch.cuda.Event()
    event.record()
    with synclint.watch(device="cuda") as watched:
        torch.cuda.synchronize(); line = inspect.currentframe().f_lineno  # noqa: E702
        torch.cuda.current_stream().synchronize()
        event.synchronize()
    assert [(e.line, e.code) for e in watched.events] == [(line, "SL501"), (line + 1, "SL501"), (line + 2, "SL501")]


@pytest.mark.cuda
@needs_cuda
def test_cuda_second_session_sees_syncs_that_no_dispatched_op_precedes() -> None:
    """A sync warning reaches the running session's detector, never an earlier one's."""
    y = torch.rand((), device="cuda")
    with synclint.watch(device="cuda"):
        y + 1  # an op under the first session's dispatch mode
    with synclint.watch(device="cuda") as watched:
        repr(y)  # formatting disables the modes: no op of this session precedes the sync
    assert watched.events and {e.code for e in watched.events} == {"SL201"}


@pytest.mark.cuda
@needs_cuda
def test_cuda_no_sync_raises_sync_error_at_the_user_line() -> None:
    x = torch.rand(4, device="cuda")
    with pytest.raises(SyncError) as raised:
        with synclint.no_sync(device="cuda"):
            line = inspect.currentframe().f_lineno + 1
            x.sum().item()
    assert raised.value.event.line == line


@pytest.mark.cuda
@needs_cuda
def test_cuda_run_measures_blocked_time(tmp_path) -> None:
    from synclint.runtime.runner import run_program

    script = tmp_path / "s.py"
    script.write_text("import torch\nx = torch.rand(1 << 20, device='cuda')\nfor _ in range(3):\n    (x > 0.5).nonzero()\n")
    result = run_program(str(script), device="cuda", static=False)
    (site,) = [s for s in result.sites if s.line == 4]
    assert site.count == 3 and site.blocked_ms > 0


class _AllOnDevice:
    """Residency for a CPU stand-in of the CUDA path: every tensor counts as on the device."""

    tracked = True

    @staticmethod
    def is_host(tensor) -> bool:  # noqa: ANN001
        return False

    @staticmethod
    def is_device(tensor) -> bool:  # noqa: ANN001
        return True

    @staticmethod
    def is_pinned(tensor) -> bool:  # noqa: ANN001
        return False


class _Collect:
    def __init__(self) -> None:
        self.events: list = []

    def record(self, event) -> None:  # noqa: ANN001
        self.events.append(event)


def _observing_detector() -> tuple[Detector, _Collect]:
    from synclint.runtime.rules import Context

    detector = Detector(simulate=False)
    detector.ctx = Context(_AllOnDevice())
    sink = _Collect()
    detector.sinks.append(sink)
    return detector, sink


def test_a_flushed_sync_warning_is_named_after_the_op_expected_to_sync() -> None:
    """PyTorch shows the debug mode's warning once the outermost C++ call returns, after
    the op has left the dispatch mode (seen on an H100): the op the rule table expects to
    sync since the Python-level call began names it, not "<cuda sync>"."""
    from synclint.runtime.detector import detector_in_this_thread

    detector, sink = _observing_detector()
    x = torch.tensor([0.0, 1.0, 2.0])
    detector.start()
    try:
        x.nonzero()
        detector_in_this_thread().on_cuda_sync()  # the flush after Tensor.nonzero returns
        x + 1
        detector_in_this_thread().on_cuda_sync()  # nothing expected to sync: the last op names it
    finally:
        detector.stop()
    assert [(e.op, e.code) for e in sink.events] == [("aten.nonzero.default", "SL101"), ("aten.add.Tensor", "SL201")]
    assert all(e.blocked_ms > 0 for e in sink.events)  # the host time of the call that synced
    assert detector_in_this_thread() is None


def test_a_stopped_detector_gets_no_routed_warning() -> None:
    from synclint.runtime.detector import detector_in_this_thread

    first, _ = _observing_detector()
    first.start()
    torch.ones(2) + 1
    first.stop()
    assert detector_in_this_thread() is None
    second, _ = _observing_detector()
    second.start()
    try:
        assert detector_in_this_thread() is second
    finally:
        second.stop()


def test_an_explicit_synchronize_is_reported_once_with_its_wait() -> None:
    from synclint.catalogue import entry

    detector, sink = _observing_detector()
    calls = []

    def fake_synchronize(*args, **kwargs):  # noqa: ANN002, ANN003
        calls.append(len(sink.events))
        detector.on_cuda_sync()  # the debug mode's own warning (Stream.synchronize)
        time.sleep(0.002)  # the wait
        return "done"

    detector.start()
    try:
        result = detector.explicit_sync("Stream.synchronize", entry("SL501", "explicit synchronize"), fake_synchronize, (), {})
    finally:
        detector.stop()
    assert result == "done" and calls == [0]
    assert [(e.op, e.code) for e in sink.events] == [("Stream.synchronize", "SL501")]
    assert sink.events[0].blocked_ms >= 2.0


def test_blocked_time_without_a_debug_event_is_split_into_copy_and_sync_sites() -> None:
    from synclint.runtime.cuda import blocked_ms_by_line_and_code
    from synclint.runtime.events import BLOCKED_OP, SiteTable

    frame = fake_event("/src/train.py(7): forward", 0)
    other = fake_event("/src/train.py(9): forward", 0)
    blocked = blocked_ms_by_line_and_code(
        [fake_event("cudaMemcpyAsync", 3000, parent=frame), fake_event("cudaDeviceSynchronize", 1000, parent=other)]
    )
    assert blocked == {("/src/train.py", 7): {"SL404": 3.0}, ("/src/train.py", 9): {"SL501": 1.0}}
    table = SiteTable()
    table.add_blocked_time(blocked)
    assert [(s.line, s.op, s.code, s.blocked_ms) for s in table.sites] == [
        (7, BLOCKED_OP, "SL404", 3.0),
        (9, BLOCKED_OP, "SL501", 1.0),
    ]


def test_explicit_synchronize_is_named_on_cuda(monkeypatch) -> None:
    """With a fake torch.cuda.synchronize that 'warns' through the detector."""
    from synclint.runtime import api
    from synclint.runtime.cuda import SyncCallNames

    detector, sink = observing_detector()
    monkeypatch.setattr(api._thread, "detector", detector, raising=False)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: detector.on_cuda_sync())
    names = SyncCallNames()
    names.acquire()
    try:
        torch.cuda.synchronize()
    finally:
        names.release()
    assert [(e.op, e.code) for e in sink.events] == [("torch.cuda.synchronize", "SL501")]
    assert not hasattr(torch.cuda.synchronize, "__wrapped__")


def test_cuda_upload_is_named_sl401_and_read_back_sl201() -> None:
    from synclint.runtime.hooks import ObservingHooks

    detector, sink = observing_detector()
    hooks = ObservingHooks(detector)
    warn = lambda *args, **kwargs: detector.on_cuda_sync() or args[0]  # noqa: E731
    hooks.table[torch.Tensor.to](warn, (torch.ones(2), "cpu"), {})
    assert [(e.op, e.code) for e in sink.events] == [("Tensor.to", "SL401")]
