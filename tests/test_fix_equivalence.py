"""Every fixer: original and fixed code run on random inputs give the same values,
and the fixed code makes no would-be syncs. Edge cases where an unsafe fix
differs on purpose are asserted as documented in docs/fixes.md."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the fixed code runs under torch

from synclint.config import Settings  # noqa: E402
from synclint.fixers.apply import fix_text  # noqa: E402
from tests.seed_helpers import load_source  # noqa: E402
from tests.sync_counter import SyncCounter  # noqa: E402

H = "import torch\nimport torch.nn.functional as F\n"

CASES = {
    "masked_fill": ("SL101", H + "def f(x: torch.Tensor):\n    inds = torch.nonzero(x > 0.5, as_tuple=True)\n    x[inds] = -1.0\n    return x\n"),
    "where_copy": ("SL101", H + "def f(x: torch.Tensor, y: torch.Tensor):\n    i = torch.where(x > 0)\n    x[i] = y[i]\n    return x\n"),
    "count_nonzero": ("SL101", H + "def f(x: torch.Tensor):\n    n = len(torch.nonzero(x > 0))\n    return x.sum() * n\n"),
    "unique_count": ("SL102", H + "def f(x: torch.Tensor):\n    u = torch.unique(x)\n    return x.sum() + u.numel()\n"),
    "unique_consecutive_count": ("SL102", H + "def f(x: torch.Tensor):\n    return x.sum() - x.unique_consecutive().shape[0]\n"),
    "where_select": ("SL202", H + "def f(x: torch.Tensor):\n    s = x.mean()\n    if s > 0:\n        s = s * 2.0\n    else:\n        s = -s\n    return s\n"),
    "where_sum": ("SL103", H + "def f(x: torch.Tensor):\n    return x[x > 0].sum()\n"),
    "where_mean": ("SL103", H + "def f(x: torch.Tensor):\n    return x[x.abs() < 1].mean()\n"),
    "where_amax": ("SL103", H + "def f(x: torch.Tensor):\n    return x[x < 0.5].amax()\n"),
    "where_update": ("SL103", H + "def f(x: torch.Tensor, y: torch.Tensor):\n    m = x > 0\n    x[m] = y[m]\n    return x\n"),
    "ignore_index": ("SL103", H + "def f(p: torch.Tensor, t: torch.Tensor):\n    t = t.long()\n    m = t != 7\n    return F.cross_entropy(p.permute(0, 2, 1)[m], t[m])\n"),
    "ignore_index_weight": ("SL103", H + "def f(p: torch.Tensor, t: torch.Tensor):\n    t = t.long()\n    m = t != 7\n    return F.cross_entropy(p.permute(0, 2, 1)[m], t[m], weight=torch.arange(1.0, 11.0))\n"),
    "ignore_index_where": ("SL103", H + "def f(p: torch.Tensor, t: torch.Tensor):\n    t = t.long()\n    m = t < 7\n    return F.cross_entropy(p.movedim(1, -1)[m], t[m], label_smoothing=0.2)\n"),
}


def _fixed(name: str):
    code, source = CASES[name]
    fixed = fix_text(source, "case.py", Settings(select=(code,)), unsafe=True)[0]
    assert fixed != source, f"{name}: nothing was fixed"
    return load_source(source, f"{name}_original").f, load_source(fixed, f"{name}_fixed").f


def _inputs(name: str, generator: torch.Generator):
    shapes = [(7,), (3, 4), (2, 3, 5), (0,)]
    for shape in shapes:
        if name.startswith("ignore_index"):
            if shape == (0,):
                continue
            t = torch.randint(0, 10, (shape[0] + 1, 6), generator=generator)
            yield torch.randn(shape[0] + 1, 10, 6, generator=generator), t
            yield torch.randn(2, 10, 6, generator=generator), torch.full((2, 6), 7)  # all ignored: NaN
            continue
        x = torch.randn(shape, generator=generator)
        if name == "where_update" or name == "where_copy":
            yield x, torch.randn(shape, generator=generator)
        elif name.startswith("unique"):
            yield (torch.randint(0, 4, shape, generator=generator),)
        else:
            yield (x,)


EMPTY_DIFFERS = {"where_amax"}  # an empty selection: the original raises, the fix gives -inf


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_values_and_no_syncs(name):
    original, fixed = _fixed(name)
    generator = torch.Generator().manual_seed(0)
    for args in _inputs(name, generator):
        try:
            expected = original(*[a.clone() for a in args])
        except RuntimeError:
            assert name in EMPTY_DIFFERS, f"{name} raised on {args[0].shape}"
            continue
        with SyncCounter() as counter:
            actual = fixed(*[a.clone() for a in args])
        torch.testing.assert_close(torch.as_tensor(actual), torch.as_tensor(expected), equal_nan=True, check_dtype=False)
        assert counter.count == 0, counter.ops


def test_originals_do_sync():
    """The counter is not vacuous: every original makes at least one would-be sync."""
    generator = torch.Generator().manual_seed(0)
    for name in CASES:
        original, _ = _fixed(name)
        args = next(iter(_inputs(name, generator)))
        with SyncCounter() as counter:
            original(*[a.clone() for a in args])
        assert counter.count > 0, name


def test_counts_that_would_leave_as_tensors_are_not_fixed():
    """pytorch_geometric's `contains_isolated_nodes` returned a tensor after the fix: a count
    that is returned, stored, formatted or used as a key keeps its nonzero / unique."""
    for source in (
        H + "def f(x: torch.Tensor):\n    return len(torch.nonzero(x > 0)) > 0\n",
        H + "def f(x: torch.Tensor):\n    n = torch.unique(x).numel()\n    return {n: 1}\n",
        H + "import json\ndef f(x: torch.Tensor):\n    n = len(torch.nonzero(x))\n    return json.dumps({'n': n})\n",
        H + "def f(x: torch.Tensor, log):\n    n = torch.unique(x).numel()\n    log(n)\n",
        H + "def f(x: torch.Tensor):\n    return f'{len(torch.nonzero(x))} boxes'\n",
    ):
        assert fix_text(source, "c.py", unsafe=True)[0] == source


def test_unique_count_of_empty_is_zero():
    _, fixed = _fixed("unique_count")
    assert fixed(torch.tensor([], dtype=torch.long)) == 0


def test_amax_of_empty_selection_is_minus_inf_instead_of_an_error():
    original, fixed = _fixed("where_amax")
    x = torch.ones(3)
    with pytest.raises(RuntimeError):
        original(x)
    assert fixed(x) == float("-inf")


@pytest.mark.parametrize(
    "branches",
    [
        "    y = x\n    if x.sum() > 0:\n        y = log(x)\n",  # a call: side effects, custom objects
        "    y = x.mean()\n    if x.sum() > 0:\n        y = None\n",
        "    y = x.mean()\n    if x.sum() > 0:\n        y = 'skip'\n",
        "    y = x.mean()\n    if x.sum() > 0:\n        y = [y]\n",
        "    y = x.mean()\n    if x.sum() > 0:\n        y = x\n",  # another shape
        "    y = x[:0]\n    if x.sum() > 0:\n        y = x[:2]\n",  # kornia: empty vs sampled
        "    y = x.mean()\n    if y > 0:\n        y = y.sqrt()\n",  # NaN gradient from the untaken sqrt
        "    y = x.long()\n    if x.sum() > 0:\n        y = y * 0.5\n",  # int vs float
        "    y = x.mean()\n    if x > 0:\n        y = y * 0.5\n",  # condition not known to be one element
    ],
)
def test_where_select_needs_one_shape_dtype_and_no_side_effects(branches):
    source = H + "def f(x: torch.Tensor, log):\n" + branches + "    return y\n"
    assert fix_text(source, "c.py", Settings(select=("SL202",)), unsafe=True)[0] == source


def test_in_place_semantics_kept():
    """The caller sees the write when the tensor is not a fresh local."""
    for name in ("masked_fill", "where_copy", "where_update"):
        _, fixed = _fixed(name)
        x = torch.randn(5, generator=torch.Generator().manual_seed(3))
        args = (x, torch.randn(5)) if name != "masked_fill" else (x,)
        result = fixed(*args)
        assert result.data_ptr() == x.data_ptr() and torch.equal(result, x), name
