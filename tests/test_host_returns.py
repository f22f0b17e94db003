"""Host residency through helpers: a helper's result lives where its arguments say."""

from __future__ import annotations

import ast
import textwrap

import pytest

from synclint.engine import check_source
from synclint.project.host_returns import HostCondition, host_condition

HELPERS = """
    import math
    import random
    import torch

    def cumsum(x: torch.Tensor, dim: int = 0) -> torch.Tensor:
        size = x.size()[:dim] + (x.size(dim) + 1,) + x.size()[dim + 1:]
        out = x.new_empty(size)
        out.narrow(dim, 0, 1).zero_()
        torch.cumsum(x, dim=dim, out=out.narrow(dim, 1, x.size(dim)))
        return out

    def sample(population: int, k: int, device=None):
        if population <= k:
            return torch.arange(population, device=device)
        return torch.tensor(random.sample(range(population), k), device=device)

    def time_shift(mu: float, sigma: float, t: torch.Tensor) -> torch.Tensor:
        return math.exp(mu) / (math.exp(mu) + (1 / t - 1) ** sigma)

    def to_device(t, device) -> torch.Tensor:
        return t.to(device)

    def scaled(t):
        return t * self_scale()

    def parts(t):
        return t.cpu(), t
    """


def _conditions() -> dict[str, HostCondition | None]:
    tree = ast.parse(textwrap.dedent(HELPERS))
    return {node.name: host_condition(node) for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_the_parameters_a_result_takes_its_residency_from():
    found = _conditions()
    assert found["cumsum"] == HostCondition(("x", "dim"), ("x",), (), ("dim",))
    assert found["sample"] == HostCondition(("population", "k", "device"), (), ("device",), ("device",))
    # ``mu: float``, ``sigma: float``: Python numbers by their annotation
    assert found["time_shift"] == HostCondition(("mu", "sigma", "t"), ("t",), (), ())
    assert found["to_device"] == HostCondition(("t", "device"), ("t",), ("device",), ())
    # a call the walk cannot follow, and a tuple of parts: nothing is claimed
    assert found["scaled"] is None and found["parts"] is None


def test_host_arguments_keep_a_helper_s_result_on_the_host():
    source = textwrap.dedent(HELPERS) + textwrap.dedent("""
    class M(torch.nn.Module):
        def forward(self, x, counts: list):
            ptr = cumsum(torch.tensor(counts))
            a = ptr[-1].item()
            on_device = cumsum(x)
            b = on_device[-1].item()
            c = sample(10, 3, device="cpu").tolist()
            d = sample(10, 3, device=x.device).tolist()
            e = sample(10, 3).tolist()
            f = to_device(ptr, "cpu").tolist()
            g = to_device(ptr, x.device).tolist()
            t = torch.linspace(1, 0, 11)
            if self.shift:
                t = time_shift(0.5, 1.0, t)
            h = t.tolist()
            if self.other:
                t = time_shift(0.5, 1.0, x)
            i = t.tolist()
            return a, b, c, d, e, f, g, h, i
    """)
    lines = source.splitlines()
    start = lines.index("class M(torch.nn.Module):")
    flagged = {
        lines[f.line - 1].strip().split(" =")[0]
        for f in check_source(source, "m.py", include_cold=True)
        if f.line > start
    }
    assert flagged == {"b", "d", "g", "i"}


def test_host_tensors_made_in_a_branch_stay_host_to_the_end_of_the_branch():
    source = textwrap.dedent("""
    import torch
    class M(torch.nn.Module):
        def forward(self, x, idx, method: str):
            if method == "dense":
                rnd = torch.randperm(10, device=x.device)
                a = rnd[rnd > 2]
            else:
                rnd = torch.randperm(10, device="cpu")
                b = rnd[rnd > 2]
            c = rnd[rnd > 2]
            if self.mps:
                x = x.cpu()
            else:
                d = x[x > 0]
            e = x[x > 0]
            return a, b, c, d, e
    """)
    lines = source.splitlines()
    flagged = {lines[f.line - 1].strip().split(" =")[0] for f in check_source(source, "m.py", include_cold=True)}
    # the CPU sampling branch is host to its end; after the `if`, either branch may have run
    assert flagged == {"a", "c", "d", "e", "x"}
