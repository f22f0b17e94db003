"""The CPU-simulated detector: Python hooks, residency, attribution, sessions."""

from __future__ import annotations

import inspect
import threading

import pytest

torch = pytest.importorskip("torch")

import synclint  # noqa: E402
from synclint.catalogue import CATALOGUE  # noqa: E402
from synclint.runtime.rules import TAGGED_BUT_NOT_REPORTED, RuleTable  # noqa: E402


def here() -> int:
    """The caller's line number."""
    return inspect.currentframe().f_back.f_lineno


def watch():
    return synclint.watch(device="cpu")


def ops(watched) -> list[str]:
    return [event.op for event in watched.events]


# -- Python-level read-backs ------------------------------------------------


@pytest.mark.parametrize(
    ("read_back", "op"),
    [
        (lambda t: t.item(), "Tensor.item"),
        (lambda t: t.tolist(), "Tensor.tolist"),
        (lambda t: t.numpy(), "Tensor.numpy"),
        (lambda t: float(t), "Tensor.__float__"),
        (lambda t: int(t), "Tensor.__int__"),
        (lambda t: bool(t), "Tensor.__bool__"),
        (lambda t: [0, 1][t.long()], "Tensor.__index__"),
        (lambda t: f"{t:.3f}", "Tensor.__format__"),
        (lambda t: repr(t), "Tensor.__repr__"),
        (lambda t: t.cpu(), "Tensor.cpu"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_each_python_read_back_is_one_event(read_back, op) -> None:
    t = torch.tensor(0.5)
    with watch() as watched:
        read_back(t)
    assert ops(watched) == [op]
    assert watched.events[0].code == ("SL202" if op == "Tensor.__bool__" else "SL201")


def test_print_is_one_event_on_the_print_line(capsys) -> None:
    t = torch.arange(3.0)
    with watch() as watched:
        print(t); line = here()  # noqa: E702
    assert [(e.line, e.op) for e in watched.events] == [(line, "Tensor.__repr__")]


def test_event_names_the_user_line_function_and_file() -> None:
    x = torch.arange(4)
    with watch() as watched:
        x.nonzero(); line = here()  # noqa: E702
    (event,) = watched.events
    assert (event.path, event.line, event.function) == (__file__, line, inspect.stack()[0].function)
    assert (event.op, event.code) == ("aten.nonzero.default", "SL101")


def test_event_inside_a_module_names_the_module_method() -> None:
    class Net(torch.nn.Module):
        def forward(self, x):
            return torch.unique(x)

    with watch() as watched:
        Net()(torch.arange(4))
    assert [(e.function, e.code) for e in watched.events] == [("forward", "SL102")]


# -- residency: what .cpu() / .to("cpu") produce is host-side -----------------


def test_reading_back_a_host_copy_does_not_sync_again() -> None:
    loss = torch.tensor(1.5)
    with watch() as watched:
        host = loss.cpu()
        host.item()
        host.tolist()
    assert ops(watched) == ["Tensor.cpu"]
    assert host is not loss, "a simulated device-to-host copy is a new tensor, as on CUDA"


def test_to_literal_cpu_is_a_read_back_but_to_a_device_variable_is_not() -> None:
    device = "cpu"  # what a portable script passes for "the accelerator"
    t = torch.ones(2)
    with watch() as watched:
        t.to(device)
        t.to(torch.float64)
        t.to("cpu")
    assert ops(watched) == ["Tensor.to"]


def test_non_blocking_copy_to_the_host_does_not_sync() -> None:
    t = torch.ones(2)
    with watch() as watched:
        t.to("cpu", non_blocking=True)
    assert watched.events == []


def test_copy_into_a_host_buffer_syncs() -> None:
    t = torch.ones(2)
    with watch():
        buffer = torch.empty(2).cpu()
    with watch() as watched:
        buffer.copy_(t)
        buffer.copy_(t, non_blocking=True)  # into pageable memory: synchronous for the host
    assert [e.code for e in watched.events] == ["SL201", "SL404"]


def test_boolean_mask_write_of_a_host_scalar_tensor_takes_the_masked_fill_path() -> None:
    x, mask = torch.zeros(4), torch.tensor([True, False, True, False])
    with watch():
        host_value = torch.tensor(2.0).cpu()
    with watch() as watched:
        x[mask] = host_value
    assert watched.events == []


def test_integer_zero_dim_tensor_index_reads_it_back() -> None:
    x = torch.arange(4)
    with watch() as watched:
        x[torch.tensor(2)]
    assert [e.op for e in watched.events] == ["aten._local_scalar_dense.default"]


def test_backward_of_a_boolean_mask_index_syncs_on_the_backward_line() -> None:
    x = torch.randn(4, requires_grad=True)
    mask = torch.tensor([True, False, True, True])
    y = x[mask].sum()
    with watch() as watched:
        y.backward(); line = here()  # noqa: E702
    assert [(e.line, e.code) for e in watched.events] == [(line, "SL103")]


def test_single_argument_where_is_nonzero() -> None:
    with watch() as watched:
        torch.where(torch.tensor([True, False]))
    assert [e.code for e in watched.events] == ["SL101"]


@pytest.fixture(scope="module")
def torchvision_nms():
    """``torch.ops.torchvision.nms``: torchvision's own op when it is installed, else a
    stand-in registered under the same name (the detector matches the op, not its kernel)."""
    try:
        import torchvision  # noqa: F401
    except ImportError:
        library = torch.library.Library("torchvision", "DEF")
        library.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        library.impl("nms", lambda dets, scores, iou: scores.argsort(descending=True), "CPU")
        yield torch.ops.torchvision.nms
        del library
        return
    yield torch.ops.torchvision.nms


def test_torchvision_nms_is_a_data_dependent_shape(torchvision_nms) -> None:
    boxes = torch.tensor([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.9]])
    with watch() as watched:
        torchvision_nms(boxes, torch.tensor([0.9, 0.8]), 0.5)
    assert [(e.code, e.op) for e in watched.events] == [("SL101", "torchvision.nms.default")]


def test_three_argument_where_and_masked_fill_do_not_sync() -> None:
    x, mask = torch.randn(4), torch.tensor([True, False, True, False])
    with watch() as watched:
        torch.where(mask, x, torch.zeros_like(x))
        x.masked_fill(mask, 0.0)
        torch.count_nonzero(mask)
        (x * mask).sum()
    assert watched.events == []


# -- sessions ----------------------------------------------------------------


def test_no_sync_raises_with_op_and_user_line() -> None:
    x = torch.arange(4)
    with pytest.raises(synclint.SyncError) as raised:
        with synclint.no_sync(device="cpu"):
            line = here() + 1
            x.unique()
    event = raised.value.event
    assert (event.path, event.line, event.code) == (__file__, line, "SL102")
    assert f"{__file__}:{line}" in str(raised.value)
    assert "aten._unique2" in str(raised.value)


def test_no_sync_stops_before_the_op_runs() -> None:
    with pytest.raises(synclint.SyncError):
        with synclint.no_sync(device="cpu"):
            torch.tensor(3.0).item()
            pytest.fail("unreachable: the read-back raised")


def test_no_sync_as_a_decorator() -> None:
    @synclint.no_sync(device="cpu")
    def step(x):
        return x.sum().item()

    with pytest.raises(synclint.SyncError):
        step(torch.ones(2))


def test_nested_watches_both_see_inner_events_only_outer_sees_outer() -> None:
    t = torch.tensor(1.0)
    with watch() as outer:
        t.item()
        with watch() as inner:
            t.tolist()
    assert ops(inner) == ["Tensor.tolist"]
    assert ops(outer) == ["Tensor.item", "Tensor.tolist"]


def test_no_sync_inside_watch_raises_and_watch_still_records() -> None:
    t = torch.tensor(1.0)
    with watch() as outer:
        with pytest.raises(synclint.SyncError):
            with synclint.no_sync(device="cpu"):
                t.item()
        t.tolist()  # the watch goes on after the inner no_sync
    assert ops(outer) == ["Tensor.item", "Tensor.tolist"]


def test_watch_inside_no_sync_records_then_raises() -> None:
    with pytest.raises(synclint.SyncError):
        with synclint.no_sync(device="cpu"):
            with watch() as inner:
                torch.tensor(1.0).item()
    assert ops(inner) == ["Tensor.item"]


def test_sessions_are_per_thread() -> None:
    started, finish = threading.Event(), threading.Event()
    other: list = []

    def worker() -> None:
        with watch() as watched:
            started.set()
            finish.wait(10)
            torch.tensor(2.0).tolist()
        other.extend(watched.events)

    thread = threading.Thread(target=worker)
    thread.start()
    started.wait(10)
    with watch() as mine:
        torch.tensor(1.0).item()
    finish.set()
    thread.join(10)
    assert ops(mine) == ["Tensor.item"]
    assert [e.op for e in other] == ["Tensor.tolist"]


def test_a_thread_without_a_session_is_not_watched() -> None:
    results: list = []
    with watch() as watched:
        thread = threading.Thread(target=lambda: results.append(torch.tensor(1.0).item()))
        thread.start()
        thread.join(10)
    assert results == [1.0] and watched.events == []


def test_detector_is_gone_after_the_last_session() -> None:
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    with watch():
        with watch():
            assert len(_get_current_dispatch_mode_stack()) == 1
    assert _get_current_dispatch_mode_stack() == []
    assert _get_current_function_mode_stack() == []


def test_watch_sites_add_events_up() -> None:
    t = torch.tensor(1.0)
    with watch() as watched:
        for _ in range(3):
            t.item(); line = here()  # noqa: E702
    (site,) = watched.sites
    assert (site.line, site.op, site.count) == (line, "Tensor.item", 3)


# -- the op table stays in step with torch and the catalogue ------------------


def test_every_catalogue_aten_packet_exists_in_torch() -> None:
    # ``torchvision::nms``: another library's op, registered only once that library loads
    missing = [
        packet
        for entry in CATALOGUE
        for packet in entry.aten
        if "::" not in packet and not hasattr(torch.ops.aten, packet)
    ]
    assert missing == []


def test_every_tagged_data_dependent_op_is_catalogued_or_explained() -> None:
    tags = {torch.Tag.dynamic_output_shape, torch.Tag.data_dependent_output}
    tagged = set()
    for name in torch._C._dispatch_get_all_op_names():
        namespace, _, rest = name.partition("::")
        if namespace != "aten":
            continue
        packet = getattr(torch.ops.aten, rest.split(".")[0], None)
        if packet is None:
            continue
        for overload in packet.overloads():
            if tags & set(getattr(packet, overload).tags):
                tagged.add(packet.__name__)
    unexplained = tagged - RuleTable().packets - set(TAGGED_BUT_NOT_REPORTED)
    assert unexplained == set()


def test_untagged_ops_that_sync_are_in_the_rule_table() -> None:
    # Tags under-approximate: `x[mask] = v` reaches the untagged index_put_.
    assert {"index_put_", "index_put", "_local_scalar_dense"} <= RuleTable().packets


def test_data_loading_is_host_side_and_never_reported():
    """Samplers (`randperm(...).tolist()`), fetchers and collate run on host tensors."""
    from torch.utils.data import DataLoader, TensorDataset

    import synclint

    loader = DataLoader(TensorDataset(torch.arange(10.0)), batch_size=2, shuffle=True)
    # The simulated CUDA device: on a GPU host "auto" would watch the real one, where
    # these CPU tensors never sync at all.
    with synclint.watch(device="cpu") as session:
        batches = [batch for (batch,) in loader]
        total = batches[0].sum().item()  # a read-back in user code is still reported
    assert len(batches) == 5
    assert [event.op for event in session.events] == ["Tensor.item"]
    del total
