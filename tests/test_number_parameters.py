"""Parameters every project call site passes a Python number: ``forward(self, n, device)``
called as ``self.bias(n, device)`` after ``b, n = x.shape[:2]`` does not sync in
``torch.arange(n, device=device)``, whatever ``forward``'s inputs usually are."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from synclint.config import Settings
from synclint.project.numbers import is_number, number_names
from synclint.runner import RunOptions, lint_paths


def _names(source: str) -> frozenset[str]:
    return number_names(ast.parse(textwrap.dedent(source)).body[0])


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(x):\n    b, n, device = *x.shape[:2], x.device\n", {"b", "n"}),
        ("def f(x):\n    b, n = x.shape[:2]\n    m = n * 2 + 1\n", {"b", "n", "m"}),
        ("def f(x):\n    b, c, h, w = x.size()\n    k = h // 2\n", {"b", "c", "h", "w", "k"}),
        ("def f(x, xs):\n    n = len(xs)\n    d = x.dim()\n    s = x.size(-1)\n    z = x.numel()\n", {"n", "d", "s", "z"}),
        ("def f(x):\n    n = x.shape[0]\n    n += x.sum()\n", set()),  # the second binding is a tensor
        ("def f(x):\n    n = x.shape[0]\n    for n in x:\n        pass\n", set()),  # a loop target too
        ("def f(x):\n    *rest, n = x.shape\n", set()),  # starred targets: positions unknown
        ("def f(x, k):\n    b, n = *k, x.shape[1]\n", set()),  # after an expansion of unknown length
        ("def f(x):\n    a = b = x.shape[0]\n", set()),  # chained assignment: not read
        ("def f(x):\n    s = x.size()\n    t = x.shape[1:]\n", set()),  # shapes, not numbers
        ("def f(x, m):\n    n = m\n", set()),  # a parameter is not known here
        ("def f(x):\n    x = x + 1\n", set()),  # nor is a parameter rebound from itself
        ("def f(x):\n    global n\n    n = 3\n", set()),
        ("def f(x):\n    flag = True\n    name = 'a'\n    nothing = None\n", set()),
        ("def f(x):\n    n = x.shape[0]\n    def g():\n        n = x\n", {"n"}),  # g's n is g's own
        # The counters of `range` and `enumerate` (ForwardTacotron's decoder step `t`).
        ("def f(x, steps):\n    for t in range(0, steps, 2):\n        pass\n", {"t"}),
        ("def f(xs):\n    for i, x in enumerate(xs):\n        pass\n", {"i"}),
        ("def f(xs):\n    for i in enumerate(xs):\n        pass\n", set()),  # a pair
        ("def f(xs):\n    for t in range(3):\n        pass\n    t = xs[0]\n", set()),  # bound again
        ("def f(xs):\n    for (i, x), y in enumerate(xs):\n        pass\n", set()),
    ],
)
def test_number_names(source, expected):
    assert _names(source) == frozenset(expected)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [("3", True), ("2.5", True), ("True", False), ("None", False), ("'s'", False), ("-n", True),
     ("n if c else 0", True), ("n if c else x", False), ("x.shape[-1]", True), ("x.shape[1:]", False),
     ("x.size(0)", True), ("x.size(dim=1)", True), ("x.size()", False), ("t.item()", True), ("x.ndim", True),
     ("int(t)", True), ("n @ 2", False), ("n == 2", False)],
)
def test_is_number(expression, expected):
    assert is_number(ast.parse(expression, mode="eval").body, {"n"}) is expected


_BIAS = """\
import torch
from torch import nn


class Bias(nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.proj = nn.Linear(1, heads)

    def forward(self, n, device):
        i = torch.arange(n, device=device)
        return self.proj(i.float()[:, None])
"""


def _findings(tmp_path: Path, **files: str) -> list[tuple[str, int, int, str]]:
    (tmp_path / ".git").mkdir()
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
    found = lint_paths([tmp_path], Settings(root=tmp_path), RunOptions(jobs=1, use_cache=False))
    return [(Path(f.path).name, f.line, f.column, f.code) for f in found]


_ATTENTION = """\
from torch import nn

from bias import Bias


class Attention(nn.Module):
    def __init__(self, dim, rel_pos_bias=False):
        super().__init__()
        self.to_q = nn.Linear(dim, dim)
        self.bias = Bias(4) if rel_pos_bias else None

    def forward(self, x):
        b, n, device = *x.shape[:2], x.device
        q = self.to_q(x)
        if self.bias is not None:
            q = q + self.bias({size}, device).sum()
        return q
"""


def test_a_size_every_call_passes_as_a_number_does_not_sync(tmp_path: Path):
    # The module attribute is built conditionally (``Bias(4) if flag else None``).
    assert _findings(tmp_path, bias=_BIAS, attention=_ATTENTION.format(size="n")) == []


def test_one_call_passing_a_tensor_keeps_the_finding(tmp_path: Path):
    two_calls = _ATTENTION.format(size="n") + "\n    def other(self, x):\n        return self.bias(x.sum(), x.device)\n"
    assert _findings(tmp_path, bias=_BIAS, attention=two_calls) == [("bias.py", 11, 26, "SL201")]


def test_a_size_passed_on_through_a_helper(tmp_path: Path):
    # ``make`` passes its own parameter on: it is a number because its one caller passes one.
    attention = _ATTENTION.format(size="n").replace(
        "            q = q + self.bias(n, device).sum()", "            q = q + self.make(n, device)"
    ) + "\n    def make(self, size, device):\n        return self.bias(size, device).sum()\n"
    assert _findings(tmp_path, bias=_BIAS, attention=attention) == []


_HELPERS = """\
import functools

import torch


def positions(n: torch.Tensor, device):
    return torch.arange(n, device=device)


def run(x):
    n = x.shape[0]
    {later}
    return positions(n, x.device)


def forward(x):
    return run(x)
"""


def test_a_number_parameter_outweighs_its_annotation(tmp_path: Path):
    assert _findings(tmp_path, helpers=_HELPERS.format(later="pass")) == []


def test_a_function_handed_on_as_a_value_keeps_the_finding(tmp_path: Path):
    # ``functools.partial`` may call it with anything: the calls the index sees do not decide.
    later = "later = functools.partial(positions, device=x.device)"
    assert _findings(tmp_path, helpers=_HELPERS.format(later=later)) == [("helpers.py", 7, 25, "SL201")]


_LOOSE_INSTANCES = """\
from torch import nn

from bias import Bias


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = Bias(4)
        {more}

    def forward(self, x):
        b, n, device = *x.shape[:2], x.device
        out = self.bias(n, device).sum()
        {calls}
        return out
"""


@pytest.mark.parametrize(
    ("more", "calls"),
    [
        ("self.more = nn.ModuleList([Bias(4) for _ in range(2)])",
         "for m in self.more:\n            out = out + m(x.sum(), device).sum()"),
        ("self.heads = {'a': Bias(4)}", "out = out + self.heads['a'](x.sum(), device).sum()"),
        ("self.seq = nn.Sequential(Bias(4))", "out = out + self.seq[0](x.sum(), device).sum()"),
    ],
    ids=["module-list", "dict", "sequential"],
)
def test_an_instance_the_index_cannot_follow_keeps_the_finding(tmp_path: Path, more, calls):
    # Only ``self.bias(n, device)`` resolves; the instances in containers take tensors.
    attention = _LOOSE_INSTANCES.format(more=more, calls=calls)
    assert _findings(tmp_path, bias=_BIAS, attention=attention) == [("bias.py", 11, 26, "SL201")]


_BINDINGS = """\
import torch


def positions(x, {params}):
    return torch.arange(n, device=x.device)


def run(x):
    k = x.shape[0]
    return positions(x, {arguments})


def forward(x):
    return run(x)
"""


@pytest.mark.parametrize(
    ("params", "arguments"),
    [
        ("*rest, n: torch.Tensor", "k, n=x.sum()"),  # ``k`` goes to ``*rest``, not to the keyword-only ``n``
        ("n: torch.Tensor, /, **options", "x.sum(), n=k"),  # ``n=k`` goes to ``**options``
    ],
    ids=["keyword-only", "positional-only"],
)
def test_a_number_bound_to_another_parameter_does_not_count(tmp_path: Path, params, arguments):
    helpers = _BINDINGS.format(params=params, arguments=arguments)
    assert _findings(tmp_path, helpers=helpers) == [("helpers.py", 5, 25, "SL201")]


@pytest.mark.parametrize(
    "calls",
    [
        "out = out + checkpoint(self.bias, x.sum(), device).sum()",
        "out = out + functools.partial(self.bias, device=device)(x.sum()).sum()",
        "out = out + [self.bias][0](x.sum(), device).sum()",
        "out = out + getattr(self, 'bias')(x.sum(), device).sum()",
        "out = out + (lambda t: self.bias(t.sum(), device))(x).sum()",
        "def inner(t):\n            return self.bias(t.sum(), device)\n        out = out + checkpoint(inner, x).sum()",
    ],
    ids=["checkpoint", "partial", "container", "getattr", "lambda", "nested-function"],
)
def test_an_attribute_handed_on_keeps_the_finding(tmp_path: Path, calls):
    # Whoever receives ``self.bias`` (or runs the nested scope) calls it with what no
    # resolved call shows.
    attention = "import functools\nfrom torch.utils.checkpoint import checkpoint\n" + _LOOSE_INSTANCES.format(
        more="", calls=calls
    )
    assert _findings(tmp_path, bias=_BIAS, attention=attention) == [("bias.py", 11, 26, "SL201")]


def test_an_attribute_only_tested_is_not_handed_on(tmp_path: Path):
    attention = "def exists(v):\n    return v is not None\n\n\n" + _ATTENTION.format(size="n").replace(
        "if self.bias is not None:", "if exists(self.bias) and not isinstance(self.bias, nn.Identity):"
    )
    assert _findings(tmp_path, bias=_BIAS, attention=attention) == []


def test_a_second_class_assigned_to_the_attribute_is_not_followed(tmp_path: Path):
    # ``self.other`` resolves to the first class assigned (``Plain``): the ``Bias`` assigned
    # later runs from ``self.other(x.sum(), device)`` too, which the index gives to ``Plain``.
    bias = _BIAS + "\n\nclass Plain(nn.Module):\n    def forward(self, t, device):\n        return t\n"
    attention = _LOOSE_INSTANCES.format(
        more="self.other = Plain()\n\n    def use_bias(self):\n        self.other = Bias(8)",
        calls="out = out + self.other(x.sum(), device).sum()",
    ).replace("from bias import Bias", "from bias import Bias, Plain")
    assert _findings(tmp_path, bias=bias, attention=attention) == [("bias.py", 11, 26, "SL201")]


_METHOD = """\
import torch
from torch import nn


class Attention(nn.Module):
    def positions(self, n: torch.Tensor, device):
        return torch.arange(n, device=device)

    def forward(self, x):
        b, n, device = *x.shape[:2], x.device
        out = self.positions(n, device).sum()
        {more}
        return out
"""


@pytest.mark.parametrize(
    ("more", "expected"),
    [("pass", []), ("out = out + getattr(self, 'positions')(x.sum(), device).sum()", [("attention.py", 7, 29, "SL201")])],
    ids=["resolved-calls-only", "getattr"],
)
def test_a_method_read_with_getattr_keeps_the_finding(tmp_path: Path, more, expected):
    assert _findings(tmp_path, attention=_METHOD.format(more=more)) == expected


_SUBCLASS_BUILDS = """\
from torch import nn

from bias import Bias, Plain


class Base(nn.Module):
    {base_init}
    def forward(self, x):
        return self.bias(x.sum(), x.device)


class Child(Base):
    def __init__(self):
        super().__init__()
        self.bias = Bias(4)


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.b = Bias(4)

    def forward(self, x):
        b, n, device = *x.shape[:2], x.device
        return self.b(n, device).sum()
"""


@pytest.mark.parametrize(
    "base_init",
    ["", "def __init__(self):\n        super().__init__()\n        self.bias = Plain()\n\n"],
    ids=["base-builds-nothing", "base-builds-another-class"],
)
def test_an_attribute_a_subclass_builds_for_a_base_class_call_keeps_the_finding(tmp_path: Path, base_init):
    # On a ``Child``, ``Base.forward``'s ``self.bias(x.sum(), ...)`` runs ``Bias``: a call the
    # index resolves to nothing, or to ``Plain``.
    bias = _BIAS + "\n\nclass Plain(nn.Module):\n    def forward(self, t, device):\n        return t\n"
    attention = _SUBCLASS_BUILDS.format(base_init=base_init)
    assert _findings(tmp_path, bias=bias, attention=attention) == [("bias.py", 11, 26, "SL201")]


def test_a_tensor_passed_into_star_args_is_not_the_keyword_only_parameter(tmp_path: Path):
    # ``n`` is keyword-only: the tensor at position 1 goes to ``*rest``, so every call passing
    # a tensor there says nothing about ``n`` (whose default is a number).
    helpers = """\
    import torch


    def scale(x, *rest, n=2):
        if n > 1:
            return x * n
        return x


    def forward(x):
        return scale(x, torch.ones(3))
    """
    assert _findings(tmp_path, helpers=helpers) == []


_PATTERNS = """\
import torch
from einops import rearrange
from torch import nn


class Attention(nn.Module):
    def forward(self, x, einops_from, einops_to, **dims):
        return rearrange(x, f"{einops_from} -> {einops_to}", **dims)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
        self.einops_from = "b (f n) d"
        self.einops_to = "(b n) f d"

    def forward(self, x, n):
        return self.attn(x, ARGUMENTS, n=n)
ELSEWHERE"""


@pytest.mark.parametrize(
    "arguments",
    ['"b (f n) d", "(b n) f d"', 'f"b (f n) d", "(b n) " + "f d"', "self.einops_from, self.einops_to"],
    ids=["literals", "formatted", "constant-attributes"],
)
def test_strings_every_call_passes_are_python_values(tmp_path: Path, arguments):
    # frozen-in-time's einops patterns: `self.einops_from_time = 'b (f n) d'` in `__init__`,
    # handed to the attention's `forward`, then formatted into the pattern of `rearrange`.
    model = _PATTERNS.replace("ARGUMENTS", arguments).replace("ELSEWHERE", "")
    assert _findings(tmp_path, model=model) == (
        [("model.py", 8, 49, "SL201")] if "+" in arguments else []  # a sum of strings: not shown to be one
    )


def test_an_attribute_stored_elsewhere_keeps_the_finding(tmp_path: Path):
    elsewhere = "\n\ndef configure(block, x):\n    block.einops_from = x.sum()\n"
    model = _PATTERNS.replace("ARGUMENTS", "self.einops_from, self.einops_to").replace("ELSEWHERE", elsewhere)
    assert _findings(tmp_path, model=model) == [("model.py", 8, 32, "SL201")]


_ENCODER = """\
import torch
from torch import nn


class Half(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Linear(3, 3)

    def forward(self, x, upto):
        if upto == 1:
            return x
        return self.block(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.half = Half()

    def forward(self, x, upto={default}):
        return self.half(x, upto)
"""


@pytest.mark.parametrize(("default", "found"), [("8", []), ("None", [("encoder.py", 11, 12, "SL202")])])
def test_a_default_no_call_overrides_is_passed_on_as_a_number(tmp_path: Path, default, found):
    # CMC's ``forward(self, x, layer=8)`` hands ``layer`` to each half's ``forward``;
    # no call the index sees passes it one. ``None`` may stand for a tensor's absence.
    # (Named ``upto`` here: a ``forward`` input named ``layer`` is an int by its name.)
    assert _findings(tmp_path, encoder=_ENCODER.format(default=default)) == found


def test_a_call_passing_a_tensor_for_the_forwarded_parameter_keeps_the_finding(tmp_path: Path):
    other = _ENCODER.format(default="8") + "\n    def other(self, x):\n        return self.half(x, x.sum())\n"
    assert _findings(tmp_path, encoder=other) == [("encoder.py", 11, 12, "SL202")]


_DECODER = """\
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Linear(d, d)

    def forward(self, seq, query, t):
        if t == 0:
            print("first step")
        return self.w(query)


class Tacotron(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attention = Attention(d)

    def forward(self, x, m):
        for t in range(m.size(-1)):
            x = self.attention(m, x, {step})
        return x
"""


@pytest.mark.parametrize(("step", "found"), [("t", []), ("m[t]", [("tacotron.py", 11, 12, "SL202")])])
def test_a_loop_counter_passed_to_a_module_is_a_number(tmp_path: Path, step, found):
    # ForwardTacotron's decoder hands its `range` counter `t` to the attention's `forward`.
    assert _findings(tmp_path, tacotron=_DECODER.format(step=step)) == found


_BLOCKS = """\
from torch import nn


class AdaNorm(nn.Module):
    def forward(self, x, t):
        if t > 0.5:
            return x * 2
        return x


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = AdaNorm()

    def forward(self, x, t=0.0):
        return self.norm(x, t)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(4)])

    def forward(self, x, t):
        for block in self.blocks:
            x = block(x, t)
        return x
"""


_REGISTRY = """\
BLOCKS = {}


def register(cls):
    BLOCKS[cls.__name__] = cls
    return cls


"""


@pytest.mark.parametrize(
    ("decorator", "built"),
    [("", "Block()"), ("@register", "BLOCKS[kind]()"), ("", "{'basic': Block}[kind]()")],
    ids=["built in place", "registered by a decorator", "picked from a dict"],
)
def test_a_default_of_a_module_run_by_calls_the_index_does_not_see_is_not_passed_on(tmp_path: Path, decorator, built):
    # Each block of the ``nn.ModuleList`` runs from ``block(x, t)``, a call the index does
    # not resolve, with the network's tensor ``t``: the default says nothing of it; nor
    # where the index sees no block built, as it is built from a registry.
    net = _REGISTRY + _BLOCKS.replace("class Block", f"{decorator}\nclass Block").replace("Block() for", f"{built} for")
    net = net.replace("def __init__(self):\n        super().__init__()\n        self.blocks", "def __init__(self, kind):\n        super().__init__()\n        self.blocks")
    assert _findings(tmp_path, net=net) == [("net.py", 14, 12, "SL202")]


def test_a_number_forwarded_down_a_chain_asked_deepest_first(tmp_path: Path):
    """The helpers are asked in the order their files sort (the deepest first): each is
    asked again when its caller's parameter is found, down the whole chain."""
    from synclint.project.index import ProjectIndex
    from synclint.project.summary import summarize

    sources = {
        "a.py": "import torch\n\ndef d(n, device):\n    return torch.arange(n, device=device)\n",
        "b.py": "from a import d\n\ndef c(n, device):\n    return d(n, device)\n",
        "c.py": "from b import c\n\ndef b(n, device):\n    return c(n, device)\n",
        "z.py": "from c import b\n\ndef run(x):\n    n = x.shape[0]\n    return b(n, x.device)\n",
    }
    summaries = {str(tmp_path / name): summarize(source) for name, source in sources.items()}
    index = ProjectIndex(summaries, tmp_path)
    found = {(Path(key).name, qualname, name) for (key, qualname), name in index.number_parameters()}
    assert {("a.py", "d", "n"), ("b.py", "c", "n"), ("c.py", "b", "n")} <= found
    assert not any(name == "device" for _file, _function, name in found)
