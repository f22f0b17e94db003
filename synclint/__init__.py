"""synclint: find, fix and prove the removal of host-device syncs in PyTorch code.

Importing this package is cheap and never imports torch: the runtime half
(``no_sync``, ``watch``, ``budget``, ``allow``, ``simulate_cuda``, ``SyncError``) and the ops (``synclint.ops``) load on
first use.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = [
    "Finding",
    "SyncBudgetExceeded",
    "SyncError",
    "__version__",
    "allow",
    "budget",
    "check_source",
    "fix_source",
    "no_sync",
    "simulate_cuda",
    "watch",
]

_LAZY = {
    "Finding": ("synclint.finding", "Finding"),
    "check_source": ("synclint.runner", "check_source"),
    "fix_source": ("synclint.fixers", "fix_source"),
    "no_sync": ("synclint.runtime", "no_sync"),
    "watch": ("synclint.runtime", "watch"),
    "SyncError": ("synclint.runtime", "SyncError"),
    "SyncBudgetExceeded": ("synclint.runtime", "SyncBudgetExceeded"),
    "budget": ("synclint.runtime", "budget"),
    "allow": ("synclint.runtime", "allow"),
    "simulate_cuda": ("synclint.runtime", "simulate_cuda"),
}


def __getattr__(name: str) -> Any:
    if name == "ops":  # ``synclint.ops.giou_loss`` without an explicit import
        import importlib

        return importlib.import_module("synclint.ops")
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'synclint' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module_name), attribute)
    globals()[name] = value
    return value
