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


@pytest.mark.parametrize("cast", [".to(memory_format=torch.contiguous_format)", ".to(non_blocking=True)"])
def test_a_to_that_names_no_destination_stays_on_the_host(cast):
    assert _sl201(SWIN.format(cast=cast)) == []


def test_a_move_to_another_tensor_by_keyword_is_no_cast():
    assert _sl201(SWIN.format(cast=".to(other=x)")) == [7]


@pytest.mark.parametrize("cast", ["torch.float32", "dtype=torch.half", "non_blocking=False"])
def test_a_cast_asking_not_to_block_is_no_pageable_copy(cast):
    # SL404: `non_blocking=True` on a cast copies nothing to the device.
    source = f"import torch\n\n\ndef f(a):\n    return torch.from_numpy(a).to({cast}, non_blocking=True)\n"
    source = source.replace("non_blocking=False, ", "")
    assert [f.line for f in check_source(source, "t.py", include_cold=True) if f.code == "SL404"] == []
