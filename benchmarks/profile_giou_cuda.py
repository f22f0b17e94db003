"""Where the device time of one fused GIoU fwd+bwd goes, kernel by kernel (CUDA only).

``bench_giou.py`` times a whole fwd+bwd captured in a CUDA graph; this script
lists what ran on the GPU inside one such step with the profiler: every kernel
and memset, how many per step, its mean device time, and for the GIoU kernels
the bandwidth they reached over the bytes they must move (both box tensors
read; the backward also writes the gradient).

    python benchmarks/profile_giou_cuda.py              # B=1024, N=256, 30 steps per case
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_giou import make_data  # noqa: E402

import synclint.ops as ops  # noqa: E402


def profile_case(name: str, step, steps: int, box_bytes: int) -> None:
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    per_name: dict[str, list[float]] = defaultdict(list)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            per_name[event.name].append(event.device_time)  # microseconds
    total = sum(sum(times) for times in per_name.values()) / steps
    print(f"\n### {name}: {total:.2f} us of device work per fwd+bwd\n")
    print("| kernel or copy | per step | mean us | GB/s over box bytes |")
    print("|---|---:|---:|---:|")
    for kernel, times in sorted(per_name.items(), key=lambda kv: -sum(kv[1])):
        mean = sum(times) / len(times)
        rate = ""
        if "giou" in kernel.lower():
            moved = 3 * box_bytes if "backward" in kernel.lower() else 2 * box_bytes
            rate = f"{moved / (mean * 1e-6) / 1e9:.0f}"
        print(f"| `{kernel[:90]}` | {len(times) / steps:g} | {mean:.2f} | {rate} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--slots", type=int, default=256)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    device = torch.device("cuda")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, B={args.batch}, N={args.slots}")
    for kind in ("seed", "dense"):
        pred, _, padded, counts = make_data(kind, args.batch, args.slots, device, torch.float32)
        box_bytes = pred.numel() * pred.element_size()
        leaf = pred.detach().clone().requires_grad_()
        for label, kwargs in (("padding rows", {}), ("counts", {"counts": counts})):

            def step(kwargs=kwargs):
                leaf.grad = None
                ops.giou_loss(leaf, padded, **kwargs).backward()

            profile_case(f"{kind} data, {label}", step, args.steps, box_bytes)


if __name__ == "__main__":
    main()
