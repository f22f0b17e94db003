"""Simulated residency: which tensors would live on the accelerator in a CUDA run.

Every tensor of a CPU run really lives on the host, so the detector keeps a
mark on the tensors that *would* live elsewhere. Two policies read the marks:

* **tracked** (``synclint run --device cpu``, :func:`synclint.runtime.simulate_cuda`):
  the program sees a simulated CUDA device (:mod:`synclint.runtime.simcuda`).
  A tensor is device-resident only when the program put it there (a factory
  with ``device="cuda"``, ``.to(device)``, ``.cuda()``) or computed it from
  device-resident tensors; ``device="cpu"``, ``.cpu()`` results, optimizer step
  counters and pinned buffers stay host-side, as on CUDA.
* **everything on the device** (``watch``/``no_sync`` on plain CPU tensors):
  "as if these tensors were on CUDA". Only the results of explicit
  device-to-host copies and pinned buffers are host-side.
"""

from __future__ import annotations

from typing import Any

_MARK = "_synclint_residency"
DEVICE = "device"
HOST = "host"
PINNED = "pinned"


def residency_of(tensor: Any) -> str | None:
    """The mark on ``tensor`` (``device``, ``host``, ``pinned``) or None."""
    return getattr(tensor, _MARK, None)


def mark(tensor: Any, where: str) -> None:
    setattr(tensor, _MARK, where)


def mark_host(tensor: Any) -> None:
    mark(tensor, HOST)


def mark_all(result: Any, where: str) -> Any:
    """Mark every tensor of ``result`` (a tensor, or a tuple/list of them); return it."""
    import torch

    if isinstance(result, torch.Tensor):
        mark(result, where)
    elif isinstance(result, (tuple, list)):
        for item in result:
            if isinstance(item, torch.Tensor):
                mark(item, where)
    return result


class Residency:
    """Answers "is this tensor on the host?" under one policy."""

    __slots__ = ("tracked",)

    def __init__(self, *, tracked: bool) -> None:
        self.tracked = tracked

    def is_host(self, tensor: Any) -> bool:
        where = getattr(tensor, _MARK, None)
        if self.tracked:
            return where != DEVICE
        return where == HOST or where == PINNED

    def is_device(self, tensor: Any) -> bool:
        return not self.is_host(tensor)

    @staticmethod
    def is_pinned(tensor: Any) -> bool:
        return getattr(tensor, _MARK, None) == PINNED


#: The policy of plain ``watch``/``no_sync`` sessions (kept for callers of the old API).
_EVERYTHING_ON_DEVICE = Residency(tracked=False)


def is_host(tensor: Any) -> bool:
    """Host-side under the "everything on the device" policy."""
    return _EVERYTHING_ON_DEVICE.is_host(tensor)
