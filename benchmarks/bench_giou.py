"""Benchmark the fused GIoU loss against the plain-PyTorch forms of the seed.

Two data sets of B images with N padded slots each: the seed article's
(|N(0, 3)| integer boxes per image in [0, 255], so ~99% of the slots are
padding) and a dense one (every slot holds a box). Every form computes the
same loss, the mean of ``1 - GIoU`` over present boxes (intersection clamped
at 0), and is timed forward-only and forward+backward (w.r.t. the
predictions), at every thread count asked for.

Machines are noisy (this one is shared), so all measurements of one data set
are interleaved: each round times every form at every thread count once, and
the report is printed twice from the same samples: with the median over rounds
(the typical time) and with the minimum (the least disturbed run, the better
estimate on a busy machine). Ratios are only ever taken between numbers from
the same run and the same statistic.

The memory-traffic bound of a fused call is the least traffic any
implementation of it needs, divided by a copy bandwidth measured in the same
rounds, at the same thread count. With S the bytes of one box tensor:

* padding rows (no ``counts``): the forward must read both box tensors (2S);
  forward+backward must read them once and write the prediction gradient
  once (3S), however the work is split between the two calls;
* ``counts``: only the present boxes must be read (both tensors) plus the
  counts, and the gradient is written whole (S, mostly zeros).

The bandwidth is that of ``dst.copy_(src)`` (bytes read plus bytes written,
per second; the copy's stores pay the same read-for-ownership as the
kernel's), timed for two sizes: the call's own traffic (the boxes stay in
cache between iterations, as in a training step's loss) and a 256 MiB copy
(DRAM). The first gives the stricter bound; every sample of a short call
(under 10 ms: fused forms and copies alike) starts after two untimed calls, so both sides of that ratio
are timed in the steady state of back-to-back calls. Each report ends with the bars
of issue #14, ratios taken within one statistic: the fused fwd+bwd against
the bound, 2 threads against 1, and against the best plain form.

    python benchmarks/bench_giou.py                      # CPU, seed sizes, 1 and 2 threads
    python benchmarks/bench_giou.py --threads 1,2,4 --rounds 30
    python benchmarks/bench_giou.py --device cuda --threads 0
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import types
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


def fresh_copy(fn: Callable, suffix: str) -> Callable:
    """``fn`` with its own code object, so ``torch.compile`` keeps a separate cache entry.

    Inductor's CPU kernels are specialised on ``torch.get_num_threads()`` at
    compile time and Dynamo does not guard on it, so each thread count gets
    its own compiled copy of the padded form.
    """
    code = fn.__code__.replace(co_name=f"{fn.__name__}_{suffix}")
    return types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)


def torchvision_loss():
    try:  # a torchvision built for another torch raises more than ImportError
        from torchvision.ops import generalized_box_iou_loss
    except Exception:  # noqa: BLE001
        return None

    def loss(pred, targets_list):
        counts = [t.shape[0] for t in targets_list]
        all_preds = torch.cat([pred[i, :n] for i, n in enumerate(counts)])
        return generalized_box_iou_loss(all_preds, torch.cat(targets_list), reduction="mean")

    return loss


# ---------------------------------------------------------------------- data


def make_data(kind: str, batch: int, slots: int, device, dtype, seed=0):
    """(pred, targets_list, padded targets, counts) for the seed's or the dense data."""
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    targets_list = []
    for _ in range(batch):
        if kind == "seed":
            n = int(np.clip(np.floor(np.abs(rng.normal(0, 3))).astype(np.int32), 0, slots - 1))
        else:
            n = slots
        size = torch.randint(1, 256, (n, 2), generator=generator)
        top_left = torch.randint(0, 255, (n, 2), generator=generator)
        boxes = torch.cat((top_left, torch.clamp(top_left + size, 0, 255)), 1)
        boxes[:, 2:] = torch.maximum(boxes[:, 2:], boxes[:, :2] + 1)  # never an all-zero (padding) row
        targets_list.append(boxes.to(device=device, dtype=dtype))
    padded = torch.zeros(batch, slots, 4, device=device, dtype=dtype)
    for i, boxes in enumerate(targets_list):
        padded[i, : boxes.shape[0]] = boxes
    counts = torch.tensor([t.shape[0] for t in targets_list], device=device)
    top_left = torch.randint(0, 200, (batch, slots, 2), generator=generator)
    size = torch.randint(1, 56, (batch, slots, 2), generator=generator)
    pred = torch.cat((top_left, top_left + size), -1).to(device=device, dtype=dtype)
    return pred, targets_list, padded, counts


# ------------------------------------------------------------------- harness


class Timer:
    """Interleaved timing: every `sample` call adds one measurement to a key."""

    def __init__(self, sync: Callable[[], None], min_sample_s: float = 2e-3):
        self.sync = sync
        self.min_sample_s = min_sample_s
        self.short_call_s = 5 * min_sample_s  # calls whose cache state matters (see `sample`)
        self.reps: dict[object, int] = {}
        self.short: dict[object, bool] = {}
        self.samples: dict[object, list[float]] = {}

    def sample(self, key, fn: Callable[[], object]) -> None:
        if key not in self.reps:  # warm up, then pick repetitions for a measurable sample
            for _ in range(2):
                fn()
            self.sync()
            start = time.perf_counter()
            fn()
            self.sync()
            once = time.perf_counter() - start
            self.reps[key] = max(1, min(50, int(self.min_sample_s / max(once, 1e-7))))
            self.short[key] = once < self.short_call_s
        reps = self.reps[key]
        if self.short[key]:
            # A short call's time depends on where its data is, and the forms
            # timed before it evict its boxes from the caches. Two untimed
            # calls first, so every short sample starts in the steady state
            # of back-to-back calls: the state the working-set copy of the
            # bound (a short call too) is measured in, so that ratio compares
            # like with like. (Fused dense fwd+bwd, 1 thread, right after the
            # padded plain form: 0.97 ms with no untimed call, 0.86 with one,
            # 0.66 with two, 0.67 with three.)
            for _ in range(2):
                fn()
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        self.sync()
        self.samples.setdefault(key, []).append((time.perf_counter() - start) / reps)

    def median(self, key) -> float:
        return statistics.median(self.samples[key])

    def minimum(self, key) -> float:
        return min(self.samples[key])


def copy_fn(num_bytes: int, device) -> Callable[[], object]:
    src = torch.ones(max(num_bytes // 4, 1), device=device)
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def run(kind: str, args, device, dtype, sync, thread_counts: list[int]) -> None:
    pred, targets_list, padded, counts = make_data(kind, args.batch, args.slots, device, dtype)
    present = int(counts.sum())
    expected = ops.giou_loss_reference(pred, padded).float()

    forms: dict[str, Callable] = {}
    if args.loop:
        forms["per-sample loop (seed)"] = lambda p: loss_loop(p, targets_list)
    forms["concat (seed)"] = lambda p: loss_concat(p, targets_list)
    forms["padded plain PyTorch (seed)"] = lambda p: loss_padded(p, padded)
    tv = torchvision_loss()
    if tv is not None:
        forms["torchvision, concat"] = lambda p: tv(p, targets_list)
    compiled = {}
    if not args.no_compile:
        for threads in thread_counts:
            if threads:
                torch.set_num_threads(threads)
            compiled[threads] = torch.compile(fresh_copy(loss_padded, f"{threads}t"), fullgraph=True)
            compiled[threads](pred, padded)  # compile at this thread count
        forms["torch.compile(padded)"] = None  # per thread count, below
    forms["synclint.ops reference (fallback)"] = lambda p: ops.giou_loss_reference(p, padded, counts=counts)
    forms["fused, padding rows"] = lambda p: ops.giou_loss(p, padded)
    forms["fused, counts"] = lambda p: ops.giou_loss(p, padded, counts=counts)

    def form_at(name, threads):
        return (lambda p: compiled[threads](p, padded)) if name == "torch.compile(padded)" else forms[name]

    box_bytes = pred.numel() * pred.element_size()
    present_bytes = present * 4 * pred.element_size()
    bound_bytes = {  # (forward, forward+backward): the least any implementation must move
        "fused, padding rows": (2 * box_bytes, 3 * box_bytes),
        "fused, counts": (2 * present_bytes + 8 * args.batch, 2 * present_bytes + 8 * args.batch + box_bytes),
    }
    copies = {}
    for name, (_, fb_bytes) in bound_bytes.items():
        copies[f"working-set copy, {name}"] = (fb_bytes, copy_fn(fb_bytes // 2, device))
    copies["large copy (DRAM)"] = (256 << 20, copy_fn(128 << 20, device))

    for threads in thread_counts:  # check every form once, at every thread count
        if threads:
            torch.set_num_threads(threads)
        for name in forms:
            value = form_at(name, threads)(pred).float()
            torch.testing.assert_close(value, expected, rtol=1e-2 if dtype != torch.float32 else 1e-5, atol=1e-3)

    leaf = pred.detach().clone().requires_grad_()
    timer = Timer(sync)
    for round_ in range(args.rounds):
        for threads in thread_counts:
            if threads:
                torch.set_num_threads(threads)
            for name in forms:
                form = form_at(name, threads)
                slow = round_ > 0 and timer.median((threads, name, "fb")) > args.slow_s
                if slow and round_ % max(1, args.rounds // 3):
                    continue  # a form far slower than the rest: about 3 samples are plenty

                def forward_backward(form=form):
                    leaf.grad = None
                    form(leaf).backward()

                timer.sample((threads, name, "fwd"), lambda form=form: form(pred))
                timer.sample((threads, name, "fb"), forward_backward)
            for name, (_, fn) in copies.items():
                timer.sample((threads, name, "copy"), fn)

    for stat_name, stat in (("medians", timer.median), ("minimums", timer.minimum)):
        # Medians: typical time; minimums: the least disturbed run, which on a
        # busy machine is the better estimate of what the code can do.
        report(kind, args, device, pred, present, forms, bound_bytes, copies, thread_counts, stat_name, stat)
    if device.type == "cuda":
        report_device_time(forms, form_at, thread_counts[0], pred, bound_bytes, copies)


def graph_ms(step: Callable[[], None], max_replays: int = 200, budget_s: float = 0.5) -> float:
    """Device time of one ``step``: captured in a CUDA graph and replayed, so the
    host's launch and dispatch overhead is gone. A step that syncs cannot be captured.
    Replays fill ``budget_s`` (at least 5, at most ``max_replays``): the per-sample loop
    takes ~0.2 s a replay, and 200 of them would spend the GPU lease on one row."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        graph.replay()
    end.record()
    end.synchronize()
    warm_s = start.elapsed_time(end) / 5 / 1e3
    replays = max(5, min(max_replays, int(budget_s / max(warm_s, 1e-9))))
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / replays


def report_device_time(forms, form_at, threads, pred, bound_bytes, copies) -> None:
    """On CUDA the eager timings above are mostly host time (Python, dispatch, launches:
    the GPU idles between kernels). Captured in a CUDA graph, a sync-free step shows
    what the device itself spends; the syncing forms cannot be captured at all."""
    print("\n### device time per fwd+bwd (CUDA graph replay)\n")
    print("| form | device ms | note |\n|---|---:|---|")
    device_ms = {}
    for name in forms:
        form = form_at(name, threads)
        leaf = pred.detach().clone().requires_grad_()

        def step(form=form, leaf=leaf):
            leaf.grad = None
            form(leaf).backward()

        try:
            device_ms[name] = graph_ms(step)
            print(f"| {name} | {device_ms[name]:.4f} | |")
        except Exception as exc:  # noqa: BLE001 - a syncing form is reported, not fatal
            torch.cuda.synchronize()
            print(f"| {name} | - | not capturable: {type(exc).__name__}: {str(exc).splitlines()[0][:80]} |")
    copy_bytes, copy = copies["large copy (DRAM)"]
    copy_ms = graph_ms(copy)
    bandwidth = copy_bytes / (copy_ms / 1e3)
    print(f"\nDRAM copy in a graph: {bandwidth / 1e9:.0f} GB/s")
    plain = [n for n in device_ms if "synclint" not in n and "fused" not in n]
    for fused, (_, fb_bytes) in bound_bytes.items():
        if fused not in device_ms:
            continue
        bound_ms = fb_bytes / bandwidth * 1e3
        line = (f"{fused}: device {device_ms[fused]:.4f} ms fwd+bwd, bound {bound_ms:.4f} ms "
                f"({device_ms[fused] / bound_ms:.2f}x of the bound)")
        if plain:
            best = min(plain, key=device_ms.get)
            line += f"; {device_ms[best] / device_ms[fused]:.1f}x faster than {best} ({device_ms[best]:.4f} ms)"
        print(line)


def report(kind, args, device, pred, present, forms, bound_bytes, copies, thread_counts, stat_name, stat) -> None:
    print(f"\n## {kind} data: device={device} dtype={args.dtype} B={args.batch} N={args.slots} "
          f"present boxes={present} ({present / pred[..., 0].numel():.1%} of the slots), "
          f"rounds={args.rounds}, {stat_name} over rounds\n")
    header = "| form |" + "".join(f" fwd ms ({t}t) | fwd+bwd ms ({t}t) | fwd+bwd / fused counts ({t}t) |"
                                  for t in thread_counts)
    print(header)
    print("|---|" + "---:|---:|---:|" * len(thread_counts))
    for name in forms:
        row = f"| {name} |"
        for threads in thread_counts:
            fb = stat((threads, name, "fb"))
            fused = stat((threads, "fused, counts", "fb"))
            row += f" {fmt_ms(stat((threads, name, 'fwd')))} | {fmt_ms(fb)} | {fb / fused:.1f}x |"
        print(row)

    print(f"\nBars of issue #14 ({stat_name}):")
    plain = [name for name in forms if "synclint" not in name and "fused" not in name]
    for threads in thread_counts:
        best = min(plain, key=lambda name: stat((threads, name, "fb")))
        best_fb = stat((threads, best, "fb"))
        for fused in bound_bytes:
            print(f"* {threads} thread(s): {fused} fwd+bwd is {best_fb / stat((threads, fused, 'fb')):.1f}x "
                  f"faster than the best plain form ({best}, {fmt_ms(best_fb)} ms) [bar >= 3x]")
    for fused, (fwd_bytes, fb_bytes) in bound_bytes.items():
        for threads in thread_counts:
            fwd_t = stat((threads, fused, "fwd"))
            fb_t = stat((threads, fused, "fb"))
            for copy_name in (f"working-set copy, {fused}", "large copy (DRAM)"):
                copied, _ = copies[copy_name]
                bandwidth = copied / stat((threads, copy_name, "copy"))
                print(f"* {threads} thread(s): {fused}: must move {fwd_bytes / 2**20:.2f} MiB fwd, "
                      f"{fb_bytes / 2**20:.2f} MiB fwd+bwd; {copy_name} bandwidth {bandwidth / 1e9:.1f} GB/s -> "
                      f"bound fwd {fmt_ms(fwd_bytes / bandwidth)} ms, fwd+bwd {fmt_ms(fb_bytes / bandwidth)} ms; "
                      f"measured fwd {fmt_ms(fwd_t)} ms = {fwd_t / (fwd_bytes / bandwidth):.2f}x, "
                      f"fwd+bwd {fmt_ms(fb_t)} ms = {fb_t / (fb_bytes / bandwidth):.2f}x of the bound "
                      f"({fb_bytes / fb_t / 1e9:.1f} GB/s of required traffic) [bar <= 1.5x]")
    if len(thread_counts) > 1 and thread_counts[0]:
        first = thread_counts[0]
        speedups = {name: (name, "fb") for name in bound_bytes}
        speedups["working-set copy (reference)"] = ("working-set copy, fused, padding rows", "copy")
        for threads in thread_counts[1:]:
            for label, (name, kind_) in speedups.items():
                ratio = stat((first, name, kind_)) / stat((threads, name, kind_))
                bar = f" [bar >= {0.9 * threads / first:.1f}x]" if kind_ == "fb" else ""
                print(f"* {label}{' fwd+bwd' if kind_ == 'fb' else ''}: {threads} threads are "
                      f"{ratio:.2f}x faster than {first}{bar}")


def load_average() -> str:
    """The machine's load, to label the figures (a shared machine's threads wait on other jobs)."""
    if not hasattr(os, "getloadavg"):
        return "load average unknown"
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1, 5, 15 min)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--slots", type=int, default=256)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--data", default="seed,dense", help="comma-separated: seed, dense")
    parser.add_argument("--threads", default="1,2", help="comma-separated CPU thread counts (0: leave torch's)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (the median is reported)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile rows")
    parser.add_argument("--slow-s", type=float, default=0.2,
                        help="forms slower than this per fwd+bwd are sampled in about 3 rounds only")
    parser.add_argument("--loop", action="store_true", help="also time the seed's per-sample loop (slow)")
    args = parser.parse_args()

    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    thread_counts = [int(t) for t in args.threads.split(",")]
    if not ops.kernel_available(device):
        print("WARNING: no compiled kernel; the fused rows time the PyTorch reference")
    from synclint.ops import _build

    print(f"torch {torch.__version__}, kernel OpenMP flags: {_build.openmp_flags() or 'none (serial)'}, "
          f"{os.cpu_count()} CPUs, {load_average()}")
    for kind in args.data.split(","):
        run(kind, args, device, dtype, sync, thread_counts)
        print(f"\n({kind} data done, {load_average()})")


if __name__ == "__main__":
    main()
