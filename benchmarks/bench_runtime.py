"""Step time with and without the CPU-simulated detector, as a ratio from one run.

    python benchmarks/bench_runtime.py [--steps 40] [--batch 16] [--size 64]

The step is a real training step: a conv segmentation net, the seed masked loss
(before or after its fix), backward and an AdamW update, with the model and
batch on the simulated CUDA device (what ``synclint run --device cpu`` runs:
tracked residency, so every op also propagates its device mark). Timings are
interleaved (off, on, off, on, ...) and the medians compared, so drift in the
machine's load hits both sides alike. The bar: ``on / off <= 1.2`` for a step of
at least 50 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "runtime"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import segloss_after  # noqa: E402
import segloss_before  # noqa: E402

import synclint  # noqa: E402
from synclint.runtime.simcuda import simulate_cuda  # noqa: E402


def segmentation_net(num_classes: int = 10, width: int = 32) -> nn.Module:
    def block(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())

    return nn.Sequential(
        block(3, width),
        block(width, width),
        nn.MaxPool2d(2),
        block(width, 2 * width),
        block(2 * width, 2 * width),
        nn.Upsample(scale_factor=2),
        block(2 * width, width),
        nn.Conv2d(width, num_classes, 1),
    )


def make_step(loss_module: nn.Module, batch: int, size: int):
    torch.manual_seed(0)
    with synclint.watch(device="cpu"):  # on the simulated device, as a CUDA script would be
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = segmentation_net().to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
        images = torch.randn(batch, 3, size, size, device=device)
        targets = torch.randint(0, 10, (batch, size, size), device=device)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_module(model(images), targets.clone())
        loss.backward()
        optimizer.step()

    return step


def time_once(step, detector: bool) -> float:
    start = time.perf_counter()
    if detector:
        with synclint.watch(device="cpu"):
            step()
    else:
        step()
    return time.perf_counter() - start


def measure(step, steps: int) -> tuple[list[float], list[float]]:
    for detector in (False, True):  # warm-up: allocator, rule cache, hook table
        time_once(step, detector)
    off, on = [], []
    for _ in range(steps):
        off.append(time_once(step, False))
        on.append(time_once(step, True))
    return off, on


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads, batch {args.batch}, {args.size}x{args.size}")
    with simulate_cuda():
        for name, loss in (
            ("conv net + seed loss (fixed)", segloss_after.MaskedLoss()),
            ("conv net + seed loss (3 syncs)", segloss_before.MaskedLoss()),
        ):
            off, on = measure(make_step(loss, args.batch, args.size), args.steps)
            med_off, med_on = statistics.median(off), statistics.median(on)
            print(
                f"{name:32s} median off {med_off * 1e3:8.2f} ms  on {med_on * 1e3:8.2f} ms  "
                f"ratio {med_on / med_off:.3f}x   (min: {min(on) / min(off):.3f}x)"
            )


if __name__ == "__main__":
    main()
