"""The seed models' whole journey: `synclint fix --apply --unsafe-fixes` gives the
same losses with zero would-be syncs, for the seed and a variant nobody wrote for the fixers."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the fixed code runs under torch

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from tests.seed_helpers import ROOT, fixed_copy, load  # noqa: E402
from tests.sync_counter import SyncCounter  # noqa: E402

SEGMENTATION = ROOT / "examples" / "seed_segmentation.py"
VARIANT = ROOT / "tests" / "fixtures" / "fix" / "renamed_segmentation.py"


def _targets(generator: torch.Generator, ignore: int, background: int):
    shape = (2, 8, 8)
    labels = torch.randint(0, 10, shape, generator=generator)
    yield "random", labels.masked_fill(torch.rand(shape, generator=generator) < 0.1, ignore)
    yield "all background", torch.full(shape, background)
    yield "all ignored", torch.full(shape, ignore)
    yield "one class", torch.full(shape, 3)
    yield "two classes", torch.randint(2, 4, shape, generator=generator)


def _compare(original_loss, fixed_loss, ignore: int, background: int) -> None:
    generator = torch.Generator().manual_seed(0)
    for label, target in _targets(generator, ignore, background):
        for _ in range(2):
            pred = torch.randn(2, 10, 8, 8, generator=generator, requires_grad=True)
            with SyncCounter() as before:
                expected = original_loss(pred, target.clone())
            with SyncCounter() as after:
                actual = fixed_loss(pred, target.clone())
            torch.testing.assert_close(actual, torch.as_tensor(expected), equal_nan=True, msg=label)
            if not torch.isnan(expected):
                (grad_expected,) = torch.autograd.grad(expected, pred)
                (grad_actual,) = torch.autograd.grad(actual, pred)
                torch.testing.assert_close(grad_actual, grad_expected, msg=label)
            assert before.count > 0, label
            assert after.count == 0, (label, after.ops)


def test_seed_segmentation_fixed_by_the_cli(tmp_path):
    original = load(SEGMENTATION, "seed_segmentation_original")
    fixed = load(fixed_copy(SEGMENTATION, tmp_path, "--unsafe-fixes"), "seed_segmentation_fixed")
    _compare(original.MaskedLoss(), fixed.MaskedLoss(), ignore=-1, background=9)


def test_renamed_variant_fixed_by_the_cli(tmp_path):
    original = load(VARIANT, "renamed_original")
    fixed = load(fixed_copy(VARIANT, tmp_path, "--unsafe-fixes"), "renamed_fixed")
    _compare(original.PixelCriterion(), fixed.PixelCriterion(), ignore=255, background=9)


@pytest.mark.parametrize("source", [SEGMENTATION, VARIANT], ids=["seed", "variant"])
def test_fixing_again_changes_nothing(tmp_path, source):
    from synclint.fixers.apply import fix_file

    fixed = fixed_copy(source, tmp_path, "--unsafe-fixes")
    assert not fix_file(fixed, unsafe=True).changed


def test_safe_fixes_alone_leave_the_unsafe_ones(tmp_path):
    fixed = fixed_copy(SEGMENTATION, tmp_path).read_text()
    assert "torch.unique" in fixed and "target[mask]" in fixed
    # `target[inds] = self.ignore_val`: the value is not known to be a number (a tensor of
    # the selected length would make `masked_fill_` raise), so that fix is unsafe too.
    assert "masked_fill_" not in fixed and "torch.nonzero" in fixed


DETECTION = ROOT / "examples" / "seed_detection.py"


class _OpCounter(TorchDispatchMode):
    """Every ATen op dispatched: a stand-in for kernel launches."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def _box_batches(generator: torch.Generator):
    def boxes(n: int) -> torch.Tensor:
        top_left = torch.randint(0, 40, (n, 2), generator=generator)
        size = torch.randint(1, 20, (n, 2), generator=generator)
        return torch.cat((top_left, top_left + size), dim=1).to(torch.uint8)

    yield "mixed", [boxes(int(n)) for n in torch.randint(0, 6, (6,), generator=generator)]
    yield "some empty", [boxes(0), boxes(3), boxes(0), boxes(1)]
    yield "all empty", [boxes(0), boxes(0)]
    yield "one image", [boxes(5)]
    yield "one box", [boxes(1), boxes(0)]


def test_seed_detection_loop_becomes_one_padded_batch(tmp_path):
    original = load(DETECTION, "seed_detection_original")
    fixed = load(fixed_copy(DETECTION, tmp_path, "--unsafe-fixes"), "seed_detection_fixed")
    generator = torch.Generator().manual_seed(1)
    for label, targets in _box_batches(generator):
        pred = (torch.rand(len(targets), 8, 4, generator=generator) * 64).requires_grad_()
        with _OpCounter() as before:
            expected = original.loss_fn(pred, targets)
        with _OpCounter() as after:
            actual = fixed.loss_fn(pred, targets)
        torch.testing.assert_close(actual, torch.as_tensor(expected, dtype=actual.dtype), msg=label)
        if isinstance(expected, torch.Tensor):
            (grad_expected,) = torch.autograd.grad(expected, pred)
            (grad_actual,) = torch.autograd.grad(actual, pred)
            torch.testing.assert_close(grad_actual, grad_expected, msg=label)
        if label == "mixed":
            assert after.count < before.count / 2, (before.count, after.count)


def test_detection_fix_names_the_fused_op(tmp_path):
    from synclint.engine import check_file

    findings = [f for f in check_file(DETECTION) if f.code == "SL301"]
    assert findings and findings[0].fix.applicability == "unsafe"
    assert "synclint.ops.giou_loss" in findings[0].fix.message
