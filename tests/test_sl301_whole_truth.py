"""SL301's whole-truth exemption (``_against_whole_truth``) must not hide a loop over samples.

A loop that pairs each item with the whole batch's ground truth walks whole-batch
predictions (RAFT's refinement steps); these loops walk samples, each paired with its own
truth picked through a name bound from the pass, or with something only named like truth.
"""

from __future__ import annotations

import pytest

from synclint.engine import check_source
from synclint.project import is_hidden


def _sl301(source: str) -> list[int]:
    return [f.line for f in check_source(source, "loss.py", include_cold=True)
            if f.code == "SL301" and not is_hidden(f.context, f.why)]


PER_SAMPLE = [
    # Each image's rows picked by a mask bound from the pass (YOLO-style validation).
    "import torch\ndef val(preds, targets):\n    out = []\n    for si, pred in enumerate(preds):\n"
    "        b = targets[:, 0] == si\n        out.append(box_iou(pred[:, :4], targets[b][:, 1:]))\n    return out\n",
    # Each image's boxes sliced from the concatenated truth by counts of the pass.
    "import torch\ndef assign(preds, gt_boxes, counts):\n    out = []\n    start = 0\n"
    "    for i in range(preds.shape[0]):\n        n = counts[i]\n"
    "        out.append(box_iou(preds[i], gt_boxes[start:start + n]))\n        start += n\n    return out\n",
    # A mask of the pass selecting the sample's truth.
    "import torch\ndef loss_fn(pred, target, batch_idx, bs):\n    total = 0\n    for i in range(bs):\n"
    "        m = batch_idx == i\n        total = total + torch.nn.functional.l1_loss(pred[i], target[m])\n    return total\n",
    # Names only shaped like truth: a size, a count, normalisation statistics.
    "import torch\ndef resize(masks, target_size):\n    out = []\n    for i in range(len(masks)):\n"
    "        out.append(torch.nn.functional.interpolate(masks[i][None], size=target_size))\n    return out\n",
    "import torch\ndef onehot(idx, num_labels):\n    out = []\n    for i in range(idx.shape[0]):\n"
    "        out.append(torch.nn.functional.one_hot(idx[i], num_labels))\n    return torch.stack(out)\n",
    "import torch\ndef denorm(preds: torch.Tensor, target_mean, target_std):\n    out = []\n    for i in range(len(preds)):\n"
    "        out.append(preds[i] * target_std + target_mean)\n    return out\n",
]


@pytest.mark.parametrize("source", PER_SAMPLE)
def test_a_loop_over_samples_is_still_reported(source):
    assert _sl301(source), source


def test_a_loop_over_refinement_steps_stays_exempt():
    source = ("import torch\ndef sequence_loss(flow_preds, flow_gt, valid, gamma=0.8):\n    n = len(flow_preds)\n"
              "    total = 0.0\n    for i in range(n):\n        total += gamma ** (n - i - 1) * (flow_preds[i] - flow_gt).abs().mean()\n"
              "    return total\n")
    assert _sl301(source) == []


@pytest.mark.parametrize(
    "source",
    [
        # A per-class table named after labels (zero-shot classification by prototypes).
        "import torch\ndef classify(feats: torch.Tensor, label_embeddings):\n    sims = []\n    for i in range(feats.shape[0]):\n"
        "        sims.append(feats[i] @ label_embeddings.T)\n    return sims\n",
        # The index handed on inside an expression: the helper picks the sample's truth by it.
        "import torch\ndef loss_fn(preds: torch.Tensor, targets):\n    total = 0\n    for i in range(preds.shape[0]):\n"
        "        total = total + single(preds[i] - targets, targets[:, 0] == i)\n    return total\n",
        "import torch\ndef loss_fn(preds: torch.Tensor, targets):\n    total = 0\n    for i in range(preds.shape[0]):\n"
        "        total = total + single(preds[i] - targets, img_idx=[i])\n    return total\n",
        # Each sample's truth picked by a call rather than a subscript.
        "import torch\ndef loss_fn(preds: torch.Tensor, targets, idx):\n    total = 0\n    for i in range(preds.shape[0]):\n"
        "        total = total + torch.nn.functional.l1_loss(preds[i], torch.index_select(targets, 0, idx[i]))\n"
        "    return total\n",
        "import torch\ndef loss_fn(preds: torch.Tensor, targets, idx):\n    total = 0\n    for i in range(preds.shape[0]):\n"
        "        total = total + torch.nn.functional.l1_loss(preds[i], targets.gather(0, idx[i]))\n    return total\n",
    ],
)
def test_more_loops_over_samples_are_still_reported(source):
    assert _sl301(source), source



def test_a_loop_over_levels_striding_the_truth_stays_exempt():
    # The stride is arithmetic on the counter, no mask picking a sample's rows.
    source = ("import torch\ndef multiscale_loss(flow_preds, flow_gt):\n    total = 0.0\n    for i in range(len(flow_preds)):\n"
              "        scale = 2 ** i\n        total += (flow_preds[i] - flow_gt[:, :, ::scale, ::scale]).abs().mean()\n"
              "    return total\n")
    assert _sl301(source) == []


def test_a_mask_of_the_pass_through_nonzero_picks_the_sample_s_truth():
    source = ("import torch\ndef val(preds, targets):\n    out = []\n    for si, pred in enumerate(preds):\n"
              "        idx = (targets[:, 0] == si).nonzero().squeeze(1)\n        keep = idx\n"
              "        out.append(box_iou(pred[:, :4], targets[keep, 1:]))\n    return out\n")
    assert _sl301(source)
