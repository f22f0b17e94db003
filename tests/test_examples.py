"""The seed models in examples/: every hazard the articles name, at its line; nothing in the fixed forms."""

from __future__ import annotations

from pathlib import Path

from synclint.engine import check_file

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _found(name: str) -> list[tuple[str, int, int]]:
    return [(f.code, f.line, f.column) for f in check_file(EXAMPLES / name)]


def test_seed_segmentation_hazards():
    assert _found("seed_segmentation.py") == [
        ("SL103", 48, 25),  # masked_target = target[mask]
        ("SL103", 49, 23),  # permuted_pred[mask.unsqueeze(-1).expand(...)]
        ("SL101", 55, 16),  # torch.nonzero(target == C - 1, as_tuple=True)
        ("SL102", 61, 18),  # torch.unique(target)
    ]


def test_seed_detection_hazards():
    assert _found("seed_detection.py") == [
        ("SL301", 55, 5),  # for i in range(batch_size): per-image GIoU
        ("SL302", 95, 16),  # data_to_device: one copy per tensor
        ("SL501", 109, 13),  # torch.cuda.synchronize(device) every step
    ]


def test_per_sample_loop_message_names_the_fused_op():
    (loop,) = [f for f in check_file(EXAMPLES / "seed_detection.py") if f.code == "SL301"]
    assert "synclint.ops.giou_loss" in loop.message
    assert "in loss `loss_fn`" in loop.message


def test_fixed_forms_are_clean():
    for path in sorted((EXAMPLES / "fixed").glob("*.py")):
        assert check_file(path) == [], path.name
