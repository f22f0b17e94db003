"""Each fixer, text in -> exact text out; and the look-alikes it must leave alone."""

from __future__ import annotations

import pytest

from synclint.config import Settings
from synclint.fixers.apply import fix_text

H = "import torch\n"
F = "import torch\nimport torch.nn.functional as F\n"


def fix(source: str, code: str | None = None, unsafe: bool = True) -> str:
    settings = Settings(select=(code,)) if code else None
    return fix_text(source, "t.py", settings, unsafe)[0]


REWRITES = [
    # SL101 masked_fill / where
    ("SL101", H + "def f(x: torch.Tensor):\n    x[torch.nonzero(x > 1, as_tuple=True)] = 0\n",
     H + "def f(x: torch.Tensor):\n    x.masked_fill_(x > 1, 0)\n"),
    ("SL101", H + "def f(x: torch.Tensor, k):\n    idx = (x == k).nonzero(as_tuple=True)\n    x[idx] = k + 1  # bump\n    return x\n",
     H + "def f(x: torch.Tensor, k):\n    x.masked_fill_(x == k, k + 1)  # bump\n    return x\n"),
    # SL101 counts
    ("SL101", H + "def f(m: torch.Tensor):\n    idx = torch.nonzero(m)\n    n = idx.shape[0]\n    return n\n",
     H + "def f(m: torch.Tensor):\n    n = torch.count_nonzero(m)\n    return n\n"),
    ("SL101", H + "def f(m: torch.Tensor):\n    return torch.where(m)[0].numel()\n",
     H + "def f(m: torch.Tensor):\n    return torch.count_nonzero(m)\n"),
    # SL102
    ("SL102", H + "def f(t: torch.Tensor):\n    return 2 * len(torch.unique_consecutive(t))\n",
     H + "def f(t: torch.Tensor):\n    flat_t = t.flatten()\n    return 2 * (torch.count_nonzero(flat_t[1:] != flat_t[:-1]) + min(flat_t.numel(), 1))\n"),
    # SL202
    ("SL202", H + "def f(x: torch.Tensor, a, b):\n    if x.sum() > 0:\n        y = a\n    else:\n        y = b\n    return y\n",
     H + "def f(x: torch.Tensor, a, b):\n    y = torch.where(x.sum() > 0, a, b)\n    return y\n"),
    # SL103 reductions and updates
    ("SL103", H + "def f(x: torch.Tensor):\n    return 1 / x[~torch.isnan(x)].mean()\n",
     H + "def f(x: torch.Tensor):\n    return 1 / (torch.where(~torch.isnan(x), x, 0).sum() / (~torch.isnan(x)).sum())\n"),
    ("SL103", H + "def f(x: torch.Tensor):\n    return x[x < 0].min()\n",
     H + "def f(x: torch.Tensor):\n    return torch.where(x < 0, x, float(\"inf\")).amin()\n"),
    ("SL103", H + "def f(a: torch.Tensor, y: torch.Tensor):\n    x = a * 2\n    m = x > 1\n    x[m] = y[m]\n    return x\n",
     H + "def f(a: torch.Tensor, y: torch.Tensor):\n    x = a * 2\n    m = x > 1\n    x = torch.where(m, y, x)\n    return x\n"),
    # SL103 masked cross-entropy: module with weights keeps the module
    ("SL103", H + "class L(torch.nn.Module):\n    def __init__(self, w):\n        super().__init__()\n        self.ce = torch.nn.CrossEntropyLoss(weight=w)\n"
     "    def forward(self, p, t):\n        m = t >= 0\n        return self.ce(p[m], t[m])\n",
     H + "class L(torch.nn.Module):\n    def __init__(self, w):\n        super().__init__()\n        self.ce = torch.nn.CrossEntropyLoss(weight=w)\n"
     "    def forward(self, p, t):\n        m = t >= 0\n        return self.ce(p.movedim(-1, 1), torch.where(m, t, self.ce.ignore_index))\n"),
    # functional, mask not of the `t != K` form: where + explicit default ignore index
    ("SL103", F + "def f(p: torch.Tensor, t: torch.Tensor, keep: torch.Tensor):\n    m = keep > 0\n    return F.cross_entropy(p[m], t[m], reduction='sum')\n",
     F + "def f(p: torch.Tensor, t: torch.Tensor, keep: torch.Tensor):\n    m = keep > 0\n    return F.cross_entropy(p.movedim(-1, 1), torch.where(m, t, -100), reduction='sum', ignore_index=-100)\n"),
    # SL403
    ("SL403", H + "def forward(self, x):\n    return torch.tensor(0, device=x.device, dtype=torch.long)\n",
     H + "def forward(self, x):\n    return torch.full((), 0, device=x.device, dtype=torch.long)\n"),
    ("SL403", H + "def forward(self, x):\n    return torch.tensor(-0.0, device=x.device)\n",
     H + "def forward(self, x):\n    return torch.full((), -0.0, device=x.device)\n"),
]

UNTOUCHED = [
    # a tensor value of the selected length has no masked_fill form
    ("SL101", H + "def f(x: torch.Tensor, v: torch.Tensor):\n    x[torch.nonzero(x > 1, as_tuple=True)] = v\n"),
    # the indices are used again
    ("SL101", H + "def f(x: torch.Tensor, y: torch.Tensor):\n    i = torch.where(x > 1)\n    x[i] = 0\n    return y[i]\n"),
    # the condition changes between the nonzero and the write
    ("SL101", H + "def f(x: torch.Tensor):\n    i = torch.where(x > 1)\n    x.add_(1)\n    x[i] = 0\n"),
    # (n, ndim) indices: numel is not the count
    ("SL101", H + "def f(m: torch.Tensor):\n    return torch.nonzero(m).numel()\n"),
    # unique values are used, not just counted
    ("SL102", H + "def f(t: torch.Tensor):\n    u = torch.unique(t)\n    return u.numel(), u\n"),
    ("SL102", H + "def f(t: torch.Tensor):\n    return len(torch.unique(t, dim=0))\n"),
    # if bodies that do more than pick a value
    ("SL202", H + "def f(x: torch.Tensor, y):\n    if x.any():\n        y = 1\n        print(y)\n    return y\n"),
    ("SL202", H + "def f(x: torch.Tensor):\n    if x.any():\n        z = 1\n    return 0\n"),
    ("SL202", H + "def f(x: torch.Tensor, y):\n    if x.any():\n        y = 1\n    elif x.all():\n        y = 2\n    return y\n"),
    # mask over leading dims only: no same-shape guarantee
    ("SL103", H + "def f(x: torch.Tensor, rows: torch.Tensor):\n    return x[rows > 0].sum()\n"),
    ("SL103", H + "def f(x: torch.Tensor):\n    return x[x > 0].sum(dim=0)\n"),
    # reduction='none' keeps the masked shape
    ("SL103", F + "def f(p: torch.Tensor, t: torch.Tensor):\n    m = t != -1\n    return F.cross_entropy(p[m], t[m], reduction='none')\n"),
    # different masks for logits and targets
    ("SL103", F + "def f(p: torch.Tensor, t: torch.Tensor, m2: torch.Tensor):\n    m = t != -1\n    return F.cross_entropy(p[m2], t[m])\n"),
    # transpose is not a channels-last permute
    ("SL403", H + "def forward(self, x):\n    return torch.tensor([1, 2], device=x.device)\n"),
    ("SL403", H + "def forward(self, x):\n    return torch.zeros(3).to(x)\n"),
    # loops doing something else per sample
    ("SL301", H + "def loss_fn(pred, targets):\n    acc = 0.0\n    for i in range(len(targets)):\n        print(i)\n        acc += (pred[i, :len(targets[i])] - targets[i]).sum()\n    return acc\n"),
    ("SL301", H + "def loss_fn(pred, targets, flags):\n    acc = 0.0\n    for i in range(len(targets)):\n        n = len(targets[i])\n        if flags[i]:\n            acc += (pred[i, :n] - targets[i]).sum()\n    return acc\n"),
]


@pytest.mark.parametrize(("code", "source", "expected"), REWRITES, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(REWRITES)])
def test_rewrite(code, source, expected):
    assert fix(source, code) == expected
    assert fix(expected, code) == expected  # idempotent


@pytest.mark.parametrize(("code", "source"), UNTOUCHED, ids=[f"{c}-{i}" for i, (c, _) in enumerate(UNTOUCHED)])
def test_left_alone(code, source):
    assert fix(source, code) == source


def test_masked_fill_is_safe_only_when_the_mask_has_the_tensors_shape():
    elementwise = H + "def f(x: torch.Tensor):\n    x[torch.where(x > 1)] = 0\n"
    other = H + "def f(x: torch.Tensor, rows: torch.Tensor):\n    x[torch.where(rows > 1)] = 0\n"
    assert fix(elementwise, "SL101", unsafe=False) != elementwise
    assert fix(other, "SL101", unsafe=False) == other
    assert fix(other, "SL101", unsafe=True) == H + "def f(x: torch.Tensor, rows: torch.Tensor):\n    x.masked_fill_(rows > 1, 0)\n"


def test_random_factories_move_only_as_unsafe():
    source = H + "def forward(self, x):\n    return torch.randn(3).cuda()\n"
    assert fix(source, "SL403", unsafe=False) == source
    assert fix(source, "SL403") == H + "def forward(self, x):\n    return torch.randn(3, device='cuda')\n"


def test_torch_import_added_only_when_missing():
    source = "import torch as T\ndef f(x: T.Tensor, y: T.Tensor):\n    x[x > 0] = y[x > 0]\n"
    assert fix(source, "SL103") == "import torch as T\ndef f(x: T.Tensor, y: T.Tensor):\n    x.copy_(T.where(x > 0, y, x))\n"
    functional = "from torch import nn\nclass L(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.ce = nn.CrossEntropyLoss()\n    def forward(self, p, t):\n        m = t != 255\n        return self.ce(p[m], t[m])\n"
    fixed = fix(functional, "SL103")
    assert fixed.startswith("import torch.nn.functional\nfrom torch import nn\n")
    assert "return torch.nn.functional.cross_entropy(p.movedim(-1, 1), t, ignore_index=255)" in fixed
    assert "import torch\n" not in fixed


def test_seed_chain_count_then_where():
    """SL102's count makes `ignore_loss` a tensor, so SL202 fixes the `if` in the next pass."""
    source = H + "def f(target: torch.Tensor, loss):\n    unique = torch.unique(target)\n    ignore_loss = torch.numel(unique) < 2\n    if ignore_loss:\n        loss = 0.0 * loss\n    return loss\n"
    fixed = fix(source)
    assert "loss = torch.where(ignore_loss, 0.0 * loss, loss)" in fixed
    assert "if " not in fixed
