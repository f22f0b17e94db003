"""The runtime half of synclint: observe the syncs a program really performs.

* :func:`watch` collects every sync in a block, :func:`no_sync` forbids them,
  :func:`budget` caps their number and :func:`allow` accepts known ones;
* :func:`simulate_cuda` lets a CPU-only process see a CUDA device whose
  tensors stay on the CPU, so sessions judge residency as on a GPU;
* ``synclint run`` (:mod:`synclint.runtime.cli`) runs a whole script and joins
  what it saw with the static findings.

On a CUDA device the verdicts come from PyTorch's own sync debug mode; without
one, a dispatch-level detector simulates "as if these tensors were on CUDA".
Importing this package is cheap: torch loads when a session first starts.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "SyncBudgetExceeded",
    "SyncError",
    "SyncEvent",
    "SyncSite",
    "Watch",
    "allow",
    "budget",
    "no_sync",
    "simulate_cuda",
    "watch",
]

_LAZY = {
    "SyncBudgetExceeded": "synclint.runtime.api",
    "allow": "synclint.runtime.api",
    "budget": "synclint.runtime.api",
    "simulate_cuda": "synclint.runtime.simcuda",
    "SyncError": "synclint.runtime.events",
    "SyncEvent": "synclint.runtime.events",
    "SyncSite": "synclint.runtime.events",
    "Watch": "synclint.runtime.api",
    "no_sync": "synclint.runtime.api",
    "watch": "synclint.runtime.api",
}


def __getattr__(name: str) -> Any:
    try:
        module_name = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'synclint.runtime' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
