"""Where a fused GIoU fwd+bwd step's time goes on the CPU: the forward (which computes the
gradient too) against the backward (autograd's engine and ``AccumulateGrad`` around a node
with nothing left to compute), at 1 and 2 threads.

The backward does not shrink with threads: it is the serial part that caps the
2-thread/1-thread ratio of ``benchmarks/bench_giou.py`` (issue #14's >= 1.8x bar), as
``(F1 + S) / (F2 + S)``. Timings are per step, after 20 untimed ones, min and median of
``--steps``; run it twice on a quiet machine, side by side with nothing else.

    python benchmarks/probe_giou_serial.py [--steps 400] [--batch 1024] [--slots 256]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from synclint.ops import giou_loss


def _boxes(batch: int, slots: int) -> torch.Tensor:
    corner = torch.rand(batch, slots, 2) * 100
    size = torch.rand(batch, slots, 2) * 50 + 1
    return torch.cat([corner, corner + size], -1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--slots", type=int, default=256)
    args = parser.parse_args()
    torch.manual_seed(0)
    pred, target = _boxes(args.batch, args.slots), _boxes(args.batch, args.slots)
    for threads in (1, 2):
        torch.set_num_threads(threads)
        leaf = pred.clone().requires_grad_(True)
        forward, backward = [], []
        for step in range(args.steps + 20):
            leaf.grad = None
            start = time.perf_counter()
            loss = giou_loss(leaf, target)
            middle = time.perf_counter()
            loss.backward()
            end = time.perf_counter()
            if step >= 20:
                forward.append(middle - start)
                backward.append(end - middle)
        print(f"{threads} thread(s): forward with gradient min {min(forward) * 1e6:.0f} / median "
              f"{statistics.median(forward) * 1e6:.0f} us; backward min {min(backward) * 1e6:.0f} / median "
              f"{statistics.median(backward) * 1e6:.0f} us")


if __name__ == "__main__":
    main()
