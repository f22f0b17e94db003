"""Simulated residency: which tensors count as host-side when everything is on the CPU.

On a CPU-only run every tensor is really on the host, so the detector pretends
the CPU is the accelerator ("as if these tensors were on CUDA") and only marks
the tensors an explicit device-to-host copy produced (``.cpu()``,
``.to("cpu")``) as host-side. Reading those back costs nothing; indexing a
device tensor with them costs a blocking upload.
"""

from __future__ import annotations

from typing import Any

_HOST_MARK = "_synclint_host"


def is_host(tensor: Any) -> bool:
    """Was ``tensor`` produced by a (simulated) device-to-host copy?"""
    return getattr(tensor, _HOST_MARK, False)


def mark_host(tensor: Any) -> None:
    setattr(tensor, _HOST_MARK, True)
