"""The seed article's face-detection model, as published: a per-image GIoU loss loop.

Each image has a different number of ground-truth boxes, so the loss runs once
per image (938 ms per step on an L4), the boxes are copied to the device one
tensor at a time, and the profiling loop synchronises three times per step.
The fixed form (fixed/seed_detection.py) pads the boxes in `collate_fn`, copies
them once, and computes the loss for the whole batch.
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Net(nn.Module):
    def __init__(self, image_size=64, slots=256):
        super().__init__()
        self.slots = slots
        self.image_size = image_size
        self.conv = nn.Conv2d(1, 4, 3, padding="same")
        self.pool = nn.AdaptiveAvgPool2d(8)
        self.head = nn.Linear(4 * 8 * 8, slots * 4)

    def forward(self, x):
        x = self.pool(F.relu(self.conv(x.float())))
        x = self.head(x.flatten(1))
        return x.view((-1, self.slots, 4)).sigmoid() * self.image_size


def generalized_box_iou(boxes1, boxes2):
    epsilon = 1e-5
    area1 = (boxes1[..., 2] - boxes1[..., 0]) * (boxes1[..., 3] - boxes1[..., 1])
    area2 = (boxes2[..., 2] - boxes2[..., 0]) * (boxes2[..., 3] - boxes2[..., 1])
    lt = torch.max(boxes1[..., :2], boxes2[..., :2])
    rb = torch.min(boxes1[..., 2:], boxes2[..., 2:])
    wh = rb - lt
    inter = wh[..., 0] * wh[..., 1]
    union = area1 + area2 - inter
    iou = inter / union.clamp(epsilon)
    lti = torch.min(boxes1[..., :2], boxes2[..., :2])
    rbi = torch.max(boxes1[..., 2:], boxes2[..., 2:])
    whi = rbi - lti
    areai = (whi[..., 0] * whi[..., 1]).clamp(epsilon)
    return iou - (areai - union) / areai


def loss_fn(pred, targets_list):
    batch_size = len(targets_list)
    total_boxes = 0
    loss_sum = 0.0
    for i in range(batch_size):
        targets = targets_list[i]
        num_targets = targets.shape[0]
        if num_targets > 0:
            sample_preds = pred[i, :num_targets]
            total_boxes += num_targets
            loss_sum += generalized_box_iou(sample_preds, targets).sum()
    return loss_sum / max(total_boxes, 1)


class FakeDataset(Dataset):
    def __init__(self, image_size=64, length=64):
        super().__init__()
        self.size = image_size
        self.img_size = [image_size, image_size]
        self.length = length

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        rand_image = torch.randint(low=0, high=256, size=[1] + self.img_size, dtype=torch.uint8)
        n_boxes = np.clip(np.floor(np.abs(np.random.normal(0, 3))).astype(np.int32), 0, 255)
        box_sizes = torch.randint(low=1, high=self.size, size=(n_boxes, 2))
        top_left = torch.randint(low=0, high=self.size - 1, size=(n_boxes, 2))
        bottom_right = torch.clamp(top_left + box_sizes, 0, self.size - 1)
        rand_boxes = torch.concat((top_left, bottom_right), dim=1)
        return rand_image, rand_boxes.to(torch.uint8)


def collate_fn(batch):
    images = torch.stack([b[0] for b in batch], dim=0)
    boxes = [b[1] for b in batch]
    return images, boxes


def data_to_device(data, device):
    if isinstance(data, (list, tuple)):
        return type(data)(data_to_device(val, device) for val in data)
    elif isinstance(data, torch.Tensor):
        return data.to(device=device, non_blocking=True)


def main(steps: int = 3, batch_size: int = 16) -> None:
    torch.manual_seed(0)
    np.random.seed(0)
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    train_loader = DataLoader(
        dataset=FakeDataset(), batch_size=batch_size, pin_memory=True, collate_fn=collate_fn
    )
    model = Net().to(device).train()
    for step, data in enumerate(train_loader):
        images, boxes = data_to_device(data, device)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        outputs = model(images)
        loss = loss_fn(outputs, boxes)
        loss.backward()
        if step + 1 >= steps:
            break


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    main(args.steps, args.batch_size)
