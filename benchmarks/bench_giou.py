"""Benchmark the fused GIoU loss against the plain-PyTorch forms of the seed.

Data as in the seed article: B images with N padded slots, |N(0, 3)| boxes per
image, integer boxes in [0, 255]. Every form computes the same loss, the mean
of ``1 - GIoU`` over present boxes (with the intersection clamped at 0), and is
timed forward-only and forward+backward (w.r.t. the predictions); the table
reports medians and each form's time relative to the fused op.

The memory-traffic bound is the bytes the fused op must move (read both box
tensors, write the gradient) divided by a copy bandwidth measured here: once
with a large copy (DRAM) and once with a copy the size of the op's working
set, which fits in cache on many CPUs as the benchmark's repeated inputs do.

    python benchmarks/bench_giou.py                  # CPU, the seed's sizes
    python benchmarks/bench_giou.py --device cuda
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

import synclint.ops as ops

# ----------------------------------------------------------------- the forms


def plain_box_loss(pred, target, eps=1e-7):
    """``1 - GIoU`` per box in plain PyTorch (the seed's formula, clamp fixed)."""
    area_p = (pred[..., 2] - pred[..., 0]) * (pred[..., 3] - pred[..., 1])
    area_t = (target[..., 2] - target[..., 0]) * (target[..., 3] - target[..., 1])
    wh = (torch.min(pred[..., 2:], target[..., 2:]) - torch.max(pred[..., :2], target[..., :2])).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    union = area_p + area_t - inter
    whc = (torch.max(pred[..., 2:], target[..., 2:]) - torch.min(pred[..., :2], target[..., :2])).clamp(min=0)
    encl = whc[..., 0] * whc[..., 1]
    return 1 - inter / (union + eps) + (encl - union) / (encl + eps)


def loss_loop(pred, targets_list):
    """The seed's per-sample loop (one small loss per image)."""
    total_boxes, loss_sum = 0, 0.0
    for i, targets in enumerate(targets_list):
        n = targets.shape[0]
        if n > 0:
            total_boxes += n
            loss_sum = loss_sum + plain_box_loss(pred[i, :n], targets).sum()
    return loss_sum / max(total_boxes, 1)


def loss_concat(pred, targets_list):
    """The seed's concat form: gather the present boxes, one loss call."""
    counts = [t.shape[0] for t in targets_list]
    all_targets = torch.cat(targets_list)
    all_preds = torch.cat([pred[i, :n] for i, n in enumerate(counts)])
    return plain_box_loss(all_preds, all_targets).sum() / max(sum(counts), 1)


def loss_padded(pred, target):
    """The seed's padded form: masked mean over slots (all-zero rows absent)."""
    mask = (target != 0).any(-1)
    loss = torch.where(mask, plain_box_loss(pred, target), 0.0)
    return loss.sum() / mask.sum().clamp(min=1)


def torchvision_concat():
    try:  # a torchvision built for another torch raises more than ImportError
        from torchvision.ops import generalized_box_iou_loss
    except Exception:  # noqa: BLE001
        return None

    def loss(pred, targets_list):
        counts = [t.shape[0] for t in targets_list]
        all_preds = torch.cat([pred[i, :n] for i, n in enumerate(counts)])
        return generalized_box_iou_loss(all_preds, torch.cat(targets_list), reduction="mean")

    return loss


# ------------------------------------------------------------------- harness


def seed_data(batch, slots, device, dtype, seed=0):
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    targets_list = []
    for _ in range(batch):
        n = int(np.clip(np.floor(np.abs(rng.normal(0, 3))).astype(np.int32), 0, slots - 1))
        size = torch.randint(1, 256, (n, 2), generator=generator)
        top_left = torch.randint(0, 255, (n, 2), generator=generator)
        boxes = torch.cat((top_left, torch.clamp(top_left + size, 0, 255)), 1)
        targets_list.append(boxes.to(device=device, dtype=dtype))
    padded = torch.zeros(batch, slots, 4, device=device, dtype=dtype)
    for i, boxes in enumerate(targets_list):
        padded[i, : boxes.shape[0]] = boxes
    top_left = torch.randint(0, 200, (batch, slots, 2), generator=generator)
    size = torch.randint(1, 56, (batch, slots, 2), generator=generator)
    pred = torch.cat((top_left, top_left + size), -1).to(device=device, dtype=dtype)
    return pred, targets_list, padded


def median_seconds(fn: Callable[[], object], sync: Callable[[], None], budget_s: float, min_runs: int):
    for _ in range(2):  # warm up (allocator, caches, compiled code)
        fn()
    sync()
    times: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(times) < min_runs or time.perf_counter() < deadline:
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
        if len(times) >= 200:
            break
    return statistics.median(times)


def copy_bandwidth(num_bytes: int, device, sync) -> float:
    """Bytes read + written per second by a tensor copy of ``num_bytes``."""
    src = torch.empty(num_bytes // 4, device=device)
    dst = torch.empty_like(src)
    seconds = median_seconds(lambda: dst.copy_(src), sync, budget_s=0.5, min_runs=20)
    return 2 * num_bytes / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--slots", type=int, default=256)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timing per row")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile row")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    pred, targets_list, padded = seed_data(args.batch, args.slots, device, dtype)
    if not ops.kernel_available(device):
        print("WARNING: no compiled kernel; the fused row times the PyTorch reference")

    forms: dict[str, Callable] = {
        "per-sample loop (seed)": lambda p: loss_loop(p, targets_list),
        "concat (seed)": lambda p: loss_concat(p, targets_list),
        "padded plain PyTorch (seed)": lambda p: loss_padded(p, padded),
    }
    tv = torchvision_concat()
    if tv is not None:
        forms["torchvision, concat"] = lambda p: tv(p, targets_list)
    if not args.no_compile:
        compiled = torch.compile(loss_padded, fullgraph=True)
        forms["torch.compile(padded)"] = lambda p: compiled(p, padded)
    forms["synclint.ops reference (fallback)"] = lambda p: ops.giou_loss_reference(p, padded)
    forms["synclint.ops.giou_loss (fused)"] = lambda p: ops.giou_loss(p, padded)

    expected = ops.giou_loss_reference(pred, padded).float()
    results = {}
    for name, form in forms.items():
        value = form(pred).float()
        torch.testing.assert_close(value, expected, rtol=1e-2 if dtype != torch.float32 else 1e-5, atol=1e-3)
        leaf = pred.detach().clone().requires_grad_()

        def forward_backward(form=form, leaf=leaf):
            leaf.grad = None
            form(leaf).backward()

        budget = args.budget if "loop" not in name else max(args.budget, 2.0)
        results[name] = (
            median_seconds(lambda form=form: form(pred), sync, budget, min_runs=5),
            median_seconds(forward_backward, sync, budget, min_runs=5),
        )

    fused_fwd, fused_fb = results["synclint.ops.giou_loss (fused)"]
    print(f"device={device} dtype={args.dtype} B={args.batch} N={args.slots} "
          f"present boxes={sum(t.shape[0] for t in targets_list)} threads={torch.get_num_threads()}")
    print()
    print("| form | fwd (ms) | fwd+bwd (ms) | fwd / fused | fwd+bwd / fused |")
    print("|---|---:|---:|---:|---:|")
    for name, (fwd, fb) in results.items():
        print(f"| {name} | {fwd * 1e3:.3f} | {fb * 1e3:.3f} | {fwd / fused_fwd:.1f}x | {fb / fused_fb:.1f}x |")

    plain = {k: v for k, v in results.items() if "synclint" not in k}
    best_name, (_, best_fb) = min(plain.items(), key=lambda item: item[1][1])
    print(f"\nfused fwd+bwd is {best_fb / fused_fb:.1f}x faster than the fastest plain form ({best_name})")

    box_bytes = pred.numel() * pred.element_size()
    fwd_bytes = 2 * box_bytes  # read pred and target
    fb_bytes = 2 * fwd_bytes + box_bytes  # forward, then re-read both and write grad_pred
    for label, num_bytes in (("large copy (256 MiB)", 256 << 20), ("working-set-size copy", fb_bytes)):
        bandwidth = copy_bandwidth(num_bytes, device, sync)
        fwd_bound, fb_bound = fwd_bytes / bandwidth, fb_bytes / bandwidth
        print(f"bound at {label} bandwidth {bandwidth / 1e9:.1f} GB/s: fwd {fwd_bound * 1e3:.3f} ms "
              f"({fused_fwd / fwd_bound:.1f}x of it), fwd+bwd {fb_bound * 1e3:.3f} ms "
              f"({fused_fb / fb_bound:.1f}x of it)")


if __name__ == "__main__":
    main()
