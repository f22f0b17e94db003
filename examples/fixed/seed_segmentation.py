"""The seed segmentation loss after the article's three optimisations: no syncs.

nonzero -> 3-arg `torch.where`; unique -> sort + step count; boolean masks ->
`CrossEntropyLoss(ignore_index=...)`. 1.3 s -> 5.4 ms per step on an A10G.
"""

import torch
import torch.nn as nn
from torch import Tensor


class MaskedLoss(nn.Module):
    def __init__(self, ignore_val=-1, num_classes=10):
        super().__init__()
        self.ignore_val = ignore_val
        self.num_classes = num_classes
        self.loss = torch.nn.CrossEntropyLoss(ignore_index=ignore_val)

    def cross_entropy(self, pred: Tensor, target: Tensor) -> Tensor:
        return self.loss(pred, target)

    def ignore_background(self, target: Tensor) -> Tensor:
        return torch.where(target == self.num_classes - 1, -1 * torch.ones_like(target), target)

    def forward(self, pred: Tensor, target: Tensor) -> Tensor:
        target = self.ignore_background(target)
        sorted_target, _ = torch.sort(target.flatten())
        deriv = sorted_target[1:] - sorted_target[:-1]
        num_unique = torch.count_nonzero(deriv) + 1
        loss = self.cross_entropy(pred, target)
        return torch.where(num_unique < 2, 0.0 * loss, loss)
