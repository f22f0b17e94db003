"""Pause Python's cyclic garbage collector around work that allocates a tree per file.

A parse allocates tens of container objects per source line: libcst's tree for
the check, CPython's ``ast`` for the guard and the project index. Every 700
allocations set off a collection that traverses the young objects, and full
collections traverse everything alive, yet these trees hold no reference
cycles and are freed by reference counting as soon as their file is done:
the collector's passes are pure cost (about a tenth of a cold run). With the
collector paused, the work must not leave cycles behind either: a cycle that
holds a tree makes the first collection after the pause traverse all of it
(see ``synclint.traversal.walk`` and ``FlowState``'s helpers).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block (as it was, after)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
