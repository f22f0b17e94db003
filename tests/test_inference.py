"""Intra-function kind inference: what the rules know about each value."""

from __future__ import annotations

import libcst as cst
import pytest

from synclint.analysis.kinds import Kind
from synclint.engine import analyse
from synclint.rules.base import Rule


class _Probe(Rule):
    """Records the kind of the argument of every ``probe(...)`` call."""

    code = "SL999"
    name = "probe"
    kinds: list[Kind] = []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            type(self).kinds.append(self.context.kind_of(node.args[0].value))


def kind(source: str) -> Kind:
    _Probe.kinds = []
    analyse(cst.parse_module(source), source, "probe.py", [_Probe])
    assert len(_Probe.kinds) == 1
    return _Probe.kinds[0]


T = "import torch\nimport numpy as np\nimport pandas as pd\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # results of torch calls and tensor methods
        ("x = torch.randn(3)\nprobe(x)", Kind.TENSOR),
        ("x = torch.randn(3).sum(0)\nprobe(x)", Kind.TENSOR),
        ("import torch.nn.functional as F\nprobe(F.relu(torch.randn(3)))", Kind.TENSOR),
        # comparisons and logical ops of tensors are boolean
        ("x = torch.randn(3)\nprobe(x > 0)", Kind.BOOL_TENSOR),
        ("x = torch.randn(3)\nprobe(~(x > 0))", Kind.BOOL_TENSOR),
        ("x = torch.randn(3)\nprobe((x > 0) & (x < 1))", Kind.BOOL_TENSOR),
        ("x = torch.randn(3)\nprobe((x > 0) | torch.isnan(x))", Kind.BOOL_TENSOR),
        ("probe(torch.isfinite(torch.randn(3)))", Kind.BOOL_TENSOR),
        ("x = torch.randn(3)\nprobe(x.bool())", Kind.BOOL_TENSOR),
        ("probe(torch.zeros(3, dtype=torch.bool))", Kind.BOOL_TENSOR),
        ("x = torch.randn(3)\nprobe(torch.ones_like(x, dtype=torch.bool))", Kind.BOOL_TENSOR),
        ("x = torch.randn(3)\nprobe((x > 0).unsqueeze(-1).expand(-1, 4))", Kind.BOOL_TENSOR),
        ("x = torch.randn(3)\nprobe(x.to(torch.bool))", Kind.BOOL_TENSOR),
        # integer index tensors
        ("x = torch.randn(3)\nprobe(x.argsort())", Kind.INT_TENSOR),
        ("x = torch.randn(3)\nprobe(torch.nonzero(x))", Kind.INT_TENSOR),
        ("x = torch.randn(3)\nprobe(torch.where(x > 0)[0])", Kind.INT_TENSOR),
        ("x = torch.randn(3)\nv, i = x.sort()\nprobe(i)", Kind.INT_TENSOR),
        ("x = torch.randn(3)\nv, i = torch.max(x, dim=0)\nprobe(i)", Kind.INT_TENSOR),
        ("x = torch.randn(3)\nprobe(x.topk(2).indices)", Kind.INT_TENSOR),
        ("x = torch.randn(3)\nprobe(x.long())", Kind.INT_TENSOR),
        ("x = torch.randn(3)\nprobe(torch.nonzero(x, as_tuple=True))", Kind.TENSOR_TUPLE),
        # annotations, forward arguments, names passed to torch functions
        ("def f(x: torch.Tensor):\n    probe(x)", Kind.TENSOR),
        ("from typing import Optional\nfrom torch import Tensor\ndef f(x: Optional[Tensor]):\n    probe(x)", Kind.TENSOR),
        ("def f(xs: 'list[torch.Tensor]'):\n    probe(xs)", Kind.TENSOR_SEQUENCE),
        ("class M(torch.nn.Module):\n    def forward(self, x, y):\n        probe(y)", Kind.TENSOR),
        ("class M(torch.nn.Module):\n    def forward(self, x, y=None):\n        probe(y)", Kind.UNKNOWN),
        ("def f(x):\n    y = torch.exp(x)\n    probe(x)", Kind.TENSOR),
        ("def f(x):\n    y = x.view(-1)\n    probe(x)", Kind.TENSOR),
        ("def f(x):\n    probe(x)", Kind.UNKNOWN),

        # numpy / pandas / python
        ("a = np.zeros(3)\nprobe(a > 0)", Kind.NUMPY),
        ("a = np.zeros(3)\nprobe(a[a > 0])", Kind.NUMPY),
        ("df = pd.DataFrame()\nprobe(df['a'])", Kind.PANDAS),
        ("x = torch.randn(3)\nprobe(x.numpy())", Kind.NUMPY),
        ("def f(a):\n    t = torch.from_numpy(a)\n    probe(a)", Kind.NUMPY),
        ("x = torch.randn(3)\nprobe(x.item())", Kind.PYTHON),
        ("x = torch.randn(3)\nprobe(x.shape[0])", Kind.PYTHON),
        ("x = torch.randn(3)\nprobe(x.size(0) > 1)", Kind.PYTHON),
        ("x = torch.randn(3)\nprobe(torch.numel(x) < 2)", Kind.PYTHON),
        ("x = torch.randn(3)\nprobe(len(x))", Kind.PYTHON),
        ("probe(3 * 2.0)", Kind.PYTHON),
        ("def f(eps: float = 1e-6):\n    probe(eps)", Kind.PYTHON),
        ("x = torch.randn(3)\nprobe(x is None)", Kind.PYTHON),
        # forward inputs compared with a size or used as slice bounds are sizes, not tensors
        ("class A(torch.nn.Module):\n    def forward(self, i, j):\n        if self.b.shape[-1] >= j:\n            pass\n        probe(j)", Kind.PYTHON),
        ("class A(torch.nn.Module):\n    def forward(self, x, i):\n        y = x[..., -i:]\n        probe(i)", Kind.PYTHON),
        ("class A(torch.nn.Module):\n    def forward(self, x, i):\n        y = x[..., -i:]\n        probe(x)", Kind.TENSOR),
        # a method of the class itself is no tensor method, whatever its name
        ("class DP(torch.nn.Module):\n    def forward(self, *xs):\n        a, b = self.scatter(xs)\n        probe(a)", Kind.UNKNOWN),
        ("def f(x):\n    a = x.scatter(0, i, v)\n    probe(a)", Kind.TENSOR),
        # Python values from tensor methods: private predicates, sparse layout facts, storages
        ("x = torch.randn(3)\nprobe(x._is_view())", Kind.PYTHON),
        ("xs = [t.to('cuda') for t in ts]\nprobe(xs[0].has('gt_masks'))", Kind.PYTHON),
        ("x = torch.randn(3)\nprobe(x.dense_dim() > 0)", Kind.PYTHON),
        ("x = torch.randn(3)\nprobe(x.shape[: x.sparse_dim()])", Kind.PYTHON),
        ("x = torch.randn(3)\nprobe(x._nnz())", Kind.PYTHON),
        ("x = torch.randn(3)\nprobe(x._typed_storage())", Kind.PYTHON),
        # self attributes, modules, sequences
        ("class L(torch.nn.Module):\n    def __init__(self):\n        self.ce = torch.nn.CrossEntropyLoss()\n"
         "    def forward(self, p, t):\n        probe(self.ce(p, t))", Kind.TENSOR),
        ("class L(torch.nn.Module):\n    def __init__(self):\n        self.register_buffer('w', torch.ones(3))\n"
         "    def forward(self, p):\n        probe(self.w)", Kind.TENSOR),
        ("class L(torch.nn.Module):\n    def __init__(self):\n        self.a = torch.ones(3)\n        self.b = self.a * 2\n"
         "    def forward(self, p):\n        probe(self.b)", Kind.TENSOR),
        ("x = torch.randn(3)\nprobe(x.split(1))", Kind.TENSOR_SEQUENCE),
        ("x = torch.randn(3)\nprobe([x, x])", Kind.TENSOR_SEQUENCE),
        ("xs = torch.randn(3).unbind()\nfor t in xs:\n    probe(t)", Kind.TENSOR),
        ("for i in range(3):\n    probe(i)", Kind.PYTHON),
        ("x = torch.randn(3)\nprobe([t * 2 for t in x.unbind()])", Kind.TENSOR_SEQUENCE),
        # flow: a later assignment overrides
        ("x = torch.randn(3)\nx = x.tolist()\nprobe(x)", Kind.PYTHON),
        ("x = np.zeros(3)\nx = torch.from_numpy(x)\nprobe(x)", Kind.TENSOR),
        # a number plus a tensor is a tensor (``loss = 0; loss += criterion(...)``)
        ("loss = 0\nloss += torch.randn(3).sum()\nprobe(loss)", Kind.TENSOR),
        ("n = 0\nn += 1\nprobe(n)", Kind.PYTHON),
        # import aliases
        ("import torch as T\nprobe(T.isnan(T.zeros(2)))", Kind.BOOL_TENSOR),
        ("from torch import isnan as isn\nprobe(isn(y))", Kind.BOOL_TENSOR),
    ],
)
def test_kind(body: str, expected: Kind):
    assert kind(T + body + "\n") is expected


@pytest.mark.parametrize(
    ("prelude", "expected"),
    [("import torch\n", Kind.BOOL_TENSOR), ("import torch\nimport pandas as pd\n", Kind.UNKNOWN)],
)
def test_comparison_methods_are_tensor_evidence_unless_pandas_is_imported(prelude, expected):
    # ``labels.ne(v)``: numpy arrays have no ``.ne``; pandas Series do.
    assert kind(prelude + "def drop_void(labels, v):\n    keep = labels.ne(v)\n    probe(keep)\n") is expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("def iou(a, b) -> torch.Tensor:\n    ...\ndef f(p, t):\n    probe(iou(p, t) > 0.5)", Kind.BOOL_TENSOR),
        ("def g(p, t):\n    probe(later(p))\ndef later(p) -> Tensor:\n    ...", Kind.TENSOR),
        ("def area(b):\n    return (b[:, 2] - b[:, 0]).clamp(min=0).float()\ndef f(b):\n    probe(area(b))", Kind.TENSOR),
        ("def count(xs):\n    return len(xs)\ndef f(xs):\n    probe(count(xs))", Kind.PYTHON),
        ("class L(torch.nn.Module):\n    def forward(self, p):\n        probe(self.mask(p))\n"
         "    def mask(self, p) -> Tensor:\n        return p > 0", Kind.TENSOR),
    ],
)
def test_kinds_flow_through_functions_of_the_same_module(body: str, expected: Kind):
    assert kind("import torch\nfrom torch import Tensor\n" + body + "\n") is expected


def test_a_function_collects_its_evidence_only_when_a_name_needs_it(monkeypatch):
    from synclint.analysis import evidence

    collected = []
    collect = evidence.collect_evidence

    def spy(root, imports):
        collected.append(getattr(getattr(root, "name", None), "value", "<module>"))
        return collect(root, imports)

    monkeypatch.setattr(evidence, "collect_evidence", spy)
    source = (
        "import torch\n"
        "def bound():\n    x = torch.zeros(3)\n    return x\n"
        "def unbound(x):\n    y = x.view(-1)\n    probe(x)\n"
    )
    # ``x`` of ``unbound`` is a parameter of unknown kind: ``x.view(...)``, its evidence, decides.
    assert kind(source) is Kind.TENSOR
    assert collected == ["unbound"]


@pytest.mark.parametrize(
    "annotation",
    [
        "Tensor", "torch.Tensor", "torch .Tensor", "torch. Tensor", "Optional[Tensor]", "Optional[ Tensor ]",
        "Tuple[Tensor, Tensor]", "Tuple[Tensor ,Tensor,]", "Dict[str, List[torch.Tensor]]", "Tuple[int, ...]",
        "List['Tensor']", "(Tensor)", "Optional[(Tensor)]", "Tuple[\n    Tensor,\n    Tensor,\n]", "Tensor | None",
        "Tuple[*Ts]", "Callable[[Tensor], Tensor]", "Tensor[0:2]",
    ],
)
def test_annotations_read_without_code_generation_read_the_same(annotation):
    from synclint.analysis.flow import _RENDERER, _annotation_text, _plain_code

    node = cst.parse_module(f"def f(x: {annotation}): ...\n").body[0].params.params[0].annotation.annotation
    generated = _RENDERER.code_for_node(node)
    assert _plain_code(node) in (None, generated)
    assert _annotation_text(node) == generated
    plain = {"Tensor", "torch.Tensor", "torch .Tensor", "Optional[ Tensor ]", "Tuple[Tensor ,Tensor,]"}
    if annotation in plain:
        assert _plain_code(node) == generated  # read from the nodes
