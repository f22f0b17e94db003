"""Sessions that promise something: no_sync keeps its word, budget() counts, allow() accepts."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import synclint  # noqa: E402
from synclint.runtime import simcuda  # noqa: E402


def test_sync_error_is_not_a_runtime_error() -> None:
    assert not issubclass(synclint.SyncError, RuntimeError)
    with pytest.raises(synclint.SyncError):
        with synclint.no_sync(device="cpu"):
            try:
                torch.arange(3).nonzero()
            except RuntimeError:  # user code guarding against torch errors
                pass


def test_no_sync_re_raises_a_violation_the_block_swallowed() -> None:
    with pytest.raises(synclint.SyncError, match="SL101"):
        with synclint.no_sync(device="cpu"):
            try:
                torch.arange(3).nonzero()
            except Exception:  # noqa: BLE001 - the broad handler a library might have
                pass
            torch.arange(3) + 1  # the block goes on; the promise is already broken


def test_no_sync_as_a_decorator_raises_on_each_call() -> None:
    @synclint.no_sync(device="cpu")
    def step(x):
        return x.nonzero()

    for _ in range(2):
        with pytest.raises(synclint.SyncError):
            step(torch.arange(3))


def test_budget_counts_every_sync_and_reports_them_all() -> None:
    with synclint.budget(max_syncs=2, device="cpu") as within:
        torch.tensor(1.0).item()
        torch.arange(3).nonzero()
    assert [e.code for e in within.events] == ["SL201", "SL101"]
    with pytest.raises(synclint.SyncBudgetExceeded, match="3 syncs, budget 2") as raised:
        with synclint.budget(max_syncs=2, device="cpu"):
            for _ in range(3):
                torch.tensor(1.0).item()
    assert isinstance(raised.value, AssertionError)
    assert "Tensor.item  [SL201] x3" in str(raised.value)


def test_budget_zero_is_no_sync_that_reports_at_the_end() -> None:
    with synclint.budget(max_syncs=0, device="cpu"):
        torch.arange(3) * 2
    with pytest.raises(synclint.SyncBudgetExceeded):
        with synclint.budget(max_syncs=0, device="cpu"):
            torch.arange(3).nonzero()


def test_allow_accepts_syncs_inside_no_sync_and_budget() -> None:
    with synclint.watch(device="cpu") as watched:
        with synclint.no_sync(device="cpu"), synclint.budget(max_syncs=0, device="cpu"):
            with synclint.allow(device="cpu"):
                torch.tensor(1.0).item()  # e.g. a deliberate once-per-epoch log
    (event,) = watched.events
    assert event.allowed and event.code == "SL201"


def test_syncs_after_the_allow_block_still_count() -> None:
    with pytest.raises(synclint.SyncError):
        with synclint.no_sync(device="cpu"):
            with synclint.allow(device="cpu"):
                torch.tensor(1.0).item()
            torch.tensor(1.0).item()


def test_budget_rejects_a_negative_count() -> None:
    with pytest.raises(ValueError):
        synclint.budget(max_syncs=-1)


def test_auto_sessions_inside_the_simulated_device_simulate() -> None:
    real_cuda = torch.cuda.is_available  # True on a GPU host: the simulation must still win
    with synclint.simulate_cuda():
        assert torch.cuda.is_available()
        with synclint.watch() as watched:  # device="auto": must not try the real debug mode
            x = torch.ones(3, device="cuda")
            x.sum().item()
        with pytest.raises(RuntimeError, match="simulated CUDA device"):
            with synclint.watch(device="cuda"):
                pass
    assert [e.code for e in watched.events] == ["SL201"]
    assert torch.cuda.is_available is real_cuda and not simcuda.active()


def test_public_names_stay_callables_after_synclint_run_was_imported() -> None:
    import synclint.runtime.runner  # noqa: F401 - imports every runtime submodule

    assert callable(synclint.budget) and callable(synclint.allow) and callable(synclint.watch)
    assert callable(synclint.simulate_cuda) and callable(synclint.no_sync)
