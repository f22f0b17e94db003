"""Moving a tensor built visibly empty copies nothing: ATen's ``copy_impl`` returns before
the copy kernel when there are no elements (``if (iter.numel() == 0) return self;``)."""

from __future__ import annotations

import textwrap

import pytest

from synclint.engine import check_source

STEP = """
    import torch


    class Head(torch.nn.Module):
        def forward(self, x, scores, data):
            {body}
            return x
    """


def _sl403(body: str) -> list[int]:
    source = textwrap.dedent(STEP).replace("{body}", textwrap.indent(textwrap.dedent(body), " " * 8).lstrip())
    return [f.line - 6 for f in check_source(source, "m.py", include_cold=True) if f.code == "SL403"]


@pytest.mark.parametrize(
    ("body", "flagged"),
    [
        # retinanet's post-processing: empty accumulators moved before the loop.
        ("final = torch.Tensor([])\nindexes = torch.Tensor([]).long()\nfinal = final.cuda()\nindexes = indexes.cuda()\n", []),
        ("z = torch.zeros(0, 4).cuda()\n", []),
        ("z = torch.empty((0,)).to(x.device)\n", []),
        ("z = torch.tensor([], device=x.device)\n", []),
        ("z = torch.full((0, 2), 1.0).cuda()\n", []),
        # Not empty: a size that is not a literal 0, data, a value bound again.
        ("z = torch.zeros(4, 0 + 1).cuda()\n", [1]),
        ("z = torch.tensor([0], device=x.device)\n", [1]),
        ("z = torch.Tensor([])\nz = torch.cat([z, torch.ones(2)])\nz = z.cuda()\n", [3]),
        ("z = torch.Tensor([])\nz += torch.ones(2)\nz = z.cuda()\n", [3]),
        ("z = torch.Tensor([])\nz = torch.ones(2)\nz = z.cuda()\n", [3]),
        ("z = torch.full((2,), 0).cuda()\n", [1]),
        # Empty on one path only: bound empty in a branch that may not run.
        ("z = torch.tensor(data)\nif not data:\n    z = torch.zeros(0)\nz = z.cuda()\n", [4]),
        ("if data:\n    z = torch.zeros(0)\n    z = z.cuda()\n", []),
        # Empty on the first pass of a loop only: the body binds it again after the move.
        ("z = torch.Tensor([])\nfor t in data:\n    z = z.cuda()\n    z = torch.cat([z.cpu(), torch.tensor(t)])\n", [3]),
        ("for t in data:\n    z = torch.Tensor([])\n    z = z.cuda()\n    z = torch.cat([z.cpu(), torch.tensor(t)])\n", []),
        # Grown in place: resized, or the ``out=`` of a concatenation.
        ("z = torch.empty(0)\nz.resize_(10)\nz = z.cuda()\n", [3]),
        ("z = torch.Tensor([])\ntorch.cat([z, torch.ones(3)], out=z)\nz = z.cuda()\n", [3]),
        ("z = torch.Tensor([])\nz.set_(torch.ones(3))\nz = z.cuda()\n", [3]),
    ],
)
def test_moving_an_empty_tensor_is_no_copy(body, flagged):
    assert _sl403(body) == flagged
