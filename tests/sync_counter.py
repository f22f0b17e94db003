"""Count the ATen calls that would make the host wait for the device.

A stand-in for ``synclint.runtime`` (built on another branch) so the fix tests
are self-contained; the interface is deliberately tiny so it can be swapped::

    with SyncCounter() as counter:
        loss = model(x)
    assert counter.count == 0

On CPU nothing actually waits, but these ops are exactly the ones that block
on CUDA: data-dependent output shapes and device-to-host reads.
"""

from __future__ import annotations

from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten

_ALWAYS = {
    "nonzero", "nonzero_numpy", "argwhere", "_local_scalar_dense", "masked_select",
    "_unique", "_unique2", "unique_dim", "unique_consecutive", "unique_dim_consecutive",
    "bincount", "equal", "is_nonzero",
}
_BOOL_INDEXED = {"index", "index_put", "index_put_", "_index_put_impl_"}


def _has_bool_index(args) -> bool:
    indices = args[1] if len(args) > 1 else ()
    return any(isinstance(t, torch.Tensor) and t.dtype in (torch.bool, torch.uint8) for t in indices or ())


class SyncCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    @property
    def count(self) -> int:
        return sum(self.ops.values())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name in _ALWAYS:
            self.ops[name] += 1
        elif name in _BOOL_INDEXED and _has_bool_index(args):
            self.ops[f"{name}[bool]"] += 1
        elif name == "repeat_interleave" and kwargs.get("output_size") is None:
            self.ops[name] += 1
        return func(*args, **kwargs)
