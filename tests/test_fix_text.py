"""Each fixer, text in -> exact text out; and the look-alikes it must leave alone."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the fixed code runs under torch

from synclint.config import Settings  # noqa: E402
from synclint.fixers.apply import fix_text  # noqa: E402
from tests.seed_helpers import load_source  # noqa: E402

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
    ("SL101", H + "def f(m: torch.Tensor, x: torch.Tensor):\n    idx = torch.nonzero(m)\n    n = idx.shape[0]\n    return x * n\n",
     H + "def f(m: torch.Tensor, x: torch.Tensor):\n    n = torch.count_nonzero(m)\n    return x * n\n"),
    ("SL101", H + "def f(m: torch.Tensor, x: torch.Tensor):\n    return x + torch.where(m)[0].numel()\n",
     H + "def f(m: torch.Tensor, x: torch.Tensor):\n    return x + torch.count_nonzero(m)\n"),
    # SL102
    ("SL102", H + "def f(t: torch.Tensor):\n    return t.sum() * len(torch.unique_consecutive(t))\n",
     H + "def f(t: torch.Tensor):\n    flat_t = t.flatten()\n    return t.sum() * (torch.count_nonzero(flat_t[1:] != flat_t[:-1]) + min(flat_t.numel(), 1))\n"),
    # SL202
    ("SL202", H + "def f(x: torch.Tensor):\n    y = x.mean()\n    if x.sum() > 0:\n        y = y * 0.5\n    else:\n        y = -y\n    return y\n",
     H + "def f(x: torch.Tensor):\n    y = x.mean()\n    y = torch.where(x.sum() > 0, y * 0.5, -y)\n    return y\n"),
    # SL103 reductions and updates
    ("SL103", H + "def f(x: torch.Tensor):\n    return 1 / x[~torch.isnan(x)].mean()\n",
     H + "def f(x: torch.Tensor):\n    return 1 / (torch.where(~torch.isnan(x), x, 0).sum(dtype=torch.promote_types(x.dtype, torch.float32)) / (~torch.isnan(x)).sum()).to(x.dtype)\n"),
    ("SL103", H + "def f(x: torch.Tensor):\n    return x[x < 0].min()\n",
     H + "def f(x: torch.Tensor):\n    return torch.where(x < 0, x, (float(\"inf\") if x.is_floating_point() else torch.iinfo(x.dtype).max)).amin()\n"),
    ("SL103", H + "def f(a: torch.Tensor, y: torch.Tensor):\n    x = a * 2\n    m = x > 1\n    x[m] = y[m]\n    return x\n",
     H + "def f(a: torch.Tensor, y: torch.Tensor):\n    x = a * 2\n    m = x > 1\n    x = torch.where(m, y.to(x.dtype), x)\n    return x\n"),
    # SL103 masked cross-entropy: module with weights keeps the module
    ("SL103", H + "class L(torch.nn.Module):\n    def __init__(self, w):\n        super().__init__()\n        self.ce = torch.nn.CrossEntropyLoss(weight=w)\n"
     "    def forward(self, p, t):\n        t = t.long()\n        m = t >= 0\n        return self.ce(p[m], t[m])\n",
     H + "class L(torch.nn.Module):\n    def __init__(self, w):\n        super().__init__()\n        self.ce = torch.nn.CrossEntropyLoss(weight=w)\n"
     "    def forward(self, p, t):\n        t = t.long()\n        m = t >= 0\n        return self.ce(p.movedim(-1, 1), torch.where(m, t, self.ce.ignore_index))\n"),
    # functional, mask not of the `t != K` form: where + explicit default ignore index
    ("SL103", F + "def f(p: torch.Tensor, t: torch.Tensor):\n    t = t.long()\n    m = t < 5\n    return F.cross_entropy(p[m], t[m], reduction='sum')\n",
     F + "def f(p: torch.Tensor, t: torch.Tensor):\n    t = t.long()\n    m = t < 5\n    return F.cross_entropy(p.movedim(-1, 1), torch.where(m, t, -100), reduction='sum', ignore_index=-100)\n"),
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
    # Mask2Former: a row mask raises, or writes the wrong elements when the tensor is square.
    assert fix(other, "SL101", unsafe=True) == other
    reduced = H + "def f(x: torch.Tensor):\n    x[torch.where(x.any(-1))] = 0\n"
    assert fix(reduced, "SL101", unsafe=True) == reduced


def test_random_factories_move_only_as_unsafe():
    source = H + "def forward(self, x):\n    return torch.randn(3).cuda()\n"
    assert fix(source, "SL403", unsafe=False) == source
    assert fix(source, "SL403") == H + "def forward(self, x):\n    return torch.randn(3, device='cuda')\n"


def test_torch_import_added_only_when_missing():
    source = "import torch as T\ndef f(x: T.Tensor, y: T.Tensor):\n    x[x > 0] = y[x > 0]\n"
    assert fix(source, "SL103") == "import torch as T\ndef f(x: T.Tensor, y: T.Tensor):\n    x.copy_(T.where(x > 0, y, x))\n"
    functional = "from torch import nn\nclass L(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.ce = nn.CrossEntropyLoss()\n    def forward(self, p, t):\n        t = t.long()\n        m = t != 255\n        return self.ce(p[m], t[m])\n"
    fixed = fix(functional, "SL103")
    assert fixed.startswith("import torch.nn.functional\nfrom torch import nn\n")
    assert "return torch.nn.functional.cross_entropy(p.movedim(-1, 1), torch.where(m, t, -100), ignore_index=-100)" in fixed
    assert "import torch\n" not in fixed  # `import torch.nn.functional` binds `torch` too


def test_seed_chain_count_then_where():
    """SL102's count makes `ignore_loss` a tensor, so SL202 fixes the `if` in the next pass."""
    source = H + "def f(target: torch.Tensor, pred: torch.Tensor):\n    loss = pred.mean()\n    unique = torch.unique(target)\n    ignore_loss = torch.numel(unique) < 2\n    if ignore_loss:\n        loss = 0.0 * loss\n    return loss\n"
    fixed = fix(source)
    assert "loss = torch.where(ignore_loss, 0.0 * loss, loss)" in fixed
    assert "if " not in fixed


# -- regressions: fixes that broke the code they rewrote -----------------------------------


def _run(source: str, name: str, *args):
    """Load ``source`` as a module and call its function ``name``."""
    return getattr(load_source(source, f"fix_text_{name}"), name)(*args)


def test_scalar_factory_uses_the_torch_name_not_the_callee():
    """`from torch import tensor`: the prefix is torch's own name (`tensor.zeros` does not exist)."""
    source = "from torch import tensor\ndef forward(self, x):\n    z = tensor(0.0, device=x.device)\n    w = tensor(2, device=x.device)\n    return z, w\n"
    fixed = fix(source, "SL403", unsafe=False)
    assert fixed == (
        "import torch\nfrom torch import tensor\ndef forward(self, x):\n"
        "    z = torch.zeros((), device=x.device)\n    w = torch.full((), 2, device=x.device)\n    return z, w\n"
    )
    x = torch.ones(2)
    for before, after in zip(_run(source, "forward", None, x), _run(fixed, "forward", None, x)):
        assert before.dtype == after.dtype and before.shape == after.shape and before.device == after.device
        assert torch.equal(before, after)
    aliased = "import torch as T\nfrom torch import tensor\ndef forward(self, x):\n    return tensor(0.0, device=x.device)\n"
    assert fix(aliased, "SL403", unsafe=False) == "import torch as T\nfrom torch import tensor\ndef forward(self, x):\n    return T.zeros((), device=x.device)\n"


def test_unique_count_not_hoisted_out_of_deferred_or_scoped_code():
    source = (
        H + "def forward(ts: list[torch.Tensor], y: torch.Tensor):\n"
        "    counts = [len(torch.unique(t)) for t in ts]\n"
        "    f = lambda t: len(torch.unique(t))\n"
        "    ok = y is not None and len(torch.unique(y)) > 1\n"
        "    k = len(torch.unique(y)) if y is not None else 0\n"
        "    a = y + 1; n = len(torch.unique(a))\n"
        "    return counts, f, ok, k, n\n"
    )
    assert fix(source, "SL102") == source
    assert _run(fix(source, "SL102"), "forward", [torch.ones(3)], torch.ones(3))[0] == [1]


def test_unique_count_names_are_unique_across_one_pass():
    """Two proposals computed on the same tree must not both pick `sorted_values`."""
    source = H + "def f(x: torch.Tensor):\n    u = torch.unique(x * 0)\n    v = torch.unique(x + 1)\n    a = len(u)\n    b = len(v)\n    return x[:1] * a, x[:1] * b\n"
    fixed = fix(source, "SL102")
    assert fixed == (
        H + "def f(x: torch.Tensor):\n"
        "    sorted_values = torch.sort((x * 0).flatten()).values\n"
        "    sorted_values_1 = torch.sort((x + 1).flatten()).values\n"
        "    a = torch.count_nonzero(sorted_values[1:] != sorted_values[:-1]) + min(sorted_values.numel(), 1)\n"
        "    b = torch.count_nonzero(sorted_values_1[1:] != sorted_values_1[:-1]) + min(sorted_values_1.numel(), 1)\n"
        "    return x[:1] * a, x[:1] * b\n"
    )
    x = torch.tensor([2, 0, 1, 3])
    assert [int(v) for v in _run(fixed, "f", x)] == [int(v) for v in _run(source, "f", x)] == [2, 8]


def test_ignore_index_keeps_masked_values_that_are_used_again():
    source = (
        F + "def compute_loss(pred: torch.Tensor, target: torch.Tensor):\n"
        "    mask = target != 255\n"
        "    masked_target = target[mask]\n"
        "    loss = F.cross_entropy(pred[mask], masked_target)\n"
        "    acc = (pred[mask].argmax(1) == masked_target).float().mean()\n"
        "    return loss, acc\n"
    )
    assert fix(source, "SL103") == source
    # used nowhere else: the chain goes (the documented rewrite still applies)
    alone = F + "def compute_loss(pred: torch.Tensor, target: torch.Tensor):\n    target = target.long()\n    mask = target != 255\n    masked_target = target[mask]\n    return F.cross_entropy(pred[mask], masked_target)\n"
    assert fix(alone, "SL103") == F + "def compute_loss(pred: torch.Tensor, target: torch.Tensor):\n    target = target.long()\n    mask = target != 255\n    return F.cross_entropy(pred.movedim(-1, 1), torch.where(mask, target, -100), ignore_index=-100)\n"


def test_where_select_keeps_only_names_bound_in_the_ifs_own_scope():
    module_level = H + "loss = None\n\ndef compute_loss(x: torch.Tensor, c: torch.Tensor):\n    if c:\n        loss = x * 3\n    return x\n"
    assert fix(module_level, "SL202") == module_level
    assert torch.equal(_run(fix(module_level, "SL202"), "compute_loss", torch.ones(2), torch.tensor(False)), torch.ones(2))
    # bound only on one branch of an earlier `if`, deleted, or declared global: no fix
    branch = H + "def f(x: torch.Tensor, c: torch.Tensor, d):\n    if d:\n        loss = x\n    if c:\n        loss = x * 3\n    return loss\n"
    deleted = H + "def f(x: torch.Tensor, c: torch.Tensor):\n    loss = x\n    del loss\n    if c:\n        loss = x * 3\n    return x\n"
    declared = H + "loss = None\ndef f(x: torch.Tensor, c: torch.Tensor):\n    global loss\n    if c:\n        loss = x * 3\n    return x\n"
    for source in (branch, deleted, declared):
        assert fix(source, "SL202") == source
    # bound earlier in the same function (an enclosing block counts): fixed
    bound = H + "def f(x: torch.Tensor, n):\n    loss = x.mean()\n    for _ in range(n):\n        if x.sum() > 1.0:\n            loss = loss * 3.0\n    return loss\n"
    fixed = fix(bound, "SL202")
    assert fixed == H + "def f(x: torch.Tensor, n):\n    loss = x.mean()\n    for _ in range(n):\n        loss = torch.where(x.sum() > 1.0, loss * 3.0, loss)\n    return loss\n"
    for x in (torch.ones(2), torch.zeros(2)):
        assert torch.equal(_run(fixed, "f", x, 2), _run(bound, "f", x, 2))


def test_keyword_fixes_skip_calls_with_star_arguments():
    """`x.to(d, **kw)` may already pass non_blocking: adding it again is a TypeError."""
    source = (
        H + "from torch.utils.data import DataLoader\n\n"
        "def main(ds, kw, args, device):\n"
        "    loader = DataLoader(*kw)\n"
        "    model = torch.nn.Linear(2, 2).cuda()\n"
        "    for x, y in loader:\n"
        "        x = x.to(device, **kw)\n"
        "        y = y.to(*args)\n"
        "        out = model(x)\n"
    )
    assert fix(source, unsafe=False) == source
    factory = H + "def forward(self, x, kw):\n    return torch.zeros(3, **kw).cuda()\n"
    assert fix(factory, "SL403", unsafe=False) == factory
