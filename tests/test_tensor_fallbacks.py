"""Blocks that run only when a parameter is not a tensor (:mod:`synclint.project.tensor_fallbacks`):
cold unless a call from the step may pass something else, and found only where the
tested name still holds what the caller passed."""

from __future__ import annotations

import ast
import textwrap

import pytest

from synclint.engine import check_source
from synclint.project.tensor_fallbacks import TensorFallback, tensor_fallbacks

FALLBACK = ("not on the step's path (it runs only when `{}` is not a tensor, and no call from the step "
            "passes anything else: a conversion fallback)")

#: diffusers' UNet and guided-diffusion's ``normal_kl``; ``{call}``: what a model's ``forward`` returns.
DIFFUSION = """
    import torch
    from torch import nn


    class UNet(nn.Module):
        def forward(self, sample, timestep):
            timesteps = timestep
            if not torch.is_tensor(timesteps):
                timesteps = torch.tensor([timesteps], dtype=torch.long, device=sample.device)
            return sample * timesteps


    def normal_kl(mean1, logvar1, mean2, logvar2):
        logvar1, logvar2 = [
            x if isinstance(x, torch.Tensor) else torch.tensor(x).to(mean1)
            for x in (logvar1, logvar2)
        ]
        return logvar1 - logvar2


    class Diffusion(nn.Module):
        def __init__(self):
            super().__init__()
            self.unet = UNet()

        def forward(self, x):
            t = torch.randint(0, 1000, (x.shape[0],), device=x.device)
            return {call}
"""
UPLOAD_LINE, KL_LINE = 10, 16


def _found(source: str) -> dict[tuple[int, str], tuple[str, str]]:
    findings = check_source(textwrap.dedent(source), "example.py", include_cold=True)
    return {(f.line, f.code): (f.context, f.why) for f in findings}


def test_the_step_passing_tensors_never_runs_the_conversion():
    found = _found(DIFFUSION.format(call="self.unet(x, t).mean() + normal_kl(x, x, x, x).mean()"))
    assert found[(UPLOAD_LINE, "SL403")] == ("cold", FALLBACK.format("timesteps"))
    assert found[(KL_LINE, "SL403")] == ("cold", FALLBACK.format("x"))
    shown = check_source(textwrap.dedent(DIFFUSION.format(call="self.unet(x, t).mean() + normal_kl(x, x, x, x).mean()")),
                         "example.py")
    assert [f for f in shown if f.code == "SL403"] == []


@pytest.mark.parametrize(
    ("call", "line"),
    [
        ("self.unet(x, 500).mean()", UPLOAD_LINE),  # a Python number every step: the upload is the step's
        ("self.unet(x, timestep=None).mean()", UPLOAD_LINE),  # a constant by keyword
        ("self.unet(x, x.shape[0]).mean()", UPLOAD_LINE),  # a Python number read from a shape
        ("normal_kl(x, x, x, 0.0).mean()", KL_LINE),  # one of the comprehension's parameters
        ("normal_kl(x, 1.0, x, x).mean()", KL_LINE),
    ],
    ids=["constant", "keyword", "shape", "second of the tuple", "first of the tuple"],
)
def test_a_step_that_passes_a_python_value_runs_it(call: str, line: int):
    found = _found(DIFFUSION.format(call=call))
    assert found[(line, "SL403")][0] == "hot"


def test_a_default_the_step_leaves_in_place_runs_it():
    # sam2's ``sample_box_points(masks, noise=0.1, noise_bound=20)``: every call omits it.
    found = _found("""
        import torch

        def sample_box_points(masks, noise=0.1, noise_bound=20):
            if not isinstance(noise_bound, torch.Tensor):
                noise_bound = torch.tensor(noise_bound, device=masks.device)
            return masks * noise_bound

        def train(model, loader):
            for masks in loader:
                model(sample_box_points(masks.cuda())).backward()
    """)
    assert found[(6, "SL403")][0] == "hot"


def test_a_forwarded_parameter_takes_what_its_callers_pass():
    source = """
        import torch

        def to_tensor(value, like):
            if torch.is_tensor(value):
                return value
            else:
                return torch.tensor(value, device=like.device)

        def scaled(x, scale):
            return x * to_tensor(scale, x)

        def train(loader):
            for x in loader:
                x = x.cuda()
                scaled(x, {scale}).sum().backward()
    """
    assert _found(source.format(scale="x.std()"))[(8, "SL403")] == ("cold", FALLBACK.format("value"))
    assert _found(source.format(scale="0.5"))[(8, "SL403")][0] == "hot"


def test_only_calls_from_code_that_runs_decide():
    # ``__init__`` passes a number once; the step passes tensors.
    found = _found("""
        import torch
        from torch import nn

        def as_tensor(value, like):
            if not torch.is_tensor(value):
                value = torch.tensor(value).to(like)
            return value

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.offset = as_tensor(1.0, torch.zeros(1))

            def forward(self, x):
                return as_tensor(x.mean(), x) + x
    """)
    assert found[(7, "SL403")] == ("cold", FALLBACK.format("value"))


def _fallbacks(source: str) -> tuple[TensorFallback, ...]:
    function = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(function, ast.FunctionDef)
    return tensor_fallbacks(function, tuple(arg.arg for arg in function.args.args))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("""
         def f(t, d=None):
             if not torch.is_tensor(t):
                 t = torch.tensor(t)
         """, [TensorFallback(4, 4, ("t",), "t")]),
        ("""
         def f(t=0):
             if isinstance(t, (torch.Tensor, np.ndarray)):
                 pass
             else:
                 t = torch.tensor(t)
         """, [TensorFallback(6, 6, ("t",), "t")]),
        ("""
         def f(a, b):
             return [x if isinstance(x, Tensor) else torch.tensor(x) for x in (a, b)]
         """, [TensorFallback(3, 3, ("a", "b"), "x")]),
        ("""
         def f(t):
             t = t if torch.is_tensor(t) else torch.tensor(t)
         """, [TensorFallback(3, 3, ("t",), "t")]),
    ],
    ids=["if not", "else of a tuple test", "comprehension", "conditional expression"],
)
def test_fallbacks_found(source: str, expected: list[TensorFallback]):
    assert list(_fallbacks(source)) == expected


@pytest.mark.parametrize(
    "source",
    [
        # stored before the test: no longer what the caller passed
        """
        def f(t):
            t = t * 2
            if not torch.is_tensor(t):
                t = torch.tensor(t)
        """,
        # in a loop: a later pass tests what the block stored
        """
        def f(t):
            for _ in range(3):
                if not torch.is_tensor(t):
                    t = torch.tensor(t)
        """,
        # an alias bound twice before the test
        """
        def f(timestep):
            timesteps = timestep
            timesteps = timesteps + 1
            if not torch.is_tensor(timesteps):
                timesteps = torch.tensor([timesteps])
        """,
        # a nested function rebinds the parameter
        """
        def f(t):
            def g():
                nonlocal t
                t = 0
            if not torch.is_tensor(t):
                t = torch.tensor(t)
        """,
        # the arm shares its line with a call that runs for tensors too
        """
        def f(t):
            y = t.item() if torch.is_tensor(t) else torch.tensor(t)
        """,
        # a comprehension over something other than a literal tuple of parameters
        """
        def f(values):
            return [x if isinstance(x, Tensor) else torch.tensor(x) for x in values]
        """,
        # a test of something else
        """
        def f(t):
            if not isinstance(t, Module):
                t = torch.tensor(t)
        """,
    ],
    ids=["stored before", "in a loop", "alias rebound", "closure rebinds", "shared line", "iterable", "not Tensor"],
)
def test_no_fallback_where_the_name_may_not_hold_the_argument(source: str):
    assert _fallbacks(source) == ()


def test_a_library_function_no_running_code_calls_keeps_its_fallback():
    # Nothing in the project calls it: its callers, all outside, may pass Python values.
    source = """
        import torch

        def as_device_tensor(value, like):
            if not torch.is_tensor(value):
                value = torch.tensor(value, device=like.device)
            return value
    """
    assert _found(source)[(6, "SL403")] == ("unknown", "")


@pytest.mark.parametrize(
    "source",
    [
        # names bound by other statements than an assignment: no longer what the caller passed
        """
        def f(t):
            try:
                pass
            except Exception as t:
                pass
            if not torch.is_tensor(t):
                t = torch.tensor(t)
        """,
        """
        def f(t, cfg):
            match cfg:
                case {"t": t}:
                    pass
            if not torch.is_tensor(t):
                t = torch.tensor(t)
        """,
        """
        def f(t):
            import numpy as t
            if not torch.is_tensor(t):
                t = torch.tensor(t)
        """,
        """
        def f(t):
            def t():
                return 0
            if not torch.is_tensor(t):
                t = torch.tensor(t)
        """,
        # a nested function rebinds the alias
        """
        def f(timestep):
            timesteps = timestep
            def g():
                nonlocal timesteps
                timesteps = 5
            g()
            if not torch.is_tensor(timesteps):
                timesteps = torch.tensor([timesteps])
        """,
    ],
    ids=["except as", "match capture", "import as", "def", "closure rebinds the alias"],
)
def test_no_fallback_where_another_statement_rebinds_the_name(source: str):
    assert _fallbacks(source) == ()


@pytest.mark.parametrize(
    "source",
    [
        # another statement on the arm's line: contexts are per line
        """
        def f(t, x):
            t = t if torch.is_tensor(t) else torch.tensor(t); y = x.item()
        """,
        """
        def f(t, x):
            t = (t if torch.is_tensor(t)
                 else torch.tensor(t)); y = x.item()
        """,
        # the header of a one-line compound statement
        """
        def f(t, x):
            if x.item() > 0: t = t if torch.is_tensor(t) else torch.tensor(t)
        """,
        # a lambda on the arm's line
        """
        def f(t, x):
            t = t if torch.is_tensor(t) else torch.tensor(t); g = lambda: x.item()
        """,
        # a call that starts on the arm's line (its finding's line) and ends after it
        """
        def f(t, x):
            idx = torch.nonzero(torch.tensor(t) if not torch.is_tensor(t) else t,
                                as_tuple=False)
        """,
        """
        def f(t, x):
            y = (x.sum() + (t if torch.is_tensor(t)
                            else torch.tensor(t))).item()
        """,
    ],
    ids=["semicolon", "semicolon, multi-line", "one-line if", "lambda", "enclosing call", "enclosing chain"],
)
def test_no_fallback_where_the_arm_shares_its_line_with_another_statement(source: str):
    assert _fallbacks(source) == ()


@pytest.mark.parametrize(
    ("call", "line"),
    [
        ("self.unet(x, [500]).mean()", UPLOAD_LINE),  # a list is no tensor
        ("self.unet(x, timestep=(500,)).mean()", UPLOAD_LINE),  # nor a tuple
        ("normal_kl(x, x, x, [0.0, 1.0]).mean()", KL_LINE),
        ("normal_kl(x, {'a': 1}, x, x).mean()", KL_LINE),  # nor a dict
        ("normal_kl(x, [v for v in (1.0, 2.0)], x, x).mean()", KL_LINE),  # nor a comprehension's list
    ],
    ids=["list", "tuple by keyword", "list of numbers", "dict", "list comprehension"],
)
def test_a_step_that_passes_a_literal_container_runs_it(call: str, line: int):
    found = _found(DIFFUSION.format(call=call))
    assert found[(line, "SL403")][0] == "hot"


def test_a_forwarded_parameter_left_to_a_default_that_is_no_constant_runs_it():
    # ``scale=SCALE``: the default is a Python value too, constant or not.
    source = """
        import torch

        SCALE = 0.5

        def to_tensor(value, like):
            if torch.is_tensor(value):
                return value
            else:
                return torch.tensor(value, device=like.device)

        def scaled(x, scale={default}):
            return x * to_tensor(scale, x)

        def train(loader):
            for x in loader:
                x = x.cuda()
                scaled(x).sum().backward()
                scaled(x, x.std()).sum().backward()
    """
    assert _found(source.format(default="SCALE"))[(10, "SL403")][0] == "hot"
    assert _found(source.format(default="1 / 3"))[(10, "SL403")][0] == "hot"
    assert _found(source.format(default="0.5"))[(10, "SL403")][0] == "hot"


@pytest.mark.parametrize("call", ["sample_box_points(masks.cuda(), **options)", "sample_box_points(*args)"],
                         ids=["**kwargs", "*args"])
def test_a_default_that_unpacked_arguments_may_leave_in_place_runs_it(call: str):
    # ``**options`` may not hold ``noise_bound``: the call then runs with the default, no tensor.
    found = _found(f"""
        import torch

        def sample_box_points(masks, noise=0.1, noise_bound=20):
            if not isinstance(noise_bound, torch.Tensor):
                noise_bound = torch.tensor(noise_bound, device=masks.device)
            return masks * noise_bound

        def train(model, loader, options, args):
            for masks in loader:
                model(sample_box_points(masks.cuda(), noise_bound=masks.std())).backward()
                model({call}).backward()
    """)
    assert found[(6, "SL403")][0] == "hot"


@pytest.mark.parametrize(
    "argument",
    ["x.tolist()", "x.cpu().numpy()", "np.array([0.5])", "random.random()", "math.sqrt(2)", "list(range(3))"],
)
def test_a_call_that_returns_no_tensor_runs_it(argument: str):
    # What these calls return is visibly no tensor: the conversion runs every step.
    found = _found(f"""
        import math
        import random

        import numpy as np
        import torch

        def to_tensor(value, like):
            if not torch.is_tensor(value):
                value = torch.tensor(value, device=like.device)
            return value

        def train(loader):
            for x in loader:
                x = x.cuda()
                (to_tensor(x.std(), x) * to_tensor({argument}, x)).sum().backward()
    """)
    assert found[(10, "SL403")][0] == "hot"


@pytest.mark.parametrize(
    "binding",
    ["value = np.random.randint(0, 1000)", "value = None", "value = [0.5, 0.5]",
     "for value in (0.5, 1.0):\n    pass", "value = x.tolist() if x.dim() else [x.item()]"],
    ids=["numpy", "None", "list", "loop over a literal", "either arm"],
)
def test_a_local_that_holds_no_tensor_runs_it(binding: str):
    # Every binding of the local passed is visibly no tensor.
    body = textwrap.indent(binding, " " * 16)
    found = _found(f"""
        import numpy as np
        import torch

        def to_tensor(value, like):
            if not torch.is_tensor(value):
                value = torch.tensor(value, device=like.device)
            return value

        def train(loader):
            for x in loader:
                x = x.cuda()
{body}
                (to_tensor(x.std(), x) * to_tensor(value, x)).sum().backward()
    """)
    assert found[(7, "SL403")][0] == "hot"


def test_a_local_that_may_hold_a_tensor_does_not():
    found = _found("""
        import torch

        def to_tensor(value, like):
            if not torch.is_tensor(value):
                value = torch.tensor(value, device=like.device)
            return value

        def train(loader):
            for x in loader:
                x = x.cuda()
                value = None
                value = x.std()
                (to_tensor(x.std(), x) * to_tensor(value, x)).sum().backward()
    """)
    assert found[(6, "SL403")] == ("cold", FALLBACK.format("value"))


@pytest.mark.parametrize(
    "unseen",
    ["functools.partial(to_tensor, 0.5)(like=x)", "list(map(to_tensor, [0.5, 1.0], [x, x]))",
     "(lambda v: to_tensor(v, x))(0.5)"],
    ids=["partial", "map", "lambda"],
)
def test_a_function_passed_as_a_value_keeps_its_fallback(unseen: str):
    # Whoever calls it as a value passes what no call the index reads shows (here, numbers).
    found = _found(f"""
        import functools

        import torch

        def to_tensor(value, like):
            if not torch.is_tensor(value):
                value = torch.tensor(value, device=like.device)
            return value

        def train(loader):
            for x in loader:
                x = x.cuda()
                to_tensor(x.std(), x).backward()
                {unseen}
    """)
    assert found[(8, "SL403")][0] != "cold"


def test_an_attribute_that_only_holds_a_constant_runs_it():
    # ``self.t_max = 999`` in ``__init__``, nothing else stores it: a Python number every step.
    source = DIFFUSION.replace("            self.unet = UNet()\n", "            self.unet = UNet()\n            self.t_max = 999\n")
    found = _found(source.format(call="self.unet(x, t).mean() + self.unet(x, self.t_max).mean()"))
    assert found[(UPLOAD_LINE, "SL403")][0] == "hot"
    found = _found(source.format(call="self.unet(x, t).mean() + self.unet(x, self.unet).mean()"))
    assert found[(UPLOAD_LINE, "SL403")][0] == "cold"


def test_the_summary_knows_which_tested_parameters_have_a_default():
    # What a call that leaves a tested parameter out passes (see may_pass_a_non_tensor).
    from synclint.project.summary import summarize

    function = summarize(textwrap.dedent("""
        def f(a, t=0, *rest, k=SCALE, m):
            if not torch.is_tensor(t):
                t = torch.tensor(t)
    """)).functions["f"]
    assert function.defaulted == frozenset({"t", "k"})
    assert function.defaults == {"t": 0}
    assert function.tensor_fallbacks == (TensorFallback(4, 4, ("t",), "t"),)
