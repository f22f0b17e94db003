"""SL301 flags loops over samples, not over the branches, layers or views of a network."""

from __future__ import annotations

import textwrap

import pytest

from synclint.engine import check_source


def _sl301(body: str) -> list[int]:
    source = "import torch\n\n\nclass Block(torch.nn.Module):\n    def forward(self, xs, targets, pred):\n" + textwrap.indent(
        textwrap.dedent(body), " " * 8)
    return [f.line for f in check_source(source, "m.py", include_cold=True) if f.code == "SL301"]


@pytest.mark.parametrize(
    ("body", "flagged"),
    [
        # Its own module per pass: a branch of the network (score_sde's RefineBlock).
        ("hs = []\nfor i in range(len(xs)):\n    hs.append(self.adapt_convs[i](xs[i]))\n", False),
        ("out = 0\nfor i, t in enumerate(targets):\n    out = out + getattr(self, f'head{i}')(t).sum()\n", False),
        ("out = 0\nfor i, t in enumerate(targets):\n    out = out + self.heads[i + 1](t).sum()\n", False),
        # The same module on every sample: one launch per sample.
        ("out = 0\nfor i in range(len(targets)):\n    out = out + self.head(pred[i]).sum() - targets[i].sum()\n", True),
        ("out = 0\nfor i in range(len(targets)):\n    out = out + self.heads[0](pred[i]).sum() - targets[i].sum()\n", True),
        # `self.i` is an attribute, not the loop variable `i`: the same module every pass.
        ("out = 0\nfor i in range(len(targets)):\n    out = out + self.heads[self.i](pred[i]).sum() - targets[i].sum()\n", True),
        ("out = 0\nfor i in range(len(targets)):\n    out = out + getattr(self, cfg.i)(pred[i]).sum() - targets[i].sum()\n", True),
        # Layers, scales and views are pieces of every sample.
        ("out = 0\nfor layer_index, layer_pred in enumerate(targets):\n    out = out + torch.sigmoid(layer_pred).sum()\n", False),
        ("out = 0\nfor scale, view in zip(xs, targets):\n    out = out + torch.sigmoid(view).sum()\n", False),
        ("out = 0\nfor crop in targets:\n    out = out + torch.sigmoid(crop).sum()\n", False),
        # A sample beside the index of its layer is still a sample.
        ("out = 0\nfor target, layer_id in zip(targets, xs):\n    out = out + torch.sigmoid(target).sum()\n", True),
        ("out = 0\nfor player in targets:\n    out = out + torch.sigmoid(player).sum()\n", True),
    ],
)
def test_branches_are_not_samples(body, flagged):
    assert bool(_sl301(body)) is flagged



SKIP_CONNECTIONS = """
import torch
import torch.nn as nn


class Decoder(nn.Module):
    def forward(self, x, {name}):
        x = x.flatten(2).transpose(1, 2).contiguous()
        for index, i in enumerate({name}):
            i = i.flatten(2).transpose(1, 2).contiguous()
            {name}[index] = i
        return x
"""


@pytest.mark.parametrize(("name", "flagged"), [("skips", False), ("heads", False), ("samples", True)])
def test_a_list_named_for_pieces_is_walked_piece_by_piece(name, flagged):
    # nnFormer's decoder flattens each of the encoder's skip connections, one whole-batch
    # tensor per stage: the list's name says what it holds, the loop's names do not.
    found = [f.line for f in check_source(SKIP_CONNECTIONS.format(name=name), "m.py", include_cold=True) if f.code == "SL301"]
    assert bool(found) is flagged
