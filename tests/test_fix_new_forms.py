"""The fix forms added for issue 12: equal values (and gradients) on random inputs, and no
would-be syncs in the fixed code where the original made them."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the fixed code runs under torch

from synclint.config import Settings  # noqa: E402
from synclint.fixers.apply import fix_text  # noqa: E402
from tests.seed_helpers import load_source  # noqa: E402
from tests.sync_counter import SyncCounter  # noqa: E402

H = "import torch\n"


def fixed_pair(source: str, code: str, name: str):
    fixed = fix_text(source, "n.py", Settings(select=(code,)), unsafe=True)[0]
    assert fixed != source, "nothing was fixed"
    return load_source(source, f"{name}_o"), load_source(fixed, f"{name}_f"), fixed


# -- per-step .item() accumulation ------------------------------------------------------------

ACCUMULATE = (
    H + "def train(model: torch.nn.Module, batches):\n"
    "    total = 0.0\n"
    "    for x in batches:\n"
    "        loss = (model(x) ** 2).mean()\n"
    "        total += loss.item()\n"
    "    return total / max(len(batches), 1)\n"
)


def test_item_accumulation_is_bit_identical_and_reads_back_once():
    original, fixed, text = fixed_pair(ACCUMULATE, "SL201", "acc")
    assert "total += loss.detach().double().reshape(())" in text and "    total = float(total)\n" in text
    model = torch.nn.Linear(3, 2)
    generator = torch.Generator().manual_seed(0)
    for n in (0, 1, 7):
        dtype = torch.float16 if n == 7 else torch.float32
        batches = [torch.randn(4, 3, generator=generator) for _ in range(n)]
        m = model.to(dtype)
        with SyncCounter() as before:
            expected = original.train(m, [b.to(dtype) for b in batches])
        with SyncCounter() as after:
            actual = fixed.train(m, [b.to(dtype) for b in batches])
        assert type(actual) is type(expected) is float and actual == expected
        assert before.count == n and after.count == (1 if n else 0), (before.ops, after.ops)
    model = model.float()


@pytest.mark.parametrize(
    "body",
    [
        "    total = 0\n    for x in batches:\n        total += x.sum().item()\n    return total\n",  # int start: int result
        "    total = 0.0\n    for x in batches:\n        total += x.sum().item()\n        print(total)\n    return total\n",  # read per step
        "    total = 0.0\n    for x in batches:\n        total += x.item()\n    return total\n",  # x not known to be a tensor
        "    total = 0.0\n    log(total)\n    for x in batches:\n        total += x.sum().item()\n    return total\n",
    ],
)
def test_item_accumulation_declines_outside_its_preconditions(body):
    source = H + "def train(batches: list, log):\n" + body
    assert fix_text(source, "n.py", Settings(select=("SL201",)), unsafe=True)[0] == source


def test_multi_element_item_still_raises_at_the_first_step():
    source = H + "def f(batches: list[torch.Tensor]):\n    total = 0.0\n    for x in batches:\n        total += x.item()\n    return total\n"
    _, fixed, _ = fixed_pair(source, "SL201", "acc_raise")
    with pytest.raises(RuntimeError):
        fixed.f([torch.ones(2)])


# -- bincount with a proven bound -----------------------------------------------------------------

BINCOUNT = H + "def f(y: torch.Tensor, k: int):\n    labels = y.long() % k\n    return torch.bincount(labels, minlength=k)\n"
CLAMPED = H + "def f(y: torch.Tensor, k: int):\n    labels = y.clamp(0, k - 1)\n    return labels.bincount(minlength=k)\n"


@pytest.mark.parametrize("source", [BINCOUNT, CLAMPED], ids=["modulo", "clamp"])
def test_bincount_becomes_scatter_add_with_equal_counts(source):
    original, fixed, text = fixed_pair(source, "SL105", "bincount")
    assert "scatter_add_" in text
    generator = torch.Generator().manual_seed(0)
    for n, k in ((0, 3), (1, 1), (50, 7), (200, 4)):
        y = torch.randint(-20, 20, (n,), generator=generator)
        with SyncCounter() as before:
            expected = original.f(y, k)
        with SyncCounter() as after:
            actual = fixed.f(y, k)
        assert actual.dtype == expected.dtype and torch.equal(actual, expected)
        assert before.count >= 1 and after.count == 0, after.ops


@pytest.mark.parametrize(
    "source",
    [
        H + "def f(y: torch.Tensor, k: int):\n    return torch.bincount(y, minlength=k)\n",  # no bound
        H + "def f(y: torch.Tensor, k: int):\n    labels = y % (k + 1)\n    return torch.bincount(labels, minlength=k)\n",
        H + "def f(y: torch.Tensor, w: torch.Tensor, k: int):\n    labels = y % k\n    return torch.bincount(labels, weights=w, minlength=k)\n",
        H + "def f(y: torch.Tensor, k: torch.Tensor):\n    labels = y % k\n    return torch.bincount(labels, minlength=k)\n",
    ],
)
def test_bincount_declines_without_a_proven_bound(source):
    assert fix_text(source, "n.py", Settings(select=("SL105",)), unsafe=True)[0] == source


# -- masked mean --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_masked_mean_matches_with_float32_accumulation_for_half(dtype):
    source = H + "def f(x: torch.Tensor):\n    valid = x.isfinite()\n    return x[valid].mean()\n"
    original, fixed, _ = fixed_pair(source, "SL103", f"mean_{dtype}".replace(".", "_"))
    generator = torch.Generator().manual_seed(1)
    cases = [torch.randn(64, generator=generator) * 30, torch.full((4096,), 60.0), torch.tensor([float("inf")] * 3), torch.zeros(0)]
    for x in cases:
        x = x.to(dtype).requires_grad_(True)
        expected = original.f(x)
        (grad_expected,) = torch.autograd.grad(expected, x, allow_unused=True, materialize_grads=True)
        with SyncCounter() as counter:
            actual = fixed.f(x)
        (grad_actual,) = torch.autograd.grad(actual, x, allow_unused=True, materialize_grads=True)
        assert actual.dtype == expected.dtype
        torch.testing.assert_close(actual, expected, equal_nan=True)
        torch.testing.assert_close(grad_actual, grad_expected, equal_nan=True)
        assert counter.count == 0, counter.ops


# -- repeat_interleave with a host-known output size --------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "    counts = torch.bincount(batch, minlength=k)\n    return torch.repeat_interleave(torch.arange(k, device=batch.device), counts)\n",
        "    return torch.arange(k, device=batch.device).repeat_interleave(batch.bincount(minlength=k), dim=0)\n",
        "    reps = torch.full((k,), 3, device=batch.device)\n    return torch.repeat_interleave(torch.arange(k, device=batch.device), reps)\n",
    ],
)
def test_repeat_interleave_gets_the_output_size_and_equal_values(body):
    source = H + "def f(batch: torch.Tensor, k: int):\n" + body
    original, fixed, text = fixed_pair(source, "SL104", "repeat")
    assert "output_size=" in text
    generator = torch.Generator().manual_seed(0)
    for n, k in ((0, 3), (5, 1), (40, 6)):
        batch = torch.randint(0, k, (n,), generator=generator)
        expected = original.f(batch, k)
        with SyncCounter() as counter:
            actual = fixed.f(batch, k)
        assert torch.equal(actual, expected)
        assert "repeat_interleave" not in str(counter.ops)


@pytest.mark.parametrize(
    "body",
    [
        "    return torch.repeat_interleave(torch.arange(k, device=batch.device), counts)\n",  # a parameter: sum unknown
        "    counts = torch.bincount(batch, weights=w, minlength=k)\n    return torch.repeat_interleave(torch.arange(k, device=batch.device), counts.long())\n",
        "    counts = torch.bincount(batch, minlength=k)\n    batch = batch[:1]\n    return torch.repeat_interleave(torch.arange(k, device=batch.device), counts)\n",
    ],
)
def test_repeat_interleave_declines_without_a_known_sum(body):
    source = H + "def f(batch: torch.Tensor, counts: torch.Tensor, w: torch.Tensor, k: int):\n" + body
    assert "output_size" not in fix_text(source, "n.py", Settings(select=("SL104",)), unsafe=True)[0]


# -- nonzero with the mask's size as a static bound -------------------------------------------------

NONZERO_MAX = (
    H + "def f(m: torch.Tensor, x: torch.Tensor):\n    return m.nonzero().max()\n",
    H + "def f(m: torch.Tensor, x: torch.Tensor):\n    return torch.argwhere(m).amax()\n",
    H + "def f(m: torch.Tensor, x: torch.Tensor):\n    last = torch.nonzero(x > 0.25).max()\n    return last + 1\n",
)


def _masked_inputs():
    """``(m, x)`` pairs: shapes from one element to 3-d, densities from empty to full
    (``m = x > 0``), drawn from one seeded generator."""
    generator = torch.Generator().manual_seed(0)
    for shape in ((1,), (7,), (3, 5), (2, 3, 4)):
        for density in (0.0, 0.1, 0.5, 1.0):
            x = torch.rand(shape, generator=generator)
            x = torch.where(torch.rand(shape, generator=generator) < density, x + 0.5, torch.zeros(()))
            yield x > 0, x


@pytest.mark.parametrize("source", NONZERO_MAX, ids=["method", "argwhere-amax", "compare"])
def test_nonzero_max_becomes_nonzero_static_with_equal_values(source):
    original, fixed, text = fixed_pair(source, "SL101", "nzmax")
    assert "nonzero_static(" in text and ".numel())" in text
    for m, x in _masked_inputs():
        if not m.any():
            # The documented edge case: the original raises, the fixed code gives -1.
            with pytest.raises(RuntimeError):
                original.f(m, x)
            assert (fixed.f(m, x) == -1 + ("last + 1" in source)).item()
            continue
        with SyncCounter() as before:
            expected = original.f(m, x)
        with SyncCounter() as after:
            actual = fixed.f(m, x)
        assert actual.dtype == expected.dtype and actual.shape == expected.shape and torch.equal(actual, expected)
        assert before.count >= 1 and after.count == 0, after.ops


NONZERO_STATIC_MORE = {
    # a minimum pads with numel, larger than any coordinate
    "min": (H + "def f(m: torch.Tensor, x: torch.Tensor):\n    return (x > 0.25).nonzero().amin()\n",
            "torch.nonzero_static(x > 0.25, size=x.numel(), fill_value=x.numel()).amin()"),
    # per column: the -1 padding never wins a column's max
    "column-max": (H + "def f(m: torch.Tensor, x: torch.Tensor):\n    return torch.argwhere(m).amax(0)\n",
                   "torch.nonzero_static(m, size=m.numel()).amax(0)"),
    "column-min": (H + "def f(m: torch.Tensor, x: torch.Tensor):\n    return m.nonzero().amin(dim=0)\n",
                   "torch.nonzero_static(m, size=m.numel(), fill_value=m.numel()).amin(dim=0)"),
    # the first row needs no bound on the count, whatever the condition
    "first-row": (H + "def f(m: torch.Tensor, x: torch.Tensor):\n    return torch.nonzero(m & (x > 0.25))[0]\n",
                  "torch.nonzero_static(m & (x > 0.25), size=1)[0]"),
}


@pytest.mark.parametrize("form", sorted(NONZERO_STATIC_MORE))
def test_nonzero_with_a_static_bound_becomes_nonzero_static_with_equal_values(form):
    source, expected_call = NONZERO_STATIC_MORE[form]
    original, fixed, text = fixed_pair(source, "SL101", f"nzs_{form.replace('-', '_')}")
    assert expected_call in text
    for m, x in _masked_inputs():
        if not m.any():
            # The documented edge case: the original raises, the fixed code reads the fill.
            with pytest.raises((RuntimeError, IndexError)):
                original.f(m, x)
            fill = x.numel() if "min" in form else -1
            assert (fixed.f(m, x) == fill).all()
            continue
        with SyncCounter() as before:
            expected = original.f(m, x)
        with SyncCounter() as after:
            actual = fixed.f(m, x)
        assert actual.dtype == expected.dtype and actual.shape == expected.shape and torch.equal(actual, expected)
        assert before.count >= 1 and after.count == 0, after.ops


@pytest.mark.parametrize(
    "body",
    [
        "    return m.nonzero().max(0)\n",  # also returns indices
        "    return m.nonzero().amax(1)\n",  # per row: the -1 padding would be a row's max
        "    return m.nonzero()[1]\n",  # a later row: -1 where the original raised, a shifted row
        "    return m.nonzero()[-1]\n",  # the last row would be padding
        "    return m.nonzero()[0:1]\n",  # a slice: a row of padding where the original was empty
        "    return (x > 0).nonzero().amin(1)\n",
        "    return torch.nonzero(m).max(dim=0).values\n",
        "    return torch.where(m)[0].max()\n",  # as_tuple
        "    return torch.nonzero(m & (x > 0)).max()\n",  # no named tensor to bound the count
        "    return torch.nonzero(m.float()).max()\n",  # a call: not re-read as the same object
        "    return torch.nonzero(x > w).max()\n",  # compared with a tensor: broadcast shape
        "    return torch.nonzero(m).sum()\n",
    ],
)
def test_nonzero_max_declines_outside_its_preconditions(body):
    source = H + "def f(m: torch.Tensor, x: torch.Tensor, w: torch.Tensor, y):\n" + body
    assert fix_text(source, "n.py", Settings(select=("SL101",)), unsafe=True)[0] == source
