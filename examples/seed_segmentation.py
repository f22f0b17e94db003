"""The seed article's segmentation model, as published: three hidden syncs per step.

A toy semantic-segmentation net whose loss (1) resets "background" labels
through `torch.nonzero`, (2) counts distinct labels with `torch.unique`, and
(3) drops ignored pixels with boolean masks before the cross-entropy. On an
A10G this step took 1.3 s; the fixed form (fixed/seed_segmentation.py) 5.4 ms.

Run it: `python examples/seed_segmentation.py --steps 2` (CPU or CUDA), or
`synclint run examples/seed_segmentation.py -- --steps 2` to see the syncs.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torch.utils.data import DataLoader, Dataset


class Net(nn.Module):
    def __init__(self, num_hidden=10, num_classes=10):
        super().__init__()
        self.conv_in = nn.Conv2d(3, 10, 3, padding="same")
        hidden = []
        for _ in range(num_hidden):
            hidden.append(nn.Conv2d(10, 10, 3, padding="same"))
            hidden.append(nn.ReLU())
        self.hidden = nn.Sequential(*hidden)
        self.conv_out = nn.Conv2d(10, num_classes, 3, padding="same")

    def forward(self, x):
        x = F.relu(self.conv_in(x))
        x = self.hidden(x)
        return self.conv_out(x)


class MaskedLoss(nn.Module):
    def __init__(self, ignore_val=-1, num_classes=10):
        super().__init__()
        self.ignore_val = ignore_val
        self.num_classes = num_classes
        self.loss = torch.nn.CrossEntropyLoss()

    def cross_entropy(self, pred: Tensor, target: Tensor) -> Tensor:
        mask = target != self.ignore_val
        permuted_pred = torch.permute(pred, [0, 2, 3, 1])
        masked_target = target[mask]
        masked_pred = permuted_pred[mask.unsqueeze(-1).expand(-1, -1, -1, self.num_classes)]
        masked_pred = masked_pred.reshape(-1, self.num_classes)
        loss = self.loss(masked_pred, masked_target)
        return loss

    def ignore_background(self, target: Tensor) -> Tensor:
        inds = torch.nonzero(target == self.num_classes - 1, as_tuple=True)
        target[inds] = self.ignore_val
        return target

    def forward(self, pred: Tensor, target: Tensor) -> Tensor:
        target = self.ignore_background(target)
        unique = torch.unique(target)
        ignore_loss = torch.numel(unique) < 2
        loss = self.cross_entropy(pred, target)
        if ignore_loss:
            loss = 0.0 * loss
        return loss


class FakeDataset(Dataset):
    def __init__(self, num_classes=10, img_size=32, length=64):
        super().__init__()
        self.num_classes = num_classes
        self.img_size = [img_size, img_size]
        self.length = length

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        rand_image = torch.randn([3] + self.img_size, dtype=torch.float32)
        rand_label = torch.randint(low=-1, high=self.num_classes, size=self.img_size)
        return rand_image, rand_label


def main(steps: int = 3, batch_size: int = 8) -> None:
    torch.manual_seed(0)
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    train_loader = DataLoader(FakeDataset(), batch_size=batch_size, shuffle=True, pin_memory=True)
    model = Net().to(device)
    criterion = MaskedLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    model.train()
    for step, data in enumerate(train_loader):
        if step >= steps:
            break
        inputs = data[0].to(device=device, non_blocking=True)
        labels = data[1].to(device=device, non_blocking=True)
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    main(args.steps, args.batch_size)
