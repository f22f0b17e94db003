"""A loader batch viewed or converted on the host, then copied: one finding, the right advice.

A view of a pinned batch (``x.unsqueeze(1)``) is the loader's pinned memory; a conversion
(``x.float()`` of float64 images) is a new pageable tensor unless nothing changes, and its
copy blocks even with ``non_blocking=True``.
"""

from __future__ import annotations

import libcst as cst
import pytest

from synclint.analysis.batch_derivation import STRIDED, VIEW, derivation
from synclint.engine import check_source

LOOP = """\
import torch
from torch.utils.data import DataLoader


def train(model, dataset):
    loader = DataLoader(dataset, batch_size=32, pin_memory=True)
    for images, labels in loader:
        images = {derive}
        images = images.cuda({flag})
        model(images, labels).backward()
"""


def _found(derive: str, flag: str = "") -> list[tuple[int, int, str, str]]:
    source = LOOP.format(derive=derive, flag=flag)
    return [(f.line, f.column, f.code, f.message) for f in check_source(source, "train.py")]


@pytest.mark.parametrize("derive", ["images.float()", "images.permute(0, 3, 1, 2).float()",
                                    "images.permute(0, 3, 1, 2).contiguous()", "images.unsqueeze(1).half()"])
def test_a_blocking_copy_of_a_converted_batch_is_one_sl401_that_says_to_convert_on_the_device(derive):
    found = _found(derive)
    assert [(line, column, code) for line, column, code, _ in found] == [(9, 18, "SL401")]
    method = derive.rsplit(".", 1)[1].split("(")[0]
    assert f"a loader batch converted on the host (`.{method}()`)" in found[0][3]
    assert "convert it on the device" in found[0][3]


def test_the_fix_of_that_copy_asks_not_to_block_and_the_conversion_s_finding_remains():
    source = LOOP.format(derive="images.float()", flag="")
    [finding] = check_source(source, "train.py")
    assert finding.fix is not None
    fixed = source.replace("images.cuda()", "images.cuda(non_blocking=True)")
    assert [(f.line, f.code) for f in check_source(fixed, "train.py")] == [(9, "SL403")]


@pytest.mark.parametrize("derive", ["images.float()", "images.view(-1, 3).double()"])
def test_a_non_blocking_copy_of_a_converted_batch_is_sl403_with_the_conversion_s_advice(derive):
    found = _found(derive, "non_blocking=True")
    assert [(line, column, code) for line, column, code, _ in found] == [(9, 18, "SL403")]
    assert "converted on the host" in found[0][3] and "built without a device" not in found[0][3]


@pytest.mark.parametrize("derive", ["images.unsqueeze(1)", "images.view(-1, 3)", "images.permute(0, 3, 1, 2)",
                                    "images[:, 0]"])
def test_a_non_blocking_copy_of_a_view_of_a_pinned_batch_is_not_reported(derive):
    assert _found(derive, "non_blocking=True") == []


@pytest.mark.parametrize("derive", ["images.unsqueeze(1)", "images.view(-1, 3)"])
def test_a_blocking_copy_of_a_view_is_sl401_alone_with_the_plain_advice(derive):
    found = _found(derive)
    assert [(line, code) for line, _, code, _ in found] == [(9, "SL401")]
    assert "pass `non_blocking=True`" in found[0][3]


def test_a_tensor_built_on_the_host_keeps_sl403_s_own_message():
    found = _found("torch.zeros(4)", "non_blocking=True")
    assert [(line, code) for line, _, code, _ in found] == [(9, "SL403")]
    assert "built without a device" in found[0][3]


def _derivation(source: str, batches=frozenset({"x", "batch"}), converted=None) -> str | None:
    def origin(base):
        if isinstance(base, cst.Name):
            if converted and base.value in converted:
                return converted[base.value]
            return VIEW if base.value in batches else None
        return VIEW if isinstance(base, cst.Subscript) and getattr(base.value, "value", None) in batches else None
    return derivation(cst.parse_expression(source), origin)


@pytest.mark.parametrize("source, expected", [
    ("x.unsqueeze(1)", VIEW),
    ("x.permute(0, 2, 1)[:, 0]", STRIDED),
    ("x[0, 1:3].unsqueeze(0)", VIEW),
    ("x[:, 0]", STRIDED),
    ("x[::2]", STRIDED),
    ("x.narrow(0, 0, 2)", VIEW),
    ("x.select(dim=1, index=0)", STRIDED),
    ("x.permute(0, 2, 1).reshape(-1)", "reshape"),
    ("x.permute(0, 2, 1).unsqueeze(0).flatten()", "flatten"),
    ("x.unsqueeze(0).flatten()", VIEW),
    ("x.permute(0, 2, 1).float().reshape(-1)", "float"),
    ("s.reshape(-1)", "reshape"),  # a name bound to a strided view
    ("x.contiguous()", VIEW),  # a loader's (stacked) batch is contiguous: the tensor itself
    ("x.unsqueeze(1).contiguous()", VIEW),
    ("x.permute(0, 2, 1).contiguous()", "contiguous"),
    ("s.contiguous()", "contiguous"),
    ("x[..., None].squeeze(-1)", VIEW),
    ("x.float()", "float"),
    ("x.unsqueeze(1).float().view(-1)", "float"),
    ("x.half().float()", "half"),
    ("x.to(torch.float16)", "to"),
    ("x.to(dtype=torch.float16)", "to"),
    ("batch['img'].float()", "float"),
    ("y.unsqueeze(0)", "float"),  # a view of a conversion is the conversion's tensor
    # Not the loader's data any more, or not a batch at all:
    ("x", None),
    ("x.to(device)", None),
    ("x.cuda()", None),
    ("x.to(other)", None),
    ("x.sum()", None),
    ("x.float()[idx]", None),
    ("x.float(dim)", None),
    ("z.float()", None),
    ("f(x).float()", None),
])
def test_derivation(source, expected):
    assert _derivation(source, converted={"y": "float", "s": STRIDED}) == expected


# ``reshape``/``flatten`` of a batch made non-contiguous by a view (``permute``, ``transpose``,
# ``x[:, 0]``) cannot be a view: they copy into a new tensor in pageable memory, a conversion.
@pytest.mark.parametrize("derive", ["images.permute(0, 3, 1, 2).reshape(-1, 3)", "images[1:, 1:].reshape(-1)",
                                    "images[:, 0].flatten(1)", "images.narrow(1, 0, 2).reshape(-1)"])
def test_a_reshape_of_a_strided_view_is_a_conversion(derive):
    found = _found(derive, "non_blocking=True")
    assert [(line, column, code) for line, column, code, _ in found] == [(9, 18, "SL403")]
    assert "converted on the host" in found[0][3]
    found = _found(derive)
    assert [(line, code) for line, _, code, _ in found] == [(9, "SL401")]
    assert "convert it on the device" in found[0][3]


def test_a_reshape_of_a_name_bound_to_a_strided_view_is_a_conversion():
    found = _found("images.permute(0, 3, 1, 2)\n        images = images.reshape(-1, 3)", "non_blocking=True")
    assert [(line, code) for line, _, code, _ in found] == [(10, "SL403")]


@pytest.mark.parametrize("derive", ["images.unsqueeze(1).reshape(-1, 3)", "images[0].flatten()", "images[1:].flatten(1)",
                                    "images[..., None].reshape(-1)"])
def test_a_reshape_of_a_contiguous_view_is_a_view(derive):
    assert _found(derive, "non_blocking=True") == []


@pytest.mark.parametrize("rebind", ["out, images = accelerator.gather_for_metrics((model(images), images))",
                                    "images, labels = to_device(images, labels, device=device)"])
def test_a_view_of_a_batch_name_rebound_off_the_host_by_unpacking_is_no_batch(rebind):
    # (23866a2 read `images` as the loader's batch still: the flow keeps a name unpacked from
    # a call among the loader's batches, though no longer on the host.)
    assert _found(f"images\n        {rebind}\n        images = images[:, -4:]") == []
    assert _found(f"images\n        {rebind}\n        images = images.unsqueeze(1)") == []


def test_a_batch_converted_in_a_tuple_assignment_is_one_finding_each_with_the_conversion_s_advice():
    found = _found("images\n        images, labels = images.float(), labels.unsqueeze(1)\n"
                   "        labels = labels.cuda(non_blocking=True)")
    assert [(line, code) for line, _, code, _ in found] == [(11, "SL401")]
    assert "converted on the host (`.float()`)" in found[0][3]
    found = _found("images\n        images, labels = images.float(), labels.long()", "non_blocking=True")
    assert [(line, code) for line, _, code, _ in found] == [(10, "SL403")]
    assert "converted on the host (`.float()`)" in found[0][3]


def test_a_comprehension_s_own_name_leaves_the_loop_s_converted_batch_converted():
    found = _found("images.float()\n        sizes = [images for images in range(3)]", "non_blocking=True")
    assert [(line, code) for line, _, code, _ in found] == [(10, "SL403")]
    assert "converted on the host (`.float()`)" in found[0][3]


@pytest.mark.parametrize("derive", ["images.contiguous()", "images.unsqueeze(1).contiguous()"])
def test_contiguous_of_a_contiguous_batch_is_the_batch_itself(derive):
    # (``contiguous()`` returns the tensor itself when it is contiguous, as a loader's stacked
    # batch is: still pinned, its non_blocking copy does not wait, and a blocking copy's
    # advice is the plain one.)
    assert _found(derive, "non_blocking=True") == []
    found = _found(derive)
    assert [(line, code) for line, _, code, _ in found] == [(9, "SL401")]
    assert "pass `non_blocking=True`" in found[0][3] and "convert" not in found[0][3]


BRANCHES = """\
import torch
from torch.utils.data import DataLoader


def train(model, dataset, half):
    loader = DataLoader(dataset, batch_size=32, pin_memory=True)
    for images, labels in loader:
{body}
        model(z.cuda(non_blocking=True), labels)
"""


@pytest.mark.parametrize("body", [
    "        if half:\n            z = images.float()\n        else:\n            z = images.unsqueeze(1)",
    "        z = images.float()\n        if half:\n            z = images.unsqueeze(1)",
    "        if half:\n            z = images.unsqueeze(1)\n        else:\n            z = images.float()",
])
def test_a_conversion_on_one_path_of_a_branch_is_not_undone_by_a_view_on_another(body):
    found = [(f.line, f.code, f.message) for f in check_source(BRANCHES.format(body=body), "train.py")]
    assert [(line, code) for line, code, _ in found] == [(body.count("\n") + 9, "SL403")]
    assert "converted on the host (`.float()`)" in found[0][2]


def test_a_view_on_one_path_does_not_hide_a_tensor_built_on_the_host_on_another():
    body = "        if half:\n            z = torch.zeros(4)\n        else:\n            z = images.unsqueeze(1)"
    found = [(f.line, f.code, f.message) for f in check_source(BRANCHES.format(body=body), "train.py")]
    assert [(line, code) for line, code, _ in found] == [(12, "SL403")]


def test_a_batch_viewed_on_one_path_is_the_batch_or_its_view_on_both():
    body = "        if half:\n            images = images.unsqueeze(1)\n        z = images"
    assert check_source(BRANCHES.format(body=body), "train.py") == []
    body = "        z = images\n        if half:\n            z = z.permute(0, 2, 3, 1)"
    assert check_source(BRANCHES.format(body=body), "train.py") == []
