"""The ``else`` of a CUDA check runs only off a CUDA device: cold, whatever it copies."""

from __future__ import annotations

import pytest

from synclint.engine import check_source

GET_BATCH = """\
import numpy as np
import torch


def get_batch(data, device, device_type):
    x = torch.from_numpy(np.asarray(data))
    if {test}:
        x = x.pin_memory().to(device, non_blocking=True)
    else:
        x = x.to(device)
    return x


def train(model, data, device, device_type):
    for step in range(100):
        model(get_batch(data, device, device_type)).backward()
"""


def _sl403(source: str) -> list[tuple[int, str, str]]:
    return [(f.line, f.context, f.why) for f in check_source(source, "t.py", include_cold=True) if f.code == "SL403"]


@pytest.mark.parametrize(
    "test",
    ["device_type == 'cuda'", "'cuda' == device.type", "x.is_cuda", "'cuda' in str(device)",
     "torch.cuda.is_available()", "device_type == 'cuda' or x.is_cuda"],
)
def test_the_else_of_a_cuda_check_is_another_backend(test):
    # nanoGPT's get_batch: pinned non-blocking copies on CUDA, a plain `.to(device)` on the
    # CPU or MPS, where no CUDA stream waits.
    assert _sl403(GET_BATCH.format(test=test)) == [(10, "cold", "another backend only (not a CUDA device)")]


@pytest.mark.parametrize("test", ["device_type == 'cuda' and x.numel() > 8", "device_type != 'cuda'", "use_pin"])
def test_an_else_that_may_run_on_cuda_keeps_its_context(test):
    # (`!=` puts the CUDA path in the else block; `and` leaves CUDA steps to it.)
    assert [(line, context) for line, context, _ in _sl403(GET_BATCH.format(test=test))] == [(10, "hot")]
