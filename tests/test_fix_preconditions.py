"""Issue 12's probes: each fix that once broke real code, now declined (with the reason
in the finding) or rewritten so that the original and fixed code agree when run."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the fixed code runs under torch

from synclint.config import Settings  # noqa: E402
from synclint.engine import check_source  # noqa: E402
from synclint.fixers.apply import fix_text  # noqa: E402
from tests.seed_helpers import load_source  # noqa: E402

H = "import torch\n"
F = "import torch\nimport torch.nn.functional as F\n"


def fix(source: str, code: str | None = None, unsafe: bool = True) -> str:
    return fix_text(source, "t.py", Settings(select=(code,)) if code else None, unsafe)[0]


def reason(source: str, code: str) -> str:
    """The finding's message (with its "no autofix: ..." note) for ``code``."""
    messages = [f.message for f in check_source(source, "t.py") if f.code == code and f.fix is None]
    assert messages, f"no unfixed {code} finding"
    return messages[0]


# -- SL401: receivers and positional arguments ------------------------------------------------

DETR = (
    "import torch\n"
    "class NestedTensor:\n"
    "    def __init__(self, tensors):\n"
    "        self.tensors = tensors\n"
    "    def to(self, device):\n"
    "        return NestedTensor(self.tensors.to(device))\n"
    "def train_one_epoch(model, data_loader, device):\n"
    "    out = []\n"
    "    for samples, targets in data_loader:\n"
    "        samples = samples.to(device)\n"
    "        out.append(samples.tensors.sum())\n"
    "    return out\n"
)


def test_detr_nested_tensor_gets_no_non_blocking():
    """DETR's `NestedTensor.to(device)` takes no `non_blocking`: the fix was a TypeError."""
    assert fix(DETR) == DETR
    assert "not known to be a torch.Tensor" in reason(DETR, "SL401")
    run = load_source(fix(DETR), "detr_fixed").train_one_epoch
    batch = [(load_source(DETR, "detr_types").NestedTensor(torch.ones(2)), None)]
    assert [float(v) for v in run(None, batch, "cpu")] == [2.0]


@pytest.mark.parametrize(
    "call",
    ["x.to(device, torch.float64, False)", "x.to(torch.float64, False)", "x.cuda(0, False)", "x.to(device, non_blocking=False)"],
)
def test_non_blocking_already_passed_is_not_added(call):
    source = H + f"def train(loader, device):\n    for x, y in loader:\n        x: torch.Tensor\n        x = {call}\n"
    assert fix(source, "SL401") == source


def test_known_tensor_with_a_dtype_gets_non_blocking():
    source = H + "def train(loader, device):\n    for x, y in loader:\n        x: torch.Tensor\n        x = x.to(device, torch.float16)\n"
    assert fix(source, "SL401", unsafe=False).endswith("x = x.to(device, torch.float16, non_blocking=True)\n")


# -- SL402 -------------------------------------------------------------------------------------


def test_explicit_pin_memory_false_is_kept():
    source = "import torch\nfrom torch.utils.data import DataLoader\nl = DataLoader(ds, pin_memory=False)\nfor x in l:\n    x = x.cuda(non_blocking=True)\n"
    assert fix(source, "SL402") == source
    assert "kept as written" in reason(source, "SL402")
    positional = "import torch\nfrom torch.utils.data import DataLoader\nl = DataLoader(ds, 4, False, None, None, 0, None, False)\nfor x in l:\n    x = x.cuda(non_blocking=True)\n"
    assert fix(positional, "SL402") == positional


# -- SL403: devices by flow, literals that fit -----------------------------------------------


@pytest.mark.parametrize("destination", ["std_dev", "dev_dtype", "self.device", "args.dev", "other"])
def test_move_destination_must_be_a_device_by_flow(destination):
    source = H + f"def forward(self, x, std_dev, dev_dtype, args, other):\n    return torch.zeros(3).to({destination})\n"
    assert fix(source, "SL403") == source


@pytest.mark.parametrize(
    ("binding", "destination"),
    [("d = torch.device('cuda')\n    ", "d"), ("", "x.device"), ("", "'cuda:1'"), ("d = x.device if x.is_cuda else 'cpu'\n    ", "d")],
)
def test_proven_devices_move_the_factory(binding, destination):
    source = H + f"def forward(self, x: torch.Tensor):\n    {binding}return torch.zeros(3).to({destination})\n"
    assert fix(source, "SL403", unsafe=False) == source.replace(f"torch.zeros(3).to({destination})", f"torch.zeros(3, device={destination})")


def test_requires_grad_factory_is_not_moved():
    """The moved result is not a leaf; a factory with `device=` would make one."""
    source = H + "def forward(self, x: torch.Tensor):\n    return torch.zeros(3, requires_grad=True).to(x.device)\n"
    assert fix(source, "SL403") == source


@pytest.mark.parametrize("literal", ["1e39", "-1e39", "3.4e38", "2**64"])
def test_literal_that_full_rejects_stays(literal):
    """`torch.tensor(1e39)` is inf in float32; `torch.full((), 1e39)` raises."""
    source = H + f"def forward(self, x: torch.Tensor):\n    return torch.tensor({literal}, device=x.device)\n"
    assert fix(source, "SL403") == source


def test_literals_that_fit_give_identical_tensors():
    for literal in ("1e38", "65504.0", "70000.0", "-0.0", "1e-46", "255", "-1", "True"):
        for dtype in ("", ", dtype=torch.float16", ", dtype=torch.uint8", ", dtype=torch.bfloat16"):
            source = H + f"def forward(self, x):\n    return torch.tensor({literal}, device=x.device{dtype})\n"
            fixed = fix(source, "SL403")
            assert fixed != source, literal
            try:
                expected = load_source(source, "lit_o").forward(None, torch.ones(1))
            except RuntimeError:
                with pytest.raises(RuntimeError):
                    load_source(fixed, "lit_f").forward(None, torch.ones(1))
                continue
            actual = load_source(fixed, "lit_f").forward(None, torch.ones(1))
            assert actual.dtype == expected.dtype and torch.equal(actual, expected) or (actual.isnan() & expected.isnan()).all()


# -- torch reachable ----------------------------------------------------------------------------


def test_torch_only_under_type_checking_gets_a_runtime_import():
    source = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n"
        "from torch import where\n"
        "def f(x: 'torch.Tensor'):\n    i = where(x > 1)\n    x[i] = 0\n    return x\n"
    )
    fixed = fix(source, "SL101")
    assert fixed.startswith("import torch\nfrom typing import TYPE_CHECKING\n") or "masked_fill_" in fixed
    out = load_source(fixed, "tc").f(torch.tensor([0.0, 2.0]))
    assert out.tolist() == [0.0, 0.0]


def test_shadowed_torch_declines():
    source = (
        "import torch\n"
        "def f(x: torch.Tensor, y: torch.Tensor, torch=None):\n    m = x > 0\n    x[m] = y[m]\n    return x\n"
    )
    assert fix(source, "SL103") == source
    assert "shadows `torch`" in reason(source, "SL103")
    local = "import torch\ndef f(x: torch.Tensor):\n    torch = 3\n    return x[x > 0].sum()\n"
    assert fix(local, "SL103") == local


def test_alias_reuses_runtime_binding():
    source = "import torch as T\ndef f(x: T.Tensor):\n    return x[x > 0].sum()\n"
    assert fix(source, "SL103") == "import torch as T\ndef f(x: T.Tensor):\n    return T.where(x > 0, x, 0).sum()\n"


# -- SL101: aliases and shapes ---------------------------------------------------------------------


def test_mutation_through_an_alias_between_where_and_write_declines():
    source = H + "def f(x: torch.Tensor):\n    v = x.view(-1)\n    i = torch.where(x > 1)\n    v.mul_(-1)\n    x[i] = 0\n    return x\n"
    assert fix(source, "SL101") == source
    assert "may change" in reason(source, "SL101")
    x = torch.tensor([2.0, -3.0])
    assert torch.equal(load_source(fix(source, "SL101"), "alias").f(x.clone()), torch.tensor([0.0, 3.0]))


def test_count_after_aliased_mutation_declines():
    source = H + "def f(x: torch.Tensor, y: torch.Tensor):\n    idx = torch.nonzero(x > 0)\n    helper(x)\n    n = idx.shape[0]\n    return y * n\n"
    assert fix(source, "SL101") == source


@pytest.mark.parametrize("shape", [(3, 3), (3, 4)])
def test_row_mask_reduced_from_the_tensor_is_not_masked_fill(shape):
    """Mask2Former: `x[torch.where(x.any(-1))] = 0` zeroes rows; `masked_fill_` would raise
    (or, for a square `x`, zero columns)."""
    source = H + "def f(x: torch.Tensor):\n    x[torch.where(x.any(-1))] = 0\n    return x\n"
    assert fix(source) == source
    x = torch.zeros(shape)
    x[0, 0] = 1
    assert load_source(fix(source), "rows").f(x.clone())[0].abs().sum() == 0


def test_masked_fill_value_of_unknown_kind_is_unsafe():
    source = H + "def f(x: torch.Tensor, v):\n    x[torch.where(x > 0)] = v\n    return x\n"
    assert fix(source, "SL101", unsafe=False) == source
    assert "masked_fill_" in fix(source, "SL101", unsafe=True)


# -- SL103 -------------------------------------------------------------------------------------------


def test_image_level_mask_is_not_ignore_index():
    source = F + "def f(p: torch.Tensor, t: torch.Tensor, keep: torch.Tensor):\n    t = t.long()\n    m = keep > 0\n    return F.cross_entropy(p[m], t[m])\n"
    assert fix(source, "SL103") == source
    assert "elementwise from the target" in reason(source, "SL103")


def test_class_probability_targets_are_not_ignore_index():
    source = F + "def f(p: torch.Tensor, t: torch.Tensor):\n    m = t >= 0\n    return F.cross_entropy(p[m], t[m])\n"
    assert fix(source, "SL103") == source


def test_kept_minus_100_targets_stay_ignored():
    """`t != 3` with `ignore_index=3` alone would stop ignoring kept -100 targets."""
    source = F + "def f(p: torch.Tensor, t: torch.Tensor):\n    t = t.long()\n    m = t != 3\n    return F.cross_entropy(p.permute(0, 2, 1)[m], t[m])\n"
    fixed = fix(source, "SL103")
    assert "torch.where(m, t, -100)" in fixed
    p = torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(0))
    t = torch.tensor([[3, -100, 1, 2], [0, 4, 3, -100]])
    torch.testing.assert_close(load_source(fixed, "ce_f").f(p, t), load_source(source, "ce_o").f(p, t))


def test_half_masked_mean_accumulates_in_float32():
    source = H + "def f(x: torch.Tensor):\n    return x[x > 0].mean()\n"
    fixed = load_source(fix(source, "SL103"), "half_mean").f
    x = torch.full((4096,), 100.0, dtype=torch.float16)
    assert load_source(source, "half_mean_o").f(x) == 100.0
    result = fixed(x)
    assert result.dtype == torch.float16 and result == 100.0
    assert fixed(-x).isnan()  # empty selection: NaN, as the original mean


def test_integer_amax_keeps_its_dtype():
    source = H + "def f(x: torch.Tensor):\n    return x[x > 2].amax()\n"
    x = torch.tensor([1, 5, 9_007_199_254_740_993])
    assert load_source(fix(source, "SL103"), "int_amax").f(x) == load_source(source, "int_amax_o").f(x)
    assert load_source(fix(source, "SL103"), "int_amax").f(x).dtype == torch.int64


# -- SL301 -------------------------------------------------------------------------------------------

LOOP = (
    "import torch\nimport torch.nn.functional as F\n"
    "def loss_fn(pred, targets):\n    total = 0\n    acc = 0.0\n"
    "    for i in range(len(targets)):\n        n = targets[i].shape[0]\n        total += n\n"
    "        acc += {summand}.sum()\n    return acc / max(total, 1)\n"
)


@pytest.mark.parametrize(
    "summand",
    [
        "F.mse_loss(pred[i, :n], targets[i])",  # reduces: 0.260 became 0.583
        "torch.cdist(pred[i, :n], targets[i])",  # pairwise
        "pairwise_iou(pred[i, :n], targets[i])",  # not defined here: unknown
        "(pred[i, :n] - targets[i]).sqrt()",  # infinite derivative at 0
        "pred[i, :n] / targets[i]",  # unclamped division
    ],
)
def test_padded_batch_needs_an_elementwise_per_box_loss(summand):
    source = LOOP.format(summand=summand)
    assert fix(source, "SL301") == source


def test_padded_batch_with_elementwise_reduction_none_loss_is_equal():
    source = LOOP.format(summand="F.l1_loss(pred[i, :n], targets[i], reduction='none')")
    fixed = fix(source, "SL301")
    assert "pad_sequence" in fixed
    generator = torch.Generator().manual_seed(0)
    pred = torch.randn(3, 5, 4, generator=generator, requires_grad=True)
    targets = [torch.randn(k, 4, generator=generator) for k in (2, 0, 5)]
    expected = load_source(source, "pb_o").loss_fn(pred, targets)
    (grad_expected,) = torch.autograd.grad(expected, pred)
    actual = load_source(fixed, "pb_f").loss_fn(pred, targets)
    (grad_actual,) = torch.autograd.grad(actual, pred)
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(grad_actual, grad_expected)


def test_padded_batch_count_used_elsewhere_declines():
    source = LOOP.format(summand="torch.abs(pred[i, :n] - targets[i])").replace(
        "    return acc / max(total, 1)\n", "    stats = {'boxes': total}\n    return acc / max(total, 1), stats\n"
    )
    assert fix(source, "SL301") == source


# -- names are proven in the scope they are read from -------------------------------------------

NESTED_LOCAL = (
    "import torch\n"
    "def training_step(v):\n"
    "    def inner():\n"
    "        dev = 'cuda'\n"
    "        return dev\n"
    "    return torch.tensor(v).to(dev)\n"
)


def test_a_nested_functions_local_proves_nothing_about_the_outer_name():
    """`dev` in `training_step` is the module's (`inner`'s is its own): moving the device
    into the factory on the strength of `inner`'s string rewrote a call on an unknown name."""
    assert fix(NESTED_LOCAL) == NESTED_LOCAL


def test_a_lambda_reads_its_functions_names():
    source = (
        "import torch\n"
        "def training_step(x):\n"
        "    reps = torch.full((3,), 2)\n"
        "    f = lambda: torch.repeat_interleave(x, reps)\n"
        "    return f()\n"
    )
    fixed = fix(source, "SL104")
    assert "torch.repeat_interleave(x, reps, output_size=3 * 2)" in fixed
    x = torch.arange(3)
    run = lambda code: (exec(code, namespace := {}), namespace["training_step"](x))[1]  # noqa: E731
    assert torch.equal(run(source), run(fixed))
