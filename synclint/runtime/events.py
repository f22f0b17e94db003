"""What the runtime records: one sync occurrence, a site's tally, the error."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SyncEvent:
    """One synchronisation, attributed to the user line that caused it."""

    path: str
    line: int
    function: str
    op: str
    """What synced: an ATen overload (``aten.nonzero.default``) or a Tensor hook
    (``Tensor.item``)."""
    code: str
    """The catalogue rule code (``SL101``) that reports the same hazard statically."""
    blocked_ms: float = 0.0
    allowed: bool = False
    """Inside ``synclint.allow()`` or at an ``--allow FILE:LINE`` site: accepted."""
    setup: bool = False
    """Moving a module (``model.to(device)``): once per run, not per step."""
    graph_break: bool = False
    """Inside a ``torch.compile``-d function: the sync also breaks the graph."""

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class SyncSite:
    """Every sync one user line caused through one op, added up."""

    path: str
    line: int
    function: str
    op: str
    code: str
    count: int = 0
    blocked_ms: float = 0.0
    allowed: bool = False
    setup: bool = False
    graph_break: bool = False
    """The same line is also a torch.compile graph break."""

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "function": self.function,
            "op": self.op,
            "code": self.code,
            "count": self.count,
            "blocked_ms": round(self.blocked_ms, 3),
            "allowed": self.allowed,
            "setup": self.setup,
            "graph_break": self.graph_break,
        }


class SiteTable:
    """Aggregates events per (path, line, function, op) in first-seen order.

    Thread-safe: ``synclint run`` feeds it from every thread of the program.
    """

    def __init__(self) -> None:
        self._sites: dict[tuple[str, int, str, str, bool, bool], SyncSite] = {}
        self._lock = threading.Lock()

    def record(self, event: SyncEvent) -> None:
        key = (event.path, event.line, event.function, event.op, event.allowed, event.setup)
        with self._lock:
            site = self._sites.get(key)
            if site is None:
                site = self._sites[key] = SyncSite(
                    event.path, event.line, event.function, event.op, event.code,
                    allowed=event.allowed, setup=event.setup, graph_break=event.graph_break,
                )
            site.count += 1
            site.blocked_ms += event.blocked_ms

    def add_blocked_time(
        self, blocked: dict[tuple[str, int], float] | dict[tuple[str, int], dict[str, float]]
    ) -> None:
        """Spread measured host-blocked time over the sites of each line, by count.

        ``blocked`` maps ``(path, line)`` to milliseconds, or to ``{code: ms}``
        (:func:`synclint.runtime.cuda.blocked_ms_by_line_and_code`). Time on a
        line where no debug-mode event fired is kept as a site of its own: that
        is where explicit synchronizes (SL501) and copies through pageable
        memory (SL404) show up. A line whose sites already carry time the detector
        measured around the syncing call keeps it (never counted twice).
        """
        for (path, line), value in blocked.items():
            by_code = value if isinstance(value, dict) else {"SL501": value}
            total_ms = sum(by_code.values())
            sites = [s for s in self._sites.values() if (s.path, s.line) == (path, line)]
            if any(site.blocked_ms > 0 for site in sites):
                continue
            if not sites:
                for code, blocked_ms in by_code.items():
                    self._sites[(path, line, "<unknown>", BLOCKED_OP, False, False)] = SyncSite(
                        path, line, "<unknown>", BLOCKED_OP, code, 1, blocked_ms
                    )
                continue
            total = sum(s.count for s in sites)
            for site in sites:
                site.blocked_ms += total_ms * site.count / total

    @property
    def sites(self) -> list[SyncSite]:
        return list(self._sites.values())

    def __len__(self) -> int:
        return len(self._sites)


#: The op of a site made only of host time blocked in CUDA calls (profiler).
BLOCKED_OP = "<blocked in CUDA call>"


class SyncError(Exception):
    """A synchronisation happened inside :func:`synclint.no_sync`.

    Deliberately not a ``RuntimeError``: ``except RuntimeError:`` in user code
    must not swallow it (and :func:`no_sync` re-raises a swallowed one anyway).
    """

    def __init__(self, event: SyncEvent) -> None:
        self.event = event
        super().__init__(
            f"{event.location}: {event.op} synchronises the host with the device "
            f"[{event.code}] in {event.function}()"
        )
