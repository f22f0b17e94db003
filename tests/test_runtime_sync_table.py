"""Every verdict of PyTorch's own ``test_sync_warning`` table (test/test_torch.py),
reproduced by the CPU-simulated detector: one test per row.

Upstream runs each row on CUDA under ``CudaSyncGuard`` at level 1 ("warn") and 2
("error"); here ``watch`` plays "warn" and ``no_sync`` plays "error". The rows'
inputs are built as upstream does, with the CPU standing in for the device and
``ind.cpu()`` making the host-side index.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

torch = pytest.importorskip("torch")

import synclint  # noqa: E402

SIZE = 4


def make_inputs() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    x = torch.rand(SIZE)
    with synclint.watch(device="cpu"):
        ind = torch.randint(SIZE, (3,))
        ind_cpu = ind.cpu()  # a host-side copy, as upstream's ind.cpu() on CUDA
    return {
        "x": x,
        "y": torch.rand(()),
        "ind": ind,
        "ind_cpu": ind_cpu,
        "repeats": torch.full((1,), 2),
        "mask": torch.randint(2, (SIZE,), dtype=torch.bool),
    }


def _ind_put(x, ind, val):
    x[ind] = val
    return x


def _ind_get(x, ind):
    return x[ind]


def _cond(x):
    if x:  # taking the boolean value of a tensor synchronises
        return x
    return 2 * x


F = torch.nn.functional
Row = Callable[[dict], object]

EXPECT_NO_SYNC: dict[str, Row] = {
    "index_put mask <- python scalar": lambda t: _ind_put(t["x"], t["mask"], 1.0),
    "index_put device index <- tensor": lambda t: _ind_put(t["x"], t["ind"], t["y"]),
    "index device index": lambda t: _ind_get(t["x"], t["ind"]),
    "one_hot with num_classes": lambda t: F.one_hot(t["ind"], num_classes=SIZE),
    "randperm": lambda t: torch.randperm(20000),
    "repeat_interleave int repeats + output_size": lambda t: torch.repeat_interleave(
        t["x"], 2, output_size=2 * SIZE
    ),
    "repeat_interleave tensor repeats + output_size": lambda t: torch.repeat_interleave(
        t["x"], t["repeats"], output_size=2 * SIZE
    ),
    "any": lambda t: torch.any(t["y"]),
}

EXPECT_SYNC: dict[str, tuple[Row, str]] = {
    "index_put mask <- tensor": (lambda t: _ind_put(t["x"], t["mask"], t["y"]), "SL103"),
    "index_put host index <- tensor": (lambda t: _ind_put(t["x"], t["ind_cpu"], t["y"]), "SL401"),
    "index mask": (lambda t: _ind_get(t["x"], t["mask"]), "SL103"),
    "index host index": (lambda t: _ind_get(t["x"], t["ind_cpu"]), "SL401"),
    "nonzero": (lambda t: t["x"].nonzero(), "SL101"),
    "tensor truthiness": (lambda t: _cond(t["y"]), "SL202"),
    "one_hot without num_classes": (lambda t: F.one_hot(t["ind"]), "SL105"),
    "repeat_interleave tensor repeats": (lambda t: torch.repeat_interleave(t["x"], t["repeats"]), "SL104"),
}


@pytest.mark.parametrize("row", EXPECT_NO_SYNC.values(), ids=EXPECT_NO_SYNC.keys())
def test_row_does_not_sync(row: Row) -> None:
    inputs = make_inputs()
    with synclint.watch(device="cpu") as watched:
        row(inputs)
    assert watched.events == []
    with synclint.no_sync(device="cpu"):
        row(inputs)


@pytest.mark.parametrize(("row", "code"), EXPECT_SYNC.values(), ids=EXPECT_SYNC.keys())
def test_row_syncs(row: Row, code: str) -> None:
    inputs = make_inputs()
    with synclint.watch(device="cpu") as watched:
        row(inputs)
    assert [event.code for event in watched.events] == [code]
    with pytest.raises(synclint.SyncError):
        with synclint.no_sync(device="cpu"):
            row(inputs)
