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
    ["device_type == 'cuda'", "'cuda' == device.type", "'cuda' in str(device)", "'cuda' in device", "args.device.type == 'cuda'",
     "torch.cuda.is_available()", "device_type == 'cuda' or 'cuda' in str(device)",
     "torch.cuda.is_available() and device_type == 'cuda'"],
)
def test_the_else_of_a_cuda_check_is_another_backend(test):
    # nanoGPT's get_batch: pinned non-blocking copies on CUDA, a plain `.to(device)` on the
    # CPU or MPS, where no CUDA stream waits.
    assert _sl403(GET_BATCH.format(test=test)) == [(10, "cold", "another backend only (not a CUDA device)")]


@pytest.mark.parametrize("test", ["device_type == 'cuda' and x.numel() > 8", "device_type != 'cuda'", "use_pin"])
def test_an_else_that_may_run_on_cuda_keeps_its_context(test):
    # (`!=` puts the CUDA path in the else block; `and` leaves CUDA steps to it.)
    assert [(line, context) for line, context, _ in _sl403(GET_BATCH.format(test=test))] == [(10, "hot")]


@pytest.mark.parametrize(
    "test",
    ["x.is_cuda", "x.device.type == 'cuda'", "'cuda' in str(x.device)", "x.is_cuda or device_type == 'cuda'"],
)
def test_a_tensor_check_whose_else_copies_the_tensor_can_run_on_cuda(test):
    # x comes from numpy: it is never on CUDA, so the else block copies it on a CUDA
    # machine too (a blocking host-to-device copy, the stream synchronised every step).
    assert [(line, context) for line, context, _ in _sl403(GET_BATCH.format(test=test))] == [(10, "hot")]


@pytest.mark.parametrize(
    "test",
    ["device == 'cuda'", "'cuda' == device", "device.type is 'cuda'", "'cuda' in device_ids",
     "'cuda' in devices", "device_count == 'cuda'"],
)
def test_a_check_that_is_false_on_cuda_keeps_its_context(test):
    # torch.device("cuda") == "cuda" and "cuda:0" == "cuda" are false; `is` compares a string
    # built at run time; device_ids and devices are collections.
    assert [(line, context) for line, context, _ in _sl403(GET_BATCH.format(test=test))] == [(10, "hot")]


TENSOR_ELSE = """\
import torch


def train(model, loader, device):
    for batch in loader:
        logits = model(batch.to(device))
        if logits.is_cuda:
            loss = fused_loss(logits)
        else:
            loss = logits.float().mean()
            print(logits.sum().item())
        loss.backward()
"""


def test_a_tensor_check_whose_else_does_not_copy_it_stays_quiet():
    found = [(f.line, f.context) for f in check_source(TENSOR_ELSE, "t.py", include_cold=True) if f.line == 11]
    assert all(context == "cold" for _, context in found)


def test_an_else_that_copies_rows_of_the_checked_tensor_stays_hot():
    # DenseCL's ODC: a memory bank kept on the host is indexed on the host and its rows
    # copied to the GPU every step (`idx.cpu()` waits): the else runs on CUDA machines.
    source = (
        "import torch\n\n\nclass ODC(torch.nn.Module):\n    def forward(self, img, idx):\n"
        "        outs = self.head(img)\n        if self.label_bank.is_cuda:\n"
        "            target = self.label_bank[idx]\n        else:\n"
        "            target = self.label_bank[idx.cpu()].cuda()\n        return outs, target\n"
    )
    found = [(f.line, f.code, f.context) for f in check_source(source, "t.py", include_cold=True)]
    assert (10, "SL201", "hot") in found


CUDA_FIRST = """\
import torch


def decode(scores, anchors):
    if {test}:
{body}
    keep = (scores > 0.05).nonzero()
    return scores[keep], anchors.to(scores.device)


def train(model, loader, anchors):
    for batch in loader:
        decode(model(batch.cuda()), anchors)
"""


def _decode_findings(test: str, body: str = "        return decode_cuda(scores, anchors)") -> list[tuple]:
    """The findings in ``decode`` (the loop's blocking upload at line 13 aside)."""
    source = CUDA_FIRST.format(test=test, body=body)
    return [(f.line, f.code, f.context, f.why) for f in check_source(source, "t.py", include_cold=True) if f.line < 13]


@pytest.mark.parametrize("test", ["torch.cuda.is_available()", "torch.cuda.is_available() and scores.is_cuda"])
def test_what_follows_a_return_on_cuda_runs_off_cuda(test):
    # retinanet-examples' `decode` and `nms`: `if torch.cuda.is_available(): return
    # decode_cuda(...)`, then a Python fallback that runs only where there is no CUDA device.
    assert _decode_findings(test) == [(7, "SL101", "cold", "another backend only (not a CUDA device)")]


def test_a_return_on_a_tensor_s_own_check_leaves_that_tensor_on_the_host():
    # (The analysis narrows `scores` to the host below `if scores.is_cuda: return ...`.)
    assert _decode_findings("scores.is_cuda") == []


def test_a_check_whose_block_may_fall_through_leaves_what_follows_hot():
    found = _decode_findings("torch.cuda.is_available()", "        scores = scores.float()")
    assert [(line, code, context) for line, code, context, _ in found] == [(7, "SL101", "hot")]


def test_a_return_on_a_tensor_check_before_a_copy_of_that_tensor_leaves_what_follows_hot():
    # `anchors` is checked and then copied: on a CUDA machine, host anchors reach the copy.
    found = _decode_findings("anchors.is_cuda")
    assert [(line, code, context) for line, code, context, _ in found] == [(7, "SL101", "hot"), (8, "SL403", "hot")]


ALREADY_ON_THE_GPU = """\
import torch


def to_gpu(batch):
    if {test}:
        return batch
    batch = {move}
    n = int(batch[1].sum().item())
    return batch[0][:n]


def main(model, loader):
    for batch in loader:
        model(to_gpu(batch))
"""


@pytest.mark.parametrize("test, move", [
    ("batch[0].is_cuda", "[t.cuda(non_blocking=True) for t in batch]"),
    ("batch['x'].is_cuda", "{k: v.cuda(non_blocking=True) for k, v in batch.items()}"),
    ("batch[0].device.type == 'cuda'", "[t.to('cuda', non_blocking=True) for t in batch]"),
])
def test_a_return_on_an_element_s_check_before_a_copy_of_its_container_leaves_what_follows_hot(test, move):
    # "Already on the GPU? Then return; else move it": on a CUDA machine the loader's host
    # batch reaches the copy every step, and the `.item()` after it reads a device value.
    source = ALREADY_ON_THE_GPU.format(test=test, move=move)
    found = [(f.line, f.code, f.context) for f in check_source(source, "t.py", include_cold=True)]
    assert (8, "SL201", "hot") in found


@pytest.mark.parametrize("move", ["batch.cuda()", "batch.to('cuda', non_blocking=True)", "batch.float().cuda()"])
def test_a_name_rebound_after_a_return_on_its_own_check_is_no_longer_on_the_host(move):
    # `if batch.is_cuda: return batch` narrows `batch` to the host below it, but only until
    # it is bound again: after the move it holds a device tensor, and its `.item()` waits.
    source = ALREADY_ON_THE_GPU.format(test="batch.is_cuda", move=move).replace("batch[1]", "batch").replace(
        "batch[0][:n]", "batch[:n]")
    found = [(f.line, f.code, f.context) for f in check_source(source, "t.py", include_cold=True)]
    assert (8, "SL201", "hot") in found


def test_a_name_rebound_to_a_host_value_after_the_return_stays_on_the_host():
    # A cast of the narrowed name is made where the name lives: still the host.
    source = ALREADY_ON_THE_GPU.format(test="batch.is_cuda", move="batch.float()").replace(
        "batch[1]", "batch").replace("batch[0][:n]", "batch[:n]")
    assert [f for f in check_source(source, "t.py", include_cold=True) if f.line == 8] == []


@pytest.mark.parametrize("rebind", [
    "    ys = [x for x in range(3)]\n",  # a comprehension's own `x`: the function's `x` is not rebound
    "    x: torch.Tensor = x.float()\n",  # an annotated cast of the host value: on the host
    "    if (x := x.float()) is not None:\n        pass\n",  # a walrus cast: on the host
])
def test_a_name_not_rebound_off_the_host_after_the_return_stays_narrowed(rebind):
    source = ("import torch\n\ndef f(x: torch.Tensor):\n    if x.is_cuda:\n        return x\n"
              f"{rebind}    return x.sum().item()\n")
    assert [(f.line, f.code) for f in check_source(source, "t.py", include_cold=True)] == []
