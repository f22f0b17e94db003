"""Differential fuzzer for the fixes: generated code around each fix form, fixed with
``fix_text(..., unsafe=True)``, original and fixed run side by side on random CPU inputs.

    python benchmarks/fuzz_fixes.py [--programs N] [--inputs K] [--seed S] [--form NAME ...]

For every fix form it generates ``N`` functions around the pattern, varying what the
fix's preconditions are about: aliases mutated in between, shapes (incl. empty and
square), dtypes (float16, bfloat16, float32, float64, int64, bool), empty masks,
NaN / inf, ``requires_grad``, Python values where tensors are expected, and custom
objects with a ``.to``. Each program runs on ``K`` inputs (a *case* is one program
on one input). A case agrees when both versions raise, or both return equal values
(same dtype and shape; NaN equals NaN; float reductions within the dtype's rounding)
and equal gradients for every input that requires grad. A case differs otherwise —
except the edge cases a rule's *Fix safety* section documents (listed in
``DOCUMENTED``), which are counted separately. A program the fixer leaves unchanged
is a *declined* case: the fix must decline rather than change behaviour.

Prints one line per form (cases, fixed, declined, documented, differences) and the
first differing program of each form; exits 1 if any case differs.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

import torch  # noqa: E402

from synclint.fixers.apply import fix_text  # noqa: E402

FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
SHAPES = ((0,), (1,), (5,), (3, 4), (4, 4), (2, 3, 4))


class Obj:
    """A custom batch type with a `.to` that takes only a device (DETR's NestedTensor)."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor

    def to(self, device):
        return Obj(self.tensor.to(device))

    def sum(self):
        return self.tensor.sum()


def _dtype_mismatch(args, expected, actual) -> bool:
    """Documented (SL101 / SL103 *Fix safety*): index assignment raises when the value's
    dtype differs from the tensor's; ``masked_fill_`` / ``copy_`` / ``.to(x.dtype)`` cast.
    And (SL101, unsafe for a value of unknown kind): ``masked_fill_`` raises for a value
    tensor with dimensions, where index assignment broadcast it."""
    if isinstance(expected, RuntimeError) and "dtypes match" in str(expected):
        return True
    return isinstance(actual, RuntimeError) and "0-dimensional value tensor" in str(actual)


@dataclass
class Program:
    source: str
    inputs: Callable[[random.Random], tuple]  # fresh arguments for one case
    documented: Callable[[tuple, object, object], bool] = lambda args, expected, actual: False  # an edge case the docs list


@dataclass
class Tally:
    cases: int = 0
    fixed: int = 0
    declined: int = 0
    documented: int = 0
    differences: int = 0
    first_difference: str | None = None
    programs: int = 0
    fixed_programs: int = 0


# -- inputs -------------------------------------------------------------------------------


def tensor(rng: random.Random, shape=None, dtype=None, special: bool = True, grad: bool | None = None) -> torch.Tensor:
    shape = shape if shape is not None else rng.choice(SHAPES)
    dtype = dtype if dtype is not None else rng.choice(FLOATS)
    generator = torch.Generator().manual_seed(rng.randrange(2**31))
    if dtype.is_floating_point:
        values = torch.randn(shape, generator=generator, dtype=torch.float64) * rng.choice([1.0, 3.0, 100.0])
        if special and values.numel() and rng.random() < 0.3:
            flat = values.view(-1)
            flat[rng.randrange(flat.numel())] = rng.choice([float("nan"), float("inf"), -float("inf")])
        values = values.to(dtype)
        if grad if grad is not None else rng.random() < 0.5:
            values.requires_grad_(True)
        return values
    if dtype == torch.bool:
        return torch.rand(shape, generator=generator) > 0.5
    return torch.randint(-3, 10, shape, generator=generator, dtype=dtype)


def labels(rng: random.Random, shape, classes: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(rng.randrange(2**31))
    t = torch.randint(0, classes, shape, generator=generator)
    if rng.random() < 0.3:
        t[t == 1] = -100  # a kept -100 target: ignored by the original call too
    return t


# -- program generators, one per fix form ----------------------------------------------------------

H = "import torch\nimport torch.nn.functional as F\n"


def _between(rng: random.Random, name: str) -> str:
    """A line between a read and the write: nothing, a pure line, or an alias mutation."""
    return rng.choice(
        ["", f"    tmp = {name} * 2\n", f"    alias = {name}.view(-1)\n    alias.mul_(-1)\n", f"    {name}.add_(1)\n", "    helper = len\n"]
    )


def _leaf_safe(rng: random.Random, x: torch.Tensor) -> torch.Tensor:
    """An in-place target: a non-leaf (or no grad) so both versions can write into it."""
    return x.clone() if x.requires_grad else x


def gen_masked_fill(rng: random.Random) -> Program:
    cond = rng.choice(["x > 0", "x.isnan()", "x.any(-1)", "x == x.amax()", "~(x < 1)", "rows > 0", "x.abs() <= 1"])
    value = rng.choice(["0", "-1.5", "float('nan')", "v", "True", "x.mean()"])
    form = rng.choice(["direct", "named"])
    mid = _between(rng, "x")
    if form == "direct":
        body = f"    x = x * 1\n    x[torch.nonzero({cond}, as_tuple=True)] = {value}\n"
    else:
        body = f"    x = x * 1\n    i = torch.where({cond})\n{mid}    x[i] = {value}\n"
    source = H + f"def f(x: torch.Tensor, rows: torch.Tensor, v):\n{body}    return x\n"

    def inputs(r):
        x = tensor(r, dtype=r.choice(FLOATS + (torch.int64,)))
        rows = tensor(r, shape=x.shape[:1], dtype=torch.float32, grad=False)
        return x, rows, r.choice([2.0, torch.tensor(3.0), torch.ones(1)])

    return Program(source, inputs, _dtype_mismatch)


def gen_where_copy(rng: random.Random) -> Program:
    cond = rng.choice(["x > 0", "x.isfinite()", "y > x", "x.any(-1)"])
    mid = _between(rng, "x")
    source = H + f"def f(x: torch.Tensor, y: torch.Tensor):\n    x = x * 1\n    i = torch.where({cond})\n{mid}    x[i] = y[i]\n    return x\n"

    def inputs(r):
        x = tensor(r)
        return x, tensor(r, shape=x.shape, dtype=r.choice([x.dtype, torch.float64]))

    return Program(source, inputs, _dtype_mismatch)


def gen_count_nonzero(rng: random.Random) -> Program:
    count = rng.choice(["len(torch.nonzero(c))", "torch.nonzero(c).shape[0]", "torch.where(c)[0].numel()", "c.nonzero().size(0)"])
    use = rng.choice(["return x.sum() * n", "return n", "return x * (n + 1)", "if n > 2:\n        x = x + 1\n    return x", "return {n: 1}", "return [n]"])
    mid = _between(rng, "x")
    source = H + f"def f(x: torch.Tensor):\n    c = x > 0\n{mid}    n = {count}\n    {use}\n"
    return Program(source, lambda r: (tensor(r, grad=False),))


def gen_unique_count(rng: random.Random) -> Program:
    call = rng.choice(["torch.unique(x)", "x.unique()", "x.unique_consecutive()", "torch.unique(x, sorted=True)"])
    count = rng.choice(["len(u)", "u.numel()", "u.shape[0]", "torch.numel(u)"])
    use = rng.choice(["return x.sum() + n", "return n", "if n < 2:\n        x = x * 0\n    return x", "return str(n)"])
    source = H + f"def f(x: torch.Tensor):\n    u = {call}\n    n = {count}\n    {use}\n"

    def inputs(r):
        x = tensor(r, dtype=r.choice([torch.int64, torch.float32, torch.float16]), grad=False)
        return (x.round() if x.is_floating_point() else x,)

    def documented(args, outcome, actual):  # NaNs count once each in the fix (docs: SL102)
        return args[0].is_floating_point() and bool(args[0].isnan().any())

    return Program(source, inputs, documented)


def gen_where_select(rng: random.Random) -> Program:
    init = rng.choice(["x.mean()", "x.mean()", "x.float().mean()", "x.sum()", "x", "x[:0]", "x.long().sum()", "None", "F.mse_loss(x, x * 0.5)"])
    test = rng.choice(["x.sum() > 0", "x.sum() > 0", "y > 0", "x.mean() > 0", "x > 0", "flag", "(x > 0).any()"])
    taken = rng.choice(["y * 0.0", "y * 0.0", "-y", "y / 4.0", "y.sqrt()", "None", "'skip'", "[y]", "x", "x[:2]", "y * 2", "obj", "y.clone()"])
    if rng.random() < 0.5:  # half the programs within the preconditions, half probing them
        init = rng.choice(["x.mean()", "F.mse_loss(x, x * 0.5)", "x.float().mean()"])
        test = rng.choice(["x.sum() > 0", "x.mean() > 0.1", "(x > 0).any()"])
        taken = rng.choice(["y * 0.0", "-y", "y / 4.0", "y.clone()", "y * 2.5"])
    other = rng.choice(["", "    else:\n        y = y + 1.0\n", "    else:\n        y = -y\n"])
    source = H + f"def f(x: torch.Tensor, flag, obj):\n    y = {init}\n    if {test}:\n        y = {taken}\n{other}    return y\n"

    def inputs(r):
        x = tensor(r, shape=r.choice(SHAPES[1:]), dtype=r.choice([torch.float32, torch.float16, torch.float64]))
        return x, torch.tensor(r.random() > 0.5), Obj(x)

    return Program(source, inputs)


def gen_where_reduction(rng: random.Random) -> Program:
    reduction = rng.choice(["sum", "mean", "amax", "amin", "max", "min"])
    mask = rng.choice(["x > 0", "~torch.isnan(x)", "x.abs() < 1", "x > 1e9", "rows > 0", "x.isfinite() & (x < 2)"])
    mid = _between(rng, "x")
    source = H + f"def f(x: torch.Tensor, rows: torch.Tensor):\n    m = {mask}\n{mid}    return x[m].{reduction}()\n"

    def inputs(r):
        dtype = r.choice(FLOATS + (torch.int64,)) if reduction not in ("mean",) else r.choice(FLOATS)
        x = tensor(r, dtype=dtype, grad=False) * (r.choice([1, 100]) if dtype != torch.int64 else 1)
        if dtype.is_floating_point and r.random() < 0.5:
            x.requires_grad_(True)
        if r.random() < 0.2 and dtype.is_floating_point:
            x = torch.full((4096,), 60.0, dtype=dtype, requires_grad=x.requires_grad)  # fp16 overflow probe
        return x, tensor(r, shape=x.shape[:1], grad=False)

    def documented(args, outcome, actual):  # docs: empty amax/amin gives the fill where the original raised
        return reduction in ("amax", "amin", "max", "min") and isinstance(outcome, Exception)

    return Program(source, inputs, documented)


def gen_where_update(rng: random.Random) -> Program:
    bind = rng.choice(["x = a * 2", "x = a.clone()", "x = a", "x = a.view(-1)"])
    mask = rng.choice(["x > 1", "y > 0", "x.isnan()", "x.any(-1)"])
    mid = _between(rng, "x")
    source = H + f"def f(a: torch.Tensor, y: torch.Tensor):\n    {bind}\n    m = {mask}\n{mid}    x[m] = y[m]\n    return x, a\n"

    def inputs(r):
        a = tensor(r, grad=False)
        if r.random() < 0.5:
            a.requires_grad_(a.is_floating_point())
            a = a * 1
        y = tensor(r, shape=a.shape, dtype=r.choice([a.dtype, torch.float64, torch.float32]))
        return a, y

    return Program(source, inputs, _dtype_mismatch)


def gen_ignore_index(rng: random.Random) -> Program:
    prep = rng.choice(["    t = t.long()\n", ""])
    mask = rng.choice(["t != 3", "t.ne(3)", "t >= 0", "t != -100", "keep > 0", "t < 4"])
    call = rng.choice(["F.cross_entropy({p}, t[m])", "F.cross_entropy({p}, t[m], label_smoothing=0.1)",
                       "F.cross_entropy({p}, t[m], weight=w)", "F.cross_entropy({p}, t[m], ignore_index=2)",
                       "F.cross_entropy({p}, t[m], reduction='sum')"])
    logits = rng.choice(["p.permute(0, 2, 1)[m]", "p.movedim(1, -1)[m]"])
    source = H + f"def f(p: torch.Tensor, t: torch.Tensor, keep: torch.Tensor, w: torch.Tensor):\n{prep}    m = {mask}\n    return {call.format(p=logits)}\n"

    def inputs(r):
        n, length = r.choice([1, 2, 3]), r.choice([1, 4, 6])
        p = tensor(r, shape=(n, 5, length), dtype=r.choice([torch.float32, torch.float64]), special=False)
        t = labels(r, (n, length), 5)
        if r.random() < 0.2:
            t.fill_(3)  # every target masked out: NaN in both
        keep = tensor(r, shape=(n,), dtype=torch.float32, grad=False)
        return p, t, keep, torch.rand(5, generator=torch.Generator().manual_seed(r.randrange(99))).to(p.dtype) + 0.5

    return Program(source, inputs)


def gen_padded_batch(rng: random.Random) -> Program:
    loss = rng.choice([
        "torch.abs({s} - {t})", "F.l1_loss({s}, {t}, reduction='none')", "F.mse_loss({s}, {t})",
        "torch.cdist({s}, {t})", "box_iou({s}, {t})", "pair_iou({s}, {t})", "({s} - {t}).sqrt()", "{s} / {t}",
    ])
    if rng.random() < 0.5:  # half the programs within the preconditions
        loss = rng.choice(["torch.abs({s} - {t})", "F.l1_loss({s}, {t}, reduction='none')", "box_iou({s}, {t})",
                           "F.smooth_l1_loss({s}, {t}, reduction='none')"])
    bound = rng.random() < 0.5
    s = "sample_preds" if bound else "pred[i, :n]"
    tail = rng.choice(["    return acc / max(total, 1)\n", "    return acc / max(total, 1)\n", "    return acc, total\n", "    return acc / max(total, 1), {'n': total}\n"])
    source = (
        H
        + "def box_iou(a, b):\n    lt = torch.max(a[..., :2], b[..., :2])\n    rb = torch.min(a[..., 2:], b[..., 2:])\n"
        "    wh = (rb - lt).clamp(min=0)\n    inter = wh[..., 0] * wh[..., 1]\n"
        "    union = ((a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1]) + (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1]) - inter).clamp(1e-6)\n"
        "    return inter / union\n"
        "def pair_iou(a, b):\n    return (a[:, None, :2] - b[None, :, :2]).abs().sum(-1)\n"
        "def loss_fn(pred, targets):\n    total = 0\n    acc = 0.0\n    for i in range(len(targets)):\n"
        "        n = targets[i].shape[0]\n"
        + ("        sample_preds = pred[i, :n]\n" if bound else "")
        + "        total += n\n"
        f"        acc += {loss.format(s=s, t='targets[i]')}.sum()\n" + tail
    )

    def inputs(r):
        dtype = r.choice([torch.float32, torch.float64])
        b = r.choice([1, 2, 3])
        pred = tensor(r, shape=(b, 6, 4), dtype=dtype, special=False, grad=True).abs()
        targets = [tensor(r, shape=(r.choice([0, 1, 3, 6]), 4), dtype=dtype, special=False, grad=False).abs() for _ in range(b)]
        return pred, targets

    def documented(args, outcome, actual):  # docs (SL301): no boxes at all -> a 0-d tensor instead of 0.0
        return sum(len(t) for t in args[1]) == 0

    return Program(source, inputs, documented)


def gen_non_blocking(rng: random.Random) -> Program:
    annotate = rng.choice(["        x: torch.Tensor\n", ""])
    call = rng.choice(["x.to(device)", "x.to(device, torch.float64)", "x.to(device, torch.float64, False)", "x.cuda() if False else x.to(device)", "x.to(device, non_blocking=False)"])
    # The loop's own target, or a name bound to a field of its batch (``x = batch["x"]``).
    field = rng.random() < 0.5
    head = "    for batch in loader:\n        x = batch['x']\n" if field else "    for x, y in loader:\n"
    # A view or a conversion of the batch first (SL401 reads them as the loader's data), or
    # a conversion inline: ``x.float().to(device)``.
    prep = rng.choice(["", "", "        x = x.float()\n", "        x = x.unsqueeze(0)\n", "        x = x.half()\n",
                       "        x = x[1:].reshape(-1)\n"])
    if rng.random() < 0.2:
        call = call.replace("x.to(", "x.float().to(", 1)
    source = H + (f"def f(loader, device):\n    out = []\n{head}{annotate}{prep}        x = {call}\n"
                  "        out.append(x.sum() if not hasattr(x, 'tensor') else x.tensor.sum())\n    return out\n")
    tensors_only = bool(prep) or "x.float()" in call  # (an ``Obj`` has no ``float``)

    def inputs(r):
        dtype = r.choice([torch.float32, torch.float64, torch.float16])
        t = tensor(r, shape=(r.choice([1, 3, 4]),), dtype=dtype, grad=False)
        # an annotation is evidence; a non-tensor receiver where nothing needs a tensor's methods
        batch = Obj(t) if not annotate and not tensors_only and r.random() < 0.5 else t
        return [({"x": batch} if field else (batch, None))], "cpu"

    return Program(source, inputs)


def gen_pin_memory(rng: random.Random) -> Program:
    args = rng.choice(["ds", "ds, batch_size=2", "ds, pin_memory=False", "ds, 2, False, None, None, 0, None, False"])
    # Copies that ask to be asynchronous: pinning is what they need (SL402). In a loop of the
    # function that builds the loader the fix comes from each copy's finding; through an
    # iterator bound to a name or a field taken from a dictionary batch too.
    body = rng.choice([
        "    return [b.to(device, non_blocking=True).sum() for b in loader]\n",
        "    out = []\n    for b in loader:\n        b = b.to(device, non_blocking=True)\n        out.append(b.sum())\n    return out\n",
        "    out = []\n    it = iter(loader)\n    for i, b in enumerate(it):\n        out.append(b.cuda(non_blocking=True).sum() if False else b.to(device, non_blocking=True).sum())\n    return out\n",
        "    out = []\n    for batch in loader:\n        x = batch['x']\n        out.append(x.to(device, non_blocking=True).sum())\n    return out\n",
        "    out = []\n    for batch in loader:\n        batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}\n        out.append(batch['x'].sum())\n    return out\n",
    ])
    keyed = "batch[" in body
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        f"def f(ds):\n    device = 'cuda' if False else 'cpu'\n    loader = DataLoader({args})\n" + body
    )

    def inputs(r):
        shape, dtype = r.choice(SHAPES), r.choice(FLOATS)
        items = [tensor(r, shape=shape, dtype=dtype, grad=False) for _ in range(3)]
        if r.random() < 0.15:
            items = [r.random() for _ in range(3)]  # Python numbers: collated into a tensor
        if r.random() < 0.1:
            items = ["a", "b", "c"]  # strings: no `.to`, both raise
        return ([{"x": item} for item in items] if keyed else items),

    return Program(source, inputs)


def gen_device_factory(rng: random.Random) -> Program:
    literal = rng.choice(["0.0", "-0.0", "1.5", "1e39", "-1e39", "3.3e38", "70000.0", "255", "-1", "2**63", "True", "1e-46", "300"])
    dtype = rng.choice(["", ", dtype=torch.float16", ", dtype=torch.uint8", ", dtype=torch.bfloat16", ", dtype=torch.int64", ", dtype=x.dtype"])
    grad = rng.choice(["", ", requires_grad=True"])
    move = rng.choice([
        f"torch.tensor({literal}, device=x.device{dtype})",
        f"torch.tensor({literal}, device=x.device{dtype}{grad})",
        "torch.zeros(3).to(dev)", "torch.arange(4).to(x.device)", "torch.ones(2).to(std_dev)",
        "torch.zeros(2, requires_grad=True).to(x.device)", "torch.ones(2).to(x)", "torch.eye(2).to(device=x.device)",
    ])
    source = H + f"def forward(self, x: torch.Tensor, std_dev, dev):\n    return {move}\n"

    def inputs(r):
        x = tensor(r, shape=(2,), dtype=r.choice([torch.float32, torch.float64]), grad=False)
        return None, x, r.choice([0.5, torch.float64, x]), "cpu"

    return Program(source, inputs)


def gen_like_device_factory(rng: random.Random) -> Program:
    # SL403 on ``torch.ones_like(h).to(...)`` of a host tensor ``h``: the fix passes the
    # destination as ``device=``. (``empty_like``, ``rand_like`` and ``randn_like`` are
    # left out: their values differ from call to call with or without the fix.)
    shape = rng.choice(["()", "(0,)", "(3,)", "(2, 3)", "(1, 0, 2)"])
    dtype = rng.choice(["", ", dtype=torch.float16", ", dtype=torch.bfloat16", ", dtype=torch.int64", ", dtype=torch.bool"])
    host = rng.choice([f"torch.zeros({shape}{dtype})", f"torch.ones({shape}{dtype}).half()", f"torch.full({shape}, 7{dtype})"])
    like = rng.choice(["torch.zeros_like(h)", "torch.ones_like(h)", "torch.full_like(h, 2.5)",
                       "torch.ones_like(h, dtype=torch.float64)", "torch.zeros_like(h).float()"])
    move = rng.choice([".to(x.device)", ".to(dev)", ".to(device=x.device)", ".to(x)", ".to(x.device, torch.float16)",
                       ".cuda() if False else " + like + ".to(x.device)"])
    source = H + f"def forward(self, x: torch.Tensor, std_dev, dev):\n    h = {host}\n    return {like}{move}\n"

    def inputs(r):
        x = tensor(r, shape=(2,), dtype=r.choice([torch.float32, torch.float64, torch.float16]), grad=False)
        return None, x, None, "cpu"

    return Program(source, inputs)


def gen_torch_reachable(rng: random.Random) -> Program:
    header = rng.choice([
        "import torch\n", "import torch as T\n", "from torch import Tensor\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\nfrom torch import Tensor\n",
    ])
    params = rng.choice(["x: Tensor", "x: Tensor, torch=None", "x: Tensor, T=None"])
    local = rng.choice(["", "    torch = None\n", "    T = 1\n"])
    annotation = "T.Tensor" if "as T" in header else ("torch.Tensor" if header == "import torch\n" else "Tensor")
    source = header + f"def f({params.replace('Tensor', annotation)}):\n{local}    return x[x > 0].sum()\n"
    return Program(source, lambda r: (tensor(r, grad=False),))


def gen_device_accumulation(rng: random.Random) -> Program:
    start = rng.choice(["0.0", "0.0", "0", "1.5"])
    value = rng.choice(["x.sum()", "(x * x).mean()", "x", "x.max()", "x.sum().long()"])
    extra = rng.choice(["", "        print_ = total\n", "        if x.numel() > 3:\n            continue\n", "        if x.numel() > 100:\n            break\n"])
    after = rng.choice(["    return total\n", "    return total / max(len(batches), 1)\n", "    return {'loss': total}\n", "    return f'{total:.3f}'\n"])
    source = H + f"def f(batches: list[torch.Tensor]):\n    total = {start}\n    for x in batches:\n{extra}        total += {value}.item()\n{after}"

    def inputs(r):
        dtype = r.choice(FLOATS + (torch.int64,))
        return ([tensor(r, shape=r.choice([(1,), (3,), (0,)]), dtype=dtype, grad=False) for _ in range(r.choice([0, 1, 5]))],)

    return Program(source, inputs)


def gen_scatter_count(rng: random.Random) -> Program:
    bind = rng.choice(["y % k", "y.clamp(0, k - 1)", "y.clamp(min=0, max=k - 1)", "torch.clamp(y, 0, k - 1)", "y", "y % (k + 1)", "y.abs()"])
    call = rng.choice(["torch.bincount(labels, minlength=k)", "labels.bincount(minlength=k)", "torch.bincount(labels, weights=w, minlength=k)"])
    source = H + f"def f(y: torch.Tensor, w: torch.Tensor, k: int):\n    labels = {bind}\n    return {call}\n"

    def inputs(r):
        n = r.choice([0, 1, 9, 40])
        generator = torch.Generator().manual_seed(r.randrange(2**31))
        y = torch.randint(-6, 12, (n,), generator=generator)
        if r.random() < 0.3:
            y = y.abs().to(r.choice([torch.int32, torch.uint8]))
        return y, torch.rand(n, generator=generator), r.choice([1, 4, 10])

    return Program(source, inputs)


def gen_repeat_output_size(rng: random.Random) -> Program:
    reps = rng.choice([
        "torch.bincount(batch, minlength=k)", "batch.bincount(minlength=k)", "torch.bincount(batch)",
        "torch.full((k,), 2, device=batch.device)", "torch.full((k,), 0, device=batch.device)",
        "batch.new_full((k,), 3)", "torch.bincount(batch, weights=w, minlength=k).long()", "counts",
    ])
    mid = rng.choice(["", "    batch = batch[:1]\n", "    tmp = batch + 1\n"])
    call = rng.choice(["torch.repeat_interleave(values, r)", "values.repeat_interleave(r, dim=0)", "torch.repeat_interleave(r)"])
    source = H + f"def f(batch: torch.Tensor, counts: torch.Tensor, w: torch.Tensor, k: int):\n    values = torch.arange(k, device=batch.device) * 2\n    r = {reps}\n{mid}    return {call}\n"

    def inputs(r):
        k = r.choice([1, 3, 7])
        generator = torch.Generator().manual_seed(r.randrange(2**31))
        batch = torch.randint(0, k + r.choice([0, 0, 2]), (r.choice([0, 4, 30]),), generator=generator)
        return batch, torch.randint(0, 3, (k,), generator=generator), torch.rand(batch.numel(), generator=generator), k

    return Program(source, inputs)


def _no_nonzero_edge(condition: Callable) -> Callable[[tuple, object, object], bool]:
    """Documented (SL101 *Fix safety*, ``nonzero_static``): a condition without a non-zero
    element makes the original reduction (or its ``[0]``) raise, and the fixed code reads
    the fill value."""

    def documented(args, expected, actual) -> bool:
        if not isinstance(expected, (RuntimeError, IndexError)) or isinstance(actual, Exception):
            return False
        if str(expected) == "index 0 is out of bounds for dimension 0 with size 0":
            # `nonzero(c)[0]` of an empty result: the only empty dimension 0 these programs
            # index with 0 (the condition is read after a mutation of `x`, so its values
            # cannot be re-checked from `args`).
            return True
        # The error of a reduction over an empty tensor, from a condition with elements
        # (an in-between mutation can change the condition's values, never its shape).
        return "reduction dim" in str(expected) and condition(*args).numel() > 0

    return documented


def gen_nonzero_static_max(rng: random.Random) -> Program:
    conditions = {
        "m": lambda x, m, w: m, "x": lambda x, m, w: x, "x > 0": lambda x, m, w: x > 0,
        "x != -1.5": lambda x, m, w: x != -1.5, "x > w": lambda x, m, w: x > w, "m & (x > 0)": lambda x, m, w: m & (x > 0),
    }
    cond = rng.choice(sorted(conditions))
    call = rng.choice([f"torch.nonzero({cond})", f"({cond}).nonzero()", f"torch.argwhere({cond})", f"torch.where({cond})[0]"])
    reduce = rng.choice([
        ".max()", ".amax()", ".min()", ".amin()", ".amax(0)", ".amin(dim=0)", ".amax(1)", ".max(0)[0]",
        ".max(dim=-1).values", ".sum()",
    ])
    use = rng.choice(["return last", "return last + 1", "return x.sum() * last", "return [last, m.sum()]"])
    mid = _between(rng, "x")
    source = H + f"def f(x: torch.Tensor, m: torch.Tensor, w: torch.Tensor):\n{mid}    last = {call}{reduce}\n    {use}\n"

    return Program(source, _sparse_inputs(SHAPES + ((),)), _no_nonzero_edge(conditions[cond]))


def _sparse_inputs(shapes):
    """``(x, m, w)`` for the nonzero forms: ``x`` of a random dtype, zero outside a random
    density (empty included), sometimes requiring grad; a mask ``m`` of the same density;
    a row ``w``."""

    def inputs(r):
        shape = r.choice(shapes)
        density = r.choice([0.0, 0.05, 0.5, 1.0])
        generator = torch.Generator().manual_seed(r.randrange(2**31))
        keep = torch.rand(shape, generator=generator) < density
        x = tensor(r, shape, r.choice(FLOATS + (torch.int64, torch.bool)), grad=False)
        x = torch.where(keep, x, torch.zeros((), dtype=x.dtype))
        if x.is_floating_point() and r.random() < 0.5:
            x.requires_grad_(True)
        m = torch.rand(shape, generator=generator) < density
        w = torch.rand(shape[-1:] if shape else (), generator=generator)
        return x, m, w

    return inputs


def gen_nonzero_static_first(rng: random.Random) -> Program:
    conditions = {
        "m": lambda x, m, w: m, "x": lambda x, m, w: x, "x > 0": lambda x, m, w: x > 0,
        "x > w": lambda x, m, w: x > w, "m & (x > 0)": lambda x, m, w: m & (x > 0), "x.sum(-1) > 0": lambda x, m, w: x.sum(-1) > 0,
    }
    cond = rng.choice(sorted(conditions))
    call = rng.choice([f"torch.nonzero({cond})", f"({cond}).nonzero()", f"torch.argwhere({cond})", f"torch.where({cond})"])
    index = rng.choice(["[0]", "[0, 0]", "[0][-1]", "[0:1]", "[1]", "[-1]", "[..., 0]"])
    use = rng.choice(["return first", "return first + 1", "return x.sum() * first.sum()", "return [first, m.sum()]"])
    mid = _between(rng, "x")
    source = H + f"def f(x: torch.Tensor, m: torch.Tensor, w: torch.Tensor):\n{mid}    first = {call}{index}\n    {use}\n"

    return Program(source, _sparse_inputs(SHAPES[1:] + ((),)), _no_nonzero_edge(conditions[cond]))


FORMS: dict[str, Callable[[random.Random], Program]] = {
    "masked_fill": gen_masked_fill,
    "where_copy": gen_where_copy,
    "count_nonzero": gen_count_nonzero,
    "unique_count": gen_unique_count,
    "where_select": gen_where_select,
    "where_reduction": gen_where_reduction,
    "where_update": gen_where_update,
    "ignore_index": gen_ignore_index,
    "padded_batch": gen_padded_batch,
    "non_blocking": gen_non_blocking,
    "pin_memory": gen_pin_memory,
    "device_factory": gen_device_factory,
    "like_device_factory": gen_like_device_factory,
    "torch_reachable": gen_torch_reachable,
    "device_accumulation": gen_device_accumulation,
    "scatter_count": gen_scatter_count,
    "repeat_output_size": gen_repeat_output_size,
    "nonzero_static_max": gen_nonzero_static_max,
    "nonzero_static_first": gen_nonzero_static_first,
}


# -- running and comparing -----------------------------------------------------------------------


def _load(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def _entry(module: types.ModuleType) -> Callable:
    for name in ("f", "loss_fn", "forward"):
        if hasattr(module, name):
            return getattr(module, name)
    raise LookupError("no entry point")


def _clone(value):
    if isinstance(value, torch.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    if isinstance(value, list):
        return [_clone(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_clone(v) for v in value)
    if isinstance(value, Obj):
        return Obj(_clone(value.tensor))
    return value


def _leaves(args) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    for value in args:
        if isinstance(value, torch.Tensor) and value.requires_grad and value.is_leaf:
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(_leaves(value))
    return found


def _float_tensors(result) -> list[torch.Tensor]:
    if isinstance(result, torch.Tensor):
        return [result] if result.is_floating_point() and result.requires_grad else []
    if isinstance(result, (list, tuple)):
        return [t for r in result for t in _float_tensors(r)]
    if isinstance(result, dict):
        return [t for r in result.values() for t in _float_tensors(r)]
    return []


def _run(function: Callable, args: tuple):
    """``(result, gradients)`` or the exception raised."""
    args = _clone(args)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = function(*args)
        leaves = _leaves(args)
        outputs = _float_tensors(result)
        grads = None
        if leaves and outputs:
            total = sum(o.float().nan_to_num(0.0, 0.0, 0.0).sum() for o in outputs)
            if total.requires_grad:
                grads = torch.autograd.grad(total, leaves, allow_unused=True)
        return result, grads
    except Exception as error:  # noqa: BLE001 - both versions raising is agreement
        return error


def _tolerance(dtype: torch.dtype) -> dict:
    if dtype in (torch.float16, torch.bfloat16):
        return {"rtol": 2e-2, "atol": 1e-2}
    return {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 1e-9, "atol": 1e-12}


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False  # an int that became a tensor: a type change
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.is_floating_point():
            try:
                torch.testing.assert_close(b.detach(), a.detach(), equal_nan=True, **_tolerance(a.dtype))
            except AssertionError:
                return False
            return True
        return torch.equal(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(type(k1) is type(k2) for k1, k2 in zip(a, b)) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, Obj) and isinstance(b, Obj):
        return same(a.tensor, b.tensor)
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return type(a) is type(b) and a == b


def agree(expected, actual) -> bool:
    if isinstance(expected, Exception) or isinstance(actual, Exception):
        return isinstance(expected, Exception) and isinstance(actual, Exception)
    (r1, g1), (r2, g2) = expected, actual
    if not same(r1, r2):
        return False
    if (g1 is None) != (g2 is None):
        return False
    if g1 is not None:
        for x, y in zip(g1, g2):
            if (x is None) != (y is None):
                if x is None and y is not None and not y.any():
                    continue
                if y is None and x is not None and not x.any():
                    continue
                return False
            if x is not None and not same(x, y):
                return False
    return True


def fuzz_form(name: str, programs: int, inputs: int, seed: int) -> Tally:
    tally = Tally()
    rng = random.Random(f"{name}:{seed}")
    cache: dict[str, str] = {}
    for index in range(programs):
        program = FORMS[name](rng)
        fixed = cache.get(program.source)
        if fixed is None:
            fixed = cache[program.source] = fix_text(program.source, "fuzz.py", None, unsafe=True)[0]
        tally.programs += 1
        changed = fixed != program.source
        tally.fixed_programs += changed
        original = _entry(_load(program.source, f"fuzz_o_{name}_{index}"))
        rewritten = _entry(_load(fixed, f"fuzz_f_{name}_{index}")) if changed else None
        for _ in range(inputs):
            args = program.inputs(rng)
            tally.cases += 1
            if rewritten is None:
                tally.declined += 1
                continue
            tally.fixed += 1
            expected, actual = _run(original, args), _run(rewritten, args)
            if agree(expected, actual):
                continue
            if program.documented(args, expected, actual):
                tally.documented += 1
                continue
            tally.differences += 1
            if tally.first_difference is None:
                tally.first_difference = (
                    f"--- original\n{program.source}--- fixed\n{fixed}--- args\n{args!r}\n"
                    f"--- expected\n{expected!r}\n--- actual\n{actual!r}\n"
                )
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=250, help="generated programs per fix form")
    parser.add_argument("--inputs", type=int, default=4, help="random inputs per program (cases = programs x inputs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--form", action="append", choices=sorted(FORMS), help="only these forms (repeatable)")
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    failed = False
    print(f"{'form':<16} {'cases':>6} {'fixed':>6} {'declined':>8} {'documented':>10} {'differences':>11}  programs fixed/total  seconds")
    for name in args.form or list(FORMS):
        start = time.perf_counter()
        tally = fuzz_form(name, args.programs, args.inputs, args.seed)
        print(
            f"{name:<16} {tally.cases:>6} {tally.fixed:>6} {tally.declined:>8} {tally.documented:>10} {tally.differences:>11}"
            f"  {tally.fixed_programs:>5}/{tally.programs:<5}  {time.perf_counter() - start:7.1f}",
            flush=True,
        )
        if tally.differences:
            failed = True
            print(tally.first_difference)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
