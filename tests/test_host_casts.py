"""A cast (``x.to(torch.int64)``) keeps a tensor where it is: a host tensor stays one."""

from __future__ import annotations

import pytest

from synclint.engine import check_source

SWIN = """\
import torch


class BasicLayer(torch.nn.Module):
    def forward(self, x, H, W):
        Hp = torch.ceil(torch.tensor(H) / self.window_size){cast} * self.window_size
        return torch.zeros((1, Hp, 1), device=x.device)
"""


def _sl201(source: str) -> list[int]:
    return [f.line for f in check_source(source, "t.py", include_cold=True) if f.code == "SL201"]


@pytest.mark.parametrize(
    "cast", [".to(torch.int64)", ".to(dtype=torch.long)", ".to(x.dtype)", ".to(torch.bfloat16, copy=True)", ".long()"])
def test_a_host_tensor_cast_to_another_dtype_stays_on_the_host(cast):
    # BiRefNet's Swin backbone turns H into a tensor "for torch.compile" and casts it: the
    # size passed to `torch.zeros` is a CPU tensor, read without waiting for the device.
    assert _sl201(SWIN.format(cast=cast)) == []


@pytest.mark.parametrize("move", [".to(x)", ".to(x.device)", ".to(device=x.device, dtype=torch.int64)", ".cuda()",
                                  ".to('cuda', torch.int64)"])
def test_a_move_is_no_cast(move):
    assert _sl201(SWIN.format(cast=move)) == [7]
