"""The JSON report, the terminal table, and per-rank file names."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from synclint.runtime.events import SyncEvent, SyncSite
from synclint.runtime.frames import display_path
from synclint.runtime.join import JoinRow


def rank_from_env(environ: dict[str, str] | None = None) -> int | None:
    """The process rank under ``torchrun`` (``RANK`` with ``WORLD_SIZE``), else None."""
    env = os.environ if environ is None else environ
    if "RANK" not in env or "WORLD_SIZE" not in env:
        return None
    try:
        return int(env["RANK"])
    except ValueError:
        return None


def ranked_path(path: str, rank: int | None) -> str:
    """``report.json`` -> ``report.rank3.json`` so that ranks never overwrite each other."""
    if rank is None:
        return path
    stem, ext = os.path.splitext(path)
    return f"{stem}.rank{rank}{ext}"


def build_report(
    device: str,
    sites: Sequence[SyncSite],
    join_rows: Sequence[JoinRow],
    rank: int | None,
    steps: int = 0,
) -> dict[str, Any]:
    report: dict[str, Any] = {
        "device": device,
        "steps": steps,
        "events": [site.to_json() for site in ranked(sites, device)],
        "join": [row.to_json() for row in join_rows],
    }
    if rank is not None:
        report["rank"] = rank
    return report


def write_report(path: str, report: dict[str, Any]) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
        handle.write("\n")


def ranked(sites: Sequence[SyncSite], device: str) -> list[SyncSite]:
    """What to fix first: host time blocked on CUDA, number of syncs in a simulation."""
    if device == "cuda":
        return sorted(sites, key=lambda s: (-s.blocked_ms, -s.count, s.path, s.line))
    return sorted(sites, key=lambda s: (-s.count, s.path, s.line))


def render_table(
    device: str,
    sites: Sequence[SyncSite],
    join_rows: Sequence[JoinRow],
    rank: int | None,
    root: str | None = None,
    steps: int = 0,
) -> str:
    """The human summary ``synclint run`` prints after the program ends.

    Sites are ranked (see :func:`ranked`); with optimizer steps seen, counts are
    also given per step. Syncs while moving a module (``model.to(device)``) and
    allowed ones are listed apart: they are not what a step costs.
    """
    who = f"rank {rank}, " if rank is not None else ""
    counted = [s for s in sites if not (s.setup or s.allowed)]
    lines: list[str] = []
    if not counted:
        lines.append(f"synclint: no syncs observed ({who}device: {device})")
    else:
        total = sum(site.count for site in counted)
        per_step = f", {steps} optimizer steps" if steps else ""
        lines.append(f"synclint: {total} syncs at {len(counted)} sites ({who}device: {device}{per_step})")
        header = ["location", "function", "op", "code", "count"]
        right = {4}
        if steps:
            header.append("per step")
            right.add(len(header) - 1)
        if device == "cuda":
            header.append("blocked ms" + ("/step" if steps else ""))
            right.add(len(header) - 1)
        rows = [header]
        for site in ranked(counted, device):
            row = [
                f"{display_path(site.path, root)}:{site.line}",
                site.function,
                site.op + (" [graph break]" if site.graph_break else ""),
                site.code,
                str(site.count),
            ]
            if steps:
                row.append(f"{site.count / steps:.2f}")
            if device == "cuda":
                row.append(f"{site.blocked_ms / (steps or 1):.3f}")
            rows.append(row)
        lines.extend(_columns(rows, right_aligned=right))
    for kind, chosen in (("setup (moving a module)", [s for s in sites if s.setup and not s.allowed]),
                         ("allowed", [s for s in sites if s.allowed])):
        if chosen:
            where = ", ".join(f"{display_path(s.path, root)}:{s.line} {s.code} x{s.count}" for s in chosen)
            lines.append(f"synclint: not counted, {kind}: {where}")
    if any(site.graph_break for site in counted):
        lines.append("synclint: [graph break] sites also split a torch.compile graph")
    if join_rows:
        counts = {status: 0 for status in ("confirmed", "static-only", "runtime-only")}
        for row in join_rows:
            counts[row.status] += 1
        lines.append(
            "synclint: join with static findings: "
            + ", ".join(f"{n} {status}" for status, n in counts.items())
        )
        lines.extend(
            _columns(
                [[row.status, f"{display_path(row.path, root)}:{row.line}", row.code] for row in join_rows]
            )
        )
    return "\n".join(lines)


def add_sync_markers(trace_path: str, timed_events: Sequence[tuple[int, SyncEvent]]) -> None:
    """Add one Chrome-trace instant event per sync, named after its code and user frame.

    Timestamps are wall-clock nanoseconds turned into the trace's microseconds
    relative to its ``baseTimeNanoseconds`` (what Kineto writes); without that
    field the markers are placed from the first trace event on.
    """
    with open(trace_path, encoding="utf-8") as handle:
        trace = json.load(handle)
    events = trace.setdefault("traceEvents", [])
    base_ns = trace.get("baseTimeNanoseconds")
    if base_ns is None:
        first = min((e.get("ts", 0) for e in events if isinstance(e.get("ts"), (int, float))), default=0)
        base_ns = (timed_events[0][0] if timed_events else 0) - int(first * 1000)
    pid = next((e.get("pid") for e in events if "pid" in e), os.getpid())
    for wall_ns, event in timed_events:
        events.append(
            {
                "name": f"sync {event.code} {event.op}",
                "cat": "synclint",
                "ph": "i",
                "s": "t",
                "pid": pid,
                "tid": "synclint",
                "ts": (wall_ns - base_ns) / 1000,
                "args": {
                    "file": event.path,
                    "line": event.line,
                    "function": event.function,
                    "code": event.code,
                    "op": event.op,
                    "allowed": event.allowed,
                },
            }
        )
    with open(trace_path, "w", encoding="utf-8") as handle:
        json.dump(trace, handle)


def mark_graph_breaks(sites: Sequence[SyncSite]) -> None:
    """Where Dynamo itself compiled (not under synclint's modes), flag the sites its
    graph-break reasons name by file and line (``File "...", line N``)."""
    dynamo_utils = sys.modules.get("torch._dynamo.utils")
    counters = getattr(dynamo_utils, "counters", None)
    if not counters or not counters.get("graph_break"):
        return
    breaks = set()
    for reason in counters["graph_break"]:
        for path, line in re.findall(r'File "([^"]+)", line (\d+)', str(reason)):
            breaks.add((os.path.realpath(path), int(line)))
    for site in sites:
        if (os.path.realpath(site.path), site.line) in breaks:
            site.graph_break = True


def _columns(rows: list[list[str]], right_aligned: set[int] = frozenset()) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  "
        + "  ".join(
            cell.rjust(width) if i in right_aligned else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths))
        ).rstrip()
        for row in rows
    ]
